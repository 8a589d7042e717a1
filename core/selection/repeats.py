"""Copies of one sentence in a selection. Crawled domain corpora repeat boilerplate and quoted sentences, and every
strategy scores a copy exactly as its original, so copies are ranked side by side and take budget that distinct text
would fill. On the CrossNER studies' DC about 1-2% of sentences are extra copies (ai 87 of 4,621); DSIR at |TC| picked
3 repeats of 91 on music, none elsewhere.

Exact repeats only, after core.data.neardup.normalize (case, punctuation and spacing folded): near duplicates are a
judgement (core.selection.leakage finds them against DEV/TEST); an exact copy adds nothing to MLM but weight.

>>> from core.data.corpus import Corpus
>>> dc = Corpus(tokens=[["a", "b"], ["A", "b", "!"], ["c"], ["d"]])
>>> first_copies(dc, [1, 0, 2, 3], 2)
([1, 2], 1)
>>> repeats_in(dc, [0, 1, 2])
1
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from core.data.corpus import Corpus
from core.data.neardup import normalize
from core.data.stream import CorpusStream

BLOCK = 4096  # ranked rows read at a time while filling the budget


def _key(text: str) -> bytes:
    return hashlib.blake2b(normalize(text).encode("utf-8"), digest_size=12).digest()  # 1M selected: ~100 MB of keys


def first_copies(dc: Corpus | CorpusStream, order: Sequence[int] | np.ndarray, count: int) -> tuple[list[int], int]:
    """The first `count` rows of `order` whose text no earlier row of it has, and how many repeats were passed over."""
    stream = CorpusStream.of(dc)
    seen: set[bytes] = set()
    kept: list[int] = []
    passed = pos = 0
    order = np.asarray(order, dtype=np.int64)
    while len(kept) < count and pos < len(order):
        block = order[pos:pos + max(BLOCK, 2 * (count - len(kept)))]
        pos += len(block)
        for i, text in zip(block.tolist(), stream.take(block).texts()):
            key = _key(text)
            if key in seen:
                passed += 1
                continue
            seen.add(key)
            kept.append(i)
            if len(kept) == count:
                break
    return kept, passed


def repeats_in(dc: Corpus | CorpusStream, indices: Sequence[int] | np.ndarray) -> int:
    """How many of the rows at `indices` repeat the text of one before them."""
    texts = CorpusStream.of(dc).take(np.asarray(indices, dtype=np.int64)).texts() if len(indices) else []
    return len(texts) - len({_key(t) for t in texts})
