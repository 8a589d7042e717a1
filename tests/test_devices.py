"""Issue 25, the CPU half: training jobs share simulated GPUs by memory, and a job that runs out of GPU memory is
queued again with a smaller micro-batch (the same effective batch) or fails saying what to do."""

from __future__ import annotations

import json
import os

import pytest

from core.data.workspace import Workspace
from core.runner import devices, jobs, jobstore


@pytest.fixture
def ws(tmp_path, monkeypatch):
    """Jobs are claimed but not spawned: each claimed job gets this test's pid, so it counts as running for as long
    as the test wants (no timing involved)."""
    monkeypatch.delenv("NERSELECT_MAX_JOBS", raising=False)
    monkeypatch.setenv("NERSELECT_JOB_GPU_MIB", "8000")
    workspace = Workspace(tmp_path / "ws")
    spawned: list[tuple[str, int | None]] = []

    def fake_spawn(w, job_id, lane_name="training", gpu=None):
        spawned.append((job_id, gpu))
        jobstore.update(w, job_id, pid=os.getpid())

    monkeypatch.setattr(jobs, "_spawn", fake_spawn)
    workspace.spawned = spawned
    return workspace


def _submit(ws, n: int) -> list[str]:
    return [jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.0}).id for _ in range(n)]


def _device(ws, job_id: str) -> dict:
    return json.loads((jobstore.get_job(ws, job_id).run_dir / devices.DEVICE_FILE).read_text())


def test_jobs_share_a_card_while_their_memory_fits_and_the_next_waits(ws, monkeypatch):
    monkeypatch.setenv("NERSELECT_GPU_BUDGET", "0:20000")
    a, b, c = _submit(ws, 3)
    assert [jobstore.get_job(ws, j).status for j in (a, b, c)] == ["running", "running", "queued"]  # 8000 + 8000 <= 20000
    assert _device(ws, a) == {"gpu": 0, "name": "simulated", "total_mib": 20000, "reserved_mib": 8000}
    assert ws.spawned == [(a, 0), (b, 0)]  # the child sees only its card (CUDA_VISIBLE_DEVICES)
    from core.commands.jobs import _job_dict

    assert _job_dict(jobstore.get_job(ws, a))["device"] == "GPU 0 (simulated, 8,000 MiB reserved)"  # `jobs show`, Runs page
    jobstore.update(ws, a, status="done", pid=None)  # a finishes: its memory is free again
    jobs._start_queued(ws)
    assert jobstore.get_job(ws, c).status == "running" and _device(ws, c)["gpu"] == 0


def test_jobs_go_to_the_card_with_the_most_room_and_a_measured_peak_replaces_the_guess(ws, monkeypatch):
    monkeypatch.setenv("NERSELECT_GPU_BUDGET", "0:20000,1:10000")
    a, b, c = _submit(ws, 3)
    assert [_device(ws, j)["gpu"] for j in (a, b, c)] == [0, 0, 1]  # rooms 20000/10000, then 12000/10000, then 4000/10000
    devices.record_peak(ws.runs_dir, "sleep", jobstore.get_job(ws, a).spec, 1000)  # measured: far below the guess
    assert devices.need_mib(ws.runs_dir, "sleep", jobstore.get_job(ws, a).spec) == 1200  # peak + 20% margin
    d = _submit(ws, 1)[0]
    assert jobstore.get_job(ws, d).status == "running" and _device(ws, d)["reserved_mib"] == 1200


def test_a_job_larger_than_any_card_runs_alone_and_nothing_overtakes_it(ws, monkeypatch):
    monkeypatch.setenv("NERSELECT_GPU_BUDGET", "0:6000")
    a, b = _submit(ws, 2)
    assert jobstore.get_job(ws, a).status == "running" and jobstore.get_job(ws, b).status == "queued"  # 8000 > 6000: alone
    monkeypatch.setenv("NERSELECT_JOB_GPU_MIB", "100")
    small = _submit(ws, 1)[0]
    assert jobstore.get_job(ws, small).status == "queued"  # it would fit, but b is older


def test_on_cpu_training_runs_one_at_a_time_on_the_cpu(ws, monkeypatch):
    monkeypatch.delenv("NERSELECT_GPU_BUDGET", raising=False)
    monkeypatch.setattr(devices, "gpus", lambda: [])
    a, b = _submit(ws, 2)
    assert [jobstore.get_job(ws, j).status for j in (a, b)] == ["running", "queued"]
    assert _device(ws, a) == {"gpu": None, "device": "cpu"}
    assert devices.describe(devices.read_device(jobstore.get_job(ws, a).run_dir)) == "CPU"


def _run_out_of_memory(ws, monkeypatch, kind: str, params: dict) -> jobstore.Job:
    import torch

    def job_fn(p, ctx):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setenv("NERSELECT_GPU_BUDGET", "0:80000")
    monkeypatch.setattr(jobs, "load_job_function", lambda k: job_fn)
    job = jobs.submit(ws, kind, params)  # claimed on GPU 0 (spawning is faked: the test runs it in-process)
    jobs._run_job(ws, job.id)
    return jobstore.get_job(ws, job.id)


def test_out_of_gpu_memory_queues_the_job_again_with_a_smaller_micro_batch(ws, monkeypatch, tmp_path):
    (tmp_path / "lc.txt").write_text("a b\n")
    job = _run_out_of_memory(ws, monkeypatch, "mlm", {"train": str(tmp_path / "lc.txt"), "config": {"batch_size": 32}})
    # queued again and (the runner's next look) started with twice the accumulation: the same 32-example step
    assert job.params["config"] == {"batch_size": 32, "grad_accum": 2} and job.attempts == 2
    assert "grad_accum 1 -> 2" in job.log_tail() and "same effective batch" in job.log_tail()
    stored = json.loads((job.run_dir / "params.json").read_text())["params"]["config"]
    assert stored["grad_accum"] == 2  # a resume reads the shrunk params too


def test_out_of_gpu_memory_that_cannot_shrink_fails_saying_what_to_do(ws, monkeypatch, tmp_path):
    (tmp_path / "lc.txt").write_text("a b\n")
    job = _run_out_of_memory(ws, monkeypatch, "mlm", {"train": str(tmp_path / "lc.txt"), "config": {"grad_accum": 8}})
    assert job.status == "failed" and "out of GPU memory on GPU 0" in job.error and "smaller encoder" in job.error
    sleep = _run_out_of_memory(ws, monkeypatch, "sleep", {"steps": 1})
    assert sleep.status == "failed" and "cannot split its batch" in sleep.error


def test_ner_grad_accum_keeps_the_effective_batch(tmp_path, tiny_bert_dir):
    from core.data.corpus import read_corpus
    from core.train.ner_train import preset_config, train_ner
    from tests.ner_data import write_toy_conll

    lc = read_corpus(write_toy_conll(tmp_path / "lc.conll"))
    logs: list[str] = []
    config = preset_config("tiny", epochs=1, batch_size=8, grad_accum=4)
    result = train_ner(lc, lc, str(tiny_bert_dir), tmp_path / "out", config, log=logs.append)
    assert result["steps"] == -(-len(lc) // 8)  # optimizer steps as at batch 8 without accumulation
    assert any("batch: 8 (4 x 2)" in line for line in logs)
