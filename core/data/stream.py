"""A corpus read in record batches: the one way large-corpus passes (selection, embedding,
NER prediction over DC, similarity) see DC.

Why: a 10M-sentence DC as Python token lists takes tens of GB; as a workspace Parquet file
read one record batch at a time it costs one batch. `CorpusStream` wraps either a workspace
corpus (streamed from corpora/NAME.parquet) or an in-memory `Corpus` (sliced), so the same
code serves both and results are equal by construction.

>>> from core.data.corpus import Corpus
>>> s = CorpusStream.of(Corpus([["a", "b"], ["c"], ["d"]]))
>>> [len(b) for b in s.batches(2)], s.take([2, 0]).tokens
([2, 1], [['d'], ['a', 'b']])
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.data.atomic import atomic_write_json
from core.data.corpus import Corpus
from core.data.workspace import CorpusRole, Workspace

PARALLEL_MIN = 200_000  # below this many sentences a pass stays in this process (spawning workers costs seconds)
BATCH = 50_000  # sentences per record batch: ~10-20 MB of Python strings once converted
DIGEST_ARTIFACT = "corpus-digest"


class CorpusStream:
    """Sentences of one corpus, read batch by batch; `len()` without reading anything."""

    def __init__(self, corpus: Corpus | None = None, *, path: str | Path | None = None, name: str = "",
                 workspace: Workspace | None = None, file_hash: str | None = None):
        if (corpus is None) == (path is None):
            raise ValueError("CorpusStream needs exactly one of corpus or path")
        self.corpus = corpus
        self.path = Path(path) if path is not None else None
        self.name = name or (corpus.name if corpus is not None else self.path.stem)  # type: ignore[union-attr]
        self.workspace = workspace
        self.file_hash = file_hash
        self._digest: str | None = None
        if self.path is not None:
            meta = pq.ParquetFile(self.path).metadata
            self._n = meta.num_rows
            self._fields = [c for c in meta.schema.to_arrow_schema().names if c not in ("tokens", "tags")]
        else:
            self._n = len(corpus)  # type: ignore[arg-type]
            self._fields = list(corpus.fields)  # type: ignore[union-attr]

    @classmethod
    def of(cls, source: Corpus | CorpusStream) -> CorpusStream:
        return source if isinstance(source, CorpusStream) else cls(source)

    @classmethod
    def from_workspace(cls, ws: Workspace, ref: str) -> CorpusStream | None:
        """The workspace corpus named `ref` (or holding role `ref`), else None (a file path, say)."""
        name = ref if ws.has_corpus(ref) else None
        if name is None:
            try:
                name = ws.corpus_for_role(CorpusRole(str(ref).lower()))
            except ValueError:
                name = None
        if name is None:
            return None
        return cls(path=ws.corpus_path(name), name=name, workspace=ws, file_hash=ws.corpus_info(name).hash)

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"CorpusStream({self.name!r}, {self._n:,} sentences, {'parquet' if self.path else 'memory'})"

    @property
    def fields(self) -> list[str]:
        return list(self._fields)

    @property
    def streamed(self) -> bool:
        return self.path is not None

    # ---- passes
    def arrow_batches(self, size: int = BATCH, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        if self.path is not None:
            yield from pq.ParquetFile(self.path).iter_batches(batch_size=size, columns=list(columns) if columns else None)
            return
        for start in range(0, self._n, size):
            part = self.corpus.subset(range(start, min(self._n, start + size)))  # type: ignore[union-attr]
            table = part.to_arrow()
            yield from table.select(list(columns)).to_batches() if columns else table.to_batches()

    def batches(self, size: int = BATCH) -> Iterator[Corpus]:
        """Corpus chunks with every field, in corpus order."""
        if self.path is None:
            for start in range(0, self._n, size):
                yield self.corpus.subset(range(start, min(self._n, start + size)))  # type: ignore[union-attr]
            return
        for batch in self.arrow_batches(size):
            yield Corpus.from_arrow(pa.Table.from_batches([batch]), name=self.name)

    def token_batches(self, size: int = BATCH) -> Iterator[list[list[str]]]:
        if self.path is None:
            for start in range(0, self._n, size):
                yield self.corpus.tokens[start:start + size]  # type: ignore[union-attr]
            return
        for batch in self.arrow_batches(size, ["tokens"]):
            yield batch.column(0).to_pylist()

    def text_batches(self, size: int = BATCH) -> Iterator[list[str]]:
        for toks in self.token_batches(size):
            yield [" ".join(t) for t in toks]

    def texts(self) -> Iterator[str]:
        """Every sentence as text, one at a time (DAPT, NER prediction)."""
        for batch in self.text_batches():
            yield from batch

    # ---- digests and counts
    def digest(self) -> str:
        """Same value as `core.lm.embed.corpus_digest` (tokens only); for a workspace corpus cached
        under artifacts/corpus-digest/FILEHASH, so a 10M-sentence DC is hashed once."""
        if self._digest is not None:
            return self._digest
        cache = None
        if self.workspace is not None and self.file_hash:
            cache = self.workspace.root / "artifacts" / DIGEST_ARTIFACT / self.file_hash / "meta.json"
            if cache.exists():
                self._digest = json.loads(cache.read_text("utf-8"))["digest"]
                return self._digest
        h = hashlib.sha256()
        for toks in self.token_batches():
            for t in toks:
                h.update("\x1f".join(t).encode("utf-8"))
                h.update(b"\n")
        self._digest = h.hexdigest()[:16]
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(cache, {"digest": self._digest, "sentences": self._n})
        return self._digest

    def field_counts(self, field: str, indices: np.ndarray | None = None) -> Counter | None:
        """Counts of a carried field's values (as str), over all rows or only `indices`."""
        if field not in self._fields:
            return None
        mask = None
        if indices is not None:
            mask = np.zeros(self._n, dtype=bool)
            mask[np.asarray(indices, dtype=np.int64)] = True
        counts: Counter = Counter()
        start = 0
        for batch in self.arrow_batches(columns=[field]):
            col = batch.column(0)
            if mask is not None:
                col = col.filter(pa.array(mask[start:start + len(col)]))
            start += len(batch)
            for value, n in zip(*np.unique(np.asarray(col.to_pylist(), dtype=object).astype(str), return_counts=True)):
                counts[str(value)] += int(n)
        return counts

    # ---- random access
    def take_table(self, indices: Sequence[int] | np.ndarray) -> pa.Table:
        """Rows at `indices`, in that order, as Arrow; reads only the row groups holding them."""
        idx = np.asarray(indices, dtype=np.int64)
        if self.path is None:
            return self.corpus.subset(idx.tolist()).to_arrow()  # type: ignore[union-attr]
        pf = pq.ParquetFile(self.path)
        sizes = np.array([pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        uniq = np.unique(idx)
        if len(uniq) and (uniq[0] < 0 or uniq[-1] >= self._n):
            raise IndexError(f"row index out of range for {self._n} rows")
        group_of = np.searchsorted(starts, uniq, side="right") - 1
        parts = []
        for g in np.unique(group_of):
            local = uniq[group_of == g] - starts[g]
            parts.append(pf.read_row_group(int(g)).take(pa.array(local)))
        if not parts:
            return pf.schema_arrow.empty_table()
        table = pa.concat_tables(parts)
        return table.take(pa.array(np.searchsorted(uniq, idx)))

    def take(self, indices: Sequence[int] | np.ndarray) -> Corpus:
        if self.path is None:
            return self.corpus.subset([int(i) for i in indices])  # type: ignore[union-attr]
        return Corpus.from_arrow(self.take_table(indices), name=self.name)

    def to_corpus(self) -> Corpus:
        """The whole corpus in memory: only for callers that need it (small corpora)."""
        return self.corpus if self.corpus is not None else Corpus.concat(self.batches(), name=self.name)


def selected_records(stream: CorpusStream, indices: np.ndarray, scores: np.ndarray, batch: int = 20_000
                     ) -> Iterator[dict[str, Any]]:
    """JSON-ready rows of the selected sentences in rank order ({text, tokens, score, rank,
    dc_index, fields...}), read from DC in one pass: memory is the selected rows as Arrow,
    never DC."""
    idx = np.asarray(indices, dtype=np.int64)
    if not len(idx):
        return
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    rank_sorted = order + 1  # rank of each sorted index
    parts: list[pa.Table] = []
    start = 0
    for rb in stream.arrow_batches():
        end = start + len(rb)
        lo, hi = np.searchsorted(sorted_idx, [start, end])
        if hi > lo:
            t = pa.Table.from_batches([rb]).take(pa.array(sorted_idx[lo:hi] - start))
            t = t.append_column("_rank", pa.array(rank_sorted[lo:hi]))
            parts.append(t)
        start = end
    table = pa.concat_tables(parts)
    table = table.take(pa.array(np.argsort(table.column("_rank").to_numpy(), kind="stable")))
    names = [c for c in table.column_names if c not in ("tokens", "tags", "_rank")]
    for s in range(0, len(table), batch):
        sl = table.slice(s, batch).to_pydict()
        for j, toks in enumerate(sl["tokens"]):
            r = s + j
            i = int(idx[r])
            v = float(scores[i])
            rec = {"text": " ".join(toks), "tokens": toks, "score": v if np.isfinite(v) else None, "rank": r + 1,
                   "dc_index": i}
            for k in names:
                rec[exported_field(k)] = sl[k][j]
            yield rec


EXPORT_KEYS = ("text", "tokens", "score", "rank", "dc_index")  # what a selection export writes of its own


def exported_field(name: str) -> str:
    """A DC field's key in a selection export: a field named like one of the export's own keys ('score', 'rank')
    is kept as 'dc_score', 'dc_rank' instead of being dropped, and one already starting with 'dc_' gets a second
    'dc_' so that the two never meet (`imported_field` strips exactly one).

    >>> [exported_field(n) for n in ("domain", "score", "dc_score")]
    ['domain', 'dc_score', 'dc_dc_score']
    """
    return f"dc_{name}" if name in EXPORT_KEYS or name.startswith("dc_") else name


def imported_field(key: str) -> str | None:
    """The DC field an export key holds (None: one of the export's own keys).

    >>> [imported_field(k) for k in ("domain", "dc_score", "dc_dc_score", "dc_index")]
    ['domain', 'score', 'dc_score', None]
    """
    if key in EXPORT_KEYS:
        return None
    return key[3:] if key.startswith("dc_") else key


def _apply_to_groups(path: str, groups: list[int], fn: Callable[..., Any], args: tuple) -> list[Any]:
    pf = pq.ParquetFile(path)
    return [fn(pf.read_row_group(g, columns=["tokens"]).column(0).to_pylist(), *args) for g in groups]


def worker_pool(workers: int | None = None):
    """A process pool (spawned: safe beside threads) to share between `map_row_groups` passes,
    so workers start (and import) once."""
    import concurrent.futures as cf
    import multiprocessing as mp

    return cf.ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1, mp_context=mp.get_context("spawn"))


def map_row_groups(stream: CorpusStream, fn: Callable[..., Any], args: tuple = (), workers: int | None = None,
                   progress: Callable[[float, str], None] | None = None, pool: Any = None) -> list[Any]:
    """`fn(token_lists_of_one_row_group, *args)` for every row group of a streamed corpus, in
    order, on `workers` processes (default: this machine's cores). Each worker reads its own
    row groups from the Parquet file, so nothing but `args` and the (small) results crosses
    processes, and memory is one row group per worker. `fn` must be a module-level function.
    An in-memory corpus (or one worker) runs in this process, batch by batch."""
    workers = workers or os.cpu_count() or 1
    if stream.path is None or workers <= 1:
        out, done = [], 0
        for toks in stream.token_batches():
            out.append(fn(toks, *args))
            done += len(toks)
            if progress is not None:
                progress(done / max(1, len(stream)), f"{done:,}/{len(stream):,} sentences")
        return out
    import concurrent.futures as cf

    n_groups = pq.ParquetFile(stream.path).metadata.num_row_groups
    chunks = [list(range(g, min(n_groups, g + 2))) for g in range(0, n_groups, 2)]
    results: list[Any] = [None] * len(chunks)
    own = pool is None
    pool = pool or worker_pool(min(workers, len(chunks)))
    try:
        futures = {pool.submit(_apply_to_groups, str(stream.path), c, fn, args): i for i, c in enumerate(chunks)}
        for done, fut in enumerate(cf.as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress is not None:
                progress(done / len(chunks), f"{done}/{len(chunks)} parts of {len(stream):,} sentences")
    finally:
        if own:
            pool.shutdown()
    return [r for part in results for r in part]


def open_corpus_stream(ws: Workspace, ref: str | Path) -> CorpusStream:
    """DC as a stream: a workspace corpus (by name or role) is read from its Parquet file in
    record batches; a file path is read into memory (import it to stream it)."""
    stream = CorpusStream.from_workspace(ws, str(ref))
    return stream if stream is not None else CorpusStream(ws.resolve_corpus(ref))
