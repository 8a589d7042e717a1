"""A workspace's own recipe variants (issue 46's knobs on the user's task): `experiment --mlm KEY=VALUE` and the Runs
page's MLM settings make a variant, and the Results page and `python -m core compare-recipes` test it, row by row,
against the default recipe's run of the same task and device (core.experiments.decision.variant_comparisons)."""

from __future__ import annotations

import json

import pytest

from core.experiments.decision import variant_comparisons
from core.experiments.records import ExperimentResult
from tests.test_decision import DEFAULT, _run

RECIPE = {"model": "default", "preset": "study", "pick_checkpoint": 4}
BETTER = {**DEFAULT, "tapt": 0.75}


def _result(domain: str, mlm: dict | None, hits: dict[str, float], device: str = "cpu", partial: bool = False) -> dict:
    run = _run(domain, mlm, hits, device=device)
    return {"domain": domain, "cells": [c.to_dict() for c in run.cells], "recipe": {**RECIPE, "mlm_config": mlm},
            "partial": partial}


def test_each_variant_is_tested_against_its_own_default_and_the_rest_is_named():
    fewer = _result("music", None, {"none": 0.5, "tapt": 0.55})  # an earlier, smaller run of the default: not used
    results = [ExperimentResult.from_dict(r) for r in (
        fewer, _result("music", None, DEFAULT), _result("music", {"lr": 5e-5}, BETTER),
        _result("ai", {"l2sp": 0.1}, BETTER), _result("music", {"head_warmup_steps": 100}, BETTER, device="cuda"))]
    old = ExperimentResult.from_dict({**_result("music", None, DEFAULT), "recipe": None, "job": "old-run"})
    made = variant_comparisons([*results, old], n_boot=500)
    assert made.without_recipe == ["music · old-run"]  # a folder from before recipe.json: named, not guessed
    rows = {(r["variant"], r["row"]): r for r in made.rows()}
    assert set(rows) == {("lr=5e-05", "tapt"), ("lr=5e-05", "cosine")}  # none does not pretrain: never compared
    assert rows["lr=5e-05", "tapt"]["verdict"] == "better" and rows["lr=5e-05", "tapt"]["difference"] > 10
    assert rows["lr=5e-05", "cosine"]["verdict"] == "no difference shown"
    assert made.without_default == ["l2sp=0.1 on ai"]
    assert made.unpaired == ["head_warmup_steps=100 on music: ran on cuda (bf16), its default on cpu (fp32)"]
    one_seed = ExperimentResult.from_dict({**_result("music", {"lr": 5e-5}, BETTER), "cells": [
        c for c in _result("music", {"lr": 5e-5}, BETTER)["cells"] if c["seed"] == 1]})
    alone = variant_comparisons([results[1], one_seed], n_boot=200).rows()
    assert {r["verdict"] for r in alone} == {"too few seeds"}  # one seed: shown, never claimed


def test_a_variant_pairs_only_with_its_default_of_the_same_task_and_sweep_point():
    """Two tasks may share a domain name, and a sweep holds a row at several SC budgets: a variant's dsir at one
    budget is paired with the default's dsir at that budget, and a variant of another task (other corpora) is not
    paired at all. The main results table keeps a variant in a column of its own."""
    from core.experiments.experiment import results_table

    def swept(mlm, hits, budgets, corpora="a"):
        r = _result("music", mlm, hits)
        r["corpora"] = {"test": {"name": "test", "hash": corpora}}
        r["cells"] = [{**c, "budget": b} for c in r["cells"] for b in (budgets if c["row"] == "cosine" else [None])]
        return ExperimentResult.from_dict(r)

    default = swept(None, DEFAULT, [500, 2000])
    better_at_500 = swept({"lr": 5e-5}, {**DEFAULT, "cosine": 0.8}, [500])
    made = variant_comparisons([default, better_at_500, swept({"l2sp": 0.1}, BETTER, [500], corpora="b")], n_boot=500)
    rows = {(r["row"], r["domain"]): r["verdict"] for r in made.rows()}
    assert rows == {("tapt", "music"): "no difference shown", ("cosine", "music"): "better"}
    assert made.without_default == ["l2sp=0.1 on music"] and made.unpaired == []
    table = results_table([default, better_at_500])
    assert list(table.columns) == ["music", "music (lr=5e-05)"]


def test_a_variant_scored_on_other_test_sentences_is_named_by_the_workspace_and_refused_by_the_ablation():
    """The workspace comparison and the CrossNER ablation pair through one function (decision.knob_tests): the
    workspace names a pair it cannot pair and goes on; the ablation, whose runs share one TEST by construction,
    stops on it."""
    from core.errors import UserError
    from core.experiments.decision import knob_tests
    from core.experiments.statistics import decode_counts, encode_counts

    shorter = _result("music", {"lr": 5e-5}, BETTER)
    for c in shorter["cells"]:
        c["test_counts"] = encode_counts(decode_counts(c["test_counts"])[:-5])  # five TEST sentences fewer
    made = variant_comparisons([ExperimentResult.from_dict(r) for r in (_result("music", None, DEFAULT), shorter)],
                               n_boot=200)
    assert made.tests == [] and len(made.unpaired) == 2  # tapt and cosine, each named with its reason
    assert all(m.startswith("lr=5e-05 on music, ") and "different test sentences" in m for m in made.unpaired)
    with pytest.raises(UserError, match="different test sentences"):
        knob_tests([_run("music", None, DEFAULT), _shortened(_run("music", {"lr": 5e-5}, BETTER))], n_boot=200)


def _shortened(run):
    from dataclasses import replace

    from core.experiments.statistics import decode_counts, encode_counts

    return replace(run, cells=[replace(c, test_counts=encode_counts(decode_counts(c.test_counts)[:-5])) for c in run.cells])


@pytest.mark.parametrize("text, expected", [("lr=5e-5, head_warmup_steps=100", {"lr": 5e-5, "head_warmup_steps": 100}),
                                            ("", {})])
def test_typed_mlm_settings_become_the_experiment_recipe_and_bad_ones_are_refused(text, expected):
    from core.errors import UserError
    from core.recipes.configs import parse_settings
    from core.runner.kinds import validate

    assert parse_settings(text, "MLM settings") == expected
    spec = validate("experiment", {"mlm_config": expected or None})
    assert (spec.mlm_config or {}) == expected
    for bad in ({"lrr": 1}, {"mlm_probability": 2}):
        with pytest.raises(UserError):
            validate("experiment", {"mlm_config": bad})


def test_the_cli_and_the_results_page_show_the_same_comparison(tmp_path, monkeypatch, capsys):
    from core.cli import main
    from core.data.demo import write_demo_workspace
    from core.runner import jobs, jobstore
    from tests.apptest import open_app

    ws = write_demo_workspace(tmp_path / "ws", dc_size=100)
    for result in (_result("music", None, DEFAULT), _result("music", {"lr": 5e-5}, BETTER)):
        job = jobs.submit(ws, "experiment", {"domain": "music"}, start=False)
        jobstore.update(ws, job.id, status="done", progress=1.0, result=json.dumps(result))
    assert main(["compare-recipes", "--workspace", str(tmp_path / "ws"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [(r["variant"], r["row"], r["verdict"]) for r in printed["comparisons"]] == [
        ("lr=5e-05", "cosine", "no difference shown"), ("lr=5e-05", "tapt", "better")]
    assert main(["compare-recipes", "--workspace", str(tmp_path / "ws")]) == 0
    assert "lr=5e-05" in capsys.readouterr().out
    at = open_app(tmp_path / "ws", monkeypatch, "views/results.py")
    table = next(df.value for df in at.dataframe if "variant" in getattr(df.value, "columns", []))
    assert list(table["verdict"]) == [r["verdict"] for r in printed["comparisons"]]
    assert list(table["difference"]) == [r["difference"] for r in printed["comparisons"]]
