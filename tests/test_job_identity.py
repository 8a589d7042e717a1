"""A job row names one process and one attempt: a pid the system gave to another program is not the job (reap marks
it failed, cancel signals nothing), a cancelled process still stopping cannot write over the attempt a Resume
started, a finished job cannot be cancelled, and out-of-range settings are refused at submit with the field's name.
Rows are written by hand here (no process is started), so nothing waits on time."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from core.data.workspace import Workspace
from core.errors import UserError
from core.runner import jobs, jobstore
from core.runner.kinds import validate

LINUX_PROC = Path("/proc/self/stat").exists()


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("NERSELECT_MAX_JOBS", "1")
    return Workspace(tmp_path / "ws")


def _row(ws: Workspace, **values) -> jobstore.Job:
    """A sleep job's row set by hand (never started: start=False)."""
    job = jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.0}, start=False)
    jobstore.update(ws, job.id, **values)
    return job


@pytest.mark.skipif(not LINUX_PROC, reason="process identity needs /proc")
def test_a_reused_pid_is_not_the_job(ws):
    """Found in review: liveness was `kill(pid, 0)` alone, so after a restart a job whose pid now belonged to
    another program stayed 'running' forever, and Cancel sent SIGTERM to that program's process group."""
    me = jobstore.process_start(os.getpid())
    assert me and jobstore.pid_alive(os.getpid(), me)
    assert not jobstore.pid_alive(os.getpid(), "another-boot:1")
    assert jobstore.pid_alive(os.getpid())  # a row from before the column: the plain check
    job = _row(ws, status="running", started=time.time() - 3600, attempts=1, pid=os.getpid(), pid_start="another-boot:1")
    reaped = jobstore.get_job(ws, job.id)
    assert reaped.status == "failed" and "exited without reporting" in reaped.error
    other = _row(ws, status="running", started=time.time() - 3600, attempts=1, pid=os.getpid(),
                 pid_start="another-boot:1")
    with pytest.raises(UserError, match="already failed"):  # reaped on the way in: no signal sent (we are alive)
        jobs.cancel(ws, other.id)
    assert jobstore.update(ws, other.id, pid=os.getpid()) and jobstore.get_job(ws, other.id).pid_start == me


def test_a_stale_attempt_writes_nothing(ws):
    """Found in review: a cancelled process that was still stopping wrote 'cancelled' over the attempt that Resume had
    started meanwhile. Its writes are tied to its attempt; its next progress report stops it."""
    job = _row(ws, status="running", started=time.time(), attempts=2, pid=None)
    assert not jobstore.update(ws, job.id, 1, status="cancelled", message="late")
    assert jobstore.get_job(ws, job.id).status == "running"
    stale = jobs.JobContext(ws, job.run_dir, job.id, attempt=1)
    with pytest.raises(jobstore.JobCancelled):
        stale.progress(1.0, "late")
    assert jobstore.get_job(ws, job.id).message != "late"
    current = jobs.JobContext(ws, job.run_dir, job.id, attempt=2)
    current.progress(1.0, "mine")
    assert jobstore.get_job(ws, job.id).message == "mine"


def test_cancel_of_a_finished_job_says_so_and_changes_nothing(ws):
    job = _row(ws, status="done", progress=1.0, finished=time.time())
    with pytest.raises(UserError, match=f"job {job.id} is already done"):
        jobs.cancel(ws, job.id)
    assert jobstore.get_job(ws, job.id).status == "done"


@pytest.mark.skipif(not LINUX_PROC, reason="process identity needs /proc")
def test_resume_waits_for_a_process_still_stopping(ws, monkeypatch):
    monkeypatch.setattr(jobs, "STOP_WAIT_S", 0.0)
    job = _row(ws, status="cancelled", attempts=1, finished=time.time(), pid=os.getpid())  # "still alive": us
    with pytest.raises(UserError, match="still stopping"):
        jobs.resume(ws, job.id)
    assert jobstore.get_job(ws, job.id).status == "cancelled"
    jobstore.update(ws, job.id, pid=None)
    assert jobs.resume(ws, job.id).status in ("queued", "running", "done")


@pytest.mark.parametrize(("kind", "params", "said"), [
    ("project", {"fit_points": 0}, "field 'fit_points' must be at least 4, got 0"),
    ("similarity", {"sources": ["a"], "targets": ["b"], "wvv_dim": -3}, "field 'wvv_dim' must be at least 1, got -3"),
    ("augment", {"model": "m", "random_rate": 0}, "field 'random_rate' must be above 0, got 0"),
    ("augment", {"model": "m", "min_confidence": 1.5}, "field 'min_confidence' must be at most 1, got 1.5"),
    ("predict", {"model": "m", "corpus": "c", "batch_size": 0}, "field 'batch_size' must be at least 1, got 0"),
    ("selftrain", {"model": "m", "lc": "lc", "dev": "dev", "ratio": 0.0}, "field 'ratio' must be above 0, got 0.0"),
])
def test_out_of_range_settings_are_refused_at_submit(ws, kind, params, said):
    with pytest.raises(UserError, match=said.replace("(", r"\(")):
        jobs.submit(ws, kind, params, start=False)
    assert jobs.list_jobs(ws) == []
    validate(kind, {k: v for k, v in params.items() if k in ("model", "corpus", "sources", "targets", "lc", "dev")})
