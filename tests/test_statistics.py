"""Intervals and paired tests over test sentences (core.experiments.statistics): hand-computed cases, a planted
difference found significant, a null one not, and clear refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import UserError
from core.experiments.statistics import (
    _draws,
    _resampled_mean_f1,
    counts_from_predictions,
    decode_counts,
    encode_counts,
    f1_interval,
    f1_of,
    holm,
    paired_test,
    seed_runs,
    summary_entry,
)


def span(start, end, kind="PER"):
    return {"start": start, "end": end, "type": kind}


def test_counts_and_f1_by_hand():
    rows = [{"gold_spans": [span(0, 1), span(2, 3, "LOC")], "spans": [span(0, 1), span(2, 4, "LOC")]},
            {"gold_spans": [], "spans": [span(1, 2)]}]
    counts = counts_from_predictions(rows)
    assert counts.tolist() == [[1, 1, 1], [0, 1, 0]]
    assert f1_of(counts) == pytest.approx(2 * 1 / (2 * 1 + 2 + 1))


def test_bootstrap_interval_of_two_sentences_matches_the_exact_distribution():
    """Resamples of {s0, s1}: both s0 (p 1/4) -> F1 1, one each (1/2) -> 0.5, both s1 (1/4) -> 0."""
    counts = np.array([[1, 0, 0], [0, 1, 1]])
    f1, lo, hi = f1_interval(counts, n_boot=2000, seed=3)
    assert (f1, lo, hi) == (0.5, 0.0, 1.0)


def test_paired_p_values_by_hand():
    a = np.array([[1, 0, 0]])
    b = np.array([[0, 1, 1]])
    boot = paired_test(a, b, "bootstrap", n_boot=99)
    assert boot["delta"] == 1.0 and boot["ci"] == [1.0, 1.0] and boot["p"] == pytest.approx(1 / 100)
    rand = paired_test(a, b, "randomization", n_boot=99)
    assert rand["p"] == 1.0  # a swap flips the sign but keeps |d| = 1: one sentence can never be significant
    same = paired_test(a, a, "bootstrap", n_boot=50)
    assert same["delta"] == 0.0 and same["p"] == 1.0


def _system(n: int, accuracy: float, seed: int) -> np.ndarray:
    """Count rows of a system that gets each sentence's one entity right with probability `accuracy`."""
    right = np.random.default_rng(seed).random(n) < accuracy
    return np.stack([right, ~right, ~right], axis=1).astype(np.int64)


@pytest.mark.parametrize("method", ["bootstrap", "randomization"])
def test_a_planted_difference_is_significant_and_a_null_one_is_not(method):
    strong, weak = _system(300, 0.8, 1), _system(300, 0.6, 2)
    planted = paired_test(strong, weak, method, n_boot=500, seed=0)
    assert planted["delta"] > 0.1 and planted["p"] < 0.01 and planted["ci"][0] > 0
    base = _system(300, 0.7, 3)
    right, wrong = np.flatnonzero(base[:, 0] == 1)[:20], np.flatnonzero(base[:, 0] == 0)[:20]
    other = base.copy()  # disagrees with `base` on 40 sentences, 20 each way: no difference in truth or in F1
    other[right], other[wrong] = base[wrong[0]], base[right[0]]
    null = paired_test(base, other, method, n_boot=500, seed=0)
    assert null["delta"] == 0 and null["p"] > 0.5 and null["ci"][0] < 0 < null["ci"][1]


def test_holm_by_hand_and_its_guarantees():
    """Holm by hand: sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04 -> monotone 0.03, 0.06, 0.06. Music's
    two stars of the old table (p 0.050 and 0.047 among six tests against none) do not survive it."""
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    adjusted = holm([0.30, 0.30, 0.48, 0.64, 0.050, 0.047])
    assert all(p >= 0.05 for p in adjusted) and adjusted[5] == pytest.approx(6 * 0.047)
    assert holm([]) == [] and holm([0.9, 0.9]) == [1.0, 1.0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0001, 1.0), min_size=1, max_size=12))
def test_holm_never_lowers_a_p_and_keeps_the_order(ps):
    adjusted = holm(ps)
    assert all(a >= p - 1e-12 and a <= 1.0 for a, p in zip(adjusted, ps))
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    assert all(adjusted[order[k]] <= adjusted[order[k + 1]] + 1e-12 for k in range(len(ps) - 1))


def test_summary_entry_has_the_issue_shape_and_leaves_missing_baselines_out():
    runs = {"dsir": {1: _system(100, 0.8, 1), 2: _system(100, 0.8, 2)}, "tapt": {1: _system(100, 0.6, 3), 2: _system(100, 0.6, 4)}}
    entry = summary_entry("dsir", runs, n_boot=200)
    assert set(entry) >= {"row", "f1_mean", "f1_ci", "seeds", "vs"} and entry["seeds"] == 2
    assert set(entry["vs"]) == {"tapt"}  # no "none" row: left out, not faked
    assert {"delta", "ci", "p", "p_resampled", "p_resampled_mc_error", "resamples", "seed_t"} <= set(entry["vs"]["tapt"])
    assert "p_mc_error" not in entry["vs"]["tapt"]  # it was the resampled p's, not the p beside it
    assert "seeds_needed" not in entry["vs"]["tapt"]
    lo, hi = entry["f1_ci"]
    assert entry["f1_mean"] == pytest.approx(np.mean([f1_of(c) for c in runs["dsir"].values()])) and lo <= entry["f1_mean"] <= hi


def test_bad_input_is_refused():
    with pytest.raises(UserError, match="no predicted sentences"):
        counts_from_predictions([])
    with pytest.raises(UserError, match="without gold spans"):
        counts_from_predictions([{"spans": []}])
    with pytest.raises(UserError, match="different test sentences"):
        paired_test(np.zeros((3, 3)), np.zeros((4, 3)))
    with pytest.raises(UserError, match="no test sentences"):
        f1_interval(np.zeros((0, 3)))
    with pytest.raises(UserError, match="different numbers of test sentences"):
        seed_runs([np.zeros((3, 3)), np.zeros((2, 3))])


def test_seeds_are_averaged_and_their_spread_widens_the_interval():
    """Two seeds, one perfect and one empty on the same 50 sentences: the row is their mean, 0.5. Sentences alone
    cannot move it (each seed is uniform over sentences); drawing the seeds again can: {good, good} 1.0 with p 1/4,
    {bad, bad} 0.0 with p 1/4."""
    good = np.tile([1, 0, 0], (50, 1))
    bad = np.tile([0, 1, 1], (50, 1))
    assert f1_interval([good, bad], n_boot=400, resample_seeds=False) == (0.5, 0.5, 0.5)
    assert f1_interval([good, bad], n_boot=400) == (0.5, 0.0, 1.0)
    varied = paired_test([good, bad], [bad, bad], n_boot=400)  # +0.5 on average, but all of it from one seed
    assert varied["delta"] == 0.5 and varied["ci_resampled"] == [0.0, 1.0] and varied["p"] > 0.05
    assert varied["ci"] == [-1.0, 1.0]  # the seed-level t at one degree of freedom, clipped to what F1 allows


def _shifted(base: np.ndarray, gain: int) -> np.ndarray:
    """`base` with its first `gain` wrong sentences made right: a seed that gains `gain` sentences over `base`."""
    out = base.copy()
    out[np.flatnonzero(base[:, 0] == 0)[:gain]] = [1, 0, 0]
    return out


def test_three_seeds_that_disagree_make_no_claim_that_the_resamples_alone_would_make():
    """Per-seed gains of about 6, 1 and 5 points on 1,000 sentences: every resample of three seeds stays above 0, so
    the resampled reading claims (p near 1/B); the seeds' own spread (sd about 2.7 points, t at about 2 degrees of
    freedom) does not support it, and a claim needs both readings. The same gain on every seed is claimed by both."""
    base = _system(1000, 0.6, 5)
    a = [_shifted(base, g) for g in (45, 8, 38)]
    disagree = paired_test(a, [base] * 3, n_boot=500, seed=0)
    assert disagree["p_resampled"] < 0.01 and disagree["p"] > 0.05
    assert disagree["seed_t"]["df"] < 3 and disagree["ci"][0] < 0 < disagree["ci_resampled"][0]
    steady = paired_test([_shifted(base, 30)] * 3, [base] * 3, n_boot=500, seed=0)
    assert steady["p"] < 0.01 and steady["seed_t"]["df"] is None  # no seed spread: the sentences' z
    assert paired_test(base, base, n_boot=50).get("seed_t") is None  # one seed: the resampled reading alone


def test_resamples_match_a_plain_loop_and_share_their_draws_across_calls():
    """The vectorised resampler (all seeds in one matrix product, draws cached by size and seed) against a plain loop
    over the same generator stream: each batch draws its sentences, then its seeds; a resample's F1 is the drawn
    seeds' mean of F1 over the drawn sentences. A row tested alone gets the very resamples it gets when paired."""
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 3, (3, 40, 3)), rng.integers(0, 3, (3, 40, 3))
    fa, fb = _resampled_mean_f1([a, b], 300, seed=11, batch=200)
    (alone,) = _resampled_mean_f1([b], 300, seed=11, batch=200)
    assert np.array_equal(alone, fb)
    stream, expected = np.random.default_rng(11), []
    for size in (200, 100):
        sentence_draws, seed_draws = stream.integers(0, 40, (size, 40)), stream.integers(0, 3, (size, 3))
        for sentences, seeds in zip(sentence_draws, seed_draws):
            expected.append(np.mean([f1_of(a[s][sentences]) for s in seeds]))
    assert np.allclose(fa, expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):  # the cached draws are shared by every later call: nobody may write into them
        _draws(300, 11, 40, 3, True, True, 200)[0][0, 0] = 5


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=30))
def test_the_interval_is_ordered_and_collapses_on_identical_sentences(rows):
    f1, lo, hi = f1_interval(np.array(rows, dtype=np.int64), n_boot=200)
    assert 0.0 <= lo <= hi <= 1.0
    same = np.array([rows[0]] * len(rows), dtype=np.int64)  # every resample is the same corpus
    assert f1_interval(same, n_boot=50) == (f1_of(same), f1_of(same), f1_of(same))


def test_pearson_r_interval_over_sources():
    from core.similarity.correlation import r_interval

    assert r_interval([(1, 2), (2, 4), (3, 6), (4, 8)]) == pytest.approx([1.0, 1.0])  # every resample lies on the line
    lo, hi = r_interval([(1, 0.1), (2, -0.3), (3, 0.4), (4, 0.0), (5, 0.2)])
    assert lo == pytest.approx(-1.0) and hi == pytest.approx(1.0)  # five unrelated sources: r could be anything
    assert r_interval([(1, 1), (1, 2), (1, 3)]) is None  # x never varies: r is undefined


def test_pretraining_verdicts_say_when_pretraining_did_not_help():
    from core.experiments.summary import pretraining_verdicts

    def entry(row, delta, lo, hi, p=0.5):
        return {"row": row, "seeds": 3, "vs": {"none": {"delta": delta, "ci": [lo, hi], "p": p, "seeds": 3}}}

    found = pretraining_verdicts([{"row": "none", "vs": {"tapt": {"delta": 0, "ci": [0, 0], "p": 1}}},
                                  entry("tapt", -0.02, -0.03, -0.01, 0.004), entry("dsir", 0.015, 0.005, 0.03, 0.01),
                                  entry("cosine", -0.004, -0.02, 0.01), entry("knn", 0.003, -0.01, 0.02),
                                  {"row": "random", "vs": {"tapt": {"delta": 0, "ci": [0, 0], "p": 1}}}])
    assert [(v["row"], v["verdict"], v["bad"]) for v in found] == [
        ("tapt", "harmed", True), ("dsir", "helped", False), ("cosine", "did not help", True), ("knn", "no clear gain", False)]
    assert found[0]["text"] == ("tapt: pretraining harmed against no pretraining: -2.00 test F1 points [-3.00, -1.00], "
                                "p = 0.004, Holm-adjusted 0.004, 3 seeds")
    # a selection held against the random control gets a second verdict: did choosing beat drawing at random?
    against = {"none": {"delta": 0.03, "ci": [0.01, 0.05], "p": 0.01, "seeds": 3}}
    found = pretraining_verdicts([
        {"row": "cosine", "seeds": 3, "vs": {**against, "random": {"delta": 0.002, "ci": [-0.01, 0.016], "p": 0.73, "seeds": 3}}},
        {"row": "dsir", "seeds": 3, "vs": {**against, "random": {"delta": -0.02, "ci": [-0.03, -0.005], "p": 0.02, "seeds": 3}}},
        {"row": "knn", "seeds": 3, "vs": {**against, "random": {"delta": 0.02, "ci": [0.005, 0.03], "p": 0.03, "seeds": 3}}}])
    assert [(v["row"], v["against"], v["verdict"], v["bad"]) for v in found] == [
        ("cosine", "none", "helped", False), ("dsir", "none", "helped", False), ("knn", "none", "helped", False),
        ("cosine", "random", "no clear difference", False), ("dsir", "random", "fell below", True),
        ("knn", "random", "beat", False)]
    assert [v["tone"] for v in found] == ["success", "success", "success", "info", "warning", "success"]
    assert found[3]["text"].startswith("cosine: the selection was not clearly better than the random control (the same")
    assert found[4]["text"].startswith("dsir: the selection fell below the random control")


def test_verdicts_read_the_holm_adjusted_p_and_smoke_tests_are_no_evidence():
    """Issue 42: a raw p of 0.02 that Holm lifts to 0.12 is no finding; a tiny-preset experiment is never evidence."""
    from core.experiments.summary import experiment_verdict, p_text, pretraining_verdicts

    def vs(delta, p, p_holm):
        return {"delta": delta, "ci": [delta - 0.01, delta + 0.01], "p": p, "p_holm": p_holm, "seeds": 3}

    entries = [{"row": "tapt", "seeds": 3, "vs": {"none": vs(0.02, 0.02, 0.12)}},
               {"row": "dsir", "seeds": 3, "vs": {"none": vs(0.03, 0.001, 0.006), "random": vs(0.004, 0.02, 0.12)}},
               {"row": "cosine", "seeds": 3, "vs": {"none": vs(-0.5, 0.001, 0.006)}}]
    found = {(v["row"], v["against"]): v["verdict"] for v in pretraining_verdicts(entries)}
    assert found == {("tapt", "none"): "no clear gain", ("dsir", "none"): "helped", ("cosine", "none"): "harmed",
                     ("dsir", "random"): "no clear difference"}
    assert p_text(entries[0]["vs"]["none"]) == "p 0.020 (Holm 0.120)" and p_text(entries[1]["vs"]["none"]).endswith("*")
    verdict = experiment_verdict(entries, "study")
    assert verdict.evidence and verdict.pretraining_helps == "mixed" and verdict.selection_beats_random == "cannot say"
    smoke = experiment_verdict(entries, "tiny")
    assert not smoke.evidence and smoke.text.startswith("smoke test (preset tiny): not evidence")
    quiet = pretraining_verdicts(entries, evidence=False)
    assert not any(v["bad"] for v in quiet) and all(v["text"].startswith("smoke test, not evidence") for v in quiet)


def test_dev_lines_compare_each_pretraining_cell_with_none_of_its_seed_and_lc_size():
    """Issue 26: whether the DEV guard of checkpoint pick held after the full fine-tune, said without TEST."""
    from core.experiments.summary import dev_lines, diagnostic_lines

    cells = [{"row": "none", "seed": 1, "lc_size": 100, "f1": 0.5, "best_dev_f1": 0.60},
             {"row": "none", "seed": 2, "lc_size": 100, "f1": 0.5, "best_dev_f1": 0.62},
             {"row": "none", "seed": 1, "lc_size": 50, "f1": 0.5, "best_dev_f1": 0.40},
             {"row": "tapt", "seed": 1, "lc_size": 100, "f1": 0.5, "best_dev_f1": 0.61},
             {"row": "tapt", "seed": 2, "lc_size": 100, "f1": 0.5, "best_dev_f1": 0.60},
             {"row": "tapt", "seed": 1, "lc_size": 50, "f1": 0.5, "best_dev_f1": 0.43},
             {"row": "dsir", "seed": 3, "lc_size": 100, "f1": 0.5, "best_dev_f1": 0.70}]  # no none of seed 3: not compared
    assert dev_lines(cells) == ["tapt: DEV F1 after the full fine-tune +0.67 points against none (mean of 3 cells, "
                                "each against none of its seed; below none in 1)"]
    assert dev_lines(cells) == diagnostic_lines(cells)  # no pick or drift records in these cells


def test_counts_kept_inline_read_back_the_same_and_bad_ones_are_refused():
    counts = np.array([[1, 0, 2], [0, 3, 0], [12, 1, 1]])
    encoded = encode_counts(counts)
    assert encoded == {"tp": "1 0 12", "fp": "0 3 1", "fn": "2 0 1"}
    assert decode_counts(encoded).tolist() == counts.tolist()
    for bad in ({"tp": "1 0", "fp": "0 3 1", "fn": "2 0 1"}, {"tp": "1 x 2", "fp": "0 3 1", "fn": "2 0 1"},
                {"tp": "1 0 2", "fp": "0 3 1"}, {"tp": "1 -1 2", "fp": "0 3 1", "fn": "2 0 1"}):
        with pytest.raises(UserError, match="cell none seed 1"):
            decode_counts(bad, "cell none seed 1")


def _cells(row: str, correct_shares: list[float], n: int = 300, rng_seed: int = 0) -> list[dict]:
    """Cells of one row, one per seed: every TEST sentence holds one gold entity, found in `share` of the sentences
    (tp 1) and missed in the rest (fn 1); which sentences differ between seeds."""
    from core.experiments.statistics import encode_counts

    out = []
    for seed, share in enumerate(correct_shares, 1):
        rng = np.random.default_rng(rng_seed * 100 + seed)
        hit = rng.random(n) < share
        counts = np.stack([hit.astype(int), np.zeros(n, int), (~hit).astype(int)], axis=1)
        out.append({"row": row, "seed": seed, "f1": float(hit.mean()), "test_counts": encode_counts(counts), "lc_size": 100})
    return out


def test_the_advice_says_helps_no_help_or_cannot_say_with_the_seeds_it_would_take():
    """Issue 46.4: the sentence for the user, from Holm-adjusted p and intervals, in each of its three cases."""
    from core.experiments.summary import experiment_verdict, interval_summary

    none = _cells("none", [0.5, 0.5, 0.5])
    helps = none + _cells("cosine", [0.8, 0.8, 0.8], rng_seed=1)
    advice = experiment_verdict(interval_summary(helps, n_boot=2000), "study", helps).advice
    assert advice["case"] == "helps" and advice["row"] == "cosine"
    assert advice["text"].startswith("cosine helps over no pretraining here: +") and "over none (Holm" in advice["text"]
    assert "not shown better than a random draw of the same size" in advice["text"] and advice["beats_random"] is False

    same = none + [{**c, "row": "tapt"} for c in none]  # TAPT scores exactly what none scores, sentence for sentence
    advice = experiment_verdict(interval_summary(same, n_boot=2000), "study", same).advice
    assert advice["case"] == "no help" and advice["text"].startswith("no recipe tried helps on this task")
    assert "fine-tune without pretraining" in advice["text"]

    unsure = none + _cells("dsir", [0.56, 0.47, 0.53], rng_seed=2)  # +2 points on average, seeds disagree
    advice = experiment_verdict(interval_summary(unsure, n_boot=2000), "study", unsure).advice
    assert advice["case"] == "cannot say" and advice["text"].startswith("cannot say with 3 seeds whether pretraining helps")
    assert advice["more_seeds"] is None or advice["more_seeds"] >= 1
    assert ("run " in advice["text"]) or ("would not settle" in advice["text"]) or ("more than" in advice["text"])
    smoke = experiment_verdict(interval_summary(helps, n_boot=500), "tiny", helps).advice
    assert smoke["text"].startswith("smoke test, not evidence")


def test_seeds_to_settle_splits_what_more_seeds_shrink_from_what_they_cannot():
    from core.experiments.statistics import decode_counts, seeds_to_settle

    none = [decode_counts(c["test_counts"]) for c in _cells("none", [0.5, 0.5, 0.5])]
    same_sentences = [decode_counts(c["test_counts"]) for c in _cells("a", [0.53, 0.49, 0.55], rng_seed=3)]
    settle = seeds_to_settle(same_sentences, none)
    assert settle["seeds"] == 3 and settle["sd_seed"] > 0 and settle["se_sentences"] > 0
    assert settle["needed"] is None or settle["needed"] > 3
    one = seeds_to_settle(same_sentences[:1], none[:1])
    assert one["needed"] is None and "one seed" in one["reason"]
    worse = seeds_to_settle(none, same_sentences)
    assert worse["needed"] is None and worse["delta"] < 0


def test_a_gain_on_fewer_than_three_seeds_is_no_claim_however_small_its_p():
    """Science's DSIR row had one seed when its Holm p read 0.005: a one-seed bootstrap resamples sentences only, so the
    star, the verdict, the advice and the knob decision all wait for MIN_CLAIM_SEEDS paired seeds."""
    from core.experiments.decision import KnobTest
    from core.experiments.records import PairTest
    from core.experiments.statistics import MIN_CLAIM_SEEDS
    from core.experiments.summary import experiment_verdict, interval_summary, p_text, pretraining_verdicts

    assert MIN_CLAIM_SEEDS == 3
    t = {"delta": 0.03, "ci": [0.01, 0.05], "p": 0.001, "p_holm": 0.005}
    assert not PairTest.of({**t, "seeds": 1}).significant and not PairTest.of({**t, "seeds": 2}).significant
    assert PairTest.of({**t, "seeds": 3}).significant
    assert not PairTest.of(t).significant  # an older record that did not count its seeds: unknown is too few
    assert p_text({**t, "seeds": 1}) == "p 0.001 (Holm 0.005) (1 seed: a claim needs 3)"
    found = pretraining_verdicts([{"row": "dsir", "seeds": 1, "vs": {"none": {**t, "seeds": 1}}}])
    assert found[0]["verdict"] == "no clear gain" and "(a claim needs 3)" in found[0]["text"]

    one = _cells("none", [0.5]) + _cells("dsir", [0.8], rng_seed=1)  # a clear gain, but on one seed
    result = experiment_verdict(interval_summary(one, n_boot=2000), "study", one)
    assert result.pretraining_helps == "cannot say" and result.advice["case"] == "cannot say"
    three = _cells("none", [0.5] * 3) + _cells("dsir", [0.8] * 3, rng_seed=1)
    assert experiment_verdict(interval_summary(three, n_boot=2000), "study", three).pretraining_helps == "yes"

    knob = KnobTest("l2sp", "music", "tapt", [1, 2], 0.03, [0.01, 0.05], 0.001, p_holm=0.004)
    assert not knob.claims() and KnobTest("l2sp", "music", "tapt", [1, 2, 3], 0.03, [0.01, 0.05], 0.001, 0.004).claims()


def test_the_no_help_bound_widens_by_the_t_quantile_when_seeds_carry_the_noise():
    """Bonferroni over 17 comparisons: z's ratio widens a normal interval by about 1.5; at two degrees of freedom the t
    quantile at alpha / 17 is about 19 standard errors, not 3: a "no help" claim read off z's ratio was too sure."""
    from core.experiments.statistics import bonferroni_upper

    normal = bonferroni_upper(0.0, [-0.01, 0.01], 17)
    seeds = bonferroni_upper(0.0, [-0.01, 0.01], 17, seed_t={"se": 0.005, "df": 2.0})
    assert normal == pytest.approx(0.0152, abs=1e-4) and seeds > 0.09
    assert bonferroni_upper(0.0, [-0.01, 0.01], 17, seed_t={"se": 0.001, "df": None}) == normal  # narrower: z's bound



def test_the_readout_is_one_for_the_runs_page_the_results_page_and_the_cli():
    """The Runs page drew a smoke preset's rows as evidence ("helped", in green) while Results and the CLI said "smoke
    test, not evidence"; and a result stored without a verdict had one in the app and none at the CLI."""
    from core.experiments.experiment import format_results
    from core.experiments.readout import readout, readout_lines
    from core.experiments.summary import interval_summary

    cells = _cells("none", [0.5, 0.5, 0.5]) + _cells("cosine", [0.8, 0.8, 0.8], rng_seed=1)
    result = {"domain": "toy", "rows": ["none", "cosine"], "seeds": [1, 2, 3], "cells": cells, "preset": "tiny",
              "summary": interval_summary(cells, n_boot=500)}  # no stored verdict, as an older result
    said = readout(result)
    assert said[0].strong == "Verdict" and said[0].tone == "warning" and "smoke test" in said[0].text
    rows = [s for s in said if "against no pretraining" in s.text]
    assert rows and all(s.text.startswith("smoke test, not evidence") and s.tone == "info" for s in rows)
    printed = format_results(result)
    assert all(line in printed for line in readout_lines(result)) and "verdict: " in printed
    import inspect

    import ui_runs

    assert "readout(" in inspect.getsource(ui_runs.experiment_result)  # the Runs page says the same lines


def test_seeds_to_settle_never_says_run_one_more_when_the_seeds_already_suffice(monkeypatch):
    """Found in review: when the seed spread says the seeds run suffice, "run 1 more" came from a floor of n + 1,
    with no basis: what holds such a claim back is the resampled reading or Holm."""
    import core.experiments.statistics as stats

    monkeypatch.setattr(stats, "_variance_split", lambda runs, n_boot, seed: (np.array([0.030, 0.031, 0.029, 0.030]), 1e-6))
    runs = np.zeros((4, 10, 3), dtype=np.int64)
    settle = stats.seeds_to_settle(runs, runs)
    assert settle["needed"] is None and "4 seeds would do" in settle["reason"]
