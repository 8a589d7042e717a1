"""Issue 46's decision rule on small fixtures: a knob becomes the default only when it is better with Holm-adjusted
p < 0.05 on at least 3 of 5 domains and significantly worse on no domain; fewer domains leave it open or out."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from core.experiments.decision import OPEN, QUALIFIES, STAYS_OUT, RunOfRecipe, decide
from core.experiments.records import Cell
from core.experiments.statistics import encode_counts

N = 300  # TEST sentences


def _counts(rng: np.random.Generator, hit: float) -> np.ndarray:
    """(N, 3) per-sentence tp, fp, fn: each sentence holds 2 gold entities, each found with probability `hit`."""
    tp = rng.binomial(2, hit, N)
    return np.stack([tp, rng.binomial(1, 0.2, N), 2 - tp], axis=1)


def _run(domain: str, knob: dict | None, hits: dict[str, float], seed: int = 0, device: str = "cpu") -> RunOfRecipe:
    cells = []
    for s in (1, 2, 3):
        rng = np.random.default_rng(zlib.crc32(f"{domain}/{seed}/{s}".encode()))  # the same TEST noise for default and variant
        for row, hit in hits.items():
            counts = _counts(np.random.default_rng(rng.integers(2**32)), hit)
            tp, fp, fn = counts.sum(0)
            cells.append(Cell(row=row, seed=s, f1=2 * tp / (2 * tp + fp + fn), test_counts=encode_counts(counts),
                              numerics={"device": device, "dtype": "fp32" if device == "cpu" else "bf16"}))
    params = {"model": "default", "preset": "study", "pick_checkpoint": 4, "mlm_config": knob or {}}
    return RunOfRecipe(domain, params, cells)


DEFAULT = {"none": 0.5, "tapt": 0.55, "cosine": 0.56}


def test_a_knob_better_on_three_domains_and_worse_nowhere_becomes_the_default():
    better = {**DEFAULT, "tapt": 0.75, "cosine": 0.76}
    results = [_run(d, None, DEFAULT) for d in ("ai", "music", "science", "politics")]
    results += [_run(d, {"l2sp": 0.1}, better) for d in ("ai", "music", "science")]
    decision = decide(results, n_boot=500)
    (knob,) = decision.knobs
    assert knob.knob == "l2sp=0.1" and knob.outcome == QUALIFIES and knob.better == ["ai", "music", "science"]
    assert all(t.row != "none" for t in decision.tests)  # none does not pretrain: never compared
    assert all(t.p_holm >= t.p for t in decision.tests) and len(decision.tests) == 6  # 3 domains x (tapt, cosine)
    assert decision.new_default == ["l2sp=0.1"] and "qualifies" in decision.sentence()


def test_a_variant_with_too_few_seeds_is_shown_but_stays_out_of_the_holm_family():
    """A partial variant (one seed so far, as a CPU domain has mid-run) cannot count for the rule, so it must not make
    the finished comparisons' Holm p larger either."""
    better = {**DEFAULT, "tapt": 0.75, "cosine": 0.76}
    results = [_run(d, None, DEFAULT) for d in ("ai", "music")] + [_run("music", {"l2sp": 0.1}, better)]
    alone = {(t.knob, t.domain, t.row): t.p_holm for t in decide(results, n_boot=500).tests}
    full = _run("ai", {"lr": 1e-4}, better)
    partial = RunOfRecipe(full.domain, full.params, [c for c in full.cells if c.seed == 1])
    tests = decide([*results, partial], n_boot=500).tests
    assert {(t.knob, t.domain, t.row): t.p_holm for t in tests if t.knob == "l2sp=0.1"} == alone
    one_seed = [t for t in tests if t.knob == "lr=0.0001"]
    assert one_seed and all(t.p_holm is None and not t.claims() and t.seeds == [1] for t in one_seed)


def test_worse_anywhere_keeps_a_knob_out_and_too_few_domains_leave_it_open():
    worse = {**DEFAULT, "tapt": 0.3}
    better = {**DEFAULT, "tapt": 0.75}
    results = [_run(d, None, DEFAULT) for d in ("ai", "music", "literature")]
    results += [_run("ai", {"mlm_probability": 0.3}, better), _run("music", {"mlm_probability": 0.3}, worse)]
    results += [_run(d, {"head_warmup_steps": 100}, better) for d in ("ai", "music")]
    results += [_run("literature", {"head_warmup_steps": 400}, DEFAULT)]  # no difference, 4 domains left: open
    outcomes = {k.knob: k for k in decide(results, n_boot=500).knobs}
    assert outcomes["mlm_probability=0.3"].outcome == STAYS_OUT and outcomes["mlm_probability=0.3"].worse == ["music"]
    assert outcomes["head_warmup_steps=100"].outcome == OPEN and "needs 3" in outcomes["head_warmup_steps=100"].reason
    assert outcomes["head_warmup_steps=400"].outcome == OPEN


def test_a_knob_that_can_no_longer_reach_three_domains_stays_out():
    results = [_run(d, None, DEFAULT) for d in ("ai", "music", "science", "politics")]
    results += [_run(d, {"l2sp": 0.01}, DEFAULT, seed=1) for d in ("ai", "music", "science", "politics")]
    (knob,) = decide(results, n_boot=500).knobs
    assert knob.outcome == STAYS_OUT and "cannot reach 3" in knob.reason


def test_no_variant_yet_says_the_default_stays():
    decision = decide([_run("ai", None, DEFAULT)], n_boot=200)
    assert decision.knobs == [] and "default stays" in decision.sentence()


@pytest.mark.parametrize("other", [{"model": "other-encoder"}, {"preset": "demo"}])
def test_a_variant_of_another_base_recipe_is_not_compared_with_this_default(other):
    base = _run("ai", None, DEFAULT)
    variant = _run("ai", {"l2sp": 0.1}, DEFAULT)
    variant = RunOfRecipe("ai", {**variant.params, **other}, variant.cells)
    assert decide([base, variant], n_boot=200).tests == []


def test_a_variant_is_never_compared_with_a_default_that_ran_on_another_device():
    """A GPU variant against a CPU default would measure the machine: it is named as unpaired and tests nothing."""
    better = {**DEFAULT, "tapt": 0.75, "cosine": 0.76}
    results = [_run(d, None, DEFAULT) for d in ("ai", "music", "science")]
    results += [_run("ai", {"l2sp": 0.1}, better, device="cuda")]
    results += [_run(d, {"l2sp": 0.1}, better) for d in ("music", "science")]
    decision = decide(results, n_boot=500)
    (knob,) = decision.knobs
    assert knob.domains == ["music", "science"] and "ai" not in {t.domain for t in decision.tests}
    assert knob.outcome == OPEN  # better on 2 so far: ai does not count as a third
    assert decision.unpaired == ["l2sp=0.1 on ai: ran on cuda (bf16), its default on cpu (fp32)"]


def test_a_domain_with_a_gpu_and_a_cpu_default_pairs_each_variant_with_the_one_that_ran_alike():
    """Without a GPU a second domain reruns its default on the CPU beside the GPU one: a CPU variant is then compared
    with the CPU default only, and nothing is called unpaired while a default of its own kind exists."""
    better = {**DEFAULT, "tapt": 0.75}
    results = [_run("music", None, DEFAULT, device="cuda"), _run("music", None, DEFAULT, device="cpu"),
               _run("music", {"lr": 5e-5}, better, device="cpu")]
    decision = decide(results, n_boot=500)
    assert decision.unpaired == [] and {(t.domain, t.row) for t in decision.tests} == {("music", "tapt"), ("music", "cosine")}
    tapt = next(t for t in decision.tests if t.row == "tapt")
    assert tapt.delta > 0.1  # against the CPU default; a second pairing with the GPU one would add a test per row
    gpu_only = decide([results[0], results[2]], n_boot=200)
    assert gpu_only.tests == [] and gpu_only.unpaired == ["lr=5e-05 on music: ran on cpu (fp32), its default on cuda (bf16)"]


def test_a_new_selection_row_is_kept_only_when_it_beats_random_on_three_domains():
    """Issue 46's entity-aware row, under the same rule as a knob but held against the random draw of its budget."""
    from core.experiments.decision import decide_row

    strong = {"none": 0.5, "random": 0.55, "cosine": 0.56, "entity-gain": 0.75}
    kept = decide_row([_run(d, None, strong) for d in ("ai", "music", "science")], n_boot=500)
    assert kept.outcome == QUALIFIES and kept.better == ["ai", "music", "science"] and "kept" in kept.sentence()
    assert {t.knob for t in kept.tests} == {"random", "cosine"}  # every rival it ran beside, random decides
    weak = {"none": 0.5, "random": 0.55, "entity-gain": 0.3}
    out = decide_row([_run("ai", None, strong), _run("music", None, weak)], n_boot=500)
    assert out.outcome == STAYS_OUT and out.worse == ["music"] and "not supported" in out.sentence()
    level = decide_row([_run("ai", None, {"none": 0.5, "random": 0.55, "entity-gain": 0.55})], n_boot=500)
    assert level.outcome == OPEN and level.domains == ["ai"] and "so far" in level.sentence()
    variant = _run("ai", {"l2sp": 0.1}, strong)  # a knob variant is not the default recipe: not counted
    assert decide_row([variant], n_boot=500).domains == [] and "has not run" in decide_row([], n_boot=500).sentence()


def test_a_pair_says_at_how_many_seeds_its_two_ner_heads_were_drawn_differently():
    """Issue 46's A/A control: a cell fine-tuned from an MLM snapshot before the head was seeded after the encoder load
    drew another head than one since (or than a kept base): such a pair is counted, so the table can mark it."""
    import dataclasses

    def with_head(run: RunOfRecipe, seeded: bool, chosen: str = "step-300") -> RunOfRecipe:
        def mark(c: Cell) -> Cell:
            numerics = {**c.numerics, **({"head_seed": "after-encoder"} if seeded else {})}
            return dataclasses.replace(c, numerics=numerics, pick={"chosen": chosen})
        return RunOfRecipe(run.domain, run.params, [mark(c) for c in run.cells])

    old = with_head(_run("music", None, DEFAULT), seeded=False)
    new = with_head(_run("music", {"l2sp": 0.1}, DEFAULT), seeded=True)
    assert {t.heads_apart for t in decide([old, new], n_boot=200).tests} == {3}
    assert {t.heads_apart for t in decide([with_head(old, seeded=True), new], n_boot=200).tests} == {0}
    kept_base = with_head(_run("music", None, DEFAULT), seeded=False, chosen="base")  # loading the base drew nothing
    assert {t.heads_apart for t in decide([kept_base, new], n_boot=200).tests} == {0}
    both_old = with_head(_run("music", {"l2sp": 0.1}, DEFAULT), seeded=False)  # both loaded an MLM folder: same draw
    assert {t.heads_apart for t in decide([old, both_old], n_boot=200).tests} == {0}


def test_a_domain_run_part_way_is_left_not_lost():
    """A knob whose run stopped part-way on two domains (seed 3 of a row not yet run; or a row not yet begun, the
    result unfinished) has not failed there: with 0 better of 2 finished domains and 2 part-way, 3 can still be
    reached, so the knob stays open; with politics finished (0 better of 3, 2 left) it can no longer reach 3."""
    results = [_run(d, None, DEFAULT) for d in ("ai", "music", "science", "politics")]
    results += [_run(d, {"l2sp": 0.01}, DEFAULT, seed=1) for d in ("ai", "music")]
    short = _run("science", {"l2sp": 0.01}, DEFAULT, seed=1)
    results.append(RunOfRecipe("science", short.params, [c for c in short.cells if not (c.row == "cosine" and c.seed == 3)]))
    begun = _run("politics", {"l2sp": 0.01}, DEFAULT, seed=1)
    results.append(RunOfRecipe("politics", begun.params, [c for c in begun.cells if c.row == "tapt"], finished=False))
    (knob,) = decide(results, n_boot=300).knobs
    assert knob.outcome == OPEN and knob.partial == ["politics", "science"]
    assert "partial" in knob.reason and "better on 0 of 2 domains" in knob.reason
    results[-1] = begun
    (knob,) = decide(results, n_boot=300).knobs
    assert knob.outcome == STAYS_OUT and knob.partial == ["science"]  # 0 of 3 finished, 2 left: cannot reach 3


def test_a_knob_study_prints_its_rows_against_the_default_of_its_domain():
    """`crossner_study.py --mlm KEY=V` ends with the variant against its domain's default recipe, not only with its own
    verdict (which cannot test against none: the variant shares the default's)."""
    from tests.conftest import load_script

    study = load_script("crossner_study")

    def payload(run: RunOfRecipe) -> dict:
        return {"domain": run.domain, "params": dict(run.params), "cells": run.cells, "finished": True}

    default, better = _run("ai", None, DEFAULT), _run("ai", {"lr": 5e-5}, {**DEFAULT, "tapt": 0.75})
    text = study.knob_lines(payload(better), payload(default), "ai-default.json")
    head, *rows = text.splitlines()
    assert head.startswith("lr=5e-05 against ai-default.json") and "Holm over the 2 of these with 3 seeds" in head
    tapt = next(r for r in rows if r.split()[0] == "tapt")
    assert float(tapt.split()[1]) > 10 and "Holm 0.000" in tapt  # +20 points on 300 sentences: not chance
    assert study.knob_lines(payload(default), payload(default)) == ""  # the default itself: nothing to compare
    assert "no result of it yet" in study.knob_lines(payload(better), None)
    gpu = payload(_run("ai", {"lr": 5e-5}, DEFAULT, device="cuda"))
    assert "not compared" in study.knob_lines(gpu, payload(default))
    begun = {**payload(better), "cells": []}  # a result with no cell (--status writes none; a hand-made one): no device
    assert study.knob_lines(begun, payload(default)).endswith("no finished cell of this variant yet")
    # its own verdict cannot test against none, which it borrows: the advice says where its comparison is, in the
    # verdict itself (the Results page and the CLI print the same), while a default recipe is told to add the row
    tapt_only = [c for c in better.cells if c.row == "tapt"]
    variant = study.derived_fields([c.to_dict() for c in tapt_only], better.params)["verdict"]["advice"]["text"]
    assert variant.startswith("a knob variant (lr=5e-05) borrows none from its default recipe")
    default_only = [c.to_dict() for c in default.cells if c.row == "tapt"]
    assert "add the none row" in study.derived_fields(default_only, default.params)["verdict"]["advice"]["text"]


def test_a_domain_partial_but_already_better_counts_as_decided():
    better = {**DEFAULT, "tapt": 0.75, "cosine": 0.76}
    results = [_run(d, None, DEFAULT) for d in ("ai", "music")]
    full = _run("music", {"l2sp": 0.01}, better)
    results.append(RunOfRecipe("music", full.params, [c for c in full.cells if c.row != "cosine" or c.seed < 3]))
    (knob,) = decide(results, n_boot=300).knobs
    assert knob.better == ["music"] and knob.partial == ["music"] and knob.outcome == OPEN
    assert "better on 1 of 1 domains so far" in knob.reason and "needs 3, 4 to run or finish" in knob.reason
