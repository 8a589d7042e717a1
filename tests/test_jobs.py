"""The job runner with real subprocesses: concurrency queueing, cancel, a vanished process,
kill -9 of a training job then resume from its checkpoint, an NER job end to end, and
atomic checkpoints."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from core.data.workspace import Workspace
from core.runner import jobs, jobstore
from core.train.training import Checkpointer
from tests.conftest import TOY_SENTENCES
from tests.ner_data import single_thread_torch, write_toy_conll  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("NERSELECT_MAX_JOBS", "1")
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return Workspace(tmp_path / "ws")


def _wait_for(predicate, timeout: float = 60, poll: float = 0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise TimeoutError("condition not reached")


def test_two_jobs_submitted_at_once_both_finish(ws):
    a = jobs.submit(ws, "sleep", {"steps": 3, "seconds": 0.05})
    b = jobs.submit(ws, "sleep", {"steps": 3, "seconds": 0.05})
    assert jobstore.get_job(ws, b.id).status in ("queued", "running")
    done = [jobs.wait(ws, j.id, timeout=120) for j in (a, b)]
    assert [j.status for j in done] == ["done", "done"] and all(j.result == {"steps": 3} for j in done)
    assert done[1].started >= done[0].started


def test_cancel_stops_the_process(ws):
    job = jobs.submit(ws, "sleep", {"steps": 600, "seconds": 0.1})
    running = _wait_for(lambda: (j := jobstore.get_job(ws, job.id)).pid and j.metrics() and j)
    jobs.cancel(ws, job.id)
    assert jobstore.get_job(ws, job.id).status == "cancelled"
    _wait_for(lambda: not jobstore.pid_alive(running.pid), timeout=30)
    steps = len(jobstore.get_job(ws, job.id).metrics())
    time.sleep(0.5)
    assert len(jobstore.get_job(ws, job.id).metrics()) == steps < 600


def test_vanished_process_is_marked_failed(ws):
    job = jobs.submit(ws, "sleep", {"steps": 600, "seconds": 0.1})
    running = _wait_for(lambda: (j := jobstore.get_job(ws, job.id)).pid and j.metrics() and j)
    os.killpg(os.getpgid(running.pid), signal.SIGKILL)
    failed = _wait_for(lambda: (j := jobstore.get_job(ws, job.id)).status == "failed" and j, timeout=30)
    assert "exited without reporting" in failed.error


def test_a_job_reference_names_one_job_or_none(ws):
    """Found in review: `jobs delete ""` or `jobs delete %` deleted whichever job came first (id LIKE '%')."""
    from core.errors import UserError

    a = jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.01})
    b = jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.01})
    for job in (a, b):
        jobs.wait(ws, job.id, timeout=120)
    for ref, said in (("", "give a job id"), ("  ", "give a job id"), ("%", "no job '%'"), ("_", "no job '_'"),
                      (a.id[:4], "starts several job ids")):
        with pytest.raises(UserError, match=said):
            jobs.delete(ws, ref)
    assert {j.id for j in jobs.list_jobs(ws)} == {a.id, b.id}  # nothing deleted
    assert jobstore.get_job(ws, a.id[:-1]).id == a.id  # a prefix of one id still names it


def test_a_job_whose_folder_was_removed_runs_and_a_failed_job_shows_its_reason(ws):
    """Found in review: resuming a job whose run folder was removed raised FileNotFoundError while spawning (a
    traceback, the row left 'running' with no process); and the job table showed a failed job's last progress
    message instead of its error."""
    import shutil

    from core.runner.jobview import job_rows

    job = jobs.wait(ws, jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.01}).id, timeout=120)
    jobstore.update(ws, job.id, status="failed", error="boom: the reason", message="step 1/1")
    assert job_rows([jobstore.get_job(ws, job.id)])[0]["message"] == "boom: the reason"
    shutil.rmtree(job.run_dir)
    jobs.resume(ws, job.id)
    assert jobs.wait(ws, job.id, timeout=120).status == "done"


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_kill_9_then_resume_continues_from_checkpoint(ws, tiny_mlm_dir, tmp_path):
    corpus = tmp_path / "tc.txt"
    corpus.write_text("\n".join(TOY_SENTENCES * 4) + "\n")
    total, every = 300, 10
    params = {"train": [str(corpus)], "model": str(tiny_mlm_dir), "preset": "tiny",
              "config": {"max_steps": total, "epochs": 100, "batch_size": 2, "checkpoint_every": every, "log_every": 1}}
    job = jobs.submit(ws, "mlm", params)
    ckpt = Checkpointer(job.run_dir / "phase-train")
    _wait_for(lambda: (ckpt.latest_step() or 0) >= 2 * every, timeout=120, poll=0.02)
    pid = jobstore.get_job(ws, job.id).pid
    os.killpg(os.getpgid(pid), signal.SIGKILL)
    _wait_for(lambda: jobstore.get_job(ws, job.id).status == "failed", timeout=30)
    before = [m["step"] for m in jobstore.get_job(ws, job.id).metrics()]
    saved = ckpt.latest_step()
    assert saved is not None and max(before) - saved <= every  # lost at most one checkpoint interval
    assert max(before) < total, "the job finished before the kill; raise `total`"
    assert not list((job.run_dir / "phase-train").glob("checkpoint*/*.tmp")), "no half-written files in checkpoints"

    jobs.resume(ws, job.id)
    done = jobs.wait(ws, job.id, timeout=300)
    assert done.status == "done" and done.result["steps"] == total and done.attempts == 2
    assert f"resumed from checkpoint at step {saved}" in done.log_tail(200)
    after = [m["step"] for m in done.metrics()][len(before):]
    assert after[0] == saved + 1 and after[-1] == total  # continued from the checkpoint, not from step 1
    assert (done.run_dir / "model" / "model.safetensors").exists()


def test_ner_job_end_to_end(ws, tiny_bert_dir, tmp_path):
    data = write_toy_conll(tmp_path / "toy.conll")
    job = jobs.submit(ws, "ner", {"train": data, "dev": data, "test": data, "model": str(tiny_bert_dir), "preset": "tiny",
                                  "config": {"epochs": 8, "patience": 8}})
    done = jobs.wait(ws, job.id, timeout=300)
    assert done.status == "done", done.error
    assert done.result["test"]["f1"] > 0.5 and (done.run_dir / "model" / "ner_config.json").exists()
    rows = [json.loads(x) for x in (done.run_dir / "test_predictions.jsonl").read_text().splitlines()]
    assert len(rows) == len(TOY_SENTENCES) and {"gold_spans", "spans", "c1", "c2"} <= set(rows[0])
    assert any("dev_f1" in m for m in done.metrics()) and any("sentences_per_s" in m for m in done.metrics())
    pred = jobs.submit(ws, "predict", {"model": str(done.run_dir / "model"), "corpus": data})
    pdone = jobs.wait(ws, pred.id, timeout=300)
    assert pdone.status == "done" and pdone.result["sentences"] == len(TOY_SENTENCES) and pdone.result["scores"]["f1"] > 0.5


def test_checkpoint_survives_a_crash_at_any_point(tmp_path, monkeypatch):
    ck = Checkpointer(tmp_path)
    ck.save({"step": 1}, step=1)
    ck.save({"step": 2}, step=2)
    import torch

    real_save = torch.save

    def crash(obj, path, *a, **k):
        real_save(obj, path, *a, **k)
        with open(path, "r+b") as fh:  # half-written file, then the process dies
            fh.truncate(10)
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        ck.save({"step": 3}, step=3)
    monkeypatch.setattr(torch, "save", real_save)
    assert ck.load()["step"] == 2 and ck.latest_step() == 2
    os.replace(ck.path, tmp_path / "gone")  # killed between the two renames of a rotation
    assert ck.load()["step"] == 1
    (tmp_path / ".checkpoint.tmp-x").mkdir()
    (ck.prev / "COMPLETE").unlink()  # an incomplete folder is never loaded
    assert ck.load() is None
    ck.clear_temp()
    assert not (tmp_path / ".checkpoint.tmp-x").exists()


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[16])


def test_a_selection_submitted_during_training_finishes_while_training_runs(ws):
    from core.data.corpus import Corpus

    ws.save_corpus(Corpus(tokens=[s.split() for s in TOY_SENTENCES[:3]]), "tc", role="tc")
    ws.save_corpus(Corpus(tokens=[f"{s} {i}".split() for i, s in enumerate(TOY_SENTENCES * 3)]), "dc", role="dc")
    training = jobs.submit(ws, "sleep", {"steps": 1200, "seconds": 0.1})  # the training lane's one slot
    running = _wait_for(lambda: (j := jobstore.get_job(ws, training.id)).pid and j.metrics() and j)
    assert jobs.lane("sleep") == "training" and jobs.lane("select") == "interactive"
    if os.path.exists(f"/proc/{running.pid}/stat"):
        assert _nice(running.pid) >= _nice(os.getpid()) + min(jobs.TRAINING_NICE, 19 - _nice(os.getpid()))
    queued_training = jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.01})
    try:
        sel = jobs.submit(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 3})
        done = jobs.wait(ws, sel.id, timeout=300)
        assert done.status == "done", done.error
        assert jobstore.get_job(ws, training.id).status == "running"  # exploring did not wait behind it
        assert jobstore.get_job(ws, queued_training.id).status == "queued"  # training still runs one at a time
    finally:
        jobs.cancel(ws, training.id)
        jobs.cancel(ws, queued_training.id)
