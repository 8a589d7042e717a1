"""Disk use, and freeing the MLM snapshots a finished run's checkpoint picks did not choose (core.experiments.disk):
only in finished runs, never the chosen one, nothing for an annotator, and a later pick in a freed folder refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.access import AccessDenied, Actor, Role
from core.data.workspace import Workspace
from core.errors import UserError
from core.experiments.disk import disk_use, folder_bytes, format_disk_use, free_snapshots, scan_snapshots
from core.runner import jobs, jobstore
from core.train.checkpoint_pick import FREED_FILE, candidates
from tests.ner_data import single_thread_torch  # noqa: F401 - fixture
from tests.test_experiment import corpora  # noqa: F401 - fixture

WEIGHTS = 50_000  # bytes of a fake snapshot's weights


def fake_run(run_dir: Path, chosen: str | None = "step-2", finished: bool = True, steps=("step-2", "step-4")) -> Path:
    """A run folder as an experiment leaves it: params.json, a pretrain MLM with kept snapshots, a pick, result.json."""
    mlm = run_dir / "pretrain" / "tapt" / "seed-1" / "mlm"
    snaps = mlm / "phase-tapt" / "snapshots"
    for step in steps:
        (snaps / step).mkdir(parents=True)
        (snaps / step / "config.json").write_text("{}")
        (snaps / step / "model.safetensors").write_bytes(b"\0" * WEIGHTS)
    (run_dir / "params.json").write_text(json.dumps({"kind": "experiment", "params": {}}))
    (run_dir / "log.txt").write_text("[00:00:00] done\n")
    if chosen is not None:
        path = str(snaps / chosen) if chosen != "base" else "default"
        (mlm / "pick.json").write_text(json.dumps({"chosen": {"label": chosen, "path": path}}))
    if finished:
        (run_dir / "result.json").write_text("{}")
        os.utime(run_dir / "log.txt", (1_000_000, 1_000_000))  # the log was written before the result, as a run does
    return snaps


def test_unused_snapshots_of_a_finished_run_are_freed_and_the_chosen_one_stays(tmp_path):
    ws = Workspace(tmp_path / "ws")
    snaps = fake_run(ws.runs_dir / "exp")
    report = disk_use(ws)
    run_row = next(r for r in report["rows"] if r["what"] == "run: exp")
    assert run_row["freeable_bytes"] == folder_bytes(snaps / "step-4") > WEIGHTS
    assert report["freeable_bytes"] == run_row["freeable_bytes"] and report["total_bytes"] >= run_row["bytes"]
    assert "runs free-snapshots" in format_disk_use(report)

    dry = free_snapshots(ws, dry_run=True)
    assert dry["freed_bytes"] == run_row["freeable_bytes"] and (snaps / "step-4").is_dir()
    done = free_snapshots(ws)
    assert done["freed"] == [{"folder": str(snaps), "steps": ["step-4"], "bytes": run_row["freeable_bytes"]}]
    assert (snaps / "step-2" / "model.safetensors").is_file() and not (snaps / "step-4").exists()
    marker = json.loads((snaps / FREED_FILE).read_text())
    assert marker["freed"] == ["step-4"] and marker["kept"] == ["step-2"] and "local" in marker["by"]
    assert free_snapshots(ws)["freed_bytes"] == 0 and disk_use(ws)["freeable_bytes"] == 0  # nothing twice
    with pytest.raises(UserError, match="deleted to free disk space.*new run folder"):
        candidates("default", snaps)  # a new pick here would choose among fewer candidates than the run's picks did


def test_a_pick_that_kept_the_base_frees_every_snapshot(tmp_path):
    ws = Workspace(tmp_path / "ws")
    snaps = fake_run(ws.runs_dir / "exp", chosen="base")
    assert free_snapshots(ws)["freed"][0]["steps"] == ["step-2", "step-4"]
    assert not [p for p in snaps.iterdir() if p.name.startswith("step-")]


@pytest.mark.parametrize("state, why", [
    ("unfinished", "has not finished"),
    ("continued", "continued after its result"),
    ("no pick", "no pick has been made"),
    ("active", "queued or running"),
    ("failed job", "its job is failed"),
])
def test_snapshots_a_run_may_still_read_are_kept(tmp_path, monkeypatch, state, why):
    ws = Workspace(tmp_path / "ws")
    run_dir = ws.runs_dir / "exp"
    if state in ("active", "failed job"):  # a queued job working in that folder, or one a resume would continue
        monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)
        job = jobs.submit(ws, "sleep", {"steps": 1}, start=False)
        run_dir = job.run_dir
        if state == "failed job":
            jobstore.update(ws, job.id, status="failed", error="killed")
    snaps = fake_run(run_dir, chosen=None if state == "no pick" else "step-2", finished=state != "unfinished")
    if state == "continued":
        (run_dir / "log.txt").write_text("[00:00:01] resumed\n")
        os.utime(run_dir / "result.json", (1_000_000, 1_000_000))
    (found,) = scan_snapshots(ws)
    assert why in found.why_kept and found.unused_bytes > 0
    result = free_snapshots(ws)
    assert result["freed"] == [] and why in result["kept"][0]["why"] and (snaps / "step-4").is_dir()
    report = disk_use(ws)
    assert report["freeable_bytes"] == 0 and why in report["kept"][0]["why"] and report["kept"][0]["bytes"] == found.unused_bytes
    assert why in format_disk_use(report)


def test_a_done_job_frees_although_the_runner_logged_after_its_result(tmp_path, monkeypatch):
    ws = Workspace(tmp_path / "ws")
    monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)
    job = jobs.submit(ws, "sleep", {"steps": 1}, start=False)
    snaps = fake_run(job.run_dir)
    (job.run_dir / "log.txt").write_text("[00:00:01] job finished\n")  # newer than result.json, as _run_job leaves it
    assert "queued or running" in scan_snapshots(ws)[0].why_kept
    jobstore.update(ws, job.id, status="done")
    (label,) = [r["what"] for r in disk_use(ws)["rows"] if r["what"].startswith("run: ")]
    assert label.endswith(f"({job.id})") and label != f"run: ({job.id})"  # named as the job list names it
    assert free_snapshots(ws)["freed"][0]["steps"] == ["step-4"] and (snaps / "step-2").is_dir()


def test_an_annotator_may_not_free_disk_space_and_nothing_goes(tmp_path):
    ws = Workspace(tmp_path / "ws")
    snaps = fake_run(ws.runs_dir / "exp")
    with pytest.raises(AccessDenied, match="may not free disk space"):
        free_snapshots(ws, actor=Actor("ann", Role.ANNOTATOR))
    assert (snaps / "step-4").is_dir() and not (snaps / FREED_FILE).exists()


def test_a_run_folder_outside_the_workspace_is_reported_and_freed_with_also(tmp_path):
    from core.cli import main

    ws = tmp_path / "ws"
    snaps = fake_run(tmp_path / "study-out")
    assert main(["--workspace", str(ws), "runs", "disk", "--also", str(tmp_path / "study-out"), "--json"]) == 0
    assert main(["--workspace", str(ws), "runs", "free-snapshots"]) == 0
    assert (snaps / "step-4").is_dir()  # not found without --also
    assert main(["--workspace", str(ws), "runs", "free-snapshots", "--also", str(tmp_path / "study-out")]) == 0
    assert not (snaps / "step-4").exists() and (snaps / "step-2").is_dir()


def test_a_real_experiment_keeps_its_results_after_freeing_and_refuses_a_new_pick(tmp_path, corpora, tiny_bert_dir,  # noqa: F811
                                                                                monkeypatch, capsys):
    """End to end: a tiny experiment with checkpoint pick, its snapshots freed from the CLI; the same run resumes
    with nothing to train and the same F1, and a new LC size (which would pick again) stops with the reason."""
    from core.cli import main
    from core.experiments.cells import CellTrainer

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    # planted probe scores (the real probe is tested in test_experiment): the first snapshot wins
    monkeypatch.setattr(CellTrainer, "short_fine_tune", lambda self, cand, work, seed, lc: 0.9 if cand.label == "step-2" else 0.5)
    ws = Workspace(tmp_path / "ws")
    params = {**corpora, "baselines": ["tapt"], "seeds": [1], "model": str(tiny_bert_dir), "preset": "tiny",
              "domain": "toy", "pick_checkpoint": 2, "mlm_config": {"epochs": 100}}
    run_dir = ws.runs_dir / "exp"
    first = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)
    assert first["cells"][0]["pick"]["chosen"] == "step-2"
    assert main(["--workspace", str(ws.root), "runs", "disk"]) == 0
    assert "runs free-snapshots" in capsys.readouterr().out
    assert main(["--workspace", str(ws.root), "runs", "free-snapshots"]) == 0
    assert "freed" in capsys.readouterr().out
    snaps = run_dir / "pretrain" / "tapt" / "seed-1" / "mlm" / "phase-tapt" / "snapshots"
    assert sorted(p.name for p in snaps.iterdir()) == [FREED_FILE, "step-2"]

    again = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)
    assert again["cells"][0]["f1"] == first["cells"][0]["f1"] and again["cells"][0]["encoder"].endswith("step-2")
    with pytest.raises(UserError, match="deleted to free disk space"):
        jobs.run_inline(ws, "experiment", {**params, "lc_sizes": [12]}, run_dir=run_dir)


def test_the_runs_page_measures_and_frees_through_the_same_core_functions(tmp_path, monkeypatch):
    from tests.apptest import open_app

    ws = Workspace(tmp_path / "ws")
    snaps = fake_run(ws.runs_dir / "exp")
    at = open_app(ws.root, monkeypatch, "views/runs.py")
    assert not [b for b in at.button if b.key == "disk_free"]  # nothing measured yet, nothing offered
    at.button(key="disk_measure").click().run()
    assert not at.exception, [e.value for e in at.exception]
    rows = next(df.value for df in at.dataframe if "place" in getattr(df.value, "columns", []))
    assert "run: exp" in list(rows["place"]) and (snaps / "step-4").is_dir()
    at.button(key="disk_free").click().run()
    assert not at.exception and not (snaps / "step-4").exists() and (snaps / "step-2").is_dir()
    assert any("freed" in s.value for s in at.success)


def test_an_unreadable_pick_keeps_every_snapshot(tmp_path):
    ws = Workspace(tmp_path / "ws")
    snaps = fake_run(ws.runs_dir / "exp")
    (snaps.parent.parent / "pick.lc12.json").write_text('{"scores": []}')  # no "chosen": which one it used is unknown
    assert free_snapshots(ws)["freed"] == [] and "unreadable" in scan_snapshots(ws)[0].why_kept
