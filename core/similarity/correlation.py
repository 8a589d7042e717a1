"""Does a similarity measure predict the F1 gain of pretraining on a source? Pearson r over finished NER runs
(Dai et al. 2020, Fig. 2), read from the run index."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.data.workspace import Workspace
from core.errors import UserError
from core.similarity.comparison import ComparisonResult
from core.similarity.matrix_result import SimilarityMatrix


def finished_f1_runs(ws: Workspace) -> list[dict[str, Any]]:
    """Finished NER runs with a test F1, as {job, kind, source, f1, data}, read from the run index
    (core.train.lineage): `source` is the corpus of the run's last MLM phase (None: no pretraining),
    so compare-sources runs, experiment cells and any NER run trained from an MLM folder all count;
    `data` names the LC (and its size when a subset) and TEST the run was trained and tested on, since
    F1 gains only compare runs on the same data."""
    from core.train.lineage import CorpusStamp, list_runs

    def label(ref: CorpusStamp | None, role: str) -> str:
        return ref.label(role) if ref else f"{role} ?"

    runs = []
    for entry in list_runs(ws, "ner"):
        f1 = entry.f1
        if not isinstance(f1, (int, float)) or not math.isfinite(f1):
            continue
        src, lin = entry.pretraining_source, entry.lineage
        runs.append({"job": entry.id, "kind": "ner", "source": src["name"] if src else None, "f1": float(f1),
                     "source_hash": src["hash"] if src else None,
                     "data": f"{label(lin and lin.lc, 'LC')} · {label(lin and lin.test, 'TEST')}"})
    return runs


def correlate_with_f1(runs: Sequence[dict[str, Any]], matrix: SimilarityMatrix, target: str) -> dict[str, Any]:
    """Pearson r between each measure (source vs `target`) and the F1 gain of runs pretrained on
    that source, as in Dai et al. 2020 Fig. 2. Runs are averaged per source (seeds); the gain is
    over the mean F1 of runs without a pretraining source, or plain F1 when there are none.

    Returns {y_label, baseline_f1, points: [{source, runs, f1, y, y_err, <measure>...}], measures: {m: {r, p, n, reason}},
    left_out}; y_err is the std of the source's F1 over its runs (seeds), None for a single run; left_out counts runs
    pretrained on a source's earlier contents (matched by content hash, not by name), which are no point here.
    """
    if target not in matrix.targets:
        raise UserError(f"{target!r} is not a target of this similarity result")
    baseline = [r["f1"] for r in runs if r["source"] is None]
    base = float(np.mean(baseline)) if baseline else None
    by_source: dict[str, list[float]] = {}
    stale = 0
    for r in runs:
        if r["source"] is not None and r["source"] in matrix.sources:
            now, then = matrix.hashes.get(r["source"]), r.get("source_hash")
            if now and then and then != now:  # pretrained on what the source held before it was re-imported: its
                stale += 1  # F1 is no point of this measure's values
                continue
            by_source.setdefault(r["source"], []).append(float(r["f1"]))
    points = []
    for source, f1s in sorted(by_source.items()):
        f1 = float(np.mean(f1s))
        # error bar: the sample std of the source's runs over seeds (None with one run: no spread to show)
        spread = float(np.std(f1s, ddof=1)) if len(f1s) > 1 else None
        point = {"source": source, "runs": len(f1s), "f1": f1, "y": f1 - base if base is not None else f1, "y_err": spread}
        for m in matrix.measures:
            point[m] = matrix.value(m, source, target)
        points.append(point)
    out: dict[str, Any] = {"y_label": "F1 gain" if base is not None else "F1", "baseline_f1": base, "points": points,
                           "measures": {}, "left_out": stale}
    for m in matrix.measures:
        xy = [(p[m], p["y"]) for p in points if p[m] is not None and math.isfinite(p[m])]
        out["measures"][m] = pearson_stats(xy, "finished NER runs pretrained on at least 3 different sources")
    return out


def pearson_stats(xy: Sequence[tuple[float, float]], needs: str, interval: list[float] | None = None) -> dict[str, Any]:
    """{n, r, p, r_ci, reason}: Pearson r of the points with its p-value and `interval` (else a bootstrap interval over
    the points), or, with fewer than three points or no spread, r None and the reason (`needs`: what three of are
    missing)."""
    from scipy.stats import pearsonr

    stats: dict[str, Any] = {"n": len(xy), "r": None, "p": None, "reason": ""}
    if len(xy) < 3:
        stats["reason"] = f"needs {needs} (have {len(xy)})"
    elif len({x for x, _ in xy}) < 2 or len({y for _, y in xy}) < 2:
        stats["reason"] = "all values are equal, so r is undefined"
    else:
        res = pearsonr([x for x, _ in xy], [y for _, y in xy])
        stats["r"], stats["p"] = float(res.statistic), float(res.pvalue)
        stats["r_ci"] = interval or r_interval(xy)
    return stats


def r_interval(xy: Sequence[tuple[float, float]], n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> list[float] | None:
    """95 % percentile bootstrap interval of Pearson r over the sources (resampled with replacement; resamples
    where r is undefined, all x or all y equal, are skipped). With few sources it is wide, as it should be."""
    x, y = np.array([p[0] for p in xy], dtype=np.float64), np.array([p[1] for p in xy], dtype=np.float64)
    rng = np.random.default_rng(seed)
    rs = []
    for _ in range(n_boot):
        i = rng.integers(0, len(x), len(x))
        if np.ptp(x[i]) > 0 and np.ptp(y[i]) > 0:
            rs.append(float(np.corrcoef(x[i], y[i])[0, 1]))
    if len(rs) < n_boot // 2:
        return None
    return [float(np.quantile(rs, alpha / 2)), float(np.quantile(rs, 1 - alpha / 2))]


def pool_comparisons(results: Sequence[ComparisonResult | dict[str, Any]]) -> dict[str, Any]:
    """Every (source, target) pair of several compare-sources results with its F1 gain over the target's own no-pretraining
    baseline, and each measure's Pearson r against that gain over all pairs (Dai et al. 2020 pool five targets' pairs).

    One target's five sources give r on five points, whose interval spans most of [-1, 1]; the pairs of five targets give
    25. They are not 25 independent points: a target's pairs share its baseline runs and a source's pairs share its MLM
    models. So the interval of r resamples targets and sources (`crossed_r_interval`), and the p-value, which takes the
    pairs as independent, is optimistic. Since the targets differ in how much any pretraining helps, r over pairs also
    mixes "this source suits this target" with "this target gains more"; `r_within` (measure and gain centred per target)
    keeps the first alone, and `r_off_diagonal` leaves out the in-domain pairs (the target's own text as a source),
    which alone can make r large. Results must share one recipe (preset, encoder) and seeds and name each target once."""
    from scipy.stats import spearmanr

    from core.similarity.measures import MEASURES

    if not results:
        raise UserError("no compare-sources results to pool: run `python -m core compare-sources` on at least one target")
    results = [ComparisonResult.of(r, f"comparison {i + 1}") for i, r in enumerate(results)]
    recipes = {r.recipe for r in results}
    if len(recipes) > 1:
        shown = "; ".join(f"preset {p}, encoder {m}, seeds {list(s)}" for p, m, s in sorted(recipes, key=str))
        raise UserError(f"the results were trained with different recipes or seeds ({shown}): pool one recipe at a time")
    results = sorted(results, key=lambda r: r.target)  # pairs listed target by target, whatever order they came in
    targets = [r.target for r in results]
    if dup := sorted({t for t in targets if targets.count(t) > 1}):
        raise UserError(f"target {', '.join(dup)} appears in more than one result: pool one comparison per target")
    measures = [m for m in results[0].measures if all(m in r.measures for r in results)]
    points = []
    for r in results:
        for s in r.sources:
            gain, gain_ci, gain_p = s.gain(r.baseline_f1)
            points.append({"target": r.target, "source": s.name, "in_domain": bool(
                s.name == r.target or (s.hash and s.hash == r.target_hash)),
                "f1": s.f1_mean, "baseline_f1": r.baseline_f1, "gain": gain, "gain_ci": gain_ci, "gain_p": gain_p,
                "seeds": len(r.seeds) or len(s.runs),
                **{m: _finite(s.values[m]) for m in measures}})  # a NaN measure is missing, not a number in the JSON
    out: dict[str, Any] = {"targets": targets, "preset": results[0].preset, "model": results[0].model,
                           "seeds": results[0].seeds, "pairs": len(points), "points": points, "measures": {}}
    for m in measures:
        info = MEASURES.get(m)
        usable = [p for p in points if p[m] is not None]
        xy = [(p[m], p["gain"]) for p in usable]
        crossed = crossed_r_interval(usable, m)  # None with < 3 targets or sources: then the pairs are resampled
        stats = pearson_stats(xy, "3 pairs with a value", interval=crossed)
        stats["direction"] = info.direction if info else "not a known measure"
        if stats["r"] is not None:
            rho = spearmanr(*zip(*xy))
            stats.update(rho=float(rho.statistic), rho_p=float(rho.pvalue), r_within=within_target_r(usable, m),
                         r_within_ci=crossed_r_interval(usable, m, within=True),
                         r_off_diagonal=_pearson([(p[m], p["gain"]) for p in usable if not p["in_domain"]]),
                         r_ci_method="bootstrap over targets and sources (Owen 2007)" if crossed else "bootstrap over pairs")
            # a similarity should go with a larger gain: r > 0 for "higher = more similar", r < 0 for "lower = ..."
            stats["as_expected"] = None if not info or info.higher_is_better is None else (stats["r"] > 0) == info.higher_is_better
        out["measures"][m] = stats
    return out


def crossed_r_interval(points: Sequence[dict[str, Any]], measure: str, n_boot: int = 1000, seed: int = 0,
                       alpha: float = 0.05, within: bool = False) -> list[float] | None:
    """95 % interval of Pearson r over (source, target) pairs by Owen's (2007) pigeonhole bootstrap: targets and sources
    are drawn with replacement, each independently, and every pair of a drawn target and a drawn source enters as often
    as both were drawn, so a target's or a source's shared noise moves all its pairs together. `within` centres measure
    and gain on each drawn target's (weighted) mean first, the interval of `r_within`. None with fewer than three
    targets or sources (resample the pairs instead)."""
    targets = sorted({p["target"] for p in points})
    sources = sorted({p["source"] for p in points})
    if len(targets) < 3 or len(sources) < 3:
        return None
    ti = np.array([targets.index(p["target"]) for p in points])
    si = np.array([sources.index(p["source"]) for p in points])
    x = np.array([p[measure] for p in points], dtype=np.float64)
    y = np.array([p["gain"] for p in points], dtype=np.float64)
    rng = np.random.default_rng(seed)
    rs = []
    for _ in range(n_boot):
        w = (np.bincount(rng.integers(0, len(targets), len(targets)), minlength=len(targets))[ti]
             * np.bincount(rng.integers(0, len(sources), len(sources)), minlength=len(sources))[si]).astype(np.float64)
        if np.count_nonzero(w) < 3:
            continue
        if within:  # each target's weighted mean; a target drawn 0 times has weight 0 and is left out by its weights
            tw = np.maximum(np.bincount(ti, weights=w, minlength=len(targets)), 1e-300)
            mx = (np.bincount(ti, weights=w * x, minlength=len(targets)) / tw)[ti]
            my = (np.bincount(ti, weights=w * y, minlength=len(targets)) / tw)[ti]
        else:
            mx, my = np.average(x, weights=w), np.average(y, weights=w)
        vx, vy = np.average((x - mx) ** 2, weights=w), np.average((y - my) ** 2, weights=w)
        if vx > 0 and vy > 0:  # Pearson r of the resampled multiset of pairs
            rs.append(float(np.average((x - mx) * (y - my), weights=w) / math.sqrt(vx * vy)))
    if len(rs) < n_boot // 2:
        return None
    return [float(np.quantile(rs, alpha / 2)), float(np.quantile(rs, 1 - alpha / 2))]


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _pearson(xy: Sequence[tuple[float, float]]) -> float | None:
    x, y = np.array([p[0] for p in xy], dtype=np.float64), np.array([p[1] for p in xy], dtype=np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def within_target_r(points: Sequence[dict[str, Any]], measure: str) -> float | None:
    """Pearson r after centring the measure and the gain on each target's mean: only differences between the sources of
    one target count (None with fewer than two targets of two or more sources)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        groups.setdefault(p["target"], []).append(p)
    groups = {t: ps for t, ps in groups.items() if len(ps) >= 2}
    if len(groups) < 2:
        return None
    xy = []
    for ps in groups.values():
        mx, my = np.mean([p[measure] for p in ps]), np.mean([p["gain"] for p in ps])
        xy += [(p[measure] - mx, p["gain"] - my) for p in ps]
    return _pearson(xy)


def pooled_rows(pooled: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measure of `pool_comparisons` as the Results page and `compare-pool` show it."""
    def num(v: float | None) -> str | None:
        return None if v is None else f"{v:+.2f}"

    rows = []
    for m, c in pooled["measures"].items():
        if c["r"] is None:
            rows.append({"measure": m, "pairs": c["n"], "Pearson r": None, "95% CI": None, "p": None, "Spearman rho": None,
                         "r within targets": None, "within: 95% CI": None, "r without in-domain": None, "direction": c["direction"],
                         "sign": c.get("reason", "")})
            continue
        rows.append({"measure": m, "pairs": c["n"], "Pearson r": f"{c['r']:+.3f}",
                     "95% CI": _interval(c.get("r_ci")), "p": f"{c['p']:.3g}",
                     "Spearman rho": num(c["rho"]), "r within targets": num(c["r_within"]),
                     "within: 95% CI": _interval(c.get("r_within_ci")),
                     "r without in-domain": num(c["r_off_diagonal"]), "direction": c["direction"],
                     "sign": {True: "as expected", False: "opposite of expected", None: None}[c["as_expected"]]})
    return rows


def _interval(ci: Sequence[float] | None, scale: float = 1) -> str | None:
    """An interval as the pooled tables print it ("[-0.19, +0.86]"), or None when there is none."""
    return f"[{scale * ci[0]:+.2f}, {scale * ci[1]:+.2f}]" if ci else None


POOLED_HELP = ("95% CI of r: bootstrap over targets and sources drawn independently (Owen's pigeonhole bootstrap; over "
               "the pairs when there are fewer than 3 targets), since a target's pairs share its baseline runs and a "
               "source's pairs its MLM models; the p-value takes the pairs as independent and is optimistic. 'r within "
               "targets' centres each target's measure and gain first, so a target that gains more from any pretraining "
               "does not count as similarity (its CI: the same bootstrap, centred per drawn target); 'r without "
               "in-domain' leaves out each target's own text as a source.")


def format_pooled(pooled: dict[str, Any]) -> str:
    """The pooled comparison as text: the pairs, then one line per measure (the `compare-pool` CLI and the CrossNER
    script print this)."""
    from core.tables import readable

    head = (f"{pooled['pairs']} (source, target) pairs over {len(pooled['targets'])} targets; preset {pooled['preset']}, "
            f"encoder {pooled['model']}, seeds {pooled['seeds']}")
    return "\n\n".join([head, readable(pair_rows(pooled)).to_string(index=False),
                         readable(pooled_rows(pooled)).to_string(index=False), POOLED_HELP])


def pair_rows(pooled: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (source, target) pair of `pool_comparisons`: F1 and gain in points, the gain's paired 95% CI and p."""
    return [{"target": p["target"], "source": p["source"], "in-domain": "yes" if p["in_domain"] else "",
             "F1": round(100 * p["f1"], 2), "no pretraining": round(100 * p["baseline_f1"], 2),
             "gain": f"{100 * p['gain']:+.2f}",
             "95% CI": _interval(p.get("gain_ci"), scale=100),
             "p": None if p.get("gain_p") is None else f"{p['gain_p']:.2f}", "seeds": p["seeds"]} for p in pooled["points"]]


def default_pool(results: Sequence[ComparisonResult]) -> list[ComparisonResult]:
    """The comparisons to pool when nobody chose: those of the recipe (preset, encoder, seeds) with the most targets, the
    first listed per target (`collect_comparisons` lists the newest first, so a rerun replaces an earlier run)."""
    by_recipe: dict[tuple[Any, ...], dict[str, ComparisonResult]] = {}
    for r in results:
        by_recipe.setdefault(r.recipe, {}).setdefault(r.target, r)
    if not by_recipe:
        return []
    return list(max(by_recipe.values(), key=len).values())
