"""Map exploring helpers (core.selection.mapview) and the Map page using them: robust axes, search
highlight, nearest neighbours from the saved point embeddings, draw order, colour by score."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.selection import mapview
from core.selection.projection import Projection, load_projection, save_projection
from tests.apptest import open_app


def test_robust_range_ignores_outliers():
    v = np.concatenate([np.random.default_rng(0).normal(size=2000), [500.0, -400.0]])
    lo, hi = mapview.robust_range(v)
    assert -5 < lo < -2 and 2 < hi < 5
    assert mapview.robust_range(np.array([3.0, 3.0])) == pytest.approx((2.85, 3.15))
    assert mapview.robust_range(np.array([np.nan])) == (0.0, 1.0)


def test_search_mask_is_literal_case_insensitive_and_needs_every_word():
    texts = ["The Beatles played (live)", "beatles songs", "Jazz in Oslo"]
    assert mapview.search_mask(texts, "BEATLES").tolist() == [True, True, False]
    assert mapview.search_mask(texts, "beatles live").tolist() == [True, False, False]
    assert mapview.search_mask(texts, "(live").tolist() == [True, False, False]
    assert not mapview.search_mask(texts, "  ").any()


def test_nearest_neighbours_cosine_excludes_the_point(tmp_path):
    x = np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0], [0.7, 0.7]], dtype=np.float32)
    mapview.save_point_vectors(tmp_path, x * 5)  # saved normalised
    vecs = np.load(tmp_path / mapview.VECTORS)
    assert vecs.dtype == np.float16 and np.allclose(np.linalg.norm(vecs.astype(np.float32), axis=1), 1, atol=1e-3)
    idx, sims = mapview.nearest_neighbours(vecs, 0, k=3)
    assert idx.tolist() == [1, 4, 2] and sims[0] > sims[1] > sims[2]
    assert 0 not in mapview.nearest_neighbours(vecs, 0, k=10)[0]
    with pytest.raises(Exception, match="not on this map"):
        mapview.nearest_neighbours(vecs, 9)
    idx, d = mapview.nearest_on_map(np.array([0.0, 1, 5]), np.array([0.0, 0, 0]), 0, k=1)
    assert idx.tolist() == [1] and d.tolist() == [1.0]


def test_draw_order_puts_tc_last_unless_asked():
    assert mapview.draw_order(["TC", "selected", "filtered", "TC"]) == ["filtered", "selected", "TC"]
    assert mapview.draw_order(["TC", "selected", "filtered"], tc_on_top=False) == ["TC", "filtered", "selected"]


@pytest.fixture
def map_ws(tmp_path):
    """Demo workspace + a saved selection + a fake projection with its point vectors (no UMAP)."""
    from core.data.demo import write_demo_workspace
    from core.selection.projection import selection_groups
    from core.selection.strategies import select

    ws = write_demo_workspace(tmp_path / "ws", dc_size=300)
    tc, dc = ws.load_corpus("demo-tc"), ws.load_corpus("demo-dc")
    sel = select(tc, dc, "random", 0.1, workspace=ws, names={"tc": "demo-tc", "dc": "demo-dc"})
    rng = np.random.default_rng(0)
    frames = [pd.DataFrame({"x": rng.normal(size=len(g.rows)), "y": rng.normal(size=len(g.rows)), "group": g.name, "row": g.rows,
                            "score": g.score if g.score is not None else np.nan,
                            "text": [" ".join(g.corpus.tokens[i]) for i in g.rows]})
              for g in selection_groups(tc, dc, sel)]
    points = pd.concat(frames, ignore_index=True)
    vectors = rng.normal(size=(len(points), 8)).astype(np.float32)
    vectors[1] = vectors[0] + 0.01  # point 1 is point 0's nearest neighbour
    save_projection(ws, Projection(points, {"selection": sel.key, "model": "default", "max_points": 50_000, "backend": "fake",
                                            "seconds": 1.0, "groups": {}}, "fakeproj", vectors=vectors))
    return ws, points


def test_map_page_search_neighbours_and_score_colours(map_ws, monkeypatch):
    ws, points = map_ws
    assert mapview.load_point_vectors(ws, "fakeproj").shape == (len(points), 8)
    assert load_projection(ws, "fakeproj").points.shape[0] == len(points)
    word = points["text"].iloc[5].split()[0]
    at = open_app(ws.root, monkeypatch, "views/map.py")
    at.text_input(key="map_search").input(word).run()
    assert not at.exception, [e.value for e in at.exception]
    n = int(mapview.search_mask(points["text"].tolist(), word).sum())
    assert any(f"{n:,} of {len(points):,} sentences match" in c.value for c in at.caption)
    fig = at.get("plotly_chart")[0].proto.spec
    assert f"search: {n} matches" in fig
    at.session_state["map_pinned_fakeproj"] = 0
    at.run()
    near = next(df.value for df in at.dataframe if "cosine" in getattr(df.value, "columns", []))
    assert near["text"].iloc[0] == points["text"].iloc[1]
    at.selectbox(key="map_color").select("score").run()
    assert not at.exception and "colorbar" in at.get("plotly_chart")[0].proto.spec
