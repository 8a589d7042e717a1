"""Data selection: pick SC from the domain corpus DC for continued pretraining on TC.

Every strategy of the selective-pretraining paper behind one call, `select(...)`:

- cosine         cosine to the mean TC embedding (pretrained encoder, or B1 after MLM on TC)
- cosine-concat  the same on [B1 ; B2] embeddings (B2 = B1 fine-tuned for NER)
- ner            NER-Selected: most entities predicted by a fine-tuned NER model
- ppl            lowest perplexity under a Kneser-Ney LM of TC
- mlm-ppl        lowest masked-LM pseudo-perplexity under B1
- random, all    baselines
- dsir           importance resampling on hashed 1-2-grams (Xie et al. 2023)
- knn            union of each TC sentence's nearest DC sentences (kNN-TAPT, Gururangan et al. 2020)

Each strategy yields a score per DC sentence and a full ranking (ties by score, then
DC index); the first `budget` of the ranking are selected. Results are saved in the
workspace (artifact kind "selection") keyed by a content hash of inputs and parameters.

>>> sel = select(tc, dc, "cosine", 0.1, workspace=ws)  # doctest: +SKIP
>>> sel.summary()["selected"]  # doctest: +SKIP
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.corpus import Corpus
from core.data.selection import Selection, SelectionMeta
from core.data.selection_store import cached_selection, save_selection
from core.data.stream import PARALLEL_MIN, CorpusStream, map_row_groups, open_corpus_stream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.lm.pseudo_ppl import pseudo_perplexities
from core.progress import Progress, rows_part, sub
from core.recipes.budget import Budget
from core.recipes.selection_options import SelectionOptions, canonical_options, check_readers
from core.recipes.strategy_info import ENTITY_AWARE, Strategy
from core.selection.kernels import cosine_to_vector, normalize_rows, topk_cosine

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import SelectParams

NER_BATCH = 10_000  # DC sentences predicted per pass of the NER strategy
MLM_BATCH = 10_000  # DC sentences per pseudo-perplexity call


# --------------------------------------------------------------------------- budget and ranking


def rank_order(scores: np.ndarray, higher_is_better: bool = True, secondary: np.ndarray | None = None) -> np.ndarray:
    """Full ranking of DC indices: by score, then by `secondary` (same direction), then by index."""
    scores = np.asarray(scores, dtype=np.float64)
    sign = -1.0 if higher_is_better else 1.0
    if secondary is None:
        # A stable sort keeps index order among ties: the lexsort below without its index key,
        # and half the temporary memory (10M sentences: one float64 key, one int64 result).
        return np.argsort(np.nan_to_num(sign * scores, nan=np.inf), kind="stable")
    keys = [np.arange(len(scores))]
    if secondary is not None:
        keys.append(np.nan_to_num(sign * np.asarray(secondary, dtype=np.float64), nan=np.inf))  # NaN last, either way
    # NaN scores (e.g. an empty sentence under an LM) go last, whatever the direction
    keys.append(np.nan_to_num(sign * scores, nan=np.inf))
    return np.lexsort(keys)


# --------------------------------------------------------------------------- chunked similarity (float16 memmaps)


# --------------------------------------------------------------------------- the strategies


@dataclass
class _Inputs:
    tc: Corpus
    dc: CorpusStream  # read in record batches, never whole
    budget: int
    model: str
    model2: str | None
    ner_model: str | None
    seed: int
    workspace: Workspace | None
    options: SelectionOptions
    progress: Progress
    ray: str | None = None  # a Ray address ("local" starts one): embedding and LM scoring run as Ray Data passes

    def sub(self, start: float, end: float, prefix: str = "") -> Progress:
        return sub(self.progress, start, end, prefix)


@dataclass
class _Ranking:
    scores: np.ndarray  # (N,) the strategy's score per DC sentence
    order: np.ndarray  # (N,) DC indices, best first
    extra: dict[str, Any] = field(default_factory=dict)
    lengths: np.ndarray | None = None  # (N,) tokens per DC sentence, where the strategy read them anyway


def _embed_pair(x: _Inputs, model: str, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    from core.lm.embed import embed_corpus

    mid = start + (end - start) * 0.1
    tc_emb = embed_corpus(x.tc, model, workspace=x.workspace, progress=x.sub(start, mid, "TC: "))
    dc_emb = embed_corpus(x.dc, model, workspace=x.workspace, progress=x.sub(mid, end, "DC: "), ray=x.ray)
    return tc_emb, dc_emb


def _by_cosine(x: _Inputs) -> _Ranking:
    tc_emb, dc_emb = _embed_pair(x, x.model, 0.0, 0.9)
    mean = normalize_rows(tc_emb).mean(0) if x.options.normalize_tc else np.asarray(tc_emb, dtype=np.float32).mean(0)
    scores = cosine_to_vector(dc_emb, mean)
    return _Ranking(scores, rank_order(scores))


def _by_cosine_concat(x: _Inputs) -> _Ranking:
    if not x.model2:
        raise UserError("strategy 'cosine-concat' needs two models: model (B1, after MLM on TC) and model2 (B2, B1 fine-tuned for NER)")
    tc1, dc1 = _embed_pair(x, x.model, 0.0, 0.45)
    tc2, dc2 = _embed_pair(x, x.model2, 0.45, 0.9)
    # Each half is L2-normalised before concatenation so neither encoder dominates by scale.
    tc = np.concatenate([normalize_rows(tc1), normalize_rows(tc2)], axis=1)
    mean = tc.mean(0)
    scores = np.empty(len(x.dc), dtype=np.float32)
    step = 1 << 16
    for s in range(0, len(x.dc), step):
        block = np.concatenate([normalize_rows(dc1[s:s + step]), normalize_rows(dc2[s:s + step])], axis=1)
        scores[s:s + step] = normalize_rows(block) @ normalize_rows(mean)
    return _Ranking(scores, rank_order(scores))


def _by_knn(x: _Inputs) -> _Ranking:
    tc_emb, dc_emb = _embed_pair(x, x.model, 0.0, 0.9)
    n_tc = max(1, len(tc_emb))
    # Neighbours per TC sentence: enough that the union reaches the budget despite overlaps.
    k = min(len(dc_emb), x.options.k or 2 * math.ceil(x.budget / n_tc) + 1)
    nn_idx, _, row_max = topk_cosine(dc_emb, tc_emb, k)
    # A DC sentence's kNN level = its best rank in any TC sentence's neighbour list; levels
    # 1, 2, ... are unioned in turn (ties by similarity, then index); sentences in no list
    # follow by their best similarity.
    level = np.full(len(dc_emb), k + 1, dtype=np.int64)
    for r in range(nn_idx.shape[1]):
        np.minimum.at(level, nn_idx[:, r], r + 1)
    order = np.lexsort((np.arange(len(level)), -row_max.astype(np.float64), level))
    return _Ranking(row_max, order, {"k": k})


def _by_ner(x: _Inputs) -> _Ranking:
    if not x.ner_model:
        raise UserError("strategy 'ner' needs a fine-tuned NER model (B2): train one on LC and pass its folder "
                        "(--ner-model DIR, or the NER model field)")
    from core.lm.models import resolve_model
    from core.train.ner_model import load_ner_model  # torch: imported only when this strategy runs
    from core.train.ner_predict import predict_corpus

    if resolve_model(x.ner_model).ner_config() is None:
        raise UserError(f"{x.ner_model} is not a fine-tuned NER model folder (no ner_config.json); strategy 'ner' needs a NER model")
    model = load_ner_model(x.ner_model)
    x.progress(0.05, "NER model loaded")
    n_spans = np.empty(len(x.dc), dtype=np.float32)
    c1 = np.empty(len(x.dc), dtype=np.float64)
    done, n = 0, len(x.dc)
    for part in x.dc.batches(NER_BATCH):  # predictions of one batch at a time: memory flat in DC's size
        preds = predict_corpus(model, part, batch_size=x.options.batch_for(Strategy.NER.value),
                               progress=rows_part(x.progress, done, len(part), n, 0.05, 0.95, "NER: "))
        n_spans[done:done + len(part)] = [len(p.spans) for p in preds]
        c1[done:done + len(part)] = [p.c1 for p in preds]
        done += len(part)
    return _Ranking(n_spans, rank_order(n_spans, True, secondary=c1), {"c1": c1})


def _entity_gains(x: _Inputs) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """(mixed score, gain, cosine to the mean TC embedding, what the selection records): both entity strategies."""
    from core.selection.entity_gain import entity_gain_scores

    if not x.ner_model:  # before any embedding: the clear message first
        entity_gain_scores(x.tc, x.dc, None, np.zeros(0), x.options, x.progress, NER_BATCH)
    tc_emb, dc_emb = _embed_pair(x, x.model, 0.0, 0.3)
    cosine = cosine_to_vector(dc_emb, np.asarray(tc_emb, dtype=np.float32).mean(0))
    score, gain, extra = entity_gain_scores(x.tc, x.dc, x.ner_model, cosine, x.options, x.sub(0.3, 1.0), NER_BATCH)
    return score, gain, cosine, extra


def _by_entity_gain(x: _Inputs) -> _Ranking:
    score, gain, cosine, extra = _entity_gains(x)
    return _Ranking(score, rank_order(score, True, secondary=gain), {**extra, "gain": gain, "cosine": cosine})


def _by_entity_gain_pool(x: _Inputs) -> _Ranking:
    from core.selection.entity_gain import pool_scores

    _, gain, cosine, extra = _entity_gains(x)
    score = pool_scores(gain, cosine, x.budget, x.options.pool)
    recorded = {k: v for k, v in extra.items() if k != "mix"} | {"pool": x.options.pool, "pool_size": int((score > 0).sum())}
    return _Ranking(score, rank_order(score, True, secondary=cosine), {**recorded, "gain": gain, "cosine": cosine})


def _by_ngram_ppl(x: _Inputs) -> _Ranking:
    from core.lm.ngram import build_lm

    lm = build_lm(x.tc.tokens, order=x.options.order, progress=x.sub(0.0, 0.3, "LM: "))
    x.progress(0.3, "scoring DC")
    if x.ray:
        from core.lm.distributed import ray_lm_perplexities

        ppl = ray_lm_perplexities(lm, x.dc, x.ray, progress=x.sub(0.3, 1.0, "DC: "))
    else:
        ppl = streamed_perplexities(lm, x.dc, progress=x.sub(0.3, 1.0, "DC: "))
    return _Ranking(ppl, rank_order(ppl, higher_is_better=False))


def _lm_perplexities(tokens: list[list[str]], lm: Any) -> np.ndarray:
    return np.asarray(lm.sentence_perplexities(tokens), dtype=np.float64)


def streamed_perplexities(lm: Any, dc: CorpusStream | Corpus, progress: Progress | None = None) -> np.ndarray:
    """Per-sentence perplexity of every DC sentence, one record batch at a time (8 bytes/sentence)."""
    dc = CorpusStream.of(dc)
    if dc.streamed and len(dc) > PARALLEL_MIN:  # every core, each worker reading its own row groups
        return np.concatenate(map_row_groups(dc, _lm_perplexities, (lm,), progress=progress)).astype(np.float64)
    out = np.empty(len(dc), dtype=np.float64)
    done = 0
    for toks in dc.token_batches():
        out[done:done + len(toks)] = lm.sentence_perplexities(toks)
        done += len(toks)
        if progress is not None:
            progress(done / max(1, len(dc)), f"{done:,}/{len(dc):,} sentences scored")
    return out


def _by_mlm_ppl(x: _Inputs) -> _Ranking:
    ppl = np.empty(len(x.dc), dtype=np.float64)
    done, n = 0, len(x.dc)
    for texts in x.dc.text_batches(MLM_BATCH):
        ppl[done:done + len(texts)] = pseudo_perplexities(texts, x.model, batch_size=x.options.batch_for(Strategy.MLM_PPL.value),
                                                          progress=rows_part(x.progress, done, len(texts), n,
                                                                             label="pseudo-perplexity: "))
        done += len(texts)
    return _Ranking(ppl, rank_order(ppl, higher_is_better=False))


def _by_dsir(x: _Inputs) -> _Ranking:
    from core.lm.dsir import dsir_scores, gumbel_top_order

    scores = dsir_scores(x.tc, x.dc, buckets=x.options.buckets, progress=x.progress, length=x.options.length,
                         smoothing=x.options.smoothing)
    logw = scores.log_weights
    order = rank_order(logw) if x.options.sampling == "topk" else gumbel_top_order(logw, x.seed)
    return _Ranking(logw, order, {"sampling": x.options.sampling, "length": x.options.length,
                                  "smoothing": x.options.smoothing, "tc_ngrams": scores.tc_ngrams},
                    lengths=scores.tokens)


def _by_random(x: _Inputs) -> _Ranking:
    keys = np.random.default_rng(x.seed).random(len(x.dc))  # needs DC's size only: nothing is read
    return _Ranking(keys, rank_order(keys))


def _all(x: _Inputs) -> _Ranking:
    return _Ranking(np.zeros(len(x.dc), dtype=np.float32), np.arange(len(x.dc)))


_SCORERS: dict[Strategy, Callable[[_Inputs], _Ranking]] = {
    Strategy.COSINE: _by_cosine, Strategy.COSINE_CONCAT: _by_cosine_concat, Strategy.KNN: _by_knn, Strategy.NER: _by_ner,
    Strategy.ENTITY_GAIN: _by_entity_gain, Strategy.ENTITY_GAIN_POOL: _by_entity_gain_pool,
    Strategy.PPL: _by_ngram_ppl, Strategy.MLM_PPL: _by_mlm_ppl, Strategy.DSIR: _by_dsir, Strategy.RANDOM: _by_random,
    Strategy.ALL: _all,
}


# --------------------------------------------------------------------------- the result


# --------------------------------------------------------------------------- select()


def select(tc: Corpus | CorpusStream, dc: Corpus | CorpusStream, strategy: str | Strategy, budget: int | float | str, *,
           model: str = "default", model2: str | None = None, ner_model: str | None = None, target_domain: str | None = None,
           seed: int = 0, workspace: Workspace | None = None, progress: Progress | None = None,
           options: Mapping[str, Any] | None = None, names: Mapping[str, str] | None = None,
           ray: str | None = None) -> Selection:
    """Rank DC for TC with `strategy` and keep the first `budget` sentences.

    `budget`: a count (integer >= 1) or a ratio of DC (0 < b <= 1). `options` holds
    strategy knobs (dsir: sampling "gumbel"|"topk", buckets; knn: k;
    ppl: order; cosine: normalize_tc, averaging unit vectors instead of raw embeddings as the
    paper does; ner / mlm-ppl: batch_size).
    DC may be a `CorpusStream` (`CorpusStream.from_workspace(ws, "dc")`): every strategy then
    reads it in record batches, and memory stays at a batch plus the (N,) score and order arrays.
    `ray`: a Ray address ("local" starts a local cluster) for the embedding and LM-scoring
    passes; same result as without (the selection key does not include it).
    With a workspace the result is saved (and reused) as artifact "selection".
    `names` ({"tc": ..., "dc": ...}) records workspace corpus names in the metadata.
    """
    t0 = time.time()
    strat = Strategy.parse(strategy)
    info = strat.info
    if isinstance(tc, CorpusStream):
        tc = tc.to_corpus()  # TC is small: the LM and the mean embedding need it whole
    stream = CorpusStream.of(dc)
    n = len(stream)
    if n == 0:
        raise UserError("the domain corpus DC is empty")
    if len(tc) == 0 and strat not in (Strategy.RANDOM, Strategy.ALL):
        raise UserError("the task corpus TC is empty")
    asked = Budget.parse(budget)
    count, notes = asked.count(n, cap=True), asked.note(n)
    if strat == Strategy.ALL:
        if count < n:
            notes.append(f"strategy 'all' ignores the budget ({count:,}): all {n:,} DC sentences selected")
        count = n
    options = dict(options or {})  # as given: the key and the meta; the strategies read the parsed form
    parsed = SelectionOptions.parse(options)
    check_readers(strat.value, options)
    report = progress or (lambda f, m="": None)
    target = resolve_target_domain(tc, target_domain)

    from core.lm.embed import corpus_digest

    tc_hash, dc_hash = corpus_digest(tc), stream.digest()
    named = _named_options(strat, options)

    def key_of(opts: Mapping[str, Any]) -> str:
        return content_hash("selection", tc_hash, dc_hash, strat.value, count, _model_ids(strat, model, model2, ner_model),
                            seed if strat in (Strategy.RANDOM, Strategy.DSIR) else None, opts,
                            *_REVISIONS.get(strat, ()))  # a ranking cached before a change of its method is not reused

    # one computation, one key: the page's sampling=gumbel and an experiment's nothing find each other's selection;
    # one saved under the options as given (before keys were named) is still found
    key = key_of(named)
    if workspace is not None:
        cached = next((c for k in dict.fromkeys([key, key_of(options)])
                       if (c := cached_selection(workspace, k, stream)) is not None), None)
        if cached is not None:
            cached.meta.seconds = time.time() - t0
            if target is not None:
                cached.meta.target_domain = target
            report(1.0, "loaded from the workspace")
            return cached

    x = _Inputs(tc=tc, dc=stream, budget=count, model=model, model2=model2, ner_model=ner_model, seed=seed,
                workspace=workspace, options=parsed, progress=report, ray=ray)
    ranking = _SCORERS[strat](x)
    order = np.asarray(ranking.order, dtype=np.int64)
    order, count, repeat_notes = _repeats(stream, order, count, parsed.dedupe, ranking.extra)
    notes.extend(repeat_notes)
    if strat in ENTITY_AWARE and ranking.extra.get("dc_with_gain") == 0:
        notes.append("no DC sentence holds an entity mention TC lacks, by the NER model: the ranking is closeness to TC "
                     "alone")
    if strat == Strategy.NER and len(ranking.scores) and not np.any(ranking.scores > 0):
        notes.append("the NER model found no entity in DC: the ranking is its confidence (c1) alone")
    indices = order[:count]
    if ranking.lengths is not None and count < n:
        fix = " (dsir: --option length=chunk weighs each sentence as a chunk of DC's mean length)" \
            if strat == Strategy.DSIR and parsed.length == "sum" else ""
        ranking.extra["mean_tokens"], note = length_note(ranking.lengths, indices, fix)
        notes.extend([note] if note else [])
    if strat == Strategy.DSIR and parsed.smoothing == "add-one" and ranking.extra["tc_ngrams"] < 2 * parsed.buckets:
        notes.append(f"TC holds {ranking.extra['tc_ngrams']:,} n-grams for {parsed.buckets:,} buckets: add-one's prior "
                     "is much of TC's estimate, which rewards n-grams DC rarely holds, whatever TC says; --option "
                     "smoothing=dc takes DC's distribution as the prior (on the CrossNER studies' corpora it picked more "
                     "target-domain text, most of all from a small TC: docs/results/dsir-smoothing.json)")
    dc_domains = stream.field_counts("domain")
    if target is not None and dc_domains is not None and str(target) not in dc_domains:
        notes.append(f"target domain {target!r} (TC's or the workspace's) is not a value of DC's 'domain' field, so "
                     "the domain precision says nothing: name one of DC's domains as the target")
    selected_domains = stream.field_counts("domain", indices) if dc_domains is not None else None
    names = names or {}
    meta = SelectionMeta(
        strategy=strat.value, budget_requested=budget if not isinstance(budget, np.generic) else budget.item(),
        budget=count, dc_size=n, tc_size=len(tc), model=model if "model" in info.models else None,
        model2=model2 if "model2" in info.models else None, ner_model=ner_model if "ner_model" in info.models else None,
        seed=seed, options=options, tc_hash=tc_hash, dc_hash=dc_hash, tc_name=names["tc"] if "tc" in names else tc.name,
        dc_name=names["dc"] if "dc" in names else stream.name, score_name=info.score_name,
        higher_is_better=info.higher_is_better, notes=notes, target_domain=target,
        dc_domain_counts=dict(dc_domains) if dc_domains is not None else None,
        selected_domain_counts=dict(selected_domains) if selected_domains is not None else None,
        extra={**{k: v for k, v in ranking.extra.items() if not isinstance(v, np.ndarray)}, "row": _row_name(strat, named)},
        created=time.time())
    sel = Selection(strategy=strat.value, indices=indices, scores=np.asarray(ranking.scores), order=order, meta=meta, key=key,
                    source=stream)
    meta.seconds = time.time() - t0
    if workspace is not None:
        report(0.99, f"writing {count:,} selected sentences")
        save_selection(workspace, sel)
    report(1.0, f"selected {count:,} of {n:,}")
    return sel


# Strategies whose ranking changed after selections were cached: a new word in their key (DSIR's streamed Gumbel draw;
# mlm-ppl reading whole sentences, not their first 128 subwords)
_REVISIONS: dict[Strategy, tuple[str, ...]] = {Strategy.DSIR: ("gumbel-stream-2",), Strategy.MLM_PPL: ("whole-sentence",)}


def _named_options(strat: Strategy, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as one computation is named (canonical_options: defaults left out, numbers as floats); for the
    entity-aware strategies an unset type_weights is B2's own shares, as null asks, so the two are one."""
    named = canonical_options(options, strat.value)
    if strat in ENTITY_AWARE and "type_weights" not in named:
        named = {**named, "type_weights": None}
    return named


def _row_name(strat: Strategy, named: Mapping[str, Any]) -> str:
    """The selection as an experiment row would name it ('dsir:smoothing=dc'), for its label. An entity-aware
    selection with B2's own type shares is the row 'entity-gain:type_weights=null'; one given a table is named as the
    row 'entity-gain', whose cells pass LC's shares (a table typed at the CLI reads the same)."""
    from core.recipes.strategy_row import StrategyRow

    shown = {k: v for k, v in named.items() if not (k == "type_weights" and v is not None)}
    return StrategyRow(strat.value, None, shown).label


def _repeats(stream: CorpusStream, order: np.ndarray, count: int, dedupe: bool, extra: dict[str, Any]
             ) -> tuple[np.ndarray, int, list[str]]:
    """(order, count, notes) with copies of one sentence handled (core.selection.repeats). `dedupe`: the first copies
    fill the budget and the repeats passed over follow the budget in the order, so `order[:count]` stays the selection
    (as the store reads it); otherwise the repeats among the selected are counted and named."""
    from core.selection.repeats import first_copies, repeats_in

    if not dedupe:
        extra["repeats"] = repeats = repeats_in(stream, order[:count])
        return order, count, [f"{repeats:,} of the {count:,} selected sentences repeat one selected before them (the same "
                              "text once case, punctuation and spacing are folded): --option dedupe=true keeps one copy "
                              "and fills the budget from the next ranked"] if repeats else []
    kept, passed = first_copies(stream, order, count)
    extra["repeats_passed_over"] = passed
    notes = [f"{passed:,} repeated sentences passed over (dedupe): the budget filled from the next ranked"] if passed else []
    if len(kept) < count:
        notes.append(f"DC holds only {len(kept):,} distinct sentence{'s' if len(kept) != 1 else ''}: "
                     f"{len(kept):,} selected, not {count:,}")
    rest = np.ones(len(stream), dtype=bool)
    rest[kept] = False
    return np.concatenate([np.asarray(kept, dtype=np.int64), order[rest[order]]]), len(kept), notes


LENGTH_NOTE_RATIO = 0.8  # a selection this much shorter (or 1 / this longer) per sentence than DC is named


def length_note(lengths: np.ndarray, indices: np.ndarray, fix: str = "") -> tuple[dict[str, float], str | None]:
    """The selection's and DC's mean tokens per sentence, and a note where they differ by a fifth or more: at a budget
    in sentences a selection of short sentences pretrains on fewer tokens than the random draw it is compared with
    (long ones, more), so part of any difference is the amount of text, not its choice. `fix`: what would mend it."""
    picked, whole = float(lengths[indices].mean()) if len(indices) else 0.0, float(lengths.mean())
    means = {"selected": round(picked, 2), "dc": round(whole, 2)}
    if whole <= 0 or LENGTH_NOTE_RATIO < picked / whole < 1 / LENGTH_NOTE_RATIO:
        return means, None
    fix = fix if picked < whole else ""
    return means, (f"the selected sentences average {picked:.1f} tokens against DC's {whole:.1f}: about "
                   f"{abs(1 - picked / whole):.0%} {'fewer' if picked < whole else 'more'} tokens than a random draw of "
                   f"the same count{fix}")


def _model_ids(strat: Strategy, model: str, model2: str | None, ner_model: str | None) -> dict[str, str]:
    from core.lm.models import resolve_model

    given = {"model": model, "model2": model2, "ner_model": ner_model}
    return {name: resolve_model(given[name]).fingerprint() for name in strat.info.models if given[name]}


def resolve_target_domain(tc: Corpus, target_domain: str | None) -> str | None:
    """The user's target domain, else TC's majority `domain` when TC carries the field."""
    if target_domain:
        return str(target_domain)
    values = tc.fields.get("domain")
    if not values:
        return None
    return str(Counter(str(v) for v in values).most_common(1)[0][0])


def check_target_domain(dc: CorpusStream, name: str, target: str) -> None:
    """A target domain a user names must be a value of DC's `domain` field: any other scored every selection's
    domain precision 0.000 against random's 0.000, reported as a result. A DC without the field measures no domain
    precision, whatever the target. (One the user did not name, TC's or the workspace's, is said in a note.)"""
    counts = dc.field_counts("domain")
    if counts is not None and str(target) not in counts:
        shown = ", ".join(repr(k) for k, _ in counts.most_common(10))
        raise UserError(f"target domain {target!r} is not a value of the 'domain' field of DC {name!r}: it has {shown}"
                        + (f" and {len(counts) - 10} more" if len(counts) > 10 else ""))


# --------------------------------------------------------------------------- job


def run_selection(ws: Workspace, params: SelectParams, progress: Progress | None = None,
                  log: Callable[[str], None] | None = None) -> Selection:
    """One selection from validated params (core.runner.params.SelectParams), for the job and the CLI alike:
    TC whole, DC streamed, the target domain and the Ray address from the workspace settings when not given."""
    tc = ws.resolve_corpus(params.tc)
    dc = open_corpus_stream(ws, params.dc)  # a workspace DC is read in record batches
    if params.target_domain:
        check_target_domain(dc, params.dc, params.target_domain)
    target = params.target_domain or resolve_target_domain(tc, None) or ws.settings().target_domain
    ray = params.ray or ws.settings().ray_address or None
    if log is not None:
        log(f"select {params.strategy} budget {params.budget}: TC {params.tc} ({len(tc)}), DC {params.dc} ({len(dc)})"
            + (f" on Ray {ray}" if ray else ""))
    return select(tc, dc, params.strategy, params.budget, model=params.model or "default", model2=params.model2 or None,
                  ner_model=params.ner_model or None, target_domain=target, seed=params.seed, workspace=ws, progress=progress,
                  options=params.options, names={"tc": _pinned(ws, params.tc), "dc": _pinned(ws, params.dc)}, ray=ray)


def _pinned(ws: Workspace, ref: str) -> str:
    """A corpus as a saved selection records it: the workspace corpus a name or role resolves to now (a role moves to
    another corpus later, and the selection's row indices must still read the one they were made on), a file as given."""
    got = ws.ref(ref)
    return got.name if got.kind != "path" else str(ref)


def selection_job(params: SelectParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "select": rank DC for TC with a strategy, keep the budget, save the selection."""
    sel = run_selection(ctx.workspace, params, ctx.progress, ctx.log)
    summary = sel.summary()
    for note in sel.notes:
        ctx.log(note)
    ctx.metric(**{k: v for k, v in summary.items() if isinstance(v, (int, float))})
    return summary
