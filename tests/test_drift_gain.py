"""Drift against gain (core.experiments.drift_gain): the CKA read is that of the encoder NER fine-tuned, cells whose
encoder is not known are counted out, and r reads the relation within domains, not between them."""

from __future__ import annotations

import pytest

from core.experiments.decision import RunOfRecipe
from core.experiments.drift_gain import drift_and_gain, fine_tuned_cka
from core.experiments.records import Cell

SCORES = {"base": 0.4, "step-100": 0.41, "step-200": 0.42}


def _pick(chosen: str, drift: float | None = None) -> dict:
    step = None if chosen == "base" else int(chosen.split("-")[1])
    return {"chosen": chosen, "chosen_step": step, "scores": SCORES, **({"drift": {"cka": drift}} if drift else {})}


@pytest.mark.parametrize(("pick", "expected"), [
    (None, 0.7),  # no pick: the end of the MLM run was fine-tuned
    (_pick("step-200"), 0.7),  # the pick chose the end of the run
    (_pick("base"), 1.0),  # the base encoder has not moved
    (_pick("step-100"), None),  # an earlier snapshot, its drift not recorded: unknown
    (_pick("step-100", drift=0.9), 0.9),  # ... and recorded
    ({"chosen": "final", "chosen_step": 300, "scores": {**SCORES, "final": 0.5}}, 0.7),  # the end, not a snapshot
    ({"chosen": "step-200", "chosen_step": 200, "scores": {**SCORES, "final": 0.5}}, None),  # the final came after it
    ({"chosen": "step-200", "chosen_step": 200}, None),  # a record without its scores: which step ended it is unknown
])
def test_the_cka_read_is_that_of_the_encoder_fine_tuned(pick, expected):
    assert fine_tuned_cka(Cell(row="tapt", seed=1, f1=0.5, drift={"cka": 0.7, "cosine": 0.5}, pick=pick)) == expected


def _runs(domain: str, offset: float, slope: float, device: str = "cpu") -> list[RunOfRecipe]:
    """A default study with none and two MLM rows, and an lr variant, whose gain over none is `slope` x CKA + noise-free
    `offset` per domain; seeds 1 to 3."""
    numerics = {"device": device, "dtype": "fp32"}
    params = {"model": "default", "preset": "study", "pick_checkpoint": 0, "mlm_config": {}}
    default, variant = [], []
    for seed in (1, 2, 3):
        default.append(Cell(row="none", seed=seed, f1=0.5, numerics=numerics))
        for k, (row, cells) in enumerate([("tapt", default), ("dsir", default), ("tapt", variant)]):
            cka = 0.6 + 0.05 * seed + 0.1 * k
            cells.append(Cell(row=row, seed=seed, f1=0.5 + offset + slope * cka, drift={"cka": cka, "cosine": 0.5},
                              numerics=numerics))
    return [RunOfRecipe(domain, params, default), RunOfRecipe(domain, {**params, "mlm_config": {"lr": 5e-5}}, variant)]


def test_r_is_read_within_domains_and_cells_without_their_none_are_counted_out():
    """Two domains where more drift goes with less gain, one of them far higher in both: pooled naively the levels
    would dominate; centred per domain, r is +1."""
    runs = _runs("ai", 0.0, 0.1) + _runs("music", 0.2, 0.1)
    made = drift_and_gain(runs + [_runs("science", 0.0, 0.1, device="cuda")[1]])  # a variant with no default beside it
    assert made["moved"]["within"]["n"] == 18 and made["moved"]["within"]["r"] == pytest.approx(1.0)
    assert {d: s["n"] for d, s in made["moved"]["per_domain"].items()} == {"ai": 9, "music": 9}
    assert made["left_out"] == {"no_none": 3, "unknown": 0, "kept_base": 0}
    flipped = drift_and_gain(_runs("ai", 0.0, -0.1) + _runs("music", 0.0, -0.1))
    assert flipped["moved"]["within"]["r"] == pytest.approx(-1.0)


def test_cells_that_kept_the_base_are_counted_out_even_a_whole_domain_of_them():
    """A knob that holds the encoder back may leave a domain where every pick kept the base: nothing to correlate
    there, and the table still renders."""
    from tests.conftest import load_script

    kept = []
    for run in _runs("science", 0.0, 0.1):
        cells = [c if c.row == "none" else Cell(row=c.row, seed=c.seed, f1=0.5, drift=c.drift, pick=_pick("base"),
                                                numerics=c.numerics) for c in run.cells]
        kept.append(RunOfRecipe(run.domain, run.params, cells))
    made = drift_and_gain(_runs("ai", 0.0, 0.1) + _runs("music", 0.2, 0.1) + kept)
    assert made["left_out"]["kept_base"] == 9 and "science" not in made["moved"]["per_domain"]
    assert made["moved"]["within"]["r"] == pytest.approx(1.0)
    text = "\n".join(load_script("ablation_table")._drift_lines({"protocol": "v2", **made}))
    assert "| within domains | 18 | +1.00" in text and "9 cells that kept the base encoder" in text
