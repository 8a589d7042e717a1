"""Open the app under Streamlit's AppTest on a given workspace, optionally on one page."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def open_app(workspace: str | Path, monkeypatch, page: str | None = None) -> AppTest:
    """Run app.py with NERSELECT_WORKSPACE=workspace, switch to `page`; fail on any exception."""
    monkeypatch.setenv("NERSELECT_WORKSPACE", str(workspace))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page is not None:
        at.switch_page(page)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def shown(element) -> str:
    """An AppTest element's text as the user reads it: error boxes escape Markdown (ui.show_error), so '\\.' is '.'."""
    import re

    return re.sub(r"\\(.)", r"\1", str(element.value))
