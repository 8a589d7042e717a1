"""Sweep figures of an experiment as pandas frames: the seed paper's Fig. 2 (test F1 against the
amount of SC), Fig. 4 (test F1 against the amount of LC) and Table 5 (F1 against the MLM corpus
and its cost).

Input is an experiment's cells (`core.experiments.experiment`: each with row, seed, f1, budget, lc_size,
mlm_seconds, mlm_sentences); the Runs page only draws these frames with plotly, the tests check
them here. F1 values are fractions (0-1) except in Table 5, which prints percent like Table 3.

>>> cells = [{"row": "dsir", "seed": s, "f1": f, "budget": b, "lc_size": 100} for s, f, b in
...          ((1, 0.5, 10), (2, 0.7, 10), (1, 0.8, 20))]
>>> sc_amount_frame(cells)[["series", "budget", "f1_mean", "n"]].values.tolist()
[['dsir', 10, 0.6, 2], ['dsir', 20, 0.8, 1]]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from core.experiments.experiment import row_order
from core.experiments.plan import BASELINES
from core.experiments.records import Cell, as_cells

COLUMNS = ["row", "kind", "budget", "lc_size", "f1_mean", "f1_std", "f1_lo", "f1_hi", "ci_plus", "ci_minus", "n",
           "seeds_label", "seeds", "mlm_seconds", "mlm_sentences"]
CORPUS = {"none": "none (no MLM)", "tapt": "TC", "dapt": "DC", "tapt+dapt": "DC, then TC"}


def _std(values: Sequence[float]) -> float:
    """Sample std over seeds as core.experiments.experiment.summarize gives it (0 for one seed)."""
    return float(pd.Series(values).std(ddof=1)) if len(values) > 1 else 0.0


def _interval(cs: Sequence[Cell]) -> tuple[float, float]:
    """95% CI of the seed-mean F1 of one sweep point (core.experiments.statistics: seeds, then TEST sentences
    resampled); NaN when a cell kept no TEST predictions (runs from before they were kept)."""
    from core.experiments.statistics import f1_interval
    from core.experiments.summary import cell_counts

    counts = [cell_counts(c) for c in sorted(cs, key=lambda c: c.seed)]
    if any(c is None for c in counts):
        return math.nan, math.nan
    _, lo, hi = f1_interval(counts)
    return lo, hi


def sweep_frame(cells: Iterable[Cell | Mapping[str, Any]]) -> pd.DataFrame:
    """One line per (row, SC budget, LC size): F1 mean and std over seeds, its 95% CI (f1_lo, f1_hi), seeds,
    mean MLM seconds and sentences. Cells from before sweeps (no budget / lc_size) group under a missing value."""
    groups: dict[tuple[str, Any, Any], list[Cell]] = {}
    for c in as_cells(cells):
        if isinstance(c.f1, (int, float)) and math.isfinite(c.f1):
            groups.setdefault((c.row, c.budget, c.lc_size), []).append(c)
    rows = []
    for (row, budget, lc_size), cs in groups.items():
        f1s = [float(c.f1) for c in cs]
        lo, hi = _interval(cs)
        rows.append({"row": row, "kind": "baseline" if row in BASELINES else "strategy", "budget": budget, "lc_size": lc_size,
                     "f1_mean": sum(f1s) / len(f1s), "f1_std": _std(f1s), "f1_lo": lo, "f1_hi": hi, "n": len(f1s),
                     # the figures' error bars: the CI around the mean (no bar when no predictions were kept)
                     "ci_plus": hi - sum(f1s) / len(f1s), "ci_minus": sum(f1s) / len(f1s) - lo,
                     "seeds_label": "1 seed" if len(f1s) == 1 else f"{len(f1s)} seeds",
                     "seeds": sorted(c.seed for c in cs),
                     "mlm_seconds": sum(float(c.mlm_seconds or 0.0) for c in cs) / len(cs),
                     "mlm_sentences": int(round(sum(int(c.mlm_sentences or 0) for c in cs) / len(cs)))})
    # counts stay counts ("SC 8", not "SC 8.0") where a baseline has no budget or an old cell no LC size
    frame = pd.DataFrame(rows, columns=COLUMNS).astype({"budget": "Int64", "lc_size": "Int64"})
    order = {r: i for i, r in enumerate(row_order(list(dict.fromkeys(frame["row"]))))}
    frame["_order"] = frame["row"].map(order)
    frame = frame.sort_values(["_order", "budget", "lc_size"], na_position="first", kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)


def sweep_axes(cells: Iterable[Cell | Mapping[str, Any]]) -> dict[str, list[int]]:
    """The distinct SC budgets of strategy rows and the distinct LC sizes: a figure is worth drawing
    when its axis has two or more."""
    cells = as_cells(cells)
    budgets = sorted({c.budget for c in cells if c.row not in BASELINES and c.budget is not None})
    sizes = sorted({c.lc_size for c in cells if c.lc_size is not None})
    return {"budgets": budgets, "lc_sizes": sizes}


def _series(frame: pd.DataFrame, split: str, label: str) -> pd.Series:
    """Series name per line: the row, plus `label value` when that row has several values of `split`."""
    several = frame.groupby("row")[split].transform("nunique") > 1
    return frame["row"] + several.map({True: " · ", False: ""}) + [f"{label} {v}" if s else "" for v, s in
                                                                    zip(frame[split], several, strict=True)]


def sc_amount_frame(cells: Iterable[Cell | Mapping[str, Any]], lc_size: int | None = None) -> pd.DataFrame:
    """Fig. 2: test F1 (mean ± std over seeds) against SC sentences, one series per row, at one LC
    size (default the largest). Baselines are there too (no budget: they select nothing); the page draws
    them as reference lines."""
    frame = sweep_frame(cells)
    if lc_size is None and frame["lc_size"].notna().any():
        lc_size = int(frame["lc_size"].max())
    if lc_size is not None:
        frame = frame[frame["lc_size"] == lc_size]
    frame = frame.assign(series=frame["row"])
    return frame[["series", *COLUMNS]].reset_index(drop=True)


def lc_amount_frame(cells: Iterable[Cell | Mapping[str, Any]], budget: int | None = None) -> pd.DataFrame:
    """Fig. 4: test F1 (mean ± std over seeds) against LC sentences, one series per row; a strategy
    run at several SC budgets gives one series per budget ('dsir · SC 500') unless `budget` picks one."""
    frame = sweep_frame(cells)
    if budget is not None:
        frame = frame[(frame["kind"] == "baseline") | (frame["budget"] == budget)]
    frame = frame.assign(series=_series(frame, "budget", "SC") if len(frame) else frame["row"])
    return frame[["series", *COLUMNS]].sort_values(["series", "lc_size"], kind="stable").reset_index(drop=True)


def mlm_time_frame(cells: Iterable[Cell | Mapping[str, Any]], lc_size: int | None = None, percent: bool = True) -> pd.DataFrame:
    """Table 5: per row (and SC budget), the MLM corpus, its sentences, test F1 'mean ± std' over
    seeds and the mean MLM wall time, at one LC size (default the largest)."""
    frame = sc_amount_frame(cells, lc_size)
    scale = 100.0 if percent else 1.0
    labels = _series(frame, "budget", "SC") if len(frame) else frame["row"]
    out = pd.DataFrame({
        "method": labels,
        "MLM corpus": [CORPUS.get(r, f"TC + SC ({r}, {int(b):,} sentences), 1:1" if pd.notna(b)
                                  else f"TC + SC ({r}), 1:1") for r, b in zip(frame["row"], frame["budget"], strict=True)],
        "sentences": frame["mlm_sentences"].astype(int),
        "F1 (%)": [f"{m * scale:.2f} ± {s * scale:.2f}" for m, s in zip(frame["f1_mean"], frame["f1_std"], strict=True)],
        "MLM time (s)": frame["mlm_seconds"].round(1),
        "seeds": frame["n"],
    })
    return out.set_index("method")


__all__ = ["sc_amount_frame", "lc_amount_frame", "sweep_axes", "sweep_frame", "mlm_time_frame"]
