"""Entity coverage: which of a labeled corpus's entity words TC already holds, and which a selection adds.

MLM on TC+SC can only teach the encoder about entity words that occur in TC+SC. When TC already holds most
entity words of a held-out labeled corpus (DEV, TEST), a selection has little left to add over TAPT, however
in-domain it is; when TC lacks many of them, the share of that gap a selection fills is what it can bring.
This is the diagnostic behind "selection does not beat TAPT" on CrossNER music (docs/results/).

Words are compared case-folded: the default encoder is uncased, and a sentence-initial capital must not
count as a new word.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.data.corpus import Corpus
from core.data.tags import spans_from_tags
from core.errors import UserError

Tokens = Iterable[Sequence[str]]


def word_set(sentences: Tokens) -> tuple[set[str], int]:
    """Distinct case-folded words of token lists and the sentence count, in one pass (a stream works)."""
    words: set[str] = set()
    n = 0
    for tokens in sentences:
        words.update(t.casefold() for t in tokens)
        n += 1
    return words, n


@dataclass(frozen=True)
class Mention:
    type: str
    words: tuple[str, ...]  # case-folded


def entity_mentions(labeled: Corpus) -> list[Mention]:
    """Every entity mention of a labeled corpus, in its own tag scheme."""
    if not labeled.labeled:
        raise UserError(f"corpus {labeled.name or '(unnamed)'!r} has no NER tags: entity coverage needs a labeled corpus "
                        "(LC, DEV or TEST)")
    scheme = labeled.scheme
    out: list[Mention] = []
    for tokens, tags in zip(labeled.tokens, labeled.tags):  # type: ignore[arg-type]
        for span in spans_from_tags(tags, scheme):
            out.append(Mention(span.type, tuple(t.casefold() for t in tokens[span.start:span.end])))
    return out


@dataclass
class CoverageRow:
    source: str
    sentences: int
    words: float  # share of the labeled corpus's distinct entity words found in the source
    mentions: float  # share of its mentions whose every word is found in the source
    gap_closed: float | None  # share of the entity words TC lacks that the source has (None for TC itself)
    per_type: dict[str, float] = field(default_factory=dict)  # words share per entity type

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "sentences": self.sentences, "words": self.words, "mentions": self.mentions,
                "gap_closed": self.gap_closed, "per_type": self.per_type}


@dataclass
class EntityCoverage:
    labeled: str
    mentions: int
    entity_words: int
    missing_from_tc: int  # distinct entity words TC lacks
    rows: list[CoverageRow]
    added_examples: dict[str, list[str]]  # source -> a few entity words it adds over TC (most frequent first)

    def as_dict(self) -> dict[str, Any]:
        return {"labeled": self.labeled, "mentions": self.mentions, "entity_words": self.entity_words,
                "missing_from_tc": self.missing_from_tc, "rows": [r.as_dict() for r in self.rows],
                "added_examples": self.added_examples}

    def frame(self):
        import pandas as pd

        return pd.DataFrame([{"source": r.source, "sentences": r.sentences, "entity words %": 100 * r.words,
                              "mentions %": 100 * r.mentions,
                              "TC's gap closed %": None if r.gap_closed is None else 100 * r.gap_closed}
                             for r in self.rows])

    def type_frame(self):
        import pandas as pd

        return pd.DataFrame({r.source: {t: 100 * v for t, v in r.per_type.items()} for r in self.rows}).rename_axis("type")


def entity_coverage(labeled: Corpus, tc: Tokens, sources: Mapping[str, Tokens], tc_name: str = "TC",
                    examples: int = 8) -> EntityCoverage:
    """Coverage of `labeled`'s entity words by TC, by each source (a selection) and by TC + that source."""
    mentions = entity_mentions(labeled)
    if not mentions:
        raise UserError(f"corpus {labeled.name or '(unnamed)'!r} has tags but no entity mention: nothing to cover")
    freq: dict[str, int] = defaultdict(int)
    by_type: dict[str, set[str]] = defaultdict(set)
    for m in mentions:
        for w in m.words:
            freq[w] += 1
            by_type[m.type].add(w)
    words = set(freq)

    def row(name: str, vocab: set[str], n: int, gap: set[str] | None) -> CoverageRow:
        covered = [m for m in mentions if all(w in vocab for w in m.words)]
        return CoverageRow(name, n, len(words & vocab) / len(words), len(covered) / len(mentions),
                           None if gap is None else (len(gap & vocab) / len(gap) if gap else 0.0),
                           {t: len(ws & vocab) / len(ws) for t, ws in sorted(by_type.items())})

    tc_vocab, n_tc = word_set(tc)
    gap = words - tc_vocab
    rows = [row(tc_name, tc_vocab, n_tc, None)]
    added: dict[str, list[str]] = {}
    for name, sentences in sources.items():
        vocab, n = word_set(sentences)
        rows.append(row(name, vocab, n, gap))
        rows.append(row(f"{tc_name} + {name}", tc_vocab | vocab, n_tc + n, gap))
        added[name] = sorted(gap & vocab, key=lambda w: (-freq[w], w))[:examples]
    return EntityCoverage(labeled.name, len(mentions), len(words), len(gap), rows, added)


def selection_coverage(ws: Any, labeled: str, tc: str, selections: Sequence[str] = (),
                       corpora: Sequence[str] = ()) -> EntityCoverage:
    """`entity_coverage` for workspace references: the labeled corpus and TC by name, role or path; each
    selection by key (or key prefix); each extra source corpus (e.g. DC as a whole) by name, role or path."""
    from core.data.selection_store import load_selection
    from core.data.stream import open_corpus_stream

    labeled_corpus = ws.resolve_corpus(labeled)
    sources: dict[str, Tokens] = {}
    for ref in selections:
        sel = load_selection(ws, ref)
        sources[sel.meta.label] = (rec["tokens"] for rec in sel.records())
    for ref in corpora:  # a workspace corpus (a whole DC, say) is streamed in record batches
        sources[str(ref)] = (t for chunk in open_corpus_stream(ws, ref).token_batches() for t in chunk)
    return entity_coverage(labeled_corpus, ws.resolve_corpus(tc).tokens, sources, tc_name=str(tc))
