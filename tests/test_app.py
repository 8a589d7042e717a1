"""Every page renders without exception on the demo workspace (Streamlit AppTest)."""

import re
from pathlib import Path

import pytest

from tests.apptest import open_app

ROOT = Path(__file__).resolve().parent.parent
# the annotator's queue is registered only for a signed-in annotator (tests/test_team_pages.py renders it)
PAGES = [p for p in re.findall(r'st\.Page\("(views/[a-z_]+\.py)"', (ROOT / "app.py").read_text()) if p != "views/queue.py"]


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("appws")
    write_demo_workspace(root)
    return root


def test_pages_are_registered():
    assert "views/corpora.py" in PAGES
    assert all((ROOT / p).exists() for p in PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders(page, demo_ws, monkeypatch):
    open_app(demo_ws, monkeypatch, page)


def test_corpora_page_shows_statistics(demo_ws, monkeypatch):
    at = open_app(demo_ws, monkeypatch)
    labels = [m.label for m in at.metric]
    assert {"Sentences", "Tokens", "Vocabulary", "Type-token ratio"} <= set(labels)
    names = at.selectbox(key="corpus_view").options
    assert any("demo-lc" in n for n in names)
    at.selectbox(key="corpus_view").select("demo-lc").run()
    assert not at.exception
    assert at.metric[0].value == "150"


def test_corpora_page_bad_path_import_shows_error_not_traceback(demo_ws, monkeypatch, tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("John B-PER\nlives\n")
    from core.data.workspace import Workspace
    from core.runner import jobs

    ws = Workspace(demo_ws)
    before = len(ws.list_corpora())
    job = jobs.submit(ws, "import", {"path": str(bad), "role": "lc"})
    job = jobs.wait(ws, job.id, timeout=120)
    assert job.status == "failed" and job.error.startswith(f"{bad}:2:")
    assert len(ws.list_corpora()) == before
    open_app(demo_ws, monkeypatch)


def test_the_path_import_form_passes_format_and_overwrite_to_the_job(demo_ws, monkeypatch, tmp_path):
    """The CLI's --format and --overwrite, on the page (found in review: a browser user could not correct a wrong
    format guess, nor replace a corpus from a server path)."""
    from core.data.workspace import Workspace
    from core.runner import jobs

    f = tmp_path / "tagged.txt"
    f.write_text("EU\tB-ORG\nrejects\tO\n")  # a CoNLL guess; named as text, each line is a sentence
    at = open_app(demo_ws, monkeypatch)
    at.text_input(key="path_input").set_value(str(f))
    at.text_input(key="path_name").set_value("forced-text")
    at.selectbox(key="path_format").select("txt")
    at.checkbox(key="path_overwrite").check()
    next(b for b in at.button if "Import in the background" in b.label).click().run()
    assert not at.exception, [e.value for e in at.exception]
    ws = Workspace(demo_ws)
    job = next(j for j in jobs.list_jobs(ws, "import") if j.params.get("name") == "forced-text")
    assert (job.params["format"], job.params["overwrite"]) == ("txt", True)
    assert jobs.wait(ws, job.id, timeout=120).status == "done"
    info = ws.corpus_info("forced-text")
    assert (info.sentences, info.labeled) == (2, False)


def test_an_error_quoting_a_file_line_shows_the_line_as_text_not_markdown():
    """A message quotes the bad line of a file; a line holding Markdown loaded a remote image or restyled the box."""
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from core.errors import UserError
        from ui import run_guarded

        def fail() -> None:
            raise UserError("bad.conll:2: expected 'TOKEN<TAB>TAG', got '![t](http://evil.example/p.png) :red[**BIG**]'")

        run_guarded(fail, "Could not import")

    at = AppTest.from_function(page, default_timeout=60).run()
    raw = at.error[0].value
    assert "![t](" not in raw and ":red[" not in raw and "\\!\\[t\\]" in raw
    from tests.apptest import shown

    assert shown(at.error[0]).endswith("got '![t](http://evil.example/p.png) :red[**BIG**]'")
