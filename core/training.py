"""Shared trainer utilities: seeding, RNG state, device and precision, atomic checkpoints.

Both trainers (core.mlm, core.ner) checkpoint through `Checkpointer`, which writes a
whole checkpoint into a temp folder first and only then swaps it in with renames, so
a `kill -9` at any moment leaves either the new or the previous checkpoint intact:

    run_dir/checkpoint/        newest complete checkpoint (state.pt + trainer_state.json + COMPLETE)
    run_dir/checkpoint.prev/   the one before it (used if `checkpoint` is missing or unreadable)

>>> import tempfile; ck = Checkpointer(tempfile.mkdtemp())
>>> ck.save({"step": 3}, step=3); ck.load()["step"]
3
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.models import pick_device

Progress = Callable[[float, str], None]
Log = Callable[[str], None]
Metric = Callable[..., None]


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# --------------------------------------------------------------------------- device and precision


def resolve_precision(device: str, precision: str = "auto") -> str:
    """'bf16' on GPUs that support it, 'fp16' on older GPUs, always 'fp32' on CPU (CPU autocast
    in bf16 is slower than fp32 on most laptop/server CPUs without AMX)."""
    if not device.startswith("cuda"):
        return "fp32"
    if precision != "auto":
        return precision
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def autocast(device: str, precision: str) -> contextlib.AbstractContextManager:
    if precision == "fp32" or not device.startswith("cuda"):
        return contextlib.nullcontext()
    return torch.autocast("cuda", dtype=torch.bfloat16 if precision == "bf16" else torch.float16)


def grad_scaler(device: str, precision: str) -> torch.amp.GradScaler:
    """Loss scaling is only needed for fp16 (bf16 has fp32's exponent range)."""
    return torch.amp.GradScaler("cuda", enabled=device.startswith("cuda") and precision == "fp16")


def device_and_precision(device: str = "auto", precision: str = "auto") -> tuple[str, str]:
    dev = pick_device(device)
    if dev == "cpu":
        apply_cpu_threads()
    return dev, resolve_precision(dev, precision)


def apply_cpu_threads() -> None:
    """Honour $NERSELECT_TORCH_THREADS. On a 2-core machine shared with other work, torch's
    default (one thread per core) spin-waits at every op: one train step of MiniLM measured
    ~10x slower with 2 threads than with 1 while another process used a core."""
    value = os.environ.get("NERSELECT_TORCH_THREADS")
    if value:
        torch.set_num_threads(max(1, int(value)))


# --------------------------------------------------------------------------- atomic folders and checkpoints


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temp folder beside `target`; on success it replaces `target` as a whole.
    On error (or a kill) the temp folder is left behind or removed, never a half `target`."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    try:
        yield tmp
        _fsync_dir(tmp)
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class Checkpointer:
    """Resumable training state in `run_dir/checkpoint` (+ `checkpoint.prev`), swapped in atomically."""

    NAME = "checkpoint"

    def __init__(self, run_dir: str | Path, name: str = NAME):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / name
        self.prev = self.run_dir / f"{name}.prev"

    def save(self, state: dict[str, Any], step: int) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.run_dir, prefix=f".{self.path.name}.tmp-"))
        try:
            torch.save(state, tmp / "state.pt")
            (tmp / "trainer_state.json").write_text(json.dumps({"step": step}), "utf-8")
            with open(tmp / "COMPLETE", "w") as fh:  # written last: a folder without it is never loaded
                fh.write(str(step))
                fh.flush()
                os.fsync(fh.fileno())
            _fsync_dir(tmp)
            # Rotation by renames only: between the two renames the newest state lives in .prev,
            # which load() falls back to, so a kill here loses nothing.
            if self.path.exists():
                shutil.rmtree(self.prev, ignore_errors=True)
                os.replace(self.path, self.prev)
            os.replace(tmp, self.path)
            _fsync_dir(self.run_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.path

    def candidates(self) -> list[Path]:
        return [p for p in (self.path, self.prev) if (p / "COMPLETE").exists() and (p / "state.pt").exists()]

    def latest_step(self) -> int | None:
        for p in self.candidates():
            return int(json.loads((p / "trainer_state.json").read_text("utf-8"))["step"])
        return None

    def load(self, map_location: str = "cpu") -> dict[str, Any] | None:
        """The newest readable checkpoint, or None when there is none."""
        for p in self.candidates():
            try:
                return torch.load(p / "state.pt", map_location=map_location, weights_only=False)
            except Exception:  # noqa: BLE001 - an unreadable checkpoint falls back to the previous one
                continue
        return None

    def clear_temp(self) -> None:
        """Remove temp folders left by a process killed in the middle of a save."""
        for p in self.run_dir.glob(f".{self.path.name}.tmp-*"):
            shutil.rmtree(p, ignore_errors=True)


def optimizer_to(optimizer: torch.optim.Optimizer, device: str) -> None:
    """Optimizer state loaded on CPU must follow the model to the GPU."""
    for state in optimizer.state.values():
        for k, v in state.items():
            if isinstance(v, torch.Tensor):
                state[k] = v.to(device)


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """The shuffled example order of one epoch, a pure function of (seed, epoch), so a resumed
    run replays the same order and skips the batches it already did."""
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    return torch.randperm(n, generator=g).tolist()


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
