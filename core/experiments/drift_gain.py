"""Does how far continued MLM moved the encoder go with what it gained? Issue 46 asks what makes pretraining this
sentence-embedding MiniLM pay; several of its knobs (L2-SP, a lower lr, frozen layers, head warm-up) hold the encoder
nearer its start, on the guess that drifting far loses what NER reuses. This reads that guess off the cells already
run: each MLM cell's CKA to the base encoder (core.train.drift; 1 = unchanged) against its TEST F1 minus `none`'s of
the same domain, seed and machine.

The CKA is that of the encoder NER fine-tuned. Checkpoint pick may keep the base (CKA 1) or an earlier snapshot; a
cell records the snapshot's drift since issue 46 (`pick["drift"]`), and an older cell whose pick chose a snapshot
before the end is left out and counted, since its recorded drift is the end of the run's, not the encoder it used.

Domains differ in both drift and gain, so a pooled r would mostly compare domains; the within-domain r centres both
figures on each domain's means first. Cells share `none` per seed and rows share TAPT models, so the points are not
independent: read r and its interval as a description, not a test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from core.experiments.decision import RunOfRecipe
from core.experiments.records import Cell
from core.similarity.correlation import pearson_stats


def fine_tuned_cka(cell: Cell) -> float | None:
    """CKA to the base of the encoder this cell fine-tuned, or None when it is not known (see the module doc)."""
    pick = cell.pick or {}
    if isinstance(pick.get("drift"), dict):
        return float(pick["drift"]["cka"])
    if pick and pick.get("chosen_step") is None and pick.get("chosen") == "base":
        return 1.0
    if not cell.drift:
        return None
    steps = [int(k.split("-")[1]) for k in pick.get("scores", {}) if k.startswith("step-") and k[5:].isdigit()]
    if pick and steps and pick.get("chosen_step") != max(steps):
        return None  # an earlier snapshot, whose drift an older cell did not measure
    return float(cell.drift["cka"])


def _correlations(points: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """Pearson r per domain, and within domains (each domain's points centred on its own means, then pooled)."""
    needs = "MLM cells with a known drift beside none"
    centred = []
    for xy in points.values():
        mx, my = sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy)
        centred += [(x - mx, y - my) for x, y in xy]
    return {"per_domain": {d: pearson_stats(xy, needs) for d, xy in sorted(points.items()) if xy},
            "within": pearson_stats(centred, needs)}


def drift_and_gain(results: Iterable[RunOfRecipe]) -> dict[str, Any]:
    """Pearson r of (CKA, F1 - none's F1) over every MLM cell of every recipe that ran alike beside a default with
    `none`: over all of them, and over those whose encoder moved (CKA < 1). The two differ in the cells where the pick
    kept the base encoder: there CKA is 1 because the probe found no gain on DEV, so with them r also measures the
    pick's choice; without them it asks the knobs' question, whether moving less goes with gaining more. Plus how many
    cells were left out, and why."""
    results = list(results)
    nones: dict[tuple[Any, ...], dict[int, float]] = {}
    for r in results:
        if not r.knob:
            nones[r.base, r.domain, r.ran] = {c.seed: c.f1 for c in r.cells if c.row == "none"}
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    unknown = no_none = 0
    for r in results:
        none = nones.get((r.base, r.domain, r.ran), {})
        for c in r.cells:
            if c.row == "none" or not (c.drift or c.pick):
                continue
            if c.seed not in none:
                no_none += 1
            elif (cka := fine_tuned_cka(c)) is None:
                unknown += 1
            else:
                points[r.domain].append((cka, c.f1 - none[c.seed]))
    moved = {d: [(x, y) for x, y in xy if x < 1.0] for d, xy in points.items()}
    return {"all": _correlations(points), "moved": _correlations(moved),
            "kept_base": sum(len(xy) for xy in points.values()) - sum(len(xy) for xy in moved.values()),
            "left_out_unknown": unknown, "left_out_no_none": no_none}
