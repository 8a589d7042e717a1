"""Corpus readers and writers: plain text, CoNLL, CoNLL-U (core.data.conllu), JSONL, CSV and Parquet.

Every reader is a generator of chunks (`iter_corpus`) so a multi-GB domain corpus
is never held twice in memory; `read_corpus` just concatenates the chunks.
Errors are `CorpusError`s naming the file and line, never raw exceptions.

>>> c = Corpus(tokens=[["Paris", "is", "nice"]], tags=[["B-LOC", "O", "O"]])
>>> c.labeled, c.texts()
(True, ['Paris is nice'])
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from core.data.atomic import atomic_write_bytes
from core.data.conllu import conllu_text, iter_conllu
from core.data.corpus_checks import (
    SchemeCheck,
    check_rows,
    compressed_as,
    looks_like_tag,
    record_tags,
    string_lists,
    token_problem,
)
from core.data.tags import TagScheme, convert_tags, detect_scheme
from core.errors import CorpusError

FORMATS = ("txt", "conll", "conllu", "jsonl", "csv", "parquet")
FORMAT_CHOICES = ("auto", *FORMATS)  # what an import may be told (CLI --format, the Corpora page): auto guesses
_EXTENSIONS = {
    ".txt": "txt", ".text": "txt", ".raw": "txt",
    ".conll": "conll", ".bio": "conll", ".iob": "conll", ".tsv": "conll", ".conllu": "conllu",
    ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
    ".csv": "csv", ".parquet": "parquet", ".pq": "parquet",
}
DEFAULT_CHUNK = 50_000  # sentences per chunk: ~10-20 MB of Python strings, big enough to amortise Arrow calls

Tokenizer = Callable[[str], list[str]]


def whitespace_tokenize(text: str) -> list[str]:
    return text.split()


@dataclass
class Corpus:
    """Sentences as token lists, optional tags (one per token), and any extra per-sentence
    fields the source carried (e.g. `domain`, `id`), kept through to every output."""

    tokens: list[list[str]]
    tags: list[list[str]] | None = None
    fields: dict[str, list[Any]] = field(default_factory=dict)
    name: str = ""

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if self.tags is not None and len(self.tags) != n:
            raise ValueError(f"{len(self.tags)} tag sequences for {n} sentences")
        for key, values in self.fields.items():
            if len(values) != n:
                raise ValueError(f"field {key!r} has {len(values)} values for {n} sentences")

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def labeled(self) -> bool:
        return self.tags is not None

    def texts(self) -> list[str]:
        return [" ".join(t) for t in self.tokens]

    def subset(self, indices: Sequence[int]) -> Corpus:
        return Corpus(
            tokens=[self.tokens[i] for i in indices],
            tags=[self.tags[i] for i in indices] if self.tags is not None else None,
            fields={k: [v[i] for i in indices] for k, v in self.fields.items()},
            name=self.name,
        )

    def unlabeled(self) -> Corpus:
        return Corpus(tokens=self.tokens, tags=None, fields=dict(self.fields), name=self.name)

    def record(self, i: int) -> dict[str, Any]:
        """One sentence as a JSON-ready dict: text, tokens, tags (if any), carried fields."""
        rec: dict[str, Any] = {"text": " ".join(self.tokens[i]), "tokens": self.tokens[i]}
        if self.tags is not None:
            rec["tags"] = self.tags[i]
        for k, v in self.fields.items():
            rec[k] = v[i]
        return rec

    def records(self) -> Iterator[dict[str, Any]]:
        return (self.record(i) for i in range(len(self)))

    @property
    def scheme(self) -> TagScheme:
        return detect_scheme(self.tags) if self.tags is not None else TagScheme.NONE

    def with_scheme(self, target: TagScheme | str) -> Corpus:
        if self.tags is None:
            return self
        source = self.scheme
        if source == TagScheme.NONE or source == TagScheme(target):
            return self
        tags = [convert_tags(t, source, target) for t in self.tags]
        return Corpus(tokens=self.tokens, tags=tags, fields=dict(self.fields), name=self.name)

    def to_arrow(self) -> pa.Table:
        cols: dict[str, Any] = {"tokens": pa.array(self.tokens, type=pa.list_(pa.string()))}
        if self.tags is not None:
            cols["tags"] = pa.array(self.tags, type=pa.list_(pa.string()))
        for k, v in self.fields.items():
            cols[k] = pa.array(v)
        return pa.table(cols)

    @classmethod
    def from_arrow(cls, table: pa.Table, name: str = "") -> Corpus:
        data = table.to_pydict()
        tokens = data.pop("tokens")
        tags = data.pop("tags", None)
        return cls(tokens=tokens, tags=tags, fields=data, name=name)

    @classmethod
    def concat(cls, parts: Iterable[Corpus], name: str = "") -> Corpus:
        parts = list(parts)
        if not parts:
            return cls(tokens=[], name=name)
        labeled = parts[0].labeled
        keys = list(parts[0].fields)
        tokens: list[list[str]] = []
        tags: list[list[str]] | None = [] if labeled else None
        fields: dict[str, list[Any]] = {k: [] for k in keys}
        for p in parts:
            tokens.extend(p.tokens)
            if tags is not None and p.tags is not None:
                tags.extend(p.tags)
            for k in keys:
                fields[k].extend(p.fields.get(k, [None] * len(p)))
        return cls(tokens=tokens, tags=tags, fields=fields, name=name or parts[0].name)


# --------------------------------------------------------------------------- format detection


def detect_format(path: str | Path) -> str:
    """By extension, except that `.txt` and unknown extensions are sniffed: CoNLL data
    is commonly shipped as train.txt (CrossNER, CoNLL-2003)."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext in _EXTENSIONS and _EXTENSIONS[ext] != "txt":
        return _EXTENSIONS[ext]
    with open(path, "rb") as fh:
        if fh.read(4) == b"PAR1":
            return "parquet"
        fh.seek(0)
        seen = tagged = 0
        for raw in fh:
            line = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
            if not line or line.startswith("-DOCSTART-"):
                continue
            if seen == 0 and line.startswith("{"):
                return "jsonl"
            parts = line.split()
            seen += 1
            tagged += len(parts) >= 2 and looks_like_tag(parts[-1])
            if seen >= 50:
                break
    # most lines tagged: CoNLL, and the CoNLL reader names the line that is not (one missing tag in a train.txt made
    # it plain text before, each "TOKEN TAG" line a sentence, and a role that needs labels refused it without a line)
    return "conll" if seen and tagged >= CONLL_SHARE * seen else "txt"


CONLL_SHARE = 0.8  # of a .txt file's first 50 non-blank lines ending in a tag; prose ends in one almost never




# --------------------------------------------------------------------------- line reading


def _iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without newline). UTF-8 with or without BOM only: any
    other bytes raise a CorpusError naming the line, because silently mis-decoded text
    would poison vocabulary statistics downstream."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and (packed := compressed_as(raw)):
                raise CorpusError(path, 1, f"a {packed} archive, not text: unpack it first and give the file inside")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(path, lineno, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                                                "save the file as UTF-8") from None
            if lineno == 1:
                line = line.lstrip("\ufeff")
            yield lineno, line.rstrip("\r\n")


# --------------------------------------------------------------------------- readers


def _iter_txt(path: Path, chunk: int, tokenize: Tokenizer) -> Iterator[Corpus]:
    tokens: list[list[str]] = []
    for _, line in _iter_lines(path):
        toks = tokenize(line)
        if toks:
            tokens.append(toks)
        if len(tokens) >= chunk:
            yield Corpus(tokens=tokens)
            tokens = []
    if tokens:
        yield Corpus(tokens=tokens)


def _iter_conll(path: Path, chunk: int) -> Iterator[Corpus]:
    checked = SchemeCheck(path, token_per_line=True)
    tokens: list[list[str]] = []
    tags: list[list[str]] = []
    lines: list[int] = []
    cur_tok: list[str] = []
    cur_tag: list[str] = []
    start_line = 0

    def flush_sentence() -> None:
        nonlocal cur_tok, cur_tag
        if cur_tok:
            tokens.append(cur_tok)
            tags.append(cur_tag)
            lines.append(start_line)
        cur_tok, cur_tag = [], []

    for lineno, line in _iter_lines(path):
        stripped = line.strip()
        if not stripped:
            flush_sentence()
        elif stripped.startswith("-DOCSTART-"):
            flush_sentence()
        else:
            parts = stripped.split("\t") if "\t" in stripped else stripped.split()
            parts = [p for p in parts if p != ""]
            if len(parts) < 2:
                raise CorpusError(path, lineno, f"expected 'TOKEN<TAB>TAG' (at least two columns), got {stripped[:60]!r}")
            tag = parts[-1].strip()
            if not looks_like_tag(tag):
                raise CorpusError(path, lineno, f"last column {tag!r} is not a tag: expected O or B-/I-/E-/S-TYPE")
            token = parts[0].strip()
            if any(ch.isspace() for ch in token):  # "New York<TAB>B-LOC": one token would hold two words
                raise CorpusError(path, lineno, f"token {token!r} holds a space: one word per line, its tag after a tab")
            if not cur_tok:
                start_line = lineno
            cur_tok.append(token)
            cur_tag.append(tag)
        if len(tokens) >= chunk:
            yield checked(Corpus(tokens=tokens, tags=tags), lines)
            tokens, tags, lines = [], [], []
    flush_sentence()
    if tokens:
        yield checked(Corpus(tokens=tokens, tags=tags), lines)


def _record_to_sentence(rec: dict[str, Any], path: Path, lineno: int, tokenize: Tokenizer
                        ) -> tuple[list[str], list[str] | None, dict[str, Any]]:
    rec = dict(rec)
    if "tokens" in rec:
        toks = rec.pop("tokens")
        if isinstance(toks, str):
            toks = tokenize(toks)
        if not isinstance(toks, list) or not all(isinstance(t, str) for t in toks):
            raise CorpusError(path, lineno, "'tokens' must be a list of strings")
        if problem := token_problem(toks):
            raise CorpusError(path, lineno, problem)
        rec.pop("text", None)
    elif "text" in rec:
        text = rec.pop("text")
        if not isinstance(text, str):
            raise CorpusError(path, lineno, "'text' must be a string")
        toks = tokenize(text)
    else:
        raise CorpusError(path, lineno, f"expected a 'text' or 'tokens' field, found {sorted(rec)[:6]}")
    tags = record_tags(rec, len(toks), path, lineno)  # pops its tag field from rec
    return toks, tags, rec


class _ChunkBuilder:
    """Collects sentences with consistent fields and labeledness into Corpus chunks."""

    def __init__(self, path: Path):
        self.path = path
        self.labeled: bool | None = None
        self.field_names: list[str] | None = None
        self.kinds: dict[str, tuple[str, int]] = {}  # field -> (kind of its first value, its line): across chunks
        self.checked = SchemeCheck(path)
        self._reset()

    def _reset(self) -> None:
        self.tokens: list[list[str]] = []
        self.tags: list[list[str]] = []
        self.fields: dict[str, list[Any]] = {k: [] for k in (self.field_names or [])}
        self.lines: list[int] = []

    def add(self, toks: list[str], tags: list[str] | None, extra: dict[str, Any], lineno: int) -> None:
        if not toks:
            return
        if self.labeled is None:
            self.labeled = tags is not None
            self.field_names = list(extra)
            self.fields = {k: [] for k in self.field_names}
        elif self.labeled != (tags is not None):
            raise CorpusError(self.path, lineno, "some sentences have tags and others do not: expected all or none")
        if new := [k for k in extra if k not in (self.field_names or [])]:
            # a field the first record lacked: carried from here (earlier sentences have none) while the first chunk
            # is built; after it, its column is written and a new one cannot join (it was dropped without a word)
            if self.checked.sentences:
                raise CorpusError(self.path, lineno, f"field {new[0]!r} first appears here, after the first "
                                                     f"{self.checked.sentences:,} sentences: expected it on an earlier "
                                                     "line (at least once in the first chunk), or not at all")
            self.field_names = [*(self.field_names or []), *new]
            for k in new:
                self.fields[k] = [None] * len(self.tokens)
        for k in self.field_names or []:  # checked before anything is added: a refused line leaves no half record
            self._check_kind(k, extra.get(k), lineno)
        self.tokens.append(toks)
        if tags is not None:
            self.tags.append(tags)
        for k in self.field_names or []:
            v = extra.get(k)
            self.fields[k].append(v if not isinstance(v, (dict, list)) else json.dumps(v))
        self.lines.append(lineno)

    def _check_kind(self, field: str, value: Any, lineno: int) -> None:
        """One kind of value per carried field (a Parquet column has one type): "id": 1 on one line and "id": "x" on
        another is said with both lines, not left to Arrow's "Could not convert" traceback."""
        if value is None:
            return
        kind = ("text" if isinstance(value, (str, dict, list)) else "true/false" if isinstance(value, bool)
                else "number" if isinstance(value, (int, float)) else type(value).__name__)
        first = self.kinds.setdefault(field, (kind, lineno))
        if first[0] != kind:
            raise CorpusError(self.path, lineno, f"field {field!r} is {kind} here but {first[0]} on line {first[1]}: "
                                                 "expected one kind per field (quote numbers to keep them as text)")

    def __len__(self) -> int:
        return len(self.tokens)

    def take(self) -> Corpus:
        corpus = Corpus(tokens=self.tokens, tags=self.tags if self.labeled else None, fields=self.fields)
        corpus = self.checked(corpus, None if not self.lines else [ln for ln in self.lines])
        self._reset()
        return corpus


def _iter_jsonl(path: Path, chunk: int, tokenize: Tokenizer) -> Iterator[Corpus]:
    builder = _ChunkBuilder(path)
    for lineno, line in _iter_lines(path):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(path, lineno, f"invalid JSON ({exc.msg} at column {exc.colno}); expected one object per line") from None
        if not isinstance(rec, dict):
            raise CorpusError(path, lineno, f"expected a JSON object per line, got {type(rec).__name__}")
        builder.add(*_record_to_sentence(rec, path, lineno, tokenize), lineno)
        if len(builder) >= chunk:
            yield builder.take()
    if len(builder):
        yield builder.take()


def _parse_cell_list(value: Any, path: Path, lineno: int, column: str) -> list[str] | str:
    """CSV cells holding token/tag lists may be JSON arrays or space-separated strings."""
    if isinstance(value, list):
        return [str(v) for v in value]
    if hasattr(value, "tolist"):
        return [str(v) for v in value.tolist()]
    if isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise CorpusError(path, lineno, f"column {column!r} looks like a JSON list but does not parse") from None
        return [str(v) for v in parsed]
    if value is None:
        raise CorpusError(path, lineno, f"column {column!r} is empty")
    return str(value).split()


def _iter_table_rows(rows: Iterable[tuple[int, dict[str, Any]]], path: Path, columns: list[str],
                     chunk: int, tokenize: Tokenizer) -> Iterator[Corpus]:
    if "text" not in columns and "tokens" not in columns:
        raise CorpusError(path, 1, f"expected a 'text' column or 'tokens'/'tags' columns, found {columns[:8]}")
    builder = _ChunkBuilder(path)
    for lineno, row in rows:
        row = {k: (None if _is_missing(v) else v) for k, v in row.items()}
        if "tokens" in row:
            row["tokens"] = _parse_cell_list(row["tokens"], path, lineno, "tokens")
        elif row.get("text") is None:
            raise CorpusError(path, lineno, "empty 'text' cell")
        else:
            row["text"] = str(row["text"])
        if "tags" in row and row["tags"] is not None:
            row["tags"] = _parse_cell_list(row["tags"], path, lineno, "tags")
        elif "tags" in row:
            raise CorpusError(path, lineno, "empty 'tags' cell")
        builder.add(*_record_to_sentence(row, path, lineno, tokenize), lineno)
        if len(builder) >= chunk:
            yield builder.take()
    if len(builder):
        yield builder.take()


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _iter_csv(path: Path, chunk: int, tokenize: Tokenizer) -> Iterator[Corpus]:
    # csv module (not pandas) so each row keeps its physical line number for errors.
    lines = (line for _, line in _iter_lines(path))
    reader = csv.reader(_with_newlines(lines))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise CorpusError(path, 1, f"bad CSV header: {exc}") from None
    header = [h.strip() for h in header]

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise CorpusError(path, reader.line_num, f"bad CSV row: {exc}") from None
            if not values or all(not v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise CorpusError(path, reader.line_num, f"{len(values)} cells but the header has {len(header)} columns")
            yield reader.line_num, {h: (v if v != "" else None) for h, v in zip(header, values)}

    yield from _iter_table_rows(rows(), path, header, chunk, tokenize)


def _with_newlines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        yield line + "\n"


def _iter_parquet(path: Path, chunk: int, tokenize: Tokenizer) -> Iterator[Corpus]:
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorpusError(path, None, f"not a readable Parquet file: {exc}") from None
    columns = pf.schema_arrow.names
    if (all(string_lists(pf.schema_arrow, c) for c in ("tokens", "tags") if c in columns) and "tokens" in columns
            and "ner_tags" not in columns):  # a Hugging Face export's ner_tags: read (or refused) as JSONL reads it
        # Fast path for our own workspace files: columns are already lists of strings; each row is still checked
        # (a null, a tags list of another length, a tag that is not one), by its row number
        checked = SchemeCheck(path)
        for batch in pf.iter_batches(batch_size=chunk):
            corpus = Corpus.from_arrow(pa.Table.from_batches([batch]))
            check_rows(corpus, path, checked.sentences)
            yield checked(corpus, None)
        return
    row_no = 0

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        nonlocal row_no
        for batch in pf.iter_batches(batch_size=chunk):
            for row in batch.to_pylist():
                row_no += 1
                yield row_no, row

    yield from _iter_table_rows(rows(), path, columns, chunk, tokenize)


def iter_corpus(path: str | Path, fmt: str = "auto", chunk_size: int = DEFAULT_CHUNK,
                tokenize: Tokenizer | None = None) -> Iterator[Corpus]:
    """Stream a corpus file as Corpus chunks of at most `chunk_size` sentences.
    Row numbers in Parquet errors are 1-based data rows (there are no lines)."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(path, None, "file not found")
    if path.is_dir():
        raise CorpusError(path, None, "is a folder, expected a corpus file")
    fmt = detect_format(path) if fmt in ("auto", None, "") else fmt
    if fmt not in FORMATS:
        raise CorpusError(path, None, f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
    tokenize = tokenize or whitespace_tokenize
    if fmt == "txt":
        return _iter_txt(path, chunk_size, tokenize)
    if fmt == "conll":
        return _iter_conll(path, chunk_size)
    if fmt == "conllu":
        checked = SchemeCheck(path)
        return (checked(Corpus(tokens=toks, tags=tags), starts if tags is not None else None)
                for toks, tags, starts in iter_conllu(path, _iter_lines(path), chunk_size))
    if fmt == "jsonl":
        return _iter_jsonl(path, chunk_size, tokenize)
    if fmt == "csv":
        return _iter_csv(path, chunk_size, tokenize)
    return _iter_parquet(path, chunk_size, tokenize)


def read_corpus(path: str | Path, fmt: str = "auto", tokenize: Tokenizer | None = None,
                name: str | None = None) -> Corpus:
    """Whole corpus in memory, validated. For huge files prefer `iter_corpus`.
    Schemes are detected over the whole file, so an IOB1 file split across chunks still
    validates as one scheme."""
    parts = list(iter_corpus(path, fmt, tokenize=tokenize))
    corpus = Corpus.concat(parts, name=name if name is not None else Path(path).stem)
    if not len(corpus):
        raise CorpusError(path, None, "no sentences found")
    return corpus


# --------------------------------------------------------------------------- writers


def corpus_bytes(corpus: Corpus, fmt: str, scheme: TagScheme | str | None = None) -> bytes:
    """The corpus serialised in `fmt` (for downloads; `write_corpus` for files)."""
    if scheme is not None and corpus.labeled:
        corpus = corpus.with_scheme(scheme)
    if fmt == "parquet":
        buf = io.BytesIO()
        pq.write_table(corpus.to_arrow(), buf)
        return buf.getvalue()
    out = io.StringIO()
    if fmt == "txt":
        for toks in corpus.tokens:
            out.write(" ".join(toks) + "\n")
    elif fmt == "conll":
        if corpus.tags is None:
            raise ValueError("CoNLL needs tags; this corpus is unlabeled")
        for toks, tags in zip(corpus.tokens, corpus.tags):
            for tok, tag in zip(toks, tags):
                out.write(f"{tok}\t{tag}\n")
            out.write("\n")
    elif fmt == "conllu":
        out.write(conllu_text(corpus.tokens, corpus.tags))
    elif fmt == "jsonl":
        for rec in corpus.records():
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        keys = ["text", "tokens"] + (["tags"] if corpus.labeled else []) + list(corpus.fields)
        writer = csv.DictWriter(out, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        for rec in corpus.records():
            rec["tokens"] = json.dumps(rec["tokens"], ensure_ascii=False)
            if "tags" in rec:
                rec["tags"] = json.dumps(rec["tags"])
            writer.writerow(rec)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return out.getvalue().encode("utf-8")


def format_from_extension(path: str | Path) -> str | None:
    """The format a file name's extension stands for (.bio and .iob are CoNLL), or None."""
    return _EXTENSIONS.get(Path(path).suffix.lower())


def write_corpus(corpus: Corpus, path: str | Path, fmt: str = "auto", scheme: TagScheme | str | None = None) -> Path:
    """Write atomically (temp file + os.replace) so a crash never leaves half a file."""
    path = Path(path)
    if fmt == "auto":
        fmt = format_from_extension(path) or "txt"
    atomic_write_bytes(path, corpus_bytes(corpus, fmt, scheme))
    return path

