"""The map of a corpus set: laid out once (fit on a sample, the rest placed), reused by key, coloured by layers
without a job, regions and searches saved as selections or corpora with lineage, the CLI and the Map page."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from core.access import AccessDenied, Actor, Role
from core.data.corpus import Corpus
from core.data.workspace import Workspace
from core.errors import UserError
from core.selection import atlas as atlas_mod
from core.selection.atlas import build_atlas, cluster_labels, find_atlas, layout
from core.selection.layers import (
    colour_layer,
    corpus_layer,
    field_layer,
    points_in_polygon,
    score_layer,
    search_points,
    selection_layer,
    selection_matches,
    view_data,
)
from core.selection.map_region import MapChoice, Region, save_region_corpus, save_region_selection
from tests.apptest import open_app


def _clusters(n_per: int, dim: int = 16, k: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, dim)) * 5
    return np.concatenate([c + rng.normal(size=(n_per, dim)) for c in centers]).astype(np.float32)


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_layout_fits_a_sample_and_places_the_rest_near_their_cluster():
    small, big = _clusters(20), _clusters(200, seed=0)
    coords, info = layout([small, big], fit_points=150, seed=0, chunk=97)
    assert coords.shape == (660, 2) and np.isfinite(coords).all()
    assert info["fitted"] == 150 and info["placed"] == 510 and "transform" in info["method"]
    # a placed point lands with its own cluster: its nearest fitted neighbour in 2-D shares its cluster
    labels = np.concatenate([np.repeat(np.arange(3), 20), np.repeat(np.arange(3), 200)])
    centroids = np.array([coords[labels == c].mean(axis=0) for c in range(3)])
    nearest = np.argmin(((coords[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    assert (nearest == labels).mean() > 0.95
    again, _ = layout([small, big], fit_points=150, seed=0, chunk=97)
    assert np.allclose(again, coords)  # a fixed seed gives the same map
    with pytest.raises(UserError, match="nothing to map"):
        layout([np.zeros((0, 4), np.float32)])
    # issue 45: a large map's points are placed by worker processes, each part exactly as one process places it
    parallel, info2 = layout([small, big], fit_points=150, seed=0, chunk=97, workers=2)
    assert info2["place_workers"] == 2 and info["place_workers"] == 1 and np.array_equal(parallel, coords)


def test_a_sample_of_one_repeated_sentence_is_laid_out_and_labelled():
    """Found in review: 60 identical vectors came out of UMAP as 60 NaN rows, and labelling the clusters failed."""
    same = np.tile(_clusters(1, k=1)[:1], (60, 1))
    xy, info = atlas_mod.layout([same[:30], same[30:]], fit_points=40, seed=0)
    assert np.isfinite(xy).all() and xy.shape == (60, 2) and "distinct" in info["method"]
    atlas_mod.cluster_labels(xy, ["one line"] * 60)
    two = np.r_[np.tile(_clusters(1, k=1)[:1], (30, 1)), np.tile(_clusters(1, k=1, seed=3)[:1], (30, 1))]
    assert np.isfinite(atlas_mod.layout([two], fit_points=40, seed=0)[0]).all()


def test_points_in_polygon_even_odd_on_hand_made_cases():
    xy = np.array([[0.5, 0.5], [1.5, 0.5], [0.5, 1.5], [2.5, 2.5], [1.0, 0.2], [-1, -1]])
    square = [[0, 0], [2, 0], [2, 2], [0, 2]]
    assert points_in_polygon(xy, square).tolist() == [True, True, True, False, True, False]
    concave = [[0, 0], [2, 0], [2, 2], [1, 1], [0, 2]]  # a notch from the top down to (1, 1)
    assert points_in_polygon(np.array([[1.0, 1.5], [0.3, 1.5], [1.0, 0.5]]), concave).tolist() == [False, True, True]
    with pytest.raises(UserError, match="at least 3 corners"):
        points_in_polygon(xy, [[0, 0], [1, 1]])


def test_cluster_labels_name_each_region_by_its_own_words():
    xy = np.concatenate([np.random.default_rng(0).normal(size=(100, 2)), np.random.default_rng(1).normal(size=(100, 2)) + 40])
    texts = ["the guitar album song band"] * 100 + ["the election party vote senate"] * 100
    labels = cluster_labels(xy, texts, k=2)
    words = {frozenset(lab["terms"]) for lab in labels}
    assert len(labels) == 2 and all(w <= {"guitar", "album", "song", "band"} or w <= {"election", "party", "vote", "senate"}
                                    for w in words)
    assert len(words) == 2 and "the" not in {t for lab in labels for t in lab["terms"]}


@pytest.fixture
def mapped(tmp_path, tiny_bert_dir, monkeypatch):
    """A workspace with TC, DC (a domain field) and a selection; a map built with a fast stand-in for UMAP."""
    from core.runner import jobs

    ws = Workspace(tmp_path / "ws")
    words = ["guitar album", "election vote", "protein cell"]
    ws.save_corpus(Corpus(tokens=[f"the {words[i % 3]} song {i}".split() for i in range(12)]), "tc", role="tc")
    ws.save_corpus(Corpus(tokens=[f"a {words[i % 3]} item {i}".split() for i in range(60)],
                          fields={"domain": [["music", "politics", "science"][i % 3] for i in range(60)]}), "dc", role="dc")
    sel = jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 15, "model": str(tiny_bert_dir)})
    calls: list[int] = []
    real_layout = atlas_mod.layout

    def fast_layout(vectors, **kw):
        calls.append(sum(len(v) for v in vectors))
        return real_layout(vectors, **{**kw, "fit_points": 40})

    monkeypatch.setattr(atlas_mod, "layout", fast_layout)
    atlas, reused = build_atlas(ws, ["tc", "dc"], str(tiny_bert_dir))
    return ws, atlas, sel["key"], calls, reused


def test_a_map_is_built_once_per_corpus_set_and_encoder(mapped, tiny_bert_dir):
    ws, atlas, _, calls, reused = mapped
    assert not reused and calls == [72] and len(atlas) == 72
    assert [c["name"] for c in atlas.corpora] == ["tc", "dc"] and atlas.span("dc") == (12, 72)
    assert atlas.meta["fitted"] == 40 and atlas.meta["placed"] == 32
    assert atlas.texts()[12] == "a guitar album item 0"
    again, reused = build_atlas(ws, ["demo" if False else "tc", "dc"], str(tiny_bert_dir))
    assert reused and again.key == atlas.key and calls == [72]  # no layout ran
    assert find_atlas(ws, ["tc", "dc"], str(tiny_bert_dir)).key == atlas.key
    assert find_atlas(ws, ["dc", "tc"], str(tiny_bert_dir)) is None  # another order is another map
    ws.save_corpus(Corpus(tokens=[["changed", "tc"]] * 3), "tc", role="tc", overwrite=True)
    assert find_atlas(ws, ["tc", "dc"], str(tiny_bert_dir)) is None  # its contents changed: not this map
    with pytest.raises(UserError, match="named twice"):
        build_atlas(ws, ["dc", "dc"], str(tiny_bert_dir))


def test_a_reused_map_reads_the_corpora_it_was_asked_for_not_the_ones_it_was_made_for(mapped, tiny_bert_dir):
    """Found in review: a map is found by content, and it named the corpora it was first made for; those names were
    opened to save a region, so after 'dc' changed, a region of 'dc-v1' (dc's old sentences) saved dc's new ones."""
    ws, atlas, _, calls, _ = mapped
    ws.save_corpus(ws.load_corpus("dc"), "dc-v1")
    ws.save_corpus(Corpus(tokens=[["REPLACED", str(i)] for i in range(60)]), "dc", role="dc", overwrite=True)
    again = find_atlas(ws, ["tc", "dc-v1"], str(tiny_bert_dir))
    assert again.key == atlas.key and [c["name"] for c in again.corpora] == ["tc", "dc-v1"]
    built, reused = build_atlas(ws, ["tc", "dc-v1"], str(tiny_bert_dir))
    assert reused and [c["name"] for c in built.corpora] == ["tc", "dc-v1"] and calls == [72]
    last = np.zeros(len(again), bool)
    last[-5:] = True
    info = save_region_corpus(ws, again, last, "tail", Region(query="item"))
    assert ws.load_corpus("tail").tokens[-1] == ["a", "protein", "cell", "item", "59"]
    assert info.sentences == 5
    assert [c["name"] for c in atlas.corpora] == ["tc", "dc"]  # the map itself, shared by the page, is unchanged


def test_a_layers_cache_stamp_changes_with_what_the_layer_reads(mapped, tiny_bert_dir):
    """Found in review: the Map cached a layer by map key and colour alone; a DC re-imported with corrected fields
    keeps the map (tokens alone key it) and kept showing the old domains."""
    from core.selection.layers import field_layer, layer_stamp

    ws, atlas, _, _, _ = mapped
    before = layer_stamp(ws, atlas)
    dc = ws.load_corpus("dc")
    ws.save_corpus(Corpus(tokens=dc.tokens, fields={"domain": ["relabelled"] * len(dc)}), "dc", role="dc", overwrite=True)
    again = find_atlas(ws, ["tc", "dc"], str(tiny_bert_dir))
    assert again.key == atlas.key and layer_stamp(ws, again) != before
    assert field_layer(ws, again, "domain").counts().get("relabelled") == 60
    assert layer_stamp(ws, again) == layer_stamp(ws, again)
    assert layer_stamp(ws, again.named(["tc", "dc-other"])) != layer_stamp(ws, again)


def test_which_corpora_a_map_shows_is_decided_in_one_place(mapped, monkeypatch):
    """The Map page, `project` and its job share map_corpora: named corpora, else the selection's TC and DC, else the
    TC and DC roles; a selection that does not record its corpora is an error when asked for, a default otherwise."""
    from core.data.selection_store import load_selection
    from core.selection.atlas import map_corpora

    ws, _, key, _, _ = mapped
    assert map_corpora(ws, ["dc"], key) == ["dc"]
    assert map_corpora(ws, selection=key) == ["tc", "dc"] and map_corpora(ws) == ["tc", "dc"]
    from core.data import selection_store as store

    def unnamed(ws, key):  # a selection saved without its TC/DC names (made outside a job)
        sel = load_selection(ws, key)
        sel.meta = dataclasses.replace(sel.meta, tc_name=None)
        return sel

    monkeypatch.setattr(store, "load_selection", unnamed)
    with pytest.raises(UserError, match="does not record its TC/DC names"):
        map_corpora(ws, selection=key)
    assert map_corpora(ws, selection=key, strict=False) == ["tc", "dc"]  # the page's default falls back to the roles
    assert map_corpora(Workspace(ws.root.parent / "empty")) == []


def test_layers_colour_the_same_points_without_a_layout(mapped, monkeypatch):
    ws, atlas, key, calls, _ = mapped
    monkeypatch.setattr(atlas_mod, "layout", lambda *a, **k: pytest.fail("a layer ran a layout"))
    layer = selection_layer(ws, atlas, key)
    assert layer.counts() == {"filtered": 45, "selected": 15, "TC": 12}
    assert layer.priority == [0, 1, 3] and (layer.codes[:12] == 2).all()  # the TC on top
    assert corpus_layer(atlas).counts() == {"tc": 12, "dc": 60}
    dom = field_layer(ws, atlas, "domain")
    assert dom.counts() == {"(none)": 12, "music": 20, "politics": 20, "science": 20}
    scores = score_layer("s", np.r_[np.full(2, np.nan), np.linspace(0, 1, 5)])
    assert scores.continuous and scores.codes[:2].tolist() == [0, 0] and scores.codes[2] == 1 and scores.codes[-1] == 255
    data = view_data(atlas, layer, search_points(atlas, "guitar"))
    assert len(data["xy"]) == 72 and data["layer"]["c"].dtype == np.uint8 and data["hl"]["h"].sum() == 24
    assert data["text"] is not None and view_data(atlas, layer, text_cap=10)["text"] is None
    assert json.dumps(data["meta"])  # the browser's meta is plain JSON
    with pytest.raises(UserError, match="no corpus on this map has the field"):
        field_layer(ws, atlas, "nope")


def test_a_third_corpus_on_the_map_is_no_tc_in_the_selection_layer(mapped, tiny_bert_dir):
    """Found in review: every corpus but the DC was labelled "TC" (a TEST mapped beside them counted as TC)."""
    ws, _, key, _, _ = mapped
    ws.save_corpus(Corpus(tokens=[["held", "out", str(i)] for i in range(7)]), "test")
    three, _ = build_atlas(ws, ["tc", "dc", "test"], str(tiny_bert_dir))
    layer = selection_layer(ws, three, key)
    assert layer.counts() == {"filtered": 45, "selected": 15, "TC": 12, "other corpora": 7}
    assert (layer.codes[-7:] == 3).all() and layer.palette[3] != layer.palette[2]


def test_a_selection_of_another_dc_is_refused_with_its_reason(mapped, tiny_bert_dir):
    from core.data.selection_store import list_selections
    from core.runner import jobs

    ws, atlas, _, _, _ = mapped
    ws.save_corpus(Corpus(tokens=[["other", "dc", str(i)] for i in range(30)]), "dc2")
    other = jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc2", "strategy": "random", "budget": 5})
    meta = next(m for m in list_selections(ws) if m.key == other["key"])
    assert not selection_matches(atlas, meta)
    with pytest.raises(UserError, match="not on this map"):
        selection_layer(ws, atlas, other["key"])


def test_a_region_becomes_a_selection_and_a_corpus_with_lineage(mapped):
    from core.data.selection_store import list_selections, load_selection

    ws, atlas, _, _, _ = mapped
    mask = search_points(atlas, "election")
    assert mask.sum() == 24  # 4 TC + 20 DC sentences
    how = Region(query="election")
    assert how.mask(atlas).tolist() == mask.tolist()  # the page and `map --search` choose through the same record
    sel = save_region_selection(ws, atlas, mask, "dc", how)
    saved = load_selection(ws, sel.key)
    assert saved.strategy == "map-region" and saved.budget == 20 and saved.meta.lineage["region"] == {"query": "election"}
    assert sorted(saved.indices.tolist()) == list(range(1, 60, 3)) and saved.meta.dc_name == "dc"
    assert any(m.key == sel.key for m in list_selections(ws))
    info = save_region_corpus(ws, atlas, mask, "election-region", how)
    assert info.sentences == 24 and "search “election”" in info.source and atlas.key[:8] in info.source
    with pytest.raises(UserError, match="exists already"):
        save_region_corpus(ws, atlas, mask, "election-region", how)
    with pytest.raises(UserError, match="holds no sentence of 'dc'"):
        save_region_selection(ws, atlas, np.r_[np.ones(12, bool), np.zeros(60, bool)], "dc", how)
    annotator = Actor("ann", Role.ANNOTATOR)
    with pytest.raises(AccessDenied):
        save_region_selection(ws, atlas, mask, "dc", how, actor=annotator)
    with pytest.raises(AccessDenied):
        save_region_corpus(ws, atlas, mask, "other-name", how, actor=annotator)
    assert not ws.has_corpus("other-name")


def test_cli_project_reuses_the_map_and_colours_a_selection_without_umap(mapped, tiny_bert_dir, tmp_path, capsys,
                                                                          monkeypatch):
    from core.cli import main

    ws, atlas, key, _, _ = mapped
    monkeypatch.setattr(atlas_mod, "layout", lambda *a, **k: pytest.fail("UMAP ran for a map that exists"))
    out = tmp_path / "map.parquet"
    assert main(["--workspace", str(ws.root), "project", "tc", "dc", "--model", str(tiny_bert_dir), "--out", str(out),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reused"] is True and report["key"] == atlas.key and report["points"] == 72
    assert main(["--workspace", str(ws.root), "project", "--selection", key, "--model", str(tiny_bert_dir), "--out", str(out),
                 "--search", "protein", "--save-corpus", "protein-bits", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reused"] is True and report["selection"]["groups"] == {"filtered": 45, "selected": 15, "TC": 12}
    assert report["chosen"] == {"tc": 4, "dc": 20} and report["saved_corpus"]["sentences"] == 24
    df = pd.read_parquet(out)
    assert {"x", "y", "corpus", "row", "text", "group", "score_percentile", "chosen"} <= set(df.columns)
    assert df["score_percentile"].iloc[:12].isna().all() and df["score_percentile"].iloc[12:].between(0, 100).all()
    assert main(["--workspace", str(ws.root), "project", "tc", "dc", "--model", str(tiny_bert_dir), "--region", "0,0 1,1",
                 "--json"]) == 2
    assert "at least 3 corners" in capsys.readouterr().err
    # the Map's "field: domain" colouring at the CLI (it had none), through the page's core function
    assert main(["--workspace", str(ws.root), "project", "tc", "dc", "--model", str(tiny_bert_dir), "--field", "domain",
                 "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["field"]["values"] == {"(none)": 12, "music": 20, "politics": 20, "science": 20}
    assert list(pd.read_parquet(out)["field_domain"][12:15]) == ["music", "politics", "science"]
    with pytest.raises(UserError, match="unknown colouring"):
        colour_layer(ws, atlas, "colour: pink")


def test_map_page_offers_the_job_then_draws_layers(mapped, tiny_bert_dir, monkeypatch):
    ws, atlas, key, _, _ = mapped
    at = open_app(ws.root, monkeypatch, "views/map.py")
    assert not at.exception, [e.value for e in at.exception]
    assert any("Compute the map" in i.value for i in at.info)  # the default encoder has no map of these corpora yet
    at.text_input(key="map_model").input(str(tiny_bert_dir)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="map_colour").value == "selection"
    assert at.selectbox(key="map_selection").value == key
    at.selectbox(key="map_colour").select("field: domain").run()
    assert not at.exception, [e.value for e in at.exception]
    at.session_state[f"map_state_{atlas.key}"] = MapChoice(pinned=12, query="vote")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.value == "24" for m in at.metric)  # the search's sentences are listed, with the save controls
    near = next(df.value for df in at.dataframe if "cosine" in getattr(df.value, "columns", []))
    assert len(near) == 10 and near["corpus"].isin(["tc", "dc"]).all()


def test_an_ner_models_predictions_colour_the_map_from_the_inspect_cache(mapped, tiny_bert_dir, tmp_path, capsys,
                                                                         monkeypatch):
    """Issue 24: predictions are a layer too (entities found per sentence, or c1), read from what Inspect cached."""
    from core.cli import main
    from core.data.corpus import read_corpus
    from core.review import predictions as insp
    from core.selection.layers import predicted_models, prediction_layer, prediction_values
    from core.train.ner_train import preset_config, train_ner
    from tests.ner_data import write_toy_conll

    ws, atlas, _, _, _ = mapped
    lc = read_corpus(write_toy_conll(tmp_path / "lc.conll"))
    model = ws.runs_dir / "ner-toy" / "model"
    train_ner(lc, lc, str(tiny_bert_dir), model, preset_config("tiny", epochs=1))
    assert predicted_models(ws, atlas) == []
    with pytest.raises(UserError, match="on Inspect first"):
        prediction_values(ws, atlas, str(model))
    at = open_app(ws.root, monkeypatch, "views/map.py")
    at.text_input(key="map_model").input(str(tiny_bert_dir)).run()
    assert at.selectbox(key="map_pc").value == "dc" and at.button(key="map_pred_job_go")  # the Map offers the prediction
    assert "predictions: entities" not in at.selectbox(key="map_colour").options
    insp.predict_cached(ws, insp.prediction_request(ws, str(model), "dc"))  # what that button's job does, in-process
    assert predicted_models(ws, atlas) == [str(model)]
    values = prediction_values(ws, atlas, str(model))
    rows = insp.load_predictions(insp.prediction_request(ws, str(model), "dc"))
    assert np.isnan(values[:12]).all() and values[12:].tolist() == [len(r["spans"]) for r in rows]  # TC: not predicted
    c1 = prediction_values(ws, atlas, str(model), "c1")
    assert ((c1[12:] >= 0) & (c1[12:] <= 1)).all()
    assert prediction_layer(ws, atlas, str(model)).legend[1]["count"] == 12  # "no value": the TC points
    assert main(["--workspace", str(ws.root), "project", "tc", "dc", "--model", str(tiny_bert_dir), "--predictions", str(model),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reused"] and report["predictions"]["points"] == 60
    at = open_app(ws.root, monkeypatch, "views/map.py")
    at.text_input(key="map_model").input(str(tiny_bert_dir)).run()
    at.selectbox(key="map_colour").select("predictions: entities").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="map_pred_model").value == str(model)


def test_map_choice_keeps_one_of_region_and_search_and_ignores_another_maps_region():
    """The Map page's state as the browser's events change it (this logic lived in the page)."""
    choice = MapChoice()
    choice.take("query", "election", "m1")
    assert choice.active == Region(query="election")
    square = [[0, 0], [1, 0], [1, 1], [0, 1]]
    choice.take("region", {"map": "other", "mode": "box", "polygon": square}, "m1")  # drawn on another map
    assert choice.active == Region(query="election")
    choice.take("region", {"map": "m1", "mode": "box", "polygon": square}, "m1")
    assert choice.query == "" and choice.active.mode == "box" and choice.active.describe() == "box of 4 corners"
    choice.take("pinned", 3, "m1")
    choice.clear()
    assert choice.active is None and choice.pinned == 3


def test_a_malformed_region_from_the_browser_is_ignored():
    """Found in review: a region of fewer than 3 corners was kept and failed every rerun of the Map page before its
    Clear button was drawn."""
    choice = MapChoice()
    square = [[0, 0], [1, 0], [1, 1], [0, 1]]
    choice.take("region", {"map": "m1", "mode": "box", "polygon": square}, "m1")
    for bad in ([[0, 0], [1, 1]], [[0, 0], [1, "x"], [1, 1]], [[0, 0], [1, float("nan")], [1, 1]], [[0], [1], [2]], 5):
        choice.take("region", {"map": "m1", "mode": "lasso", "polygon": bad}, "m1")
        assert choice.active.mode == "box" and len(choice.active.polygon) == 4, bad
