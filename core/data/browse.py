"""Browse a workspace corpus: text search, filter by a field's value, one page at a time.

The Corpora page used to show the first 200 rows only. Filtering runs in Arrow over the stored
Parquet (tokens joined once, then a literal case-insensitive substring match), so a page of a
million-sentence DC costs one column scan, not a Python loop; only the rows of the page are
turned into Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.data.workspace import Workspace
from core.errors import UserError

MAX_FILTER_VALUES = 200  # a field with more distinct values is searched as text, not offered as a list


@dataclass
class CorpusPage:
    rows: list[dict[str, Any]]  # `index` (sentence number in the corpus), `text`, tags as text, carried fields
    matches: int  # sentences matching the search and filter
    total: int  # sentences in the corpus
    page: int  # 0-based, clamped to the last page
    pages: int


def filter_fields(ws: Workspace, name: str) -> dict[str, list[str]]:
    """Carried fields with few enough distinct values to filter by (e.g. domain), with their values."""
    table = pq.read_table(ws.corpus_path(name), columns=[f for f in ws.corpus_info(name).fields if f != "id"])
    out = {}
    for field in table.column_names:
        column = table.column(field)
        if pa.types.is_list(column.type) or pa.types.is_struct(column.type):
            continue
        values = pc.unique(_as_text(column))
        if len(values) <= MAX_FILTER_VALUES:
            out[field] = sorted(v for v in values.to_pylist() if v is not None)
    return out


def _as_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A field's values as the filter offers and matches them: one spelling for both sides (Arrow's 'true' and '1',
    where Python's str gives 'True' and '1.0', so a value offered from one never matched the other)."""
    return pc.cast(column, pa.string())


def browse_corpus(ws: Workspace, name: str, query: str = "", field: str | None = None, values: list[str] | None = None,
                  page: int = 0, per_page: int = 50) -> CorpusPage:
    """Sentences of corpus `name` containing `query` (literal, case-insensitive) and whose `field`
    is one of `values`, page `page` of `per_page`."""
    if per_page < 1:
        raise UserError(f"rows per page must be at least 1, got {per_page}")
    table = pq.read_table(ws.corpus_path(name))
    total = table.num_rows
    text = pc.binary_join(table.column("tokens"), " ")
    keep = None
    if query.strip():
        keep = pc.match_substring(text, query.strip(), ignore_case=True)
    if field and values:
        if field not in table.column_names:
            raise UserError(f"corpus {name!r} has no field {field!r}: its fields are "
                            f"{', '.join(c for c in table.column_names if c not in ('tokens', 'tags')) or 'none'}")
        wanted = pc.is_in(_as_text(table.column(field)), value_set=pa.array([str(v) for v in values]))
        keep = wanted if keep is None else pc.and_(keep, wanted)
    index = pa.array(range(total), type=pa.int64())
    if keep is not None:
        keep = pc.fill_null(keep, False)
        index, table, text = index.filter(keep), table.filter(keep), text.filter(keep)
    matches = table.num_rows
    pages = max(1, -(-matches // per_page))
    page = min(max(int(page), 0), pages - 1)
    lo, hi = page * per_page, min(matches, (page + 1) * per_page)
    chunk = table.slice(lo, hi - lo).to_pydict()
    rows = []
    for j in range(hi - lo):
        row: dict[str, Any] = {"index": index[lo + j].as_py(), "text": text[lo + j].as_py()}
        if "tags" in chunk:
            row["tags"] = " ".join(chunk["tags"][j])
        row.update({k: v[j] for k, v in chunk.items() if k not in ("tokens", "tags")})
        rows.append(row)
    return CorpusPage(rows, matches, total, page, pages)
