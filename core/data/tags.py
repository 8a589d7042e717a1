"""Tag schemes: detection, validation, conversion and span extraction.

The seed method trains with BIOES while most corpora ship BIO, so conversion
must be lossless both ways. Everything goes through spans: a tag sequence is
parsed into (start, end_exclusive, type) spans and re-encoded in the target
scheme, which makes every conversion a round trip by construction.

>>> spans_from_tags(["B-PER", "I-PER", "O", "S-LOC"], "bioes")
[Span(start=0, end=2, type='PER'), Span(start=3, end=4, type='LOC')]
>>> tags_from_spans([Span(0, 2, "PER")], 3, "bioes")
['B-PER', 'E-PER', 'O']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from core.errors import CorpusError


class TagScheme(str, Enum):
    BIO = "bio"  # also called IOB2: every span starts with B-
    IOB1 = "iob1"  # B- only between two adjacent spans of one type
    BIOES = "bioes"  # also called IOBES: S- single, E- end
    NONE = "none"  # only O tags (or no tags)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class Span:
    start: int  # first token index
    end: int  # one past the last token
    type: str

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "type": self.type}

    @classmethod
    def from_dict(cls, d: dict) -> Span:
        """The one reader of a stored span ({"start", "end", "type"}; numbers may come back from JSON as floats).

        >>> Span.from_dict({"start": 1.0, "end": 2, "type": "PER"})
        Span(start=1, end=2, type='PER')
        """
        return cls(int(d["start"]), int(d["end"]), str(d["type"]))


_PREFIXES = {"B", "I", "E", "S", "L", "U"}  # L/U are BILOU aliases of E/S


def split_tag(tag: str) -> tuple[str, str | None]:
    """('B', 'PER') for 'B-PER'; ('O', None) for 'O'. Raises ValueError on anything else."""
    if tag == "O":
        return "O", None
    if len(tag) > 2 and tag[1] in "-_" and tag[0] in _PREFIXES:
        prefix = {"L": "E", "U": "S"}.get(tag[0], tag[0])
        return prefix, tag[2:]
    raise ValueError(f"unknown tag {tag!r}: expected O or a B-/I-/E-/S- prefix and a type")


def detect_scheme(tag_sequences: Sequence[Sequence[str]]) -> TagScheme:
    """Guess the scheme from which prefixes occur and where I- may start a span."""
    prefixes: set[str] = set()
    i_starts_span = b_starts_span = False
    for tags in tag_sequences:
        prev_prefix, prev_type = "O", None
        for tag in tags:
            try:
                prefix, typ = split_tag(tag)
            except ValueError:
                continue
            prefixes.add(prefix)
            fresh = prev_prefix in ("O", "E", "S") or prev_type != typ
            if prefix == "I" and fresh:
                i_starts_span = True
            if prefix == "B" and fresh:
                b_starts_span = True  # IOB1 never does this: then it is BIO, and stray I- are errors
            prev_prefix, prev_type = prefix, typ
    if prefixes <= {"O"}:
        return TagScheme.NONE
    if prefixes & {"E", "S"}:
        return TagScheme.BIOES
    if i_starts_span and not b_starts_span:
        return TagScheme.IOB1
    return TagScheme.BIO


def validate_tags(tags: Sequence[str], scheme: TagScheme) -> list[tuple[int, str]]:
    """Problems as (token_index, message); empty when the sequence is valid in `scheme`."""
    problems: list[tuple[int, str]] = []
    prev_prefix, prev_type = "O", None
    for i, tag in enumerate(tags):
        try:
            prefix, typ = split_tag(tag)
        except ValueError as exc:
            problems.append((i, str(exc)))
            prev_prefix, prev_type = "O", None
            continue
        inside = prev_prefix in ("B", "I") and prev_type == typ
        if scheme == TagScheme.BIO:
            if prefix in ("E", "S"):
                problems.append((i, f"{tag!r} is not a BIO tag"))
            elif prefix == "I" and not inside:
                problems.append((i, f"{tag!r} follows {_fmt(prev_prefix, prev_type)}: I- must continue a span of the same type"))
        elif scheme == TagScheme.BIOES:
            if prefix in ("I", "E") and not inside:
                problems.append((i, f"{tag!r} follows {_fmt(prev_prefix, prev_type)}: {prefix}- needs a preceding B-/I- of the same type"))
            if prev_prefix in ("B", "I") and not (prefix in ("I", "E") and prev_type == typ):
                problems.append((i, f"span {_fmt(prev_prefix, prev_type)} at token {i - 1} is not closed by E-{prev_type}"))
        elif scheme == TagScheme.IOB1:
            if prefix in ("E", "S"):
                problems.append((i, f"{tag!r} is not an IOB1 tag"))
            elif prefix == "B" and not (prev_prefix in ("B", "I") and prev_type == typ):
                problems.append((i, f"{tag!r}: in IOB1, B- only separates two adjacent spans of one type"))
        prev_prefix, prev_type = prefix, typ
    if scheme == TagScheme.BIOES and prev_prefix in ("B", "I"):
        problems.append((len(tags) - 1, f"span {_fmt(prev_prefix, prev_type)} at the end is not closed by E-{prev_type}"))
    return problems


def _fmt(prefix: str, typ: str | None) -> str:
    return "O" if prefix == "O" else f"{prefix}-{typ}"


def spans_from_tags(tags: Sequence[str], scheme: TagScheme | str = TagScheme.BIO) -> list[Span]:
    """Spans of a tag sequence in any scheme (B- always opens a span, so one parser
    serves BIO, IOB1 and BIOES). Lenient: an I-/E- that cannot continue opens a new
    span (the conlleval convention), so predicted sequences never crash the decoder."""
    del scheme  # kept in the signature so callers state what they pass
    spans: list[Span] = []
    start, cur_type = None, None

    def close(end: int) -> None:
        nonlocal start, cur_type
        if start is not None:
            spans.append(Span(start, end, cur_type))
        start, cur_type = None, None

    for i, tag in enumerate(tags):
        prefix, typ = split_tag(tag)
        if prefix == "O":
            close(i)
            continue
        continues = start is not None and typ == cur_type
        if prefix == "B":
            close(i)
            start, cur_type = i, typ
        elif prefix == "S":
            close(i)
            spans.append(Span(i, i + 1, typ))
        elif prefix == "I":
            if not continues:
                close(i)
                start, cur_type = i, typ
        elif prefix == "E":
            if not continues:
                close(i)
                start, cur_type = i, typ
            close(i + 1)
    close(len(tags))
    return spans


def tags_from_spans(spans: Sequence[Span], length: int, scheme: TagScheme | str = TagScheme.BIO) -> list[str]:
    scheme = TagScheme(scheme)
    tags = ["O"] * length
    ordered = sorted(spans)
    for k, span in enumerate(ordered):
        n = span.end - span.start
        if scheme == TagScheme.BIOES:
            if n == 1:
                tags[span.start] = f"S-{span.type}"
            else:
                tags[span.start] = f"B-{span.type}"
                for j in range(span.start + 1, span.end - 1):
                    tags[j] = f"I-{span.type}"
                tags[span.end - 1] = f"E-{span.type}"
        elif scheme == TagScheme.IOB1:
            prev = ordered[k - 1] if k else None
            adjacent = prev is not None and prev.end == span.start and prev.type == span.type
            tags[span.start] = f"B-{span.type}" if adjacent else f"I-{span.type}"
            for j in range(span.start + 1, span.end):
                tags[j] = f"I-{span.type}"
        else:
            tags[span.start] = f"B-{span.type}"
            for j in range(span.start + 1, span.end):
                tags[j] = f"I-{span.type}"
    return tags


def cut_tags(tags: Sequence[str], n: int, scheme: TagScheme | str = TagScheme.BIOES) -> list[str]:
    """The first `n` tags of a sentence a model cuts short (its max_length), an entity the cut runs through ending at
    the cut: sliced, a BIOES sequence would end on B- or I-, a path the constrained CRF scores as impossible (its loss
    then swamps the logged training loss).

    >>> cut_tags(["B-PER", "I-PER", "E-PER", "O"], 2), cut_tags(["B-PER", "E-PER", "S-LOC"], 1)
    (['B-PER', 'E-PER'], ['S-PER'])
    >>> cut_tags(["S-PER", "O"], 5)
    ['S-PER', 'O']
    """
    if n >= len(tags):
        return list(tags)
    spans = [Span(s.start, min(s.end, n), s.type) for s in spans_from_tags(tags, scheme) if s.start < n]
    return tags_from_spans(spans, n, scheme)


def convert_tags(tags: Sequence[str], source: TagScheme | str, target: TagScheme | str) -> list[str]:
    target = TagScheme(target)
    if target == TagScheme.NONE:
        raise ValueError("cannot convert to scheme 'none'")
    return tags_from_spans(spans_from_tags(tags, source), len(tags), target)


_BIOES_ONLY = ("E-", "S-", "L-", "U-")  # prefixes BIO has no use for


def _mostly_bio(tag_sequences: Sequence[Sequence[str]]) -> bool:
    """More sentences read as BIO spans (B-/I- only) than hold a BIOES-only tag: the BIOES tags are the strays."""
    bioes = sum(any(t[:2] in _BIOES_ONLY for t in seq) for seq in tag_sequences)
    bio = sum(any(t[:2] in ("B-", "I-") for t in seq) and not any(t[:2] in _BIOES_ONLY for t in seq)
              for seq in tag_sequences)
    return 0 < bioes < bio


def check_sequences(tag_sequences: Sequence[Sequence[str]], scheme: TagScheme, path: str | None = None,
                    lines: Sequence[int] | None = None, first_sentence: int = 0, token_per_line: bool = True) -> None:
    """Raise a CorpusError at the first invalid sequence, naming sentence and token (`first_sentence`: how many
    sentences of the file came before these, so a later chunk's sentence is counted from the file's start).
    `lines`: each sentence's first line; `token_per_line` (CoNLL) puts token k on the line k after it, else (a JSONL
    record, a CoNLL-U sentence with comment or range lines) the line named is the sentence's own or first one."""
    def line_of(s: int, tok: int) -> int | None:
        return None if lines is None else lines[s] + tok if token_per_line else lines[s]

    for s, tags in enumerate(tag_sequences):
        problems = validate_tags(tags, scheme)
        if problems:
            tok, msg = problems[0]
            if scheme == TagScheme.BIOES and not validate_tags(tags, TagScheme.BIO) and _mostly_bio(tag_sequences):
                # a BIO file with a stray E-/S- was read as BIOES: name the stray tag, not a valid BIO sentence (in a
                # file mostly BIOES, the sentence that reads as BIO is the typo, as said below)
                k, i, t = next((k, i, t) for k, seq in enumerate(tag_sequences) for i, t in enumerate(seq)
                               if t[:2] in _BIOES_ONLY)
                raise CorpusError(path, line_of(k, i), f"sentence {first_sentence + k + 1}, token {i + 1}: {t!r} is a "
                                  f"BIOES tag, but sentence {first_sentence + s + 1} is BIO ({msg}), as most of the "
                                  "file is: it mixes BIO and BIOES; write it in one scheme")
            raise CorpusError(path, line_of(s, tok), f"sentence {first_sentence + s + 1}, token {tok + 1}: {msg} (scheme {scheme})")


def entity_types(tag_sequences: Sequence[Sequence[str]]) -> list[str]:
    types = {split_tag(t)[1] for tags in tag_sequences for t in tags if t != "O"}
    return sorted(t for t in types if t)
