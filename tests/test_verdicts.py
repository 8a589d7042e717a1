"""How a study is judged and reported (review of the verdicts): "no help" needs the seeds and the multiplicity a claim
needs, the seed estimate is Student's, a selection is held against the random draw of its own SC budget, every table
marks a claim alike, the decision rule reads TAPT and selection rows only, damaged records are refused, and Holm counts
a mirrored pair once. Small fixtures, few resamples."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from core.errors import UserError
from core.experiments.records import PairTest
from core.experiments.statistics import MIN_CLAIM_SEEDS, encode_counts, f1_of, holm
from core.experiments.summary import (
    apply_holm,
    claim_mark,
    experiment_verdict,
    interval_summary,
    pretraining_verdicts,
    user_advice,
)
from tests.conftest import load_script

N = 200  # TEST sentences


def _counts(hit: float, seed: int, n: int = N) -> np.ndarray:
    """(n, 3): one gold entity per sentence, found in `hit` of them (which ones drawn from `seed`), one fp in a tenth."""
    rng = np.random.default_rng(seed)
    found = rng.random(n) < hit
    return np.stack([found, rng.random(n) < 0.1, ~found], axis=1).astype(int)


def _cell(row: str, seed: int, counts: np.ndarray | None, budget: int | None = None, f1: float | None = None) -> dict:
    cell = {"row": row, "seed": seed, "f1": f1_of(counts) if f1 is None else f1, "lc_size": 100, "budget": budget}
    if counts is not None:
        cell["test_counts"] = encode_counts(counts)
    return cell


def _vs(delta: float, ci: list[float], p: float, p_holm: float, seeds: int = 3, family: int = 1) -> dict:
    return {"delta": delta, "ci": ci, "p": p, "p_holm": p_holm, "seeds": seeds, "holm_family": family}


# ----------------------------------------------------------------------------- 1: "no help" is a claim too


def test_no_help_is_never_said_on_one_seed_however_narrow_the_interval():
    """The reviewer's case: one seed each of none and TAPT on 2,000 sentences, TAPT two points lower, its interval's
    upper end below one point: one seed says nothing of how seeds move F1, so "run 2 more", not "no help"."""
    none, tapt = _counts(0.70, 1, 2000), _counts(0.68, 2, 2000)
    cells = [_cell("none", 1, none), _cell("tapt", 1, tapt)]
    entries = interval_summary(cells, n_boot=500)
    assert entries[1]["vs"]["none"]["ci"][1] < 0.01  # what used to read "no help"
    advice = experiment_verdict(entries, "study", cells).advice
    assert advice["case"] == "cannot say" and advice["more_seeds"] == MIN_CLAIM_SEEDS - 1
    assert advice["text"].startswith("cannot say with 1 seed whether pretraining helps") and "run 2 more" in advice["text"]
    same = [_cell(row, s, _counts(0.7, s)) for row in ("none", "tapt") for s in (1, 2, 3)]  # TAPT = none, 3 seeds
    assert experiment_verdict(interval_summary(same, n_boot=300), "study", same).advice["case"] == "no help"


def test_models_that_predict_nothing_never_read_as_no_help():
    """F1 near 0 on every row gives differences of 0 with tight intervals, which read as "no recipe helps: fine-tune
    without pretraining", a confident decision from models that learned nothing. It is "cannot say", naming them."""
    dead = [_cell(row, s, _counts(0.0, s)) for row in ("none", "tapt") for s in (1, 2, 3)]
    assert all(c["f1"] < 0.05 for c in dead)
    advice = experiment_verdict(interval_summary(dead, n_boot=300), "study", dead).advice
    assert advice["case"] == "cannot say" and advice["rows"] == ["none", "tapt"], advice
    assert "predict almost nothing" in advice["text"] and "fine-tune without pretraining" not in advice["text"]
    # one row whose fine-tune failed does not hide a real gain: it is left out and named
    mixed = [_cell(row, s, _counts(hit, s)) for row, hit in (("none", 0.5), ("tapt", 0.9), ("dsir", 0.0)) for s in (1, 2, 3)]
    advice = experiment_verdict(interval_summary(mixed, n_boot=300), "study", mixed).advice
    assert advice["case"] == "helps" and advice["left_out"] == ["dsir"] and "dsir left out" in advice["text"], advice


def test_a_row_never_paired_with_none_blocks_no_help_and_is_named():
    """Found in review: a row whose cells kept no TEST counts, or that shared no seed with none, vanished from every
    comparison, and the advice said "no recipe helps: fine-tune without pretraining" beside a dsir 13 points up."""
    same = [_cell(row, s, _counts(0.6, s)) for row in ("none", "tapt") for s in (1, 2, 3)]
    for dsir, why in (([_cell("dsir", s, None, budget=400, f1=0.8) for s in (1, 2, 3)], "kept no TEST counts"),
                      ([_cell("dsir", s, _counts(0.8, 10 + s), budget=400) for s in (4, 5, 6)], "no seed in common")):
        cells = same + dsir
        entries = interval_summary(cells, n_boot=300)
        assert why in next(e for e in entries if e["row"] == "dsir")["untested"]["none"]
        advice = experiment_verdict(entries, "study", cells).advice
        assert advice["case"] == "cannot say" and "dsir" in advice["text"] and why in advice["text"], advice
        assert "fine-tune without pretraining" not in advice["text"]


def test_the_advice_says_why_nothing_was_compared_with_none():
    """Found in review: "add the none row to the run" when none ran but kept no counts, or when every pretraining
    row's fine-tune failed."""
    no_counts = [_cell("none", s, None, f1=0.6) for s in (1, 2, 3)] + [_cell("tapt", s, _counts(0.6, s)) for s in (1, 2, 3)]
    advice = experiment_verdict(interval_summary(no_counts, n_boot=300), "study", no_counts).advice
    assert "none's cells kept no TEST counts" in advice["text"] and "add the none row" not in advice["text"], advice
    failed = [_cell("none", s, _counts(0.7, s)) for s in (1, 2, 3)] + [_cell("tapt", s, _counts(0.0, s)) for s in (1, 2, 3)]
    advice = experiment_verdict(interval_summary(failed, n_boot=300), "study", failed).advice
    assert "add the none row" not in advice["text"] and "tapt left out" in advice["text"], advice
    alone = [_cell("tapt", s, _counts(0.6, s)) for s in (1, 2, 3)]
    assert "add the none row" in experiment_verdict(interval_summary(alone, n_boot=300), "study", alone).advice["text"]


def test_no_help_reads_the_interval_at_alpha_over_the_family():
    """A 95% upper end of +0.8 points passes alone, not as one of 17 tests: Bonferroni widens it to about +1.2."""
    from core.experiments.statistics import bonferroni_upper

    z17 = NormalDist().inv_cdf(1 - 0.05 / 34)
    assert bonferroni_upper(0.0, [-0.0196, NormalDist().inv_cdf(0.975) / 100], 17) == pytest.approx(z17 / 100)
    assert bonferroni_upper(0.002, [-0.003, 0.006], 1) == pytest.approx(0.006)  # one test: its own interval

    def entries(family: int) -> list[dict]:
        return [{"row": "none", "seeds": 3, "vs": {}},
                {"row": "tapt", "seeds": 3, "vs": {"none": _vs(0.0, [-0.008, 0.008], 0.9, 1.0, family=family)}},
                {"row": "dsir", "seeds": 3, "vs": {"none": _vs(-0.03, [-0.05, -0.01], 0.001, 0.01, family=family)}}]

    assert user_advice(entries(1), [], 1)["case"] == "no help"  # dsir significantly below none closes too
    alone = user_advice(entries(17), [], 17)
    assert alone["case"] == "cannot say" and alone["row"] == "tapt"
    assert "Bonferroni over 17" in user_advice(entries(17)[:1] + entries(17)[2:], [], 17)["text"]
    short = entries(1)
    short[1]["vs"]["none"]["seeds"] = 2  # a narrow interval on two seeds
    assert user_advice(short, [], 1)["case"] == "cannot say" and user_advice(short, [], 1)["more_seeds"] == 1


# ----------------------------------------------------------------------------- 2: seeds to settle, "helps" wording


def test_seeds_to_settle_is_steins_sample_size_with_the_sample_variance_and_t():
    from scipy.stats import t as student_t

    from core.experiments.statistics import seeds_to_settle

    hits = [0.50, 0.62, 0.48, 0.64, 0.56]
    a = [_counts(h, 10 + s, 1000) for s, h in enumerate(hits)]
    b = [_counts(0.5, 10 + s, 1000) for s in range(len(hits))]
    settle = seeds_to_settle(a, b, family=1, n_boot=500)
    diffs = [f1_of(x) - f1_of(y) for x, y in zip(a, b)]
    q = student_t.ppf(0.975, len(hits) - 1)
    assert settle["sd_seed"] == pytest.approx(np.std(diffs, ddof=1)) and settle["df"] == 4 and settle["t"] == pytest.approx(q)
    room = (settle["delta"] / q) ** 2 - settle["se_sentences"] ** 2
    assert room > 0 and settle["needed"] == max(6, math.ceil(np.var(diffs, ddof=1) / room))
    old = max(6, math.ceil(np.var(diffs) / ((settle["delta"] / settle["z"]) ** 2 - settle["se_sentences"] ** 2)))
    assert settle["needed"] > old  # ddof=0 and a normal z promised fewer seeds
    two = seeds_to_settle(a[:2], b[:2], family=17, n_boot=300)  # t at 1 df, 17 tests: about 216 instead of 3
    assert two["needed"] is None and "Student t" in two["reason"] and "run " in two["reason"]


def test_helps_names_the_row_and_whether_it_beat_the_random_draw():
    entries = [{"row": "none", "seeds": 3, "vs": {}},
               {"row": "dsir", "seeds": 3, "vs": {"none": _vs(0.03, [0.01, 0.05], 0.001, 0.004),
                                                  "random": _vs(0.004, [-0.01, 0.02], 0.4, 0.8)}}]
    advice = user_advice(entries, [])
    assert advice["case"] == "helps" and advice["text"].startswith("dsir helps over no pretraining here: +3.00 test F1")
    assert "not shown better than a random draw of the same size (Holm-adjusted p 0.800)" in advice["text"]
    assert advice["beats_random"] is False
    entries[1]["vs"]["random"] = _vs(0.02, [0.01, 0.03], 0.001, 0.01)
    advice = user_advice(entries, [])
    assert advice["beats_random"] is True and "also beat a random draw of the same size" in advice["text"]
    assert "not shown" not in advice["text"]
    entries[1]["vs"]["random"] = _vs(0.02, [0.01, 0.03], 0.001, 0.01, seeds=2)  # small p, too few seeds
    assert user_advice(entries, [])["beats_random"] is False
    tapt = [{"row": "tapt", "seeds": 3, "vs": {"none": _vs(0.03, [0.01, 0.05], 0.001, 0.004)}}]
    assert user_advice(tapt, [])["text"].startswith("tapt helps over no pretraining") and "random" not in user_advice(tapt, [])["text"]


# ----------------------------------------------------------------------------- 3: the control of the same budget


def _swept(random_budgets: tuple[int, ...], dsir_budgets: tuple[int, ...] = (500, 1000)) -> list[dict]:
    """none, and dsir and random at SC budgets whose random draw at budget b scores exactly what dsir at b scores, while
    the budgets differ from each other: a wrong pairing shows as a nonzero difference."""
    hit = {500: 0.5, 1000: 0.8}
    cells = [_cell("none", s, _counts(0.6, s)) for s in (1, 2, 3)]
    cells += [_cell("dsir", s, _counts(hit[b], 10 * b + s), budget=b) for b in dsir_budgets for s in (1, 2, 3)]
    return cells + [_cell("random", s, _counts(hit[b], 10 * b + s), budget=b) for b in random_budgets for s in (1, 2, 3)]


def test_a_selection_is_held_against_the_random_draw_of_its_own_budget():
    both = {e["row"]: e for e in interval_summary(_swept((500, 1000)), n_boot=300)}
    assert both["dsir · SC 500"]["vs"]["random"]["delta"] == 0 and both["dsir · SC 1000"]["vs"]["random"]["delta"] == 0
    one = {e["row"]: e for e in interval_summary(_swept((500,)), n_boot=300)}
    assert one["dsir · SC 500"]["vs"]["random"]["delta"] == 0  # random ran at 500 only: its label is plain "random"
    assert "random" not in one["dsir · SC 1000"]["vs"]
    assert one["dsir · SC 1000"]["untested"] == {"random": "no random row at SC 1000"}
    texts = [v["text"] for v in pretraining_verdicts(list(one.values())) if v["against"] == "random"]
    assert "dsir · SC 1000 against the random control: not tested: no random row at SC 1000" in texts
    apart = {e["row"]: e for e in interval_summary(_swept((500,), (1000,)), n_boot=300)}  # neither swept: one budget each
    assert "random" not in apart["dsir"]["vs"] and apart["dsir"]["untested"]["random"] == "no random row at SC 1000"
    assert experiment_verdict(list(apart.values()), "study").selection_beats_random == "not tested"


# ----------------------------------------------------------------------------- 4: the study table's marks


def test_the_study_table_marks_a_claim_as_the_summary_does_and_shows_the_holm_p(tmp_path):
    study_table = load_script("study_table")
    one_seed = {"row": "dsir", "f1_mean": 0.6, "f1_ci": [0.58, 0.62], "seeds": 1,
                "vs": {"none": _vs(0.03, [0.01, 0.05], 0.001, 0.003, seeds=1)}}
    lifted = {"row": "cosine", "f1_mean": 0.6, "f1_ci": [0.58, 0.62], "seeds": 3,
              "vs": {"none": _vs(0.02, [0.001, 0.04], 0.03, 0.09)}}
    flat = {"row": "tapt", "f1_mean": 0.6, "f1_ci": [0.58, 0.62], "seeds": 3,
            "vs": {"none": _vs(0.0, [-0.02, 0.02], 0.5, 0.5)}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"domain": "ai", "summary": [one_seed, lifted, flat], "cells": [{"seed": 1}]}))
    lines = study_table.table([path], long=True).splitlines()
    dsir, cosine = (next(line for line in lines if f"| {row} |" in line) for row in ("dsir", "cosine"))
    # a stored summary (no TEST counts): Holm applied again over its three comparisons (0.001 x 3, 0.03 x 2)
    assert dsir.endswith("| – | +3.00 [+1.00, +5.00], p 0.001 (Holm 0.003) (1 seed: a claim needs 3) |")
    assert " *" not in dsir and "* Holm-adjusted p < 0.05 over 3+ seeds" in lines[-1]
    assert cosine.endswith("| – | +2.00 [+0.10, +4.00], p 0.030 (Holm 0.060) |")  # raw p below 0.05, Holm above: no star
    assert claim_mark(one_seed["vs"]["none"]) in dsir


# ----------------------------------------------------------------------------- 5: the decision rule's rows


def test_the_decision_rule_counts_tapt_and_selection_rows_only():
    from core.experiments.decision import STAYS_OUT, decide, rule_row
    from tests.test_decision import _run

    assert [r for r in ("none", "tapt", "dapt", "tapt+dapt", "random", "dsir", "entity-gain") if rule_row(r)] == [
        "tapt", "dsir", "entity-gain"]
    default = {"none": 0.5, "tapt": 0.55, "dapt": 0.5, "random": 0.5, "dsir": 0.55}
    better = {**default, "dapt": 0.8, "random": 0.8}  # only the rows the rule does not read improve
    domains = ("ai", "music", "science")
    decision = decide([_run(d, None, default) for d in domains] + [_run(d, {"l2sp": 0.1}, better) for d in domains],
                      n_boot=300)
    assert {t.row for t in decision.tests} == {"tapt", "dsir"} and len(decision.tests) == 6
    assert decision.knobs[0].outcome == STAYS_OUT and decision.knobs[0].better == []


# ----------------------------------------------------------------------------- 6: damaged records are refused


@pytest.mark.parametrize("ps", [[math.nan, 0.001, 0.002], [0.001, 0.002, math.nan], [0.001, 1.5]])
def test_holm_refuses_a_p_that_is_no_p_in_any_order(ps):
    with pytest.raises(UserError, match="not a p-value"):
        holm(ps)


def test_a_seed_twice_and_an_f1_that_is_no_number_are_refused_by_name():
    twice = [_cell("none", 1, _counts(0.7, 1)), _cell("none", 1, _counts(0.5, 2)), _cell("tapt", 1, _counts(0.7, 3))]
    with pytest.raises(UserError, match="row none seed 1 appears twice"):
        interval_summary(twice, n_boot=100)
    nan = [_cell("none", 1, None, f1=0.6), _cell("none", 2, None, f1=math.nan), _cell("tapt", 1, None, f1=0.6)]
    with pytest.raises(UserError, match="row none seed 2: F1 is nan"):
        interval_summary(nan, n_boot=100)
    fine = interval_summary([_cell("none", 1, None, f1=0.6), _cell("none", 2, None, f1=0.62)], n_boot=100)
    assert fine[0]["f1_ci"] is None and fine[0]["f1_mean"] == pytest.approx(0.61)  # no counts: F1 read, no interval


def test_a_test_whose_seeds_were_not_recorded_is_no_claim():
    t = {"delta": 0.03, "ci": [0.01, 0.05], "p": 0.001, "p_holm": 0.004}
    assert PairTest.of(t).too_few_seeds and not PairTest.of(t).significant
    assert claim_mark(t) == " (seeds not recorded: a claim needs 3)"
    assert PairTest.of({**t, "seeds": MIN_CLAIM_SEEDS}).significant


# ----------------------------------------------------------------------------- 7: Holm counts a mirrored pair once


def test_holm_counts_none_against_tapt_once_and_shows_it_on_both_rows():
    cells = [_cell(row, s, _counts(hit, 100 * k + s)) for k, (row, hit) in
             enumerate((("none", 0.6), ("tapt", 0.65), ("dapt", 0.6), ("dsir", 0.7), ("random", 0.62))) for s in (1, 2, 3)]
    entries = {e["row"]: e for e in interval_summary(cells, n_boot=300)}
    tests = [(row, base) for row, e in entries.items() for base in e["vs"]]
    assert len(tests) == 9  # none-tapt, tapt-none, dapt x2, random x2, dsir x3: 8 pairs
    mirror, kept = entries["none"]["vs"]["tapt"], entries["tapt"]["vs"]["none"]
    assert mirror["p"] == kept["p"] and mirror["p_holm"] == kept["p_holm"] and mirror["delta"] == -kept["delta"]
    assert {t["holm_family"] for e in entries.values() for t in e["vs"].values()} == {8}
    unique = [kept] + [t for row, e in entries.items() if row not in ("none", "tapt") for t in e["vs"].values()]
    assert sorted(t["p_holm"] for t in unique) == sorted(holm([t["p"] for t in unique]))
    assert experiment_verdict(list(entries.values()), "study").comparisons == 8


def test_a_stored_summary_pairs_its_mirrors_within_each_lc_size():
    entries = [{"row": f"{a} · LC {n}", "vs": {b: {"delta": 0.0, "ci": [0, 0], "p": p}}}
               for n, p in ((100, 0.01), (200, 0.02)) for a, b in (("none", "tapt"), ("tapt", "none"))]
    apply_holm(entries)
    assert [t["holm_family"] for e in entries for t in e["vs"].values()] == [2, 2, 2, 2]
    assert [t["p_holm"] for e in entries for t in e["vs"].values()] == [0.02, 0.02, 0.02, 0.02]


def test_a_stored_verdict_from_older_code_gives_way_to_one_read_now():
    """Found in review: a result stored before a claim needed 3 seeds kept "verdict: yes (tapt)" and "tapt helps" beside
    the row line "no clear gain, 2 seeds (a claim needs 3)"."""
    from core.experiments.readout import readout_lines

    vs = {"delta": 0.02, "ci": [0.005, 0.035], "p": 0.004, "p_holm": 0.008, "seeds": 2, "holm_family": 2}
    result = {"domain": "music", "preset": "study", "cells": [],
              "summary": [{"row": "tapt", "f1_mean": 0.62, "seeds": 2, "f1_ci": [0.6, 0.64], "vs": {"none": vs}},
                          {"row": "none", "f1_mean": 0.60, "seeds": 2, "f1_ci": [0.58, 0.62],
                           "vs": {"tapt": {**vs, "delta": -0.02, "ci": [-0.035, -0.005]}}}],
              "verdict": {"text": "pretraining helps against none: yes (tapt)", "pretraining_helps": "yes",
                          "advice": {"case": "helps", "text": "tapt helps over no pretraining here"}}}
    lines = readout_lines(result)
    assert not any("yes (tapt)" in line or "tapt helps" in line for line in lines), lines
    assert any(line.startswith("what to do: cannot say with 2 seeds") for line in lines), lines


def test_an_experiment_whose_cells_ran_on_two_precisions_says_so():
    """Found in review: a folder extended under another CPU precision paired bf16 cells with fp32 ones silently."""
    from core.experiments.readout import readout_lines

    cells = [{**_cell(row, s, _counts(0.6, s)), "numerics": {"device": "cpu", "dtype": dtype}}
             for row, dtype in (("none", "fp32"), ("tapt", "bf16")) for s in (1, 2, 3)]
    lines = readout_lines({"domain": "music", "preset": "study", "cells": cells})
    assert any("ran as cpu (bf16) and cpu (fp32)" in line for line in lines), lines
