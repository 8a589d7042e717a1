"""Issue 24 in a real browser: a bad upload shows one error naming the file and line once, and no progress bar is
left above it."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, streamlit_server, upload_file, wait_for_app

pytestmark = pytest.mark.browser


def test_a_bad_upload_shows_one_clean_error(tmp_path):
    from core.data.demo import write_demo_workspace

    write_demo_workspace(tmp_path / "ws", dc_size=200)
    bad = tmp_path / "bad.conll"
    bad.write_text("John\tB-PER\nSmith\tQ-PER\n\n")
    with streamlit_server(tmp_path / "ws") as url, browser_page(height=1400) as page:
        page.goto(url)
        wait_for_app(page, "Workspace corpora")
        upload_file(page, bad)
        page.get_by_role("button", name="Import", exact=True).click()
        wait_for_app(page, "Could not import")
        error = page.locator("[data-testid='stAlertContentError']").first.inner_text()
        assert "bad.conll:2" in error and error.count("bad.conll") == 1, error
        assert page.get_by_text("reading...").count() == 0  # the progress bar went with the failure
