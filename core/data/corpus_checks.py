"""The checks a corpus file's sentences pass as they are read (core.data.corpus): whether a cell is a tag, typed
Parquet rows checked as a JSONL line is, and one tag scheme per file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from core.data.tags import TagScheme, check_sequences, detect_scheme, split_tag
from core.errors import CorpusError

if TYPE_CHECKING:
    from core.data.corpus import Corpus


def looks_like_tag(s: str) -> bool:
    try:
        split_tag(s)
        return True
    except ValueError:
        return False


def string_lists(schema: pa.Schema, column: str) -> bool:
    """Whether a Parquet column is a list of strings, as the workspace writes tokens and tags (integer tags, the
    Hugging Face `ner_tags` layout, go through the row-by-row reader and its message)."""
    kind = schema.field(column).type
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and (
        pa.types.is_string(kind.value_type) or pa.types.is_large_string(kind.value_type))


_SPACE = re.compile(r"\s")


def token_problem(tokens: list[str]) -> str | None:
    """What is wrong with a sentence's given tokens, if anything: an empty token, or one holding a space, cannot be
    written to CoNLL and read back (one word per line), and a browser row splitting the text on spaces would no
    longer line up with its tags; None when every token is one non-empty word."""
    if "" not in tokens and not _SPACE.search("".join(tokens)):  # one search a sentence: a DC has millions
        return None
    for k, t in enumerate(tokens):
        if t == "" or any(ch.isspace() for ch in t):
            return (f"token {k + 1} ({t!r}) is {'empty' if t == '' else 'more than one word'}: 'tokens' lists one "
                    "word per entry, without spaces (give 'text' to have it split)")
    return None


def check_rows(corpus: Corpus, path: Path, first_row: int) -> None:
    """The checks `_record_to_sentence` makes on a text record, on typed rows (Parquet rows are counted from 1)."""
    for i, toks in enumerate(corpus.tokens):
        row = first_row + i + 1
        if toks is None or any(t is None for t in toks):
            raise CorpusError(path, row, "'tokens' must be a list of strings (found a null)")
        if problem := token_problem(toks):
            raise CorpusError(path, row, problem)
        if corpus.tags is None:
            continue
        tags = corpus.tags[i]
        if tags is None or any(t is None for t in tags):
            raise CorpusError(path, row, "'tags' must be a list of strings (found a null)")
        if len(tags) != len(toks):
            raise CorpusError(path, row, f"{len(toks)} tokens but {len(tags)} tags")
        if bad := next((t for t in tags if not looks_like_tag(t)), None):
            raise CorpusError(path, row, f"tag {bad!r} is not O or B-/I-/E-/S-TYPE")


class SchemeCheck:
    """Tag sequences validated in one scheme for the whole file: the one the first chunk with entities shows (a
    file is read in chunks of 50,000 sentences; detected chunk by chunk, a stray I- after the first chunk made the
    whole corpus IOB1 instead of being refused as it is in a small file), with sentences counted from the file's
    start in the messages."""

    def __init__(self, path: Path, token_per_line: bool = False) -> None:
        """`token_per_line`: CoNLL, where a sentence's token k is on the line k after its first (tags.check_sequences)."""
        self.path, self.scheme, self.sentences, self.token_per_line = path, TagScheme.NONE, 0, token_per_line

    def __call__(self, corpus: Corpus, lines: list[int] | None) -> Corpus:
        if corpus.tags is not None:
            if self.scheme == TagScheme.NONE:
                self.scheme = detect_scheme(corpus.tags)
            if self.scheme != TagScheme.NONE:
                check_sequences(corpus.tags, self.scheme, str(self.path), lines, first_sentence=self.sentences,
                                token_per_line=self.token_per_line)
        self.sentences += len(corpus)
        return corpus


_MAGIC = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"BZh": "bzip2", b"\xfd7zXZ": "xz", b"(\xb5/\xfd": "zstd"}


def compressed_as(head: bytes) -> str | None:
    r"""The archive format a file's first bytes name ('gzip' for b'\x1f\x8b...'), None for anything else: read as
    text, a .gz is 'not valid UTF-8 at column 2', which sends a user to re-save a file that is fine once unpacked.

    >>> compressed_as(b"\x1f\x8b\x08\x00"), compressed_as(b"PK\x03\x04..."), compressed_as(b"John B-PER")
    ('gzip', 'zip', None)
    """
    return next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)


def record_tags(rec: dict[str, Any], n_tokens: int, path: Path, lineno: int) -> list[str] | None:
    """A JSONL/CSV/Parquet record's tags, popped from it: `tags`, or a Hugging Face export's `ner_tags` when it
    holds label names (class ids are refused: read as a plain field they imported the corpus unlabeled, silently)."""
    tags = rec.pop("tags", None)
    if tags is None and isinstance(rec.get("ner_tags"), list) and all(isinstance(t, str) for t in rec["ner_tags"]):
        tags = rec.pop("ner_tags")  # Hugging Face datasets' column name, when it holds strings
    elif tags is None and isinstance(rec.get("ner_tags"), list) and any(isinstance(t, int) for t in rec["ner_tags"]):
        raise CorpusError(path, lineno, "'ner_tags' holds numbers (class ids, as a Hugging Face dataset stores them); "
                                        "write the label names instead (B-PER, I-PER, O, ...: the dataset's "
                                        "features['ner_tags'].feature.int2str), or name the field otherwise to keep it "
                                        "as a plain field")
    if tags is not None:
        if isinstance(tags, str):
            tags = tags.split()
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise CorpusError(path, lineno, "'tags' must be a list of strings")
        if len(tags) != n_tokens:
            raise CorpusError(path, lineno, f"{n_tokens} tokens but {len(tags)} tags")
        for t in tags:
            if not looks_like_tag(t):
                raise CorpusError(path, lineno, f"tag {t!r} is not O or B-/I-/E-/S-TYPE")
    return tags
