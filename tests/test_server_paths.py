"""Issue 48: with accounts, server paths (imports, model folders, output folders, any job setting naming a file)
only under the data roots an admin configures or the workspace; never a database, the app's secrets or its
checkout. Checked in core: these tests call core directly."""

from __future__ import annotations

import pytest

from core.access import LOCAL, AccessDenied, Actor, Role, check_server_path
from core.data.workspace import Workspace
from core.errors import UserError
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


def test_a_relative_name_is_never_read_from_the_checkout(roots, monkeypatch):
    """Found in review: a bare `README.md` (or `.streamlit/config.toml` when the app ran elsewhere) passed the check,
    and the job, which runs in the checkout, read the checkout's file. With accounts a path is given in full; a bare
    name that is a workspace corpus or a role stays a corpus."""
    ws, data = roots
    ws.import_corpus(data / "dc.txt", name="dc", role="dc", actor=RITA)
    monkeypatch.chdir(data)  # the app started in a data root: relative names must not resolve against it either
    for kind, params in (("embed", {"corpus": "README.md"}), ("select", {"tc": "dc", "dc": "pyproject.toml",
                                                                           "strategy": "random", "budget": 1}),
                         ("import", {"path": "dc.txt"}), ("embed", {"corpus": "core/access.py"})):
        with pytest.raises(AccessDenied, match="give a server path in full"):
            jobs.submit(ws, kind, params, start=False, actor=RITA)
    with pytest.raises(AccessDenied, match="give a server path in full"):
        ws.import_corpus("dc.txt", name="again", actor=RITA)
    assert jobs.list_jobs(ws) == []
    assert jobs.submit(ws, "embed", {"corpus": "dc"}, start=False, actor=RITA).status == "queued"  # a corpus name
    assert jobs.submit(ws, "embed", {"corpus": "README.md"}, start=False).status == "queued"  # the CLI owns the machine


def test_outputs_go_only_under_the_runs_folder(roots):
    """Found in review: a predict job's `out` could replace the workspace's own settings or a corpus's Parquet."""
    ws, data = roots
    for out in (ws.root / "workspace.json", ws.corpora_dir / "dc.parquet", data / "out.jsonl", ws.runs_dir):
        with pytest.raises(AccessDenied, match="outputs go under"):
            jobs.submit(ws, "predict", {"model": "org/some-model", "corpus": "dc", "out": str(out)}, start=False,
                        actor=RITA)
    ok = jobs.submit(ws, "predict", {"model": "org/some-model", "corpus": "dc", "out": str(ws.runs_dir / "mine" / "p.jsonl")},
                     start=False, actor=RITA)
    assert ok.status == "queued"


def test_a_job_reaches_only_the_workspace_ray_cluster(roots):
    """Found in review: the Ray address is an admin's setting, yet a job's own `ray` sent it anywhere."""
    ws, _ = roots
    with pytest.raises(AccessDenied, match="may not send a job to the Ray cluster 'ray://203.0.113.5:10001'"):
        jobs.submit(ws, "embed", {"corpus": "dc", "ray": "ray://203.0.113.5:10001"}, start=False, actor=RITA)
    for fine in ("local", "local:2", None):
        assert jobs.submit(ws, "embed", {"corpus": "dc", "ray": fine}, start=False, actor=RITA).status == "queued"
    boss = Actor("boss", Role.ADMIN)
    assert jobs.submit(ws, "embed", {"corpus": "dc", "ray": "ray://10.0.0.1:10001"}, start=False, actor=boss).status == "queued"


def test_a_typed_model_folder_is_checked_before_inspect_reads_it(roots, tmp_path):
    """Found in review: Inspect read `ner_config.json` of any server folder, and its errors said whether a path
    existed, before the job's check refused it."""
    from core.review.predictions import prediction_request

    ws, _ = roots
    secret = tmp_path / "private-model"
    secret.mkdir()
    (secret / "ner_config.json").write_text('{"labels": ["B-SECRET", "I-SECRET", "O"]}')
    for model in (str(secret), "/nonexistent-dir"):
        with pytest.raises(AccessDenied, match="may not use model ="):
            prediction_request(ws, model, "dc", actor=RITA)
    assert not (ws.root / "artifacts").exists() or not any((ws.root / "artifacts").rglob("meta.json"))


def test_a_task_suggests_only_with_a_model_under_the_allowed_roots(roots, tmp_path):
    """Found in review: create_task loaded its suggesting model in-process from any server folder."""
    from core.team import tasks, users

    ws, data = roots
    users.add_user(ws, "boss", "admin", "a long password 1")
    users.add_user(ws, "ann", "annotator", "a long password 2")
    ws.import_corpus(data / "dc.txt", name="dc", actor=RITA)
    with pytest.raises(AccessDenied, match="may not use model ="):
        tasks.create_task(ws, RITA, "t", ["ann"], corpus="dc", types=["PER"], suggest_model=str(tmp_path / "elsewhere"))
    assert tasks.list_tasks(ws, RITA) == []


def test_a_path_with_spaces_around_it_is_refused_not_passed_unchecked(roots, tmp_path):
    """Found in review: ' /etc/passwd' (or a leading line break) was no path to the check, which looked at its first
    character, and '/etc/passwd' to the job, which strips it: a researcher read any server file as a DC."""
    ws, data = roots
    ws.import_corpus(data / "dc.txt", name="dc", role="tc", actor=RITA)
    outside = tmp_path / "secret.txt"
    outside.write_text("a secret line\n")
    for value in (f" {outside}", f"\n{outside}", f"{ws.root / 'team.sqlite'} "):
        with pytest.raises(AccessDenied, match="a path with spaces or line breaks around it"):
            jobs.submit(ws, "select", {"tc": "tc", "dc": value, "strategy": "random", "budget": 1}, start=False,
                        actor=RITA)
    with pytest.raises(AccessDenied, match="a path of spaces only"):  # a folder named so in the app's checkout
        jobs.submit(ws, "ner", {"train": "tc", "out": "   "}, start=False, actor=RITA)
    from core.review.predictions import prediction_request

    with pytest.raises(AccessDenied):
        prediction_request(ws, f" {tmp_path}", "dc", actor=RITA)
    assert jobs.list_jobs(ws) == []


def test_corpus_deletion_takes_a_name_never_a_path(roots, tmp_path):
    """Found in review: delete_corpus('../../outside/data') deleted data.parquet outside the workspace."""
    ws, data = roots
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.parquet").write_bytes(b"PAR1 not ours")
    rel = "../../outside/data"
    with pytest.raises(UserError, match="no corpus '../../outside/data'"):
        ws.delete_corpus(rel, actor=RITA)
    assert (outside / "data.parquet").exists()


def test_the_predict_button_works_for_a_signed_in_researcher(roots, tmp_path):
    """Found in review: the predictions cache lies under artifacts/, and outputs were allowed only under runs/, so
    Inspect's, Adapt's and the Map's Predict refused every signed-in user."""
    from core.access import OUTPUT_FOLDERS
    from core.review.predictions import PRED_KIND, PredictionRequest, predict_job_params

    ws, data = roots
    ws.import_corpus(data / "dc.txt", name="dc", actor=RITA)
    assert f"artifacts/{PRED_KIND}" in OUTPUT_FOLDERS
    req = PredictionRequest("k1", ws.root / "artifacts" / PRED_KIND / "k1", "org/ner-model", "dc",
                            ws.corpus_info("dc").hash, None)
    job = jobs.submit(ws, "predict", predict_job_params(ws, req), start=False, actor=RITA)
    assert job.status == "queued"
    with pytest.raises(AccessDenied, match="outputs go under"):  # the cache's folder itself, or beside it: no
        jobs.submit(ws, "predict", {"model": "org/m", "corpus": "dc", "out": str(ws.root / "artifacts" / "x.jsonl")},
                    start=False, actor=RITA)


def test_a_resume_and_the_other_readers_check_paths_for_who_asks(roots, tmp_path):
    """Found in review: a job queued at the CLI with an output outside the workspace was resumed by a researcher as
    it was; the Map's encoder box and Adapt's preset lookup read any typed folder; free_snapshots took any root."""
    from core.experiments.disk import free_snapshots
    from core.runner import jobstore
    from core.selection.atlas import find_atlas
    from core.train.lineage import model_preset

    ws, data = roots
    ws.import_corpus(data / "dc.txt", name="dc", actor=RITA)
    job = jobs.submit(ws, "predict", {"model": "org/m", "corpus": "dc", "out": str(tmp_path / "away.jsonl")},
                      start=False)  # the CLI owns the machine
    jobstore.update(ws, job.id, job.attempts, ("queued",), status="failed")
    with pytest.raises(AccessDenied, match="may not use out ="):
        jobs.resume(ws, job.id, actor=RITA)
    assert jobstore.get_job(ws, job.id).status == "failed"
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "ner_config.json").write_text('{"preset": "study"}')
    with pytest.raises(AccessDenied):
        find_atlas(ws, ["dc"], str(folder), actor=RITA)
    with pytest.raises(AccessDenied):
        model_preset(folder, ws, RITA)
    assert model_preset(folder) == "study"  # the CLI's own lookup
    with pytest.raises(AccessDenied):
        free_snapshots(ws, roots=[tmp_path], actor=RITA)
