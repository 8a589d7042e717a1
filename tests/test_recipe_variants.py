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
    made = variant_comparisons(results, n_boot=500)
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
