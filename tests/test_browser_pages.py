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
    from core.data.demo import write_demo_workspace
    from core.runner import jobs

    root = tmp_path_factory.mktemp("mapws")
    ws = write_demo_workspace(root, dc_size=600)
    sel = jobs.run_inline(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "dsir", "budget": 0.2})
    assert sel["selected"] == 120
    from core.selection.store import list_selections

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
        page.locator("[class*='st-key-map_drag'] button", has_text="lasso").click()  # opens in pan mode (a click pins)
        # wait on state: the redrawn figure is in lasso mode (the text "Colour by" is there before the rerun ends)
        page.wait_for_function("() => { const gd = document.querySelector('.js-plotly-plot');"
                               " return gd && gd._fullLayout && gd._fullLayout.dragmode === 'lasso'; }")
        wait_for_app(page, "Colour by")
        plot = page.locator(".js-plotly-plot .nsewdrag").first
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
    from core.data.demo import write_demo_workspace
    from core.review import predictions as insp
    from core.train.ner_train import preset_config, train_ner
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
        wait_for_app(page, "1 of 600 sentences reviewed")  # the rerun has finished, not just begun: buttons are current
        page.get_by_role("button", name="Reject", exact=True).nth(1).click()
        wait_for_app(page, "2 of 600 sentences reviewed")
        page.reload()
        wait_for_app(page, "sentences reviewed")
        page.locator("[class*='st-key-insp_card_accepted_']").first.wait_for()
        page.locator("[class*='st-key-insp_card_rejected_']").first.wait_for()
        page.get_by_text("2 of 600 sentences reviewed").first.wait_for()
        screenshot(page, "inspect_review")


# --------------------------------------------------------------------------- issue 13: daily use


def _point_position(page, group: str):
    """Pixel position (page coordinates) of a point of `group` near the middle of the cloud, read
    from plotly's own axes so the click lands on the marker."""
    return page.evaluate("""(group) => {
        const gd = document.querySelector('.js-plotly-plot');
        const fl = gd._fullLayout, box = gd.getBoundingClientRect();
        const trace = gd._fullData.find(t => t.name === group);
        const xs = Array.from(trace.x), ys = Array.from(trace.y);
        const mx = xs.slice().sort((a, b) => a - b)[xs.length >> 1], my = ys.slice().sort((a, b) => a - b)[ys.length >> 1];
        let best = 0, bestD = Infinity;
        xs.forEach((x, i) => { const d = (x - mx) ** 2 + (ys[i] - my) ** 2; if (d < bestD) { bestD = d; best = i; } });
        return {x: box.left + fl.xaxis._offset + fl.xaxis.l2p(xs[best]),
                y: box.top + fl.yaxis._offset + fl.yaxis.l2p(ys[best]) + window.scrollY};
    }""", group)


def test_map_search_highlights_and_a_click_lists_neighbours(map_ws):
    from core.data.workspace import Workspace
    from core.selection.projection import list_projections, load_projection

    ws = Workspace(map_ws)
    points = load_projection(ws, list_projections(ws)[-1]["key"]).points
    word = max((w for t in points["text"] for w in t.split() if w.isalpha()), key=lambda w: (len(w) > 5, w))
    with streamlit_server(map_ws) as url, browser_page(height=1800) as page:
        page.goto(f"{url}/map")
        wait_for_app(page, "Colour by")
        page.locator(".js-plotly-plot .nsewdrag").first.wait_for(state="visible")
        search = page.get_by_role("textbox", name="Search sentences")
        search.fill(word)
        search.press("Enter")
        wait_for_app(page, "sentences match")
        page.locator(".js-plotly-plot .legendtext", has_text="search:").first.wait_for()
        screenshot(page, "map_search")
        search.fill("")
        search.press("Enter")
        page.get_by_text("sentences match").first.wait_for(state="detached")
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
        pos = _point_position(page, "TC")
        page.mouse.click(pos["x"], pos["y"] - page.evaluate("window.scrollY"))
        wait_for_app(page, "Nearest neighbours")
        page.get_by_text("closest points by cosine similarity").first.wait_for()
        table = page.locator("[class*='st-key-map_neighbours'], [data-testid='stDataFrame']").first
        table.wait_for(state="visible")
        screenshot(page, "map_neighbours")


def test_inspect_span_edit_by_tokens_survives_reload_and_exports(inspect_ws):
    with streamlit_server(inspect_ws) as url, browser_page(height=2400) as page:
        page.goto(f"{url}/inspect")
        wait_for_app(page, "sentences reviewed")
        reviewer = page.get_by_role("textbox", name="Annotator")
        reviewer.fill("ann")
        reviewer.press("Enter")
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
        page.get_by_role("button", name="Correct", exact=True).first.click()
        grid = page.locator("[class*='st-key-insp_tokens_']").first
        grid.wait_for()
        grid.get_by_role("button").nth(0).click()
        grid.get_by_role("button").nth(1).click()
        new_type = page.get_by_role("textbox", name="or a new type")
        new_type.fill("band")
        new_type.press("Enter")
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
        page.get_by_role("button", name="Assign type").click()
        page.locator("[class*='st-key-insp_editor_'] .nx-lbl", has_text="band").first.wait_for()
        screenshot(page, "inspect_span_edit")
        page.get_by_role("button", name="Save correction").click()
        page.locator("[class*='st-key-insp_card_corrected_']").first.wait_for()
        page.reload()
        wait_for_app(page, "sentences reviewed")
        card = page.locator("[class*='st-key-insp_card_corrected_']").first
        card.wait_for()
        assert "by ann" in card.inner_text()
        card.locator(".nx-lbl", has_text="band").first.wait_for()
        page.get_by_text("accepted / corrected sentences").first.click()
        with page.expect_download() as download:
            page.get_by_role("button", name="Download", exact=True).click()
        text = open(download.value.path(), encoding="utf-8").read()
        assert "B-band" in text
        import sqlite3

        with sqlite3.connect(inspect_ws / "review.sqlite") as con:
            kept = con.execute("SELECT COUNT(*) FROM review WHERE status IN ('accepted', 'corrected')").fetchone()[0]
        assert len([b for b in text.split("\n\n") if b.strip()]) == kept  # only reviewed sentences, no rejected one
