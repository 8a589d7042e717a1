"""Leakage check (core.selection.leakage): planted exact and one-token-edited DEV/TEST sentences in a DC are
found with their indices, disjoint text raises nothing, and the CLI prints the issue's JSON."""

from __future__ import annotations

import json

import pytest

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
    assert main(["--workspace", str(ws.root), "leakage", "--corpus", "nope", "--against", "test"]) == 2
