"""What "the same sentence" and "nearly the same sentence" mean, in one place: the leakage check
(core.selection.leakage, at scale with MinHash LSH) and the demo generator (which keeps its TC free of DEV/TEST
look-alikes, by brute force over a few hundred sentences) read the same definitions.

>>> normalize("The  Beatles, in LONDON!")
'the beatles in london'
>>> near_duplicate("Ann plays the bass in Oslo", ["Ann plays the bass in Bergen"])
True
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from collections.abc import Iterable

THRESHOLD = 0.5  # verified Jaccard of word 2-gram sets at or above which two sentences are near duplicates
MIN_WORDS_NEAR = 3  # shorter sentences are compared exactly only (any two share too large a share of their few bigrams)


def normalize(text: str) -> str:
    """Case-folded words without punctuation (any Unicode P* category), one space apart."""
    return " ".join(text.casefold().translate(_punctuation()).split())


@functools.cache
def _punctuation() -> dict[int, str]:
    """Every punctuation code point mapped to a space, built once (about 0.3 s): `str.translate` replaces them in C,
    where testing each character's category in Python took 40 us a sentence, most of a leakage scan's or a
    selection's repeat count (core.selection.repeats) on millions of sentences."""
    return {cp: " " for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)).startswith("P")}


def shingles(normalized: str) -> set[str]:
    words = ["<s>", *normalized.split(), "</s>"]
    return {f"{a} {b}" for a, b in zip(words, words[1:])}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class NearIndex:
    """Normalised reference sentences indexed by their word pairs, so a check compares a sentence only with the
    references it shares a pair with (brute force over all of them cost the demo a second per 400 sentences)."""

    def __init__(self, texts: Iterable[str]):
        self.exact: set[str] = set()
        self.sets: list[set[str]] = []
        self.by_pair: dict[str, list[int]] = {}
        for text in texts:
            norm = normalize(text)
            self.exact.add(norm)
            if len(norm.split()) >= MIN_WORDS_NEAR:
                pairs = shingles(norm)
                for p in pairs:
                    self.by_pair.setdefault(p, []).append(len(self.sets))
                self.sets.append(pairs)


def near_duplicate(text: str, against: NearIndex | Iterable[str], threshold: float = THRESHOLD) -> bool:
    """`text` equals one of `against` after normalisation, or is a near duplicate of one (word-2-gram Jaccard >=
    threshold): the leakage check's verdict, without MinHash (exact, for a few thousand references)."""
    index = against if isinstance(against, NearIndex) else NearIndex(against)
    norm = normalize(text)
    if norm in index.exact:
        return True
    if len(norm.split()) < MIN_WORDS_NEAR:
        return False
    mine = shingles(norm)
    seen: set[int] = set()
    for p in mine:
        for k in index.by_pair.get(p, ()):
            if k not in seen:
                seen.add(k)
                if jaccard(mine, index.sets[k]) >= threshold:
                    return True
    return False
