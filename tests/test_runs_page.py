"""The Runs page (Streamlit AppTest): job list, curves, results tables and the prediction viewer
render from real job rows; the NER form submits a job with the chosen parameters."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core import jobs
from core.workspace import Workspace
from tests.apptest import open_app


@pytest.fixture(scope="module")
def runs_ws(tmp_path_factory):
    from core.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("runsws")
    write_demo_workspace(root)
    ws = Workspace(root)
    ner = jobs.submit(ws, "ner", {"train": "lc", "dev": "dev", "test": "test"}, start=False)
    with open(ner.run_dir / "metrics.jsonl", "w") as fh:
        for step in range(1, 6):
            fh.write(json.dumps({"step": step, "epoch": 1, "loss": 5.0 / step, "lr": 1e-3, "sentences_per_s": 10.0}) + "\n")
        fh.write(json.dumps({"step": 5, "epoch": 1, "dev_f1": 0.4}) + "\n")
    pred = {"tokens": ["Abba", "played", "Stockholm"], "tags": ["B-band", "O", "O"], "spans": [{"start": 0, "end": 1, "type": "band"}],
            "c1": 0.8, "c2": 0.9, "n_entities": 1,
            "gold_spans": [{"start": 0, "end": 1, "type": "band"}, {"start": 2, "end": 3, "type": "location"}]}
    (ner.run_dir / "test_predictions.jsonl").write_text(json.dumps(pred) + "\n")
    jobs._update(ws, ner.id, status="done", progress=1.0, result=json.dumps({"test": {"f1": 0.667}, "steps": 5}))
    exp = jobs.submit(ws, "experiment", {"domain": "music"}, start=False)
    cells = [{"row": r, "seed": s, "f1": f, "per_type": {"band": {"f1": f}}}
             for r, s, f in (("none", 1, 0.5), ("none", 2, 0.6), ("dsir", 1, 0.7), ("dsir", 2, 0.72))]
    jobs._update(ws, exp.id, status="done", progress=1.0, result=json.dumps({"domain": "music", "cells": cells}))
    return root


def _runs_page(root, monkeypatch) -> AppTest:
    return open_app(root, monkeypatch, "views/runs.py")


def test_runs_page_shows_jobs_tables_and_predictions(runs_ws, monkeypatch):
    at = _runs_page(runs_ws, monkeypatch)
    tables = [df.value for df in at.dataframe]
    results = next(t for t in tables if "music" in getattr(t, "columns", []))
    assert list(results.index) == ["none", "dsir"] and results.loc["dsir", "music"] == "71.00 ± 1.41"
    per_type = next(t for t in tables if "dsir" in getattr(t, "columns", []) and "band" in getattr(t, "index", []))
    assert per_type.loc["band", "none"] == 55.0
    htmls = " ".join(h.proto.body for h in at.get("html"))
    assert "Abba" in htmls and "∅" in htmls  # the missed gold span is marked
    assert at.selectbox(key="runs_selected").value is not None


def test_ner_form_submits_a_job(runs_ws, monkeypatch):
    real_submit = jobs.submit
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True: real_submit(ws, kind, params, start=False))
    at = _runs_page(runs_ws, monkeypatch)
    at.number_input(key="ner_epochs").set_value(7)
    at.button(key="FormSubmitter:ner_form-Start NER training").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = jobs.list_jobs(Workspace(runs_ws), "ner")[0]
    assert job.params["config"]["epochs"] == 7 and job.params["preset"] == "demo" and job.params["train"]
    jobs.delete(Workspace(runs_ws), job.id)


def test_resume_and_delete_buttons(runs_ws, monkeypatch):
    ws = Workspace(runs_ws)
    monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)  # keep the row queued, start nothing
    job = jobs.submit(ws, "mlm", {"train": ["tc"]}, start=False)
    jobs._update(ws, job.id, status="failed", error="process 1 exited without reporting")
    at = _runs_page(runs_ws, monkeypatch)
    at.selectbox(key="runs_selected").select(job.id).run()
    assert any("exited without reporting" in e.value for e in at.error)
    at.button(key=f"resume_{job.id}").click().run()
    assert not at.exception and jobs.get_job(ws, job.id).status == "queued"
    at.button(key=f"delete_{job.id}").click().run()
    assert not at.exception and job.id not in [j.id for j in jobs.list_jobs(ws)]
