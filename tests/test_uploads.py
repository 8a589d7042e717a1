"""Browser uploads go through the "import" job (core.data.uploads): read in the page, a large one stopped when the tab
closed. The job's copy lives under uploads/, its messages name the browser's file, and it goes when the import ends."""

from __future__ import annotations

import os
import time

import pytest

from core.access import AccessDenied, Actor, Role
from core.data.uploads import KEEP_SECONDS, discard_upload, import_staged, stage_upload, sweep_old_uploads, uploads_dir
from core.data.workspace import Workspace
from core.errors import CorpusError, UserError
from core.runner import jobs

RITA = Actor("rita", Role.RESEARCHER)
ANN = Actor("ann", Role.ANNOTATOR)


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path / "ws")


def test_an_upload_is_imported_by_the_job_and_its_copy_goes(ws):
    staged = stage_upload(ws, "C:\\Users\\me\\my music.conll", b"Ada B-PER\nsang O\n\nBob B-PER\n", actor=RITA)
    assert staged.parent.parent == uploads_dir(ws) and staged.name == "my_music.conll"  # no folders from the browser
    job = jobs.submit(ws, "import", {"path": str(staged), "upload": "my music.conll", "role": "lc"}, start=False,
                      actor=RITA)  # the copy is under the workspace: a signed-in user may name it
    result = jobs.run_inline(ws, "import", job.params)
    assert result["name"] == "my_music" and result["sentences"] == 2  # a name the workspace accepts, from the file's
    info = ws.corpus_info("my_music")
    assert info.source == "upload: my music.conll" and list(ws.roles().values()) == ["my_music"]
    assert not staged.exists() and not staged.parent.exists()


def test_a_bad_upload_names_the_browsers_file_stores_nothing_and_drops_its_copy(ws):
    staged = stage_upload(ws, "mine.conll", b"John B-PER\nlives\n")
    with pytest.raises(CorpusError) as err:
        jobs.run_inline(ws, "import", {"path": str(staged), "upload": "mine.conll"})
    assert str(err.value).startswith("mine.conll:2:")
    assert not ws.has_corpus("mine") and not staged.parent.exists()


def test_an_import_that_removes_its_file_is_never_pointed_at_another_workspace_file(ws, tmp_path):
    ws.import_upload("kept.txt", b"one line\n", name="kept")
    for other in (ws.settings_path, ws.corpus_path("kept"), uploads_dir(ws) / "loose.txt", tmp_path / "x.txt"):
        other.parent.mkdir(parents=True, exist_ok=True)
        if not other.exists():
            other.write_text("one line\n")
        with pytest.raises(UserError, match="no uploaded file's copy"):
            import_staged(ws, other, "x.txt")
        assert other.exists()


def test_empty_uploads_and_annotators_are_refused_before_anything_is_written(ws):
    with pytest.raises(UserError, match="empty"):
        stage_upload(ws, "empty.txt", b"")
    with pytest.raises(AccessDenied):
        stage_upload(ws, "mine.txt", b"one line\n", actor=ANN)
    assert not uploads_dir(ws).exists() or not any(uploads_dir(ws).iterdir())


def test_a_stopped_imports_copy_waits_a_week_for_resume(ws):
    old = stage_upload(ws, "old.txt", b"one line\n")
    new = stage_upload(ws, "new.txt", b"one line\n")
    week_ago = time.time() - KEEP_SECONDS - 60
    os.utime(old.parent, (week_ago, week_ago))
    assert sweep_old_uploads(ws) == 1
    assert not old.exists() and new.exists()
    with pytest.raises(UserError, match="gone"):
        import_staged(ws, old, "old.txt")


def test_the_job_is_described_by_the_browsers_file_name(ws):
    from core.runner.jobview import describe_job

    staged = stage_upload(ws, "dc.txt", b"one line\n")
    job = jobs.submit(ws, "import", {"path": str(staged), "upload": "dc.txt"}, start=False)
    assert describe_job(job) == "Import · upload dc.txt"
    by_path = jobs.submit(ws, "import", {"path": "/data/dc.txt"}, start=False)
    assert describe_job(by_path) == "Import · path dc.txt"  # a path by its file name


def test_the_browsers_file_name_is_no_server_path_and_a_copy_is_its_uploaders(ws):
    """Found in review: with accounts the upload's name was judged as a server path ('README.md' exists in the
    checkout: refused; '~data.txt' raised RuntimeError through the page), and one researcher could import, and so
    remove, another's staged copy."""
    for name in ("README.md", "~data.txt", "../../etc/passwd"):
        staged = stage_upload(ws, name, b"one line\n", actor=RITA)
        assert jobs.submit(ws, "import", {"path": str(staged), "upload": name}, start=False, actor=RITA).status == "queued"
    bobs = stage_upload(ws, "bob.txt", b"one line\n", actor=Actor("bob", Role.RESEARCHER))
    with pytest.raises(AccessDenied, match="another user's upload"):
        jobs.submit(ws, "import", {"path": str(bobs), "upload": "bob.txt"}, start=False, actor=RITA)
    admin = Actor("root", Role.ADMIN)
    assert jobs.submit(ws, "import", {"path": str(bobs), "upload": "bob.txt"}, start=False, actor=admin).status == "queued"
    discard_upload(ws, bobs)
    assert not bobs.parent.exists()
    with pytest.raises(AccessDenied):  # a path of '~nobody' is refused, not a RuntimeError
        jobs.submit(ws, "import", {"path": "~nobody-here/x.txt"}, start=False, actor=RITA)


def test_resuming_an_import_whose_copy_is_gone_says_so(ws):
    """Found in review: the owner check ran first and called one's own vanished copy "another user's upload"."""
    staged = stage_upload(ws, "mine.txt", b"one line\n", actor=RITA)
    discard_upload(ws, staged)
    with pytest.raises(UserError, match="is gone") as err:
        jobs.submit(ws, "import", {"path": str(staged), "upload": "mine.txt"}, start=False, actor=RITA)
    assert not isinstance(err.value, AccessDenied)
