"""How sure a test F1 is, and whether two rows really differ.

Every NER run keeps its per-sentence test predictions, so span F1 can be resampled over test sentences:
each sentence becomes one row of counts (tp, fp, fn) of strict span matches (start, end, type: seqeval's
strict mode on well-formed tags), and a corpus-level micro F1 is 2tp / (2tp + fp + fn) of the summed rows.
A row of a table is the mean over its seeds of each seed's F1. A resample is two-level (a hierarchical
bootstrap, Davison & Hinkley 1997, sec. 3.8): the seeds are drawn with replacement, then the test sentences,
and every drawn seed is scored on the same sentences. So the interval holds both what another test set and what
other seeds could give; with one seed it holds the test set's share only, and tables say "(1 seed)". In a paired
test both rows get the same seed draw and the same sentence draw (seed s of one row meets seed s of the other).

- `f1_interval`: percentile bootstrap (Efron & Tibshirani 1993), 95 % by default.
- `paired_test`: the difference of two rows' seed-mean F1 on the same sentences and seeds; its 95 % interval
  from the paired bootstrap, its two-sided p-value by the paired bootstrap test with the shifted null of
  Berg-Kirkpatrick et al. (2012): p = (1 + #{|d*_b - d| >= |d|}) / (B + 1), or (method="randomization")
  by approximate randomization (Noreen 1989; Riezler & Maxwell 2005): each sentence's two rows (all their
  seeds) swapped with probability 1/2, p = (1 + #{|d_r| >= |d|}) / (R + 1).
- With two or more seeds the test is also read as a t-test (`seed_level_test`: seed and sentence variance added,
  Welch-Satterthwaite degrees of freedom), and `p` is the larger of the two, the interval the hull of both: a claim
  needs both readings. The resampled reading alone is kept as `p_resampled` and `ci_resampled`.
- `holm`: Holm's step-down adjustment of the p-values of one experiment's comparisons (every row against none, TAPT
  and, for a selection, random): a verdict and a star read the adjusted p, never the raw one.
- p comes from 10,000 resamples, with its Monte-Carlo standard error (`p_mc_error`, sqrt(p(1-p)/B)) beside it
  (`p_resampled_mc_error` beside `p_resampled` where the t reading was made too).
- `seeds_to_settle` sizes a run that cannot say yet (the advice's "run M more"): Stein's two-stage estimate with
  the seed and the test-sentence variance split (a power figure from a per-seed SD alone, ignoring the sentences, said
  "2 seeds" where p was 0.64); None with the reason where more seeds would not settle it.

Runs are (n, 3) count arrays, or (S, n, 3) for S seeds scored on the same n sentences. Resampling is
hand-written on numpy count rows (one integer matrix product per batch of resamples) because no well-kept
library resamples span-count rows; scipy.stats.bootstrap would re-run a Python F1 per resample.

>>> counts = sentence_counts([[{"start": 0, "end": 1, "type": "PER"}]], [[{"start": 0, "end": 1, "type": "PER"}]])
>>> counts.tolist(), f1_of(counts)
([[1, 0, 0]], 1.0)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from core.errors import UserError

METHODS = ("bootstrap", "randomization")
N_RESAMPLES = 10_000
COUNT_COLUMNS = ("tp", "fp", "fn")  # per test sentence, the rows every interval and test resamples
ALPHA = 0.05
# A claim (a star, "helped", "beat", a knob becoming the default) needs its paired test over at least this many seeds
# that both rows ran: with fewer, the bootstrap sees too little of how far the seed alone moves test F1 (with one
# seed, nothing: it resamples sentences only). Three is the CrossNER protocol's minimum (issue 42).
MIN_CLAIM_SEEDS = 3


def _key(span: Any) -> tuple[int, int, str]:
    if isinstance(span, Mapping):
        return int(span["start"]), int(span["end"]), str(span["type"])
    return int(span.start), int(span.end), str(span.type)


def sentence_counts(gold: Sequence[Iterable[Any]], predicted: Sequence[Iterable[Any]]) -> np.ndarray:
    """(n, 3) int64 rows of (tp, fp, fn) per sentence from gold and predicted spans (dicts or Spans)."""
    if len(gold) != len(predicted):
        raise UserError(f"{len(predicted)} predicted sentences for {len(gold)} gold ones: the predictions are not of this corpus")
    rows = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, predicted)):
        gs, ps = {_key(s) for s in g}, {_key(s) for s in p}
        rows[i] = (len(gs & ps), len(ps - gs), len(gs - ps))
    return rows


def counts_from_predictions(rows: Sequence[Mapping[str, Any]], source: str = "predictions") -> np.ndarray:
    """Count rows of a predictions file's rows (core.train.ner_predict: `spans` and `gold_spans` per sentence)."""
    if not rows:
        raise UserError(f"{source}: no predicted sentences")
    if any("gold_spans" not in r for r in rows):
        raise UserError(f"{source}: predictions without gold spans (an unlabeled corpus): no F1 interval can be computed")
    return sentence_counts([r["gold_spans"] for r in rows], [r["spans"] for r in rows])


def encode_counts(counts: np.ndarray) -> dict[str, str]:
    """(n, 3) counts as three strings of space-separated integers, one per column: small enough to keep inside every
    result cell (a 600-sentence TEST is about 4 KB), so a result JSON carried off the machine that ran it (a GPU
    machine, a workspace since deleted) can still be merged and tested; a list of lists would be a line per number."""
    arr = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    return {name: " ".join(map(str, arr[:, k].tolist())) for k, name in enumerate(COUNT_COLUMNS)}


def decode_counts(encoded: Mapping[str, str], source: str = "test_counts") -> np.ndarray:
    """The inverse of `encode_counts`; a malformed value is a UserError naming `source`."""
    try:
        cols = [np.array(encoded[name].split(), dtype=np.int64) for name in COUNT_COLUMNS]
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{source}: expected {', '.join(COUNT_COLUMNS)} as space-separated integers ({exc})") from exc
    if len({len(c) for c in cols}) != 1 or (cols[0] < 0).any() or (cols[1] < 0).any() or (cols[2] < 0).any():
        raise UserError(f"{source}: the {', '.join(COUNT_COLUMNS)} columns must be non-negative and of one length")
    return np.stack(cols, axis=1)


def f1_of(counts: np.ndarray) -> float:
    """Micro span F1 of summed (tp, fp, fn) rows; 0 when there is neither a gold nor a predicted span."""
    tp, fp, fn = (int(x) for x in np.asarray(counts).reshape(-1, 3).sum(axis=0))
    return 2 * tp / (2 * tp + fp + fn) if tp or fp or fn else 0.0


def _f1_rows(totals: np.ndarray) -> np.ndarray:
    """F1 of each row of summed counts (B, 3)."""
    tp, fp, fn = totals[:, 0].astype(np.float64), totals[:, 1], totals[:, 2]
    den = 2 * tp + fp + fn
    return np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0)


def seed_runs(runs: Any, what: str = "F1") -> np.ndarray:
    """(S, n, 3) from one run's (n, 3) counts or a list of seeds' runs on the same test sentences."""
    if isinstance(runs, (list, tuple)):
        if not runs:
            raise UserError(f"{what}: no run with per-sentence predictions: nothing to resample")
        sizes = {len(r) for r in runs}
        if len(sizes) != 1:
            raise UserError(f"{what}: the seeds were scored on different numbers of test sentences ({sorted(sizes)}): "
                            "not the same TEST")
    arr = np.asarray(runs, dtype=np.int64)
    arr = arr[None] if arr.ndim == 2 else arr
    if arr.ndim != 3 or arr.shape[-1] != 3 or arr.shape[1] == 0:
        raise UserError(f"{what}: no test sentences")
    return arr


def mean_f1(runs: Any) -> float:
    """Mean over seeds of each seed's micro F1."""
    return float(np.mean([f1_of(r) for r in seed_runs(runs)]))


def _draw_counts(rng: np.random.Generator, b: int, n: int) -> np.ndarray:
    """(b, n): how often each of n items was drawn in each of b resamples of n draws with replacement. One call
    draws the same numbers as b calls of n (the generator's stream is the same), so stored results stay exact."""
    draws = rng.integers(0, n, (b, n)) + (np.arange(b) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=b * n).reshape(b, n)


@functools.lru_cache(maxsize=12)
def _draws(n_boot: int, seed: int, n: int, n_seeds: int, resample_seeds: bool, resample_sentences: bool,
           batch: int) -> tuple[np.ndarray, np.ndarray]:
    """(sentence weights (B, n), seed weights (B, S)) of `n_boot` two-level resamples. They depend on the sizes and
    the seed only, never on the counts, so one report (hundreds of tests on a few TEST sets) draws each set once:
    drawing was most of `scripts/report.py`'s time. Kept in the smallest integer type that holds n (about 10 MB for a
    1,000-sentence TEST), read-only because the cache shares them."""
    rng = np.random.default_rng(seed)
    sentences = np.ones((n_boot, n), dtype=np.min_scalar_type(n))
    seeds = np.ones((n_boot, n_seeds), dtype=np.int64)
    for start in range(0, n_boot, batch):  # batch by batch, as the stored results were drawn: the same stream
        b = min(batch, n_boot - start)
        if resample_sentences:
            sentences[start:start + b] = _draw_counts(rng, b, n)
        if resample_seeds:
            seeds[start:start + b] = _draw_counts(rng, b, n_seeds)
    sentences.flags.writeable = seeds.flags.writeable = False
    return sentences, seeds


def _resampled_mean_f1(runs_list: Sequence[np.ndarray], n_boot: int, seed: int, resample_seeds: bool = True,
                       batch: int = 200, resample_sentences: bool = True) -> list[np.ndarray]:
    """(B,) seed-mean F1 of `n_boot` two-level resamples (seeds, then sentences), the same draws for every row."""
    n_seeds, n = runs_list[0].shape[:2]
    sentences, seed_draws = _draws(n_boot, seed, n, n_seeds, resample_seeds, resample_sentences, batch)
    seed_total = seed_draws.sum(axis=1)
    # every seed's count rows side by side, (n, S * 3): one matrix product per batch scores all seeds at once
    # float64: the products stay exact integers, and the product runs in BLAS instead of numpy's int loop
    columns = [np.ascontiguousarray(r.transpose(1, 0, 2).reshape(n, n_seeds * 3), dtype=np.float64) for r in runs_list]
    out = [np.empty(n_boot, dtype=np.float64) for _ in runs_list]
    # one BLAS thread: these products are small (a batch of resamples by at most a few dozen columns), and OpenBLAS's
    # threads spin-wait for cores that training holds: `scripts/report.py` took 4 min instead of 10 s beside a study
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, n_boot, batch):
            stop = min(start + batch, n_boot)
            # a resample is a multiset of sentences: its weights (how often each was drawn) times the count rows
            weights = sentences[start:stop].astype(np.float64)
            for k, cols in enumerate(columns):
                per_seed = _f1_rows((weights @ cols).reshape(-1, 3)).reshape(stop - start, n_seeds)
                out[k][start:stop] = (per_seed * seed_draws[start:stop]).sum(axis=1) / seed_total[start:stop]
    return out


def f1_interval(runs: Any, n_boot: int = N_RESAMPLES, seed: int = 0, alpha: float = ALPHA,
                resample_seeds: bool = True) -> tuple[float, float, float]:
    """(seed-mean F1, lower, upper): the percentile interval of the two-level bootstrap (seeds, test sentences), and
    with two or more seeds the hull of it and the t interval of `seed_level_test`'s reading (three resampled seeds
    show too little of their spread: the same reason). `resample_seeds=False`: the TEST sentences' share alone."""
    runs = seed_runs(runs, "F1 interval")
    (f1s,) = _resampled_mean_f1([runs], n_boot, seed, resample_seeds)
    lo, hi = float(np.quantile(f1s, alpha / 2)), float(np.quantile(f1s, 1 - alpha / 2))
    if resample_seeds and runs.shape[0] > 1:
        t_lo, t_hi = _t_reading(*_variance_split([runs], 2_000, seed), alpha, 0.0)["ci"]
        lo, hi = min(lo, t_lo), max(hi, t_hi)
    return mean_f1(runs), lo, hi


def paired_test(a: Any, b: Any, method: str = "bootstrap", n_boot: int = N_RESAMPLES, seed: int = 0,
                alpha: float = ALPHA) -> dict[str, Any]:
    """Seed-mean F1(a) - F1(b) on the same sentences and seeds: {"delta", "ci": [lo, hi], "p", "method"}."""
    if method not in METHODS:
        raise UserError(f"unknown test {method!r}: expected one of {', '.join(METHODS)}")
    a, b = seed_runs(a, "paired test"), seed_runs(b, "paired test")
    if a.shape != b.shape:
        raise UserError(f"the two rows were scored on different test sentences or seeds ({a.shape[:2]} vs {b.shape[:2]}): "
                        "no paired test")
    delta = mean_f1(a) - mean_f1(b)
    fa, fb = _resampled_mean_f1([a, b], n_boot, seed)
    boot = fa - fb
    lo, hi = float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))
    if method == "bootstrap":
        extreme = int(np.sum(np.abs(boot - delta) >= abs(delta) - 1e-12))
    else:
        rng = np.random.default_rng(seed + 1)
        extreme = 0
        for _ in range(n_boot):
            swap = (rng.random(a.shape[1]) < 0.5)[None, :, None]  # one coin per sentence, for all its seeds
            extreme += abs(mean_f1(np.where(swap, b, a)) - mean_f1(np.where(swap, a, b))) >= abs(delta) - 1e-12
    p = (1 + extreme) / (n_boot + 1)
    out = {"delta": delta, "ci": [lo, hi], "p": p, "p_mc_error": math.sqrt(p * (1 - p) / n_boot), "resamples": n_boot,
           "method": method}
    seed_t = seed_level_test(a, b, seed=seed, alpha=alpha)
    if seed_t is None:
        return out
    # a claim needs both readings (an intersection-union test: each at level alpha, so both together are too): the
    # resamples where sentences carry the noise, the t where three or five seeds do and resampling them cannot show it
    resampled = {"p_resampled": p, "ci_resampled": [lo, hi], "p_resampled_mc_error": out.pop("p_mc_error")}
    return {**out, "p": max(p, seed_t["p"]), "ci": [min(lo, seed_t["ci"][0]), max(hi, seed_t["ci"][1])], **resampled,
            "seed_t": seed_t}


def seed_level_test(a: np.ndarray, b: np.ndarray, seed: int = 0, alpha: float = ALPHA,
                    n_boot: int = 2_000) -> dict[str, Any] | None:
    """A t-test of the seed-mean difference whose variance adds what the seeds show (the sample variance of the S
    per-seed differences over S) to what the TEST sentences show (the variance of the difference under resampling
    sentences alone), with Welch-Satterthwaite degrees of freedom: S - 1 when the seeds carry all the noise, many when
    the sentences do. Why beside the two-level bootstrap: resampling three seeds sees (S - 1) / S of their variance at
    best and a three-point distribution at worst, so where seeds move F1 by several points the bootstrap alone claimed
    a difference in 16% of null draws at the 5% threshold (`bench/bench_null_rate.py`). None with one seed (no spread
    to see). (S, n, 3) runs of the same seeds and sentences."""
    if a.shape[0] < 2:
        return None
    diffs, sentences = _variance_split([a, b], n_boot, seed)
    return _t_reading(diffs, sentences, alpha, -1.0)


def _variance_split(runs_list: Sequence[np.ndarray], n_boot: int, seed: int) -> tuple[np.ndarray, float]:
    """(per-seed F1 of one row, or per-seed difference of two, the variance its seed mean takes from the TEST sentences
    alone): the two parts more seeds do and do not shrink. The sentence draws are seed + 1's, shared by every reader."""
    per_seed = [np.array([f1_of(x) for x in runs]) for runs in runs_list]
    resampled = _resampled_mean_f1(runs_list, n_boot, seed + 1, resample_seeds=False)
    if len(runs_list) == 1:
        return per_seed[0], float(np.var(resampled[0]))
    return per_seed[0] - per_seed[1], float(np.var(resampled[0] - resampled[1]))


def _t_reading(per_seed: np.ndarray, sentences: float, alpha: float, low: float) -> dict[str, Any]:
    """The t reading of a seed mean: its variance the seeds' sample variance over S plus the sentences' (Welch-
    Satterthwaite df), its p against 0 and its interval, clipped to [low, 1] (an F1 or a difference of two cannot leave
    it, while t at one or two degrees of freedom can)."""
    from scipy.stats import t as student_t

    n_seeds, mean = len(per_seed), float(np.mean(per_seed))
    seeds = float(np.var(per_seed, ddof=1)) / n_seeds
    se = math.sqrt(sentences + seeds)
    df = (sentences + seeds) ** 2 * (n_seeds - 1) / seeds ** 2 if seeds > 0 else math.inf
    if se == 0:
        p, half = (1.0 if mean == 0 else 0.0), 0.0
    else:
        p = float(min(1.0, 2 * student_t.sf(abs(mean) / se, df)))
        half = float(student_t.ppf(1 - alpha / 2, df)) * se
    # df None: the seeds show no spread, a normal reading (kept out of JSON as Infinity, which strict readers refuse)
    return {"p": p, "ci": [max(low, mean - half), min(1.0, mean + half)], "se": se, "df": None if math.isinf(df) else df,
            "se_seeds": math.sqrt(seeds), "se_sentences": math.sqrt(sentences)}


def seeds_to_settle(a: Any, b: Any, family: int = 1, alpha: float = ALPHA, n_boot: int = 2_000, seed: int = 0,
                    max_seeds: int = 50) -> dict[str, Any]:
    """How many seeds the difference F1(a) - F1(b) would need before its interval (Bonferroni over `family`
    comparisons) leaves 0, if the difference stayed what it is. Its variance is split in two: what more seeds shrink
    (seed to seed: the sample variance, ddof=1, of the n per-seed differences) and what they cannot (the fixed TEST
    sentences, resampling sentences only); the interval at k seeds is about q * sqrt(seed variance / k + sentence
    variance). q is Student's t at n - 1 degrees of freedom, as in Stein's two-stage sample size (Stein 1945): the
    seed variance is itself estimated from n seeds, and a normal z with the ddof=0 variance promised too few seeds.
    `needed` is None when no number of seeds (up to `max_seeds`) would do, with the reason."""
    from scipy.stats import t as student_t

    a, b = seed_runs(a, "seed estimate"), seed_runs(b, "seed estimate")
    if a.shape != b.shape:
        raise UserError(f"seed estimate: the two rows were scored on different test sentences or seeds ({a.shape[:2]} vs "
                        f"{b.shape[:2]})")
    n = int(a.shape[0])
    diffs, sentences = _variance_split([a, b], n_boot, seed)
    delta = float(diffs.mean())
    m = max(1, family)
    z = NormalDist().inv_cdf(1 - alpha / (2 * m))  # the limit of q with many seeds: what the TEST alone leaves
    out = {"delta": delta, "seeds": n, "sd_seed": None, "se_sentences": math.sqrt(sentences), "z": z}
    if n < 2:
        return {**out, "needed": None, "reason": "one seed cannot show how much seeds differ: run at least 3"}
    per_seed = float(np.var(diffs, ddof=1))
    q = float(student_t.ppf(1 - alpha / (2 * m), n - 1))
    out.update(sd_seed=math.sqrt(per_seed), t=q, df=n - 1)
    if delta <= 0:
        return {**out, "needed": None, "reason": "the difference is not above 0"}
    if (delta / z) ** 2 <= sentences:
        return {**out, "needed": None, "reason": "more seeds would not settle it: the TEST sentences alone spread the "
                                                 f"difference by ±{100 * z * math.sqrt(sentences):.2f} points"}
    room = (delta / q) ** 2 - sentences
    if room <= 0:  # a known seed variance would leave room: the n seeds are what is short
        k = next((k for k in range(n + 1, max_seeds + 1)
                  if (delta / float(student_t.ppf(1 - alpha / (2 * m), k - 1))) ** 2 > sentences), None)
        if k is None:
            return {**out, "needed": None, "reason": f"it would take more than {max_seeds} seeds"}
        return {**out, "needed": None, "reason": f"{n} seeds pin the seed-to-seed spread down too loosely to size the "
                                                 f"run (Student t {q:.1f} at {n - 1} df): run {k - n} more, then ask again"}
    needed = math.ceil(per_seed / room)
    if needed <= n:  # by the seed spread the n seeds suffice: what holds the claim back is the resampled reading or
        # Holm over the family, which more seeds of the same spread need not change (said "run 1 more" with no basis)
        return {**out, "needed": None, "reason": f"by the seed-to-seed spread {n} seeds would do: what keeps the claim "
                                                 "open is the test-sentence resampling or the correction over the "
                                                 "family's comparisons, which more seeds need not settle"}
    if needed > max_seeds:
        return {**out, "needed": None, "reason": f"it would take more than {max_seeds} seeds"}
    return {**out, "needed": needed, "reason": ""}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values, in the input's order: the k-th smallest p times (m - k + 1), kept
    monotone and capped at 1. Controls the family-wise error over the m comparisons. A p that is NaN or outside [0, 1]
    is refused: sorting NaN is order-dependent, so the adjusted values would depend on the comparisons' order.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    bad = next((i for i, p in enumerate(pvalues) if not 0.0 <= p <= 1.0), None)  # NaN fails both comparisons
    if bad is not None:
        raise UserError(f"Holm adjustment: comparison {bad + 1} of {len(pvalues)} has p = {pvalues[bad]!r}, not a "
                        "p-value in [0, 1]: the result record is damaged")
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = round(running, 12)
    return out


def bonferroni_upper(delta: float, ci: Sequence[float], family: int, alpha: float = ALPHA,
                     seed_t: Mapping[str, Any] | None = None) -> float:
    """The upper bound of a difference's two-sided interval at alpha / family (Bonferroni over `family` comparisons),
    from its stored 95% interval: the bootstrap distribution taken as normal above `delta`, its upper half-width
    (hi - delta) is z(1 - alpha/2) standard errors, so the bound at alpha / family is delta + (hi - delta) *
    z(1 - alpha / (2 family)) / z(1 - alpha / 2). A stored summary holds no resamples, and a percentile read 0.15%
    deep into 10,000 resamples rests on 15 of them; this keeps the interval's own asymmetry. With `seed_t` (the test's
    seed-level reading) the bound is also its t quantile at alpha / family times its standard error, and the larger
    of the two is kept, as a claim needs both readings.

    >>> round(bonferroni_upper(0.0, [-0.01, 0.01], 1), 6), round(bonferroni_upper(0.0, [-0.01, 0.01], 17), 4)
    (0.01, 0.0152)
    """
    scale = NormalDist().inv_cdf(1 - alpha / (2 * max(1, family))) / NormalDist().inv_cdf(1 - alpha / 2)
    bound = delta + (ci[1] - delta) * scale
    if seed_t and seed_t.get("se") is not None:  # the t reading (paired_test's `seed_t`) widens by its own quantile:
        from scipy.stats import t as student_t  # at two degrees of freedom far more than z's ratio

        df = seed_t.get("df")
        q = NormalDist().inv_cdf(1 - alpha / (2 * max(1, family))) if df is None else \
            float(student_t.ppf(1 - alpha / (2 * max(1, family)), df))
        bound = max(bound, delta + q * float(seed_t["se"]))
    return bound


def summary_entry(row: str, runs_by_row: Mapping[str, Mapping[int, np.ndarray]], baselines: Sequence[str] = ("tapt", "none"),
                  n_boot: int = N_RESAMPLES, seed: int = 0, method: str = "bootstrap") -> dict[str, Any]:
    """One row's entry of an experiment's `summary`: seed-mean F1, its spread over seeds, its interval over test
    sentences, and against each baseline present the paired difference on the seeds both ran, its interval and p (the
    Holm-adjusted p is added over a whole experiment: core.experiments.summary). `runs_by_row`: row -> {seed: count
    rows of that seed's test predictions}."""
    runs = dict(sorted(runs_by_row[row].items()))
    per_seed = [f1_of(c) for c in runs.values()]
    f1, lo, hi = f1_interval(list(runs.values()), n_boot, seed)
    ci_method = "percentile bootstrap, two-level (seeds, then test sentences)" + (
        ", widened to the seed-level t interval" if len(per_seed) > 1 else ", test sentences alone (1 seed)")
    entry: dict[str, Any] = {"row": row, "f1_mean": f1, "f1_std": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else None,
                             "f1_ci": [lo, hi], "seeds": len(per_seed), "ci_method": ci_method, "vs": {}}
    for base in baselines:
        if base == row or base not in runs_by_row:
            continue
        shared = sorted(set(runs) & set(runs_by_row[base]))
        if not shared:
            continue
        test = paired_test([runs[s] for s in shared], [runs_by_row[base][s] for s in shared], method, n_boot, seed)
        entry["vs"][base] = {**test, "seeds": len(shared)}
    return entry
