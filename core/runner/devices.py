"""Which GPU a training job gets: jobs share a card when their memory fits, and one that ran out of memory is
queued again at a smaller micro-batch instead of being lost.

The runner counts memory, not jobs. A card's free memory is read with `nvidia-smi` (NVML through the driver).
`torch.cuda.mem_get_info` is not used because it would open a CUDA context of several hundred MiB in the app
and in every job process that schedules the next one. A job's need is the peak this workspace measured for
the same kind, preset and encoder (kept in `runs/gpu_memory.json`, plus a margin), or DEFAULT_NEED_MIB the
first time. A job that has started but not yet allocated still holds its estimate, so two jobs started in the
same second cannot both count the same free memory.

`NERSELECT_GPU_BUDGET="0:81000,1:40000"` (MiB per device) simulates cards on a machine without one (the tests)
or caps what the runner may use on a shared one. `NERSELECT_JOB_GPU_MIB` sets the first-time estimate.

>>> parse_budget("0:81000, 1:40000")
[Gpu(index=0, name='simulated', total_mib=81000, free_mib=81000), Gpu(index=1, name='simulated', total_mib=40000, free_mib=40000)]
>>> place(6000, [Gpu(0, "a", 8000, 8000), Gpu(1, "b", 16000, 16000)], {0: 0, 1: 12000})
0
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.data.atomic import atomic_write_json, split_fields
from core.environment import variable
from core.errors import UserError
from core.runner.kinds import KINDS

DEFAULT_NEED_MIB = 8192  # a first run of an unmeasured recipe: MiniLM/BERT-base study cells peak well below this
MARGIN = 1.2  # a measured peak is reserved with this margin (allocator fragmentation, longer batches)
DEVICE_FILE = "device.json"  # in a job's run folder: the device it got and the memory it reserved
MEMORY_FILE = "gpu_memory.json"  # in the workspace's runs folder: measured peaks per recipe
MAX_OOM_RETRIES = 3  # grad_accum doubles each time: up to 8 micro-batches per optimizer step


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    total_mib: int
    free_mib: int


@dataclass(frozen=True)
class Grant:
    """The device a training job got, as its run folder keeps it (device.json): a card and the MiB reserved on it,
    or the CPU. The scheduler adds the pid of the job holding it when it counts what is promised."""

    gpu: int | str | None = None  # the card's index; "ray" when Ray chose the card; None: the CPU
    name: str | None = None
    total_mib: int | None = None
    reserved_mib: int = 0
    pid: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grant:
        known, _ = split_fields(cls, data, drop_none=True)
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        if self.gpu is None:
            return {"gpu": None, "device": "cpu"}
        return {"gpu": self.gpu, "name": self.name, "total_mib": self.total_mib, "reserved_mib": self.reserved_mib}


def parse_budget(text: str) -> list[Gpu]:
    """'0:81000,1:40000' -> simulated devices with that much free memory (MiB)."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        index, _, mib = item.partition(":")
        try:
            out.append(Gpu(int(index), "simulated", int(mib), int(mib)))
        except ValueError:
            raise UserError(f"NERSELECT_GPU_BUDGET: {item!r} is not INDEX:MIB (e.g. 0:81000)") from None
    return out


def _smi(query: str, what: str) -> list[list[str]]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, f"--query-{what}={query}", "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]


def gpus() -> list[Gpu]:
    """The cards jobs may use, with their free memory now; [] on a machine without one (jobs run on CPU)."""
    budget = variable("NERSELECT_GPU_BUDGET").text()
    if budget is not None:
        return parse_budget(budget)
    out = []
    for row in _smi("index,name,memory.total,memory.free", "gpu"):
        try:
            out.append(Gpu(int(row[0]), row[1], int(float(row[2])), int(float(row[3]))))
        except (IndexError, ValueError):
            continue
    return out


def used_by_pid() -> dict[int, int]:
    """MiB each process holds on the cards (nvidia-smi compute apps); {} when simulated or unknown."""
    if variable("NERSELECT_GPU_BUDGET").text() is not None:
        return {}
    out: dict[int, int] = {}
    for row in _smi("pid,used_memory", "compute-apps"):
        try:
            out[int(row[0])] = out.get(int(row[0]), 0) + int(float(row[1]))
        except (IndexError, ValueError):
            continue
    return out


def recipe_key(kind: str, spec: Any) -> str:
    """What decides a job's memory: its kind, preset and encoder (and batch settings when overridden), read from the
    typed params (`Job.spec`; None for a row that no longer validates) through the fields the kind's row names
    (core.runner.kinds: config_fields, encoder_field)."""
    facts = KINDS.get(kind)
    fields, encoder = (facts.config_fields, facts.encoder_field) if facts else ((), "model")
    config = (getattr(spec, fields[0], None) if fields else None) or {}
    batch = "|".join(f"{k}={config[k]}" for k in ("batch_size", "block_size", "grad_accum") if k in config)
    return f"{kind}|{getattr(spec, 'preset', '')}|{getattr(spec, encoder, '') or ''}|{batch}"


def measured_peaks(runs_dir: Path) -> dict[str, int]:
    """The largest peak MiB measured per recipe key in this workspace ({} before any job ran on a card)."""
    path = runs_dir / MEMORY_FILE
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}


def need_mib(runs_dir: Path, kind: str, spec: Any) -> int:
    """MiB to reserve for a job: the measured peak of the same recipe with a margin, else the first-time estimate."""
    peak = measured_peaks(runs_dir).get(recipe_key(kind, spec))
    if peak:
        return int(peak * MARGIN)
    return variable("NERSELECT_JOB_GPU_MIB").integer(minimum=1) or DEFAULT_NEED_MIB


def record_peak(runs_dir: Path, kind: str, spec: Any, peak_mib: int) -> None:
    """Keep the largest peak measured for this recipe (read-modify-write of a small file; a lost update between
    two jobs ending together only keeps the smaller of two similar peaks)."""
    memory = measured_peaks(runs_dir)
    key = recipe_key(kind, spec)
    if peak_mib > memory.get(key, 0):
        memory[key] = int(peak_mib)
        atomic_write_json(runs_dir / MEMORY_FILE, memory)


def outstanding(reservations: Sequence[Grant], used: Mapping[int, int]) -> dict[int, int]:
    """Per card: memory promised to running jobs that they do not hold yet (reserved minus what the pid uses)."""
    out: dict[int, int] = {}
    for r in reservations:
        if isinstance(r.gpu, int):
            out[r.gpu] = out.get(r.gpu, 0) + max(0, r.reserved_mib - used.get(r.pid if r.pid is not None else -1, 0))
    return out


def place(need: int, cards: Sequence[Gpu], promised: Mapping[int, int], busy: Sequence[int] = ()) -> int | None:
    """The card with the most room left that fits `need` MiB; a job larger than any card's room still gets an
    idle card (its estimate may be pessimistic; running out of memory then shrinks its micro-batch). None: wait."""
    room = {g.index: g.free_mib - promised.get(g.index, 0) for g in cards}
    fits = [g.index for g in cards if room[g.index] >= need]
    if fits:
        return max(fits, key=lambda i: room[i])
    idle = [g.index for g in cards if g.index not in set(busy)]
    return max(idle, key=lambda i: room[i]) if idle else None


def assign(runs_dir: Path, kind: str, spec: Any, run_dir: Path, cards: Sequence[Gpu],
           promised: dict[int, int], busy: list[int]) -> Grant | None:
    """The device a queued training job gets, written to its run folder (`promised` and `busy` are updated, so
    the next job of the same pass sees the room taken); None when it must wait for room. No card: the CPU."""
    if not cards:
        device = Grant()
    else:
        need = need_mib(runs_dir, kind, spec)
        index = place(need, cards, promised, busy)
        if index is None:
            return None
        card = next(g for g in cards if g.index == index)
        promised[index] = promised.get(index, 0) + need
        busy.append(index)
        device = Grant(index, card.name, card.total_mib, need)
    atomic_write_json(Path(run_dir) / DEVICE_FILE, device.to_dict())
    return device


def record_job_peak(runs_dir: Path, kind: str, spec: Any, device: Grant | None) -> None:
    """After a job on a card (in its own process): its peak memory, so the next job of the recipe reserves that."""
    import sys

    if device is None or device.gpu is None or "torch" not in sys.modules:
        return
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        peak = int(torch.cuda.max_memory_reserved() / 2**20)
        if peak:
            record_peak(runs_dir, kind, spec, peak)


def read_device(run_dir: Path) -> Grant | None:
    try:
        data = json.loads((Path(run_dir) / DEVICE_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return Grant.from_dict(data) if isinstance(data, dict) else None


def describe(device: Grant | None) -> str:
    """'GPU 1 (NVIDIA H100, 8,192 MiB reserved)' or 'CPU', as the Runs page and the log say it."""
    if device is None or device.gpu is None:
        return "CPU"
    return f"GPU {device.gpu} ({device.name or '?'}, {device.reserved_mib:,} MiB reserved)"


# --------------------------------------------------------------------------- out of memory


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's own OutOfMemoryError, and the raw CUDA/cuBLAS errors that say the same when the caching allocator is
    not the one that failed (a kernel or library loaded late on a nearly full card).

    >>> is_out_of_memory(RuntimeError("CUDA error: out of memory\\nCUDA kernel errors might be reported..."))
    True
    >>> is_out_of_memory(RuntimeError("CUDA error: device-side assert triggered"))
    False
    """
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:
        pass
    return any(m in str(exc) for m in ("CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED"))


def smaller_micro_batch(kind: str, params: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The same job with twice the gradient accumulation (half the micro-batch, the same effective batch, so the
    same recipe) and what changed; None when the kind cannot shrink or has shrunk MAX_OOM_RETRIES times."""
    fields = KINDS[kind].config_fields if kind in KINDS else ()
    if not fields:
        return None
    new = dict(params)
    changes = []
    for f in fields:
        config = dict(new.get(f) or {})
        accum = int(config.get("grad_accum", 1))
        if accum >= 2 ** MAX_OOM_RETRIES:
            return None
        config["grad_accum"] = accum * 2
        new[f] = config
        changes.append(f"{f} grad_accum {accum} -> {accum * 2}")
    return new, "; ".join(changes)
