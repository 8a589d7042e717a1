"""Review store: persistence across restarts, optimistic concurrency, export round trips."""

from __future__ import annotations

import threading

import pytest

from core.data.corpus import read_corpus
from core.data.tags import Span
from core.data.workspace import Workspace
from core.errors import UserError
from core.review.predictions import export_bytes, save_reviewed_corpus, spans_from_rows
from core.review.store import ReviewConflict, ReviewStore, check_spans

TOKS_A = ["John", "Smith", "plays", "in", "New", "York", "."]
TOKS_B = ["Paris", "is", "nice", "."]
TOKS_C = ["Nothing", "here"]


def test_review_state_survives_a_restart(tmp_path):
    store = ReviewStore(Workspace(tmp_path), "demo-dc@abc")
    store.save(3, "accepted", TOKS_A, [Span(0, 2, "PER"), Span(4, 6, "LOC")], expected_version=0, reviewer="ann")
    store.save(5, "rejected", TOKS_B, [], expected_version=0)
    # a new process: new Workspace and ReviewStore objects on the same folder
    again = ReviewStore(Workspace(tmp_path), "demo-dc@abc")
    items = again.items()
    assert set(items) == {3, 5}
    assert items[3].status == "accepted" and items[3].version == 1 and items[3].reviewer == "ann"
    assert items[3].tags() == ["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC", "O"]
    assert items[5].status == "rejected"
    assert again.counts()["accepted"] == 1 and again.counts()["rejected"] == 1
    assert ReviewStore(Workspace(tmp_path), "other@def").items() == {}  # review sets are separate


def test_concurrent_edit_is_detected_not_silently_overwritten(tmp_path):
    ws = Workspace(tmp_path)
    alice, bob = ReviewStore(ws, "s"), ReviewStore(ws, "s")
    seen_by_both = 0  # both opened the unreviewed sentence
    alice.save(1, "corrected", TOKS_B, [Span(0, 1, "LOC")], expected_version=seen_by_both, reviewer="alice")
    with pytest.raises(ReviewConflict) as info:
        bob.save(1, "rejected", TOKS_B, [], expected_version=seen_by_both, reviewer="bob")
    conflict = info.value
    assert conflict.current.status == "corrected" and conflict.current.reviewer == "alice" and conflict.current.version == 1
    assert "version 1" in str(conflict)
    assert bob.get(1).status == "corrected"  # the earlier save is intact
    # bob reloads (sees version 1) and saves: fine; the history keeps both decisions
    bob.save(1, "rejected", TOKS_B, [], expected_version=1, reviewer="bob")
    assert [h["status"] for h in alice.history(1)] == ["corrected", "rejected"]
    # a deliberate overwrite after a conflict (expected_version=None) also works
    overwrite = alice.save(1, "accepted", TOKS_B, [Span(0, 1, "LOC")], expected_version=None, reviewer="alice")
    assert alice.get(1).version == 3
    # ... and undoing it brings bob's decision back (found in review: Inspect went back to "never reviewed")
    back = alice.undo(1, expected_version=overwrite.version, to_version=overwrite.replaced_version, reviewer="alice")
    assert (back.status, back.spans, back.version) == ("rejected", [], 4)


def test_review_counts_cover_the_table_not_the_whole_review_set():
    """Every view of a corpus shares one review set: a 2-sentence selection after 5 decisions on the whole corpus
    read "5 of 2 reviewed" and Streamlit refused the progress value (found in review)."""
    from core.review.predictions import inspection_table, review_counts
    from core.review.store import ReviewItem

    rows = [{"index": i, "tokens": ["w"], "c1": 0.0, "c2": 0.0} for i in range(6)]
    decided = {i: ReviewItem("s", i, "accepted" if i % 2 else "corrected", ["w"], [], 1) for i in range(5)}
    shown = inspection_table(rows, decided, selected={4, 5})
    counts = review_counts(shown[shown["selection"] == "selected"])
    assert counts == {"accepted": 0, "rejected": 0, "corrected": 1, "reviewed": 1, "total": 2}


def test_one_annotation_database_and_the_old_review_file_merged_once(tmp_path):
    """Issue 44: Inspect's decisions and the team's tasks share one database; a workspace written before keeps
    its decisions (merged once, even when several processes open it, and the old file kept renamed)."""
    import sqlite3

    from core.data.annotation_db import FILE, connect

    ws = Workspace(tmp_path)
    ReviewStore(ws, "s").save(1, "accepted", TOKS_B, [Span(0, 1, "LOC")], expected_version=0, reviewer="ann")
    assert sorted(p.name for p in tmp_path.glob("*.sqlite")) == [FILE]  # no second file
    # a workspace from before: its decisions in review.sqlite
    old_ws = Workspace(tmp_path / "old")
    with sqlite3.connect(old_ws.root / "review.sqlite") as con:
        con.executescript("""CREATE TABLE review (set_key TEXT, idx INTEGER, status TEXT, tokens TEXT, spans TEXT,
            version INTEGER, reviewer TEXT, model TEXT, updated REAL, PRIMARY KEY (set_key, idx));
            CREATE TABLE review_history (set_key TEXT, idx INTEGER, version INTEGER, status TEXT, spans TEXT,
            reviewer TEXT, updated REAL);""")
        con.execute("INSERT INTO review VALUES ('s', 4, 'corrected', '[\"Paris\", \"is\"]', "
                    "'[{\"start\": 0, \"end\": 1, \"type\": \"LOC\"}]', 2, 'bob', 'm', 1.0)")
        con.executemany("INSERT INTO review_history VALUES ('s', 4, ?, ?, '[]', 'bob', 1.0)", [(1, "rejected"), (2, "corrected")])
    con.close()
    threads = [threading.Thread(target=lambda: connect(old_ws).close()) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = ReviewStore(old_ws, "s")
    assert store.get(4).status == "corrected" and store.get(4).spans == [Span(0, 1, "LOC")] and store.get(4).version == 2
    assert [h["status"] for h in store.history(4)] == ["rejected", "corrected"]  # merged once, not four times
    assert not (old_ws.root / "review.sqlite").exists() and (old_ws.root / "review.sqlite.merged").exists()
    store.save(4, "accepted", ["Paris", "is"], [], expected_version=2)  # and it goes on from the merged version


def test_racing_writers_only_one_wins(tmp_path):
    ws = Workspace(tmp_path)
    ReviewStore(ws, "race")  # create the database before the race
    results: list[str] = []

    def write(n: int) -> None:
        try:
            ReviewStore(ws, "race").save(7, "accepted", TOKS_C, [], expected_version=0, reviewer=f"r{n}")
            results.append("ok")
        except ReviewConflict:
            results.append("conflict")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict"] * 5 + ["ok"]
    assert ReviewStore(ws, "race").get(7).version == 1


@pytest.mark.parametrize("fmt,scheme", [("conll", "bio"), ("conll", "bioes"), ("jsonl", "bio")])
def test_export_round_trips_through_read_corpus(tmp_path, fmt, scheme):
    store = ReviewStore(Workspace(tmp_path), "s")
    store.save(0, "accepted", TOKS_A, [Span(0, 2, "PER"), Span(4, 6, "LOC")], expected_version=0)
    store.save(1, "corrected", TOKS_B, [Span(0, 1, "LOC")], expected_version=0)
    store.save(2, "rejected", TOKS_C, [], expected_version=0)
    path = tmp_path / f"out.{fmt}"
    path.write_bytes(export_bytes(store, fmt, scheme))
    corpus = read_corpus(path)
    assert corpus.tokens == [TOKS_A, TOKS_B]  # rejected sentences are not exported
    assert corpus.with_scheme("bio").tags == [["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC", "O"], ["B-LOC", "O", "O", "O"]]
    if scheme == "bioes":
        assert corpus.tags[1][0] == "S-LOC"


def test_save_reviewed_corpus_into_workspace(tmp_path):
    ws = Workspace(tmp_path)
    store = ReviewStore(ws, "s")
    with pytest.raises(UserError, match="nothing to export"):
        store.export_corpus()
    store.save(4, "accepted", TOKS_B, [Span(0, 1, "LOC")], expected_version=0)
    info = save_reviewed_corpus(ws, store, "reviewed-1")
    assert info.labeled and info.sentences == 1
    assert ws.load_corpus("reviewed-1").fields["source_index"] == [4]


def test_span_validation(tmp_path):
    with pytest.raises(UserError, match="outside"):
        check_spans([Span(2, 9, "PER")], 4)
    with pytest.raises(UserError, match="overlap"):
        check_spans([Span(0, 2, "PER"), Span(1, 3, "LOC")], 4)
    with pytest.raises(UserError, match="type"):
        check_spans([Span(0, 1, "")], 4)
    rows = [{"start": 2, "end": 3, "type": "LOC"}, {"start": None, "end": None, "type": None},
            {"start": 0, "end": 1, "type": " PER "}]
    assert spans_from_rows(rows, 4) == [Span(0, 1, "PER"), Span(2, 3, "LOC")]
    with pytest.raises(UserError, match="needs a start"):
        spans_from_rows([{"start": 1, "end": None, "type": "PER"}], 4)
    with pytest.raises(UserError, match="unknown review status"):
        ReviewStore(Workspace(tmp_path), "s").save(0, "maybe", ["x"], [], expected_version=0)


def test_view_types_come_from_the_model_so_colours_do_not_shift(tmp_path):
    """Issue 24: entity colours changed when a newly shown sentence held a new type (musicalartist yellow -> blue), and
    the span editor offered only predicted types. Both now key on the model's whole label set."""
    import json

    from core.review.highlight import type_colors
    from core.review.predictions import view_types

    model = tmp_path / "ner"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "ner_config.json").write_text(json.dumps({"labels": ["O", "B-musicalartist", "E-musicalartist", "S-album",
                                                                  "S-award"]}))
    artist_only = [{"spans": [{"start": 0, "end": 1, "type": "musicalartist"}]}]
    with_album = [*artist_only, {"spans": [{"start": 0, "end": 1, "type": "album"}],
                                 "gold_spans": [{"start": 1, "end": 2, "type": "misc"}]}]
    assert view_types(model, artist_only) == ["album", "award", "musicalartist"]
    assert view_types(model, with_album) == ["album", "award", "misc", "musicalartist"]  # a gold-only type is added
    album_only = [{"spans": [{"start": 0, "end": 1, "type": "album"}]}]
    assert type_colors(view_types(model, artist_only)) == type_colors(view_types(model, album_only))  # same colours
