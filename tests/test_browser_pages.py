"""Browser tests of the interactive pages: accept/reject and span edits on Inspect (the Map's are in test_browser_map.py).

The workspace is prepared with the same core functions the pages call (a small DC keeps
the embedding and UMAP steps to seconds); the browser then drives the real UI.
"""

from __future__ import annotations

import pytest

from tests.browser import IDLE, browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


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
        # state, not the counter alone: the counter is drawn before the cards, so under load it shows while the cards
        # below it are still the previous run's; the accepted card is drawn by the run that also draws every button
        page.locator("[class*='st-key-insp_card_accepted_']").first.wait_for()
        wait_for_app(page, "1 of 600 sentences reviewed")
        unreviewed = page.locator("[class*='st-key-insp_card_unreviewed_']").first
        unreviewed.get_by_role("button", name="Reject").click()  # the current card's name carries its key hint
        page.locator("[class*='st-key-insp_card_rejected_']").first.wait_for()
        wait_for_app(page, "2 of 600 sentences reviewed")
        page.reload()
        wait_for_app(page, "sentences reviewed")
        page.locator("[class*='st-key-insp_card_accepted_']").first.wait_for()
        page.locator("[class*='st-key-insp_card_rejected_']").first.wait_for()
        page.get_by_text("2 of 600 sentences reviewed").first.wait_for()
        screenshot(page, "inspect_review")


# --------------------------------------------------------------------------- issue 13: daily use


def test_inspect_span_edit_by_tokens_survives_reload_and_exports(inspect_ws):
    with streamlit_server(inspect_ws) as url, browser_page(height=2400) as page:
        page.goto(f"{url}/inspect")
        wait_for_app(page, "sentences reviewed")
        reviewer = page.get_by_role("textbox", name="Annotator")
        reviewer.fill("ann")
        reviewer.press("Enter")
        page.wait_for_function(IDLE)
        page.get_by_role("button", name="Correct", exact=True).first.click()
        grid = page.locator("[class*='st-key-insp_tokens_']").first
        grid.wait_for()
        grid.get_by_role("button").nth(0).click()
        grid.get_by_role("button").nth(1).click()
        new_type = page.get_by_role("textbox", name="or a new type")
        new_type.fill("band")
        new_type.press("Enter")
        page.wait_for_function(IDLE)
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

        with sqlite3.connect(inspect_ws / "team.sqlite") as con:
            kept = con.execute("SELECT COUNT(*) FROM review WHERE status IN ('accepted', 'corrected')").fetchone()[0]
        assert len([b for b in text.split("\n\n") if b.strip()]) == kept  # only reviewed sentences, no rejected one


def test_inspect_span_editor_picks_a_type_with_a_digit_key(inspect_ws):
    """Issue 24: the span editor had no key to pick a type; keys 1-9 pick the first nine types."""
    with streamlit_server(inspect_ws) as url, browser_page(height=2400) as page:
        page.goto(f"{url}/inspect")
        wait_for_app(page, "sentences reviewed")
        page.get_by_role("button", name="Correct", exact=True).first.click()
        grid = page.locator("[class*='st-key-insp_tokens_']").first
        grid.wait_for()
        grid.get_by_role("button").nth(0).click()
        page.wait_for_function(IDLE)
        second = page.locator("[class*='st-key-insp_type_'][class*='_b1 '] button")  # the second type: key 2
        entity = second.first.inner_text().strip().splitlines()[0]
        page.keyboard.press("2")
        page.get_by_role("button", name=entity).and_(page.locator("[data-testid='stBaseButton-primary']")).first.wait_for()
        page.get_by_role("button", name="Assign type").click()
        page.locator("[class*='st-key-insp_editor_'] .nx-lbl", has_text=entity).first.wait_for()
