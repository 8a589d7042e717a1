"""Interpolated modified Kneser-Ney n-gram language model: estimate, score, ARPA in/out.

The estimator is the one KenLM's `lmplz` implements (Chen & Goodman 1998 eq. 26, Heafield
et al. 2013): raw counts at the highest order, adjusted (left-continuation) counts below it
except for n-grams starting with <s>, which keep raw counts; three discounts per order from
the count-of-counts; unigrams interpolated with a uniform distribution over the vocabulary
(incl. <unk> and </s>, excl. <s>). Where the count-of-counts make the discounts invalid
(small corpora) it uses lmplz's --discount_fallback values 0.5/1/1.5 instead of failing.

Why hand-written: KenLM's estimator is a C++ binary that is not installable from PyPI here,
and NLTK's `KneserNeyInterpolated` is a different model (one discount, no unigram smoothing)
that needs minutes for 50k tokens. Everything is vectorised with numpy: tokens become int
ids, an n-gram is the key `prefix_id * V + word` (prefix_id = the row of its (n-1)-gram
prefix), so one hash-factorisation per order counts all n-grams; no per-n-gram Python objects.

>>> lm = build_lm([["a", "b"], ["a", "c"]], order=2)
>>> [round(p, 3) for p in lm.sentence_perplexities([["a", "b"]]).tolist()]
[1.942]
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.data.corpus import Corpus
from core.errors import CorpusError, UserError
from core.progress import Progress
from core.runner.params import MAX_NGRAM_ORDER

TokenSource = Corpus | Sequence[Sequence[str]] | Iterable[Corpus]

UNK, BOS, EOS = "<unk>", "<s>", "</s>"
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)  # lmplz --discount_fallback defaults
ARPA_ZERO = -99.0  # log10 of "probability zero" by ARPA convention (used for <s>)
MAX_ORDER = MAX_NGRAM_ORDER  # named with the similarity job's settings (core.runner.params)


def check_order(order: int) -> None:
    """An n-gram order this LM builds (1 to MAX_ORDER), refused before any corpus is read."""
    if not 1 <= order <= MAX_ORDER:
        raise UserError(f"n-gram order must be between 1 and {MAX_ORDER}, got {order}")


# --------------------------------------------------------------------------- vocabulary & encoding


class Vocabulary:
    """Word <-> int id, with <unk>, <s>, </s> at 0, 1, 2."""

    def __init__(self, words: Iterable[str] = ()):
        self.words: list[str] = [UNK, BOS, EOS]
        self.index: dict[str, int] = {UNK: UNK_ID, BOS: BOS_ID, EOS: EOS_ID}
        for w in words:
            self.add(w)

    def __len__(self) -> int:
        return len(self.words)

    def add(self, word: str) -> int:
        i = self.index.get(word)
        if i is None:
            i = self.index[word] = len(self.words)
            self.words.append(word)
        return i

    def lookup(self, uniques: Iterable[str], grow: bool) -> np.ndarray:
        """Ids for distinct corpus words. Literal <s>/</s> inside a sentence would fake a
        sentence boundary, so they become <unk> (lmplz refuses them); whitespace inside a
        token (possible in tab-separated CoNLL) becomes '_' so the ARPA file stays parseable."""
        out = []
        for w in uniques:
            if w in (BOS, EOS):
                out.append(UNK_ID)
                continue
            if len(w.split()) != 1:
                w = "_".join(w.split()) or UNK
            out.append(self.add(w) if grow else self.index.get(w, UNK_ID))
        return np.asarray(out, dtype=np.int64)


@dataclass
class Encoded:
    """Sentences as one int64 id stream. With `padded`, each sentence is <s> w1..wk </s>.
    `remaining[i]` = tokens after position i in its sentence (so an n-gram starting at i
    stays inside the sentence iff remaining[i] >= n - 1); `lengths` = stream length per sentence."""

    seq: np.ndarray
    lengths: np.ndarray
    padded: bool

    @property
    def remaining(self) -> np.ndarray:
        ends = np.cumsum(self.lengths) - 1
        return np.repeat(ends, self.lengths) - np.arange(len(self.seq))

    @property
    def before(self) -> np.ndarray:
        """Tokens before position i in its sentence (the usable context length)."""
        starts = np.cumsum(self.lengths) - self.lengths
        return np.arange(len(self.seq)) - np.repeat(starts, self.lengths)

    @property
    def sentence_of(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.lengths)), self.lengths)

    @property
    def n_tokens(self) -> int:
        return int(len(self.seq) - (2 * len(self.lengths) if self.padded else 0))


def iter_token_chunks(source: TokenSource) -> Iterator[Sequence[Sequence[str]]]:
    """A Corpus, a list of token lists, or an iterator of Corpus chunks (ws.iter_corpus)."""
    if isinstance(source, Corpus):
        yield source.tokens
    elif isinstance(source, Sequence):
        yield source
    else:
        for chunk in source:
            yield chunk.tokens if isinstance(chunk, Corpus) else chunk


def encode(source: TokenSource, vocab: Vocabulary, grow: bool, padded: bool = True) -> Encoded:
    """Map tokens to ids chunk by chunk. pandas' hash factorisation does the per-token work
    in C (3x faster than a dict comprehension, measured); Python touches only distinct words."""
    seqs, lens = [], []
    for chunk in iter_token_chunks(source):
        if not len(chunk):
            continue
        lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
        flat = np.fromiter(itertools.chain.from_iterable(chunk), dtype=object, count=int(lengths.sum()))
        if len(flat):
            codes, uniques = pd.factorize(flat)
            ids = vocab.lookup(uniques, grow)[codes]
        else:
            ids = np.zeros(0, dtype=np.int64)
        if padded:
            lengths = lengths + 2
            seq = np.empty(int(lengths.sum()), dtype=np.int64)
            starts = np.cumsum(lengths) - lengths
            seq[starts] = BOS_ID
            seq[starts + lengths - 1] = EOS_ID
            inner = np.ones(len(seq), dtype=bool)
            inner[starts] = inner[starts + lengths - 1] = False
            seq[inner] = ids
        else:
            seq = ids
        seqs.append(seq)
        lens.append(lengths)
    if not seqs:
        return Encoded(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), padded)
    return Encoded(np.concatenate(seqs), np.concatenate(lens), padded)


# --------------------------------------------------------------------------- n-gram counts merged chunk by chunk


class NgramCounts:
    """Counts of every 1..order-gram inside the sentences of one corpus, counted chunk by
    chunk in the id space of `vocab` (grown as words appear; ids in order of first appearance,
    as `encode` gives them for the whole corpus). Memory is the distinct n-grams, never the
    corpus: JSD (unpadded) and a KN LM of a streamed corpus (`padded`, <s>/</s> included) need
    only these. Level n >= 2 is a frame of word-id columns w0..w{n-1} and a count `c`; parts
    are merged when they outgrow the merged frame (amortised)."""

    def __init__(self, order: int, vocab: Vocabulary | None = None, padded: bool = False):
        self.order = order
        self.padded = padded
        self.vocab = vocab if vocab is not None else Vocabulary()
        self.unigrams = np.zeros(0, dtype=np.int64)
        self.tokens = 0
        self._levels: dict[int, list[Any]] = {n: [] for n in range(2, order + 1)}
        self._merged_rows: dict[int, int] = {n: 0 for n in range(2, order + 1)}

    @classmethod
    def of(cls, chunks: Iterable[Sequence[Sequence[str]]], order: int, vocab: Vocabulary | None = None,
           padded: bool = False) -> NgramCounts:
        counts = cls(order, vocab, padded)
        for chunk in chunks:
            counts.add(chunk)
        return counts

    def add(self, chunk: Sequence[Sequence[str]]) -> None:
        enc = encode(chunk, self.vocab, grow=True, padded=self.padded)
        if not len(enc.seq):
            return
        self.tokens += enc.n_tokens
        counts = np.bincount(enc.seq, minlength=len(self.vocab))
        counts[:len(self.unigrams)] += self.unigrams
        self.unigrams = counts
        remaining = enc.remaining
        for n in range(2, self.order + 1):
            valid = np.flatnonzero(remaining >= n - 1)
            if not len(valid):
                continue
            frame = pd.DataFrame({f"w{k}": enc.seq[valid + k].astype(np.int32) for k in range(n)})
            part = frame.groupby(list(frame.columns), sort=False).size().rename("c").reset_index()
            parts = self._levels[n]
            parts.append(part)
            if sum(map(len, parts)) > 2 * max(self._merged_rows[n], len(part)):
                self._levels[n] = [self._merge(parts, n)]
                self._merged_rows[n] = len(self._levels[n][0])

    @staticmethod
    def _merge(parts: list[Any], n: int) -> Any:
        if len(parts) == 1:
            return parts[0]
        return pd.concat(parts, ignore_index=True).groupby([f"w{k}" for k in range(n)], sort=False)["c"].sum().reset_index()

    def level(self, n: int) -> Any:
        """Distinct n-grams with their counts (columns w0..w{n-1}, c)."""
        parts = self._levels[n]
        if not parts:
            return pd.DataFrame({**{f"w{k}": np.zeros(0, np.int32) for k in range(n)}, "c": np.zeros(0, np.int64)})
        self._levels[n] = [self._merge(parts, n)]
        return self._levels[n][0]

    def sorted_level(self, n: int) -> Any:
        """`level(n)` in lexicographic id order: the order of `index_ngrams`' sorted keys."""
        return self.level(n).sort_values([f"w{k}" for k in range(n)], kind="stable", ignore_index=True)

    def copy_vocab(self) -> Vocabulary:
        v = Vocabulary()
        v.words, v.index = list(self.vocab.words), dict(self.vocab.index)
        return v


# --------------------------------------------------------------------------- n-gram indexing


def unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique keys, index of each key in them). Hash-factorise then sort only the
    uniques: ~2x faster than np.unique's full sort on 1M keys (measured)."""
    codes, uniques = pd.factorize(keys)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.asarray(uniques)[order], rank[codes]


@dataclass
class NgramLevel:
    """All distinct n-grams of one order n >= 2 in a stream: `keys` sorted (prefix row * V +
    last word), and for each stream position the row of the n-gram starting there (-1 if it
    would leave the sentence)."""

    keys: np.ndarray
    at: np.ndarray
    valid: np.ndarray  # stream positions where an n-gram starts
    rows: np.ndarray  # row of the n-gram at each valid position


def index_ngrams(enc: Encoded, order: int, vocab_size: int) -> list[NgramLevel | None]:
    """Levels 2..order (index = order; 0 and 1 are None: a unigram's row is its word id)."""
    levels: list[NgramLevel | None] = [None, None]
    remaining = enc.remaining
    prev_at = enc.seq
    for n in range(2, order + 1):
        valid = np.flatnonzero(remaining >= n - 1)
        keys, rows = unique_inverse(prev_at[valid] * vocab_size + enc.seq[valid + n - 1])
        at = np.full(len(enc.seq), -1, dtype=np.int64)
        at[valid] = rows
        levels.append(NgramLevel(keys, at, valid, rows))
        prev_at = at
    return levels


# --------------------------------------------------------------------------- the model


@dataclass
class SentenceScores:
    """Per-sentence log10 P(s) (incl. </s>), predicted tokens N_i (words + </s>), OOV count."""

    log10_prob: np.ndarray
    n_predicted: np.ndarray
    oov: np.ndarray

    @property
    def perplexity(self) -> np.ndarray:
        """P(s_i)^(-1/N_i), KenLM's per-sentence definition."""
        with np.errstate(over="ignore"):
            return np.power(10.0, -self.log10_prob / np.maximum(self.n_predicted, 1))

    @property
    def corpus_perplexity(self) -> float:
        total = int(self.n_predicted.sum())
        return float(10.0 ** (-self.log10_prob.sum() / total)) if total else float("nan")

    @property
    def summed_perplexity(self) -> float:
        """Dai et al. 2019's corpus form: sum_i P(s_i)^(-1/N_i)."""
        return float(self.perplexity.sum())


@dataclass
class KneserNeyLM:
    """A backoff n-gram model. Level n (1..order) holds log10 p(w | h) and log10 backoff for
    each stored n-gram; levels >= 2 are addressed by sorted keys `prefix_row * V + word`."""

    order: int
    vocab: Vocabulary
    log10_prob: list[np.ndarray]  # [order + 1], index 0 unused
    log10_bow: list[np.ndarray]
    keys: list[np.ndarray | None]
    discounts: list[tuple[float, float, float]] = field(default_factory=list)  # per order, 1-based index - 1
    fallback_orders: list[int] = field(default_factory=list)
    arpa_path: Path | None = None
    _indexes: dict[int, pd.Index] = field(default_factory=dict, repr=False)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def counts(self) -> list[int]:
        """Number of stored n-grams per order (1..order)."""
        return [len(self.log10_prob[n]) for n in range(1, self.order + 1)]

    def _index(self, n: int) -> pd.Index:
        # A hash index per order: get_indexer is ~4x faster than searchsorted on 1M lookups.
        if n not in self._indexes:
            self._indexes[n] = pd.Index(self.keys[n])
        return self._indexes[n]

    def _rows_in_stream(self, enc: Encoded) -> list[np.ndarray]:
        """For each order n, the row of the stored n-gram starting at each position, or -1."""
        at: list[np.ndarray] = [np.zeros(0, np.int64), enc.seq]
        remaining = enc.remaining
        V = self.vocab_size
        for n in range(2, self.order + 1):
            cur = np.full(len(enc.seq), -1, dtype=np.int64)
            cand = np.flatnonzero((remaining >= n - 1) & (at[n - 1] >= 0))
            if len(cand) and len(self.keys[n]):
                cur[cand] = self._index(n).get_indexer(at[n - 1][cand] * V + enc.seq[cand + n - 1])
            at.append(cur)
        return at

    def _log10_at(self, enc: Encoded, positions: np.ndarray) -> np.ndarray:
        """log10 p(seq[i] | up to order-1 previous tokens of its sentence) for each i in
        `positions`: the longest stored n-gram ending at i, times the backoffs of the longer
        contexts (standard ARPA backoff; for an interpolated model bow(h) is gamma(h))."""
        at = self._rows_in_stream(enc)
        before = enc.before[positions]
        best = np.ones(len(positions), dtype=np.int64)
        row = enc.seq[positions].copy()
        alive = np.ones(len(positions), dtype=bool)
        for n in range(2, self.order + 1):
            alive &= before >= n - 1
            cand = at[n][np.maximum(positions - n + 1, 0)]
            alive &= cand >= 0
            best[alive] = n
            row[alive] = cand[alive]
        out = np.empty(len(positions), dtype=np.float64)
        for n in range(1, self.order + 1):
            sel = best == n
            out[sel] = self.log10_prob[n][row[sel]]
        for j in range(1, self.order):
            need = np.flatnonzero((best <= j) & (before >= j))
            ctx = at[j][positions[need] - j]
            has = ctx >= 0
            out[need[has]] += self.log10_bow[j][ctx[has]]
        return out

    def score_sentences(self, source: TokenSource, backend: str = "auto") -> SentenceScores:
        """Per-sentence log10 probability (with </s>), predicted-token count and OOVs.

        backend: "numpy" (the reference, and the faster one: 1.8M vs 1.0M tokens/s for kenlm-ex's
        per-sentence Python loop on 1.2M tokens, see bench/bench_ngram.py), "kenlm" (the kenlm-ex query library on this
        model's ARPA file; float32 tables, so values differ from numpy in the 6th-7th digit), or
        "auto" (= numpy).
        """
        if backend not in ("auto", "numpy", "kenlm"):
            raise UserError(f"unknown LM backend {backend!r}: expected auto, numpy or kenlm")
        if backend == "kenlm":
            scores = self._score_kenlm(source) if self.arpa_path is not None else None
            if scores is None:
                raise UserError("the kenlm backend needs the kenlm-ex package and a model loaded from an ARPA file")
            return scores
        return self._score_numpy(source)

    def _score_numpy(self, source: TokenSource) -> SentenceScores:
        scores = []
        for chunk in iter_token_chunks(source):
            enc = encode(chunk, self.vocab, grow=False)
            if not len(enc.lengths):
                continue
            positions = np.flatnonzero(enc.seq != BOS_ID)
            logp = self._log10_at(enc, positions)
            sent = enc.sentence_of
            S = len(enc.lengths)
            oov = np.bincount(sent, weights=(enc.seq == UNK_ID), minlength=S)
            scores.append(SentenceScores(np.bincount(sent[positions], weights=logp, minlength=S), enc.lengths - 1,
                                         oov.astype(np.int64)))
        return _concat_scores(scores)

    def _score_kenlm(self, source: TokenSource) -> SentenceScores | None:
        try:
            import kenlm
        except ImportError:
            return None
        model = _kenlm_model(str(self.arpa_path))
        logps, lens, oovs = [], [], []
        index = self.vocab.index
        for chunk in iter_token_chunks(source):
            for toks in chunk:
                # Same token normalisation as `Vocabulary.lookup`, so both backends see one text.
                words = [UNK if t in (BOS, EOS) else ("_".join(t.split()) or UNK) for t in toks]
                logps.append(model.score(" ".join(words), bos=True, eos=True))
                lens.append(len(words) + 1)
                oovs.append(sum(w not in index for w in words))
        del kenlm
        return SentenceScores(np.asarray(logps, dtype=np.float64), np.asarray(lens, dtype=np.int64),
                              np.asarray(oovs, dtype=np.int64))

    def sentence_perplexities(self, source: TokenSource, backend: str = "auto") -> np.ndarray:
        """P(s_i)^(-1/N_i) for each sentence, N_i = words + 1 (</s>); the selection baseline."""
        return self.score_sentences(source, backend).perplexity

    def perplexity(self, source: TokenSource, backend: str = "auto") -> float:
        return self.score_sentences(source, backend).corpus_perplexity

    def next_word_log10(self, context: Sequence[str], sentence_start: bool = False) -> np.ndarray:
        """log10 p(w | context) for every word id w except <s> (index = word id; <s> = -inf).
        For checking normalisation and for inspection, not for bulk scoring."""
        V = self.vocab_size
        ctx = ([BOS] if sentence_start else []) + list(context)
        ctx_ids = encode([ctx], self.vocab, grow=False, padded=False).seq if ctx else np.zeros(0, np.int64)
        if sentence_start:
            ctx_ids[0] = BOS_ID
        words = np.arange(V, dtype=np.int64)
        k = len(ctx_ids)
        seq = np.concatenate([np.tile(ctx_ids, V).reshape(V, k), words[:, None]], axis=1).ravel()
        enc = Encoded(seq, np.full(V, k + 1, dtype=np.int64), padded=False)
        out = self._log10_at(enc, np.arange(V) * (k + 1) + k)
        out[BOS_ID] = -np.inf
        return out

    # ---- ARPA
    def ngram_words(self, n: int) -> np.ndarray:
        """(count_n, n) word ids of the stored n-grams, in row order."""
        if n == 1:
            return np.arange(self.vocab_size, dtype=np.int64)[:, None]
        keys = self.keys[n]
        return np.concatenate([self.ngram_words(n - 1)[keys // self.vocab_size], (keys % self.vocab_size)[:, None]], axis=1)

    def write_arpa(self, path: str | Path, progress: Progress | None = None) -> Path:
        """Write the standard ARPA text format (readable by KenLM, SRILM, this module), atomically.
        Floats are written with repr so a round trip reproduces every score bit for bit."""
        from core.data.atomic import temp_path_for

        path = Path(path)
        tmp = temp_path_for(path)
        words = np.asarray(self.vocab.words, dtype=object)
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write("\\data\\\n")
                for n in range(1, self.order + 1):
                    fh.write(f"ngram {n}={len(self.log10_prob[n])}\n")
                for n in range(1, self.order + 1):
                    fh.write(f"\n\\{n}-grams:\n")
                    grams = self.ngram_words(n)
                    text = words[grams[:, 0]]
                    for k in range(1, n):
                        text = text + " " + words[grams[:, k]]
                    probs = np.where(np.isfinite(self.log10_prob[n]), self.log10_prob[n], ARPA_ZERO).tolist()
                    if n < self.order:
                        bows = self.log10_bow[n].tolist()
                        fh.writelines(f"{p!r}\t{t}\t{b!r}\n" for p, t, b in zip(probs, text.tolist(), bows))
                    else:
                        fh.writelines(f"{p!r}\t{t}\n" for p, t in zip(probs, text.tolist()))
                    if progress is not None:
                        progress(n / self.order, f"wrote {n}-grams")
                fh.write("\n\\end\\\n")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path


def _concat_scores(parts: list[SentenceScores]) -> SentenceScores:
    if not parts:
        z = np.zeros(0)
        return SentenceScores(z, z.astype(np.int64), z.astype(np.int64))
    return SentenceScores(np.concatenate([p.log10_prob for p in parts]), np.concatenate([p.n_predicted for p in parts]),
                          np.concatenate([p.oov for p in parts]))


_KENLM_CACHE: dict[str, Any] = {}


def _kenlm_model(path: str) -> Any:
    import kenlm

    if path not in _KENLM_CACHE:
        _KENLM_CACHE.clear()  # one model at a time: they can be large
        config = kenlm.Config()
        config.show_progress = False  # it draws a progress bar on stderr by default
        with _native_stderr_silenced():  # and prints a "build a binary file" hint from C++ regardless
            _KENLM_CACHE[path] = kenlm.Model(path, config)
    return _KENLM_CACHE[path]


@contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for C++ code that writes to it directly."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# --------------------------------------------------------------------------- estimation


def modified_kn_discounts(adjusted: np.ndarray) -> tuple[tuple[float, float, float], bool]:
    """Chen & Goodman eq. 26 from the count-of-counts t_1..t_4 of adjusted counts; lmplz's
    validity rule (t_1..t_3 > 0 and 0 <= D_k <= k); (discounts, used_fallback)."""
    t = np.bincount(np.minimum(adjusted[adjusted > 0], 5), minlength=6)[:5].astype(np.float64)
    if min(t[1], t[2], t[3]) == 0:
        return FALLBACK_DISCOUNTS, True
    y = t[1] / (t[1] + 2 * t[2])
    d = tuple(float(k - (k + 1) * y * t[k + 1] / t[k]) for k in (1, 2, 3))
    if any(not (0.0 <= d[k - 1] <= k) for k in (1, 2, 3)):
        return FALLBACK_DISCOUNTS, True
    return d, False  # type: ignore[return-value]


def _discount_of(adjusted: np.ndarray, d: Sequence[float]) -> np.ndarray:
    table = np.array([0.0, d[0], d[1], d[2]])
    return table[np.minimum(adjusted, 3)]


def estimate(enc: Encoded, vocab: Vocabulary, order: int = 3, discounts: Sequence[float | Sequence[float]] | None = None,
             progress: Progress | None = None) -> KneserNeyLM:
    """Estimate the model from an encoded, padded stream.

    discounts: None for modified-KN discounts from the data (fallback 0.5/1/1.5 per order
    where invalid), or one value per order (1..order), each a float (one discount for every
    count, as NLTK's KneserNeyInterpolated) or a (D1, D2, D3+) triple. A unigram discount of 0
    switches off the uniform interpolation, so <unk> gets probability 0.
    """
    check_order(order)
    if discounts is not None and len(discounts) != order:
        raise UserError(f"give one discount per order: {order} values, got {len(discounts)}")
    if enc.n_tokens == 0:
        raise UserError("cannot train a language model on an empty corpus")
    report = progress or (lambda f, m: None)
    V = len(vocab)
    levels = index_ngrams(enc, order, V)
    report(0.5, "n-grams counted")

    # Per order n: raw counts, prefix row (n-1), suffix row (n-1, words 2..n), starts-with-<s>.
    raw: list[np.ndarray] = [np.zeros(0), np.bincount(enc.seq, minlength=V)]
    prefix: list[np.ndarray] = [np.zeros(0, np.int64)] * 2
    suffix: list[np.ndarray] = [np.zeros(0, np.int64)] * 2
    prev_at = enc.seq
    for n in range(2, order + 1):
        lv = levels[n]
        assert lv is not None
        raw.append(np.bincount(lv.rows, minlength=len(lv.keys)))
        prefix.append(lv.keys // V)
        suf = np.empty(len(lv.keys), dtype=np.int64)
        suf[lv.rows] = prev_at[lv.valid + 1]
        suffix.append(suf)
        prev_at = lv.at
    keys = [None, None] + [levels[n].keys for n in range(2, order + 1)]  # type: ignore[union-attr]
    return _estimate_tables(vocab, order, raw, prefix, suffix, keys, discounts, report)


def _estimate_tables(vocab: Vocabulary, order: int, raw: list[np.ndarray], prefix: list[np.ndarray],
                     suffix: list[np.ndarray], keys: list[np.ndarray | None],
                     discounts: Sequence[float | Sequence[float]] | None, report: Progress) -> KneserNeyLM:
    """The model from per-order tables of distinct n-grams (sorted keys): raw counts, prefix row
    and suffix row (`estimate` builds them from a stream, `estimate_from_counts` from counts)."""
    V = len(vocab)
    starts_bos: list[np.ndarray] = [np.zeros(0, bool), np.arange(V) == BOS_ID]
    for n in range(2, order + 1):
        starts_bos.append(starts_bos[n - 1][prefix[n]])

    # Adjusted counts: continuation counts below the top order, except <s>-initial n-grams.
    adjusted: list[np.ndarray] = [np.zeros(0)] * (order + 1)
    adjusted[order] = raw[order].copy()
    for n in range(order - 1, 0, -1):
        a = np.bincount(suffix[n + 1], minlength=len(raw[n]))
        a[starts_bos[n]] = raw[n][starts_bos[n]]
        adjusted[n] = a
    adjusted[1][BOS_ID] = 0  # <s> is never predicted (lmplz: "<s> has count 0")

    used: list[tuple[float, float, float]] = []
    fallback: list[int] = []
    for n in range(1, order + 1):
        if discounts is not None:
            d = discounts[n - 1]
            triple = (float(d), float(d), float(d)) if np.isscalar(d) else tuple(float(x) for x in d)  # type: ignore[union-attr]
            if len(triple) != 3 or any(not (0.0 <= triple[k] <= k + 1) for k in range(3)):
                raise UserError(f"discounts for order {n} must satisfy 0 <= D_k <= k, got {d}")
            used.append(triple)  # type: ignore[arg-type]
        else:
            triple, fb = modified_kn_discounts(adjusted[n] if n > 1 else np.delete(adjusted[1], [UNK_ID, BOS_ID]))
            used.append(triple)
            if fb:
                fallback.append(n)

    # Interpolated probabilities, order by order (lmplz's InitialProbabilities + Interpolate).
    probs: list[np.ndarray] = [np.zeros(0)] * (order + 1)
    bows: list[np.ndarray] = [np.zeros(0)] * (order + 1)
    a1 = adjusted[1]
    disc1 = _discount_of(a1, used[0])
    denom = a1.sum()
    gamma0 = disc1.sum() / denom
    p1 = np.maximum(a1 - disc1, 0) / denom + gamma0 / (V - 1)  # uniform over V minus <s>
    p1[BOS_ID] = 0.0
    probs[1] = p1
    for n in range(2, order + 1):
        a = adjusted[n]
        disc = _discount_of(a, used[n - 1])
        n_ctx = len(probs[n - 1])
        den = np.bincount(prefix[n], weights=a, minlength=n_ctx)
        gam = np.bincount(prefix[n], weights=disc, minlength=n_ctx)
        seen = den > 0
        gamma = np.ones(n_ctx)
        gamma[seen] = gam[seen] / den[seen]
        bows[n - 1] = gamma
        probs[n] = np.maximum(a - disc, 0) / den[prefix[n]] + gamma[prefix[n]] * probs[n - 1][suffix[n]]
    bows[order] = np.ones(len(probs[order]))
    report(0.95, "probabilities interpolated")

    with np.errstate(divide="ignore"):
        log_p = [np.zeros(0)] + [np.log10(probs[n]) for n in range(1, order + 1)]
        log_b = [np.zeros(0)] + [np.log10(bows[n]) for n in range(1, order + 1)]
    lm = KneserNeyLM(order, vocab, log_p, log_b, keys, used, fallback)
    report(1.0, f"{order}-gram LM: {', '.join(f'{c:,}' for c in lm.counts())} n-grams")
    return lm


def build_lm(corpus_or_token_lists: TokenSource, order: int = 3, progress: Progress | None = None,
             discounts: Sequence[float | Sequence[float]] | None = None) -> KneserNeyLM:
    """Train an interpolated modified Kneser-Ney LM on sentences (a Corpus, token lists, or
    an iterator of Corpus chunks for a corpus too large to hold as Python strings twice).

    >>> lm = build_lm([["the", "cat"], ["the", "dog"]], order=2)
    >>> round(float(10 ** lm.next_word_log10(["the"]).max()), 3)
    0.35
    """
    report = progress or (lambda f, m: None)
    vocab = Vocabulary()
    report(0.0, "encoding tokens")
    enc = encode(corpus_or_token_lists, vocab, grow=True)
    report(0.2, f"{enc.n_tokens:,} tokens, {len(vocab):,} words")
    sub = lambda f, m: report(0.2 + 0.8 * f, m)
    return estimate(enc, vocab, order=order, discounts=discounts, progress=sub)


def build_lm_streamed(chunks: Iterable[Sequence[Sequence[str]]], order: int = 3, progress: Progress | None = None,
                      discounts: Sequence[float | Sequence[float]] | None = None) -> KneserNeyLM:
    """`build_lm` for a corpus read chunk by chunk (a workspace corpus' record batches): n-grams
    are counted per chunk and merged, so memory is the distinct n-grams and the model, not the
    corpus' id stream. The same model as `build_lm` on the whole corpus (same ids, same tables)."""
    report = progress or (lambda f, m: None)
    report(0.0, "counting n-grams")
    counts = NgramCounts.of(chunks, order, padded=True)
    if counts.tokens == 0:
        raise UserError("cannot train a language model on an empty corpus")
    report(0.5, f"{counts.tokens:,} tokens, {len(counts.vocab):,} words")
    return estimate_from_counts(counts, order, discounts, lambda f, m: report(0.5 + 0.5 * f, m))


def estimate_from_counts(counts: NgramCounts, order: int = 3, discounts: Sequence[float | Sequence[float]] | None = None,
                         progress: Progress | None = None) -> KneserNeyLM:
    """`estimate` from padded n-gram counts: each order's distinct n-grams in lexicographic id
    order are exactly `index_ngrams`' sorted keys (key = row of the prefix * V + last word), so
    the tables, and the model, are the same."""
    check_order(order)
    if discounts is not None and len(discounts) != order:
        raise UserError(f"give one discount per order: {order} values, got {len(discounts)}")
    report = progress or (lambda f, m: None)
    vocab = counts.vocab
    V = len(vocab)
    raw: list[np.ndarray] = [np.zeros(0), np.pad(counts.unigrams, (0, V - len(counts.unigrams)))]
    prefix: list[np.ndarray] = [np.zeros(0, np.int64)] * 2
    suffix: list[np.ndarray] = [np.zeros(0, np.int64)] * 2
    keys: list[np.ndarray | None] = [None, None]
    index: list[pd.Index | None] = [None, None]

    def row_of(cols: list[np.ndarray]) -> np.ndarray:
        """Row of each k-gram (k = len(cols)) in level k: word id, then key lookups level by level."""
        r = cols[0]
        for j in range(1, len(cols)):
            r = index[j + 1].get_indexer(r * V + cols[j])  # type: ignore[union-attr]
        return r

    for n in range(2, order + 1):
        level = counts.sorted_level(n)
        cols = [level[f"w{k}"].to_numpy().astype(np.int64) for k in range(n)]
        pre = row_of(cols[:-1])
        keys.append(pre * V + cols[-1])
        index.append(pd.Index(keys[n]))
        raw.append(level["c"].to_numpy().astype(np.int64))
        prefix.append(pre)
        suffix.append(row_of(cols[1:]))
    report(0.5, "n-grams counted")
    return _estimate_tables(vocab, order, raw, prefix, suffix, keys, discounts, report)


# --------------------------------------------------------------------------- ARPA reading


def load_arpa(path: str | Path, progress: Progress | None = None) -> KneserNeyLM:
    """Read an ARPA file (KenLM, SRILM or `write_arpa`). Malformed input raises a CorpusError
    naming the line. A missing <unk> gets log10 probability -100, as KenLM substitutes."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such ARPA file: {path}")
    header: dict[int, int] = {}
    sections: dict[int, tuple[list[str], list[float], list[float], list[int]]] = {}
    state = "start"
    current = 0
    lineno = 0
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                s = line.strip()
                if state == "start":
                    if s == "\\data\\":
                        state = "header"
                    elif s:
                        raise CorpusError(path, lineno, f"expected '\\data\\' to start an ARPA file, got {s[:40]!r}")
                elif not s:
                    continue
                elif s == "\\end\\":
                    state = "end"
                    break
                elif s.startswith("\\") and s.endswith("-grams:"):
                    current = _section_order(s, path, lineno, header)
                    if current in sections:
                        raise CorpusError(path, lineno, f"second \\{current}-grams: section")
                    sections[current] = ([], [], [], [])
                    state = "body"
                elif state == "header":
                    n, count = _header_line(s, path, lineno)
                    header[n] = count
                else:
                    _body_line(s, current, sections[current], path, lineno)
        except UnicodeDecodeError:
            raise CorpusError(path, lineno + 1, "not valid UTF-8") from None
    if state != "end":
        raise CorpusError(path, lineno, "missing '\\end\\' (truncated file?)" if sections else "no '\\data\\' header found")
    order = max(header) if header else 0
    if order == 0 or sorted(header) != list(range(1, order + 1)):
        raise CorpusError(path, None, "the \\data\\ header must list 'ngram 1=...' up to the model order")
    for n in range(1, order + 1):
        if n not in sections:
            raise CorpusError(path, None, f"\\{n}-grams: section missing")
        if len(sections[n][1]) != header[n]:
            raise CorpusError(path, sections[n][3][-1] if sections[n][3] else None,
                              f"header says {header[n]} {n}-grams, the section has {len(sections[n][1])}")
    lm = _assemble(path, order, sections)
    if progress is not None:
        progress(1.0, f"loaded {order}-gram ARPA model")
    return lm


def _section_order(s: str, path: Path, lineno: int, header: dict[int, int]) -> int:
    try:
        n = int(s[1:s.index("-")])
    except ValueError:
        raise CorpusError(path, lineno, f"bad section header {s!r}") from None
    if n not in header:
        raise CorpusError(path, lineno, f"section {s!r} is not announced in the \\data\\ header")
    return n


def _header_line(s: str, path: Path, lineno: int) -> tuple[int, int]:
    try:
        left, right = s.split("=")
        kw, n = left.split()
        if kw != "ngram":
            raise ValueError
        return int(n), int(right)
    except ValueError:
        raise CorpusError(path, lineno, f"expected 'ngram N=COUNT' in the \\data\\ header, got {s[:60]!r}") from None


def _body_line(s: str, n: int, section: tuple[list[str], list[float], list[float], list[int]], path: Path, lineno: int) -> None:
    parts = s.split()
    if len(parts) not in (n + 1, n + 2):
        raise CorpusError(path, lineno, f"expected 'LOG10PROB<TAB>{n} word(s)[<TAB>BACKOFF]' in the {n}-grams, got {len(parts)} fields")
    try:
        prob = float(parts[0])
        bow = float(parts[n + 1]) if len(parts) == n + 2 else 0.0
    except ValueError:
        raise CorpusError(path, lineno, f"not a number in {s[:60]!r}") from None
    if prob > 0 or bow != bow or prob != prob:
        raise CorpusError(path, lineno, f"log10 probability must be <= 0, got {parts[0]}")
    section[0].append(" ".join(parts[1:n + 1]))
    section[1].append(prob)
    section[2].append(bow)
    section[3].append(lineno)


def _assemble(path: Path, order: int, sections: dict[int, tuple[list[str], list[float], list[float], list[int]]]) -> KneserNeyLM:
    uni_words, uni_p, uni_b, uni_lines = sections[1]
    vocab = Vocabulary()
    for w, ln in zip(uni_words, uni_lines):
        if w in vocab.index and w not in (UNK, BOS, EOS):
            raise CorpusError(path, ln, f"unigram {w!r} listed twice")
        vocab.add(w)
    V = len(vocab)
    p1 = np.full(V, np.nan)
    b1 = np.zeros(V)
    ids = np.array([vocab.index[w] for w in uni_words], dtype=np.int64)
    p1[ids] = uni_p
    b1[ids] = uni_b
    if np.isnan(p1[UNK_ID]):
        p1[UNK_ID] = -100.0
    for special in (BOS_ID, EOS_ID):
        if np.isnan(p1[special]):
            raise CorpusError(path, None, f"the 1-grams lack {vocab.words[special]}")
    log_p: list[np.ndarray] = [np.zeros(0), p1]
    log_b: list[np.ndarray] = [np.zeros(0), b1]
    keys: list[np.ndarray | None] = [None, None]
    lm = KneserNeyLM(order, vocab, log_p, log_b, keys, arpa_path=path.resolve())
    for n in range(2, order + 1):
        words, probs, bows, lines = sections[n]
        index = vocab.index
        # Plain dict lookup, not Vocabulary.lookup: here "<s>" is a real context word.
        grams = np.array([index.get(w, -1) for g in words for w in g.split()], dtype=np.int64).reshape(len(words), n)
        bad = np.flatnonzero((grams < 0).any(axis=1))
        if len(bad):
            i = int(bad[0])
            raise CorpusError(path, lines[i], f"n-gram {words[i]!r} uses a word missing from the 1-grams")
        prefix_rows = _rows_of(lm, grams[:, :-1])
        missing = np.flatnonzero(prefix_rows < 0)
        if len(missing):
            i = int(missing[0])
            raise CorpusError(path, lines[i], f"the context of {words[i]!r} is not among the {n - 1}-grams")
        key = prefix_rows * V + grams[:, -1]
        order_idx = np.argsort(key, kind="stable")
        key = key[order_idx]
        dup = np.flatnonzero(key[1:] == key[:-1])
        if len(dup):
            i = int(order_idx[dup[0] + 1])
            raise CorpusError(path, lines[i], f"{n}-gram {words[i]!r} listed twice")
        keys.append(key)
        log_p.append(np.asarray(probs, dtype=np.float64)[order_idx])
        log_b.append(np.asarray(bows, dtype=np.float64)[order_idx])
    return lm


def _rows_of(lm: KneserNeyLM, grams: np.ndarray) -> np.ndarray:
    """Row of each (k)-gram (rows of word ids) in the model's level k, -1 where absent."""
    rows = grams[:, 0].copy()
    for k in range(2, grams.shape[1] + 1):
        ok = rows >= 0
        nxt = np.full(len(rows), -1, dtype=np.int64)
        if ok.any() and len(lm.keys[k]):
            nxt[ok] = lm._index(k).get_indexer(rows[ok] * lm.vocab_size + grams[ok, k - 1])
        rows = nxt
    return rows


def lm_from(ref: str | Path, order: int = 3, progress: Progress | None = None, workspace: str | Path | None = None) -> KneserNeyLM:
    """An ARPA file, or a corpus (file, or workspace name/role) to train on the fly: the CLI's
    `lm score --arpa` accepts both. A file is recognised as ARPA by its '\\data\\' header."""
    p = Path(ref)
    if p.is_file():
        if _looks_like_arpa(p):
            return load_arpa(p, progress)
        if p.suffix.lower() == ".arpa":  # scored as a corpus it would quietly give a perplexity of nothing
            raise UserError(f"{p} is named .arpa but has no '\\data\\' header: not an ARPA language model (a damaged "
                            "or cut file?); build it again with `python -m core lm build`")
        from core.data.corpus import read_corpus

        return build_lm(read_corpus(p), order=order, progress=progress)
    if p.suffix.lower() == ".arpa":
        raise UserError(f"no such ARPA file: {p}")
    from core.data.workspace import Workspace

    return build_lm(Workspace(workspace).resolve_corpus(str(ref)), order=order, progress=progress)


def _looks_like_arpa(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4096).decode("utf-8", errors="replace")
    return any(line.strip() == "\\data\\" for line in head.splitlines()[:20])
