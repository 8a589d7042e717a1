"""Corpus statistics shown on the Corpora page and printed by `python -m core stats`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from core.data.corpus import Corpus
from core.data.tags import TagScheme, detect_scheme, spans_from_tags


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    """Counts a user judges a NER corpus by. Entity counts are spans, not tokens."""
    lengths = [len(t) for t in corpus.tokens]
    n_tokens = sum(lengths)
    vocab = Counter(tok for toks in corpus.tokens for tok in toks)
    stats: dict[str, Any] = {
        "sentences": len(corpus),
        "tokens": n_tokens,
        "vocab": len(vocab),
        "ttr": len(vocab) / n_tokens if n_tokens else 0.0,
        "mean_length": n_tokens / len(corpus) if len(corpus) else 0.0,
        "max_length": max(lengths, default=0),
        "labeled": corpus.labeled,
        "tag_scheme": TagScheme.NONE.value,
        "entity_types": {},
        "entities": 0,
        "entities_per_sentence": 0.0,
        "sentences_with_entities": 0,
        "fields": list(corpus.fields),
    }
    if corpus.tags is not None:
        scheme = detect_scheme(corpus.tags)
        types: Counter[str] = Counter()
        with_entities = 0
        for tags in corpus.tags:
            spans = spans_from_tags(tags, scheme)
            types.update(s.type for s in spans)
            with_entities += bool(spans)
        n_ent = sum(types.values())
        stats.update(
            tag_scheme=scheme.value,
            entity_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
            entities=n_ent,
            entities_per_sentence=n_ent / len(corpus) if len(corpus) else 0.0,
            sentences_with_entities=with_entities,
        )
    for key, values in corpus.fields.items():
        counts = Counter(v for v in values if v is not None and not isinstance(v, (list, dict)))  # a list: no category
        if 1 < len(counts) <= 50:  # categorical fields such as `domain`; ids are skipped
            stats.setdefault("field_counts", {})[key] = dict(counts.most_common())
    return stats


def length_histogram(corpus: Corpus) -> list[int]:
    return [len(t) for t in corpus.tokens]
