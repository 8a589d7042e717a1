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
