"""The CrossNER study protocol (issues 11 and 42): disjoint TC, DC, LC, DEV and TEST for one target domain.

CrossNER ships labeled splits only, so the unlabeled corpora are made from them: the target's dev
split is cut into two halves by a fixed seed;

    TC   = train, tags dropped, less sentences that (nearly) duplicate a DEV or TEST one   (the task-level corpus)
    LC   = train                                (labeled training set)
    DEV  = dev half A                           (early stopping and the checkpoint pick)
    DC   = dev half B, tags dropped, + every sentence of the four other domains
    TEST = test

DC then holds a few hundred in-domain sentences among about five thousand, as the seed paper's DC
holds in-domain text beyond TC, and no DEV or TEST sentence reaches TC or DC (DC sentences whose
text equals a TEST, DEV or TC sentence are dropped here; the experiment's MLM guard drops near duplicates too).
Every sentence carries a `domain` field, so a selection's domain precision (share of selected DC sentences from the
target; core.selection.strategies) can be scored.

The first protocol (PROTOCOLS["v1"], results in docs/results before issue 42) put dev half A into TC as well: TAPT
and every selection row pretrained on the sentences that drove early stopping and the checkpoint pick.
Used by scripts/crossner_study.py and bench/bench_training.py; `demo_protocol` gives the same
shape from the generated demo when CrossNER is absent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from core.data.corpus import Corpus, read_corpus
from core.data.neardup import NearIndex, near_duplicate
from core.errors import UserError

DOMAINS = ("ai", "literature", "music", "politics", "science")
SPLIT_SEED = 0  # the fixed seed of the dev halves: changing it changes every corpus of the study
ROLES = ("tc", "dc", "lc", "dev", "test")
PROTOCOL = "v2"  # the one crossner_protocol builds
PROTOCOLS = {  # how each protocol's result JSONs were made: a table or README says which one a number comes from
    "v1": "TC = train + dev half A (untagged); LC = train; DEV = dev half A; DC = dev half B (untagged) + all sentences "
          "of the other four domains; TEST = test. DEV text is in TC: every pretraining row saw DEV.",
    "v2": "TC = train (untagged) less its exact and near duplicates of DEV and TEST sentences (CrossNER's splits share a "
          "few); LC = train; DEV = dev half A; DC = dev half B (untagged) + all sentences of the other "
          "four domains, less any sentence equal to a TC, DEV or TEST one; TEST = test. No DEV or TEST text in an MLM corpus.",
}


@dataclass
class StudyCorpora:
    tc: Corpus
    dc: Corpus
    lc: Corpus
    dev: Corpus
    test: Corpus
    domain: str
    source: str  # "CrossNER" or "demo"

    def by_role(self) -> dict[str, Corpus]:
        return {r: getattr(self, r) for r in ROLES}

    def sizes(self) -> dict[str, int]:
        return {r: len(c) for r, c in self.by_role().items()}


def _tagged(corpus: Corpus, domain: str, name: str) -> Corpus:
    return Corpus(corpus.tokens, corpus.tags, {**corpus.fields, "domain": [domain] * len(corpus)}, name=name)


def dev_halves(n: int, seed: int = SPLIT_SEED) -> tuple[list[int], list[int]]:
    """Indices of dev half A and half B (A gets the extra sentence of an odd count), sorted.

    >>> dev_halves(5, seed=0)
    ([0, 1, 2], [3, 4])
    """
    order = list(range(n))
    random.Random(seed).shuffle(order)
    cut = (n + 1) // 2
    return sorted(order[:cut]), sorted(order[cut:])


def crossner_protocol(root: str | Path, domain: str, seed: int = SPLIT_SEED) -> StudyCorpora:
    """The study corpora of `domain` from a CrossNER folder (one sub-folder per domain with train/dev/test.txt)."""
    root = Path(root)
    if domain not in DOMAINS:
        raise UserError(f"unknown CrossNER domain {domain!r}: expected one of {', '.join(DOMAINS)}")
    missing = [str(root / d / s) for d in DOMAINS for s in ("train.txt", "dev.txt", "test.txt") if not (root / d / s).exists()]
    if missing:
        raise UserError(f"CrossNER files missing: {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
    splits = {d: {s: read_corpus(root / d / f"{s}.txt") for s in ("train", "dev", "test")} for d in DOMAINS}
    train, dev, test = (_tagged(splits[domain][s], domain, f"{domain}-{s}") for s in ("train", "dev", "test"))
    half_a, half_b = dev_halves(len(dev), seed)
    dev_a, dev_b = dev.subset(half_a), dev.subset(half_b)
    held_out = NearIndex([*dev_a.texts(), *test.texts()])
    tc = train.unlabeled().subset([i for i, t in enumerate(train.texts()) if not near_duplicate(t, held_out)])
    tc.name = f"{domain}-tc"
    others = [_tagged(splits[d][s], d, f"{d}-{s}").unlabeled() for d in DOMAINS if d != domain for s in ("train", "dev", "test")]
    dc = Corpus.concat([dev_b.unlabeled(), *others], name=f"{domain}-dc")
    held = set(tc.texts()) | set(test.texts()) | set(dev_a.texts())
    dc = dc.subset([i for i, t in enumerate(dc.texts()) if t not in held])
    dc.name = f"{domain}-dc"
    return StudyCorpora(tc=tc, dc=dc, lc=train.subset(range(len(train))), dev=_named(dev_a, f"{domain}-dev"), test=test,
                        domain=domain, source="CrossNER")


def _named(corpus: Corpus, name: str) -> Corpus:
    corpus.name = name
    return corpus


def demo_protocol(domain: str = "music", seed: int = 13) -> StudyCorpora:
    """The same roles from the generated demo (core.data.demo), CrossNER-sized: for machines without ../shared/data."""
    from core.data.demo import generate_demo

    demo = generate_demo(seed=seed, target_domain=domain, dc_size=5000, tc_size=300, lc_size=100, dev_size=190, test_size=450)
    return StudyCorpora(tc=demo.tc.unlabeled(), dc=demo.dc, lc=demo.lc, dev=demo.dev, test=demo.test, domain=domain, source="demo")


__all__ = ["DOMAINS", "PROTOCOL", "PROTOCOLS", "SPLIT_SEED", "StudyCorpora", "crossner_protocol", "demo_protocol", "dev_halves"]
