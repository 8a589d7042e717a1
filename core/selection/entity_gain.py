"""Entity gain: DC sentences ranked by the entity mentions they would add to what TC already holds, combined with how
close they are to TC.

None of the selection papers this tool follows ranks by what MLM on a sentence could teach the NER model beyond
TAPT: NER-Selected counts predicted entities whether or not TC already has them, cosine and DSIR look at the domain
only. Here a fine-tuned NER model (B2) predicts mentions on TC (what TAPT covers) and on DC; a DC sentence's gain is
the sum over its predicted mentions that TC lacks (by their casefolded text) of its type's weight, the type's share of
LC's mentions (a type the task labels often counts more) relative to an even share. The gain and the cosine to the
mean TC embedding are turned into percentile ranks and mixed (`mix`: the gain's share, default 0.5), so neither scale
dominates and a sentence must be both in the domain and new in its entities to lead.

`entity-gain-pool` gates instead of mixing. On CrossNER the mix chose mostly other domains' sentences (domain
precision 0.03 to 0.30 against cosine's 0.41 to 0.86): another domain's entities are all new to TC, so novelty
outranks closeness. Here only the `pool` x budget DC sentences nearest TC compete, ranked by their gain; cosine breaks
ties and orders the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from core.data.corpus import Corpus
from core.data.tags import Span, detect_scheme, spans_from_tags
from core.errors import UserError
from core.recipes.selection_options import SelectionOptions, shares_of

UNSEEN_TYPE_WEIGHT = 0.5  # a predicted type LC never shows (B2 was trained on LC: rare) counts half an even share


def mention(tokens: Sequence[str], span: Span) -> str:
    """A mention as TC and DC are compared: its words, casefolded."""
    return " ".join(tokens[span.start:span.end]).casefold()


def label_shares(corpus: Corpus) -> dict[str, float]:
    """Each entity type's share of a labeled corpus's mentions (LC: what the task asks for most).

    >>> label_shares(Corpus([["Ann", "met", "Bob", "in", "Rome"]], [["B-PER", "O", "B-PER", "O", "B-LOC"]]))
    {'LOC': 0.3333333333333333, 'PER': 0.6666666666666666}
    """
    if not corpus.labeled:
        raise UserError(f"{corpus.name or 'LC'}: entity gain weighs types by a labeled corpus's mentions; this one has no tags")
    scheme = detect_scheme(corpus.tags)
    counts = Counter(s.type for tags in corpus.tags for s in spans_from_tags(tags, scheme))
    total = sum(counts.values())
    return {t: n / total for t, n in sorted(counts.items())} if total else {}


def type_weights(shares: Mapping[str, float]) -> dict[str, float]:
    """Shares relative to an even share (1.0: a type as frequent as the average one).

    >>> type_weights({"PER": 0.5, "LOC": 0.25, "ORG": 0.25}) == type_weights({"PER": 2, "LOC": 1, "ORG": 1})
    True
    >>> type_weights({"PER": 0.5, "LOC": 0.25, "ORG": 0.25})
    {'PER': 1.5, 'LOC': 0.75, 'ORG': 0.75}
    """
    return {t: s * len(shares) for t, s in shares_of(shares).items()} if shares else {}


def gains(predictions: Iterable[Any], known: set[str], weights: Mapping[str, float]) -> np.ndarray:
    """Per prediction (tokens, spans): the weighted count of its mentions TC lacks (each mention once per sentence)."""
    out = []
    for p in predictions:
        new = {(mention(p.tokens, s), s.type) for s in p.spans}
        out.append(sum(weights.get(t, UNSEEN_TYPE_WEIGHT) if weights else 1.0 for m, t in new if m not in known))
    return np.asarray(out, dtype=np.float64)


def percentile_ranks(scores: np.ndarray) -> np.ndarray:
    """Ranks scaled to [0, 1] (ties share their average rank), so two scores on different scales can be mixed."""
    from scipy.stats import rankdata

    n = len(scores)
    return (rankdata(scores, method="average") - 1) / max(n - 1, 1)


def entity_gain_scores(tc: Corpus, dc: Any, ner_model: str | None, cosine: np.ndarray, options: SelectionOptions,
                       progress: Any, batch_sentences: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(mixed score, gain, what the selection records) for every DC sentence (DC read `batch_sentences` at a time);
    `cosine`: each DC sentence's cosine to the mean TC embedding (the strategy computes it as `cosine` does)."""
    from core.lm.models import resolve_model
    from core.progress import rows_part, sub
    from core.train.ner_model import load_ner_model
    from core.train.ner_predict import predict_corpus

    if not ner_model or resolve_model(ner_model).ner_config() is None:
        raise UserError("strategy 'entity-gain' needs a fine-tuned NER model (B2, --ner-model DIR): it predicts the "
                        "mentions TC has and DC would add")
    mix = options.mix
    model = load_ner_model(ner_model)
    batch = options.batch_for("entity-gain")
    tc_preds = predict_corpus(model, tc, batch_size=batch, progress=sub(progress, 0.0, 0.1, "NER on TC: "))
    known = {mention(p.tokens, s) for p in tc_preds for s in p.spans}
    shares = options.type_weights  # LC's type shares (an experiment passes them); else B2's own on TC
    if not shares:
        counts = Counter(s.type for p in tc_preds for s in p.spans)
        shares = {t: n / sum(counts.values()) for t, n in sorted(counts.items())} if counts else {}
    weights = type_weights(shares)
    gain = np.empty(len(dc), dtype=np.float64)
    done, n = 0, len(dc)
    for part in dc.batches(batch_sentences):  # one batch of predictions at a time: memory flat in DC's size
        preds = predict_corpus(model, part, batch_size=batch,
                               progress=rows_part(progress, done, len(part), n, 0.1, 1.0, "NER on DC: "))
        gain[done:done + len(part)] = gains(preds, known, weights)
        done += len(part)
    score = mix * percentile_ranks(gain) + (1 - mix) * percentile_ranks(np.asarray(cosine, dtype=np.float64))
    return score, gain, {"mix": mix, "type_weights": weights, "tc_mentions": len(known), "dc_with_gain": int((gain > 0).sum())}


def pool_scores(gain: np.ndarray, cosine: np.ndarray, budget: int, pool: float) -> np.ndarray:
    """entity-gain-pool's score: 1 + gain inside the domain pool (the ceil(pool x budget) sentences of highest cosine),
    0 outside it, so every pooled sentence outranks every other and the gain orders the pool (ties: cosine).

    >>> pool_scores(np.array([5.0, 0.0, 2.0, 9.0]), np.array([0.9, 0.8, 0.7, 0.1]), budget=1, pool=2.0).tolist()
    [6.0, 1.0, 0.0, 0.0]
    """
    size = min(len(cosine), int(np.ceil(pool * budget)))
    inside = np.zeros(len(cosine), dtype=bool)
    inside[np.argsort(-np.asarray(cosine, dtype=np.float64), kind="stable")[:size]] = True
    return np.where(inside, 1.0 + np.asarray(gain, dtype=np.float64), 0.0)
