"""A toy labeled corpus for NER tests, tagged by rule from the shared toy sentences."""

from __future__ import annotations

import pytest

from core.data.corpus import Corpus
from tests.conftest import TOY_SENTENCES

PERSON_FIRST = {"John", "Mary", "Marie"}
PERSON_REST = {"Smith", "Jones", "Curie"}
PLACES = {"London", "Paris", "Liverpool", "France", "Germany", "Berlin"}


def _tag(words: list[str]) -> list[str]:
    tags = []
    for w in words:
        if w in PERSON_FIRST:
            tags.append("B-PER")
        elif w in PERSON_REST:
            tags.append("I-PER")
        elif w in PLACES:
            tags.append("B-LOC")
        else:
            tags.append("O")
    return tags


def toy_ner_corpus(name: str = "toy") -> Corpus:
    tokens = [s.split() for s in TOY_SENTENCES]
    return Corpus(tokens=tokens, tags=[_tag(t) for t in tokens], name=name)


def write_toy_conll(path) -> str:
    from core.data.corpus import write_corpus

    write_corpus(toy_ner_corpus(), path, fmt="conll")
    return str(path)


@pytest.fixture
def single_thread_torch(monkeypatch):
    """Tiny models train faster on one thread (per-op threading overhead dominates), and a
    2-core machine shared with other work makes torch's 2 threads spin: ~10x slower measured."""
    import torch

    before = torch.get_num_threads()
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    yield
    torch.set_num_threads(before)
