"""Entity coverage (core.selection.coverage): counts on a hand-made corpus, the refusals, the CLI and the page."""

from __future__ import annotations

import json

import pytest

from core.data.corpus import Corpus
from core.errors import UserError
from core.selection.coverage import entity_coverage, entity_mentions


def labeled() -> Corpus:
    # mentions: PER(Ann Lee), ORG(Acme), PER(Bob), LOC(Paris) -> words ann, lee, acme, bob, paris
    return Corpus(tokens=[["Ann", "Lee", "joined", "Acme"], ["Bob", "left", "Paris"]],
                  tags=[["B-PER", "I-PER", "O", "B-ORG"], ["B-PER", "O", "B-LOC"]], name="gold")


def test_coverage_counts_words_mentions_and_the_gap_a_source_closes():
    tc = [["ann", "met", "bob"]]  # has ann, bob: 2 of 5 words; mentions fully covered: Bob only
    sc = [["LEE", "visited", "Paris"], ["nothing", "here"]]  # adds lee, paris (case-folded)
    cov = entity_coverage(labeled(), tc, {"sc": sc})
    assert (cov.mentions, cov.entity_words, cov.missing_from_tc) == (4, 5, 3)
    rows = {r.source: r for r in cov.rows}
    assert list(rows) == ["TC", "sc", "TC + sc"]
    assert rows["TC"].words == pytest.approx(2 / 5) and rows["TC"].mentions == pytest.approx(1 / 4)
    assert rows["TC"].gap_closed is None and rows["TC"].sentences == 1
    assert rows["sc"].words == pytest.approx(2 / 5) and rows["sc"].mentions == pytest.approx(1 / 4)  # Paris
    assert rows["sc"].gap_closed == pytest.approx(2 / 3) and rows["sc"].sentences == 2
    assert rows["TC + sc"].words == pytest.approx(4 / 5) and rows["TC + sc"].mentions == pytest.approx(3 / 4)
    assert rows["TC + sc"].sentences == 3
    assert rows["TC + sc"].per_type == pytest.approx({"LOC": 1.0, "ORG": 0.0, "PER": 1.0})
    assert cov.added_examples["sc"] == ["lee", "paris"]
    assert cov.frame()["TC's gap closed %"].tolist()[1:] == pytest.approx([200 / 3, 200 / 3])


def test_coverage_reads_sources_once_so_streams_work():
    sc = ([w] for w in ["acme", "lee"])  # a generator: read exactly once
    cov = entity_coverage(labeled(), iter([["paris"]]), {"stream": sc})
    assert {r.source: r.words for r in cov.rows}["TC + stream"] == pytest.approx(3 / 5)


def test_coverage_refuses_an_unlabeled_or_entity_free_corpus():
    with pytest.raises(UserError, match="no NER tags"):
        entity_mentions(Corpus(tokens=[["a", "b"]], name="raw"))
    empty = Corpus(tokens=[["a", "b"]], tags=[["O", "O"]], name="plain")
    with pytest.raises(UserError, match="no entity mention"):
        entity_coverage(empty, [["a"]], {})


@pytest.fixture()
def demo_with_selections(tmp_path):
    from core.data.demo import write_demo_workspace
    from core.selection.strategies import select

    ws = write_demo_workspace(tmp_path / "ws")
    names = {"tc": ws.corpus_for_role("tc"), "dc": ws.corpus_for_role("dc")}
    tc, dc = ws.load_corpus(names["tc"]), ws.load_corpus(names["dc"])
    keys = [select(tc, dc, s, 0.05, workspace=ws, names=names).key for s in ("dsir", "random")]
    return ws, keys


def test_coverage_cli_on_the_demo(demo_with_selections, capsys):
    from core.cli import main

    ws, (dsir, rnd) = demo_with_selections
    args = ["--workspace", str(ws.root), "coverage", "--labeled", "test", "--tc", "tc"]
    assert main([*args, "--selection", dsir[:8], "--selection", rnd, "--source", "dc", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["source"]: r for r in out["rows"]}
    assert out["missing_from_tc"] > 0 and len(rows) == 1 + 2 * 3
    dsir_row = next(r for name, r in rows.items() if name.startswith("dsir"))
    rnd_row = next(r for name, r in rows.items() if name.startswith("random"))
    # the demo's DC holds the target domain's entity words; DSIR picks in-domain sentences, random mostly others
    assert dsir_row["gap_closed"] > rnd_row["gap_closed"]
    assert rows["tc + dc"]["words"] == 1.0 and rows["dc"]["sentences"] == ws.corpus_info(ws.corpus_for_role("dc")).sentences
    assert main([*args, "--selection", dsir]) == 0
    text = capsys.readouterr().out
    assert "distinct entity words" in text and "adds e.g.:" in text
    assert main([*args, "--selection", "0123456789"]) == 2
    assert "no saved selection '0123456789'" in capsys.readouterr().err
    assert main(["--workspace", str(ws.root), "coverage", "--labeled", "tc", "--tc", "tc"]) == 2
    assert "has no NER tags" in capsys.readouterr().err


def test_selection_page_shows_entity_coverage(demo_with_selections, monkeypatch):
    from tests.apptest import open_app

    ws, _keys = demo_with_selections
    at = open_app(ws.root, monkeypatch, "views/selection.py")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "TC's gap closed %" in d.value.columns)
    assert len(table) == 3 and table["entity words %"].iloc[2] >= table["entity words %"].iloc[0]
    assert any("distinct entity words" in m.value for m in at.markdown)
