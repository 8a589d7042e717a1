"""Experiment cells at once: worker processes placed on the cards' free memory, or Ray tasks with fractional GPUs.

A study cell of the default MiniLM uses a small share of a card (issue 45: eight cells started by hand shared one H100
at 14 GB and ran 3.4x the one-at-a-time rate), so one experiment runs several. Each worker process builds its
ExperimentCells once, from the guarded corpora sent at its start, and runs the cells the parent hands it in the same
folders as one at a time: a resumed run keeps finished cells whatever ran them, and folders two cells share (a seed's
TAPT models, the base encoder's probe, an embedding cache) are written under a lock (core.data.atomic.exclusive). A
cell that reads B1/B2 is handed out only after its seed's TAPT cell finished, so it never holds a slot waiting.

Why not concurrent.futures.ProcessPoolExecutor alone: its workers are interchangeable, and each slot here has its
own card and thread count, so each slot is one single-process pool driven by a thread.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.environment import visible_devices
from core.runner.devices import Gpu, Grant, gpus, is_out_of_memory, need_mib, record_job_peak
from core.runner.params import AUTO

if TYPE_CHECKING:
    from core.data.corpus import Corpus
    from core.experiments.cell_clock import TimeLimit
    from core.runner.jobs import JobContext
    from core.runner.params import ExperimentParams

SLOTS_DIR = "slots"  # in the run folder: each slot's progress (slot-K.json) and the STOP file that ends every slot
CELLS_CLASS = "core.experiments.cells:ExperimentCells"


@dataclass(frozen=True)
class Slot:
    """One worker: its card (nvidia-smi's index; None: the CPU) and the torch threads it may use."""

    index: int
    gpu: int | None
    threads: int


def visible_cards() -> list[Gpu]:
    """The cards this process may hand to workers: all, or those CUDA_VISIBLE_DEVICES names (a background job
    sees the card the runner placed it on)."""
    cards = gpus()
    visible = visible_devices()
    if visible is None or not cards:
        return cards
    wanted = {int(v) for v in visible if v.isdigit()}
    return [g for g in cards if g.index in wanted]


def plan_slots(parallel: int | str, cards: Sequence[Gpu], need: int, n_cells: int, cpus: int) -> list[Slot]:
    """How many cells run at once and where. 'auto': as many as the cards' free memory fits at `need` MiB a cell
    (at least one), never more than the cells or the CPU cores (each worker drives its card from one core); on a
    machine without cards, one. A count: that many, each on the card with the most room left.

    >>> [s.gpu for s in plan_slots("auto", [Gpu(0, "a", 20000, 20000), Gpu(1, "b", 9000, 9000)], 8000, 10, 16)]
    [0, 0, 1]
    >>> plan_slots("auto", [], 8000, 10, 2)
    [Slot(index=0, gpu=None, threads=2)]
    """
    if parallel == AUTO:
        fits = sum(max(0, g.free_mib // max(1, need)) for g in cards)
        n = max(1, min(fits, n_cells, cpus)) if cards else 1
    else:
        n = max(1, min(int(parallel), max(1, n_cells)))
    threads = max(1, cpus // n)
    if not cards:
        return [Slot(k, None, threads) for k in range(n)]
    promised = {g.index: 0 for g in cards}
    out = []
    for k in range(n):
        card = max(cards, key=lambda g: (g.free_mib - promised[g.index], -g.index))
        promised[card.index] += need
        out.append(Slot(k, card.index, threads))
    return out


@dataclass(frozen=True)
class CellTask:
    """One cell to run; `after`: the plan index of the cell it needs finished first (its seed's TAPT cell)."""

    row: str
    seed: int
    budget: int | float | str | None
    lc_size: int
    label: str
    after: int | None = None
    weight: float = 1.0  # its expected share of the plan's time (core.experiments.cell_phases): the bar follows the clock


@dataclass
class WorkerSpec:
    """What a worker needs to build the experiment's cells: sent once, when the worker starts."""

    workspace: str
    run_dir: str
    params: ExperimentParams
    refs: dict[str, Any]
    corpora: dict[str, Corpus]  # tc, dc (guarded), lc, dev, test
    cells_class: str = CELLS_CLASS  # module:class of the parent's ExperimentCells (a test's subclass too)
    job_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- the worker side

_WORKER: dict[str, Any] = {}


class SlotProgress:
    """A worker's progress: kept in its slot file for the parent (throttled), and the parent's STOP file obeyed."""

    def __init__(self, run_dir: Path, name: str):
        self.folder = Path(run_dir) / SLOTS_DIR
        self.path = self.folder / f"{name}.json"
        self.cell = ""
        self.weight = 1.0  # the running cell's CellTask.weight, for the parent's bar
        self._last = 0.0

    def __call__(self, fraction: float, message: str = "") -> None:
        from core.runner.jobstore import JobCancelled

        if (self.folder / "STOP").exists():
            raise JobCancelled()
        now = time.time()
        if now - self._last > 1.0 or fraction >= 1.0:
            self._last = now
            from core.data.atomic import atomic_write_json

            atomic_write_json(self.path, {"fraction": fraction, "weight": self.weight,
                                          "message": f"{self.cell}{message}"[:300], "time": now})


def _worker_cells(spec: WorkerSpec):
    """The worker's ExperimentCells, built once per process and run folder."""
    import importlib

    from core.data.workspace import Workspace
    from core.runner.jobs import JobContext

    if _WORKER.get("run_dir") != spec.run_dir:
        module, name = spec.cells_class.split(":")
        progress = SlotProgress(Path(spec.run_dir), "worker")
        ctx = JobContext(Workspace(spec.workspace), Path(spec.run_dir), None, on_progress=progress)
        c = spec.corpora
        cells = getattr(importlib.import_module(module), name)(spec.params, ctx, spec.refs, c["tc"], c["dc"], c["lc"],
                                                               c["dev"], c["test"])
        cells.recipe_checked = True  # the parent checked the run folder's recipe before handing out cells
        _WORKER.update(run_dir=spec.run_dir, cells=cells, progress=progress)
    return _WORKER["cells"]


def start_worker(spec: WorkerSpec, slot: Slot) -> None:
    """A worker process's first step: its card and thread count, set before torch opens either."""
    if slot.gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(slot.gpu)
    os.environ.setdefault("NERSELECT_TORCH_THREADS", str(slot.threads))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _WORKER["spec"], _WORKER["slot"] = spec, slot
    _worker_cells(spec)


def run_task(task: CellTask, slot: Slot | None = None, spec: WorkerSpec | None = None) -> dict[str, Any]:
    """Run one cell in this worker; the cell records where it ran (`slot`; `device` by the cell itself), and its
    peak GPU memory is kept for the next experiment's placement."""
    spec = spec or _WORKER["spec"]
    slot = slot or _WORKER["slot"]
    cells = _worker_cells(spec)
    progress: SlotProgress = _WORKER["progress"]
    progress.path = progress.folder / (f"slot-{slot.index}.json" if slot.index >= 0 else f"task-{os.getpid()}.json")
    progress.cell = f"{task.label} seed {task.seed}: "
    progress.weight = task.weight
    try:
        cell = cells.run_cell(task.row, task.seed, progress, budget=task.budget, lc_size=task.lc_size)
    finally:
        progress.path.unlink(missing_ok=True)  # the parent counts a running cell's fraction, not a finished one's
    # the runner's own recording of a job's peak (its largest over the worker's cells is kept); Ray chose the card
    record_job_peak(Path(cells.ctx.workspace.runs_dir), "experiment", spec.params,
                    Grant(slot.gpu if slot.gpu is not None else "ray"))
    return {**cell, "slot": {"index": slot.index, "gpu": slot.gpu}}


def _ray_task(spec: WorkerSpec, task: CellTask, *after: Any) -> dict[str, Any]:
    """A cell as a Ray task (`after`: the finished cells it waited for, unused). Ray sets the card itself."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("NERSELECT_TORCH_THREADS", "1")
    return run_task(task, Slot(-1, None, 1), spec)


# --------------------------------------------------------------------------- the parent side


class _Board:
    """The parent's view of the plan: what is pending, running, finished, and the first error."""

    def __init__(self, tasks: Sequence[CellTask], limit: TimeLimit | None = None,
                 finished: Sequence[dict[str, Any]] = ()):
        self.tasks = list(tasks)
        self.limit, self.finished = limit, list(finished)  # a time limit, and the cells that time it besides results
        self.pending = list(range(len(tasks)))
        self.running: dict[int, int] = {}  # task index -> slot index
        self.results: dict[int, dict[str, Any]] = {}
        self.error: BaseException | None = None
        self.notes: list[str] = []  # what the parent logs: a slot given up after running out of memory
        self.live = 0
        self.shown = 0.0  # the bar's furthest point: a cell between its slot file's removal and finish() counts nowhere
        self.cond = threading.Condition()

    def take(self, slot: int) -> int | None:
        """The next task whose prerequisite finished (waits while one is still running); None: nothing left. A task
        that would end past the time limit is dropped, with the tasks that wait for it."""
        with self.cond:
            while self.error is None and self.pending:
                ready = [i for i in self.pending if self.tasks[i].after is None or self.tasks[i].after in self.results]
                for i in ready:
                    if self._fits(i):
                        self.pending.remove(i)
                        self.running[i] = slot
                        return i
                    self._drop(i)
                if self.pending and not ready:
                    self.cond.wait(1.0)
            return None

    def _fits(self, i: int) -> bool:
        task = self.tasks[i]
        return self.limit is None or self.limit.fits(task.row, [*self.finished, *self.results.values()],
                                                     f"{task.label} seed {task.seed}")

    def _drop(self, i: int) -> None:
        """Leave out a task that does not fit, and every pending task that waits for it (they could never start)."""
        self.pending.remove(i)
        for j in [j for j in self.pending if self.tasks[j].after == i]:
            if self.limit is not None:
                self.limit.skipped.append(f"{self.tasks[j].label} seed {self.tasks[j].seed}")
            self._drop(j)
        self.cond.notify_all()

    def finish(self, i: int, cell: dict[str, Any] | None = None, error: BaseException | None = None,
               retry: bool = False) -> None:
        with self.cond:
            self.running.pop(i, None)
            if cell is not None:
                self.results[i] = cell
            elif retry:
                self.pending.insert(0, i)
            elif self.error is None:
                self.error = error
            self.cond.notify_all()


def _slot_thread(board: _Board, spec: WorkerSpec, slot: Slot) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=start_worker, initargs=(spec, slot)) as pool:
        while (i := board.take(slot.index)) is not None:
            try:
                board.finish(i, pool.submit(run_task, board.tasks[i]).result())
            except BaseException as exc:  # handed to the parent thread, which re-raises it
                with board.cond:
                    others = board.live > 1
                    if others and is_out_of_memory(exc):  # the card is fuller than measured: one slot fewer, cell again
                        board.live -= 1
                        board.notes.append(f"slot {slot.index} ran out of memory in {board.tasks[i].label} seed "
                                           f"{board.tasks[i].seed}: the cell runs again, {board.live} at once from now")
                        board.finish(i, retry=True)
                        return
                board.finish(i, error=exc)
                return
    with board.cond:
        board.live -= 1
        board.cond.notify_all()


def _slot_messages(run_dir: Path) -> list[tuple[float, float, str]]:
    """Each running cell's (fraction, weight, message) from its slot file."""
    out = []
    for path in sorted((run_dir / SLOTS_DIR).glob("*.json")):
        try:
            data = json.loads(path.read_text("utf-8"))
            out.append((float(data["fraction"]), float(data.get("weight", 1.0)), str(data.get("message", ""))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _report(ctx: JobContext, board: _Board, width: int) -> None:
    """The parent's progress: the finished cells' weights plus the running cells' own fractions of theirs (read from
    their slot files), over the plan's weight: a pretraining cell moves the bar by its share of the clock."""
    slots = _slot_messages(Path(ctx.run_dir))
    weight = [t.weight for t in board.tasks]
    running = sum(f * w for f, w, _ in slots) if board.running else 0.0
    done = len(board.results)
    finished = sum(weight[i] for i in board.results) + min(running, sum(weight[i] for i in board.running))
    fraction = board.shown = max(board.shown, finished / max(sum(weight), 1e-9))
    first = next((m for _, _, m in slots if m), "")
    ctx.progress(fraction, f"{done} of {len(board.tasks)} cells done, {len(board.running)} running ({width} at once)"
                 + (f"; {first}" if first else ""))


def _prepare(run_dir: Path) -> Path:
    folder = Path(run_dir) / SLOTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        path.unlink(missing_ok=True)
    return folder


def run_local(tasks: Sequence[CellTask], spec: WorkerSpec, slots: Sequence[Slot], ctx: JobContext,
              limit: TimeLimit | None = None, finished: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any] | None]:
    """Run the tasks on worker processes, one per slot; cells come back in plan order, None for a task the time
    `limit` left out (`finished`: earlier cells, which time the ones to come). A cell that runs out of memory while
    other slots are busy runs again once one slot fewer shares the card; any other failure (or a cancel) stops every
    slot, and the finished cells stay for a resume."""
    folder = _prepare(Path(ctx.run_dir))
    board = _Board(tasks, limit, finished)
    board.live = len(slots)
    ctx.log(f"{len(tasks)} cells, {len(slots)} at once: " + ", ".join(
        f"slot {s.index} on {'GPU ' + str(s.gpu) if s.gpu is not None else 'CPU'} ({s.threads} threads)" for s in slots))
    threads = [threading.Thread(target=_slot_thread, args=(board, spec, s), daemon=True) for s in slots]
    try:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            with board.cond:
                board.cond.wait(1.0)
                notes, board.notes[:] = list(board.notes), []
            for note in notes:
                ctx.log(note)
            _report(ctx, board, board.live)
            if board.error is not None:
                break
    finally:
        (folder / "STOP").touch()  # every worker's next progress call raises: no cell keeps running unwatched
        for t in threads:
            t.join()
    if board.error is not None:
        raise board.error
    skipped = len(limit.skipped) if limit is not None else 0
    if len(board.results) + skipped < len(tasks):
        raise RuntimeError(f"{len(tasks) - len(board.results)} cells did not run")  # a bug, not a user mistake
    return [board.results.get(i) for i in range(len(tasks))]


def run_ray(tasks: Sequence[CellTask], spec: WorkerSpec, address: str, need: int, ctx: JobContext,
            cards: Callable[[], Sequence[Gpu]] = visible_cards) -> list[dict[str, Any]]:
    """Run the tasks as Ray tasks: a share of a GPU each where the cluster has GPUs (the measured MiB a cell needs
    over the smallest card's memory), one CPU each otherwise. The workers write the same run folder, so a cluster
    across machines needs the workspace on a shared filesystem."""
    from core.lm.distributed import connect

    ray = connect(address)
    gpus_in_cluster = float(ray.cluster_resources().get("GPU", 0))
    known = [g.total_mib for g in cards()]
    share = 0.0
    if gpus_in_cluster:
        share = min(1.0, max(0.05, need / min(known))) if known else 0.25
    folder = _prepare(Path(ctx.run_dir))
    remote = ray.remote(_ray_task)
    spec_ref = ray.put(spec)
    refs: list[Any] = []
    for task in tasks:
        after = [refs[task.after]] if task.after is not None else []
        refs.append(remote.options(num_cpus=1, num_gpus=share, max_retries=0).remote(spec_ref, task, *after))
    ctx.log(f"{len(tasks)} cells as Ray tasks on {address} ({gpus_in_cluster:g} GPUs in the cluster"
            + (f", {share:.2f} of a GPU each)" if share else ", one CPU each)"))
    board = _Board(tasks)
    index = {ref: i for i, ref in enumerate(refs)}
    left = list(refs)
    try:
        while left:
            done, left = ray.wait(left, num_returns=1, timeout=1.0)
            for ref in done:
                board.results[index[ref]] = ray.get(ref)
            board.running = {i: 0 for i in range(len(tasks)) if i not in board.results}
            _report(ctx, board, len(board.running))
    except BaseException:
        (folder / "STOP").touch()
        for ref in left:
            ray.cancel(ref)
        raise
    return [board.results[i] for i in range(len(tasks))]


def cell_need(ctx: JobContext, params: ExperimentParams) -> int:
    """MiB a cell needs on a card: the peak measured for this recipe in the workspace, else the first-time estimate."""
    return need_mib(Path(ctx.workspace.runs_dir), "experiment", params)
