"""What "the same sentence" and "nearly the same sentence" mean, in one place: the leakage check
(core.selection.leakage, at scale with MinHash LSH) and the demo generator (which keeps its TC free of DEV/TEST
look-alikes, by brute force over a few hundred sentences) read the same definitions.

>>> normalize("The  Beatles, in LONDON!")
'the beatles in london'
>>> near_duplicate("Ann plays the bass in Oslo", ["ann plays the bass in bergen"])
True
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

THRESHOLD = 0.5  # verified Jaccard of word 2-gram sets at or above which two sentences are near duplicates
MIN_WORDS_NEAR = 3  # shorter sentences are compared exactly only (any two share too large a share of their few bigrams)


def normalize(text: str) -> str:
    """Case-folded words without punctuation, one space apart."""
    kept = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text.casefold())
    return " ".join(kept.split())


def shingles(normalized: str) -> set[str]:
    words = ["<s>", *normalized.split(), "</s>"]
    return {f"{a} {b}" for a, b in zip(words, words[1:])}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def near_duplicate(text: str, against_normalized: Iterable[str], threshold: float = THRESHOLD) -> bool:
    """`text` equals one of `against_normalized` (already normalised) after normalisation, or is a near duplicate of
    one (word-2-gram Jaccard >= threshold): the leakage check's verdict, by brute force."""
    norm = normalize(text)
    near = len(norm.split()) >= MIN_WORDS_NEAR
    mine = shingles(norm) if near else set()
    for other in against_normalized:
        if other == norm or (near and len(other.split()) >= MIN_WORDS_NEAR and jaccard(mine, shingles(other)) >= threshold):
            return True
    return False
