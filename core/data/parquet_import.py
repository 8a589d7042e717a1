"""A corpus file streamed into one Parquet file, chunk by chunk (core.data.workspace.Workspace.import_corpus).

The Parquet schema is fixed by the first chunk it writes, but a later chunk (50,000 sentences on) may need a wider
column: a field null throughout the first chunk ('null' type) that holds text later, or whole numbers that turn into
decimals. The readers accept such a file (a field's values are one kind: numbers, text), so the write starts again
with the two schemas merged (`pa.unify_schemas`, permissive) instead of refusing a valid file; a field whose kinds
cannot merge (text in one chunk, numbers in another) is refused, naming the sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from core.data.corpus import iter_corpus
from core.data.tags import TagScheme, split_tag
from core.errors import CorpusError
from core.progress import Progress

MAX_SCHEMA_WIDENINGS = 4  # each widening rewrites what was written; a file needing more changes types too often


class WiderSchema(Exception):
    """A later chunk needs a wider column than the file was started with: write it again with `schema`."""

    def __init__(self, schema: pa.Schema) -> None:
        super().__init__("wider schema")
        self.schema = schema


@dataclass
class Written:
    sentences: int = 0
    tokens: int = 0
    longest: tuple[int, int] = (0, 0)  # (tokens, sentence number) of the longest sentence
    labeled: bool | None = None
    fields: list[str] = field(default_factory=list)
    types: set[str] = field(default_factory=set)
    schemes: set[TagScheme] = field(default_factory=set)


def write_parquet(path: Path, fmt: str, out: Path, size: int, progress: Progress | None = None) -> Written:
    """Every chunk of `path` into `out`, the columns widened as later chunks need (at most MAX_SCHEMA_WIDENINGS
    times); what was read, counted."""
    schema = None
    for _ in range(MAX_SCHEMA_WIDENINGS + 1):
        try:
            return _write(path, fmt, out, size, progress, schema)
        except WiderSchema as wider:
            schema = wider.schema
    raise CorpusError(path, None, "the fields' types kept changing from chunk to chunk: expected one type per field")


def _write(path: Path, fmt: str, out: Path, size: int, progress: Progress | None, schema: pa.Schema | None) -> Written:
    writer: pq.ParquetWriter | None = None
    done = Written()
    try:
        for chunk in iter_corpus(path, fmt):
            try:
                table = chunk.to_arrow()
            except pa.ArrowException as exc:  # a value the readers let through that no column type holds
                raise CorpusError(path, None, f"sentences {done.sentences + 1:,} to {done.sentences + len(chunk):,} do "
                                              f"not fit one table ({exc}): expected one type per field") from None
            if writer is None:
                writer = pq.ParquetWriter(out, schema or table.schema)
                done.labeled, done.fields = chunk.labeled, list(chunk.fields)
            if table.schema != writer.schema:
                table = _fitted(path, table, writer.schema, done.sentences)
            writer.write_table(table)
            lengths = [len(t) for t in chunk.tokens]
            if lengths and max(lengths) > done.longest[0]:
                done.longest = (max(lengths), done.sentences + lengths.index(max(lengths)) + 1)
            done.sentences += len(chunk)
            done.tokens += sum(lengths)
            if chunk.tags is not None:
                done.schemes.add(chunk.scheme)
                done.types.update(split_tag(t)[1] for tags in chunk.tags for t in tags if t != "O")
            if progress is not None:
                progress(min(0.99, bytes_done(done.sentences, size)), f"{done.sentences:,} sentences read")
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise CorpusError(path, None, "no sentences found")
    return done


def _fitted(path: Path, table: pa.Table, schema: pa.Schema, before: int) -> pa.Table:
    """`table` in the file's `schema`; WiderSchema when it needs wider columns, CorpusError when no schema holds both."""
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        try:
            wider = pa.unify_schemas([schema, table.schema], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            raise CorpusError(path, None, f"sentences {before + 1:,} on do not have the columns of the ones before (a "
                                          f"field's type changed, or one appeared): {exc}") from None
        if wider.names != schema.names:  # a field that appeared: not a wider column of the same table
            raise CorpusError(path, None, f"sentences {before + 1:,} on do not have the columns of the ones before (a "
                                          f"field appeared): {exc}") from None
        if wider.equals(schema):  # no wider column holds it (a whole number past 2^53 in a float column): say so
            raise CorpusError(path, None, f"sentences {before + 1:,} on hold a value the columns of the ones before "
                                          f"cannot: {exc}") from None
        raise WiderSchema(wider) from None


def bytes_done(sentences: int, size: int) -> float:
    """A cheap progress estimate without a second pass over the file: about 120 bytes a sentence in typical English
    corpora (progress is capped at 0.99 anyway)."""
    return sentences * 120 / size
