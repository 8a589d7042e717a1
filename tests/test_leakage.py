"""Leakage check (core.selection.leakage): planted exact and one-token-edited DEV/TEST sentences in a DC are
found with their indices, disjoint text raises nothing, and the CLI prints the issue's JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli import main
from core.data.corpus import Corpus
from core.data.workspace import Workspace
from core.errors import UserError
from core.selection.leakage import check_leakage, normalize, texts_leakage

TEST = ["Abba played at the Royal Albert Hall in London last spring .",
        "The committee met in Geneva to discuss the new treaty on fishing rights .",
        "Marie Curie won the Nobel Prize in Physics together with Pierre Curie ."]
DEV = ["Radiohead released OK Computer in the summer of 1997 ."]
DISJOINT = [f"Sentence number {i} talks about {w} and {v} near the river bank today ." for i, (w, v) in
            enumerate(zip(["apples", "rockets", "violins", "tables", "clouds", "harbours"],
                          ["pears", "planets", "drums", "chairs", "winds", "ships"]))]


def _conll(path, sentences):
    path.write_text("\n\n".join("\n".join(f"{w} O" for w in s.split()) for s in sentences) + "\n")
    return path


@pytest.fixture
def ws(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.import_corpus(_conll(tmp_path / "test.conll", TEST), role="test", name="test")
    ws.import_corpus(_conll(tmp_path / "dev.conll", DEV), role="dev", name="dev")
    dc = [*DISJOINT[:3],
          "ABBA played at the Royal Albert Hall, in London last spring!",  # 3: exact after normalisation
          *DISJOINT[3:],
          "The committee met in Geneva to discuss the old treaty on fishing rights .",  # 7: one token edited
          "Radiohead released OK Computer in the summer of 1997 ."]  # 8: a DEV sentence
    (tmp_path / "dc.txt").write_text("\n".join(dc) + "\n")
    ws.import_corpus(tmp_path / "dc.txt", role="dc", name="dc")
    return ws


def test_planted_duplicates_are_found_with_their_indices(ws):
    report = check_leakage(ws, "dc", ["dev", "test"])
    assert (report.exact, report.near) == (2, 1) and sorted(report.leaked_indices) == [3, 7, 8]
    found = {e["corpus_index"]: (e["against"], e["index"], e["similarity"]) for e in report.examples}
    assert found[3] == ("test", 0, 1.0) and found[8] == ("dev", 0, 1.0)
    assert found[7][:2] == ("test", 1) and report.threshold <= found[7][2] < 1.0
    assert report.per_against == {"test": {"exact": 1, "near": 1}, "dev": {"exact": 1, "near": 0}}


def test_disjoint_text_raises_nothing():
    report = texts_leakage(DISJOINT, {"test": TEST, "dev": DEV})
    assert (report.exact, report.near, report.leaked_indices) == (0, 0, [])


def test_a_streamed_corpus_is_read_in_batches(ws, monkeypatch):
    from core.data import stream

    monkeypatch.setattr(stream, "BATCH", 2)
    report = check_leakage(ws, "dc", ["test"])
    assert sorted(report.leaked_indices) == [3, 7]


def test_normalisation_and_refusals(ws):
    assert normalize("Abba  played, AT the Hall!") == normalize("abba played at the hall")
    with pytest.raises(UserError, match="not a labeled corpus"):
        check_leakage(ws, "test", ["dc"])
    with pytest.raises(UserError, match="threshold"):
        check_leakage(ws, "dc", ["test"], threshold=0)
    assert texts_leakage(["a b"], {"t": ["a b"]}).exact == 1  # short sentences: exact only
    assert Corpus(tokens=[["x"]]).texts() == ["x"]


def test_cli_prints_the_json(ws, capsys):
    capsys.readouterr()
    assert main(["--workspace", str(ws.root), "leakage", "--corpus", "dc", "--against", "dev,test", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"exact", "near", "threshold", "examples"} <= set(out) and out["exact"] == 2 and out["near"] == 1
    assert {"corpus_index", "against", "index", "similarity"} <= set(out["examples"][0])
    assert out["corpus"] == "dc"  # the scanned corpus, not the last DEV/TEST corpus a leak matched
    assert main(["--workspace", str(ws.root), "leakage", "--corpus", "nope", "--against", "test"]) == 2


def test_one_word_edits_of_short_sentences_are_found_nearly_always():
    """Found in review: the LSH index was built with datasketch's balanced band choice at the threshold itself, which
    made a pair at Jaccard 0.56 (one word replaced in a 6-word sentence, the case the module promises) a candidate
    only about 3 times in 4. The bands now give 0.99 recall at the threshold. 300 seeded 6-word sentences, the third
    word replaced in each: all but a handful found (the chance of a miss at 0.56 is under 1 in 100)."""
    import random

    rng = random.Random(7)
    words = [f"w{i}" for i in range(5000)]
    labeled = [" ".join(rng.sample(words, 6)) for _ in range(300)]
    edited = [" ".join([*s.split()[:2], "zzz", *s.split()[3:]]) for s in labeled]
    report = texts_leakage(edited, {"dev": labeled})
    assert report.near >= 294, report.near


def test_an_exact_copy_of_dev_is_also_a_near_copy_of_test():
    """Found in review: a sentence matched exactly against DEV skipped the near search, so its near copy in TEST was
    never listed (and stayed in DC where DEV text was allowed). CoNLL's split contractions match the raw text."""
    dev = ["Ann plays the bass in Oslo with her band tonight"]
    test = ["Ann plays the bass in Bergen with her band tonight"]
    labeled = {"dev": dev, "test": [*test, "He didn't go to Paris, she said."]}
    report = texts_leakage([dev[0], "He did n't go to Paris , she said ."], labeled)
    assert report.rows("dev") == {0} and report.rows("test") == {0, 1}
    assert report.per_against == {"dev": {"exact": 1, "near": 0}, "test": {"exact": 1, "near": 1}}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_normalize_by_translate_is_the_per_character_definition(text):
    """normalize drops punctuation through a code-point table (10x faster on a leakage scan); the definition it must
    keep: every character whose Unicode category is P* becomes a space, after case folding."""
    import unicodedata

    kept = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text.casefold())
    assert normalize(text) == " ".join(kept.split())
