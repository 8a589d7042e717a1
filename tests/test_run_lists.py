"""Issue 24: Results' test-set predictions and Inspect's / Adapt's model pickers listed only app-started NER runs;
experiment and compare-sources cells (and self-training) were missing. They are read from the run index now."""

from __future__ import annotations

import json

from core.data.workspace import Workspace
from core.review.predictions import list_ner_models
from core.train.lineage import Lineage, record_run
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
