"""DSIR: data selection by importance resampling (Xie et al. 2023, "Data Selection for
Language Models via Importance Resampling").

Each sentence becomes a bag of hashed unigrams and bigrams; the target (TC) and raw
(DC) feature distributions are estimated with add-one smoothing (TC's, optionally, with DC's distribution as its
prior: `log_ratios`), and a DC sentence's
log importance weight is sum_j x_j (log p_TC[j] - log p_DC[j]). The paper resamples
with Gumbel-top-k on these weights (sampling without replacement proportional to the
weights); a plain top-k is the deterministic variant. Everything is sparse matrix
arithmetic: hundreds of thousands of sentences per minute on one CPU core.

>>> from core.data.corpus import Corpus
>>> tc = Corpus([["the", "band", "played"]]); dc = Corpus([["the", "band", "sang"], ["tax", "law"]])
>>> w = dsir_log_weights(tc, dc, buckets=1024)
>>> bool(w[0] > w[1])
True
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from core.data.corpus import Corpus
from core.data.stream import PARALLEL_MIN, CorpusStream, map_row_groups, worker_pool
from core.progress import Progress
from core.recipes.selection_options import LENGTHS, SMOOTHINGS

DEFAULT_BUCKETS = 10_000  # the paper's hashed feature space size
_CHUNK = 100_000  # sentences per vectorizer call
_KEEP_MATRICES = 200_000  # up to this many DC sentences the sparse features (~50 MB) stay in memory between the two passes


def hashed_ngrams(tokens: list[list[str]], buckets: int = DEFAULT_BUCKETS):
    """Sparse (N, buckets) counts of lower-cased 1-2-grams (sklearn's stateless HashingVectorizer)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    vec = HashingVectorizer(n_features=buckets, ngram_range=(1, 2), alternate_sign=False, norm=None, lowercase=False,
                            analyzer="word", tokenizer=_identity, preprocessor=_lower_tokens, token_pattern=None)
    return vec.transform(tokens)


def _identity(x):
    return x


def _lower_tokens(tokens: list[str]) -> list[str]:
    return [t.lower() for t in tokens]


def feature_distribution(counts: np.ndarray) -> np.ndarray:
    """Add-one smoothed probabilities over hashed buckets, as log."""
    counts = np.asarray(counts, dtype=np.float64).ravel() + 1.0
    return np.log(counts / counts.sum())


def log_ratios(tc_counts: np.ndarray, dc_counts: np.ndarray, smoothing: str = "add-one") -> np.ndarray:
    """log p_TC - log p_DC per hashed bucket, the weight each n-gram adds to a sentence.

    "add-one" (what every study ran): both distributions add one count to every bucket. With fewer TC n-grams than
    buckets that prior is most of p_TC, so a bucket TC never saw scores log(1/(N_TC + B)) - log p_DC: above zero
    wherever DC's own count is low. DSIR then rewards n-grams rare in DC whatever TC holds, and penalises every common
    one TC lacks, which long sentences have more of. "dc" gives TC's estimate the same mass of pseudo-counts (one per
    bucket) spread as DC's distribution: a bucket TC never saw scores log(B / (N_TC + B)) whatever its DC count, the
    same small penalty for every unseen n-gram, and only n-grams TC holds more often than DC raise a sentence. On the
    studies' CrossNER corpora at |TC| it picks more target-domain text on four domains of five and sentences near
    DC's length (bench/bench_dsir_smoothing.py, docs/results/dsir-smoothing.json).

    >>> r = log_ratios(np.array([3.0, 0, 0, 0]), np.array([10.0, 10, 1000, 0]), "dc")
    >>> bool(np.isclose(r[1], r[2]) and np.isclose(r[1], r[3]) and r[0] > 0 > r[1])  # unseen: one penalty
    True
    >>> r = log_ratios(np.array([3.0, 0, 0, 0]), np.array([10.0, 10, 1000, 0]))
    >>> bool(r[3] > 0 > r[2])  # add-one: an n-gram DC lacks scores as if TC held it
    True
    """
    if smoothing == "add-one":
        return feature_distribution(tc_counts) - feature_distribution(dc_counts)
    if smoothing != "dc":
        raise ValueError(f"smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")
    log_dc = feature_distribution(dc_counts)
    tc_counts = np.asarray(tc_counts, dtype=np.float64).ravel()
    prior = float(len(tc_counts))  # one pseudo-count a bucket, as add-one gives, spread as DC is
    return np.log((tc_counts + prior * np.exp(log_dc)) / (tc_counts.sum() + prior)) - log_dc


class DsirScores(NamedTuple):
    """What one DSIR pass yields: each DC sentence's log weight and token count, and how many n-grams TC's estimate
    rests on (fewer than about twice the buckets and add-one's prior outweighs TC: `log_ratios`)."""

    log_weights: np.ndarray
    tokens: np.ndarray
    tc_ngrams: int


def dsir_log_weights(tc: Corpus, dc: Corpus | CorpusStream, buckets: int = DEFAULT_BUCKETS,
                     progress: Progress | None = None, length: str = "sum", smoothing: str = "add-one") -> np.ndarray:
    """Log importance weight log p_TC(x) / p_DC(x) of every DC sentence under the hashed n-gram model (`dsir_scores`)."""
    return dsir_scores(tc, dc, buckets, progress, length, smoothing).log_weights


def dsir_scores(tc: Corpus, dc: Corpus | CorpusStream, buckets: int = DEFAULT_BUCKETS,
                progress: Progress | None = None, length: str = "sum", smoothing: str = "add-one") -> DsirScores:
    """Log importance weight and token count of every DC sentence. `length`: "sum" is the paper's sum over a unit's
    n-grams, which the paper takes over fixed-length chunks; over sentences of any length it favours short ones (each
    n-gram TC lacks costs, and a short sentence has fewer: on the studies' CrossNER corpora the picks' sentences are
    mostly two thirds to nine tenths of DC's mean length, `bench/bench_dsir_length.py`). "chunk" weighs each
    sentence as a chunk of DC's mean length would weigh (its mean log ratio per n-gram times DC's mean n-grams per
    sentence): the same scale, so Gumbel sampling stays as sharp, without the pull to short sentences (at the studies'
    small budgets it did not lengthen the picks, whose top is mostly the target's own sentences). `smoothing`: how
    TC's n-gram distribution is estimated (`log_ratios`).

    DC is read twice in record batches (counts, then weights), so memory is one batch plus
    the (N,) results; below `_KEEP_MATRICES` sentences the first pass's features are reused."""
    if length not in LENGTHS:
        raise ValueError(f"length must be one of {LENGTHS}, got {length!r}")
    if smoothing not in SMOOTHINGS:
        raise ValueError(f"smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")
    dc = CorpusStream.of(dc)
    tc_counts = np.asarray(hashed_ngrams(tc.tokens, buckets).sum(axis=0)).ravel()
    tc_ngrams = int(tc_counts.sum())
    n = len(dc)
    if dc.streamed and n > max(_KEEP_MATRICES, PARALLEL_MIN):
        # Both passes on every core, each worker reading its own row groups (hashing is the cost).
        sub = (lambda a, b: (lambda f, m: progress(a + (b - a) * f, m))) if progress is not None else (lambda a, b: None)
        with worker_pool() as pool:  # one set of workers for both passes
            dc_counts = np.sum(map_row_groups(dc, _group_counts, (buckets,), progress=sub(0.0, 0.5), pool=pool), axis=0)
            diff = log_ratios(tc_counts, dc_counts, smoothing)
            parts = map_row_groups(dc, _group_weights, (buckets, diff), progress=sub(0.5, 1.0), pool=pool)
        out, ngrams = np.concatenate([w for w, _ in parts]), np.concatenate([g for _, g in parts])
        return DsirScores(_by_length(out, ngrams, length), _tokens(ngrams), tc_ngrams)
    dc_counts = np.zeros(buckets, dtype=np.float64)
    kept = []
    done = 0
    for toks in dc.token_batches(_CHUNK):
        x = hashed_ngrams(toks, buckets)
        dc_counts += np.asarray(x.sum(axis=0)).ravel()
        if n <= _KEEP_MATRICES:
            kept.append(x)
        done += len(toks)
        if progress is not None:
            progress(0.5 * done / max(1, n), "DC n-gram counts")
    diff = log_ratios(tc_counts, dc_counts, smoothing)
    out = np.empty(n, dtype=np.float64)
    ngrams = np.empty(n, dtype=np.float64)
    parts = iter(kept) if kept else (hashed_ngrams(toks, buckets) for toks in dc.token_batches(_CHUNK))
    start = 0
    for x in parts:
        out[start:start + x.shape[0]], ngrams[start:start + x.shape[0]] = _group_weights_of(x, diff)
        start += x.shape[0]
        if progress is not None:
            progress(0.5 + 0.5 * start / max(1, n), "importance weights")
    return DsirScores(_by_length(out, ngrams, length), _tokens(ngrams), tc_ngrams)


def _by_length(weights: np.ndarray, ngrams: np.ndarray, length: str) -> np.ndarray:
    if length == "sum":
        return weights
    per_ngram = np.divide(weights, ngrams, out=np.zeros_like(weights), where=ngrams > 0)
    return per_ngram * float(ngrams.mean()) if len(ngrams) else per_ngram


def _tokens(ngrams: np.ndarray) -> np.ndarray:
    """Tokens of each sentence from its 1-2-gram count (n tokens give n unigrams and n - 1 bigrams)."""
    return np.where(ngrams > 0, (ngrams + 1) / 2, 0).astype(np.int64)


def _group_counts(tokens: list[list[str]], buckets: int) -> np.ndarray:
    return np.asarray(hashed_ngrams(tokens, buckets).sum(axis=0), dtype=np.float64).ravel()


def _group_weights(tokens: list[list[str]], buckets: int, diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _group_weights_of(hashed_ngrams(tokens, buckets), diff)


def _group_weights_of(x, diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(summed log ratio, n-gram count) of each row of a feature matrix."""
    return np.asarray(x @ diff, dtype=np.float64), np.asarray(x.sum(axis=1), dtype=np.float64).ravel()


GUMBEL_STREAM = 0xD51  # DSIR's own random stream for a seed (the second word of the generator's seed)


def gumbel_keys(log_weights: np.ndarray, seed: int = 0) -> np.ndarray:
    """log weight + Gumbel noise: the key the sampled ranking sorts on (shown next to the score,
    so a lower score ranked above a higher one is not a surprise). The noise comes from a stream of its own: numpy's
    `gumbel` turns the very uniforms `random()` draws into a falling function of them, so with a generator seeded
    like the random strategy's, DSIR over flat weights picked exactly what `random` left out for the same seed (the
    paired comparison with the random control was between two anti-correlated draws).

    >>> keys = gumbel_keys(np.zeros(100_000), seed=0)
    >>> random_pick = set(np.argsort(-np.random.default_rng(0).random(100_000))[:10_000])
    >>> 700 < len(random_pick & set(np.argsort(-keys)[:10_000])) < 1300  # about 1,000 if independent (was 0)
    True
    """
    noise = np.random.default_rng([seed, GUMBEL_STREAM]).gumbel(size=len(log_weights))
    return np.asarray(log_weights, dtype=np.float64) + noise


def gumbel_top_order(log_weights: np.ndarray, seed: int = 0) -> np.ndarray:
    """A ranking whose first k items are a sample of k without replacement, proportional to
    exp(log_weights) (the Gumbel-top-k trick); deterministic for a seed, ties by index."""
    keys = gumbel_keys(log_weights, seed)
    return np.argsort(-keys, kind="stable")  # stable: ties by index, as lexsort((index, -keys)) without the index array
