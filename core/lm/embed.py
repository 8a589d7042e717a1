"""Sentence embeddings: mean of the last layer's token activations (attention-masked),
as in the selective-pretraining paper, for any encoder `core.lm.models` resolves.

Two poolings: "mean" (plain transformers AutoModel, works for every BERT-like folder,
including MLM and NER runs) and "model" (the folder's own sentence-transformers
pooling, e.g. mean + normalize for all-MiniLM-L6-v2). Batches are length-sorted so
padding stays small. On a GPU the model runs in bf16 (fp16 where bf16 is missing); on
CPUs with bf16 instructions (AMX / avx512_bf16) bf16 autocast is used once a probe
batch agrees with fp32 (cosine >= 0.9999), fp32 elsewhere.

Corpora are embedded in chunks written as they finish (artifact kind "embeddings"),
so an interrupted run over millions of sentences resumes at the first missing chunk;
the finished array is one float16 .npy opened memory-mapped.

>>> vecs = embed_texts(["Paris is nice .", "The band played ."])  # doctest: +SKIP
>>> vecs.shape
(2, 384)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from core.data.corpus import Corpus
from core.data.stream import CorpusStream
from core.data.workspace import Workspace, atomic_write_json, content_hash, temp_path_for
from core.errors import ModelError, UserError
from core.lm.models import ModelRef, offline_env, pick_device, resolve_model

Progress = Callable[[float, str], None]
Pooling = Literal["mean", "model"]
POOLINGS = ("mean", "model")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
BF16_MIN_COSINE = 0.9999  # agreement with fp32 required before bf16 is used on a CPU
DEFAULT_CHUNK = 50_000  # sentences per on-disk chunk: ~40 MB of float16 at 384 dims, minutes of CPU work at most
ARTIFACT = "embeddings"

# Varied lengths and domains so the bf16 check sees short, long and odd inputs, not one easy case.
_PROBE = [
    "Paris is the capital of France .",
    "The band released their second album , Abbey Road , in 1969 on Apple Records .",
    "In 2003 , the Conservative Party won 42 seats in the Scottish Parliament election .",
    "Convolutional neural networks were trained with stochastic gradient descent on ImageNet .",
    "Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel .",
    "Ok .",
    "The novel , written by Gabriel García Márquez , follows seven generations of the Buendía family in Macondo .",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons mediated by colour charge .",
    "She toured Europe with the London Symphony Orchestra , performing works by Mahler , Bruckner and Sibelius .",
    "1 2 3 4 5 6 7 8 9 10 11 12",
    "Reinforcement learning agents such as AlphaGo combine Monte Carlo tree search with deep value networks .",
    "The minister resigned after the referendum ; parliament was dissolved two weeks later .",
]


# --------------------------------------------------------------------------- hardware


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_has_bf16() -> bool:
    """AMX or AVX512-BF16: where bf16 matmuls run natively (elsewhere bf16 is emulated and slower)."""
    return bool(cpu_flags() & {"amx_bf16", "avx512_bf16"})


def cosine_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Minimum row-wise cosine between two embeddings of the same sentences."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float((num / np.maximum(den, 1e-12)).min())


# --------------------------------------------------------------------------- the encoder


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
        if key in _VERDICTS:
            return _VERDICTS[key]
        path = workspace.root / "artifacts" / "precision" / key / "verdict.json" if workspace is not None else None
        if path is not None and path.exists():
            verdict = json.loads(path.read_text("utf-8"))
        else:
            self.precision = "fp32"
            ref32 = self.encode(_PROBE)
            self.precision = "bf16"
            got = self.encode(_PROBE)
            agreement = cosine_agreement(ref32, got)
            verdict = {"ok": agreement >= BF16_MIN_COSINE, "min_cosine": agreement, "model": self.ref.name,
                       "pooling": self.pooling, "probe_sentences": len(_PROBE)}
            if path is not None:
                atomic_write_json(path, verdict)
        _VERDICTS[key] = verdict
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


_VERDICTS: dict[str, dict[str, Any]] = {}


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


_ENCODERS: dict[tuple[str, ...], SentenceEncoder] = {}


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


# --------------------------------------------------------------------------- corpora, cached in chunks


def corpus_digest(corpus: Corpus) -> str:
    """Content hash of the sentences (tokens only: carried fields do not change embeddings)."""
    h = hashlib.sha256()
    for toks in corpus.tokens:
        h.update("\x1f".join(toks).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def embedding_key(model: str | ModelRef, corpus_hash: str, pooling: str = "mean") -> str:
    ref = resolve_model(model) if not isinstance(model, ModelRef) else model
    return content_hash("embeddings", ref.fingerprint(), corpus_hash, pooling)


def cached_embeddings(corpus: Corpus, model: str | ModelRef, workspace: Workspace, pooling: str = "mean",
                      digest: str | None = None) -> np.ndarray | None:
    """The finished embeddings of `corpus` if the workspace has them (memory-mapped), else None."""
    path = workspace.find_artifact(ARTIFACT, embedding_key(model, digest or corpus_digest(corpus), pooling))
    if path is None or not (path / "meta.json").exists():
        return None
    return np.load(path / "embeddings.npy", mmap_mode="r")


def embed_corpus(corpus: Corpus | CorpusStream | str, model: str | ModelRef = "default", *, pooling: Pooling = "mean",
                 device: str = "auto", precision: str = "auto", workspace: Workspace | None = None,
                 batch_size: int | None = None, chunk_size: int = DEFAULT_CHUNK, progress: Progress | None = None,
                 ray: str | None = None) -> np.ndarray:
    """Embeddings of every sentence, (N, dim).

    With a workspace: float16, memory-mapped, cached under artifacts/embeddings/KEY
    (KEY = model fingerprint + corpus content hash + pooling); chunks are written as they
    finish and a rerun after a crash starts at the first missing chunk. `corpus` may be a
    workspace corpus name or a `CorpusStream`, read in record batches. Without a workspace:
    float32 in memory. `ray`: a Ray address ("local" starts one) to embed on Ray actors
    instead (same cache, same values within float16 rounding).
    """
    if isinstance(corpus, str):
        if workspace is None:
            raise UserError("embedding a corpus by name needs a workspace")
        stream = CorpusStream.from_workspace(workspace, corpus)
        if stream is None:
            workspace.corpus_path(corpus)  # the clear "no corpus named" error
    else:
        stream = CorpusStream.of(corpus)
    if workspace is None:
        if ray:
            from core.lm.distributed import ray_embed

            return ray_embed(stream, str(model.name if isinstance(model, ModelRef) else model), ray, pooling=pooling,
                             precision=precision, batch_size=batch_size, progress=progress)
        return embed_texts([t for part in stream.text_batches() for t in part], model, pooling=pooling, device=device,
                           precision=precision, batch_size=batch_size, progress=progress)
    digest = stream.digest()
    n = len(stream)

    def chunks(size: int) -> Iterator[list[str]]:
        yield from stream.text_batches(size)

    ref = resolve_model(model) if not isinstance(model, ModelRef) else model
    key = embedding_key(ref, digest, pooling)
    folder = workspace.artifact_dir(ARTIFACT, key)
    final = folder / "embeddings.npy"
    if (folder / "meta.json").exists() and final.exists():
        if progress is not None:
            progress(1.0, f"{n:,} embeddings from the cache")
        return np.load(final, mmap_mode="r")
    if ray:
        return _embed_on_ray(folder, stream, ref, digest, pooling, precision, batch_size, ray, progress)
    return _embed_in_chunks(folder, chunks, n, ref, digest, pooling, device, precision, workspace, batch_size, chunk_size, progress)


def _embed_on_ray(folder: Path, stream: CorpusStream, ref: ModelRef, digest: str, pooling: str, precision: str,
                  batch_size: int | None, address: str, progress: Progress | None) -> np.ndarray:
    """The Ray Data pass, written straight into the cache's float16 memmap (no chunk files)."""
    from core.lm.distributed import ray_embed

    t0 = time.time()
    n = len(stream)
    dim = int(resolve_dim(ref))
    final = folder / "embeddings.npy"
    tmp = temp_path_for(final)
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float16, shape=(n, dim))
    name = "default" if ref.is_default else ref.load_path if ref.is_local else ref.name  # workers resolve it themselves
    ray_embed(stream, name, address, pooling=pooling, precision=precision, batch_size=batch_size, out=out, progress=progress)
    out.flush()
    del out
    os.replace(tmp, final)
    atomic_write_json(folder / "meta.json", {"model": ref.name, "fingerprint": ref.fingerprint(), "corpus_hash": digest,
                                             "pooling": pooling, "n": n, "dim": dim, "dtype": "float16", "ray": address,
                                             "seconds": time.time() - t0, "created": time.time()})
    if progress is not None:
        progress(1.0, f"{n:,} sentences embedded on Ray")
    return np.load(final, mmap_mode="r")


def resolve_dim(ref: ModelRef) -> int:
    """Embedding width from the model's config (no weights loaded)."""
    from core.lm.models import load_config

    return int(load_config(ref).hidden_size)


def _embed_in_chunks(folder: Path, chunks: Callable[[int], Iterator[list[str]]], n: int, ref: ModelRef, digest: str,
                     pooling: str, device: str, precision: str, workspace: Workspace, batch_size: int | None,
                     chunk_size: int, progress: Progress | None) -> np.ndarray:
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text("utf-8")) if manifest_path.exists() else None
    if manifest is None or manifest.get("n") != n:
        manifest = {"model": ref.name, "fingerprint": ref.fingerprint(), "corpus_hash": digest, "pooling": pooling,
                    "n": n, "chunk_size": chunk_size, "done": []}
        atomic_write_json(manifest_path, manifest)
    chunk_size = int(manifest["chunk_size"])  # a resumed run must cut the corpus exactly as the first one did
    n_chunks = max(1, -(-n // chunk_size))
    done = set(manifest["done"])
    encoder: SentenceEncoder | None = None
    t0 = time.time()
    for i, texts in enumerate(chunks(chunk_size)):
        path = folder / f"chunk_{i:05d}.npy"
        if i in done and path.exists():
            continue
        if encoder is None:
            encoder = get_encoder(ref, pooling, device, precision, workspace)  # type: ignore[arg-type]
            manifest.update(precision=encoder.precision, device=encoder.device, dim=encoder.dim)

        def chunk_progress(f: float, msg: str, i: int = i) -> None:
            if progress is not None:
                progress(min(0.99, (i + f) / n_chunks), f"chunk {i + 1}/{n_chunks}: {msg}")

        vecs = encoder.encode(texts, batch_size, chunk_progress if progress is not None else None)
        tmp = temp_path_for(path)
        with open(tmp, "wb") as fh:
            np.save(fh, vecs.astype(np.float16))
        os.replace(tmp, path)
        done.add(i)
        manifest["done"] = sorted(done)
        atomic_write_json(manifest_path, manifest)
    return _assemble(folder, manifest, n, n_chunks, time.time() - t0, progress)


def _assemble(folder: Path, manifest: dict[str, Any], n: int, n_chunks: int, seconds: float,
              progress: Progress | None) -> np.ndarray:
    paths = [folder / f"chunk_{i:05d}.npy" for i in range(n_chunks)]
    parts = [np.load(p, mmap_mode="r") for p in paths if p.exists()]
    dim = int(parts[0].shape[1]) if parts else int(manifest.get("dim", 0))
    final = folder / "embeddings.npy"
    tmp = temp_path_for(final)
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float16, shape=(n, dim))
    row = 0
    for part in parts:
        out[row:row + len(part)] = part
        row += len(part)
    if row != n:
        raise RuntimeError(f"embedding chunks hold {row} rows for {n} sentences")  # a bug, not a user mistake
    out.flush()
    del out
    os.replace(tmp, final)
    atomic_write_json(folder / "meta.json", {**manifest, "dim": dim, "dtype": "float16", "seconds": seconds,
                                             "created": time.time()})
    for p in paths:
        p.unlink(missing_ok=True)
    if progress is not None:
        progress(1.0, f"{n:,} sentences embedded")
    return np.load(final, mmap_mode="r")


def _streamed_digest(workspace: Workspace, name: str) -> str:
    """Same hash as `corpus_digest`, computed batch by batch (and cached) so a large DC is never loaded whole."""
    return CorpusStream.from_workspace(workspace, name).digest()


# --------------------------------------------------------------------------- job


def embed_job(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Job kind "embed": params {"corpus": workspace name, "model": "default", "pooling": "mean", "device": "auto"}."""
    ws: Workspace = ctx.workspace
    name = params["corpus"]
    ws.corpus_path(name)  # a clear error for an unknown name
    t0 = time.time()
    ray = params.get("ray") or ws.settings().get("ray_address") or None
    vecs = embed_corpus(name, params.get("model", "default"), pooling=params.get("pooling", "mean"),
                        device=params.get("device", "auto"), precision=params.get("precision", "auto"), workspace=ws,
                        chunk_size=int(params.get("chunk_size") or DEFAULT_CHUNK), progress=ctx.progress, ray=ray)
    ctx.log(f"embedded {len(vecs)} sentences of {name} -> {vecs.shape}")
    return {"corpus": name, "key": Path(vecs.filename).parent.name, "shape": list(vecs.shape), "seconds": time.time() - t0}
