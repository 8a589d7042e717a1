"""Browser tests of the interactive pages: a lasso on the Map, accept/reject on Inspect.

The workspace is prepared with the same core functions the pages call (a small DC keeps
the embedding and UMAP steps to seconds); the browser then drives the real UI.
"""

from __future__ import annotations

import pytest

from tests.browser import browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def map_ws(tmp_path_factory):
    from core import jobs
    from core.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("mapws")
    ws = write_demo_workspace(root, dc_size=600)
    sel = jobs.run_inline(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "dsir", "budget": 0.2})
    assert sel["selected"] == 120
    from core.select import list_selections

    key = list_selections(ws)[-1]["key"]
    jobs.run_inline(ws, "project", {"selection": key, "model": "default", "max_points": 50_000, "seed": 0})
    return root


def _lasso(page, box) -> None:
    """Drag a closed polygon over the middle of the plot area (plotly's lasso needs a path)."""
    x0, y0, w, h = box["x"], box["y"], box["width"], box["height"]
    pts = [(0.15, 0.15), (0.85, 0.15), (0.85, 0.85), (0.15, 0.85), (0.15, 0.2)]
    page.mouse.move(x0 + w * pts[0][0], y0 + h * pts[0][1])
    page.mouse.down()
    for fx, fy in pts[1:]:
        page.mouse.move(x0 + w * fx, y0 + h * fy, steps=12)
    page.mouse.up()


def test_map_lasso_lists_the_chosen_sentences(map_ws):
    with streamlit_server(map_ws) as url, browser_page(height=1600) as page:
        page.goto(f"{url}/map")
        wait_for_app(page, "Colour by")
        plot = page.locator(".js-plotly-plot .nsewdrag").first
        plot.wait_for(state="visible")
        page.get_by_text("Draw a box or a lasso on the map").first.wait_for()
        _lasso(page, plot.bounding_box())
        wait_for_app(page, "Points chosen")
        chosen = page.get_by_test_id("stMetricValue").first.inner_text()
        assert int(chosen.replace(",", "")) > 0
        screenshot(page, "map_lasso")
        table = page.locator("[data-testid='stDataFrame'], [data-testid='stDataFrameResizable']").first
        table.wait_for(state="visible", timeout=30_000)


@pytest.fixture(scope="module")
def inspect_ws(tmp_path_factory):
    """Demo workspace with a tiny NER model trained here and its DC predictions cached."""
    from core import inspect as insp
    from core.demo import write_demo_workspace
    from core.ner import preset_config, train_ner
    from tests.tiny_models import build_tiny_bert

    root = tmp_path_factory.mktemp("inspectws")
    ws = write_demo_workspace(root, dc_size=600)
    lc = ws.load_corpus("demo-lc")
    base = build_tiny_bert(root / "tinybase", [" ".join(t) for t in lc.tokens])
    model_dir = ws.runs_dir / "tiny-ner" / "model"
    train_ner(lc, ws.load_corpus("demo-dev").subset(range(20)), str(base), model_dir, preset_config("tiny", epochs=1))
    insp.predict_cached(ws, insp.prediction_request(ws, str(model_dir), "demo-dc"))
    return root


def test_inspect_accept_and_reject_survive_a_reload(inspect_ws):
    with streamlit_server(inspect_ws) as url, browser_page(height=2400) as page:
        page.goto(f"{url}/inspect")
        wait_for_app(page, "sentences reviewed")
        page.get_by_role("button", name="Accept", exact=True).first.click()
        wait_for_app(page, "state: accepted")
        page.get_by_role("button", name="Reject", exact=True).nth(1).click()
        wait_for_app(page, "state: rejected")
        page.reload()
        wait_for_app(page, "sentences reviewed")
        page.get_by_text("state: accepted").first.wait_for()
        page.get_by_text("state: rejected").first.wait_for()
        page.get_by_text("2 of 600 sentences reviewed").first.wait_for()
        screenshot(page, "inspect_review")
