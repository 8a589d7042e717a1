"""CoNLL-U files (Universal Dependencies): tokens from the FORM column, NER tags where the file has them, from the
MISC column's `NER=TAG` (or `NE=TAG`), the way NER layers are added to UD treebanks. Read as plain CoNLL, a .conllu
file failed on its first `# sent_id` comment with "last column '1' is not a tag", and a treebank is good
domain text (a DC) even without tags. No well-kept library reads these lines faster than a split: `conllu` (PyPI)
parses every column into dicts, which a 10M-token DC does not need.

>>> lines = conllu_text([["Paris", "is"]], [["B-LOC", "O"]]).splitlines()
>>> lines[0], lines[1].split("\\t")
('# text = Paris is', ['1', 'Paris', '_', '_', '_', '_', '_', '_', '_', 'NER=B-LOC'])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from core.data.corpus_checks import looks_like_tag
from core.errors import CorpusError

Chunk = tuple[list[list[str]], list[list[str]] | None, list[int]]  # tokens, tags (None: unlabeled), first lines

COLUMNS = 10  # ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC
TAG_KEYS = ("NER", "NE")


def _misc_tag(misc: str) -> str | None:
    for item in misc.split("|"):
        key, _, value = item.partition("=")
        if key in TAG_KEYS and value:
            return value
    return None


def iter_conllu(path: Path, lines: Iterable[tuple[int, str]], chunk: int) -> Iterator[Chunk]:
    """Sentences of `lines` ((line number, text) pairs) in chunks of (tokens, tags, each sentence's first line), which
    core.data.corpus makes Corpus chunks of; labeled when the file's first word has a tag, and then every word must
    have one (a file half tagged is refused at the first word without)."""
    tokens: list[list[str]] = []
    tags: list[list[str]] = []
    starts: list[int] = []
    cur_tok: list[str] = []
    cur_tag: list[str] = []
    labeled: bool | None = None
    start = 0
    for lineno, line in lines:
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur_tok:
                tokens.append(cur_tok)
                tags.append(cur_tag)
                starts.append(start)
                cur_tok, cur_tag = [], []
            if len(tokens) >= chunk:
                yield tokens, tags if labeled else None, starts
                tokens, tags, starts = [], [], []
            continue
        cols = line.split("\t")
        if len(cols) != COLUMNS:
            raise CorpusError(path, lineno, f"expected {COLUMNS} tab-separated columns (CoNLL-U: ID FORM ... MISC), "
                                            f"got {len(cols)}: {line[:60]!r}")
        word_id = cols[0]
        if "-" in word_id or "." in word_id:  # a multiword token's range, an empty node: the words are on their lines
            continue
        if not word_id.isdigit():
            raise CorpusError(path, lineno, f"ID {word_id!r} is not a word number")
        form = cols[1].strip()
        if not form or any(ch.isspace() for ch in form):
            raise CorpusError(path, lineno, f"FORM {cols[1]!r} is not one token (empty or holds a space)")
        tag = _misc_tag(cols[9])
        if labeled is None:
            labeled = tag is not None
        if labeled and tag is None:
            raise CorpusError(path, lineno, "no NER=TAG in the MISC column, while the file's first word has one "
                                            "(tag every word, O outside entities, or none)")
        if tag is not None and not looks_like_tag(tag):
            raise CorpusError(path, lineno, f"NER={tag!r} is not a tag: expected O or B-/I-/E-/S-TYPE")
        if not cur_tok:
            start = lineno
        cur_tok.append(form)
        cur_tag.append(tag or "O")
    if cur_tok:
        tokens.append(cur_tok)
        tags.append(cur_tag)
        starts.append(start)
    if tokens:
        yield tokens, tags if labeled else None, starts


def conllu_text(tokens: Sequence[Sequence[str]], tags: Sequence[Sequence[str]] | None) -> str:
    """Sentences as CoNLL-U: FORM, the tag in MISC (NER=TAG) when labeled, every other column empty ("_")."""
    out: list[str] = []
    for i, toks in enumerate(tokens):
        out.append(f"# text = {' '.join(toks)}")
        for j, tok in enumerate(toks, start=1):
            misc = f"NER={tags[i][j - 1]}" if tags is not None else "_"
            out.append("\t".join((str(j), tok, "_", "_", "_", "_", "_", "_", "_", misc)))
        out.append("")
    return "\n".join(out) + "\n"
