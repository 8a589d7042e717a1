"""Issue 24 in a real browser: a bad upload shows one error naming the file and line once, and no progress bar is
left above it. The upload is read by the "import" job (core.data.uploads), so its error comes through the job panel,
and a good one is imported with the tab's help gone."""

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
        wait_for_app(page, "bad.conll:2")
        errors = page.locator("[data-testid='stAlertContentError']")
        assert errors.count() == 1
        error = errors.first.inner_text()
        assert "Import · upload bad.conll" in error and error.count("bad.conll:2") == 1, error
        assert page.locator("[data-testid='stProgress']").count() == 0  # no bar left above the failure


def test_an_upload_is_imported_by_a_job_that_outlives_the_tab(tmp_path):
    from core.data.demo import write_demo_workspace
    from core.data.uploads import uploads_dir
    from core.data.workspace import Workspace
    from core.runner import jobs
    from tests.browser import wait_until

    write_demo_workspace(tmp_path / "ws", dc_size=200)
    kept, closed = tmp_path / "my notes.conll", tmp_path / "later.txt"
    kept.write_text("Ada\tB-PER\nsang\tO\n\nBob\tB-PER\nplayed\tO\n")
    closed.write_text("one more sentence\n")
    ws = Workspace(tmp_path / "ws")
    with streamlit_server(tmp_path / "ws") as url:
        with browser_page(height=1400) as page:  # the tab stays: the job panel says so, the corpus is the one shown
            page.goto(url)
            wait_for_app(page, "Workspace corpora")
            upload_file(page, kept)
            page.get_by_role("button", name="Import", exact=True).click()
            wait_for_app(page, "'my_notes': 2 sentences, 4 tokens")
            sentences = page.locator("[data-testid='stMetricValue']").first  # the corpus inspected is the new one
            assert wait_until(lambda: sentences.inner_text() == "2"), sentences.inner_text()
            assert ws.corpus_info("my_notes").source == "upload: my notes.conll"
            upload_file(page, closed)
            page.get_by_role("button", name="Import", exact=True).click()
            assert wait_until(lambda: len(jobs.list_jobs(ws, "import")) == 2)  # submitted: the tab closes at once
        assert wait_until(lambda: ws.has_corpus("later"), timeout=120)
        assert wait_until(lambda: not any(uploads_dir(ws).iterdir()))  # each copy went with its import
