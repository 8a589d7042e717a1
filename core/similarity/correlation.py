"""Does a similarity measure predict the F1 gain of pretraining on a source? Pearson r over finished NER runs
(Dai et al. 2020, Fig. 2), read from the run index."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.data.workspace import Workspace
from core.errors import UserError


def finished_f1_runs(ws: Workspace) -> list[dict[str, Any]]:
    """Finished NER runs with a test F1, as {job, kind, source, f1, data}, read from the run index
    (core.train.lineage): `source` is the corpus of the run's last MLM phase (None: no pretraining),
    so compare-sources runs, experiment cells and any NER run trained from an MLM folder all count;
    `data` names the LC (and its size when a subset) and TEST the run was trained and tested on, since
    F1 gains only compare runs on the same data."""
    from core.train.lineage import list_runs, pretraining_source

    def label(ref: dict[str, Any] | None, role: str) -> str:
        if not ref:
            return f"{role} ?"
        part = f" ({ref['sentences']} of {ref['of']})" if ref.get("of") and (ref.get("sentences") or 0) < ref["of"] else ""
        return f"{role} {ref.get('name')}{part}"

    runs = []
    for entry in list_runs(ws, "ner"):
        f1 = entry.get("f1")
        if not isinstance(f1, (int, float)) or not math.isfinite(f1):
            continue
        src = pretraining_source(entry)
        lin = entry.get("lineage") or {}
        runs.append({"job": entry["id"], "kind": "ner", "source": src["name"] if src else None, "f1": float(f1),
                     "data": f"{label(lin.get('lc'), 'LC')} · {label(lin.get('test'), 'TEST')}"})
    return runs


def correlate_with_f1(runs: Sequence[dict[str, Any]], matrix: dict[str, Any], target: str) -> dict[str, Any]:
    """Pearson r between each measure (source vs `target`) and the F1 gain of runs pretrained on
    that source, as in Dai et al. 2020 Fig. 2. Runs are averaged per source (seeds); the gain is
    over the mean F1 of runs without a pretraining source, or plain F1 when there are none.

    Returns {y_label, baseline_f1, points: [{source, runs, f1, y, y_err, <measure>...}], measures: {m: {r, p, n, reason}}};
    y_err is the std of the source's F1 over its runs (seeds), None for a single run.
    """
    from scipy.stats import pearsonr

    if target not in matrix.get("targets", []):
        raise UserError(f"{target!r} is not a target of this similarity result")
    j = matrix["targets"].index(target)
    baseline = [r["f1"] for r in runs if r["source"] is None]
    base = float(np.mean(baseline)) if baseline else None
    by_source: dict[str, list[float]] = {}
    for r in runs:
        if r["source"] is not None and r["source"] in matrix["sources"]:
            by_source.setdefault(r["source"], []).append(float(r["f1"]))
    points = []
    for source, f1s in sorted(by_source.items()):
        i = matrix["sources"].index(source)
        f1 = float(np.mean(f1s))
        # error bar: the sample std of the source's runs over seeds (None with one run: no spread to show)
        spread = float(np.std(f1s, ddof=1)) if len(f1s) > 1 else None
        point = {"source": source, "runs": len(f1s), "f1": f1, "y": f1 - base if base is not None else f1, "y_err": spread}
        for m in matrix["measures"]:
            point[m] = matrix["values"][m][i][j]
        points.append(point)
    out: dict[str, Any] = {"y_label": "F1 gain" if base is not None else "F1", "baseline_f1": base, "points": points,
                           "measures": {}}
    for m in matrix["measures"]:
        xy = [(p[m], p["y"]) for p in points if p[m] is not None and math.isfinite(p[m])]
        stats: dict[str, Any] = {"n": len(xy), "r": None, "p": None, "reason": ""}
        if len(xy) < 3:
            stats["reason"] = f"needs finished NER runs pretrained on at least 3 different sources (have {len(xy)})"
        elif len({x for x, _ in xy}) < 2 or len({y for _, y in xy}) < 2:
            stats["reason"] = "all values are equal, so r is undefined"
        else:
            res = pearsonr([x for x, _ in xy], [y for _, y in xy])
            stats["r"], stats["p"] = float(res.statistic), float(res.pvalue)
            stats["r_ci"] = r_interval(xy)
        out["measures"][m] = stats
    return out


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
