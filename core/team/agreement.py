"""Agreement between annotators: entity-level F1 (strict, boundary, partial overlap and type, as nervaluate
defines them), token-level Cohen's kappa, per entity type, and a type confusion table.

Entity F1 between two annotators is symmetric (2·matches / (|A| + |B|)), so neither needs to be "gold".
`f1_exact` is nervaluate's *strict* (same boundaries and same type); `f1_partial` its *partial* (overlapping
spans count half, type ignored). Kappa compares each token's entity type (B-/I- dropped; O for none) with
scikit-learn's cohen_kappa_score.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nervaluate import Evaluator
from sklearn.metrics import cohen_kappa_score

from core.access import Actor
from core.data.corpus import read_corpus
from core.data.tags import Span, detect_scheme, spans_from_tags
from core.data.workspace import Workspace
from core.errors import UserError
from core.team.tasks import answers, get_task, item_tokens

NONE = "—"  # a span the other annotator did not mark (confusion table)
SCHEMAS = {"f1_exact": "strict", "f1_boundary": "exact", "f1_partial": "partial", "f1_type": "ent_type"}

Pair = tuple[Sequence[Span], Sequence[Span], int]  # annotator A's spans, B's spans, tokens in the sentence


def _nerval(spans: Sequence[Span]) -> list[dict[str, Any]]:
    return [{"label": s.type, "start": s.start, "end": s.end - 1} for s in spans]  # nervaluate's end is inclusive


def _token_labels(spans: Sequence[Span], n: int) -> list[str]:
    labels = ["O"] * n
    for s in spans:
        labels[s.start:s.end] = [s.type] * (s.end - s.start)
    return labels


def confusion(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """A's type (rows) against B's type (columns) for spans with the same boundaries; NONE where only one marked it."""
    counts: Counter = Counter()
    for a, b, _ in pairs:
        b_at = {(s.start, s.end): s.type for s in b}
        a_at = {(s.start, s.end): s.type for s in a}
        for where, t in a_at.items():
            counts[(t, b_at.get(where, NONE))] += 1
        for where, t in b_at.items():
            if where not in a_at:
                counts[(NONE, t)] += 1
    table: dict[str, dict[str, int]] = {}
    for (ra, rb), n in sorted(counts.items()):
        table.setdefault(ra, {})[rb] = n
    return table


def agreement(pairs: Sequence[Pair]) -> dict[str, Any]:
    """Agreement over sentence pairs (one entry per sentence and annotator pair).

    >>> a = [Span(0, 2, "PER"), Span(3, 4, "LOC")]
    >>> b = [Span(0, 2, "PER"), Span(3, 4, "ORG")]
    >>> r = agreement([(a, b, 5)])
    >>> r["f1_exact"], r["f1_partial"], r["kappa_token"] == round(r["kappa_token"], 6)
    (0.5, 1.0, True)
    """
    if not pairs:
        return {"sentences": 0, "f1_exact": None, "f1_boundary": None, "f1_partial": None, "f1_type": None,
                "kappa_token": None, "per_type": {}, "confusion": {}}
    types = sorted({s.type for a, b, _ in pairs for s in (*a, *b)})
    result = Evaluator([_nerval(a) for a, _, _ in pairs], [_nerval(b) for _, b, _ in pairs], tags=types).evaluate()
    out: dict[str, Any] = {"sentences": len(pairs)}
    for key, schema in SCHEMAS.items():
        out[key] = round(float(result["overall"][schema].f1), 6)
    la = [t for a, _, n in pairs for t in _token_labels(a, n)]
    lb = [t for _, b, n in pairs for t in _token_labels(b, n)]
    out["kappa_token"] = 1.0 if la == lb else round(float(cohen_kappa_score(la, lb)), 6)
    support = Counter(s.type for a, b, _ in pairs for s in (*a, *b))
    out["per_type"] = {t: {"f1_exact": round(float(result["entities"][t]["strict"].f1), 6),
                           "f1_partial": round(float(result["entities"][t]["partial"].f1), 6),
                           "support": support[t]} for t in types}
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
