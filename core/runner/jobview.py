"""How jobs read to a person: a name made of the kind and its inputs, what a queued job waits
for, and how many are running. The Runs page, the sidebar badge and `python -m core jobs`
all name jobs through `describe_job`, so a job reads the same everywhere.

>>> from pathlib import Path
>>> job = Job("20250101-000000-abc123", "ner", {"train": "demo-lc", "preset": "tiny"}, "queued", None, 0.0, "", 0.0,
...           None, None, None, Path("."), None, 0)
>>> describe_job(job)
'NER training · train demo-lc · model default · preset tiny'
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.recipes.duration import format_clock
from core.runner import devices
from core.runner.jobs import max_concurrent
from core.runner.jobstore import Job
from core.runner.kinds import KINDS, lane

_HASHY = {"selection"}  # content-hash keys: the first 8 characters are enough to tell them apart


def _value(key: str, value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_value(key, v) for v in value) or "-"
    text = str(value)
    if key in _HASHY:
        return text[:8]
    if key in ("path", "model", "corpus", "out") and ("/" in text or "\\" in text):
        p = Path(text)
        return p.name if p.name not in ("model", "predictions.jsonl", "subset.jsonl") else f"{p.parent.name}/{p.name}"
    return text


def device_text(job: Job) -> str | None:
    """'GPU 0 (NVIDIA H100, 8,192 MiB reserved)' or 'CPU' for a training job the runner placed; None otherwise."""
    device = devices.read_device(job.run_dir)
    return devices.describe(device) if device else None


def describe_job(job: Job, max_len: int = 120) -> str:
    """'<Kind> · <key input> <value> · ...' from the job's parameters (never the timestamp id)."""
    kind = KINDS.get(job.kind)
    parts = [kind.label if kind else job.kind]
    if kind and job.params_error:
        parts.append("(its settings no longer validate)")
    for key in kind.inputs if kind and not job.params_error else ():
        value = getattr(job.spec, key)
        if value in (None, "", [], ()) or (key == "path" and getattr(job.spec, "upload", None)):
            continue  # an upload's copy is shown by the browser's file name, not its long path under uploads/
        parts.append(f"{key} {_value(key, value)}")
    text = " · ".join(parts)
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


def waiting_for(job: Job, jobs: Sequence[Job]) -> Job | None:
    """The job a queued `job` waits behind: the oldest running job of its lane (jobs of other
    lanes do not hold it up), else the queued job just ahead of it. None when it is not queued."""
    if job.status != "queued":
        return None
    same = [j for j in jobs if j.id != job.id and j.kind in KINDS and lane(j.kind) == lane(job.kind)]
    running = sorted((j for j in same if j.status == "running"), key=lambda j: j.started or j.created)
    if len(running) < max_concurrent(lane(job.kind)):
        return None  # a free slot: it starts at the next look, behind nothing
    if running:
        return running[0]
    ahead = sorted((j for j in same if j.status == "queued" and j.created < job.created), key=lambda j: j.created)
    return ahead[-1] if ahead else None


def status_text(job: Job, jobs: Sequence[Job]) -> str:
    """The status column: 'queued behind <name> (<id>)' instead of a bare 'queued'."""
    ahead = waiting_for(job, jobs)
    if ahead is None:
        return "queued, starting" if job.status == "queued" else job.status
    return f"queued behind {describe_job(ahead, 60)} ({ahead.status}, {ahead.id[-6:]})"


def running_summary(jobs: Sequence[Job]) -> tuple[int, int, list[str]]:
    """(running, queued, names of the running ones) for a badge on every page."""
    running = [j for j in jobs if j.status == "running"]
    queued = sum(1 for j in jobs if j.status == "queued")
    return len(running), queued, [f"{describe_job(j, 60)} · {j.progress:.0%}" for j in running]


def active_ids(jobs: Sequence[Job]) -> frozenset[str]:
    return frozenset(j.id for j in jobs if j.active)


def ended_since(active_before: frozenset[str], jobs: Sequence[Job]) -> bool:
    """Whether a job that was queued or running when the page was drawn has finished (or vanished) since. A polling
    fragment that sees this redraws the whole page, so labels outside it (a job picker's "running", the sidebar's
    corpus count) do not go on saying what is no longer true.

    >>> ended_since(frozenset({"a"}), [])
    True
    """
    return bool(active_before - active_ids(jobs))


def job_rows(jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """One row per job for a table: readable name, status with what it waits for, progress."""
    return [{"job": describe_job(j), "status": status_text(j, jobs), "progress": j.progress,
             "message": _said(j), "elapsed": format_clock(j.elapsed), "id": j.id, "kind": j.kind,
             "attempts": j.attempts} for j in jobs]


def _said(job: Job) -> str:
    """A failed job's reason before its last progress message ("step 26/200" said nothing of why it stopped)."""
    if job.status == "failed" and job.error:
        return job.error[:80]
    return job.message or (job.error or "")[:80]


# --------------------------------------------------------------------------- polling an open page
# A page left open on a running job must not slow the job down (issue 10: at most 5%;
# bench/bench_server.py measures it). Every fragment rerun costs the browser a redraw of the page
# (about 0.2 CPU-s on Runs in headless Chromium), so polls are few: quick while a job is young
# (short jobs feel live), slower as it ages (a training run's epochs take minutes anyway).
# Plotly figures cost the server about 60 ms each to build, so curves refresh least often and are
# rebuilt only when the run has logged new metrics.
LIST_POLL_S = 10.0  # the jobs table, the sidebar badge
CHART_POLL_S = 15.0  # training curves


def poll_seconds(elapsed: float | None) -> float:
    """Seconds between redraws of a running job's progress: 2 s in its first 20 s, 5 s up to two
    minutes, then 10 s."""
    if elapsed is None or elapsed < 20:
        return 2.0
    return 5.0 if elapsed < 120 else 10.0


_CHART_CACHE: OrderedDict[tuple[str, int, int], list[tuple[str, Any]]] = OrderedDict()
_CHART_CACHE_SIZE = 16


def job_charts(job: Job) -> list[tuple[str, Any]]:
    """(name, plotly figure) for the run's training loss, throughput and dev F1 curves, rebuilt only
    when its metrics.jsonl has grown (keyed by size and mtime)."""
    path = Path(job.run_dir) / "metrics.jsonl"
    try:
        stat = path.stat()
    except (FileNotFoundError, OSError):
        return []
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _CHART_CACHE:
        _CHART_CACHE.move_to_end(key)
        return _CHART_CACHE[key]
    import plotly.express as px

    train, evals = metric_frames(job.metrics())
    charts: list[tuple[str, Any]] = []
    if not train.empty:
        charts.append(("loss", px.line(train, x="step", y="loss", color="series", title="training loss")))
        speed = "tokens_per_s" if "tokens_per_s" in train else "sentences_per_s"
        if speed in train:
            charts.append(("speed", px.line(train.dropna(subset=[speed]), x="step", y=speed, color="series", title="throughput")))
    if not evals.empty and "dev_f1" in evals:
        charts.append(("dev", px.line(evals.dropna(subset=["dev_f1"]), x="epoch", y="dev_f1", color="series", markers=True,
                                      title="dev F1 per epoch")))
    _CHART_CACHE[key] = charts
    while len(_CHART_CACHE) > _CHART_CACHE_SIZE:
        _CHART_CACHE.popitem(last=False)
    return charts


def model_labels(models: Sequence[str | Path], jobs: Sequence[Job]) -> dict[str, str]:
    """A readable, unique label per model folder for pickers: the job that made it ('NER training · train lc ·
    seed 1') and where in its run folder, instead of paths that all end in '.../model'. A folder outside any job's run
    keeps its path."""
    by_dir = {Path(j.run_dir).resolve(): j for j in jobs}
    out: dict[str, str] = {}
    for m in models:
        path = Path(m).resolve()
        job = next((by_dir[p] for p in (path, *path.parents) if p in by_dir), None)
        if job is not None:
            inner = path.relative_to(Path(job.run_dir).resolve())
            out[str(m)] = f"{describe_job(job, 80)} ({job.id}{'' if str(inner) == '.' else '/' + str(inner)})"
        else:  # the full path: one shown relative to the checkout read as a path missing its leading slash
            out[str(m)] = str(m)
    return out


def metric_frames(rows: list[dict[str, Any]]):
    """Split a run's metrics.jsonl rows into (train, eval) DataFrames for plotting: train rows carry
    a loss, eval rows a dev/test F1. A `series` column names the phase / cell / stage a row
    belongs to, so multi-part runs (MLM phases, experiment cells) draw one line each."""
    import pandas as pd

    def series(r: dict[str, Any]) -> str:
        parts = [str(r[k]) for k in ("cell", "seed", "stage", "phase") if k in r]
        return " · ".join(parts) if parts else "run"

    train = [{**r, "series": series(r)} for r in rows if "loss" in r]
    evals = [{**r, "series": series(r)} for r in rows if "dev_f1" in r or "test_f1" in r]
    return pd.DataFrame(train), pd.DataFrame(evals)
