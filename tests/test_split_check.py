"""DEV or TEST that is the training corpus, by another name, role or path, is said in the job's result (every job
panel shows its warning) and at the CLI (found in review: the NER form took test = dev = demo-lc silently)."""

from __future__ import annotations

from core.data.corpus import Corpus
from core.data.workspace import Workspace
from core.runner.kinds import validate
from core.runner.split_check import split_warning, with_warning


def test_a_held_out_split_that_is_the_training_corpus_is_named(tmp_path):
    ws = Workspace(tmp_path / "ws")
    lc = Corpus(tokens=[["Ada", "sang"]], tags=[["B-PER", "O"]])
    ws.save_corpus(lc, "demo-lc", role="lc")
    ws.save_corpus(Corpus(tokens=[["Bob", "ran"]], tags=[["B-PER", "O"]]), "demo-test", role="test")
    ws.save_corpus(lc, "lc-copy")
    said = split_warning(ws, "ner", validate("ner", {"train": "lc", "dev": "lc-copy", "test": "demo-lc"}))
    assert said.startswith("DEV and TEST hold the same sentences as the training corpus 'lc' (demo-lc)")
    assert split_warning(ws, "ner", validate("ner", {"train": "lc", "dev": "demo-test", "test": "test"})) is None
    assert split_warning(ws, "selftrain", validate("selftrain", {"model": "m", "lc": "lc", "dev": "test",
                                                                 "test": "demo-lc"})).startswith("TEST holds")
    assert split_warning(ws, "ner", validate("ner", {"train": "missing", "test": "lc"})) is None  # the job says it
    # found in review: a workspace corpus and the file it was imported from hash differently (Parquet vs text)
    from core.data.corpus import write_corpus

    write_corpus(lc, tmp_path / "lc.conll", fmt="conll")
    said = split_warning(ws, "ner", validate("ner", {"train": "lc", "test": str(tmp_path / "lc.conll")}))
    assert said is not None and said.startswith("TEST holds")
    assert with_warning({"warning": "near-0 F1"}, "TEST holds ...")["warning"] == "near-0 F1; TEST holds ..."
    assert with_warning({"f1": 1}, None) == {"f1": 1}


def test_jobs_that_could_only_fail_are_refused_at_submit():
    """Found in review: an MLM job in mode tc+sc with no selection, or an experiment with no row, was queued and
    failed in its process (a failed job row left behind)."""
    import pytest

    from core.errors import UserError

    for kind, params, said in (("mlm", {"mode": "tc+sc"}, "reads selection"), ("mlm", {"mode": "dapt"}, "reads dc"),
                               ("experiment", {"strategies": [], "baselines": []}, "no row to run")):
        with pytest.raises(UserError, match=said):
            validate(kind, params)
    assert validate("mlm", {"mode": "tc+sc", "selection": "abc123"}).selection == "abc123"
    assert validate("mlm", {"train": ["dc"]}).train == ["dc"]
