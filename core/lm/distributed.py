"""The embedding and LM-scoring passes over DC as Ray Data `map_batches`, for a Ray cluster.

Why Ray Data: it reads the DC Parquet file in blocks on the workers, keeps one model per
actor (GPU actors when the cluster has GPUs, CPU actors otherwise) and streams results back
in input order, so the driver writes them into the same artifacts as the local path.
Results equal the local path's: the same encoder code (`SentenceEncoder`) and the same
LM object run on every worker.

Ray is optional: nothing here is imported unless an address is given (`--ray ADDRESS`, the
app's Ray setting, or `ray=` in core calls). `local` starts a local cluster on this
machine's cores; `local:N` on N CPUs. Any other value is passed to `ray.init(address=...)`,
e.g. `ray://head:10001` or `auto` on a cluster node; the workers import `core` shipped from
here (`py_modules`) and need the same Python packages (requirements.txt) installed.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import UserError
from core.progress import Progress

LOCAL = "local"
_STARTED: dict[str, Any] = {}


def _ray():
    try:
        import ray
        import ray.data
    except ImportError:
        raise UserError("--ray needs Ray: pip install 'ray[data]==2.60.0' (the local path needs no Ray)") from None
    return ray


def connect(address: str) -> Any:
    """`ray` connected to `address` ("local", "local:N", or a cluster address); reused in-process."""
    ray = _ray()
    address = str(address).strip()
    if not address:
        raise UserError("empty Ray address: give 'local' or a cluster address such as ray://head:10001")
    if ray.is_initialized():
        if _STARTED.get("address") == address:
            return ray
        ray.shutdown()
    core_dir = str(Path(__file__).resolve().parents[1])  # the whole `core` package (this file is core/lm/)
    if address == LOCAL or address.startswith(LOCAL + ":"):
        cpus = int(address.split(":", 1)[1]) if ":" in address else (os.cpu_count() or 1)
        # The local workers import `core` from this checkout: a path on PYTHONPATH, nothing uploaded.
        env = {"env_vars": {"PYTHONPATH": str(Path(core_dir).parent), "TOKENIZERS_PARALLELISM": "false",
                            "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
                            "TRANSFORMERS_OFFLINE": os.environ.get("TRANSFORMERS_OFFLINE", "1")}}
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, runtime_env=env,
                 object_store_memory=256 * 1024 * 1024, configure_logging=False)
    else:
        try:
            ray.init(address=address, runtime_env={"py_modules": [core_dir]}, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(f"could not connect to the Ray cluster at {address!r}: {exc}") from None
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # results come back in DC order
    ctx.enable_progress_bars = False
    import logging

    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)  # the CLI shows its own progress bar
    _STARTED["address"] = address
    return ray


def shutdown() -> None:
    """Stop what `connect` started (tests; the CLI exits anyway)."""
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()
    _STARTED.clear()


def _plan(ray: Any) -> dict[str, Any]:
    """Actors per pass: one per GPU when the cluster has GPUs, else one per CPU (1 torch thread each).

    CPU actors reserve half a logical CPU each: reserving whole ones lets the actor pool take
    every CPU, and the Parquet read tasks that feed it then never get scheduled (a deadlock
    seen on a 2-CPU local cluster)."""
    res = ray.cluster_resources()
    gpus = int(res.get("GPU", 0))
    if gpus:
        return {"concurrency": gpus, "num_gpus": 1, "num_cpus": 1, "threads": 4, "device": "cuda"}
    cpus = max(1, int(res.get("CPU", 1)))
    return {"concurrency": cpus, "num_gpus": 0, "num_cpus": 0.5, "threads": 1, "device": "cpu"}


def rows_per_block(n: int, actors: int, lo: int, hi: int) -> int:
    """Rows per Ray block (and per map batch) for n sentences on `actors` actors: at least two
    blocks per actor, so every actor gets work, and within that as large as `hi`, so each
    actor sorts long runs by length (less padding) and per-call overhead stays small."""
    return int(min(hi, max(lo, math.ceil(n / max(1, 2 * actors)))))


def _dataset(ray: Any, source: Any, rows: int):
    """Ray Dataset of DC's `tokens` column (the Parquet file for a workspace corpus, Arrow
    otherwise) cut into blocks of `rows`. Why the cut: Ray Data hands a whole block to one actor,
    and a small DC (or a Parquet row group) is a single block, so one actor worked while the
    others idled (Ray local embedded 5,000 sentences at half the single-process rate).
    `repartition(target_num_rows_per_block=...)` splits blocks as they stream (no shuffle)."""
    from core.data.stream import CorpusStream

    stream = CorpusStream.of(source)
    if stream.path is not None:
        ds = ray.data.read_parquet(str(stream.path), columns=["tokens"], ray_remote_args={"num_cpus": 0.25})
    else:
        ds = ray.data.from_arrow(stream.corpus.to_arrow().select(["tokens"]))  # type: ignore[union-attr]
    return ds.repartition(target_num_rows_per_block=rows), len(stream)


def _pool(ray: Any, size: int) -> Any:
    # one block in flight per actor: a block queued behind a busy actor while another actor idles
    # is the imbalance the block size is meant to remove
    return ray.data.ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=1)


class _Embedder:
    """One encoder per actor; embeds a batch of token lists (length-sorted inside `encode`)."""

    def __init__(self, model: str, pooling: str, device: str, precision: str, batch_size: int | None, threads: int):
        import torch

        if device == "cpu":
            torch.set_num_threads(max(1, threads))
        from core.lm.encoder import SentenceEncoder

        self.encoder = SentenceEncoder(model, pooling=pooling, device=device, precision=precision)  # type: ignore[arg-type]
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        texts = [" ".join(t) for t in batch["tokens"]]
        return {"emb": self.encoder.encode(texts, self.batch_size).astype(np.float32)}


def ray_embed(source: Any, model: str, address: str, *, pooling: str = "mean", precision: str = "auto",
              batch_size: int | None = None, out: np.ndarray | None = None, progress: Progress | None = None,
              stats: dict[str, Any] | None = None) -> np.ndarray:
    """(N, dim) embeddings of DC computed by Ray actors, in DC order; written into `out` (a
    float16 memmap from the caller's cache) when given, else returned as float32. `stats`, when
    given, receives the timings that separate start-up (actors importing torch and loading the
    model) from steady-state throughput: seconds, first_result_s, rows_at_first, actors, rows_per_block."""
    t0 = time.perf_counter()
    ray = connect(address)
    plan = _plan(ray)
    rows = rows_per_block(len(source), plan["concurrency"], 64, 8192 if plan["device"] == "cuda" else 4096)
    ds, n = _dataset(ray, source, rows)
    mapped = ds.map_batches(_Embedder, fn_constructor_args=(model, pooling, plan["device"], precision, batch_size,
                                                            plan["threads"]),
                            batch_size=rows, compute=_pool(ray, plan["concurrency"]), num_gpus=plan["num_gpus"],
                            num_cpus=plan["num_cpus"], batch_format="numpy")
    row, first = 0, None
    for batch in mapped.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=1):
        vecs = np.asarray(batch["emb"])
        if out is None:
            out = np.empty((n, vecs.shape[1]), dtype=np.float32)
        out[row:row + len(vecs)] = vecs
        row += len(vecs)
        if first is None:
            first = (time.perf_counter() - t0, row)
        if progress is not None:
            progress(min(0.99, row / max(1, n)), f"{row:,}/{n:,} sentences on Ray ({plan['concurrency']} actors)")
    if row != n:
        raise RuntimeError(f"Ray returned {row} embeddings for {n} sentences")  # a bug, not a user mistake
    if stats is not None:
        stats.update(seconds=time.perf_counter() - t0, first_result_s=first[0] if first else None,
                     rows_at_first=first[1] if first else 0, actors=plan["concurrency"], rows_per_block=rows)
    return out  # type: ignore[return-value]


class _Scorer:
    def __init__(self, lm: Any):
        self.lm = lm

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        s = self.lm.score_sentences([list(t) for t in batch["tokens"]])
        return {"log10_prob": s.log10_prob, "n_predicted": s.n_predicted, "oov": s.oov}


def ray_lm_scores(lm: Any, source: Any, address: str, progress: Progress | None = None):
    """`lm.score_sentences(DC)` with the scoring pass on Ray actors (one LM copy per actor)."""
    from core.lm.ngram import SentenceScores

    ray = connect(address)
    plan = _plan(ray)
    rows = rows_per_block(len(source), plan["concurrency"], 64, 20_000)
    ds, n = _dataset(ray, source, rows)
    mapped = ds.map_batches(_Scorer, fn_constructor_args=(lm,), batch_size=rows, compute=_pool(ray, plan["concurrency"]),
                            num_cpus=0.5, batch_format="numpy")
    logp = np.empty(n, dtype=np.float64)
    npred = np.empty(n, dtype=np.int64)
    oov = np.empty(n, dtype=np.int64)
    row = 0
    for batch in mapped.iter_batches(batch_size=50_000, batch_format="numpy", prefetch_batches=1):
        k = len(batch["log10_prob"])
        logp[row:row + k], npred[row:row + k], oov[row:row + k] = batch["log10_prob"], batch["n_predicted"], batch["oov"]
        row += k
        if progress is not None:
            progress(min(0.99, row / max(1, n)), f"{row:,}/{n:,} sentences scored on Ray")
    if row != n:
        raise RuntimeError(f"Ray returned {row} scores for {n} sentences")
    return SentenceScores(logp, npred, oov)


def ray_lm_perplexities(lm: Any, source: Any, address: str, progress: Progress | None = None) -> np.ndarray:
    return ray_lm_scores(lm, source, address, progress).perplexity
