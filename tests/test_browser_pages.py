"""Browser tests of the interactive pages: accept/reject on Inspect (the Map's are in test_browser_map.py).

The workspace is prepared with the same core functions the pages call (a small DC keeps
the embedding and UMAP steps to seconds); the browser then drives the real UI.
"""

from __future__ import annotations

import pytest

from tests.browser import browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


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
