"""How an experiment's progress bar divides among its cells and a cell's share among its phases.

A bar's time left is its elapsed time over its share done, so a share must follow the clock. Fixed slices did not: a
selection row's MLM, most of a CPU cell, moved the bar a fifth of its cell's slice (the first tenths went to a
selection that takes seconds), and a `none` cell, which only fine-tunes, had as large a slice as a pretraining cell;
music's CPU knob study showed about 3.5 h left in its first cell, for nine cells of 12 to 18 min. The weights are
the phases' median clocks in the protocol-v2 study cells (study preset, checkpoint pick 4; docs/results), as shares of
a pretraining cell:
- CPU (2 cores, fp32, music): MLM about 370 of 630 s in a dsir cell, none 107 s (NER and TEST), the pick's four
  probes the rest;
- GPU (H200, bf16, about eight cells at once, music): MLM about 20 of 116 s, none 68 s, the probes the rest.
Other machines (an H100, more cores, a CPU with bf16) were not measured: their shares may differ from these.
"""

from __future__ import annotations

# share of a pretraining cell's clock per phase; "tapt models" is B1/B2 (a TAPT MLM, then its NER), which the ner and
# entity-gain strategies read, and which a cell reuses at once when its seed's tapt cell has trained them
PHASE_WEIGHTS: dict[str, dict[str, float]] = {
    "cpu": {"tapt models": 0.75, "select": 0.02, "mlm": 0.58, "pick": 0.22, "ner": 0.15, "test": 0.03},
    "cuda": {"tapt models": 0.72, "select": 0.02, "mlm": 0.17, "pick": 0.22, "ner": 0.55, "test": 0.04},
}


def cell_phases(pretrains: bool, selects: bool = False, tapt_models: bool = False, pick: bool = False) -> list[str]:
    """The phases a cell runs, in order: a `none` cell fine-tunes and scores TEST only.

    >>> cell_phases(False)
    ['ner', 'test']
    >>> cell_phases(True, selects=True, tapt_models=True, pick=True)
    ['tapt models', 'select', 'mlm', 'pick', 'ner', 'test']
    """
    if not pretrains:
        return ["ner", "test"]
    before = (["tapt models"] if tapt_models else []) + (["select"] if selects else [])
    return [*before, "mlm", *(["pick"] if pick else []), "ner", "test"]


def _weights(device: str) -> dict[str, float]:
    return PHASE_WEIGHTS["cuda" if device.startswith("cuda") else "cpu"]


def cell_weight(phases: list[str], device: str) -> float:
    """A cell's clock relative to a pretraining cell's (the sum of its phases' shares): its slice of an experiment.

    >>> round(cell_weight(cell_phases(False), "cpu") / cell_weight(cell_phases(True, pick=True), "cpu"), 2)
    0.18
    """
    weights = _weights(device)
    return sum(weights[p] for p in phases)


def phase_spans(phases: list[str], device: str) -> dict[str, tuple[float, float]]:
    """Each phase's [start, end] of the cell's 0-1, in order and touching, by its share of the cell's clock.

    >>> spans = phase_spans(cell_phases(True, selects=True), "cpu")
    >>> spans["select"][0], round(spans["mlm"][1] - spans["mlm"][0], 2), spans["test"][1]
    (0.0, 0.74, 1.0)
    """
    weights = _weights(device)
    return dict(zip(phases, cumulative([weights[p] for p in phases])))


def cumulative(weights: list[float]) -> list[tuple[float, float]]:
    """Consecutive [start, end] slices of 0-1 in proportion to `weights`: each cell's slice of the experiment.

    >>> cumulative([1.0, 3.0])
    [(0.0, 0.25), (0.25, 1.0)]
    """
    total = sum(weights) or 1.0
    out, start = [], 0.0
    for w in weights:
        out.append((start, start + w / total))
        start += w / total
    if out:
        out[-1] = (out[-1][0], 1.0)
    return out
