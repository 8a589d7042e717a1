"""The Map in a real browser: one layout per corpus set, selections as layers (switching runs no job), a lasso
saved as a selection that the Selection page then lists, search highlight and a click's nearest neighbours.

The workspace is prepared with the core functions the pages call (a 600-sentence DC keeps embedding and UMAP to
seconds); the browser drives the real UI. Waits are on state (the component's render counter and layer name, the
page's text), never on time."""

from __future__ import annotations

import pytest

from tests.browser import IDLE, browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def map_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace
    from core.data.selection_store import list_selections
    from core.runner import jobs

    root = tmp_path_factory.mktemp("mapws")
    ws = write_demo_workspace(root, dc_size=600)
    for strategy in ("dsir", "random"):
        jobs.run_inline(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": strategy, "budget": 0.2})
    out = jobs.run_inline(ws, "project", {"corpora": ["tc", "dc"]})
    assert out["points"] == 1000 and not out["reused"]
    assert jobs.run_inline(ws, "project", {"selection": list_selections(ws)[0].key})["reused"]
    return root


def _stats(page) -> dict:
    return page.evaluate("() => ({...window.__atlasStats})")


def _wait_layer(page, text: str) -> None:
    page.wait_for_function("(t) => window.__atlasStats && window.__atlasStats.layer && window.__atlasStats.layer.includes(t)",
                           arg=text)


def _draw(page, points) -> dict | None:
    """Drag through `points` (fractions of the canvas); returns the outline's box as drawn just before release."""
    box = page.locator(".atlas-stage canvas").bounding_box()
    x0, y0, w, h = box["x"], box["y"], box["width"], box["height"]
    page.mouse.move(x0 + w * points[0][0], y0 + h * points[0][1])
    page.mouse.down()
    for fx, fy in points[1:]:
        page.mouse.move(x0 + w * fx, y0 + h * fy, steps=8)
    shapes = page.locator("svg.atlas-draw polyline, svg.atlas-draw rect")  # locators reach into the component's shadow root
    outline = shapes.first.evaluate("""(s) => {
        const r = s.getBoundingClientRect(), cs = getComputedStyle(s);
        return {tag: s.tagName, ns: s.namespaceURI, width: r.width, height: r.height, stroke: cs.stroke};
    }""") if shapes.count() else None
    page.mouse.up()
    return outline


def test_switching_selection_runs_no_job_and_a_lasso_becomes_a_selection(map_ws):
    from core.data.selection_store import list_selections
    from core.data.workspace import Workspace
    from core.runner import jobs

    ws = Workspace(map_ws)
    before = len(jobs.list_jobs(ws))
    dsir, random = (next(m for m in list_selections(ws) if m.strategy == s) for s in ("dsir", "random"))
    with streamlit_server(map_ws) as url, browser_page(height=1800) as page:
        page.goto(f"{url}/map")
        wait_for_app(page, "Colour by")
        page.wait_for_function("() => window.__atlasStats && window.__atlasStats.renders >= 1")
        first = _stats(page)
        assert first["points"] == 1000 and first["renderer"] in ("webgl2", "canvas2d")
        _wait_layer(page, random.key[:8])  # the newest selection is the current one
        picker = page.locator(".st-key-map_selection").get_by_role("combobox")
        assert picker.input_value() == random.label
        picker.click()  # open the selection picker and take the other one
        page.get_by_role("option", name=dsir.label).click()
        _wait_layer(page, dsir.key[:8])
        switched = _stats(page)
        assert switched["renders"] > first["renders"] and switched["points"] == 1000
        assert len(jobs.list_jobs(ws)) == before, "switching the selection started a job"
        screenshot(page, "map_switch")

        page.locator(".atlas-modes button", has_text="Lasso").click()
        outline = _draw(page, [(0.05, 0.05), (0.95, 0.05), (0.95, 0.95), (0.05, 0.95), (0.05, 0.1)])
        # issue 43.15: the lasso's outline is drawn while the mouse moves (an SVG polyline with a stroke)
        assert outline and outline["tag"] == "polyline" and outline["ns"] == "http://www.w3.org/2000/svg"
        assert outline["width"] > 100 and outline["height"] > 100 and outline["stroke"] not in ("none", "")
        wait_for_app(page, "Save the chosen sentences")
        assert int(page.get_by_test_id("stMetricValue").first.inner_text().replace(",", "")) > 0
        page.get_by_role("button", name="Save as selection").click()
        wait_for_app(page, "Saved selection")
        screenshot(page, "map_lasso_saved")
    region = [m for m in list_selections(ws) if m.strategy == "map-region"]
    assert len(region) == 1 and region[0].lineage["region"]["mode"] == "lasso" and region[0].budget > 0
    assert len(jobs.list_jobs(ws)) == before
    with streamlit_server(map_ws) as url, browser_page(height=1400) as page:
        page.goto(f"{url}/selection")
        wait_for_app(page, "Compare saved selections")
        picker = page.locator(".st-key-sel_view").get_by_role("combobox")
        assert picker.input_value() == region[0].label  # the newest selection opens on the Selection page


def test_search_highlights_and_a_click_lists_neighbours(map_ws):
    with streamlit_server(map_ws) as url, browser_page(height=1800) as page:
        page.goto(f"{url}/map")
        wait_for_app(page, "Colour by")
        page.wait_for_function("() => window.__atlasStats && window.__atlasStats.renders >= 1")
        search = page.locator(".atlas-search")
        search.fill("album")
        search.press("Enter")
        wait_for_app(page, "search “album”")
        assert "match" in page.locator(".atlas-info").inner_text() or page.get_by_text("Chosen sentences").count()
        screenshot(page, "map_search")
        # issue 43.15: no cluster name covers a highlighted point (a name over one steps aside while it is highlighted)
        boxes = page.locator(".atlas-names span").evaluate_all("(els) => els.map((e) => e.getBoundingClientRect().toJSON())")
        points = page.evaluate("() => window.__atlasHighlighted().map((i) => window.__atlasPoint(i))")
        covered = {"points": len(points), "labels": len(boxes),
                   "covered": sum(any(b["left"] <= p["x"] <= b["right"] and b["top"] <= p["y"] <= b["bottom"] for b in boxes)
                                  for p in points)}
        assert covered["points"] > 0 and covered["covered"] == 0, covered
        pos = page.evaluate("() => window.__atlasPoint(3)")  # a TC sentence, where the component draws it
        page.mouse.move(pos["x"], pos["y"])
        page.locator(".atlas-tip").wait_for(state="visible")  # hover reads it in the browser
        page.mouse.click(pos["x"], pos["y"])
        page.get_by_role("heading", name="Nearest neighbours").wait_for()  # not the intro's "its nearest neighbours"
        page.wait_for_function(IDLE)
        page.get_by_text("closest sentences on this map by cosine").first.wait_for()
        screenshot(page, "map_neighbours")
