"""Corpus similarity measures of Dai et al. 2019 ("Using Similarity Measures to Select
Pretraining Data for NER") and 2020 ("Cost-effective Selection of Pretraining Data"):
TVC, TVcC, PPL, JSD, WVV between a source and a target corpus, and TTR of each.

A measure is computed for one (source, target) pair by `compare_corpora` (the CLI's path)
or for every pair of a source x target matrix by `similarity_matrix` (the job's path),
which reuses each source's LM and word vectors across targets and caches every value in
the workspace under a content hash of both corpora and the measure's parameters.
Size control as in Dai et al. 2020 §3: each source can be sub-sampled into k sub-corpora of
n tokens, and the measures averaged over them.

A workspace corpus is read as a `CorpusStream` (record batches of its Parquet file), never as
whole token lists: vocabularies, TTR, skip-gram passes and LM scoring go batch by batch; JSD
counts n-grams chunk by chunk and merges the counts; the KN LM of a source holds its id stream
(8 bytes/token) while it is estimated. Memory is what each measure needs (vocabularies, n-gram
counts, the LM), not the corpus as Python strings; values equal the in-memory path's.

>>> r = compare_corpora([["a", "b"]], [["a", "c"]], SimilarityParams(measures=("tvc", "jsd")))
>>> r["tvc"], round(r["jsd"], 3)
(0.5, 0.667)
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from core.data.stream import CorpusStream
from core.errors import UserError
from core.lm.ngram import KneserNeyLM, NgramCounts, build_lm, build_lm_streamed
from core.progress import Progress, sub
from core.runner.params import (
    SimilarityJobParams,
    check_similarity_settings,
    field_default,
    measure_list,
)

Tokens = Sequence[Sequence[str]]
Text = Tokens | CorpusStream  # a corpus as token lists, or streamed from its workspace Parquet
CACHE_VERSION = 1  # bump when a measure's definition changes, so cached values are recomputed


@dataclass(frozen=True)
class MeasureInfo:
    key: str
    label: str
    higher_is_better: bool | None  # None: not a similarity (TTR)
    description: str

    @property
    def direction(self) -> str:
        if self.higher_is_better is None:
            return "a property of each corpus, not a similarity"
        return "higher = more similar" if self.higher_is_better else "lower = more similar"


MEASURES: dict[str, MeasureInfo] = {m.key: m for m in (
    MeasureInfo("tvc", "TVC", True, "Target vocabulary covered: share of the target's distinct words that also occur in the source."),
    MeasureInfo("tvcc", "TVcC", True, "TVC over content words only (nouns, verbs, adjectives): ignores shared function words."),
    MeasureInfo("ppl", "PPL", False, "Perplexity of the target under a Kneser-Ney n-gram LM trained on the source."),
    MeasureInfo("jsd", "JSD", False, "Jensen-Shannon divergence of the 1-3-gram distributions (log2: 0 identical, 1 disjoint)."),
    MeasureInfo("wvv", "WVV", False, "Word vector variance: how far skip-gram vectors trained on the source move when trained "
                                     "further on the target (mean squared change over source words and dimensions)."),
    MeasureInfo("ttr", "TTR", None, "Type-token ratio of each corpus: distinct words / tokens (diversity; depends on size)."),
)}
PAIRWISE = ("tvc", "tvcc", "ppl", "jsd", "wvv")
CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ")
_SPACY_PIPELINES = ("en_core_web_sm", "en_core_web_md", "en_core_web_lg", "en_core_web_trf")


def _job_default(name: str) -> Any:
    """The default of a similarity setting, declared once in core.runner.params.SimilarityJobParams."""
    value = field_default(SimilarityJobParams, name)
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class SimilarityParams:
    """What to compute and how, validated and hashable (everything here goes into the cache key). The settings and
    their defaults are SimilarityJobParams' (core/runner/params.py); tests/test_similarity.py checks the fields agree."""

    measures: tuple[str, ...] = _job_default("measures")
    order: int = _job_default("order")  # n-gram order of the PPL model (Dai et al. use 3)
    jsd_order: int = _job_default("jsd_order")  # 1..jsd_order-grams pooled into one term distribution
    subsample_tokens: int | None = _job_default("subsample_tokens")  # size control: sub-corpora of this many source tokens ...
    subsample_k: int = _job_default("subsample_k")  # ... this many of them, measures averaged
    seed: int = _job_default("seed")
    tvcc_method: str = _job_default("tvcc_method")  # auto: spaCy POS tags if an English pipeline is installed, else approx
    wvv_dim: int = _job_default("wvv_dim")
    wvv_window: int = _job_default("wvv_window")
    wvv_epochs: int = _job_default("wvv_epochs")
    wvv_min_count: int = _job_default("wvv_min_count")
    # "shared": average over source words that occur in the target (default); "source": over all
    # source words, the paper's literal form, where words absent from the target never move and
    # so pull WVV towards 0 for unrelated targets (measured on CrossNER: self 0.0025 vs politics 0.0019
    # over source words, but 0.0025 vs 0.0067 over shared words), turning WVV into a vocabulary-overlap proxy.
    wvv_words: str = _job_default("wvv_words")

    def __post_init__(self) -> None:
        check_similarity_settings(self.measures, self.order, self.jsd_order, self.wvv_words, self.tvcc_method)
        if self.subsample_tokens is not None and self.subsample_tokens < 1:
            raise UserError(f"sub-sample size must be a positive number of tokens, got {self.subsample_tokens}")
        if self.subsample_k < 1:
            raise UserError(f"number of sub-samples must be >= 1, got {self.subsample_k}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SimilarityParams:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        if "measures" in known:
            known["measures"] = measure_list(known["measures"])
        return cls(**known)

    @property
    def pairwise(self) -> tuple[str, ...]:
        return tuple(m for m in PAIRWISE if m in self.measures)

    def cache_params(self, measure: str) -> dict[str, Any]:
        """Only what changes this measure's value (so e.g. a new LM order keeps cached JSDs)."""
        common = {"v": CACHE_VERSION, "measure": measure, "subsample": [self.subsample_tokens, self.subsample_k, self.seed]}
        extra = {"ppl": {"order": self.order}, "jsd": {"order": self.jsd_order},
                 "tvcc": {"method": content_word_method(self.tvcc_method)[0]},
                 "wvv": {"dim": self.wvv_dim, "window": self.wvv_window, "epochs": self.wvv_epochs,
                         "min_count": self.wvv_min_count, "seed": self.seed, "words": self.wvv_words}}.get(measure, {})
        return {**common, **extra}


# --------------------------------------------------------------------------- corpora as token lists or streams


def token_chunks(text: Text) -> Iterator[Tokens]:
    """A corpus' sentences chunk by chunk: a `CorpusStream` (workspace Parquet) in record
    batches, token lists as one chunk. Every measure reads corpora through this, so a
    multi-million-sentence DC never exists as Python token lists."""
    if isinstance(text, CorpusStream):
        yield from text.token_batches()
    else:
        yield text


def n_tokens(text: Text) -> int:
    if isinstance(text, CorpusStream):
        import pyarrow.compute as pc

        return int(sum(pc.sum(pc.list_value_length(b.column(0))).as_py() or 0 for b in text.arrow_batches(columns=["tokens"])))
    return int(sum(map(len, text)))


def sentence_lengths(text: Text) -> np.ndarray:
    if isinstance(text, CorpusStream):
        import pyarrow.compute as pc

        parts = [pc.list_value_length(b.column(0)).to_numpy(zero_copy_only=False) for b in text.arrow_batches(columns=["tokens"])]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
    return np.fromiter(map(len, text), dtype=np.int64, count=len(text))


def corpus_text(ref: Any) -> Text:
    """What the measures read for a resolved `CorpusRef`: a workspace corpus as a stream of
    record batches, a file's token lists in memory."""
    if getattr(ref, "kind", "path") == "path":
        return ref.load().tokens
    return CorpusStream(path=ref.path, name=ref.name, file_hash=ref.hash)


class _Sentences:
    """A restartable iterable of non-empty sentences (gensim passes over it once per epoch)."""

    def __init__(self, text: Text):
        self.text = text

    def __iter__(self) -> Iterator[list[str]]:
        for chunk in token_chunks(self.text):
            for t in chunk:
                if len(t):
                    yield list(t)


def _sentences(text: Text) -> Any:
    # token lists: a list, as before; a stream: re-read per pass (same sentences, same order)
    return [list(t) for t in text if len(t)] if not isinstance(text, CorpusStream) else _Sentences(text)


# --------------------------------------------------------------------------- the measures


def vocabulary(tokens: Text) -> set[str]:
    vocab: set[str] = set()
    for chunk in token_chunks(tokens):
        vocab.update(itertools.chain.from_iterable(chunk))
    return vocab


def type_token_ratio(tokens: Text) -> float:
    n = n_tokens(tokens)
    return len(vocabulary(tokens)) / n if n else 0.0


def target_vocab_covered(source_vocab: set[str], target_vocab: set[str]) -> float:
    """TVC = |V_S ∩ V_T| / |V_T| (Dai et al. 2019 §3.1), over distinct tokens; NaN when the
    target has no (content) words, where coverage is undefined."""
    return len(source_vocab & target_vocab) / len(target_vocab) if target_vocab else math.nan


@lru_cache(maxsize=4)
def _spacy_pipeline(name: str) -> Any:
    import spacy

    return spacy.load(name, exclude=["parser", "ner", "lemmatizer", "textcat"])


def content_word_method(requested: str = "auto") -> tuple[str, str]:
    """(method id, description shown to the user). spaCy tags when an English pipeline is
    installed; otherwise alphabetic tokens minus scikit-learn's English stop words, which
    keeps nouns, verbs and adjectives but also adverbs and a few function words."""
    if requested in ("auto", "spacy"):
        try:
            import spacy.util

            for name in _SPACY_PIPELINES:
                if spacy.util.is_package(name):
                    return f"spacy:{name}", f"spaCy {name} POS tags ({', '.join(CONTENT_POS)})"
        except ImportError:
            pass
        if requested == "spacy":
            raise UserError("TVcC with spaCy needs spaCy and an English pipeline (e.g. pip install spacy en_core_web_sm)")
    return "approx", "approximation: alphabetic tokens minus scikit-learn's ENGLISH_STOP_WORDS (no spaCy English pipeline installed)"


def content_vocabulary(tokens: Text, method: str, vocab: set[str] | None = None) -> set[str]:
    """Content words of a corpus; `vocab` (its vocabulary, if already built) spares the
    approximation another pass over a streamed corpus."""
    if method.startswith("spacy:"):
        from spacy.tokens import Doc

        nlp = _spacy_pipeline(method.split(":", 1)[1])
        docs = (Doc(nlp.vocab, words=list(t)) for chunk in token_chunks(tokens) for t in chunk if len(t))  # keep the corpus' tokenisation
        return {tok.text for doc in nlp.pipe(docs, batch_size=256) for tok in doc if tok.pos_ in CONTENT_POS}
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w for w in (vocab if vocab is not None else vocabulary(tokens)) if w.isalpha() and w.lower() not in ENGLISH_STOP_WORDS}


def ngram_jsd(source: Text, target: Text, max_order: int = 3, source_counts: NgramCounts | None = None) -> float:
    """Jensen-Shannon divergence (log2, in [0, 1]) between the term distributions of the two
    corpora, where terms are all 1..max_order-grams inside sentences pooled together (Dai et
    al. 2019 §3.1). Both corpora share one id space (source words first, in order of first
    appearance) so each n-gram is counted once per side; the terms are laid out as unigrams by
    id, then each order's n-grams in lexicographic id order, so the value does not depend on
    how the corpora were chunked. `source_counts` (NgramCounts.of(source)) lets a matrix count
    each source once for all targets."""
    import pandas as pd

    src = source_counts if source_counts is not None else NgramCounts.of(token_chunks(source), max_order)
    tgt = NgramCounts.of(token_chunks(target), max_order, src.copy_vocab())
    if not src.tokens or not tgt.tokens:
        raise UserError("JSD needs two non-empty corpora")
    V = len(tgt.vocab)
    p_parts = [np.pad(src.unigrams, (0, V - len(src.unigrams)))]
    q_parts = [np.pad(tgt.unigrams, (0, V - len(tgt.unigrams)))]
    for n in range(2, max_order + 1):
        cols = [f"w{k}" for k in range(n)]
        both = pd.concat([src.level(n).assign(q=0).rename(columns={"c": "p"}),
                          tgt.level(n).assign(p=0).rename(columns={"c": "q"})], ignore_index=True)
        summed = both.groupby(cols, sort=True)[["p", "q"]].sum()  # sorted: lexicographic id order
        p_parts.append(summed["p"].to_numpy())
        q_parts.append(summed["q"].to_numpy())
    p = np.concatenate(p_parts).astype(np.float64)
    q = np.concatenate(q_parts).astype(np.float64)
    p /= p.sum()
    q /= q.sum()
    m = (p + q) / 2
    js = 0.5 * _kl(p, m) + 0.5 * _kl(q, m)
    return float(min(max(js, 0.0), 1.0))


def _kl(p: np.ndarray, m: np.ndarray) -> float:
    nz = p > 0
    return float(np.sum(p[nz] * np.log2(p[nz] / m[nz])))


def train_word_vectors(tokens: Text, params: SimilarityParams) -> Any:
    """Skip-gram vectors on the source (gensim; workers=1 and a seed make it deterministic)."""
    from gensim.models import Word2Vec

    if not n_tokens(tokens):
        raise UserError("WVV needs a non-empty source corpus")
    try:
        return Word2Vec(_sentences(tokens), vector_size=params.wvv_dim, window=params.wvv_window,
                        min_count=params.wvv_min_count, sg=1, seed=params.seed, workers=1, epochs=params.wvv_epochs)
    except RuntimeError as exc:  # gensim's words for an empty vocabulary: "you must first build vocabulary"
        if "vocabulary" not in str(exc):
            raise
        raise UserError(f"WVV: no word of the source occurs {params.wvv_min_count} times (wvv_min_count): lower "
                        "wvv_min_count or give a larger source") from None


def word_vector_variance(source_model: Any, target: Text, words: str = "shared") -> float:
    """WVV (Dai et al. 2019 §3.1): continue training the source's skip-gram model on the target
    and take the mean squared change of the source words' vectors over words and dimensions.
    `words="shared"` averages over the source words that occur in the target (NaN when there are
    none); `words="source"` over every source word, where absent words keep their vectors."""
    before = source_model.wv.vectors.copy()
    model = copy.deepcopy(source_model)
    if not n_tokens(target):
        raise UserError("WVV needs a non-empty target corpus")
    sentences = _sentences(target)
    model.build_vocab(sentences, update=True)  # sets corpus_count to the target's non-empty sentences
    model.train(sentences, total_examples=model.corpus_count, epochs=model.epochs)
    after = model.wv.vectors[:len(before)]  # gensim appends new words, source rows keep their index
    per_word = np.mean((after.astype(np.float64) - before) ** 2, axis=1)
    if words == "source":
        return float(per_word.mean())
    target_vocab = vocabulary(target)
    shared = [i for i, w in enumerate(source_model.wv.index_to_key) if w in target_vocab]
    return float(per_word[shared].mean()) if shared else float("nan")


def lm_perplexities(lm: KneserNeyLM, target: Text) -> tuple[float, float]:
    """(corpus perplexity, Dai et al.'s summed per-sentence form sum_i P(s_i)^(-1/N_i))."""
    scores = lm.score_sentences(token_chunks(target), backend="numpy")
    return scores.corpus_perplexity, scores.summed_perplexity


def sample_subcorpora(tokens: Text, n_tokens: int | None, k: int = 1, seed: int = 0) -> list[Text]:
    """k random sub-corpora of whole sentences, each the smallest prefix of a shuffled order
    reaching n_tokens (Dai et al. 2020 compare sources at equal size). A source smaller than
    n_tokens is used whole, once (a stream stays a stream; a sub-corpus of one is read by row)."""
    lengths = sentence_lengths(tokens)
    if n_tokens is None or lengths.sum() <= n_tokens:
        return [tokens if isinstance(tokens, CorpusStream) else list(tokens)]
    rng = np.random.default_rng(seed)
    out: list[Text] = []
    for _ in range(k):
        perm = rng.permutation(len(tokens))
        take = int(np.searchsorted(np.cumsum(lengths[perm]), n_tokens)) + 1
        rows = np.sort(perm[:take])
        out.append(tokens.take(rows).tokens if isinstance(tokens, CorpusStream) else [tokens[i] for i in rows])
    return out


# --------------------------------------------------------------------------- one corpus side, computed lazily


@dataclass
class CorpusSide:
    """One corpus (or one sub-sample of it) with what measures need, each built at most once, on first use."""

    tokens: Text
    params: SimilarityParams

    @functools.cached_property
    def vocab(self) -> set[str]:
        return vocabulary(self.tokens)

    @functools.cached_property
    def content(self) -> set[str]:
        method = content_word_method(self.params.tvcc_method)[0]
        return content_vocabulary(self.tokens, method, self.vocab if method == "approx" else None)

    @functools.cached_property
    def lm(self) -> Any:
        """A stream: the LM from n-gram counts merged chunk by chunk (memory: distinct n-grams)."""
        order = self.params.order
        if isinstance(self.tokens, CorpusStream):
            return build_lm_streamed(token_chunks(self.tokens), order=order)
        return build_lm(self.tokens, order=order)

    @functools.cached_property
    def w2v(self) -> Any:
        return train_word_vectors(self.tokens, self.params)

    @functools.cached_property
    def ngrams(self) -> NgramCounts:
        return NgramCounts.of(token_chunks(self.tokens), self.params.jsd_order)


def pair_values(src: CorpusSide, tgt: CorpusSide, measures: Sequence[str],
                progress: Progress | None = None) -> dict[str, float]:
    """The pairwise measures of one source (sample) and target; `progress` hears which measure runs (the source's LM
    and word vectors are built inside the first that needs them: minutes on a large DC, at 0% before)."""
    out: dict[str, float] = {}
    for k, m in enumerate(measures):
        if progress is not None:
            progress(k / len(measures), f"{m} ({k + 1} of {len(measures)} measures)")
        if m == "tvc":
            out["tvc"] = target_vocab_covered(src.vocab, tgt.vocab)
        elif m == "tvcc":
            out["tvcc"] = target_vocab_covered(src.content, tgt.content)
        elif m == "ppl":
            out["ppl"], out["ppl_sum"] = lm_perplexities(src.lm, tgt.tokens)
        elif m == "jsd":
            out["jsd"] = ngram_jsd(src.tokens, tgt.tokens, src.params.jsd_order, source_counts=src.ngrams)
        elif m == "wvv":
            out["wvv"] = word_vector_variance(src.w2v, tgt.tokens, src.params.wvv_words)
    return out


def mean_over_samples(per_sample: list[dict[str, float]]) -> dict[str, float]:
    keys = per_sample[0].keys()
    out = {k: float(np.mean([d[k] for d in per_sample])) for k in keys}
    if len(per_sample) > 1:
        out.update({f"{k}_std": float(np.std([d[k] for d in per_sample])) for k in keys})
    return out


def compare_corpora(source: Text, target: Text, params: SimilarityParams | None = None,
                    progress: Progress | None = None) -> dict[str, Any]:
    """All requested measures for one source/target pair, as the CLI prints them: one key per
    measure (`ttr_source`/`ttr_target` for TTR, each of the whole corpus as the Similarity page's matrix gives it:
    sub-sampling applies to the pairwise measures), `ppl_sum`, `tvcc_method`, sample counts.
    Either corpus may be a `CorpusStream` (a workspace corpus, see `corpus_text`): it is then
    read in record batches, with the same values as its token lists would give."""
    params = params or SimilarityParams()
    report = progress or (lambda f, m: None)
    if not n_tokens(source) or not n_tokens(target):
        raise UserError("both corpora must contain tokens")
    samples = sample_subcorpora(source, params.subsample_tokens, params.subsample_k, params.seed)
    tgt = CorpusSide(target, params)
    per_sample = []
    for i, sample in enumerate(samples):
        src = CorpusSide(sample, params)
        per_sample.append(pair_values(src, tgt, params.pairwise,
                                      sub(report, i / len(samples), (i + 1) / len(samples),
                                          f"sample {i + 1}/{len(samples)}: ")))
    result: dict[str, Any] = mean_over_samples(per_sample) if per_sample[0] else {}
    if "ttr" in params.measures:
        result["ttr_source"], result["ttr_target"] = type_token_ratio(source), type_token_ratio(target)
    if "tvcc" in params.measures:
        result["tvcc_method"] = content_word_method(params.tvcc_method)[1]
    result["source_tokens"] = int(np.mean([n_tokens(s) for s in samples]))
    result["target_tokens"] = n_tokens(target)
    result["samples"] = len(samples)
    report(1.0, "done")
    return result


# --------------------------------------------------------------------------- matrix over workspace corpora, cached


# --------------------------------------------------------------------------- per-sentence PPL of DC under a TC model


# --------------------------------------------------------------------------- the job


# --------------------------------------------------------------------------- correlation with downstream F1


