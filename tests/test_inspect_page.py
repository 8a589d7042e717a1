"""Inspect page: highlighting HTML, the sentence table, cached predictions from a tiny NER
model trained here, and the page itself under Streamlit's AppTest (review, reload, conflict, export)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.data.tags import Span
from core.data.workspace import Workspace
from core.review import predictions as insp
from core.review.highlight import augmented_html, legend_html, prediction_html, span_diff, type_colors
from core.review.store import ReviewItem, ReviewStore
from core.runner import jobs
from tests.apptest import open_app

PAGE = "views/inspect.py"


# --------------------------------------------------------------------------- HTML


def test_html_escapes_tokens_and_labels_every_span():
    colors = type_colors(["PER", "LOC"])
    tokens = ["<script>alert(1)</script>", "met", "Ann", "&", "Bo", "in", "Oslo"]
    html = prediction_html(tokens, [Span(2, 3, "PER"), Span(6, 7, "LOC")], colors)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&amp;" in html
    assert html.count('class="nx-lbl"') == 2 and ">PER</span>" in html and ">LOC</span>" in html
    assert colors["LOC"] in html and colors["PER"] in html and colors["LOC"] != colors["PER"]
    assert "PER" in legend_html(colors) and "LOC" in legend_html(colors)


def test_gold_mismatches_are_marked_on_both_lines():
    pred = [Span(0, 2, "PER"), Span(3, 4, "LOC")]
    gold = [Span(0, 2, "PER"), Span(3, 4, "ORG"), Span(5, 6, "LOC")]
    pm, gm = span_diff(pred, gold)
    assert pm == {Span(0, 2, "PER"): "ok", Span(3, 4, "LOC"): "wrong"}
    assert gm[Span(5, 6, "LOC")] == "missed" and gm[Span(3, 4, "ORG")] == "missed"
    html = prediction_html(["a", "b", "c", "d", "e", "f"], pred, type_colors(["PER", "LOC", "ORG"]), gold)
    assert ">gold<" in html and html.count("nx-bad") == 3  # one wrong prediction, two missed gold spans
    assert "✗ LOC" in html and "∅ ORG" in html and "∅ LOC" in html


def test_augmented_pair_highlights_changed_tokens_only():
    html = augmented_html(["Ann", "sings", "in", "Oslo"], ["Ann", "dances", "in", "Oslo"], [Span(0, 1, "PER")],
                          type_colors(["PER"]))
    assert html.count("nx-chg") == 1 and '<span class="nx-chg">dances</span>' in html


# --------------------------------------------------------------------------- table


ROWS = [
    {"index": 0, "tokens": ["Ann", "met", "Bo"], "spans": [{"start": 0, "end": 1, "type": "PER"}, {"start": 2, "end": 3, "type": "PER"}],
     "c1": 0.9, "c2": 0.95},
    {"index": 1, "tokens": ["Oslo", "is", "cold"], "spans": [{"start": 0, "end": 1, "type": "LOC"}], "c1": 0.4, "c2": 0.7},
    {"index": 2, "tokens": ["nothing", "here"], "spans": [], "c1": 0.99, "c2": 0.99},
]


def test_table_filters_and_sorts():
    reviews = {1: ReviewItem("s", 1, "accepted", ["Oslo", "is", "cold"], [Span(0, 1, "LOC")], 1)}
    df = insp.inspection_table(ROWS, reviews, selected={0, 2})
    assert list(df["review"]) == ["unreviewed", "accepted", "unreviewed"]
    assert list(df["selection"]) == ["selected", "filtered", "selected"]
    assert list(insp.filter_table(df)["index"]) == [0, 1, 2]  # most entities first (NER-Selected)
    assert list(insp.filter_table(df, sort_by="c1", descending=False)["index"]) == [1, 0, 2]
    assert list(insp.filter_table(df, sort_by="c2")["index"]) == [2, 0, 1]
    assert list(insp.filter_table(df, types=["LOC"])["index"]) == [1]
    assert list(insp.filter_table(df, query="OSLO")["index"]) == [1]
    assert list(insp.filter_table(df, query="(")["index"]) == []  # literal, not a regex
    assert list(insp.filter_table(df, min_entities=1, max_entities=1)["index"]) == [1]
    assert list(insp.filter_table(df, review=["unreviewed"])["index"]) == [0, 2]
    assert list(insp.filter_table(df, selection=["filtered"])["index"]) == [1]


# --------------------------------------------------------------------------- a workspace with a tiny NER model


@pytest.fixture(scope="module")
def ner_ws(tmp_path_factory):
    """Demo workspace + a tiny NER model in runs/ + a saved selection over demo-dev."""
    from core.data.demo import write_demo_workspace
    from core.train.ner_train import preset_config, train_ner
    from tests.tiny_models import build_tiny_bert

    root = tmp_path_factory.mktemp("inspectws")
    ws = write_demo_workspace(root)
    lc = ws.load_corpus("demo-lc")
    base = build_tiny_bert(root / "tinybase", [" ".join(t) for t in lc.tokens])
    model_dir = ws.runs_dir / "tiny-ner" / "model"
    train_ner(lc, ws.load_corpus("demo-dev").subset(range(20)), str(base), model_dir, preset_config("tiny", epochs=1))
    sel = ws.artifact_dir("selection", "sel0001")
    (sel / "selected.jsonl").write_text("".join(json.dumps({"dc_index": i, "text": "x", "score": 1.0, "rank": r + 1}) + "\n"
                                                for r, i in enumerate([3, 1, 4, 15])))
    (sel / "meta.json").write_text(json.dumps({"dc_name": "demo-dev", "strategy": "ner-selected", "budget": 4}))
    return root, model_dir


def test_predictions_are_cached_by_content(ner_ws):
    root, model_dir = ner_ws
    ws = Workspace(root)
    req = insp.prediction_request(ws, str(model_dir), "demo-dev")
    insp.predict_cached(ws, req)
    rows = insp.load_predictions(req)
    assert len(rows) == ws.corpus_info("demo-dev").sentences and "gold_spans" in rows[0]
    assert all(0.0 <= r["c1"] <= 1.0 and 0.0 <= r["c2"] <= 1.0 for r in rows)
    again = insp.prediction_request(Workspace(root), str(model_dir), "demo-dev")
    assert again.key == req.key and again.done  # a restart finds the cache
    sel = insp.prediction_request(ws, str(model_dir), selection="sel0001")
    assert sel.corpus == "demo-dev" and sel.indices == [1, 3, 4, 15] and sel.key != req.key
    insp.predict_cached(ws, sel)
    sel_rows = insp.load_predictions(sel)
    assert [r["index"] for r in sel_rows] == [1, 3, 4, 15]
    assert [r["tokens"] for r in sel_rows] == [rows[i]["tokens"] for i in (1, 3, 4, 15)]
    with pytest.raises(Exception, match="not a fine-tuned NER model"):
        insp.prediction_request(ws, str(root / "tinybase"), "demo-dev")


def _app(root: Path, monkeypatch) -> AppTest:
    return open_app(root, monkeypatch, PAGE)


def _open(at: AppTest, corpus: str = "demo-dev") -> AppTest:
    at.selectbox(key="insp_corpus").select(corpus).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _states(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_page_review_survives_a_reload_and_exports(ner_ws, monkeypatch):
    root, model_dir = ner_ws
    ws = Workspace(root)
    req = insp.prediction_request(ws, str(model_dir), "demo-dev")
    insp.predict_cached(ws, req)
    at = _open(_app(root, monkeypatch))
    assert any("nx-ent" in h.proto.body or "nx-sent" in h.proto.body for h in at.get("html"))
    accept = [b for b in at.button if b.key.startswith("accept_")]
    reject = [b for b in at.button if b.key.startswith("reject_")]
    assert accept and all(b.label == "Accept" for b in accept) and all(b.label == "Reject" for b in reject)
    first, second = int(accept[0].key.split("_")[1]), int(reject[1].key.split("_")[1])
    accept[0].click().run()
    at.button(key=f"reject_{second}").click().run()
    assert not at.exception
    store = ReviewStore(ws, req.review_key)
    assert store.get(first).status == "accepted" and store.get(second).status == "rejected"
    # reload: a fresh session finds both states
    again = _open(_app(root, monkeypatch))
    text = _states(again)
    assert f"**#{first}**" in text and "state: :green-badge[accepted]" in text and "state: :red-badge[rejected]" in text
    assert again.get("progress")[0].proto.text.startswith("2 of 150 sentences reviewed · 1 accepted · 1 rejected")
    # export: save the accepted sentence as a workspace corpus
    again.text_input(key="insp_save_name").input("reviewed-dev").run()
    again.button(key="insp_save").click().run()
    assert not again.exception
    assert ws.load_corpus("reviewed-dev").fields["source_index"] == [first]


def test_page_shows_a_conflict_instead_of_overwriting(ner_ws, monkeypatch):
    root, model_dir = ner_ws
    ws = Workspace(root)
    req = insp.prediction_request(ws, str(model_dir), "demo-dev")
    insp.predict_cached(ws, req)
    at = _open(_app(root, monkeypatch))
    at.multiselect(key="insp_review").select("unreviewed").run()
    button = next(b for b in at.button if b.key.startswith("accept_"))
    index = int(button.key.split("_")[1])
    rows = {r["index"]: r for r in insp.load_predictions(req)}
    # another reviewer rejects it after this page was drawn
    ReviewStore(ws, req.review_key).save(index, "rejected", rows[index]["tokens"], [], expected_version=0, reviewer="other")
    button.click().run()
    assert not at.exception
    assert any("Conflict" in w.value for w in at.warning)
    assert ReviewStore(ws, req.review_key).get(index).status == "rejected"  # the earlier save is intact
    at.button(key="insp_overwrite").click().run()
    assert ReviewStore(ws, req.review_key).get(index).status == "accepted"


def test_page_filters_by_selection_status(ner_ws, monkeypatch):
    root, model_dir = ner_ws
    ws = Workspace(root)
    insp.predict_cached(ws, insp.prediction_request(ws, str(model_dir), "demo-dev"))
    at = _open(_app(root, monkeypatch))
    at.selectbox(key="insp_status_sel").select_index(1).run()
    at.multiselect(key="insp_selstate").select("selected").run()
    assert not at.exception
    shown = sorted(int(b.key.split("_")[1]) for b in at.button if b.key.startswith("accept_"))
    assert shown == [1, 3, 4, 15]
    at.text_input(key="insp_query").input("zzzz-not-there").run()
    assert not [b for b in at.button if b.key.startswith("accept_")]


def test_page_starts_the_prediction_job(ner_ws, monkeypatch):
    root, _ = ner_ws
    ws = Workspace(root)
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda w, kind, params, start=True, **kw: submitted.append((kind, params)) or None)
    at = _open(_app(root, monkeypatch), corpus="demo-test")
    assert at.button(key="insp_predict_job_go").label == "Predict entities"
    at.button(key="insp_predict_job_go").click().run()
    assert not at.exception
    assert submitted and submitted[0][0] == "predict" and submitted[0][1]["out"].endswith("predictions.jsonl")
    req = insp.prediction_request(ws, submitted[0][1]["model"], "demo-test")
    assert submitted[0][1]["out"] == str(req.predictions_path)


# --------------------------------------------------------------------------- span editing, undo, annotators (issue 13)


def test_apply_span_edit_replaces_touched_spans_per_contiguous_run():
    spans = [Span(0, 2, "PER"), Span(4, 5, "LOC")]
    assert insp.apply_span_edit(spans, [1, 2], "ORG", 6) == [Span(1, 3, "ORG"), Span(4, 5, "LOC")]
    assert insp.apply_span_edit(spans, [0, 1, 3, 5], "X", 6) == [Span(0, 2, "X"), Span(3, 4, "X"), Span(4, 5, "LOC"),
                                                                   Span(5, 6, "X")]
    assert insp.apply_span_edit(spans, [4], None, 6) == [Span(0, 2, "PER")]
    with pytest.raises(Exception, match="select one or more tokens"):
        insp.apply_span_edit(spans, [], "X", 6)
    with pytest.raises(Exception, match="without spaces"):
        insp.apply_span_edit(spans, [3], "two words", 6)
    with pytest.raises(Exception, match="'O' is not an entity type"):  # the one check every span type passes
        insp.apply_span_edit(spans, [3], "O", 6)


def test_undo_restores_the_version_before_and_progress_counts_per_annotator(tmp_path):
    ws = Workspace(tmp_path)
    store = ReviewStore(ws, "c@h")
    store.save(1, "accepted", ["a", "b"], [Span(0, 1, "X")], expected_version=0, reviewer="ann")
    store.save(1, "corrected", ["a", "b"], [Span(1, 2, "Y")], expected_version=1, reviewer="ann")
    store.save(2, "rejected", ["c"], [], expected_version=0, reviewer="bob")
    assert store.undo(1, expected_version=2, to_version=1).status == "accepted"
    assert store.get(1).spans == [Span(0, 1, "X")] and store.get(1).version == 3
    assert store.undo(2, expected_version=1, to_version=0).status == "pending"
    with pytest.raises(Exception, match="changed since"):
        store.undo(1, expected_version=2, to_version=0)  # someone saved version 3 meanwhile
    by = {r["annotator"]: r for r in store.progress_by_reviewer()}
    assert by["ann"]["accepted"] == 1 and by["ann"]["reviewed"] == 1 and "bob" not in by
    assert len(store.export_corpus(reviewers=["ann"])) == 1
    with pytest.raises(Exception, match="nothing to export"):
        store.export_corpus(reviewers=["bob"])


def _assign(at: AppTest, index: int, tokens: list[int], entity_type: str) -> AppTest:
    grid = next(w for w in at.get("button_group") if w.key and w.key.startswith(f"insp_tokens_{index}_"))
    grid.set_value(tokens).run()
    at.text_input(key=f"insp_newtype_{index}").input(entity_type).run()
    at.button(key=f"insp_assign_{index}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_page_edits_spans_by_selecting_tokens_then_undoes(ner_ws, monkeypatch):
    root, model_dir = ner_ws
    ws = Workspace(root)
    req = insp.prediction_request(ws, str(model_dir), "demo-test")
    insp.predict_cached(ws, req)
    at = _open(_app(root, monkeypatch), corpus="demo-test")
    at.text_input(key="insp_reviewer").input("ann").run()
    index = int(next(b for b in at.button if b.key.startswith("correct_")).key.split("_")[1])
    at.button(key=f"correct_{index}").click().run()
    _assign(at, index, [0, 1], "band")
    at.button(key=f"save_{index}").click().run()
    assert not at.exception
    item = ReviewStore(ws, req.review_key).get(index)
    assert item.status == "corrected" and Span(0, 2, "band") in item.spans and item.reviewer == "ann"
    assert "state: :blue-badge[corrected] by ann" in _states(at)
    by = next(df.value for df in at.dataframe if "annotator" in getattr(df.value, "columns", []))
    assert list(by["annotator"]) == ["ann"] and list(by["corrected"]) == [1]
    assert f"Undo #{index} corrected" == at.button(key="insp_undo_btn").label
    at.button(key="insp_undo_btn").click().run()
    assert ReviewStore(ws, req.review_key).get(index).status == "pending"
    assert at.button(key="insp_undo_btn").disabled


def test_gold_legend_only_with_gold(ner_ws, monkeypatch):
    root, model_dir = ner_ws
    ws = Workspace(root)
    insp.predict_cached(ws, insp.prediction_request(ws, str(model_dir), "demo-dev"))
    at = _open(_app(root, monkeypatch))
    assert any("gold span missed" in h.proto.body for h in at.get("html"))
    assert "gold span missed" not in legend_html({"X": "#fff"}, gold=False)


def test_assets_css_survives_streamlits_html_sanitiser():
    """DOMPurify drops a whole <style> block whose text holds '<' + a letter (even in a comment)."""
    import re

    from core.review.highlight import ASSETS, CSS, page_css

    for css in ASSETS.glob("*.css"):
        assert not re.search(r"<[A-Za-z/!?]", css.read_text("utf-8")), css
    assert "insp_card_accepted" in page_css() and ".nx-ent" in page_css() and ".nx-ent" in CSS
    assert page_css().count("<style>") == 1


def test_a_reload_keeps_the_model_the_source_and_the_annotator(ner_ws, monkeypatch):
    """Issue 24: a reload (a new session) forgot the source and the annotator; the next accept was stored as
    "(no name)". The choices live in the page URL now, and the model is shown by its full path."""
    root, model_dir = ner_ws
    at = _open(_app(root, monkeypatch), corpus="demo-test")
    at.selectbox(key="insp_model").select(str(model_dir)).run()
    at.text_input(key="insp_reviewer").input("ann").run()
    url = dict(at.query_params)
    assert url["insp_reviewer"] in ("ann", ["ann"]) and "insp_corpus" in url
    reloaded = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    for key, value in url.items():
        reloaded.query_params[key] = value[0] if isinstance(value, list) else value
    reloaded.run()
    reloaded.switch_page(PAGE).run()
    assert not reloaded.exception, [e.value for e in reloaded.exception]
    assert reloaded.text_input(key="insp_reviewer").value == "ann"
    assert reloaded.selectbox(key="insp_corpus").value == "demo-test"
    assert reloaded.selectbox(key="insp_model").value == str(model_dir)
    assert str(model_dir) in reloaded.selectbox(key="insp_model").options  # the full path, leading slash included


def test_a_typed_reviewer_name_is_shown_as_itself(ner_ws, monkeypatch):
    """Found in review: the card rendered the reviewer's name as Markdown: '![x](http://...)' made every viewer's
    browser fetch an image, ':red[...]' restyled the card."""
    root, model_dir = ner_ws
    ws = Workspace(root)
    req = insp.prediction_request(ws, str(model_dir), "demo-dev")
    insp.predict_cached(ws, req)
    rows = insp.load_predictions(req)
    name = "![x](http://example.invalid/p.png) :red[boss]"
    ReviewStore(ws, req.review_key).save(rows[0]["index"], "rejected", rows[0]["tokens"], [], expected_version=0,
                                         reviewer=name)
    at = _open(_app(root, monkeypatch))
    at.multiselect(key="insp_review").select("rejected").run()
    assert not at.exception
    cards = [m.value for m in at.markdown if "state:" in m.value]
    assert cards and all("![x](" not in c and ":red[" not in c for c in cards)
    assert any(r"\!\[x\]" in c for c in cards)


def test_the_review_cli_does_what_inspect_does(ner_ws, capsys):
    """Found in review: Inspect's review (list, accept / reject / correct, undo, progress, export) had no CLI."""
    from core.cli import main

    root, model_dir = ner_ws
    ws = Workspace(root)
    base = ["--workspace", str(root), "--model", str(model_dir), "--corpus", "test", "--reviewer", "cli", "--quiet"]
    assert main(["review", "list", *base, "--limit", "3", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["counts"]["total"] == len(ws.load_corpus("demo-test")) and len(listed["sentences"]) == 3
    first, second = listed["sentences"][0]["index"], listed["sentences"][1]["index"]
    assert main(["review", "decide", str(first), "accept", *base]) == 0
    assert main(["review", "decide", str(second), "correct", "--spans", "0-1:PER", *base]) == 0
    assert "corrected 0-1:PER" in capsys.readouterr().out
    req = insp.prediction_request(ws, str(model_dir), "demo-test")
    store = ReviewStore(ws, req.review_key)
    assert store.get(first).status == "accepted" and store.get(first).reviewer == "cli"
    assert [(s.start, s.end, s.type) for s in store.get(second).spans] == [(0, 1, "PER")]
    assert main(["review", "decide", str(second), "correct", *base]) == 2  # correct needs its spans
    assert main(["review", "decide", str(first), "reject", *base, "--version", "0"]) == 2  # stale: someone decided
    assert "changed since you opened it" in capsys.readouterr().err
    assert main(["review", "undo", str(second), *base]) == 0 and store.get(second).status == "pending"
    assert "back to unreviewed" in capsys.readouterr().out
    assert main(["review", "progress", *base, "--json"]) == 0
    progress = json.loads(capsys.readouterr().out)
    assert progress["counts"]["accepted"] == 1 and progress["annotators"][0]["annotator"] == "cli"
    out = root.parent / "reviewed.conll"
    assert main(["review", "export", *base, "--out", str(out)]) == 0 and out.read_text().strip()
    assert main(["review", "export", *base, "--save", "reviewed-test"]) == 0
    assert ws.load_corpus("reviewed-test").fields["source_index"] == [first]
