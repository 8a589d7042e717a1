"""Environment variables: each declared once (core.environment), a bad value refused with its name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.environment import VARIABLES, describe
from core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent


def test_every_variable_the_tree_reads_is_declared():
    files = [*ROOT.glob("core/**/*.py"), *ROOT.glob("views/*.py"), *ROOT.glob("*.py"), *ROOT.glob("scripts/*.sh"),
             *ROOT.glob("scripts/*.py")]
    named = {m for f in files for m in re.findall(r"\bNERSELECT_[A-Z_]+[A-Z]\b", f.read_text("utf-8"))}
    assert named and named <= set(VARIABLES), f"undeclared: {sorted(named - set(VARIABLES))}"


def test_a_bad_value_names_the_variable(monkeypatch):
    from core.runner.jobs import max_concurrent

    monkeypatch.setenv("NERSELECT_MAX_JOBS", "two")
    with pytest.raises(UserError, match=r"\$NERSELECT_MAX_JOBS is 'two': expected a whole number"):
        max_concurrent("training")
    monkeypatch.setenv("NERSELECT_MAX_JOBS", "0")
    with pytest.raises(UserError, match="expected at least 1"):
        max_concurrent("training")
    monkeypatch.setenv("NERSELECT_MAX_JOBS", "3")
    assert max_concurrent("training") == 3
    monkeypatch.setenv("NERSELECT_MAX_JOBS", "")  # empty reads as unset
    monkeypatch.setenv("NERSELECT_MAX_INTERACTIVE_JOBS", "4")
    assert max_concurrent("interactive") == 4


def test_env_lists_each_variable_with_its_value(monkeypatch, capsys):
    from core.cli import main

    monkeypatch.setenv("NERSELECT_TRAINING_NICE", "5")
    rows = {r["variable"]: r for r in describe()}
    assert rows["NERSELECT_TRAINING_NICE"]["value"] == "5" and rows["NERSELECT_ADAMW"]["default"] == "fused"
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert "NERSELECT_TRAINING_NICE" in out and "niceness added to training job processes" in out
