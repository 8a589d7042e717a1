"""Agreement between annotators: entity-level F1 (strict, boundary, partial overlap and type), token-level Cohen's
kappa, per entity type, and a type confusion table.

Between two annotators neither is gold, so every measure here is symmetric: F1 = 2·matched / (|A| + |B|), where
`matched` is a maximum matching of A's spans to B's (scipy's `linear_sum_assignment`; each span matched once).
Written here rather than taken from nervaluate, whose greedy, order-dependent matching treats one side as gold
(swapping the annotators can change partial and type F1) and which fails on a first sentence without entities.
The four entity measures follow nervaluate's schemas:
- `f1_exact` (strict): same boundaries and same type;
- `f1_boundary` (exact): same boundaries, any type;
- `f1_partial` (partial): same boundaries count 1, overlapping spans 0.5, type ignored;
- `f1_type` (ent_type): overlapping spans of the same type.
Two annotations without a single entity agree completely (F1 1.0): "no entity here" is an answer like any other.
Kappa compares each token's entity type (B-/I- dropped; O for none) with scikit-learn's cohen_kappa_score
(`kappa_token`), and each token's BIO tag (`kappa_bio`): type kappa cannot see a boundary (one span against two
adjacent spans of its type gives every token the same type), the tags can (the second span starts with B).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import cohen_kappa_score

from core.access import Actor
from core.data.corpus import read_corpus
from core.data.tags import Span, detect_scheme, spans_from_tags
from core.data.workspace import Workspace
from core.errors import UserError
from core.team.tasks import answers, get_task, item_tokens

NONE = "—"  # a span the other annotator did not mark (confusion table)

Pair = tuple[Sequence[Span], Sequence[Span], int]  # annotator A's spans, B's spans, tokens in the sentence
Credit = Callable[[Span, Span], float]  # what a pair of spans is worth under one measure (0: no match)


def _overlap(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _exact(a: Span, b: Span) -> float:
    return float((a.start, a.end, a.type) == (b.start, b.end, b.type))


def _boundary(a: Span, b: Span) -> float:
    return float((a.start, a.end) == (b.start, b.end))


def _partial(a: Span, b: Span) -> float:
    return 1.0 if (a.start, a.end) == (b.start, b.end) else 0.5 if _overlap(a, b) else 0.0


def _type(a: Span, b: Span) -> float:
    return float(a.type == b.type and _overlap(a, b))


MEASURES: dict[str, Credit] = {"f1_exact": _exact, "f1_boundary": _boundary, "f1_partial": _partial, "f1_type": _type}


def matched(a: Sequence[Span], b: Sequence[Span], credit: Credit) -> float:
    """The most credit a one-to-one matching of A's spans to B's can collect."""
    if not a or not b:
        return 0.0
    weights = np.array([[credit(x, y) for y in b] for x in a])
    rows, cols = linear_sum_assignment(weights, maximize=True)
    return float(weights[rows, cols].sum())


def f1(pairs: Sequence[Pair], credit: Credit) -> float:
    """Micro F1 over sentences: 2·(matched credit) / (spans of A + spans of B); 1.0 when neither marked anything."""
    total = sum(len(a) + len(b) for a, b, _ in pairs)
    if total == 0:
        return 1.0
    return round(2 * sum(matched(a, b, credit) for a, b, _ in pairs) / total, 6)


def _token_labels(spans: Sequence[Span], n: int, bio: bool = False) -> list[str]:
    labels = ["O"] * n
    for s in spans:
        labels[s.start:s.end] = [f"I-{s.type}" if bio else s.type] * (s.end - s.start)
        if bio and s.end > s.start:
            labels[s.start] = f"B-{s.type}"
    return labels


def kappa(pairs: Sequence[Pair], bio: bool = False) -> float | None:
    """Cohen's kappa over every token's type (or, `bio`, its BIO tag); 1.0 when the annotations are identical (kappa
    itself is 0/0 when both gave every token one label), None when no sentence has a token."""
    la = [t for a, _, n in pairs for t in _token_labels(a, n, bio)]
    lb = [t for _, b, n in pairs for t in _token_labels(b, n, bio)]
    if not la:
        return None
    return 1.0 if la == lb else round(float(cohen_kappa_score(la, lb)), 6)


def _order(types: set[str]) -> list[str]:
    """Types alphabetically, NONE last, so rows and columns of the confusion table line up."""
    return sorted(types - {NONE}) + ([NONE] if NONE in types else [])


def confusion(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """A's type (rows) against B's type (columns) for spans with the same boundaries; NONE where only one marked
    it. Rows and columns come in the same order (types alphabetically, NONE last), every cell present."""
    counts: Counter = Counter()
    for a, b, _ in pairs:
        b_at = {(s.start, s.end): s.type for s in b}
        a_at = {(s.start, s.end): s.type for s in a}
        for where, t in a_at.items():
            counts[(t, b_at.get(where, NONE))] += 1
        for where, t in b_at.items():
            if where not in a_at:
                counts[(NONE, t)] += 1
    rows = _order({r for r, _ in counts})
    cols = _order({c for _, c in counts})
    return {r: {c: counts[(r, c)] for c in cols} for r in rows}


def agreement(pairs: Sequence[Pair]) -> dict[str, Any]:
    """Agreement over sentence pairs (one entry per sentence and annotator pair).

    >>> a = [Span(0, 2, "PER"), Span(3, 4, "LOC")]
    >>> b = [Span(0, 2, "PER"), Span(3, 4, "ORG")]
    >>> r = agreement([(a, b, 5)])
    >>> r["f1_exact"], r["f1_partial"], r["kappa_token"] == round(r["kappa_token"], 6)
    (0.5, 1.0, True)
    >>> agreement([([], [Span(0, 1, "LOC")], 4)])["f1_exact"]
    0.0
    """
    if not pairs:
        return {"sentences": 0, **dict.fromkeys(MEASURES), "kappa_token": None, "kappa_bio": None, "per_type": {},
                "confusion": {}}
    out: dict[str, Any] = {"sentences": len(pairs)}
    for key, credit in MEASURES.items():
        out[key] = f1(pairs, credit)
    out["kappa_token"] = kappa(pairs)
    out["kappa_bio"] = kappa(pairs, bio=True)
    support = Counter(s.type for a, b, _ in pairs for s in (*a, *b))
    out["per_type"] = {}
    for t in sorted(support):
        only = [([s for s in a if s.type == t], [s for s in b if s.type == t], n) for a, b, n in pairs]
        out["per_type"][t] = {"f1_exact": f1(only, _exact), "f1_partial": f1(only, _partial), "support": support[t]}
    out["confusion"] = confusion(pairs)
    return out


def agreement_files(a_path: str | Path, b_path: str | Path) -> dict[str, Any]:
    """Two annotators' CoNLL files of the same sentences. Sentences that differ in tokens are an error naming
    the first one (its number, and both token lists' start)."""
    a, b = read_corpus(a_path), read_corpus(b_path)
    for path, corpus in ((a_path, a), (b_path, b)):
        if corpus.tags is None:
            raise UserError(f"{path}: no tags; expected a CoNLL file with a tag column (token<TAB>tag)")
    if len(a) != len(b):
        raise UserError(f"{a_path} has {len(a):,} sentences and {b_path} {len(b):,}: both must hold the same sentences")
    for i, (ta, tb) in enumerate(zip(a.tokens, b.tokens)):
        if list(ta) != list(tb):
            raise UserError(f"sentence {i + 1} differs between the files: {' '.join(ta[:8])!r}... in {a_path} but "
                            f"{' '.join(tb[:8])!r}... in {b_path}; both files must hold the same sentences in the same order")
    sa, sb = detect_scheme(a.tags), detect_scheme(b.tags)
    pairs = [(spans_from_tags(x, sa), spans_from_tags(y, sb), len(t)) for x, y, t in zip(a.tags, b.tags, a.tokens)]
    return agreement(pairs)


def task_agreement(ws: Workspace, actor: Actor, task_id: str) -> dict[str, Any]:
    """Agreement on a task's items answered by two annotators or more (every pair of them), and per annotator
    their strict F1 against everyone they overlap with."""
    get_task(ws, task_id)
    done = answers(ws, actor, task_id)
    lengths = {i: len(t) for i, t in item_tokens(ws, task_id).items()}
    pairs, by_annotator = [], {}
    for idx, per in done.items():
        for (na, a), (nb, b) in itertools.combinations(sorted(per.items()), 2):
            pairs.append((a, b, lengths[idx]))
            by_annotator.setdefault(na, []).append((a, b, lengths[idx]))
            by_annotator.setdefault(nb, []).append((b, a, lengths[idx]))
    out = agreement(pairs)
    out["sentences"] = sum(1 for per in done.values() if len(per) >= 2)
    out["pairs"] = len(pairs)
    out["per_annotator"] = {n: {"overlapping": len(p), "f1_exact": agreement(p)["f1_exact"]} for n, p in sorted(by_annotator.items())}
    return out
