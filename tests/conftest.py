"""Shared fixtures: a demo workspace, tiny models, and the CrossNER reference data."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "scripts"))  # the scripts, importable by name (test_report, test_study, ...)
CROSSNER = Path(os.environ.get("NERSELECT_CROSSNER", ROOT.parent / "shared" / "data" / "crossner"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["NERSELECT_CREATE_WORKSPACE"] = "1"  # tests name fresh folders (module fixtures too); test_cli_papercuts checks the refusal


@pytest.fixture(autouse=True)
def _default_workspace_in_tmp(tmp_path, monkeypatch):
    """Tests write only under tmp_path: a command run without --workspace (the default
    ./workspace of the checkout) gets a temporary folder instead."""
    monkeypatch.setenv("NERSELECT_WORKSPACE", str(tmp_path / "default-workspace"))


@pytest.fixture(autouse=True)
def _keep_the_main_module():
    """AppTest runs a page as `__main__` and leaves it there: a later test's spawned worker (process pools start with
    "spawn") would then import that page, or a deleted temporary script, instead of pytest's own main module."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def crossner_file(domain: str, split: str) -> Path:
    path = CROSSNER / domain / f"{split}.txt"
    if not path.exists():
        pytest.skip(f"CrossNER reference data not found at {CROSSNER}")
    return path


@pytest.fixture
def crossner():
    return crossner_file


def load_script(name: str):
    """scripts/NAME.py as a module (scripts/ is not a package; it is on sys.path, after the packages, as the scripts
    put it when they import one another), so a test calls its functions."""
    return importlib.import_module(name)


TOY_SENTENCES = [
    "John Smith plays the guitar in London .",
    "Mary Jones sang with The Beatles in Liverpool .",
    "The band released an album called Abbey Road .",
    "Paris is the capital of France .",
    "Marie Curie discovered polonium in Paris .",
    "The chemist studied radium at the University of Paris .",
    "Elections were held in Germany in 2021 .",
    "The party won the election in Berlin .",
] * 3


def unlike(sentence: str, shift: int = 0) -> str:
    """A toy sentence's words in another order: the tiny model's vocabulary, none of DEV/TEST's word pairs (TC and DC
    holding DEV or TEST text are refused or cleaned by the MLM guard, core.experiments.guard)."""
    words = sentence.rstrip(" .").split()[::-1]
    return " ".join(words[shift:] + words[:shift]) + " ."


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    from tests.tiny_models import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tinybert"), TOY_SENTENCES)


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory) -> Path:
    from tests.tiny_models import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tinymlm"), TOY_SENTENCES, with_mlm_head=True)
