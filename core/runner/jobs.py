"""Background jobs: one subprocess per job, tracked in a SQLite table (WAL mode).

A job is `python -m core.runner.jobs run JOB_ID` started in its own session (so its own
process group): closing the browser tab or the Streamlit server does not kill it,
and cancel signals the whole group. The row holds status, pid, progress and the
error; the run folder holds log.txt, metrics.jsonl, result.json and checkpoints.
A row whose process vanished is marked failed on the next look. Jobs run in two
lanes (`lane(kind)`): interactive work (select, map, predict, import, ...) and
training, each with at most `max_concurrent(lane)` jobs at once, so exploring never
waits behind a training run; training processes run at lower CPU priority. The rest
stay queued and are started by whichever job finishes (or by the next `refresh`).

Job functions have one signature, `fn(params: XParams, ctx: JobContext) -> dict`,
and each kind is one row of `core.runner.kinds.KINDS` (function, params dataclass,
lane, label). The runner knows nothing of what a job does: a training job records
its own lineage. The CLI runs the very same function in-process with `run_inline`.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.access import LOCAL, AccessDenied, Actor, check_param_paths, check_ray_address, require
from core.data.atomic import atomic_write_json, json_default
from core.data.uploads import check_upload_owner
from core.data.workspace import Workspace
from core.environment import variable
from core.errors import Interrupted, TimeLimitReached, UserError
from core.progress import Progress, sub
from core.runner import devices
from core.runner.jobresult import JobResult
from core.runner.jobstore import (
    FINISHED,
    Job,
    JobCancelled,
    connect,
    decode,
    encode,
    get_job,
    pid_alive,
    reap,
    row_to_job,
    spawning,
    update,
)
from core.runner.kinds import KINDS, lane, validate
from core.runner.params import SCHEMA_VERSION, SleepParams, check_model_folders, check_out_folder
from core.runner.split_check import split_warning, with_warning


def list_jobs(ws: Workspace, kind: str | None = None) -> list[Job]:
    con = connect(ws)
    try:
        q = "SELECT * FROM jobs" + (" WHERE kind = ?" if kind else "") + " ORDER BY created DESC"
        rows = con.execute(q, (kind,) if kind else ()).fetchall()
    finally:
        con.close()
    jobs = [reap(ws, row_to_job(ws, r)) for r in rows]
    _start_queued(ws)
    return jobs



# --------------------------------------------------------------------------- submit / cancel / resume


# Lanes (core.runner.kinds): exploring (a selection, a map, predictions for Inspect, an import) must never wait
# behind a training run that takes an hour, so those kinds have a lane and a concurrency count of their own.
# Training-lane processes start at a lower CPU priority, so an exploring job gets the cores first.
TRAINING_NICE = 10  # added niceness of training-lane job processes (NERSELECT_TRAINING_NICE overrides)


def max_concurrent(lane_name: str = "training") -> int:
    """Training lane: 1 on CPU (two trainings on 2 cores only slow each other), one per GPU otherwise
    (NERSELECT_MAX_JOBS overrides). Interactive lane: 2 (NERSELECT_MAX_INTERACTIVE_JOBS overrides)."""
    if lane_name == "interactive":
        return variable("NERSELECT_MAX_INTERACTIVE_JOBS").integer(minimum=1) or 2
    if (cap := variable("NERSELECT_MAX_JOBS").integer(minimum=1)) is not None:
        return cap
    try:
        import torch

        return max(1, torch.cuda.device_count())
    except Exception:  # torch missing or broken: still run jobs one at a time
        return 1


def check_reach(ws: Workspace, actor: Actor, params: dict[str, Any]) -> None:
    """What a job's settings may reach for `actor`: server paths (core.access.check_param_paths; the workspace's
    corpus names and roles are no paths) and a Ray cluster. Checked at submit and again at resume."""
    if actor == LOCAL:
        return
    actor = actor.current()  # the role as it is now: a demoted admin passed the Ray and upload checks below
    check_param_paths(actor, params, ws.root, ws.corpus_words())
    check_ray_address(actor, params.get("ray"), ws.settings().ray_address)
    if params.get("upload") and params.get("path"):  # an import of an upload's copy: the actor's own only
        check_upload_owner(ws, actor, params["path"])


def submit(ws: Workspace, kind: str, params: dict[str, Any] | Any, start: bool = True, actor: Actor = LOCAL) -> Job:
    """Queue a job; `params` (a dict or the kind's dataclass) is validated now (core.runner.kinds), so a
    wrong field fails here with its name, not later in the child."""
    require(actor, "submit a job")
    typed = validate(kind, params)
    params = dataclasses.asdict(typed)
    check_reach(ws, actor, params)  # with accounts, only data roots and the workspace: before any
    check_model_folders(kind, typed)  # look at the disk, so a refused path never says whether it exists
    check_out_folder(kind, typed)
    json.dumps(params)  # fail now, not in the child, if params are not JSON
    job_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    run_dir = ws.runs_dir / job_id
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / "params.json", {"kind": kind, "schema_version": SCHEMA_VERSION, "params": params})
    con = connect(ws)
    try:
        con.execute(
            "INSERT INTO jobs (id, kind, params, status, created, run_dir) VALUES (?, ?, ?, 'queued', ?, ?)",
            (job_id, kind, encode(params, "params"), time.time(), str(run_dir)),
        )
    finally:
        con.close()
    if start:
        _start_queued(ws)
    return get_job(ws, job_id)


def _start_queued(ws: Workspace) -> None:
    """Start queued jobs up to the concurrency limit. Claiming is one UPDATE inside
    an IMMEDIATE transaction, so two callers racing cannot both start one job.

    With GPUs (core.runner.devices), training jobs are placed by memory instead of by count: each queued one,
    oldest first, goes to the card with the most room that fits its need, several per card when they fit; the
    oldest that fits nowhere waits, and the younger ones wait behind it (no job is starved by smaller ones)."""
    cards = devices.gpus()
    free = {name: max_concurrent(name) for name in ("interactive", "training")}  # per lane
    if cards and variable("NERSELECT_MAX_JOBS").text() is None:
        free["training"] = 10_000  # memory decides
    con = connect(ws)
    try:
        con.execute("BEGIN IMMEDIATE")
        running = con.execute("SELECT id, kind, pid, pid_start, started, run_dir FROM jobs WHERE status = 'running'").fetchall()
        reservations = []
        for r in running:
            if pid_alive(r["pid"], r["pid_start"]) or spawning(r["pid"], r["started"]):
                free[lane(r["kind"])] -= 1
                if lane(r["kind"]) == "training" and (held := devices.read_device(Path(r["run_dir"]))):
                    reservations.append(dataclasses.replace(held, pid=r["pid"]))
        promised = devices.outstanding(reservations, devices.used_by_pid() if reservations else {})
        busy = [h.gpu for h in reservations if isinstance(h.gpu, int)]
        to_start = []
        training_blocked = False
        if any(n > 0 for n in free.values()):
            for r in con.execute("SELECT id, kind, params, run_dir FROM jobs WHERE status = 'queued' ORDER BY created").fetchall():
                name = lane(r["kind"])
                if free[name] <= 0 or (name == "training" and training_blocked):
                    continue
                device = None
                if name == "training":
                    device = devices.assign(ws.runs_dir, r["kind"], _spec_or_none(r["kind"], r["params"]), Path(r["run_dir"]),
                                            cards, promised, busy)
                    if device is None:
                        training_blocked = True
                        continue
                free[name] -= 1
                con.execute("UPDATE jobs SET status = 'running', started = ?, pid = NULL, pid_start = NULL, progress = 0, "
                            "attempts = attempts + 1, error = NULL, finished = NULL WHERE id = ?", (time.time(), r["id"]))
                to_start.append((r["id"], r["kind"], device))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.close()
    for job_id, kind, device in to_start:
        try:
            _spawn(ws, job_id, lane(kind), gpu=None if device is None else device.gpu)
        except OSError as exc:  # this one job cannot start (its folder, the interpreter): it fails with the reason,
            update(ws, job_id, status="failed", finished=time.time(),  # the others of the batch still start
                   error=f"could not start its process: {exc.strerror or exc}")


def _spec_or_none(kind: str, params: str | dict[str, Any]) -> Any | None:
    """A row's typed params (stored text or a dict); None for a row that no longer validates: the scheduler still
    places it (by its kind alone) and the job then fails with the reason."""
    if isinstance(params, str):
        params = decode(params, "params")[0] or {}
    try:
        return validate(kind, params)
    except UserError:
        return None


def _spawn(ws: Workspace, job_id: str, lane_name: str = "training", gpu: int | None = None) -> None:
    root = Path(__file__).resolve().parents[2]  # the repo root: core/runner/jobs.py
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)  # the job sees its card as cuda:0
    run_dir = ws.runs_dir / job_id
    command = [sys.executable, "-m", "core.runner.jobs", "run", job_id, "--workspace", str(ws.root)]
    niceness = variable("NERSELECT_TRAINING_NICE").integer()
    niceness = TRAINING_NICE if niceness is None else niceness
    if lane_name == "training" and niceness > 0 and shutil.which("nice"):
        command = ["nice", "-n", str(niceness), *command]  # nice execs python: same pid, lower priority from the start
    run_dir.mkdir(parents=True, exist_ok=True)  # removed by hand since it was queued: the job runs and says so
    with open(run_dir / "stderr.txt", "ab") as err:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=root, env=env,
            start_new_session=True,  # own session and process group: survives the app, cancel hits all children
        )
    update(ws, job_id, pid=proc.pid)


def cancel(ws: Workspace, job_id: str, actor: Actor = LOCAL) -> Job:
    require(actor, "cancel, resume or delete a job")
    job = get_job(ws, job_id)
    if not job.active:
        raise UserError(f"job {job.id} is already {job.status}; only a queued or running job can be cancelled")
    if job.status == "queued":
        update(ws, job.id, if_status=("queued",), status="cancelled", finished=time.time(),
               message="cancelled before start")
    else:
        (job.run_dir / "CANCEL").touch()
        if pid_alive(job.pid, job.pid_start):  # never signal a group whose leader is another program by now
            try:
                os.killpg(os.getpgid(job.pid), signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        update(ws, job.id, job.attempts, ("running",), status="cancelled", finished=time.time(),
               message="cancelled by user")
    _start_queued(ws)
    return get_job(ws, job.id)


STOP_WAIT_S = 15.0  # how long Resume waits for a cancelled process to finish stopping (it saves nothing after SIGTERM)


def resume(ws: Workspace, job_id: str, actor: Actor = LOCAL) -> Job:
    """Queue a failed or cancelled job again in the same run folder; training jobs find
    their last checkpoint there and continue from it. A cancelled process still stopping is waited for (briefly):
    two processes of one job in one run folder would write each other's checkpoints."""
    require(actor, "cancel, resume or delete a job")
    job = get_job(ws, job_id)
    check_reach(ws, actor, job.params)  # it may have been submitted at the CLI, where nothing confined its paths
    if job.status not in ("failed", "cancelled"):
        raise UserError(f"job {job.id} is {job.status}; only failed or cancelled jobs can be resumed")
    deadline = time.monotonic() + STOP_WAIT_S
    while pid_alive(job.pid, job.pid_start):
        if time.monotonic() > deadline:
            raise UserError(f"job {job.id} is still stopping (process {job.pid}); resume it once it has stopped")
        time.sleep(0.2)
    (job.run_dir / "CANCEL").unlink(missing_ok=True)
    if not update(ws, job.id, job.attempts, ("failed", "cancelled"), status="queued", error=None, finished=None,
                  progress=0.0, message="resumed"):
        raise UserError(f"job {job.id} changed while resuming it (resumed or deleted elsewhere); look again")
    _start_queued(ws)
    return get_job(ws, job.id)


def delete(ws: Workspace, job_id: str, actor: Actor = LOCAL) -> None:
    import shutil

    require(actor, "cancel, resume or delete a job")
    job = get_job(ws, job_id)
    if job.active:
        try:
            cancel(ws, job.id, actor=actor)
        except AccessDenied:
            raise
        except UserError:  # it finished meanwhile: nothing to stop
            pass
    con = connect(ws)
    try:
        con.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
    finally:
        con.close()
    shutil.rmtree(job.run_dir, ignore_errors=True)


def wait(ws: Workspace, job_id: str, timeout: float = 600, poll: float = 0.2) -> Job:
    """Block until the job finishes (tests, CLI `--wait`)."""
    deadline = time.time() + timeout
    while True:
        job = get_job(ws, job_id)
        if job.status in FINISHED:
            return job
        if time.time() > deadline:
            raise TimeoutError(f"job {job_id} still {job.status} after {timeout:.0f}s")
        if job.status == "queued":
            _start_queued(ws)
        time.sleep(poll)


# --------------------------------------------------------------------------- inside a job


class JobContext:
    """What a job function gets: progress, log, metrics, its run folder, a cancel check.
    `job_id` is None when run inline (CLI, tests)."""

    def __init__(self, ws: Workspace, run_dir: Path, job_id: str | None = None,
                 on_progress: Progress | None = None, attempt: int | None = None):
        self.workspace = ws
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.job_id = job_id
        self.attempt = attempt  # the job row's attempt this process runs: its writes go to that attempt only
        self._on_progress = on_progress
        self._last_write = 0.0
        self.resumed = (self.run_dir / "log.txt").exists()

    def progress(self, fraction: float, message: str = "") -> None:
        fraction = float(min(1.0, max(0.0, fraction)))
        if self._on_progress is not None:
            self._on_progress(fraction, message)
        now = time.time()
        if self.job_id is not None and (now - self._last_write > 0.5 or fraction >= 1.0):
            self._last_write = now  # throttled: SQLite writes from a tight loop would dominate small steps
            if not update(self.workspace, self.job_id, self.attempt, progress=fraction, message=message[:500]):
                raise JobCancelled()  # the row is another attempt's now (or deleted): this process stops
        if self.cancelled():
            raise JobCancelled()

    def log(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        with open(self.run_dir / "log.txt", "a", encoding="utf-8") as fh:
            for line in str(message).splitlines() or [""]:
                fh.write(f"[{stamp}] {line}\n")
        echo = getattr(self._on_progress, "echo", None)  # the CLI's bar prints log lines above itself
        if echo is not None:
            for line in str(message).splitlines():
                echo(line)

    def metric(self, **values: Any) -> None:
        values.setdefault("time", time.time())
        with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(values, default=json_default) + "\n")

    def cancelled(self) -> bool:
        return (self.run_dir / "CANCEL").exists()

    def sub(self, start: float, end: float, prefix: str = "") -> Progress:
        """A progress callback mapping a sub-step's 0-1 onto [start, end] of this job (core.progress.sub)."""
        return sub(self.progress, start, end, prefix)

    @property
    def run_id(self) -> str:
        """The id a finished run is indexed under (core.train.lineage): the job id, or the run folder's name."""
        return self.job_id or self.run_dir.name


def load_job_function(kind: str) -> Callable[[Any, JobContext], dict[str, Any]]:
    module_name, func_name = KINDS[kind].function.split(":")
    return getattr(importlib.import_module(module_name), func_name)


def inline_context(ws: Workspace, kind: str, params: dict[str, Any] | Any, run_dir: Path | None = None,
                   progress: Progress | None = None) -> tuple[Any, JobContext]:
    """A job's validated params and a context to run it in this process, its params kept in the run folder: for a
    script that drives parts of several jobs itself (`run_inline` runs one whole)."""
    typed, run_dir = validate(kind, params), run_dir or ws.runs_dir / f"inline-{time.strftime('%Y%m%d-%H%M%S-')}{uuid.uuid4().hex[:4]}"
    ctx = JobContext(ws, run_dir, None, on_progress=progress)
    atomic_write_json(ctx.run_dir / "params.json", {"kind": kind, "schema_version": SCHEMA_VERSION, "params": dataclasses.asdict(typed)})
    return typed, ctx


def run_inline(ws: Workspace, kind: str, params: dict[str, Any] | Any, run_dir: Path | None = None,
               progress: Progress | None = None) -> dict[str, Any]:
    """Run a job function in this process (the CLI's path): the same code and validated params as a background job."""
    typed, ctx = inline_context(ws, kind, params, run_dir, progress)
    try:
        result = _call(ws, kind, typed, ctx)
    except KeyboardInterrupt:
        raise Interrupted(ctx.run_dir) from None
    atomic_write_json(ctx.run_dir / "result.json", result)
    return result


def _call(ws: Workspace, kind: str, spec: Any, ctx: JobContext) -> dict[str, Any]:
    """The job function's result, in a background process or inline alike, with what to say of its splits (a DEV or
    TEST that is its training corpus: core.runner.split_check) logged first and joined to the result's warning."""
    if caution := split_warning(ws, kind, spec):
        ctx.log(f"warning: {caution}")
    return with_warning(load_job_function(kind)(spec, ctx) or {}, caution)


def _run_job(ws: Workspace, job_id: str) -> int:
    job = get_job(ws, job_id)
    ctx = JobContext(ws, job.run_dir, job.id, attempt=job.attempts)
    attempt = job.attempts
    update(ws, job.id, attempt, pid=os.getpid())

    def on_term(signum, frame):
        raise JobCancelled()

    signal.signal(signal.SIGTERM, on_term)
    device = devices.read_device(job.run_dir)
    ctx.log(f"job {job.id} ({job.kind}) started, attempt {job.attempts}, pid {os.getpid()}"
            + (f", device {devices.describe(device)}" if device else ""))
    try:
        result = _call(ws, job.kind, job.spec, ctx)
        atomic_write_json(job.run_dir / "result.json", result)
        said = JobResult.from_dict(result).said()
        update(ws, job.id, attempt, status="done", progress=1.0, finished=time.time(), result=encode(result, "result"),
                message="done" + (f": {said}" if said else ""))
        ctx.log("job finished")
        return 0
    except JobCancelled:
        ctx.log("job cancelled")
        update(ws, job.id, attempt, status="cancelled", finished=time.time(), message="cancelled")
        return 1
    except TimeLimitReached as exc:  # stopped on purpose, finished cells kept: Resume continues (with the same limit)
        ctx.log(str(exc))
        update(ws, job.id, attempt, status="cancelled", finished=time.time(), message=str(exc))
        return 1
    except UserError as exc:
        ctx.log(f"error: {exc}")
        update(ws, job.id, attempt, status="failed", finished=time.time(), error=str(exc))
        return 1
    except BaseException as exc:
        if devices.is_out_of_memory(exc):
            return _after_out_of_memory(ws, job, ctx, device, exc)
        ctx.log(traceback.format_exc())
        update(ws, job.id, attempt, status="failed", finished=time.time(), error=f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        devices.record_job_peak(ws.runs_dir, job.kind, _spec_or_none(job.kind, job.params), device)
        _start_queued(ws)


def _after_out_of_memory(ws: Workspace, job: Job, ctx: JobContext, device: devices.Grant | None,
                         exc: BaseException) -> int:
    """Queue the job again with half the micro-batch (the same effective batch: the same recipe; it resumes from its
    checkpoint), or fail with what to do when it cannot shrink further."""
    where = devices.describe(device)
    smaller = devices.smaller_micro_batch(job.kind, job.params)
    if smaller is None:
        error = (f"out of GPU memory on {where}, and the job cannot split its batch further: free memory on the card "
                 "(other jobs, other programs), choose a smaller encoder or preset, or run it on CPU")
        ctx.log(f"error: {error}\n{exc}")
        update(ws, job.id, job.attempts, status="failed", finished=time.time(), error=error)
        return 1
    params, change = smaller
    ctx.log(f"out of GPU memory on {where}: queued again with {change} (same effective batch)")
    atomic_write_json(job.run_dir / "params.json", {"kind": job.kind, "schema_version": SCHEMA_VERSION, "params": params})
    update(ws, job.id, job.attempts, status="queued", pid=None, params=encode(params, "params"),
            message=f"out of GPU memory: retrying with {change}")
    return 1


def sleep_job(params: SleepParams, ctx: JobContext) -> dict[str, Any]:
    """A job that only waits and reports; proves the runner works on a machine."""
    for i in range(params.steps):
        time.sleep(params.seconds)
        ctx.metric(step=i + 1)
        ctx.progress((i + 1) / params.steps, f"step {i + 1}/{params.steps}")
    return {"steps": params.steps}


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m core.runner.jobs")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run one job (used by the runner itself)")
    run.add_argument("job_id")
    run.add_argument("--workspace", default=None)
    args = parser.parse_args(argv)
    return _run_job(Workspace(args.workspace), args.job_id)


if __name__ == "__main__":
    sys.exit(main())
