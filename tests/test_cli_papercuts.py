"""Issue 24 CLI papercuts: README's commands wrote `--out runs/...` into the checkout (an untracked runs/ folder), so
every output path a README command names must fall under a git-ignored folder (docs/results is committed on purpose);
and --json no longer hides progress on a terminal."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_readme_output_path_is_ignored_by_git():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout")
    text = (ROOT / "README.md").read_text()
    outputs = set(re.findall(r"(?:--out|--arpa) (\S+)", text))
    outputs = {o for o in outputs if not o.startswith(("docs/results/", "FILE", "DIR"))}
    assert outputs, "no --out in README?"
    tracked_risk = [o for o in sorted(outputs)
                    if subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", o]).returncode != 0]
    assert tracked_risk == [], f"README outputs that would land untracked in the checkout: {tracked_risk}"


def test_json_output_never_hides_progress_on_a_terminal(monkeypatch):
    """Issue 24: `compare-sources --json` printed nothing for 28 minutes: --json switched the stderr bar off."""
    import argparse
    import sys

    from core.cliutil import progress_wanted

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress_wanted(argparse.Namespace(json=True, quiet=False))
    assert not progress_wanted(argparse.Namespace(json=True, quiet=True))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)  # piped or captured: stdout's JSON stays alone
    assert not progress_wanted(argparse.Namespace(json=True)) and progress_wanted(argparse.Namespace())


def test_a_mistyped_workspace_is_refused_unless_asked_to_create(tmp_path, monkeypatch, capsys):
    """Issue 43.10: `--workspace /tmp/x/nope/deeper corpora` exited 0 and created the tree."""
    from core.cli import main

    monkeypatch.delenv("NERSELECT_CREATE_WORKSPACE", raising=False)
    deeper = tmp_path / "nope" / "deeper"
    assert main(["--workspace", str(deeper), "corpora"]) == 2
    assert "no such folder" in capsys.readouterr().err and not (tmp_path / "nope").exists()
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("mine")
    assert main(["--workspace", str(tmp_path / "stuff"), "corpora"]) == 2 and "not a workspace" in capsys.readouterr().err
    assert main(["--workspace", str(deeper), "--create-workspace", "corpora"]) == 0 and deeper.is_dir()
    assert main(["--workspace", str(deeper), "corpora"]) == 0  # now it is one
    after = tmp_path / "after"  # both flags after the command name too, as README's --workspace is
    assert main(["corpora", "--workspace", str(after), "--create-workspace"]) == 0 and after.is_dir()


def test_jobs_show_json_is_one_object(tmp_path, capsys):
    """Issue 43.13: `jobs show ID` printed JSON followed by log lines; --json prints one object."""
    import json

    from core.cli import main
    from core.data.workspace import Workspace
    from core.runner import jobs, jobstore

    ws = Workspace(tmp_path / "ws")
    job_id = jobs.submit(ws, "sleep", {"steps": 1, "seconds": 0.0}, start=False).id
    (jobstore.get_job(ws, job_id).run_dir / "log.txt").write_text("line one\nline two\n")
    capsys.readouterr()
    assert main(["--workspace", str(ws.root), "jobs", "show", job_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == job_id and "line two" in shown["log_tail"]


def test_leakage_help_describes_the_check_and_its_defaults(capsys):
    """Issue 43.15: `leakage --help` had no description and no defaults."""
    import pytest

    from core.cli import main

    with pytest.raises(SystemExit):
        main(["leakage", "--help"])
    out = capsys.readouterr().out
    assert "Has evaluation text leaked" in out and "(default: dev,test)" in out and "(default: 0.5)" in out


def test_an_unknown_task_or_a_missing_also_folder_is_said_not_shown_as_nothing(tmp_path, capsys):
    """`task progress nosuch` printed nothing with exit 0, `task export nosuch` said it had no settled sentences yet,
    and `runs disk --also /missing` counted the missing folder as empty."""
    from core.cli import main

    ws = str(tmp_path / "ws")
    assert main(["--workspace", ws, "--create-workspace", "corpora"]) == 0
    capsys.readouterr()
    for argv in (["task", "progress", "nosuch"], ["task", "export", "nosuch", "--out", str(tmp_path / "t.conll")]):
        assert main(["--workspace", ws, *argv]) == 2 and "no review task 'nosuch'" in capsys.readouterr().err
    for what in ("disk", "free-snapshots"):
        assert main(["--workspace", ws, "runs", what, "--also", str(tmp_path / "missing")]) == 2
        assert "--also: no such folder" in capsys.readouterr().err


def test_an_out_that_cannot_be_written_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """`select --out DIR` ended in IsADirectoryError (after `project` had run its UMAP), an --out under a file in
    FileExistsError; every --out is checked when the command line is read, and an OS refusal left over is one line."""
    import core.commands.corpus
    from core.cli import main

    ws = str(tmp_path / "ws")
    assert main(["demo", ws, "--dc-size", "60"]) == 0
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("x")
    capsys.readouterr()
    for out, said in ((tmp_path / "folder", "is a folder"), (tmp_path / "afile" / "x.jsonl", "is a file, not a folder")):
        with pytest.raises(SystemExit) as stop:
            main(["--workspace", ws, "select", "--tc", "tc", "--dc", "dc", "--strategy", "random", "--budget", "5",
                  "--out", str(out)])
        assert stop.value.code == 2 and said in capsys.readouterr().err
    assert not list((tmp_path / "folder").iterdir())
    with pytest.raises(SystemExit):
        main(["--workspace", ws, "ner", "train", "--train", "lc", "--out", str(tmp_path / "afile")])
    assert "is a file: give a folder" in capsys.readouterr().err

    def refused(_args) -> int:
        raise IsADirectoryError(21, "Is a directory", str(tmp_path / "folder"))

    monkeypatch.setattr(core.commands.corpus, "cmd_corpora", refused)
    assert main(["--workspace", ws, "corpora"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'folder'}: Is a directory"


def test_an_interrupted_training_run_says_which_folder_continues_it(tmp_path, capsys, monkeypatch):
    """Ctrl-C printed only "interrupted": the run folder holding the checkpoint (runs/inline-...) was named nowhere."""
    import core.runner.jobs
    from core.cli import main

    ws = str(tmp_path / "ws")
    assert main(["demo", ws, "--dc-size", "40"]) == 0

    def stopped(_params, ctx):
        (ctx.run_dir / "checkpoint").mkdir(exist_ok=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(core.runner.jobs, "load_job_function", lambda kind: stopped)
    capsys.readouterr()
    assert main(["--workspace", ws, "mlm", "--mode", "tapt", "--out", str(tmp_path / "b1"), "--quiet"]) == 130
    said = capsys.readouterr().err
    folder = said.split("--run-dir ")[1].split(" to continue")[0]
    assert said.startswith("interrupted; rerun it with --run-dir ") and (Path(folder) / "checkpoint").is_dir()
    assert main(["--workspace", ws, "mlm", "--mode", "tapt", "--out", str(tmp_path / "b1"), "--run-dir", folder,
                 "--quiet"]) == 130
    assert f"rerun the same command to continue from {folder}" in capsys.readouterr().err
