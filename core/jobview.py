"""How jobs read to a person: a name made of the kind and its inputs, what a queued job waits
for, and how many are running. The Runs page, the sidebar badge and `python -m core jobs`
all name jobs through `describe_job`, so a job reads the same everywhere.

>>> from pathlib import Path
>>> job = Job("20250101-000000-abc123", "ner", {"train": "demo-lc", "preset": "tiny"}, "queued", None, 0.0, "", 0.0,
...           None, None, None, Path("."), None, 0)
>>> describe_job(job)
'NER training · train demo-lc · preset tiny'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.jobs import Job

KIND_NAMES = {
    "import": "Import", "similarity": "Similarity", "embed": "Embedding", "select": "Selection", "project": "Map",
    "mlm": "MLM pretraining", "ner": "NER training", "predict": "Prediction", "experiment": "Experiment",
    "selftrain": "Self-training", "augment": "Augmentation", "sleep": "Sleep",
}

# Per kind, the parameters that tell two jobs of that kind apart, in reading order.
_INPUTS: dict[str, tuple[str, ...]] = {
    "import": ("path", "name", "role"),
    "similarity": ("sources", "targets", "measures"),
    "embed": ("corpus", "model"),
    "select": ("strategy", "tc", "dc", "budget"),
    "project": ("selection", "model"),
    "mlm": ("mode", "tc", "dc", "selection", "model", "preset"),
    "ner": ("train", "model", "preset"),
    "predict": ("model", "corpus"),
    "experiment": ("strategies", "baselines", "seeds", "preset"),
    "selftrain": ("lc", "unlabeled", "selection", "ratio", "preset"),
    "augment": ("lc", "model", "sampling"),
    "sleep": ("seconds",),
}
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


def describe_job(job: Job, max_len: int = 120) -> str:
    """'<Kind> · <key input> <value> · ...' from the job's parameters (never the timestamp id)."""
    parts = [KIND_NAMES.get(job.kind, job.kind)]
    for key in _INPUTS.get(job.kind, ()):
        value = job.params.get(key)
        if value in (None, "", [], ()):
            continue
        parts.append(f"{key} {_value(key, value)}")
    text = " · ".join(parts)
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


def waiting_for(job: Job, jobs: Sequence[Job]) -> Job | None:
    """The job a queued `job` waits behind: the oldest running job of its lane (jobs of other
    lanes do not hold it up), else the queued job just ahead of it. None when it is not queued."""
    if job.status != "queued":
        return None
    lane = _lane_function()
    same = [j for j in jobs if j.id != job.id and (lane is None or lane(j.kind) == lane(job.kind))]
    running = sorted((j for j in same if j.status == "running"), key=lambda j: j.started or j.created)
    if len(running) < _lane_capacity(job.kind, lane):
        return None  # a free slot: it starts at the next look, behind nothing
    if running:
        return running[0]
    ahead = sorted((j for j in same if j.status == "queued" and j.created < job.created), key=lambda j: j.created)
    return ahead[-1] if ahead else None


def _lane_function():
    """core.jobs' lane of a kind when the runner has lanes (interactive work apart from training),
    else None: one queue for all."""
    from core import jobs as jobs_module

    for name in ("lane_of", "job_lane", "lane"):
        fn = getattr(jobs_module, name, None)
        if callable(fn):
            return fn
    return None


def _lane_capacity(kind: str, lane) -> int:
    """How many jobs of this kind's lane run at once (core.jobs.max_concurrent)."""
    from core import jobs as jobs_module

    try:
        return int(jobs_module.max_concurrent(lane(kind))) if lane is not None else int(jobs_module.max_concurrent())
    except TypeError:  # a runner without lanes: max_concurrent() takes no lane
        return int(jobs_module.max_concurrent())


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


def job_rows(jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """One row per job for a table: readable name, status with what it waits for, progress."""
    return [{"job": describe_job(j), "status": status_text(j, jobs), "progress": j.progress,
             "message": j.message or (j.error or "")[:80], "elapsed": j.elapsed, "id": j.id, "kind": j.kind,
             "attempts": j.attempts} for j in jobs]
