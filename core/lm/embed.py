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

Usage (loads the packaged encoder, so not run as a doctest)::

    from core.lm.encoder import embed_texts
    vecs = embed_texts(["Paris is nice .", "The band played ."])  # vecs.shape == (2, 384)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.atomic import atomic_write_json, exclusive, temp_path_for
from core.data.corpus import Corpus
from core.data.stream import CorpusStream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.lm.encoder import Pooling, SentenceEncoder, embed_texts, get_encoder
from core.lm.models import ModelRef, resolve_model
from core.progress import Progress

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import EmbedParams

DEFAULT_CHUNK = 50_000  # sentences per on-disk chunk: ~40 MB of float16 at 384 dims, minutes of CPU work at most
ARTIFACT = "embeddings"


# --------------------------------------------------------------------------- hardware


# --------------------------------------------------------------------------- the encoder






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
    begun = (folder / "meta.json").exists() or (folder / "manifest.json").exists()
    if precision != "auto" and begun and _made_in(folder) != precision:
        # asked for another precision than the cache was made in, or one it did not record (a Ray pass on "auto", a
        # cache from before it was kept): bf16 and fp32 differ by up to 5e-3, 20x float16's rounding, and near ties a
        # selection flips, so its own cache; "auto" reads whichever there is
        folder = workspace.artifact_dir(ARTIFACT, content_hash(key, precision))
    final = folder / "embeddings.npy"
    if (folder / "meta.json").exists() and final.exists():
        if progress is not None:
            progress(1.0, f"{n:,} embeddings from the cache")
        return np.load(final, mmap_mode="r")
    # two processes (experiment cells at once) embedding one corpus: one writes the cache, the other waits and reads it
    with exclusive(folder / "embed.lock", (lambda: progress(0.0, "waiting: another process is embedding this corpus"))
                   if progress is not None else None):
        if (folder / "meta.json").exists() and final.exists():
            return np.load(final, mmap_mode="r")
        if ray:
            return _embed_on_ray(folder, stream, ref, digest, pooling, precision, batch_size, ray, progress)
        return _embed_in_chunks(folder, chunks, n, ref, digest, pooling, device, precision, workspace, batch_size, chunk_size,
                                progress)


def _made_in(folder: Path) -> str | None:
    """The precision a cache (finished or begun) was computed in, or None (none yet, or one from before it was kept)."""
    for name in ("meta.json", "manifest.json"):
        try:
            made = json.loads((folder / name).read_text("utf-8")).get("precision")
        except (OSError, ValueError):
            continue
        if made:
            return str(made)
    return None


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
                                             "precision": None if precision == "auto" else precision,
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


def embed_job(params: EmbedParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "embed": a workspace corpus's sentence embeddings into the float16 cache."""
    ws: Workspace = ctx.workspace
    ws.corpus_path(params.corpus)  # a clear error for an unknown name
    t0 = time.time()
    ray = params.ray or ws.settings().ray_address or None
    vecs = embed_corpus(params.corpus, params.model, pooling=params.pooling, device=params.device, precision=params.precision,
                        workspace=ws, chunk_size=params.chunk_size or DEFAULT_CHUNK, progress=ctx.progress, ray=ray)
    ctx.log(f"embedded {len(vecs)} sentences of {params.corpus} -> {vecs.shape}")
    return {"corpus": params.corpus, "key": Path(vecs.filename).parent.name, "shape": list(vecs.shape), "seconds": time.time() - t0}
