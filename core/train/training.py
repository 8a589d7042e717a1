"""The shared training loop (`TrainLoop`) and its utilities: seeding, RNG state, device and
precision, atomic checkpoints.

Both trainers (core.train.mlm, core.train.ner_train) run on `TrainLoop` and checkpoint through `Checkpointer`, which writes a
whole checkpoint into a temp folder first and only then swaps it in with renames, so
a `kill -9` at any moment leaves either the new or the previous checkpoint intact:

    run_dir/checkpoint/        newest complete checkpoint (state.pt + trainer_state.json + COMPLETE)
    run_dir/checkpoint.prev/   the one before it (used if `checkpoint` is missing or unreadable)

>>> import tempfile; ck = Checkpointer(tempfile.mkdtemp())
>>> _ = ck.save({"step": 3}, step=3); ck.load()["step"]
3
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.data.atomic import honour_umask
from core.environment import variable
from core.errors import UserError
from core.lm.models import pick_device
from core.progress import Progress

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
    """'bf16' on GPUs that support it, 'fp16' on older GPUs. On a CPU: 'bf16' only when asked for,
    or with 'auto' when the CPU has native bf16 (AMX / avx512_bf16) AND a timing probe shows bf16
    matmuls beating fp32 (`cpu_bf16_pays`); elsewhere bf16 is emulated and slower, so 'fp32'."""
    if not device.startswith("cuda"):
        if precision == "bf16":
            return "bf16"
        if precision == "auto" and (pinned := cpu_precision_pinned()):
            return pinned
        return "bf16" if precision == "auto" and cpu_bf16_pays() else "fp32"
    if precision != "auto":
        return precision
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def cpu_precision_pinned() -> str | None:
    """$NERSELECT_CPU_PRECISION: the timing probe below answers differently on another CPU, or on this one under load,
    and cells of two precisions never pair (core.experiments.records.ran_alike), so a study pins it."""
    value = variable("NERSELECT_CPU_PRECISION").text()
    if value is None:
        return None
    if value not in ("fp32", "bf16"):
        raise UserError(f"$NERSELECT_CPU_PRECISION is {value!r}: expected fp32 or bf16")
    return value


_BF16_PAYS: bool | None = None


def cpu_bf16_pays(size: int = 384, reps: int = 20) -> bool:
    """Detect, then measure: native bf16 flags in /proc/cpuinfo, and a bf16 matmul of the encoder's
    width at least 1.3x faster than fp32. Measured once per process (a few ms)."""
    global _BF16_PAYS
    if _BF16_PAYS is None:
        from core.lm.precision import cpu_has_bf16

        _BF16_PAYS = False
        if cpu_has_bf16():
            # a private generator: drawing from the global one here would shift every later draw of the first
            # training run in a process (called after set_seed), so the same cell would train differently
            # depending on whether it ran first
            gen = torch.Generator().manual_seed(0)
            a = torch.randn(512, size, generator=gen)
            b = torch.randn(size, 4 * size, generator=gen)

            def clock(x: torch.Tensor, y: torch.Tensor) -> float:
                x @ y  # warm-up
                t = time.perf_counter()
                for _ in range(reps):
                    x @ y
                return time.perf_counter() - t

            _BF16_PAYS = clock(a.bfloat16(), b.bfloat16()) * 1.3 < clock(a, b)
    return _BF16_PAYS


def autocast(device: str, precision: str) -> contextlib.AbstractContextManager:
    if precision == "fp32":
        return contextlib.nullcontext()
    if not device.startswith("cuda"):
        return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
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
    if (threads := variable("NERSELECT_TORCH_THREADS").integer(minimum=1)) is not None:
        torch.set_num_threads(threads)


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
    honour_umask(tmp, directory=True)  # mkdtemp makes 0700: the final folder must read like any other
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
        honour_umask(tmp, directory=True)
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
            except Exception:
                continue
        return None

    def discard(self) -> None:
        """Drop the resume state once the trainer has saved its final model: it holds the optimizer's moments
        (about 2.5x the model) twice, and a study's cells left ~50 GB of it behind. Called only after the model is
        on disk, so a kill in between retrains at worst; it never loses a model."""
        for p in (self.path, self.prev):
            shutil.rmtree(p, ignore_errors=True)
        self.clear_temp()

    def clear_temp(self) -> None:
        """Remove temp folders left by a process killed in the middle of a save."""
        for p in self.run_dir.glob(f".{self.path.name}.tmp-*"):
            shutil.rmtree(p, ignore_errors=True)


def adamw(groups: list[dict[str, Any]], **kwargs: Any) -> torch.optim.AdamW:
    """AdamW with the fused kernel where torch has one for the parameters' device (CPU since torch 2.4,
    CUDA): one pass over each tensor instead of ~10 elementwise ops. Measured on the default MiniLM's
    22M parameters, 1 CPU thread: 39 ms per step fused vs 185 ms with foreach (the default), same
    weights to 1.5e-8. $NERSELECT_ADAMW=foreach restores the default (bench_training compares both)."""
    if (variable("NERSELECT_ADAMW").text() or "fused") == "fused":
        try:
            return torch.optim.AdamW(groups, fused=True, **kwargs)
        except (RuntimeError, TypeError, ValueError):  # a device or dtype without the fused kernel
            pass
    return torch.optim.AdamW(groups, **kwargs)


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


# --------------------------------------------------------------------------- the shared training loop


@dataclass
class LoopConfig:
    """What the loop needs from a trainer's config (core.train.mlm.MlmConfig, core.train.ner_train.NerConfig)."""

    epochs: int
    seed: int
    max_steps: int | None = None  # cap on optimizer steps
    grad_accum: int = 1  # micro-batches per optimizer step
    grad_clip: float = 1.0
    checkpoint_every: int = 100  # optimizer steps between checkpoints (an epoch end saves only once this many passed)
    log_every: int = 10  # optimizer steps between metric rows
    eval_every: int = 1  # epochs between dev evaluations (the last epoch is always evaluated)
    patience: int | None = None  # epochs without a dev gain > min_delta before stopping; None: no early stopping
    min_delta: float = 0.0  # a dev gain at most this large counts as flat (the best model is still kept)
    unit: str = "examples"  # what `forward` counts, for the `<unit>_per_s` metric
    checkpoint_at_end: bool = True  # False: the trainer writes its final model itself, a last checkpoint is wasted I/O


@dataclass
class LoopState:
    """Where a run stands; saved in every checkpoint, so a resumed run continues exactly."""

    step: int = 0
    epoch: int = 0
    position: int = 0  # micro-batches of `epoch` already done
    best: float = -1.0
    best_epoch: int = -1
    bad_epochs: int = 0
    finished: bool = False  # early stopping or the step cap ended training: a resume trains no further
    grad_accum: int | None = None  # the micro-batches per step `position` counts in (None: a checkpoint before 2026-11)

    @classmethod
    def from_checkpoint(cls, state: dict[str, Any]) -> LoopState:
        if "loop" in state:
            return cls(**state["loop"])
        # checkpoints written before the shared loop (core.train.ner / core.train.mlm of early 2026)
        return cls(step=state["step"], epoch=state["epoch"], position=state.get("batch_in_epoch", state.get("micro_in_epoch", 0)),
                   best=state.get("best_f1", -1.0), best_epoch=state.get("best_epoch", -1), bad_epochs=state.get("bad_epochs", 0))


class TrainLoop:
    """One training loop for MLM and NER: epochs of micro-batches in a seeded order, gradient
    accumulation, clipping, (b)f16 scaling, metrics and progress, resumable checkpoints, dev
    evaluation every `eval_every` epochs with early stopping, and the best model kept.

    The trainer supplies the parts that differ:
      plan(epoch) -> micro-batches (lists of example indices), a pure function of (seed, epoch),
                     so a resumed run replays the same order and skips what it did;
      forward(indices) -> (loss tensor, units) for one micro-batch;
      evaluate() -> dev score (higher is better), or None for no dev evaluation;
      on_best(score, epoch) -> remember the best model (cheaply, e.g. in memory);
      flush_best() -> write the remembered best model; called before every checkpoint and at the
                     end, so a checkpoint never claims a best score the model folder lacks;
      extra -> trainer state saved with each checkpoint (labels, config).
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, scaler: Any,
                 config: LoopConfig, plan: Callable[[int], list[list[int]]], forward: Callable[[list[int]], tuple[torch.Tensor, int]],
                 device: str, precision: str, total_steps: int, checkpoint_dir: str | Path | None = None,
                 evaluate: Callable[[], dict[str, Any] | None] | None = None, score_key: str = "f1",
                 on_best: Callable[[float, int], None] | None = None, flush_best: Callable[[], None] | None = None,
                 extra: dict[str, Any] | None = None, progress: Progress | None = None, log: Log | None = None,
                 metric: Metric | None = None, progress_message: Callable[[LoopState, float], str] | None = None,
                 eval_prefix: str = "dev", on_step: Callable[[LoopState], None] | None = None):
        self.model, self.optimizer, self.scheduler, self.scaler = model, optimizer, scheduler, scaler
        self.config, self.plan, self.forward = config, plan, forward
        self.device, self.precision, self.total_steps = device, precision, max(1, total_steps)
        self.ckpt = Checkpointer(checkpoint_dir) if checkpoint_dir is not None else None
        self.evaluate, self.score_key, self.on_best, self.flush_best = evaluate, score_key, on_best, flush_best
        self.extra = extra or {}
        self.progress, self.log = progress, log or (lambda _m: None)
        self.metric = metric or (lambda **_k: None)
        self.progress_message = progress_message or (lambda st, loss: f"step {st.step}/{self.total_steps}, loss {loss:.3f}")
        self.eval_prefix = eval_prefix
        self.on_step = on_step  # after every optimizer step (MLM keeps model snapshots for checkpoint selection)
        self.state = LoopState()
        # Examples of the current epoch trained on before its plan changed (an out-of-memory retry halves the
        # micro-batch: core.runner.devices.smaller_micro_batch), left out of the new plan; and the plan being run.
        self._skipped: set[int] = set()
        self._micros: list[list[int]] = []
        self.last_saved = 0
        self.units = 0
        self.seconds = 0.0

    # ---- checkpoints
    def load_checkpoint(self) -> dict[str, Any] | None:
        """The newest checkpoint of `checkpoint_dir` (None when there is none), before the model is built."""
        return self.ckpt.load() if self.ckpt is not None else None

    def restore(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        optimizer_to(self.optimizer, self.device)
        self.scheduler.load_state_dict(state["scheduler"])
        if "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])
        set_rng_state(state["rng"])
        self.state = LoopState.from_checkpoint(state)
        self.state.finished = False  # recomputed by run() from this call's step cap and patience, which may differ
        self.last_saved = self.state.step
        self._skipped = set(state.get("epoch_skipped", ()))
        saved, now = self.state.grad_accum, self.config.grad_accum
        if saved is not None and saved != now and self.state.position:
            # `position` counts micro-batches of the old size, which the new plan cuts differently (NER's length
            # buckets regroup them): the examples done are left out of the new plan instead, each trained once
            self._skipped = set(state["epoch_done"])
            self.state.position = 0
            self.log(f"the micro-batch changed since the checkpoint (grad_accum {saved} -> {now}): the "
                     f"{len(self._skipped):,} examples epoch {self.state.epoch + 1} already trained on are left out of it")
        self.state.grad_accum = now

    def save_checkpoint(self) -> None:
        if self.ckpt is None:
            return
        if self.flush_best is not None:
            self.flush_best()
        self.state.grad_accum = self.config.grad_accum
        done = self._skipped.union(*self._micros[:self.state.position])
        self.ckpt.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                        "scheduler": self.scheduler.state_dict(), "scaler": self.scaler.state_dict(), "rng": rng_state(),
                        "loop": asdict(self.state), "epoch_skipped": sorted(self._skipped), "epoch_done": sorted(done),
                        **self.extra}, self.state.step)
        self.last_saved = self.state.step

    # ---- the loop
    def _optimizer_step(self) -> None:
        self.scaler.unscale_(self.optimizer)
        if self.config.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

    def _evaluate(self) -> None:
        st, cfg = self.state, self.config
        if self.evaluate is None:
            return
        # Dev scoring runs at the training precision: on a bf16 CPU or GPU the fp32 forward of a
        # 190-sentence DEV cost more than the epoch's training steps (it only picks the best epoch;
        # `evaluate()` of TEST stays fp32).
        with autocast(self.device, self.precision):
            scores = self.evaluate()
        if scores is None:
            return
        score = float(scores[self.score_key])
        gained = score > st.best + cfg.min_delta
        if score > st.best:
            st.best, st.best_epoch = score, st.epoch + 1
            if self.on_best is not None:
                self.on_best(score, st.epoch + 1)
        st.bad_epochs = 0 if gained else st.bad_epochs + (cfg.eval_every or 1)
        p = self.eval_prefix
        self.metric(step=st.step, epoch=st.epoch + 1, **{f"{p}_{k}": v for k, v in scores.items() if isinstance(v, float)})
        detail = " ".join(f"{k[0].upper()} {scores[k]:.4f}" for k in ("precision", "recall") if k in scores)
        self.log(f"epoch {st.epoch + 1}: {p} {self.score_key.upper()} {score:.4f}" + (f" ({detail})" if detail else "")
                 + (" best" if st.best_epoch == st.epoch + 1 else f", best {st.best:.4f} at epoch {st.best_epoch}")
                 + ("" if gained or cfg.patience is None else f" ({st.bad_epochs}/{cfg.patience} epochs without a gain > {cfg.min_delta})"))
        if cfg.patience is not None and st.bad_epochs >= cfg.patience:
            self.log(f"early stopping: no {p} {self.score_key.upper()} gain above {cfg.min_delta} for {st.bad_epochs} epochs")
            st.finished = True

    def run(self) -> LoopState:
        """Train until the epochs, the step cap or early stopping end it; returns the final state."""
        cfg, st = self.config, self.state
        if self.ckpt is not None:
            self.ckpt.clear_temp()
        if (cfg.max_steps and st.step >= cfg.max_steps) or (cfg.patience is not None and self.evaluate is not None
                                                             and st.bad_epochs >= cfg.patience):
            st.finished = True
        started = time.time()
        # The loss is summed on the device and read back once per metric row: a float() per micro-batch waits for the
        # GPU to finish the step (a host-device sync) and keeps the CPU from queueing the next one (issue 25).
        window_t, window_units, window_loss, window_micro = time.time(), 0, torch.zeros((), device=self.device), 0
        shown: float | None = None  # the loss the progress message shows: the last metric row's mean
        self.model.train()
        while st.epoch < cfg.epochs and not st.finished:
            micros = self.plan(st.epoch)
            if self._skipped:
                micros = [m for m in ([i for i in mb if i not in self._skipped] for mb in micros) if m]
            self._micros = micros
            accum = 0
            stopped_mid_epoch = False
            group = cfg.grad_accum
            for m_i in range(st.position, len(micros)):
                if accum == 0:  # an epoch's last group may be short: its step is the mean of the micro-batches it has
                    group = min(cfg.grad_accum, len(micros) - m_i)
                with autocast(self.device, self.precision):
                    loss, units = self.forward(micros[m_i])
                    scaled = loss / group if group > 1 else loss
                self.scaler.scale(scaled).backward()
                self.units += units
                window_units += units
                window_loss += loss.detach().float().reshape(())
                window_micro += 1
                accum += 1
                st.position = m_i + 1
                if accum < cfg.grad_accum and m_i < len(micros) - 1:
                    continue
                accum = 0
                self._optimizer_step()
                st.step += 1
                if self.on_step is not None:
                    self.on_step(st)
                last_in_epoch = m_i == len(micros) - 1
                if st.step % cfg.log_every == 0 or last_in_epoch or st.step == self.total_steps:
                    shown = float(window_loss) / window_micro  # the one sync of a metric window
                    dt = max(time.time() - window_t, 1e-9)
                    self.metric(step=st.step, epoch=st.epoch + 1, loss=shown,
                                lr=self.scheduler.get_last_lr()[0], **{f"{cfg.unit}_per_s": window_units / dt})
                    window_t, window_units, window_loss, window_micro = time.time(), 0, torch.zeros((), device=self.device), 0
                elif shown is None and self.progress is not None:  # no row yet: the first step's last micro-batch's
                    shown = float(loss.detach())                        # loss (one sync per run)
                if self.progress is not None:
                    self.progress(min(0.999, st.step / self.total_steps), self.progress_message(st, shown))
                if cfg.max_steps and st.step >= cfg.max_steps:
                    st.finished = True
                    stopped_mid_epoch = not last_in_epoch
                    break
                if cfg.checkpoint_every and st.step - self.last_saved >= cfg.checkpoint_every and not last_in_epoch:
                    self.save_checkpoint()
            if stopped_mid_epoch:  # the step cap, mid-epoch: training ends here, so the model is scored on dev as at
                if self.evaluate is not None:  # an epoch's end (a cap below one epoch was never scored, its best -1)
                    self.model.eval()
                    self._evaluate()
                    self.model.train()
                if cfg.checkpoint_at_end:
                    self.save_checkpoint()
                break
            last_epoch = st.epoch + 1 >= cfg.epochs
            if self.evaluate is not None and ((st.epoch + 1) % max(1, cfg.eval_every) == 0 or last_epoch or st.finished):
                self.model.eval()
                self._evaluate()
                self.model.train()
            st.epoch += 1
            st.position = 0
            self._skipped, self._micros = set(), []
            ends = st.finished or last_epoch
            due = bool(cfg.checkpoint_every) and st.step - self.last_saved >= cfg.checkpoint_every
            if (ends and cfg.checkpoint_at_end) or (not ends and due):
                self.save_checkpoint()
        if self.flush_best is not None:
            self.flush_best()
        self.seconds = time.time() - started
        return st
