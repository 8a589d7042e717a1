"""A workspace written by the previous version (the layout before issue 21's redesign; commit bd2c8c0,
made by tests/fixtures/make_workspace_v1.py) opens: its corpora, jobs, runs, selections and reviews are listed,
and the jobs' stored params still validate into today's params dataclasses."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from core.data import selection_store as store
from core.data.workspace import Workspace
from core.review.store import ReviewStore, list_review_sets
from core.runner import jobs
from core.runner.jobview import describe_job
from core.train import lineage

FIXTURE = Path(__file__).parent / "fixtures" / "workspace_v1.tar.gz"


@pytest.fixture
def old_ws(tmp_path) -> Workspace:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    return Workspace(tmp_path / "ws")  # moved: its job rows name the folder it was written in


def test_corpora_jobs_and_their_params(old_ws):
    assert {c.name for c in old_ws.list_corpora()} == {f"v1-{n}" for n in ("tc", "dc", "lc", "dev", "test")}
    listed = jobs.list_jobs(old_ws)
    assert sorted(j.kind for j in listed) == ["ner", "select", "sleep"]
    for job in listed:
        assert job.status == "done" and job.params_error is None
        assert job.spec is not None
        assert job.run_dir.is_dir(), "a moved workspace finds its run folders"
    ner = next(j for j in listed if j.kind == "ner")
    assert describe_job(ner).startswith("NER training · train v1-lc")
    assert ner.spec.preset == "tiny"


def test_runs_selections_and_reviews(old_ws):
    runs = lineage.list_runs(old_ws)
    assert [r.kind for r in runs] == ["ner"] and runs[0].lineage.lc.name == "v1-lc"
    assert lineage.model_preset(old_ws.runs_dir / runs[0].id / "model") == "tiny"
    selections = store.list_selections(old_ws)
    assert [s.strategy for s in selections] == ["random"]
    key = selections[0].key
    assert len(list(store.selection_texts(old_ws, key[:8]))) == 20
    assert len(store.selected_indices(old_ws, key)) == 20
    assert "v1-review-set" in list_review_sets(old_ws)
    items = ReviewStore(old_ws, "v1-review-set").items()
    assert {i: it.status for i, it in items.items()} == {0: "accepted", 1: "rejected"}
