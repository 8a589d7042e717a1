"""End-to-end in a real browser: Streamlit server + Debian Chromium via Playwright."""

import pytest
from playwright.sync_api import expect

from tests.browser import browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    from core.data.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("browserws")
    write_demo_workspace(root)
    with streamlit_server(root) as url:
        yield url


def test_corpora_page_shows_statistics(app_url):
    with browser_page(height=2000) as page:
        page.goto(app_url)
        wait_for_app(page, "Workspace corpora")
        labels = page.get_by_test_id("stMetricLabel")
        labels.filter(has_text="Type-token ratio").first.wait_for()  # statistics render after the corpus table
        for label in ("Sentences", "Tokens", "Vocabulary", "Type-token ratio"):
            expect(labels.filter(has_text=label)).to_have_count(1)  # waits: a rerun can redraw the metrics
        assert page.get_by_text("demo-dc").count() >= 1
        page.wait_for_selector(".js-plotly-plot", timeout=60_000)
        shot = screenshot(page, "corpora")
        assert shot.stat().st_size > 10_000


def test_a_page_url_opened_directly_gets_the_app_sidebar(app_url):
    """Regression: with a pages/ folder Streamlit ran /runs alone (legacy mode), without app.py's sidebar."""
    with browser_page() as page:
        page.goto(f"{app_url}/runs")
        wait_for_app(page, "Start NER training")
        sidebar = page.get_by_test_id("stSidebar")
        for text in ("Corpora", "Similarity", "Selection", "Map", "Inspect", "Workspace"):
            assert sidebar.get_by_text(text, exact=True).count() >= 1, text
