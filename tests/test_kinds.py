"""One row per job kind (core.runner.kinds): every consumer reads it, so every row must hold together."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing

import pytest

from core.errors import UserError
from core.runner import jobs, jobstore, jobview
from core.runner.kinds import KINDS, lane, validate
from core.runner.params import field_default


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_row_holds_together(name):
    kind = KINDS[name]
    module_name, func_name = kind.function.split(":")
    fn = getattr(importlib.import_module(module_name), func_name)
    first, ctx = list(inspect.signature(fn).parameters)[:2]
    hints = typing.get_type_hints(fn, globalns={**vars(importlib.import_module(module_name)),
                                                 kind.params.__name__: kind.params, "JobContext": jobs.JobContext})
    assert hints[first] is kind.params, f"{kind.function} must take {kind.params.__name__}"
    assert ctx == "ctx"
    assert kind.lane in ("interactive", "training")
    assert kind.label and kind.records
    fields = {f.name for f in dataclasses.fields(kind.params)}
    assert set(kind.inputs) <= fields, f"{name}: inputs {set(kind.inputs) - fields} are not params"


def test_the_runner_and_the_pages_read_the_row():
    assert lane("select") == "interactive" and lane("ner") == "training"
    job = jobstore.Job("20250101-000000-abc123", "compare-sources", {"sources": ["a", "b"], "target": "tc"}, "queued",
                   None, 0.0, "", 0.0, None, None, None, ".", None, 0)
    # read through the typed params, as a submitted row stores them: defaults filled in
    assert jobview.describe_job(job) == "Compare sources · sources a, b · target tc · seeds 1 · preset demo"
    broken = dataclasses.replace(job, params={"sources": 3}, params_error="stored with schema 1; sources must be a list")
    assert jobview.describe_job(broken) == "Compare sources · (its settings no longer validate)"


def test_a_stored_row_a_newer_check_refuses_is_listed_not_fatal(tmp_path):
    """A select row stored before options were checked against their strategy (dsir with k=5): its listing says its
    settings no longer validate instead of raising in every page and CLI listing that reads it."""
    from core.data.workspace import Workspace
    from core.runner import jobs

    ws = Workspace(tmp_path / "ws")
    job = jobs.submit(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "knn", "budget": 5, "options": {"k": 5}},
                      start=False)
    with jobstore.connect(ws) as db:
        params = jobstore.encode({**job.params, "strategy": "dsir"}, "params")
        db.execute("UPDATE jobs SET params = ? WHERE id = ?", (params, job.id))
    (listed,) = jobs.list_jobs(ws, "select")
    assert "'k' is not read by dsir" in listed.params_error
    assert jobview.describe_job(listed) == "Selection · (its settings no longer validate)"
    with pytest.raises(UserError, match="'k' is not read by dsir"):
        _ = listed.spec


def test_validation_names_the_field():
    with pytest.raises(UserError, match="'budget'"):
        validate("select", {"tc": "tc", "dc": "dc", "strategy": "random"})
    with pytest.raises(UserError, match="field 'seed' must be an integer"):
        validate("select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 5, "seed": "x"})
    with pytest.raises(UserError, match="unknown job kind"):
        validate("nope", {})
    assert validate("sleep", {}).steps == field_default(KINDS["sleep"].params, "steps")


def test_seeds_and_baselines_that_would_fail_inside_the_job_are_refused_at_submit():
    """A seed of -1 trained every baseline and then failed in numpy's generator for the random row, naming nothing;
    an empty seed list or an unknown baseline failed only once the job had read its corpora."""
    for kind, params in (("experiment", {"seeds": [1, -1], "strategies": ["random"]}),
                         ("compare-sources", {"sources": ["a"], "seeds": [-1]}),
                         ("select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 5, "seed": -1})):
        with pytest.raises(UserError, match=f"{kind} params: field 'seeds?'.* at least 0, got -1"):
            validate(kind, params)
    with pytest.raises(UserError, match="seeds is empty"):
        validate("experiment", {"seeds": []})
    with pytest.raises(UserError, match="unknown baseline.*'nonee': expected none, tapt, dapt, tapt\\+dapt"):
        validate("experiment", {"baselines": ["nonee"]})
    assert validate("experiment", {"baselines": [" None", "TAPT", ""]}).baselines == ["none", "tapt"]


def test_a_misspelt_choice_or_threshold_is_refused_at_submit_naming_the_field():
    """A sampling mode, confidence measure, pooling or self-training threshold out of its choices was taken at submit
    and failed once a model had loaded (a threshold of 'abc' as a bare ValueError)."""
    selftrain = {"model": "m", "lc": "lc", "dev": "dev"}
    for kind, params, said in (("selftrain", {**selftrain, "measure": "c3"}, "'measure' must be one of c1, c2"),
                               ("selftrain", {**selftrain, "threshold": "abc"}, "'threshold': .*'auto' or a number"),
                               ("selftrain", {**selftrain, "threshold": 7}, "'threshold': .*got 7"),
                               ("augment", {"model": "m", "sampling": "entiti"}, "'sampling' must be one of entity"),
                               ("augment", {"model": "m", "criterion": "best"}, "'criterion' must be one of top, joint"),
                               ("embed", {"corpus": "c", "pooling": "max"}, "'pooling' must be one of mean, model")):
        with pytest.raises(UserError, match=f"{kind} params: field {said}"):
            validate(kind, params)
    assert validate("selftrain", {**selftrain, "threshold": 0.5}).threshold == 0.5


def test_a_missing_model_folder_is_refused_at_submit(tmp_path):
    """Issue 24: a mistyped model folder failed 5 s into the job (and offered Resume); now submit refuses it, and
    stores nothing. 'default' and Hugging Face ids ('org/name') are not paths and pass."""
    from core.data.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    with pytest.raises(UserError, match="model '/no/such/model' is not a folder"):
        jobs.submit(ws, "ner", {"train": "lc", "model": "/no/such/model"}, start=False)
    with pytest.raises(UserError, match="ner_model"):
        jobs.submit(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "ner", "budget": 5, "ner_model": "./gone"}, start=False)
    assert jobs.list_jobs(ws) == []
    folder = tmp_path / "model"
    folder.mkdir()
    for model in ("default", "dslim/bert-base-NER", str(folder)):
        assert jobs.submit(ws, "ner", {"train": "lc", "model": model}, start=False).status == "queued"

    # an out folder holding another run's model is replaced only when asked: its lineage would describe the new one
    (folder / "config.json").write_text("{}")
    with pytest.raises(UserError, match="output folder .* already exists and is not empty.*overwrite"):
        jobs.submit(ws, "ner", {"train": "lc", "out": str(folder)}, start=False)
    assert jobs.submit(ws, "ner", {"train": "lc", "out": str(folder), "overwrite": True}, start=False).status == "queued"
    assert jobs.submit(ws, "ner", {"train": "lc", "out": str(tmp_path / "new")}, start=False).status == "queued"


def test_a_bad_training_config_is_refused_at_submit_without_torch(tmp_path):
    """Issue 44: a config dict (ner/mlm/selftrain `config`, experiment `mlm_config`/`ner_config`) was checked only
    inside the running job; now submit refuses an unknown setting, a wrong type or an out-of-range value, names the
    field and the setting, and stores nothing. Checking imports no torch (the pages validate too)."""
    import subprocess
    import sys

    from core.data.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    cases = [("ner", {"config": {"lrr": 1e-4}}, "field 'config': unknown NER setting.*lrr"),
             ("ner", {"config": {"epochs": 2.5}}, "epochs must be an integer, got 2.5"),
             ("ner", {"config": {"betas": [0.9]}}, "betas must be a list of 2"),
             ("mlm", {"config": {"lr": "fast"}}, "field 'config': lr must be a number"),
             ("experiment", {"mlm_config": {"layer_lr_decay": 2}}, "field 'mlm_config': layer_lr_decay must be in"),
             ("experiment", {"ner_config": {"patience": "x"}}, "field 'ner_config': patience"),
             ("selftrain", {"model": "default", "lc": "lc", "dev": "dev", "config": {"nope": 1}}, "unknown NER setting")]
    for kind, params, message in cases:
        with pytest.raises(UserError, match=message):
            jobs.submit(ws, kind, params, start=False)
    assert jobs.list_jobs(ws) == []
    assert validate("ner", {"config": {"lr": 1e-4, "betas": [0.9, 0.99], "max_steps": None}}).config["lr"] == 1e-4
    assert {k: v.config_fields for k, v in KINDS.items() if v.config_fields} == {
        "mlm": ("config",), "ner": ("config",), "experiment": ("mlm_config", "ner_config"), "selftrain": ("config",)}
    code = ("import sys; from core.runner.kinds import validate; "
            "validate('experiment', {'mlm_config': {'lr': 1e-4}, 'ner_config': {'epochs': 3}}); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_result_panel_belongs_to_a_kind():
    import ui_runs

    assert set(ui_runs.RESULT_PANELS) <= set(KINDS)


def test_training_counts_of_zero_are_refused_at_submit():
    """`ner train --epochs 0` and a batch size of 0 trained nothing (or one sentence at a time) and said "model
    written"; a max_steps of -3 was refused as a head warm-up that covers the run."""
    for kind, config, said in (("ner", {"epochs": 0}, "epochs must be at least 1"),
                               ("ner", {"batch_size": 0}, "batch_size must be at least 1"),
                               ("mlm", {"batch_size": 0}, "batch_size must be at least 1"),
                               ("mlm", {"max_steps": -3}, "max_steps must be at least 1 when set")):
        with pytest.raises(UserError, match=f"{kind} params: field 'config': {said}"):
            validate(kind, {"config": config})
