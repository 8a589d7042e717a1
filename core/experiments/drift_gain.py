"""Does how far continued MLM moved the encoder go with what it gained? Issue 46 asks what makes pretraining this
sentence-embedding MiniLM pay; several of its knobs (L2-SP, a lower lr, frozen layers, head warm-up) hold the encoder
nearer its start, on the guess that drifting far loses what NER reuses. This reads that guess off the cells already
run: each MLM cell's CKA to the base encoder (core.train.drift; 1 = unchanged) against its TEST F1 minus `none`'s of
the same domain, seed and machine.

The CKA is that of the encoder NER fine-tuned. Checkpoint pick may keep the base or an earlier snapshot; a cell
records the chosen encoder's drift since issue 46 (`pick["drift"]`). Left out, and counted: a cell that kept the base
(it is `none` again, by construction once the NER head is seeded after the encoder load, so it says nothing of drift),
and an older cell whose pick chose an earlier snapshot (its recorded drift is the end of the run's, not the encoder it
used). The second is not a random set: those are the runs whose end scored worse on DEV than an earlier step.

Domains differ in both drift and gain, so a pooled r would mostly compare domains: the within-domain r centres both
figures on each domain's means (core.similarity.correlation.within_target_r), and its interval resamples domains and
seeds crosswise (the pigeonhole bootstrap of crossed_r_interval), since the cells of one domain and seed share `none`.
Cells fine-tuned with the old NER head draw (records.head_drawn_apart) carry the head's luck in their gain, which pulls
r toward 0; r is also given without them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from core.experiments.decision import RunOfRecipe
from core.experiments.records import Cell, head_drawn_apart
from core.similarity.correlation import crossed_r_interval, pearson_stats, within_target_r
from core.train.checkpoint_pick import end_of_run


def fine_tuned_cka(cell: Cell) -> float | None:
    """CKA to the base of the encoder this cell fine-tuned, or None when it is not known (see the module doc)."""
    pick = cell.pick or {}
    if isinstance(pick.get("drift"), dict):
        return float(pick["drift"]["cka"])
    if pick.get("chosen") == "base":
        return 1.0
    if not cell.drift:
        return None
    if pick and pick.get("chosen") != end_of_run(pick.get("scores") or {}):
        return None  # an earlier snapshot (or a record without its scores), whose drift an older cell did not measure
    return float(cell.drift["cka"])


def _correlations(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Pearson r per domain (an interval over its cells), and within domains (an interval over domains x seeds)."""
    needs = "MLM cells with a known drift beside none"
    by_domain: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for p in points:
        by_domain[p["target"]].append((p["cka"], p["gain"]))
    within = {"n": len(points), "r": within_target_r(points, "cka")}
    within["r_ci"] = crossed_r_interval(points, "cka", within=True) if within["r"] is not None else None
    return {"per_domain": {d: pearson_stats(xy, needs) for d, xy in sorted(by_domain.items())}, "within": within}


def drift_and_gain(results: Iterable[RunOfRecipe]) -> dict[str, Any]:
    """Pearson r of (CKA, F1 - none's F1) over the MLM cells whose encoder moved, of every recipe that ran alike beside
    a default with `none`: all of them, and those whose NER head was drawn as none's; plus what was left out, and why."""
    results = list(results)
    nones: dict[tuple[Any, ...], dict[int, Cell]] = {}
    for r in results:
        if not r.knob:
            nones[r.base, r.domain, r.ran] = {c.seed: c for c in r.cells if c.row == "none"}
    points: list[dict[str, Any]] = []
    counts = {"kept_base": 0, "unknown": 0, "no_none": 0}
    for r in results:
        none = nones.get((r.base, r.domain, r.ran), {})
        for c in r.cells:
            if c.row == "none" or not (c.drift or c.pick):
                continue
            if c.seed not in none:
                counts["no_none"] += 1
            elif (cka := fine_tuned_cka(c)) is None:
                counts["unknown"] += 1
            elif cka >= 1.0:
                counts["kept_base"] += 1
            else:
                points.append({"target": r.domain, "source": f"seed {c.seed}", "cka": cka, "gain": c.f1 - none[c.seed].f1,
                               "head_apart": head_drawn_apart(c) != head_drawn_apart(none[c.seed])})
    return {"moved": _correlations(points), "seeded_head": _correlations([p for p in points if not p["head_apart"]]),
            "left_out": counts}
