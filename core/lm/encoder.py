"""A sentence encoder: batches sorted by length (less padding), tokenized ahead on threads, mean pooling (or the
model's own), on GPU when present, bf16 where verified. The embedding cache (core.lm.embed) and Ray actors
(core.lm.distributed) both embed through it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core.data.atomic import atomic_write_json
from core.data.workspace import Workspace, content_hash
from core.errors import ModelError, UserError
from core.lm.models import ModelRef, offline_env, pick_device, resolve_model
from core.lm.precision import PROBE_TEXTS, cosine_agreement, cpu_flags, cpu_has_bf16
from core.progress import Progress
from core.runner.params import POOLINGS

if TYPE_CHECKING:
    pass

Pooling = Literal["mean", "model"]
BF16_MIN_COSINE = 0.9999  # agreement with fp32 required before bf16 is used on a CPU
_PRECISION_VERDICTS: dict[str, dict[str, Any]] = {}


PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class SentenceEncoder:
    """One loaded encoder: tokenizer + model (or a SentenceTransformer for pooling="model")
    on one device at one precision. `encode` embeds a list of texts, length-sorted inside."""

    def __init__(self, model: str | ModelRef = "default", pooling: Pooling = "mean", device: str = "auto",
                 precision: str = "auto", workspace: Workspace | None = None):
        import torch

        if pooling not in POOLINGS:
            raise UserError(f"unknown pooling {pooling!r}: expected one of {', '.join(POOLINGS)}")
        if precision not in PRECISIONS:
            raise UserError(f"unknown precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
        self.ref = resolve_model(model) if not isinstance(model, ModelRef) else model
        self.pooling = pooling
        self.device = pick_device(device)
        self._torch = torch
        self._st = None
        self._model = None
        self._tokenizer = None
        self._tokenizer_threads: int | None = None
        if pooling == "model":
            self._load_sentence_transformer()
        else:
            self._load_transformers()
        self.precision = self._choose_precision(precision, workspace)

    # ---- loading
    def _load_sentence_transformer(self) -> None:
        if self.ref.is_local and not self.ref.has_sentence_transformers_config():
            raise UserError(f"model {self.ref.name!r} has no sentence-transformers pooling (no modules.json); use pooling 'mean'")
        from sentence_transformers import SentenceTransformer

        if self.ref.is_local:
            offline_env()
        try:
            self._st = SentenceTransformer(self.ref.load_path, device=self.device, local_files_only=self.ref.is_local)
        except (OSError, ValueError) as exc:
            raise ModelError(f"could not load {self.ref.name!r} as a sentence-transformers model: {exc}") from exc
        self._st.eval()

    def _load_transformers(self) -> None:
        from core.lm.models import load_config, load_encoder, load_tokenizer

        self._tokenizer = load_tokenizer(self.ref)
        self._model = load_encoder(self.ref).to(self.device).eval()
        config = load_config(self.ref)
        limits = [512, getattr(config, "max_position_embeddings", 512) or 512]
        if (self._tokenizer.model_max_length or 0) < 100_000:  # tokenizers without a limit report ~1e30
            limits.append(self._tokenizer.model_max_length)
        self.max_length = int(min(limits))

    @property
    def dim(self) -> int:
        if self._st is not None:
            get_dim = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension  # renamed in ST 6
            return int(get_dim())
        return int(self._model.config.hidden_size)

    # ---- precision
    def _choose_precision(self, precision: str, workspace: Workspace | None) -> str:
        torch = self._torch
        on_gpu = self.device.startswith("cuda")
        if precision == "auto":
            if on_gpu:
                return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
            if not cpu_has_bf16():
                return "fp32"
            return "bf16" if self._bf16_verdict(workspace)["ok"] else "fp32"
        if precision == "fp16" and not on_gpu:
            raise UserError("fp16 needs a GPU; on a CPU use bf16 or fp32")
        return precision

    def _bf16_verdict(self, workspace: Workspace | None) -> dict[str, Any]:
        """Compare bf16 autocast with fp32 on the probe batch once per model; the verdict is
        remembered in the process and, with a workspace, on disk (artifact kind "precision")."""
        key = content_hash(self.ref.fingerprint(), self.pooling, self._torch.__version__, sorted(cpu_flags() & {"amx_bf16", "avx512_bf16"}))
        if key in _PRECISION_VERDICTS:
            return _PRECISION_VERDICTS[key]
        path = workspace.root / "artifacts" / "precision" / key / "verdict.json" if workspace is not None else None
        if path is not None and path.exists():
            verdict = json.loads(path.read_text("utf-8"))
        else:
            self.precision = "fp32"
            ref32 = self.encode(PROBE_TEXTS)
            self.precision = "bf16"
            got = self.encode(PROBE_TEXTS)
            agreement = cosine_agreement(ref32, got)
            verdict = {"ok": agreement >= BF16_MIN_COSINE, "min_cosine": agreement, "model": self.ref.name,
                       "pooling": self.pooling, "probe_sentences": len(PROBE_TEXTS)}
            if path is not None:
                atomic_write_json(path, verdict)
        _PRECISION_VERDICTS[key] = verdict
        return verdict

    def _autocast(self):
        torch = self._torch
        if self.precision == "fp32":
            return torch.autocast("cpu", enabled=False) if not self.device.startswith("cuda") else torch.autocast("cuda", enabled=False)
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        return torch.autocast("cuda" if self.device.startswith("cuda") else "cpu", dtype=dtype)

    # ---- encoding
    @property
    def tokenizer_threads(self) -> int:
        """Threads tokenizing ahead of the GPU: half the cores, at most 4. On an H100 with 16 cores
        (bench/bench_embed.py --device cuda) 4 threads gave 6,986 sentences/s, 8 gave 5,965 (they
        contend for the GIL with the loop feeding the GPU) and 1 gave 5,026."""
        if self._tokenizer_threads is None:
            self._tokenizer_threads = max(1, min(4, (os.cpu_count() or 2) // 2))
        return self._tokenizer_threads

    @tokenizer_threads.setter
    def tokenizer_threads(self, value: int) -> None:
        self._tokenizer_threads = max(1, int(value))

    def default_batch_size(self) -> int:
        return 512 if self.device.startswith("cuda") else 32

    def encode(self, texts: Sequence[str], batch_size: int | None = None, progress: Progress | None = None) -> np.ndarray:
        """(len(texts), dim) float32, in the input order."""
        batch_size = batch_size or self.default_batch_size()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([-len(t) for t in texts], kind="stable")  # longest first: an OOM shows up at once
        torch = self._torch
        if self.device.startswith("cuda") and self._st is None:
            return self._encode_cuda(texts, order, batch_size, out, progress)
        with torch.inference_mode(), self._autocast():
            for start in range(0, len(texts), batch_size):
                idx = order[start:start + batch_size]
                batch = [texts[i] for i in idx]
                out[idx] = self._encode_batch(batch)
                if progress is not None:
                    progress(min(1.0, (start + len(idx)) / len(texts)), f"{start + len(idx):,}/{len(texts):,} sentences")
        return out

    def _tokenize(self, batch: list[str], tokenizer: Any = None) -> dict[str, Any]:
        enc = (tokenizer or self._tokenizer)(batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        if self.device.startswith("cuda"):
            enc = {k: v.pin_memory() for k, v in enc.items()}  # page-locked: the copy to the GPU runs asynchronously
        return enc

    def _pool(self, enc: dict[str, Any]):
        hidden = self._model(**enc).last_hidden_state.float()  # (B, T, H)
        mask = enc["attention_mask"].unsqueeze(-1).float()  # (B, T, 1)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)  # (B, H)

    def _encode_cuda(self, texts: Sequence[str], order: np.ndarray, batch_size: int, out: np.ndarray,
                     progress: Progress | None) -> np.ndarray:
        """GPU loop. The host, not the GPU, is the limit for small encoders (tokenizing 512 sentences takes
        longer than MiniLM's forward pass on them), so batches are tokenized `tokenizer_threads` ahead on
        threads (the fast tokenizer releases the GIL; each thread has its own copy, as the Rust tokenizer
        must not be borrowed by two threads at once), copied from pinned memory without blocking, and their
        vectors kept on the GPU in sorted order until the end: nothing in the loop makes the host wait for
        the GPU. Measured on an H100 with MiniLM: bench/bench_embed.py --device cuda."""
        import copy
        import threading

        torch = self._torch
        local = threading.local()

        def tokenize(idx: np.ndarray) -> dict[str, Any]:
            if not hasattr(local, "tokenizer"):
                local.tokenizer = copy.deepcopy(self._tokenizer)
            return self._tokenize([texts[i] for i in idx], local.tokenizer)

        batches = [order[s:s + batch_size] for s in range(0, len(texts), batch_size)]
        result = torch.empty((len(texts), self.dim), dtype=torch.float32, device=self.device)  # rows in `order`
        done = 0
        with torch.inference_mode(), self._autocast():
            for enc in prefetched(tokenize, batches, self.tokenizer_threads):
                enc = {k: v.to(self.device, non_blocking=True) for k, v in enc.items()}
                n = int(enc["input_ids"].shape[0])
                result[done:done + n] = self._pool(enc)
                done += n
                if progress is not None:
                    progress(min(1.0, done / len(texts)), f"{done:,}/{len(texts):,} sentences")
        out[order] = result.cpu().numpy()
        return out

    def _encode_batch(self, batch: list[str]) -> np.ndarray:
        if self._st is not None:
            prepare = getattr(self._st, "preprocess", None) or self._st.tokenize  # `tokenize` is deprecated in ST 6
            feats = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in prepare(batch).items()}
            return self._st(feats)["sentence_embedding"].float().cpu().numpy()
        enc = {k: v.to(self.device) for k, v in self._tokenize(batch).items()}
        return self._pool(enc).cpu().numpy()


def prefetched(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> Iterator[Any]:
    """fn(item) for each item, in order, computed up to `workers` + 1 items ahead on `workers` threads.

    Written here because the usual prefetchers don't fit: torch's DataLoader forks processes (the
    tokenizer and model would be copied into each), and Executor.map submits every item at once
    (a million-sentence corpus would be tokenized into memory before the first batch is used)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, workers)) as pool:
        pending: deque = deque(pool.submit(fn, item) for item in items[:workers + 1])
        following = workers + 1
        while pending:
            value = pending.popleft().result()
            if following < len(items):
                pending.append(pool.submit(fn, items[following]))
                following += 1
            yield value


_ENCODERS: dict[tuple[str, ...], SentenceEncoder] = {}  # one encoder per (model, pooling, device, precision) in a process


def get_encoder(model: str | ModelRef = "default", pooling: Pooling = "mean", device: str = "auto",
                precision: str = "auto", workspace: Workspace | None = None) -> SentenceEncoder:
    """A loaded encoder, reused within the process (selection and projection ask for the same one);
    the fingerprint in the key makes a retrained folder load afresh."""
    ref = resolve_model(model) if not isinstance(model, ModelRef) else model
    key = (ref.fingerprint(), ref.load_path, pooling, pick_device(device), precision)
    if key not in _ENCODERS:
        while len(_ENCODERS) >= 3:  # each holds a model: keep memory bounded
            _ENCODERS.pop(next(iter(_ENCODERS)))
        _ENCODERS[key] = SentenceEncoder(ref, pooling=pooling, device=device, precision=precision, workspace=workspace)
    return _ENCODERS[key]


def embed_texts(texts: Sequence[str], model: str | ModelRef = "default", *, pooling: Pooling = "mean", device: str = "auto",
                precision: str = "auto", batch_size: int | None = None, progress: Progress | None = None) -> np.ndarray:
    """Embed a few texts in memory (float32); use `embed_corpus` for anything worth caching."""
    return get_encoder(model, pooling, device, precision).encode(list(texts), batch_size, progress)
