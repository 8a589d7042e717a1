"""How sure a test F1 is, and whether two rows really differ.

Every NER run keeps its per-sentence test predictions, so span F1 can be resampled over test sentences:
each sentence becomes one row of counts (tp, fp, fn) of strict span matches (start, end, type: seqeval's
strict mode on well-formed tags), and a corpus-level micro F1 is 2tp / (2tp + fp + fn) of the summed rows.
With several seeds, a sentence's row holds its counts summed over the seeds ("pooled over seeds"), so a
resample keeps every seed of a sentence together and the interval covers test-set and seed variation alike.

- `f1_interval`: percentile bootstrap over test sentences (Efron & Tibshirani 1993), 95 % by default.
- `paired_test`: the difference of two rows on the same sentences and seeds; its 95 % interval from the
  paired bootstrap, its two-sided p-value by the paired bootstrap test with the shifted null of
  Berg-Kirkpatrick et al. (2012): p = (1 + #{|d*_b - d| >= |d|}) / (B + 1), or (method="randomization")
  by approximate randomization (Noreen 1989; Riezler & Maxwell 2005): each sentence's two rows swapped
  with probability 1/2, p = (1 + #{|d_r| >= |d|}) / (R + 1).
- `seeds_needed`: how many seeds a per-seed difference of this size and spread needs for p < 0.05 at 80 %
  power in a paired two-sided test (normal approximation, n = ((z_0.975 + z_0.8) sd / mean)^2).

Resampling is hand-written on numpy count rows (one integer matrix product per batch of resamples) because
no well-kept library resamples span-count rows; scipy.stats.bootstrap would re-run a Python F1 per resample.

>>> counts = sentence_counts([[{"start": 0, "end": 1, "type": "PER"}]], [[{"start": 0, "end": 1, "type": "PER"}]])
>>> counts.tolist(), f1_of(counts)
([[1, 0, 0]], 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from core.errors import UserError

METHODS = ("bootstrap", "randomization")
N_RESAMPLES = 1000
ALPHA = 0.05


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


def f1_of(counts: np.ndarray) -> float:
    """Micro span F1 of summed (tp, fp, fn) rows; 0 when there is neither a gold nor a predicted span."""
    tp, fp, fn = (int(x) for x in np.asarray(counts).reshape(-1, 3).sum(axis=0))
    return 2 * tp / (2 * tp + fp + fn) if tp or fp or fn else 0.0


def _f1_rows(totals: np.ndarray) -> np.ndarray:
    """F1 of each row of summed counts (B, 3)."""
    tp, fp, fn = totals[:, 0].astype(np.float64), totals[:, 1], totals[:, 2]
    den = 2 * tp + fp + fn
    return np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0)


def pool_seeds(per_seed: Sequence[np.ndarray]) -> np.ndarray:
    """One row per test sentence holding its counts summed over seeds (every seed scored the same sentences)."""
    if not per_seed:
        raise UserError("no run with per-sentence predictions: nothing to resample")
    sizes = {len(c) for c in per_seed}
    if len(sizes) != 1:
        raise UserError(f"the seeds were scored on different numbers of test sentences ({sorted(sizes)}): not the same TEST")
    return np.sum(np.stack(per_seed), axis=0)


def _resample_totals(counts_list: Sequence[np.ndarray], n_boot: int, seed: int, batch: int = 200) -> list[np.ndarray]:
    """Summed counts of `n_boot` resamples of sentences, the same resamples for every array (paired)."""
    n = len(counts_list[0])
    rng = np.random.default_rng(seed)
    out = [np.empty((n_boot, 3), dtype=np.int64) for _ in counts_list]
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        # a resample is a multiset of sentences: its weights (how often each was drawn) times the count rows
        weights = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(b)])  # (b, n)
        for k, counts in enumerate(counts_list):
            out[k][start:start + b] = weights @ counts
    return out


def _check(counts: np.ndarray, what: str) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    if len(counts) == 0:
        raise UserError(f"{what}: no test sentences")
    return counts


def f1_interval(counts: np.ndarray, n_boot: int = N_RESAMPLES, seed: int = 0, alpha: float = ALPHA) -> tuple[float, float, float]:
    """(F1, lower, upper): the percentile bootstrap interval of F1 over test sentences."""
    counts = _check(counts, "F1 interval")
    (totals,) = _resample_totals([counts], n_boot, seed)
    f1s = _f1_rows(totals)
    return f1_of(counts), float(np.quantile(f1s, alpha / 2)), float(np.quantile(f1s, 1 - alpha / 2))


def paired_test(a: np.ndarray, b: np.ndarray, method: str = "bootstrap", n_boot: int = N_RESAMPLES, seed: int = 0,
                alpha: float = ALPHA) -> dict[str, Any]:
    """F1(a) - F1(b) on the same sentences: {"delta", "ci": [lo, hi], "p", "method"} (see the module docstring)."""
    if method not in METHODS:
        raise UserError(f"unknown test {method!r}: expected one of {', '.join(METHODS)}")
    a, b = _check(a, "paired test"), _check(b, "paired test")
    if a.shape != b.shape:
        raise UserError(f"the two rows were scored on different test sentences ({len(a)} vs {len(b)}): no paired test")
    delta = f1_of(a) - f1_of(b)
    ta, tb = _resample_totals([a, b], n_boot, seed)
    boot = _f1_rows(ta) - _f1_rows(tb)
    lo, hi = float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))
    if method == "bootstrap":
        extreme = int(np.sum(np.abs(boot - delta) >= abs(delta) - 1e-12))
    else:
        rng = np.random.default_rng(seed + 1)
        extreme = 0
        for _ in range(n_boot):
            swap = rng.random(len(a)) < 0.5
            sa = np.where(swap[:, None], b, a).sum(axis=0)
            sb = np.where(swap[:, None], a, b).sum(axis=0)
            extreme += abs(f1_of(sa) - f1_of(sb)) >= abs(delta) - 1e-12
    return {"delta": delta, "ci": [lo, hi], "p": (1 + extreme) / (n_boot + 1), "method": method}


def seeds_needed(deltas: Sequence[float], alpha: float = ALPHA, power: float = 0.8) -> tuple[int | None, str]:
    """(seeds, why): how many seeds a paired difference with this per-seed mean and spread needs for a
    two-sided p < alpha at `power`; None with the reason when it cannot be said."""
    if len(deltas) < 2:
        return None, f"{len(deltas)} seed: no spread to estimate from"
    mean, sd = float(np.mean(deltas)), float(np.std(deltas, ddof=1))
    if mean == 0:
        return None, "no difference on average: no number of seeds makes it significant"
    if sd == 0:
        return len(deltas), "the same difference on every seed"
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return max(2, math.ceil((z * sd / abs(mean)) ** 2)), f"per-seed difference {mean:+.4f} ± {sd:.4f} (sd)"


def summary_entry(row: str, runs_by_row: Mapping[str, Mapping[int, np.ndarray]], baselines: Sequence[str] = ("tapt", "none"),
                  n_boot: int = N_RESAMPLES, seed: int = 0, method: str = "bootstrap") -> dict[str, Any]:
    """One row's entry of an experiment's `summary`: F1 mean over seeds, its bootstrap interval pooled over seeds,
    and against each baseline present the paired difference, its interval, p and the seeds it would need.
    `runs_by_row`: row -> {seed: count rows of that seed's test predictions}."""
    runs = runs_by_row[row]
    per_seed = {s: f1_of(c) for s, c in sorted(runs.items())}
    pooled = pool_seeds(list(runs.values()))
    _, lo, hi = f1_interval(pooled, n_boot, seed)
    entry: dict[str, Any] = {"row": row, "f1_mean": float(np.mean(list(per_seed.values()))),
                             "f1_std": float(np.std(list(per_seed.values()), ddof=1)) if len(per_seed) > 1 else None,
                             "f1_ci": [lo, hi], "seeds": len(per_seed), "ci_method": "percentile bootstrap over test sentences, "
                             "pooled over seeds", "vs": {}}
    for base in baselines:
        if base == row or base not in runs_by_row:
            continue
        shared = sorted(set(runs) & set(runs_by_row[base]))
        if not shared:
            continue
        a = pool_seeds([runs[s] for s in shared])
        b = pool_seeds([runs_by_row[base][s] for s in shared])
        test = paired_test(a, b, method, n_boot, seed)
        needed, why = seeds_needed([f1_of(runs[s]) - f1_of(runs_by_row[base][s]) for s in shared])
        entry["vs"][base] = {**test, "seeds": len(shared), "seeds_needed": needed, "seeds_needed_note": why}
    return entry
