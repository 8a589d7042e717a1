"""Copies of one sentence in a selection. Crawled domain corpora repeat boilerplate and quoted sentences, and every
strategy scores a copy exactly as its original, so copies are ranked side by side and take budget that distinct text
would fill. On the CrossNER studies' DC about 1-2% of sentences are extra copies (ai 87 of 4,621); DSIR at |TC| picked
3 repeats of 91 on music, none elsewhere.

Exact repeats only, after core.data.neardup.normalize (case, punctuation and spacing folded; a sentence that folds
to nothing keeps its own text): near duplicates are a judgement (core.selection.leakage finds them against DEV/TEST);
an exact copy adds nothing to MLM but weight. Each row becomes a 64-bit key, read in index order a block at a time, so
memory stays at 8 bytes a row plus one block of text whatever the budget, and a streamed DC is read once.

>>> from core.data.corpus import Corpus
>>> dc = Corpus(tokens=[["a", "b"], ["A", "b", "!"], ["c"], ["d"], ["."], ["-"]])
>>> first_copies(dc, [1, 0, 2, 3], 2)
([1, 2], 1)
>>> repeats_in(dc, [0, 1, 2, 4, 5])  # "." and "-" fold to nothing: two sentences, not a copy
1
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from core.data.corpus import Corpus
from core.data.neardup import normalize
from core.data.stream import CorpusStream

BLOCK = 65_536  # rows whose text is read at a time


def _key(text: str) -> int:
    folded = normalize(text) or text
    return int.from_bytes(hashlib.blake2b(folded.encode("utf-8"), digest_size=8).digest(), "little")


def row_keys(dc: Corpus | CorpusStream, rows: Sequence[int] | np.ndarray) -> np.ndarray:
    """The key of each row's text (uint64, aligned with `rows`), rows read in index order: a block of sorted rows
    touches few of a streamed DC's row groups, where rank order would read every group once a block."""
    stream = CorpusStream.of(dc)
    rows = np.asarray(rows, dtype=np.int64)
    keys = np.empty(len(rows), dtype=np.uint64)
    by_index = np.argsort(rows, kind="stable")
    for start in range(0, len(rows), BLOCK):
        part = by_index[start:start + BLOCK]
        keys[part] = np.fromiter((_key(t) for t in stream.take(rows[part]).texts()), dtype=np.uint64, count=len(part))
    return keys


def first_copies(dc: Corpus | CorpusStream, order: Sequence[int] | np.ndarray, count: int) -> tuple[list[int], int]:
    """The first `count` rows of `order` whose text no earlier row of it has, and how many repeats were passed over
    to find them (every repeat in `order` when it holds fewer than `count` distinct texts)."""
    order = np.asarray(order, dtype=np.int64)
    seen = min(len(order), max(2 * count, count + BLOCK))
    keys = row_keys(dc, order[:seen])
    while True:
        _, first = np.unique(keys, return_index=True)  # each key's first position
        kept = np.sort(first)
        if len(kept) >= count or seen == len(order):
            break
        more = min(len(order), 2 * seen)  # too many repeats among the first ranked: read further down
        keys, seen = np.concatenate([keys, row_keys(dc, order[seen:more])]), more
    if len(kept) < count:
        return order[kept].tolist(), seen - len(kept)
    kept = kept[:count]
    return order[kept].tolist(), int(kept[-1]) + 1 - count if count else 0


def repeats_in(dc: Corpus | CorpusStream, indices: Sequence[int] | np.ndarray) -> int:
    """How many of the rows at `indices` repeat the text of another of them."""
    return len(indices) - len(np.unique(row_keys(dc, indices)))
