"""Has evaluation text leaked into pretraining data? Exact and near duplicates between a pretraining corpus
(TC, a selection, DC: any size, streamed) and the labeled DEV / TEST.

- Exact: the same sentence after normalisation (case-folded, punctuation dropped, whitespace collapsed).
- Near: MinHash LSH (datasketch) over word 2-grams with sentence-boundary marks, candidates then verified by
  their true Jaccard similarity, so MinHash's estimation error never yields a false positive. Why 2-grams at
  0.5: one replaced word in a 6-word sentence keeps 5 of its 7 bigrams (Jaccard 5/9 = 0.56) and in a 12-word one
  11/15 = 0.73, so one-token edits are caught, while unrelated sentences share almost no bigrams. Sentences of
  fewer than 3 words are compared exactly only (any two share too large a share of their few bigrams).

DEV/TEST are small and indexed once; the pretraining corpus is read in record batches, so memory stays at the
index plus one batch for millions of sentences.

>>> normalize("The  Beatles, in LONDON!")
'the beatles in london'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.data.corpus import Corpus
from core.data.neardup import MIN_WORDS_NEAR, THRESHOLD, normalize, shingles
from core.data.neardup import jaccard as _jaccard
from core.data.selection_store import find_selection, selection_texts
from core.data.stream import CorpusStream, open_corpus_stream
from core.data.workspace import Workspace, resolve_corpus_ref
from core.errors import UserError
from core.progress import Progress, silent

NUM_PERM = 128  # MinHash permutations
RECALL = 0.99  # the LSH bands are chosen to find a pair at the threshold at least this often (lsh_bands)
MAX_EXAMPLES = 50


def lsh_bands(threshold: float, num_perm: int = NUM_PERM, recall: float = RECALL) -> tuple[int, int]:
    """(bands, rows) for MinHash LSH: the most rows per band (fewest false candidates) whose chance of making a pair
    at exactly `threshold` a candidate is at least `recall`. datasketch's own choice balances misses against false
    candidates, which at 0.5 found a pair at Jaccard 0.56 (one word replaced in six) only 3 times in 4; candidates
    are verified by their true Jaccard, so a lower bar costs time, never a false positive.

    >>> lsh_bands(0.5)
    (42, 3)
    >>> b, r = lsh_bands(0.5); round(1 - (1 - 0.5 ** r) ** b, 3)
    0.996
    """
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if 1 - (1 - threshold ** rows) ** bands >= recall:
            return bands, rows
    return num_perm, 1


def _squeezed(norm: str) -> str:
    """A normalised text without its spaces: "he didnt go" and CoNLL's "he did nt go" are one sentence."""
    return "".join(norm.split())


class LeakageIndex:
    """The labeled side: exact lookup by normalised text, and an LSH index of its shingle sets."""

    def __init__(self, corpora: dict[str, Sequence[str]], threshold: float = THRESHOLD):
        from datasketch import MinHash, MinHashLSH

        if not 0 < threshold <= 1:
            raise UserError(f"near-duplicate threshold must lie in (0, 1], got {threshold}")
        self.threshold = threshold
        self.exact: dict[str, list[tuple[str, int]]] = {}  # keyed by the normalised text without spaces (_squeezed)
        self.sets: dict[tuple[str, int], set[str]] = {}
        self.lsh = MinHashLSH(num_perm=NUM_PERM, params=lsh_bands(threshold))
        self._minhash = MinHash
        for name, texts in corpora.items():
            if not texts:
                raise UserError(f"{name} is empty: nothing to check against")
            keys, sets = [], []
            for j, text in enumerate(texts):
                norm = normalize(text)
                self.exact.setdefault(_squeezed(norm), []).append((name, j))
                if len(norm.split()) >= MIN_WORDS_NEAR:
                    keys.append((name, j))
                    sets.append(shingles(norm))
            for key, s, mh in zip(keys, sets, MinHash.bulk([[x.encode() for x in s] for s in sets], num_perm=NUM_PERM)):
                self.sets[key] = s
                self.lsh.insert(f"{key[0]}\t{key[1]}", mh)

    def matches(self, texts: Sequence[str]) -> list[list[tuple[str, int, float, bool]]]:
        """Per text: [(against, index, similarity, exact)], exact matches first, near ones above the threshold. The
        near search runs for every text, exact or not: a DC sentence that copies a DEV sentence exactly and a TEST one
        nearly must be listed under both (it was listed under DEV alone, and kept where DEV text was allowed)."""
        norms = [normalize(t) for t in texts]
        out: list[list[tuple[str, int, float, bool]]] = [
            [(n, j, 1.0, True) for n, j in self.exact.get(_squeezed(norm), [])] for norm in norms]
        todo = [i for i, norm in enumerate(norms) if len(norm.split()) >= MIN_WORDS_NEAR]
        sets = [shingles(norms[i]) for i in todo]
        hashes = self._minhash.bulk([[x.encode() for x in s] for s in sets], num_perm=NUM_PERM) if todo else []
        for i, s, mh in zip(todo, sets, hashes):
            exact = {(n, j) for n, j, _, _ in out[i]}
            for key in self.lsh.query(mh):
                name, j = key.split("\t")
                if (name, int(j)) in exact:
                    continue
                sim = _jaccard(s, self.sets[(name, int(j))])
                if sim >= self.threshold:
                    out[i].append((name, int(j), sim, False))
        return out


@dataclass
class LeakageReport:
    """A corpus's exact and near duplicates of labeled corpora (DEV, TEST), counted overall and per labeled corpus."""

    sentences: int
    exact: int
    near: int
    threshold: float
    per_against: dict[str, dict[str, int]]  # labeled corpus -> {"exact": n, "near": n}
    examples: list[dict[str, Any]]  # {corpus_index, against, index, similarity, text}
    leaked_indices: list[int]
    indices_per_against: dict[str, list[int]]  # labeled corpus -> the rows duplicating one of its sentences
    corpus: str = ""

    def rows(self, against: str) -> set[int]:
        """The rows duplicating a sentence of `against` (none when it named no such corpus)."""
        return set(self.indices_per_against[against]) if against in self.indices_per_against else set()

    def counts(self, against: str) -> dict[str, int] | None:
        """{"exact", "near"} duplicates of `against`; None when there are none."""
        return self.per_against[against] if against in self.per_against else None

    def example(self, against: str) -> dict[str, Any] | None:
        return next((e for e in self.examples if e["against"] == against), None)

    def to_dict(self, indices: bool = True) -> dict[str, Any]:
        """Every field; without `indices` the row lists are left out (what the CLI and a page show)."""
        out = dataclasses.asdict(self)
        if not indices:
            del out["leaked_indices"], out["indices_per_against"]
        return out

    def stored(self) -> dict[str, Any]:
        """What an experiment's result keeps of it."""
        return {"exact": self.exact, "near": self.near, "threshold": self.threshold, "per_against": self.per_against}


def scan(corpus: Corpus | CorpusStream, index: LeakageIndex, progress: Progress | None = None,
         max_examples: int = MAX_EXAMPLES, name: str = "") -> LeakageReport:
    """Exact and near duplicates of `index`'s corpora in `corpus`, read batch by batch."""
    stream = CorpusStream.of(corpus)
    progress = progress or silent
    n, done = len(stream), 0
    exact = near = 0
    leaked: list[int] = []
    per: dict[str, dict[str, int]] = {}
    by: dict[str, list[int]] = {}  # per labeled corpus, the rows that duplicate one of its sentences
    examples: list[dict[str, Any]] = []
    for texts in stream.text_batches():
        for k, found in enumerate(index.matches(texts)):
            if not found:
                continue
            i = done + k
            leaked.append(i)
            is_exact = found[0][3]
            exact += is_exact
            near += not is_exact
            for against in dict.fromkeys(f[0] for f in found):  # exact or near for each labeled corpus on its own
                per.setdefault(against, {"exact": 0, "near": 0})[
                    "exact" if any(f[3] for f in found if f[0] == against) else "near"] += 1
                by.setdefault(against, []).append(i)
            if len(examples) < max_examples:
                against, j, sim, _ = max(found, key=lambda f: f[2])
                examples.append({"corpus_index": i, "against": against, "index": j, "similarity": round(sim, 4),
                                 "text": texts[k]})
        done += len(texts)
        progress(done / max(n, 1), f"{done:,} of {n:,} sentences checked, {exact + near:,} leaked")
    return LeakageReport(sentences=n, exact=exact, near=near, threshold=index.threshold, per_against=per,
                         examples=examples, leaked_indices=leaked, indices_per_against=by, corpus=name)


def labeled_texts(ws: Workspace | None, refs: Iterable[str]) -> dict[str, list[str]]:
    """DEV/TEST (or any labeled corpora) by reference, as texts; an unlabeled one is refused."""
    out = {}
    for ref in refs:
        resolved = resolve_corpus_ref(ref, ws)
        corpus = resolved.load()
        if not corpus.labeled:
            raise UserError(f"{resolved.name}: not a labeled corpus; leakage is checked against labeled DEV/TEST")
        out[str(ref)] = corpus.texts()
    return out


def check_leakage(ws: Workspace, corpus_ref: str, against: Sequence[str], threshold: float = THRESHOLD,
                  progress: Progress | None = None, max_examples: int = MAX_EXAMPLES) -> LeakageReport:
    """`python -m core leakage` and the Selection page's panel."""
    if not against:
        raise UserError("name the labeled corpora to check against (e.g. dev,test)")
    index = LeakageIndex(labeled_texts(ws, against), threshold)
    if find_selection(ws, corpus_ref) is not None:  # a saved selection (SC): its selected sentences
        stream = CorpusStream.of(Corpus(tokens=[t.split() for t in selection_texts(ws, corpus_ref)], name=str(corpus_ref)))
    else:
        stream = open_corpus_stream(ws, corpus_ref)
    if len(stream) == 0:
        raise UserError(f"{corpus_ref}: the corpus is empty")
    return scan(stream, index, progress, max_examples, name=str(corpus_ref))


def texts_leakage(texts: Sequence[str], against: dict[str, Sequence[str]], threshold: float = THRESHOLD,
                  progress: Progress | None = None) -> LeakageReport:
    """The same check for sentences in memory (an experiment's TC or SC before MLM)."""
    return scan(Corpus(tokens=[t.split() for t in texts]), LeakageIndex(dict(against), threshold), progress)
