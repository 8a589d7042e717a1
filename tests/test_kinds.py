"""One row per job kind (core.runner.kinds): every consumer reads it, so every row must hold together."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing

import pytest

from core.errors import UserError
from core.runner import jobs, jobview
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
    job = jobs.Job("20250101-000000-abc123", "compare-sources", {"sources": ["a", "b"], "target": "tc"}, "queued",
                   None, 0.0, "", 0.0, None, None, None, ".", None, 0)
    assert jobview.describe_job(job) == "Compare sources · sources a, b · target tc"


def test_validation_names_the_field():
    with pytest.raises(UserError, match="'budget'"):
        validate("select", {"tc": "tc", "dc": "dc", "strategy": "random"})
    with pytest.raises(UserError, match="field 'seed' must be an integer"):
        validate("select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 5, "seed": "x"})
    with pytest.raises(UserError, match="unknown job kind"):
        validate("nope", {})
    assert validate("sleep", {}).steps == field_default(KINDS["sleep"].params, "steps")


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
