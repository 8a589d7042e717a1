"""Issue 24: Results' test-set predictions and Inspect's / Adapt's model pickers listed only app-started NER runs;
experiment and compare-sources cells (and self-training) were missing. They are read from the run index now."""

from __future__ import annotations

import json

from core.data.workspace import Workspace
from core.review.predictions import list_ner_models
from core.train.lineage import CorpusStamp, Lineage, record_run
from core.train.ner_predict import runs_with_test_predictions


def test_experiment_cells_and_self_training_are_listed_wherever_they_were_written(tmp_path):
    ws = Workspace(tmp_path / "ws")
    made = {}
    for run_id, kind, folder in (("exp.dsir.s1", "ner", tmp_path / "out" / "exp" / "cells" / "dsir" / "s1"),
                                 ("st-1", "selftrain", ws.runs_dir / "job-1" / "selftrained" / "round-1")):
        model = folder / "ner"
        model.mkdir(parents=True)
        (model / "ner_config.json").write_text(json.dumps({"labels": ["O", "B-PER"], "base_model": "default"}))
        (folder / "test_predictions.jsonl").write_text("")
        record_run(ws, run_id, kind, Lineage(), folder, model, f1=0.5)
        made[run_id] = model
    listed = {r["id"]: r for r in runs_with_test_predictions(ws)}
    assert set(listed) == {"exp.dsir.s1", "st-1"} and listed["st-1"]["kind"] == "selftrain"
    assert set(made.values()) <= set(list_ner_models(ws))


def test_lineage_tables_show_counts_as_counts_and_missing_values_as_a_dash(tmp_path, monkeypatch):
    """Issue 24: tables showed raw None and 150.0 (an integer column with a missing value turns into floats)."""
    from core.data.demo import write_demo_workspace
    from tests.apptest import open_app

    ws = write_demo_workspace(tmp_path / "ws", dc_size=200)
    lin = Lineage(lc=CorpusStamp("demo-lc", "h1", sentences=150), test=CorpusStamp("demo-test", "h2"))
    record_run(ws, "ner-x", "ner", lin, tmp_path / "run", None, f1=0.5)
    at = open_app(ws.root, monkeypatch, "views/results.py")
    data = next(df.value for df in at.dataframe if getattr(df, "key", "") == "lineage_data" or
                ("role" in getattr(df.value, "columns", []) and "sentences" in df.value.columns))
    shown = dict(zip(data["role"], data["sentences"].astype(str)))
    assert shown == {"LC": "150", "TEST": "—"}, shown


def test_model_pickers_name_models_by_their_job(tmp_path):
    """Issue 43.15: every fine-tuned model folder ends in '.../model', so pickers showing the last parts looked alike;
    they show the job that made each model, and labels stay unique."""
    from core.data.workspace import Workspace
    from core.runner import jobs
    from core.runner.jobview import model_labels

    ws = Workspace(tmp_path / "ws")
    a = jobs.submit(ws, "ner", {"train": "lc", "dev": "dev", "config": {"seed": 1}}, start=False)
    b = jobs.submit(ws, "ner", {"train": "lc", "dev": "dev", "config": {"seed": 2}}, start=False)
    models = [str(a.run_dir / "model"), str(b.run_dir / "model"), str(tmp_path / "elsewhere" / "model")]
    labels = model_labels(models, jobs.list_jobs(ws))
    assert len(set(labels.values())) == 3
    assert labels[models[0]].startswith("NER") and f"({a.id}/model)" in labels[models[0]]
    assert labels[models[2]] == models[2]
