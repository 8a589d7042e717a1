"""Projection: stratified sampling, embedding reuse, caching, the job, the CLI and the Map page."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.data.corpus import Corpus
from core.data.workspace import Workspace
from core.selection import projection
from core.selection.projection import Group, Projection, project, save_projection, selection_groups, stratified_sample
from core.selection.strategies import select
from tests.apptest import open_app
from tests.conftest import TOY_SENTENCES

SENTENCES = sorted(set(TOY_SENTENCES))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=4), st.integers(2, 3000), st.integers(0, 5))
def test_stratified_sample_respects_cap_and_keeps_every_group(sizes, cap, seed):
    keep = stratified_sample(sizes, cap, seed)
    assert [len(k) <= s for k, s in zip(keep, sizes)] == [True] * len(sizes)
    if sum(sizes) <= cap:
        assert [len(k) for k in keep] == sizes
    else:
        assert sum(len(k) for k in keep) == cap
        floor = cap // (2 * len(sizes))
        assert all(len(k) >= min(s, floor) for k, s in zip(keep, sizes))  # a small TC is never sampled away
    for k, s in zip(keep, sizes):
        assert len(set(k.tolist())) == len(k) and (len(k) == 0 or (k.min() >= 0 and k.max() < s))


def _fake_umap(calls):
    def fake(x, n_neighbors=15, min_dist=0.1, seed=0, progress=None):
        calls.append(len(x))
        return np.asarray(x, dtype=np.float32)[:, :2], "fake"
    return fake


def test_project_selection_groups_reuses_cached_dc_embeddings(tiny_bert_dir, tmp_path, monkeypatch):
    from core.lm.embed import embed_corpus

    ws = Workspace(tmp_path / "ws")
    tc = Corpus(tokens=[s.split() for s in SENTENCES[:3]], fields={"domain": ["m"] * 3})
    dc = Corpus(tokens=[f"{s} {i}".split() for i, s in enumerate(SENTENCES * 3)], fields={"domain": ["m", "p"] * 12})
    dc_emb = np.asarray(embed_corpus(dc, str(tiny_bert_dir), workspace=ws), dtype=np.float32)
    sel = select(tc, dc, "random", 5, seed=1)
    calls: list[int] = []
    monkeypatch.setattr(projection, "umap_2d", _fake_umap(calls))
    proj = project(selection_groups(tc, dc, sel), str(tiny_bert_dir), workspace=ws, max_points=20)
    pts = proj.points
    assert calls == [20] and proj.sampled and "stratified sample of 20 of 27" in proj.meta["note"]
    assert set(pts["group"]) == {"TC", "selected", "filtered"} and (pts["group"] == "TC").sum() == 3
    assert list(pts.columns[:2]) == ["x", "y"] and {"text", "score", "row", "domain"} <= set(pts.columns)
    dc_pts = pts[pts["group"] != "TC"]
    np.testing.assert_allclose(dc_pts[["x", "y"]].to_numpy(), dc_emb[dc_pts["row"].to_numpy(), :2], atol=1e-6)
    assert set(dc_pts.loc[dc_pts["group"] == "selected", "row"]) <= set(sel.indices.tolist())
    assert dc_pts["text"].tolist() == [" ".join(dc.tokens[i]) for i in dc_pts["row"]]

    again = project(selection_groups(tc, dc, sel), str(tiny_bert_dir), workspace=ws, max_points=20)
    assert calls == [20] and again.key == proj.key  # cached: no second UMAP
    pd.testing.assert_frame_equal(again.points, pts)


@pytest.mark.slow  # ~25 s: numba compiles UMAP's kernels on first use
def test_real_umap_is_deterministic_for_a_seed():
    x = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    a, backend = projection.umap_2d(x, n_neighbors=5, seed=3)
    b, _ = projection.umap_2d(x, n_neighbors=5, seed=3)
    assert backend == "umap-learn" and a.shape == (40, 2)
    np.testing.assert_allclose(a, b)
    tiny, backend = projection.umap_2d(x[:3])
    assert tiny.shape == (3, 2) and backend.startswith("pca")


def test_projection_job_and_cli(tiny_bert_dir, tmp_path, monkeypatch):
    from core.cli import main
    from core.runner import jobs

    calls: list[int] = []
    monkeypatch.setattr(projection, "umap_2d", _fake_umap(calls))
    ws = Workspace(tmp_path / "ws")
    ws.save_corpus(Corpus(tokens=[s.split() for s in SENTENCES[:4]]), "tc", role="tc")
    ws.save_corpus(Corpus(tokens=[f"{s} {i}".split() for i, s in enumerate(SENTENCES * 2)]), "dc", role="dc")
    sel = jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 4})
    result = jobs.run_inline(ws, "project", {"selection": sel["key"], "model": str(tiny_bert_dir)})
    assert result["points"] == 20 and not result["sampled"] and calls == [20]
    proj = projection.load_projection(ws, result["key"])
    assert proj.meta["selection"] == sel["key"]
    assert proj.points["group"].value_counts().to_dict() == {"filtered": 12, "TC": 4, "selected": 4}

    src = tmp_path / "a.txt"
    src.write_text("\n".join(SENTENCES) + "\n")
    out = tmp_path / "map.parquet"
    assert main(["--workspace", str(ws.root), "project", str(src), "dc", "--out", str(out), "--model", str(tiny_bert_dir)]) == 0
    df = pd.read_parquet(out)
    assert df["group"].value_counts().to_dict() == {"dc": 16, "a": 8} and {"x", "y", "text"} <= set(df.columns)


def test_map_page_renders_a_selectable_chart_and_table(tmp_path, monkeypatch):

    from core.data.demo import write_demo_workspace

    ws = write_demo_workspace(tmp_path / "ws")
    tc, dc = ws.load_corpus(ws.corpus_for_role("tc")), ws.load_corpus(ws.corpus_for_role("dc"))
    sel = select(tc, dc, "random", 0.1, workspace=ws, names={"tc": "x", "dc": "y"})
    rng = np.random.default_rng(0)
    groups = selection_groups(tc, dc, sel)
    frames = [pd.DataFrame({"x": rng.normal(size=len(g.rows)), "y": rng.normal(size=len(g.rows)), "group": g.name, "row": g.rows,
                            "score": g.score if g.score is not None else np.nan,
                            "text": [" ".join(g.corpus.tokens[i]) for i in g.rows],
                            "domain": [g.corpus.fields["domain"][i] for i in g.rows]}) for g in groups]
    save_projection(ws, Projection(pd.concat(frames, ignore_index=True),
                                   {"selection": sel.key, "model": "default", "max_points": 5000, "sampled": True,
                                    "note": "a stratified sample", "backend": "fake", "seconds": 1.0, "groups": {}}, "fakeproj"))
    at = open_app(ws.root, monkeypatch, "views/map.py")
    assert any("Compute map" in i.value for i in at.info)  # the default cap has no map yet
    at.number_input(key="map_cap").set_value(5000).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Sampled" in w.value for w in at.warning)
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    spec = charts[0].proto
    assert "lasso" in str(spec.selection_mode).lower() or spec.selection_mode  # on_select with box/lasso
    at.selectbox(key="map_color").select("domain").run()
    assert not at.exception


def test_project_rejects_empty_input():
    from core.errors import UserError

    with pytest.raises(UserError, match="nothing to project"):
        project([Group("TC", Corpus(tokens=[]), np.arange(0))])


def test_umap_reports_epochs_and_hides_third_party_warnings(recwarn):
    from core.selection.projection import umap_2d

    seen = []
    x = np.random.default_rng(0).normal(size=(60, 8)).astype(np.float32)
    coords, backend = umap_2d(x, progress=lambda f, m="": seen.append((f, m)))
    assert coords.shape == (60, 2) and backend == "umap-learn"
    assert seen and seen[-1][0] == 1.0 and seen[-1][1] == "UMAP epoch 500/500"
    assert all(0 <= f <= 1 for f, _ in seen)
    assert not [w for w in recwarn if "umap" in str(w.filename) or "numba" in str(w.filename)]


def test_preview_is_saved_while_umap_runs_and_never_served_as_cached(tiny_bert_dir, tmp_path, monkeypatch):
    from core.selection import projection
    from core.selection.projection import file_groups, list_projections, project

    ws = Workspace(tmp_path / "ws")
    corpus = Corpus(tokens=[f"sentence number {i} about topic {i % 3}".split() for i in range(30)])
    monkeypatch.setattr(projection, "PREVIEW_MIN_POINTS", 10)
    seen_during_umap = []

    def fake(x, n_neighbors=15, min_dist=0.1, seed=0, progress=None):
        seen_during_umap.extend(list_projections(ws))
        return np.asarray(x, dtype=np.float32)[:, :2] + 1.0, "fake"

    monkeypatch.setattr(projection, "umap_2d", fake)
    proj = project(file_groups({"c": corpus}), str(tiny_bert_dir), workspace=ws)
    assert [p["preview"] for p in seen_during_umap] == [True]
    assert seen_during_umap[0]["key"] == proj.key
    final = list_projections(ws)
    assert len(final) == 1 and not final[0].get("preview") and final[0]["backend"] == "fake"
    # a preview left behind (UMAP killed) is recomputed, not served from the cache
    meta_path = ws.find_artifact("projection", proj.key) / "meta.json"
    import json

    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "preview": True}))
    again = project(file_groups({"c": corpus}), str(tiny_bert_dir), workspace=ws)
    assert again.meta["backend"] == "fake" and not again.meta.get("preview")


def test_first_start_queues_tc_and_dc_embeddings_once(tmp_path, monkeypatch):
    from core.runner import jobs
    from core.selection.projection import prepare_first_map

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / ".warm").touch()  # no warm-up process from a test
    ws = Workspace(tmp_path / "ws")
    ws.save_corpus(Corpus(tokens=[s.split() for s in SENTENCES[:4]]), "tc", role="tc")
    ws.save_corpus(Corpus(tokens=[f"{s} {i}".split() for i, s in enumerate(SENTENCES * 2)]), "dc", role="dc")
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: submitted.append((kind, params)))
    assert prepare_first_map(ws) == ["tc", "dc"]
    assert submitted == [("embed", {"corpus": "tc", "model": "default"}), ("embed", {"corpus": "dc", "model": "default"})]
    assert prepare_first_map(ws, max_sentences=5) == ["tc"]  # a large DC is left to its user


def test_map_page_shows_a_preview_as_such(tmp_path, monkeypatch):
    from core.runner import jobs

    ws = Workspace(tmp_path / "ws")
    ws.save_corpus(Corpus(tokens=[s.split() for s in SENTENCES[:4]]), "tc", role="tc")
    ws.save_corpus(Corpus(tokens=[f"{s} {i}".split() for i, s in enumerate(SENTENCES * 2)]), "dc", role="dc")
    sel = jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 4})
    points = pd.DataFrame({"x": np.arange(6.0), "y": np.arange(6.0), "group": ["TC", "selected", "filtered"] * 2,
                           "row": [0, 1, 2, 3, 4, 5], "score": np.nan, "text": ["a b"] * 6})
    save_projection(ws, Projection(points, {"selection": sel["key"], "model": "default", "max_points": 5000,
                                            "backend": "PCA preview (UMAP still running)", "preview": True, "groups": {}},
                                   "previewproj"))
    at = open_app(ws.root, monkeypatch, "views/map.py")
    at.number_input(key="map_cap").set_value(5000).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("PCA preview" in i.value for i in at.info)


def test_a_map_waits_for_the_running_background_embedding_of_its_corpora(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from core.runner import jobs
    from core.selection.projection import await_background_embeddings

    embed = SimpleNamespace(status="running", params={"corpus": "demo-dc", "model": "default"}, progress=0.4)
    other = SimpleNamespace(status="running", params={"corpus": "other", "model": "default"}, progress=0.1)
    polls = iter([[embed, other], [embed, other], [other]])
    monkeypatch.setattr(jobs, "list_jobs", lambda ws, kind=None: next(polls))
    seen = []
    await_background_embeddings(Workspace(tmp_path / "ws"), ["demo-tc", "demo-dc"], "default",
                                lambda f, m="": seen.append(m), poll=0)
    assert seen == ["waiting for the background embedding of demo-dc (40%)"] * 2
