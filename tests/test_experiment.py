"""Experiments: the result tables, a tiny strategies x seeds run (resumable), bad input as user errors."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from core.data.workspace import Workspace
from core.errors import UserError
from core.experiments.experiment import load_cells, per_type_table, results_table, summarize
from core.experiments.plan import BASELINES, parse_strategy
from core.experiments.summary import interval_summary
from core.runner import jobs
from tests.conftest import TOY_SENTENCES, unlike
from tests.ner_data import single_thread_torch, write_toy_conll  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")

CELLS = [
    {"row": "dsir", "seed": 1, "f1": 0.60, "per_type": {"PER": {"f1": 0.5}, "LOC": {"f1": 0.7}}},
    {"row": "dsir", "seed": 2, "f1": 0.64, "per_type": {"PER": {"f1": 0.7}, "LOC": {"f1": 0.7}}},
    {"row": "none", "seed": 1, "f1": 0.50, "per_type": {"PER": {"f1": 0.4}}},
    {"row": "none", "seed": 2, "f1": 0.50, "per_type": {"PER": {"f1": 0.6}}},
    {"row": "tapt", "seed": 1, "f1": 0.55, "per_type": {}},
]


def test_summary_and_tables():
    s = summarize(CELLS)
    assert s["dsir"]["mean"] == pytest.approx(0.62) and s["dsir"]["std"] == pytest.approx(0.028284, abs=1e-5)
    assert s["none"]["std"] == 0.0 and s["tapt"]["n"] == 1 and s["dsir"]["per_type"] == {"LOC": 0.7, "PER": 0.6}
    table = results_table([{"domain": "music", "cells": CELLS}, {"domain": "ai", "cells": CELLS[:2]}])
    assert list(table.index) == ["none", "tapt", "dsir"] and list(table.columns) == ["music", "ai"]
    # cells without kept predictions: no interval, and one seed says so instead of a "± 0.00"
    assert table.loc["dsir", "music"] == "62.00 ± 2.83" and table.loc["tapt", "music"] == "55.00 (1 seed)"
    assert table.loc["none", "ai"] == "–"
    types = per_type_table({"cells": CELLS})
    assert list(types.columns) == ["none", "tapt", "dsir"] and types.loc["PER", "dsir"] == 60.0 and types.loc["PER", "none"] == 50.0


def test_a_rerun_pools_once_per_seed_and_another_test_file_is_its_own_column():
    """Found in review: two experiments of one recipe and domain sharing a seed were pooled into "row none seed 1
    appears twice", and the Results page failed."""
    newer = [{**c, "f1": c["f1"] + 0.1} for c in CELLS]
    table = results_table([{"domain": "music", "cells": newer}, {"domain": "music", "cells": CELLS}])
    assert list(table.columns) == ["music"] and table.loc["dsir", "music"] == "72.00 ± 2.83"  # the newest (first) kept
    other = {"domain": "music", "cells": CELLS, "corpora": {"test": {"hash": "bbbbbbbbbbbb"}}}
    table = results_table([{"domain": "music", "cells": newer, "corpora": {"test": {"hash": "aaaaaaaaaaaa"}}}, other])
    assert list(table.columns) == ["music", "music (TEST bbbbbbbb)"] and table.loc["dsir", "music (TEST bbbbbbbb)"] == "62.00 ± 2.83"
    # found in review: a tiny smoke run of another encoder was pooled as a third seed of the study's column
    smoke = {"domain": "music", "cells": [{**c, "seed": 3} for c in CELLS[:1]],
             "recipe": {"model": "bert-base-cased", "preset": "tiny", "pick_checkpoint": 0}}
    study = {"domain": "music", "cells": CELLS, "recipe": {"model": "default", "preset": "study", "pick_checkpoint": 4}}
    table = results_table([study, smoke])
    assert len(table.columns) == 2 and all(c.startswith("music [") for c in table.columns), list(table.columns)
    partial = {"domain": "music", "cells": [{**c, "seed": c["seed"] + 10} for c in CELLS]}  # no TEST hash: a partial run
    table = results_table([partial, {"domain": "music", "cells": newer, "corpora": {"test": {"hash": "aaaaaaaaaaaa"}}}, other])
    assert list(table.columns) == ["music", "music (TEST bbbbbbbb)"]


def test_parse_strategy():
    assert parse_strategy("cosine@b1") == ("cosine", "b1") and parse_strategy(" dsir ") == ("dsir", None)
    with pytest.raises(UserError):
        parse_strategy("cosine@b7")


def test_a_strategy_row_carries_its_options():
    from core.recipes.strategy_row import StrategyRow

    assert StrategyRow.parse("dsir:length=chunk@base") == StrategyRow("dsir", None, {"length": "chunk"})  # @base: a row's own
    assert StrategyRow.parse("knn:k=5").options == {"k": 5} and StrategyRow.parse("dsir:length=chunk").label == "dsir:length=chunk"
    for bad, why in (("dsir:length=sideways", "'length' must be one of sum, chunk"), ("dsir:length", "expected KEY=VALUE"),
                     ("cosine@b1@base", "one @ at most"), (":k=3", "strategy name first")):
        with pytest.raises(UserError, match=why):
            StrategyRow.parse(bad)


def test_an_experiment_refuses_a_bad_row_option_at_submit(tmp_path):
    from core.runner.params import ExperimentParams

    assert ExperimentParams(strategies=["DSIR : length=chunk", " ", "cosine@B1"]).strategies == ["dsir:length=chunk", "cosine@b1"]
    with pytest.raises(UserError, match="bucket"):
        ExperimentParams(strategies=["dsir:bucket=100"])
    # one computation, one row: any order or spelling of its options, a default spelt out, the same row picked twice
    same = ["dsir", "DSIR", "dsir:length=sum", "dsir:length=chunk:sampling=topk", "dsir:sampling=topk:length=chunk",
            "entity-gain:mix=1", "entity_gain:mix=1.0"]
    assert ExperimentParams(strategies=same).strategies == ["dsir", "dsir:sampling=topk:length=chunk", "entity-gain:mix=1.0"]
    with pytest.raises(UserError, match="'k' is not read by dsir"):
        ExperimentParams(strategies=["dsir:k=5"])
    # type_weights=null (B2's own type shares) is no default for an experiment, which passes LC's: its own row
    assert ExperimentParams(strategies=["entity-gain", "entity-gain:type_weights=null"]).strategies == [
        "entity-gain", "entity-gain:type_weights=null"]
    # an unknown strategy is refused at submit (not after the corpora are read); an option typed after a comma says how
    with pytest.raises(UserError, match="unknown strategy 'dsri'"):
        ExperimentParams(strategies=["dsri"])
    with pytest.raises(UserError, match="options follow a strategy after ':'"):
        ExperimentParams(strategies="dsir:length=chunk,sampling=topk".split(","))


def test_a_model_tag_that_changes_nothing_is_one_row_with_the_plain_one():
    """'@base' is what a row reads anyway, and '@b1' on a strategy that reads no encoder (or B1 always) changes
    nothing: each would pretrain and fine-tune the same selection again under its own name."""
    from core.experiments.plan import check_rows, row_names

    assert check_rows(["dsir", "dsir@b1", "random@base", "random", "cosine", "cosine@base", "cosine@b1",
                       "mlm-ppl", "mlm-ppl@b1"]) == ["dsir", "random", "cosine", "cosine@b1", "mlm-ppl"]
    assert row_names("none,ner@b1,knn@B1,knn@base") == ["none", "ner", "knn@b1", "knn"]
    from core.runner.kinds import validate  # the job's params name it so at submit: the listing shows the row it runs

    params = validate("experiment", {"strategies": ["dsir@b1", "dsir", "cosine@b1"]})
    assert params.strategies == ["dsir", "cosine@b1"]


def test_every_selection_option_says_which_strategies_read_it():
    """A new option left out of READERS would pass on every strategy unchecked; a select job is refused at submit."""
    import dataclasses

    from core.recipes.selection_options import READERS, SelectionOptions
    from core.runner.kinds import validate

    assert set(READERS) == {f.name for f in dataclasses.fields(SelectionOptions)}
    from core.recipes.strategy_info import STRATEGIES, Strategy
    from core.recipes.strategy_info import STRATEGY_INFO as INFO

    assert set(INFO) == set(Strategy)  # every strategy the recipe stage names has its label, models and score
    assert {s for readers in READERS.values() if readers for s in readers} <= set(STRATEGIES)  # no misspelt reader
    with pytest.raises(UserError, match="select params: unknown strategy 'dsri'"):  # not "'length' is not read by dsri"
        validate("select", {"tc": "tc", "dc": "dc", "strategy": "dsri", "budget": 10, "options": {"length": "chunk"}})
    with pytest.raises(UserError, match="'k' is not read by dsir"):
        validate("select", {"tc": "tc", "dc": "dc", "strategy": "DSIR", "budget": 10, "options": {"k": 5}})
    assert validate("select", {"tc": "tc", "dc": "dc", "strategy": "knn", "budget": 10, "options": {"k": 5}}).options == {"k": 5}


@pytest.fixture
def corpora(tmp_path):
    tc = tmp_path / "tc.txt"
    tc.write_text("\n".join(unlike(s) for s in TOY_SENTENCES[:8]) + "\n")
    dc = tmp_path / "dc.txt"
    dc.write_text("\n".join(unlike(s, k) for k in (1, 2, 3) for s in TOY_SENTENCES[:8]) + "\n"
                  + "\n".join(unlike(s) for s in TOY_SENTENCES[:8]) + "\n")
    labeled = write_toy_conll(tmp_path / "lc.conll")
    return {"tc": str(tc), "dc": str(dc), "lc": labeled, "dev": labeled, "test": labeled}


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_experiment_runs_cells_and_resumes(tmp_path, corpora, tiny_bert_dir, monkeypatch):
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = Workspace(tmp_path / "ws")
    params = {**corpora, "strategies": ["random", "ner"], "baselines": ["none", "tapt"], "seeds": [1, 2],
              "model": str(tiny_bert_dir), "preset": "tiny", "domain": "toy", "budget": 8}
    run_dir = tmp_path / "run"
    seen: list[tuple[float, str]] = []
    result = jobs.run_inline(ws, "experiment", params, run_dir=run_dir, progress=lambda f, m="": seen.append((f, m)))
    assert result["rows"] == ["none", "tapt", "random", "ner"] and len(result["cells"]) == 8
    # the bar follows the clock: it never runs back, and a none cell (NER only) gets a smaller slice than a
    # pretraining cell (core.experiments.cell_phases), so the time left it shows is not the cells' count
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] > 0.99  # the last: the last cell scoring TEST
    none_1 = [f for f, m in seen if m.startswith("cell 1/8 none seed 1:")]  # the first cell: its slice starts at 0
    assert none_1 and max(none_1) < 0.5 / len(result["cells"])  # under half of an equal share (8 cells: 1/8 each)
    assert all(0 <= c["f1"] <= 1 and c["per_type"] for c in result["cells"])
    assert {c["budget"] for c in result["cells"] if c["row"] in ("random", "ner")} == {8}  # SC sentences selected
    assert all(c["budget"] is None for c in result["cells"] if c["row"] in ("none", "tapt", "dapt"))  # one meaning
    summary = {e["row"]: e for e in result["summary"]}
    assert summary["random"]["seeds"] == 2 and len(load_cells(run_dir)) == 8
    lo, hi = summary["random"]["f1_ci"]
    assert 0 <= lo <= hi <= 1 and set(summary["random"]["vs"]) == {"tapt", "none"} and summary["tapt"]["vs"].keys() == {"none"}
    assert set(summary["ner"]["vs"]) == {"tapt", "none", "random"}  # a selection is held against the random control too
    assert all(Path(c["predictions"]).is_file() for c in result["cells"])  # per-sentence TEST predictions kept
    # ... and their counts inside each cell: with the run folder's prediction files gone, the same intervals and tests
    assert all(c["test_counts"]["tp"] for c in result["cells"])
    for c in result["cells"]:
        Path(c["predictions"]).unlink()
    assert interval_summary(result["cells"]) == result["summary"]
    log = (run_dir / "log.txt").read_text()
    assert "training B1/B2" in log  # NER-Selected reads B2 = the TAPT model fine-tuned on LC
    table = results_table([result])
    assert list(table.columns) == ["toy"] and "±" in table.loc["ner", "toy"] and "[" in table.loc["ner", "toy"]

    (run_dir / "log.txt").write_text("")
    again = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)  # a resumed job: every cell is already done
    assert again["cells"] == result["cells"] and "test F1" not in (run_dir / "log.txt").read_text()
    n = len(result["cells"])
    assert f"{n} of {n} cells finished in an earlier run of this folder: kept" in (run_dir / "log.txt").read_text()


def test_a_dsir_row_with_options_selects_with_them(tmp_path, corpora, tiny_bert_dir, monkeypatch):
    """`dsir:length=chunk` is its own row: its cell's selection ran with the option (saved in the selection's meta)."""
    from core.data.selection_store import selection_meta

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = Workspace(tmp_path / "ws")
    params = {**corpora, "strategies": ["dsir:length=chunk"], "baselines": [], "seeds": [1], "model": str(tiny_bert_dir),
              "preset": "tiny", "domain": "toy", "budget": 4, "pick_checkpoint": 0}
    result = jobs.run_inline(ws, "experiment", params, run_dir=tmp_path / "run")
    (cell,) = result["cells"]
    assert result["rows"] == ["dsir:length=chunk"] and cell["row"] == "dsir:length=chunk" and cell["budget"] == 4
    assert selection_meta(ws, cell["selection_key"]).options == {"length": "chunk"}


def test_bad_baseline_is_a_user_error(tmp_path, corpora):
    with pytest.raises(UserError, match="unknown strategy 'dsri'"):  # an unknown row: refused before anything is read
        jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", {**corpora, "strategies": ["dsri"], "seeds": [1]})
    with pytest.raises(UserError, match="unknown baseline"):
        jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", {**corpora, "baselines": ["bert"], "seeds": [1]})
    assert BASELINES == ("none", "tapt", "dapt", "tapt+dapt")


def test_cli_experiment_baselines_only(tmp_path, corpora, tiny_bert_dir, capsys, monkeypatch):
    from core.cli import main

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    assert main(["--workspace", str(tmp_path / "ws"), "experiment", "--tc", corpora["tc"], "--dc", corpora["dc"], "--lc",
                 corpora["lc"], "--dev", corpora["dev"], "--test", corpora["test"], "--baselines", "none,dapt", "--seeds", "1",
                 "--model", str(tiny_bert_dir), "--preset", "tiny", "--out", str(tmp_path / "exp"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "none" in out and "dapt" in out and "±" in out
    assert main(["experiment", "--tc", "x", "--dc", "x", "--lc", "x", "--dev", "x", "--test", "x", "--seeds", "a",
                 "--out", str(tmp_path / "e2")]) == 2


# --------------------------------------------------------------------------- sweeps (issue 9: Fig. 2, Fig. 4, Table 5)


def test_parse_seeds_one_rule_for_cli_and_page():
    from core.experiments.plan import parse_seeds

    assert parse_seeds("1, 2,3,", "--seeds") == [1, 2, 3]
    for bad in ("a", "1,x", "-1", "1.5"):
        with pytest.raises(UserError, match="--seeds: expected comma-separated integers"):
            parse_seeds(bad, "--seeds")
    with pytest.raises(UserError, match="Seeds: give at least one seed"):
        parse_seeds(" , ", "Seeds")
    # found in review: '1,1' ran every cell, then its summary refused "row none seed 1 appears twice"; 2**64 failed
    # inside torch.manual_seed
    with pytest.raises(UserError, match="seed 1 is given twice"):
        parse_seeds("1,2,1", "--seeds")
    with pytest.raises(UserError, match="seed 18446744073709551616 is above"):
        parse_seeds(str(2**64), "--seeds")
    for bad, said in (([1, 1], "given twice"), ([2**40], "at most")):
        with pytest.raises(UserError, match=said):
            jobs.submit(Workspace(Path(tempfile.mkdtemp())), "experiment", {"domain": "music", "seeds": bad}, start=False)


def test_parse_and_resolve_amounts():
    from core.experiments.plan import resolve_sc_budget, sweep_budgets
    from core.recipes.budget import Budget

    assert Budget.parse_list("500, 0.1,1.0", "--budgets") == [Budget(500), Budget(0.1), Budget(1.0)]
    assert Budget.parse_list(None, "x") == [] and Budget.parse_list([3, "0.5"], "x") == [Budget(3), Budget(0.5)]
    for bad in ("abc", "0", "-2", "2.5"):
        with pytest.raises(UserError, match="--lc-sizes"):
            Budget.parse_list(bad, "--lc-sizes")
    size = Budget.parse
    assert size(0.25).count(24) == 6 and size(1.0).count(24) == 24 and size("12").count(24) == 12
    with pytest.raises(UserError, match="LC size: 30 is more than the 24"):
        size(30).count(24, what="LC size")
    assert resolve_sc_budget(None, 8, 100) == 8 and resolve_sc_budget(0.1, 8, 100) == 10 and resolve_sc_budget(500, 8, 100) == 100
    assert sweep_budgets(None, None) == [None] and sweep_budgets(5, None) == [5] and sweep_budgets(None, [1, 2]) == [1, 2]


def test_experiment_help_states_every_default():
    from core.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._subparsers._group_actions if a.choices and "experiment" in a.choices)
    exp = sub.choices["experiment"]
    for action in exp._actions:
        if action.dest in ("help",):
            continue
        assert action.help and ("default" in action.help or "required" in action.help), (action.dest, action.help)
    helps = {a.dest: a.help for a in exp._actions}
    assert "(default: none,tapt,dapt,tapt+dapt)" in helps["baselines"] and "default" in helps["lc_sizes"] + helps["budgets"]


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_experiment_sweep_cells_resume_and_lineage(tmp_path, corpora, tiny_bert_dir, capsys, monkeypatch):
    """Budgets x LC sizes from the CLI: every cell carries budget, lc_size and mlm_seconds; an MLM model is
    trained once per (row, budget, seed) and reused across LC sizes; a rerun skips every finished cell;
    a new budget in the same folder is a new cell; the cell's NER run has its lineage in the run index."""
    from core.cli import main

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws, out = tmp_path / "ws", tmp_path / "sweep"
    argv = ["--workspace", str(ws), "experiment", "--tc", corpora["tc"], "--dc", corpora["dc"], "--lc", corpora["lc"],
            "--dev", corpora["dev"], "--test", corpora["test"], "--strategies", "random", "--baselines", "none,tapt",
            "--seeds", "1", "--budgets", "4,8", "--lc-sizes", "0.5,24", "--model", str(tiny_bert_dir), "--preset", "tiny",
            "--out", str(out), "--json", "--quiet"]
    capsys.readouterr()
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    cells = result["cells"]
    assert {"domain", "rows", "seeds", "cells", "summary"} <= set(result) and result["lc_sizes"] == [12, 24]
    assert all({"row", "seed", "f1", "budget", "lc_size", "mlm_seconds"} <= set(c) for c in cells)
    got = sorted((c["row"], c["budget"], c["lc_size"]) for c in cells)
    assert got == sorted([(r, b, n) for n in (12, 24) for r, b in (("none", None), ("tapt", None), ("random", 4), ("random", 8))])
    assert all(c["mlm_seconds"] == 0 and c["mlm_sentences"] == 0 for c in cells if c["row"] == "none")
    assert all(c["mlm_seconds"] > 0 for c in cells if c["row"] != "none")
    assert {c["mlm_sentences"] for c in cells if c["row"] == "tapt"} == {8}  # TC
    assert {c["mlm_sentences"] for c in cells if c["row"] == "random"} == {16}  # TC + SC 1:1
    assert sorted(p.parent.name for p in (out / "pretrain").glob("*/seed-1")) == ["random.b4", "random.b8", "tapt"]
    by_lc = {(c["budget"], c["lc_size"]): c["mlm_seconds"] for c in cells if c["row"] == "random"}
    assert by_lc[(4, 12)] == by_lc[(4, 24)]  # one MLM model for both LC sizes
    labels = {e["row"] for e in result["summary"]}
    assert labels == {f"{r} · LC {n}" for n in (12, 24) for r in ("none", "tapt", "random · SC 4", "random · SC 8")}
    one_seed = next(e for e in result["summary"] if e["row"] == "random · SC 4 · LC 24")
    assert one_seed["seeds"] == 1 and one_seed["f1_std"] is None and "p_holm" in one_seed["vs"]["tapt"]
    from core.experiments.sweeps import sc_amount_frame

    f2 = sc_amount_frame(cells)  # the figures' bars: the 95% CI from the kept predictions, and "1 seed" said
    assert ((f2["f1_lo"] <= f2["f1_mean"] + 1e-9) & (f2["f1_mean"] <= f2["f1_hi"] + 1e-9)).all()
    assert (f2["ci_plus"] >= -1e-9).all() and set(f2["seeds_label"]) == {"1 seed"}

    half = next(c for c in cells if c["row"] == "random" and c["budget"] == 4 and c["lc_size"] == 12)
    assert main(["--workspace", str(ws), "runs", "show", half["run"], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    lin = shown["lineage"]
    assert shown["f1"] == half["f1"] and lin["lc"]["sentences"] == 12 and lin["lc"]["of"] == 24 and lin["seed"] == 1
    assert [p["name"] for p in lin["mlm_phases"]] == ["tc+sc"] and lin["mlm_phases"][0]["sentences"] == 16
    assert lin["pretraining_corpora"][0]["hash"] and lin["selection"]["strategy"] == "random" and lin["selection"]["budget"] == 4

    from core.similarity.correlation import finished_f1_runs

    f1_runs = {r["job"]: r for r in finished_f1_runs(Workspace(ws))}  # the Similarity page's F1 panel reads these
    assert {c["run"] for c in cells} <= set(f1_runs)
    assert f1_runs[half["run"]]["data"] == "LC lc (12 of 24) · TEST lc"
    assert {f1_runs[c["run"]]["source"] for c in cells if c["row"] == "none"} == {None}
    assert {f1_runs[c["run"]]["source"] for c in cells if c["row"] == "tapt"} == {"tc"}

    (out / "log.txt").write_text("")
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["cells"] == cells and "test F1" not in (out / "log.txt").read_text()

    argv[argv.index("4,8")] = "6"
    assert main(argv[:argv.index("--lc-sizes")] + argv[argv.index("--lc-sizes") + 2:]) == 0  # full LC, budget 6
    third = json.loads(capsys.readouterr().out)
    assert sorted({c["budget"] for c in third["cells"] if c["row"] == "random"}) == [6]
    assert "random.b6.lc24 seed 1: test F1" in (out / "log.txt").read_text()  # a new budget is a new cell, not a skipped one


def test_sweep_frames():
    from core.experiments.sweeps import lc_amount_frame, mlm_time_frame, sc_amount_frame, sweep_axes

    cells = [{"row": r, "seed": s, "f1": f, "budget": b, "lc_size": n, "mlm_seconds": t, "mlm_sentences": m}
             for r, s, f, b, n, t, m in (
                 ("none", 1, 0.40, 0, 50, 0.0, 0), ("none", 2, 0.50, 0, 50, 0.0, 0), ("none", 1, 0.30, 0, 25, 0.0, 0),
                 ("tapt", 1, 0.55, 0, 50, 10.0, 100),
                 ("dsir", 1, 0.60, 100, 50, 20.0, 200), ("dsir", 2, 0.64, 100, 50, 22.0, 200),
                 ("dsir", 1, 0.70, 400, 50, 80.0, 800), ("dsir", 1, 0.50, 100, 25, 20.0, 200))]
    assert sweep_axes(cells) == {"budgets": [100, 400], "lc_sizes": [25, 50]}
    f2 = sc_amount_frame(cells)
    assert list(f2["series"]) == ["none", "tapt", "dsir", "dsir"] and set(f2["lc_size"]) == {50}
    dsir = f2[f2["row"] == "dsir"]
    assert list(dsir["budget"]) == [100, 400] and dsir["f1_mean"].iloc[0] == pytest.approx(0.62)
    assert dsir["f1_std"].iloc[0] == pytest.approx(0.028284, abs=1e-5) and list(dsir["n"]) == [2, 1]
    assert list(sc_amount_frame(cells, lc_size=25)["row"]) == ["none", "dsir"]
    assert f2["f1_lo"].isna().all() and list(dsir["seeds_label"]) == ["2 seeds", "1 seed"]  # no predictions: no interval
    f4 = lc_amount_frame(cells)
    assert set(f4["series"]) == {"none", "tapt", "dsir · SC 100", "dsir · SC 400"}
    line = f4[f4["series"] == "dsir · SC 100"]
    assert list(line["lc_size"]) == [25, 50] and list(line["f1_mean"].round(2)) == [0.5, 0.62]
    assert set(lc_amount_frame(cells, budget=100)["series"]) == {"none", "tapt", "dsir"}
    t5 = mlm_time_frame(cells)
    assert list(t5.index) == ["none", "tapt", "dsir · SC 100", "dsir · SC 400"]
    assert t5.loc["dsir · SC 100", "F1 (%)"] == "62.00 ± 2.83" and t5.loc["dsir · SC 100", "MLM time (s)"] == 21.0
    assert t5.loc["dsir · SC 400", "sentences"] == 800 and t5.loc["tapt", "MLM corpus"] == "TC" and t5.loc["none", "sentences"] == 0
    assert "400 sentences" in t5.loc["dsir · SC 400", "MLM corpus"]
    old = [{"row": "none", "seed": 1, "f1": 0.5}]  # a result from before sweeps still gives a table
    assert mlm_time_frame(old).loc["none", "F1 (%)"] == "50.00 ± 0.00"


def test_a_cell_finished_before_sweeps_is_kept_on_resume(tmp_path, corpora, monkeypatch):
    """An experiment folder from before sweeps (cells/ROW/seed-N/cell.json) resumes without training that cell again."""
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    run_dir = tmp_path / "old"
    old = run_dir / "cells" / "tapt" / "seed-1"
    (old / "mlm").mkdir(parents=True)
    (old / "cell.json").write_text(json.dumps({"row": "tapt", "seed": 1, "f1": 0.42, "per_type": {}}))
    (old / "mlm" / "seconds.json").write_text(json.dumps({"seconds": 3.5}))
    # the folder's cell ran without checkpoint pick (the default since issue 26): resumed under its own recipe
    result = jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", {**corpora, "baselines": ["tapt"], "seeds": [1],
                                                                         "pick_checkpoint": 0}, run_dir=run_dir)
    (cell,) = result["cells"]
    assert cell["f1"] == 0.42 and cell["budget"] is None and cell["lc_size"] == 24 and cell["mlm_seconds"] == 3.5


def test_b2_is_the_tapt_cells_model_whichever_row_runs_first(tmp_path, corpora, tiny_bert_dir, monkeypatch):
    """A row reading B2 (ner) that ran before the tapt row fine-tuned B2 from the final MLM model; the tapt cell,
    added later, picked another encoder and still reused that model under its own pick. B2 now comes from the
    encoder the tapt cell's pick chooses, and a kept NER model is reused only for the encoder it was tuned from."""
    from core.experiments.cells import CellTrainer

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")

    def fake_score(self, cand, work, seed, lc):  # tapt's first snapshot wins the probe
        return 0.9 if cand.label == "step-2" else 0.5

    monkeypatch.setattr(CellTrainer, "short_fine_tune", fake_score)
    ws, run_dir = Workspace(tmp_path / "ws"), tmp_path / "run"
    params = {**corpora, "strategies": ["ner"], "baselines": [], "seeds": [1], "budget": 8, "model": str(tiny_bert_dir),
              "preset": "tiny", "pick_checkpoint": 2, "mlm_config": {"epochs": 100}}
    jobs.run_inline(ws, "experiment", params, run_dir=run_dir)
    b2 = run_dir / "cells" / "tapt.lc24" / "seed-1" / "ner"
    assert json.loads((b2 / "summary.json").read_text())["encoder"] == "pretrain/tapt/seed-1/mlm/phase-tapt/snapshots/step-2"
    tuned = (b2 / "model" / "model.safetensors").stat().st_mtime_ns
    later = jobs.run_inline(ws, "experiment", {**params, "baselines": ["tapt"]}, run_dir=run_dir)
    tapt = next(c for c in later["cells"] if c["row"] == "tapt")
    assert tapt["encoder"].endswith("step-2") and tapt["pick"]["chosen"] == "step-2"
    assert (b2 / "model" / "model.safetensors").stat().st_mtime_ns == tuned  # the same model: not tuned again


def test_checkpoint_pick_in_cells_uses_the_probe_winner_and_probes_the_base_once(tmp_path, corpora, tiny_bert_dir,
                                                                                  monkeypatch, capsys):
    """Issue 26: with pick_checkpoint an MLM cell fine-tunes NER from the candidate the DEV-F1 probe scores best
    (a snapshot, or the base encoder when none beats it), records why, and a resumed run neither probes nor picks again."""
    from core.cli import main
    from core.experiments.cells import CellTrainer
    from core.train.lineage import read_lineage

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    winners = {"tapt": "step-2", "random": "base"}  # planted probe scores: tapt's first snapshot wins, random's none
    probed: list[str] = []
    sizes: list[int] = []

    def fake_score(self, cand, work, seed, lc):  # work: RUN/pretrain/KEY/seed-N/mlm/probe/LABEL/work for a snapshot
        row = work.parents[4].name.split(".")[0] if cand.step is not None else "base"
        probed.append(row)
        sizes.append(len(lc))
        return 0.9 if row != "base" and winners[row] == cand.label else 0.5

    monkeypatch.setattr(CellTrainer, "short_fine_tune", fake_score)
    ws = Workspace(tmp_path / "ws")
    params = {**corpora, "strategies": ["random"], "baselines": ["none", "tapt"], "seeds": [1], "budget": 8,
              "model": str(tiny_bert_dir), "preset": "tiny", "domain": "toy", "pick_checkpoint": 2,
              "mlm_config": {"epochs": 100}}  # the toy TC is one MLM step per epoch: reach tiny's 4 steps
    run_dir = tmp_path / "run"
    result = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)
    cells = {c["row"]: c for c in result["cells"]}
    assert "pick" not in cells["none"] and "drift" not in cells["none"]  # no MLM, nothing to pick or measure
    assert 0 < cells["tapt"]["drift"]["cka"] <= 1 and cells["tapt"]["drift"]["sentences"] == 8  # the toy TC
    tapt, random = cells["tapt"]["pick"], cells["random"]["pick"]
    assert set(tapt["scores"]) == {"base", "step-2", "step-4"}  # tiny: 4 MLM steps, a snapshot every 2
    assert tapt["chosen"] == "step-2" and tapt["helped"] and tapt["gain_over_base"] == pytest.approx(0.4)
    assert cells["tapt"]["encoder"].endswith("step-2") and read_lineage(cells["tapt"]["encoder"]).mlm_phases
    assert random["chosen"] == "base" and not random["helped"] and cells["random"]["encoder"] == str(tiny_bert_dir)
    assert "did not help" in random["reason"]
    assert probed.count("base") == 1  # the base encoder's score is shared by the seed's rows
    # the drift of the encoder NER fine-tuned: the step-2 snapshot measured on its own, the kept base unmoved
    assert 0 < tapt["drift"]["cka"] <= 1 and tapt["drift"] != cells["tapt"]["drift"]
    assert random["drift"]["cka"] == 1.0 and random["drift"]["cosine"] == 1.0

    probed.clear()
    assert main(["--workspace", str(ws.root), "experiment", "--tc", corpora["tc"], "--dc", corpora["dc"], "--lc", corpora["lc"],
                 "--dev", corpora["dev"], "--test", corpora["test"], "--strategies", "random", "--baselines", "none,tapt",
                 "--seeds", "1", "--budget", "8", "--model", str(tiny_bert_dir), "--preset", "tiny", "--domain", "toy",
                 "--pick-checkpoint", "2", "--mlm", "epochs=100", "--out", str(run_dir), "--quiet"]) == 0  # the same
    # run (its recipe, MLM epochs included: another one is refused even with every cell finished), resumed from the CLI
    out = capsys.readouterr().out
    assert probed == [] and "random: checkpoint pick kept the base encoder in 1 of 1 cells" in out
    assert "tapt: checkpoint pick kept the base encoder in 0 of 1 cells" in out and "used: step-2" in out
    assert "tapt: encoder drift on TC after MLM, mean of 1 cell: sentence cosine" in out

    # an LC-size sweep: each size's cell chooses with the labels it has, not all of LC; the MLM model is shared
    sizes.clear()
    sweep = jobs.run_inline(ws, "experiment", {**params, "strategies": [], "baselines": ["tapt"], "lc_sizes": [12, 24]},
                            run_dir=tmp_path / "sweep")
    assert sorted(set(sizes)) == [12, 24] and sizes.count(12) == 3  # base, step-2 and step-4 probed on 12 sentences
    assert [c["lc_size"] for c in sweep["cells"]] == [12, 24] and all(c["pick"]["chosen"] == "step-2" for c in sweep["cells"])
    assert (tmp_path / "sweep" / "pretrain" / "tapt" / "seed-1" / "mlm" / "pick.lc12.json").is_file()
    assert sweep["cells"][0]["pick"]["probe_lc"] == 12
    # a sweep folder from before: its LC-12 cell chose on all of LC; a new cell there would choose the other way
    small = tmp_path / "sweep" / "cells" / "tapt.lc12" / "seed-1" / "cell.json"
    old = json.loads(small.read_text())
    old["pick"].pop("probe_lc")
    small.write_text(json.dumps(old))
    with pytest.raises(UserError, match="1 LC-sweep cells whose checkpoint pick probed on all of LC"):
        jobs.run_inline(ws, "experiment", {**params, "strategies": [], "baselines": ["tapt"], "lc_sizes": [12, 24],
                                           "seeds": [1, 2]}, run_dir=tmp_path / "sweep")


def test_checkpoint_pick_runs_the_real_probe_in_a_cell(tmp_path, corpora, tiny_bert_dir, monkeypatch):
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    params = {**corpora, "baselines": ["tapt"], "seeds": [1], "model": str(tiny_bert_dir), "preset": "tiny",
              "pick_checkpoint": 1, "mlm_config": {"epochs": 100}}
    result = jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", params, run_dir=tmp_path / "run")
    pick = result["cells"][0]["pick"]
    assert set(pick["scores"]) == {"base", "step-4"} and all(0 <= s <= 1 for s in pick["scores"].values())
    assert pick["chosen"] in pick["scores"] and pick["probe"] == "dev-f1"
    assert not [p for p in (tmp_path / "run").rglob("work") if "probe" in p.parts]  # probe models deleted once scored
    with pytest.raises(UserError, match="snapshots to keep"):
        jobs.submit(Workspace(tmp_path / "ws"), "experiment", {**params, "pick_checkpoint": -1}, start=False)


def test_rehearsal_mixes_dc_into_every_mlm_corpus_and_names_dc_in_the_lineage(tmp_path, corpora, tiny_bert_dir, monkeypatch):
    """Issue 26: a share of random DC sentences replayed in each MLM corpus (here 1/3: 8 TC sentences + 4 from DC)."""
    from core.train.lineage import read_lineage

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    params = {**corpora, "baselines": ["tapt"], "seeds": [1], "model": str(tiny_bert_dir), "preset": "tiny",
              "rehearsal_share": 1 / 3}
    cell = jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", params, run_dir=tmp_path / "run")["cells"][0]
    assert cell["mlm_sentences"] == 12
    read = [c["name"] for p in read_lineage(cell["encoder"]).mlm_phases for c in p.corpora]
    assert any("dc" in name for name in read) and any("tc" in name for name in read)
    with pytest.raises(UserError, match="rehearsal_share must be in"):  # refused at submit, before anything runs
        jobs.submit(Workspace(tmp_path / "ws"), "experiment", {**params, "rehearsal_share": 1.0}, start=False)


def test_a_run_folder_keeps_one_recipe(tmp_path, corpora, tiny_bert_dir):
    """Issue 26 made checkpoint pick a preset default: continuing an old folder with new settings would mix two recipes
    in one table. Another recipe is refused, naming the setting, even when every cell is finished; finished folders
    stay readable under their own recipe."""
    ws, run_dir = Workspace(tmp_path / "ws"), tmp_path / "run"
    params = {**corpora, "baselines": ["none"], "seeds": [1], "model": str(tiny_bert_dir), "preset": "tiny"}
    jobs.run_inline(ws, "experiment", params, run_dir=run_dir)
    assert json.loads((run_dir / "recipe.json").read_text())["pick_checkpoint"] == 0  # tiny's default, recorded
    again = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)  # the same recipe, nothing to train: read back
    assert [c["seed"] for c in again["cells"]] == [1]
    # another recipe is refused even with nothing left to train: its result would file the old cells under it
    with pytest.raises(UserError, match=r"another recipe \(pick_checkpoint: 0 there, 2 now\)"):
        jobs.run_inline(ws, "experiment", {**params, "pick_checkpoint": 2}, run_dir=run_dir)
    with pytest.raises(UserError, match=r"another recipe \(pick_checkpoint: 0 there, 2 now\)"):
        jobs.run_inline(ws, "experiment", {**params, "seeds": [1, 2], "pick_checkpoint": 2}, run_dir=run_dir)
    assert not (run_dir / "cells" / "none.lc24" / "seed-2").exists()  # refused before any cell started
    # found in review: another TEST (or a corpus re-imported under its name) reused the finished cells and reported
    # their F1 as the new corpora's
    other = tmp_path / "test2.conll"
    other.write_text(Path(corpora["test"]).read_text() + "\nOne\tO\nmore\tO\n")  # a sentence more
    with pytest.raises(UserError, match=r"other corpora \(TEST 'test2' holds other sentences or tags than 'lc' did there\)"):
        jobs.run_inline(ws, "experiment", {**params, "test": str(other)}, run_dir=run_dir)
    # the same sentences named another way (the file imported into the workspace: its Parquet hashes otherwise) are
    # the same corpora: found in review, refused by file hash
    ws.import_corpus(corpora["test"], name="test-imported")
    kept = jobs.run_inline(ws, "experiment", {**params, "test": "test-imported"}, run_dir=run_dir)
    assert [c["seed"] for c in kept["cells"]] == [1]
    # how a cell runs is not its recipe: an out-of-memory retry doubles grad_accum and continues the same folder
    retried = jobs.run_inline(ws, "experiment", {**params, "seeds": [1, 2], "ner_config": {"grad_accum": 2}}, run_dir=run_dir)
    assert [c["seed"] for c in retried["cells"]] == [1, 2]
    cell = run_dir / "cells" / "none.lc24" / "seed-2" / "ner"
    assert (cell / "model").is_dir() and not (cell / "checkpoint").exists()  # a finished cell drops its resume state

    # a folder from before recipe.json: its finished MLM cells say whether they picked
    (run_dir / "recipe.json").unlink()
    legacy = run_dir / "cells" / "tapt.lc24" / "seed-1"
    legacy.mkdir(parents=True)
    (legacy / "cell.json").write_text(json.dumps({"row": "tapt", "seed": 1, "key": "tapt.lc24", "f1": 0.5,
                                                  "pick": {"chosen": "step-2", "helped": True}}))
    with pytest.raises(UserError, match="made with checkpoint pick.*--pick-checkpoint"):
        jobs.run_inline(ws, "experiment", {**params, "seeds": [1, 2, 3]}, run_dir=run_dir)


def test_an_mlm_models_seconds_add_up_over_the_sessions_that_trained_it(tmp_path, monkeypatch):
    """A cell's MLM stopped at a session's end and resumed from its checkpoint recorded only the last session's
    seconds (Table 5, the time plot, lineage and the time limit's estimates all read them)."""
    from core.experiments.cells import MlmClock

    monkeypatch.setattr(MlmClock, "SAVE_EVERY", 0.0)
    first = MlmClock(tmp_path)
    first.tick()  # then the session ends: no finish
    so_far = json.loads((tmp_path / "seconds.partial.json").read_text())["seconds"]
    (tmp_path / "seconds.partial.json").write_text(json.dumps({"seconds": so_far + 600.0}))  # as if 10 min had run
    second = MlmClock(tmp_path)
    second.finish()
    assert json.loads((tmp_path / "seconds.json").read_text())["seconds"] >= 600.0
    assert not (tmp_path / "seconds.partial.json").exists()


def test_a_folder_with_no_finished_cell_takes_the_new_recipe(tmp_path):
    """The recipe check now runs before any cell: a run stopped before its first cell (a time limit no cell fits)
    locked its folder to that recipe, and a rerun with a lower max_steps was refused as "cells of another recipe"."""
    from core.experiments.records import check_recipe
    from core.runner.kinds import validate

    first = validate("experiment", {"mlm_config": {"max_steps": 400}})
    check_recipe(tmp_path, first, 24)
    again = validate("experiment", {"mlm_config": {"max_steps": 100}})
    check_recipe(tmp_path, again, 24)  # no cell holds the first recipe: taken
    assert json.loads((tmp_path / "recipe.json").read_text())["mlm_config"]["max_steps"] == 100
