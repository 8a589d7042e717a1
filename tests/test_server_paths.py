"""Issue 48: with accounts, server paths (imports, model folders, output folders, any job setting naming a file)
only under the data roots an admin configures or the workspace; never a database, the app's secrets or its
checkout. Checked in core: these tests call core directly."""

from __future__ import annotations

import pytest

from core.access import LOCAL, AccessDenied, Actor, Role, check_server_path
from core.data.workspace import Workspace
from core.runner import jobs

RITA = Actor("rita", Role.RESEARCHER)


@pytest.fixture
def roots(tmp_path, monkeypatch):
    ws = Workspace(tmp_path / "ws")
    data = tmp_path / "data"
    data.mkdir()
    (data / "dc.txt").write_text("John lives in Paris\nMary visited Berlin\n")
    (data / ".streamlit").mkdir()
    (data / ".streamlit" / "secrets.toml").write_text('cookie_secret = "s3cret"\nclient_secret = "x"\n')
    (data / "team.sqlite").write_text("not really")
    (data / "sneaky.txt").symlink_to("/etc/passwd")
    monkeypatch.setenv("NERSELECT_DATA_ROOTS", str(data))
    return ws, data


def test_a_researcher_imports_only_under_the_data_roots(roots):
    ws, data = roots
    info = ws.import_corpus(data / "dc.txt", name="dc", actor=RITA)
    assert info.sentences == 2
    for bad in ("/etc/passwd", data / ".streamlit" / "secrets.toml", data / "team.sqlite", data / "sneaky.txt",
                str(data / ".." / "ws" / ".." / ".." / "etc"), ws.root / "team.sqlite"):
        with pytest.raises(AccessDenied) as err:
            ws.import_corpus(bad, name="pw", actor=RITA)
        assert "rita (researcher) may not import" in str(err.value)
        assert "pw" not in [i.name for i in ws.list_corpora()]  # nothing stored
    with pytest.raises(AccessDenied, match=str(data)):  # the refusal names the allowed roots
        ws.import_corpus("/etc/passwd", name="pw", actor=RITA)


def test_the_checkout_is_never_a_data_root_but_its_workspace_is_the_workspace(roots, monkeypatch):
    from core.access import CHECKOUT

    ws, _ = roots
    monkeypatch.setenv("NERSELECT_DATA_ROOTS", "/")
    with pytest.raises(AccessDenied):
        check_server_path(RITA, CHECKOUT / "core" / "access.py", ws.root, "import")
    assert check_server_path(RITA, "/etc/hostname", ws.root, "import").name == "hostname"  # "/" was opened by the admin
    inside = Workspace(CHECKOUT / "workspace-test-tmp")
    try:
        assert check_server_path(RITA, inside.corpora_dir, inside.root) == inside.corpora_dir.resolve()
    finally:
        import shutil

        shutil.rmtree(inside.root, ignore_errors=True)


def test_job_settings_naming_server_paths_are_checked_at_submit(roots):
    ws, data = roots
    before = len(jobs.list_jobs(ws))
    for kind, params in (("import", {"path": "/etc/passwd"}),
                         ("ner", {"model": "/etc", "train": "lc"}),
                         ("ner", {"train": str(data / "dc.txt"), "out": "/tmp/elsewhere"}),
                         ("embed", {"corpus": "../../../../etc/passwd"}),
                         ("import", {"path": str(data / ".streamlit" / "secrets.toml")})):
        with pytest.raises(AccessDenied):
            jobs.submit(ws, kind, params, start=False, actor=RITA)
    assert len(jobs.list_jobs(ws)) == before  # nothing queued
    ok = jobs.submit(ws, "import", {"path": str(data / "dc.txt")}, start=False, actor=RITA)
    assert ok.status == "queued"
    named = jobs.submit(ws, "embed", {"corpus": "dc", "model": "sentence-transformers/all-MiniLM-L6-v2"}, start=False,
                        actor=RITA)  # a corpus name and a hub id are no server paths
    assert named.status == "queued"


def test_uploads_and_the_single_user_mode_are_unchanged(roots, tmp_path):
    ws, _ = roots
    info = ws.import_upload("mine.txt", b"Ada wrote code\n", name="mine", actor=RITA)
    assert info.sentences == 1
    outside = tmp_path / "outside.txt"
    outside.write_text("one line\n")
    assert ws.import_corpus(outside, name="local", actor=LOCAL).sentences == 1
    assert jobs.submit(ws, "import", {"path": str(outside)}, start=False).status == "queued"
