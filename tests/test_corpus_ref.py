"""One corpus reference: a workspace name, a role or a file path, resolved by one function
(core.data.workspace.resolve_corpus_ref) for every command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.data.workspace import Workspace, resolve_corpus_ref
from core.errors import UserError

LC_TEXT = "John B-PER\nlives O\nin O\nParis B-LOC\n\nMary B-PER\nsings O\n\nBerlin B-LOC\nis O\nbig O\n"


@pytest.fixture
def ws(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    src = tmp_path / "train.conll"
    src.write_text(LC_TEXT)
    ws.import_corpus(src, role="lc", name="mylc")
    ws.import_corpus(src, role="dev", name="mydev")
    ws.import_corpus(src, role="test", name="mytest")
    tc = tmp_path / "tc.txt"
    tc.write_text("John lives in Paris\nMary sings in Berlin\n")
    ws.import_corpus(tc, role="tc", name="mytc")
    dc = tmp_path / "dc.txt"
    dc.write_text("\n".join(f"sentence number {i} about Paris" for i in range(20)) + "\n")
    ws.import_corpus(dc, role="dc", name="mydc")
    return ws


def refs(ws: Workspace, name: str, role: str) -> list[str]:
    """The same corpus three ways: name, role, and a file path (the stored Parquet file)."""
    return [name, role, str(ws.corpus_path(name))]


def test_precedence_name_role_path(ws, tmp_path, monkeypatch):
    by_name = resolve_corpus_ref("mylc", ws)
    by_role = resolve_corpus_ref("LC", ws)
    by_path = resolve_corpus_ref(str(tmp_path / "train.conll"), ws)
    assert (by_name.kind, by_role.kind, by_path.kind) == ("name", "role", "path")
    assert by_name.name == by_role.name == "mylc" and by_name.hash == by_role.hash
    assert by_path.name == "train" and len(by_path.hash) == 16
    assert by_role.param == "mylc" and by_path.param == str((tmp_path / "train.conll").resolve())
    # a name wins over a file of the same name in the current folder
    monkeypatch.chdir(tmp_path)
    Path("mylc").write_text("not a corpus\n")
    assert resolve_corpus_ref("mylc", ws).kind == "name"
    assert resolve_corpus_ref("mylc", ws).load().labeled


def test_nothing_matches_lists_what_was_tried(ws):
    with pytest.raises(UserError) as err:
        resolve_corpus_ref("nope", ws)
    msg = str(err.value)
    assert "corpus name 'nope'" in msg and "not one of tc, dc, lc, dev, test" in msg and "does not exist" in msg
    ws.delete_corpus("mytc")
    # found in review: the message ended on "file /work/main/tc: does not exist", a path the user never typed
    with pytest.raises(UserError, match="no corpus holds the role TC: give one that role .*corpora set-role NAME tc"):
        resolve_corpus_ref("tc", ws)


def test_no_workspace_folder_is_created_for_a_file(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("a b\n")
    ref = resolve_corpus_ref(str(f), tmp_path / "nowhere")
    assert ref.kind == "path" and not (tmp_path / "nowhere").exists()


def test_stats_accepts_name_role_path(ws, capsys):
    for ref in refs(ws, "mylc", "lc"):
        assert main(["stats", ref, "--json", "--workspace", str(ws.root)]) == 0
        assert json.loads(capsys.readouterr().out)["sentences"] == 3
    assert main(["stats", "nope", "--workspace", str(ws.root)]) == 2
    assert "tried" in capsys.readouterr().err


def test_convert_accepts_name_role_path(ws, tmp_path, capsys):
    for i, ref in enumerate(refs(ws, "mylc", "lc")):
        out = tmp_path / f"out{i}.conll"
        assert main(["convert", ref, "--to", "bioes", "--out", str(out), "--workspace", str(ws.root)]) == 0
        assert "S-PER" in out.read_text()


def test_similarity_accepts_name_role_path(ws, capsys):
    for src, tgt in zip(refs(ws, "mydc", "dc"), refs(ws, "mytc", "tc")):
        assert main(["similarity", "--source", src, "--target", tgt, "--measures", "tvc,jsd", "--json",
                     "--workspace", str(ws.root)]) == 0
        assert 0 < json.loads(capsys.readouterr().out)["tvc"] <= 1


def test_select_accepts_name_role_path(ws, tmp_path, capsys):
    for i, (tc, dc) in enumerate(zip(refs(ws, "mytc", "tc"), refs(ws, "mydc", "dc"))):
        out = tmp_path / f"sel{i}.jsonl"
        assert main(["select", "--tc", tc, "--dc", dc, "--strategy", "random", "--budget", "5", "--out", str(out),
                     "--json", "--workspace", str(ws.root)]) == 0
        assert len(out.read_text().splitlines()) == 5


def test_embed_accepts_name_role_path(ws, tmp_path, tiny_bert_dir, capsys):
    import numpy as np

    for i, ref in enumerate(refs(ws, "mytc", "tc")):
        out = tmp_path / f"e{i}.npy"
        assert main(["embed", ref, "--model", str(tiny_bert_dir), "--out", str(out), "--device", "cpu",
                     "--workspace", str(ws.root)]) == 0
        assert np.load(out).shape[0] == 2


@pytest.fixture
def captured(monkeypatch):
    """The params the training commands hand to the job function (training itself is tested elsewhere)."""
    from core.runner import jobs

    seen: list[dict] = []

    def fake_run_inline(ws, kind, params, run_dir=None, progress=None):
        seen.append({"kind": kind, **params})
        return {"out_dir": "x", "steps": 0, "epochs_run": 0, "domain": "d", "cells": [], "seeds": [1], "rows": []}

    monkeypatch.setattr(jobs, "run_inline", fake_run_inline)
    return seen


def test_mlm_accepts_name_role_path(ws, tmp_path, captured):
    for ref in refs(ws, "mytc", "tc"):
        assert main(["mlm", "--train", ref, "--out", str(tmp_path / "m"), "--workspace", str(ws.root), "--quiet"]) == 0
    assert [c["train"] for c in captured] == [["mytc"], ["mytc"], [str(ws.corpus_path("mytc"))]]
    assert main(["mlm", "--train", "nope", "--out", str(tmp_path / "m"), "--workspace", str(ws.root)]) == 2


def test_ner_accepts_name_role_path(ws, tmp_path, captured):
    for i, (lc, dev) in enumerate(zip(refs(ws, "mylc", "lc"), refs(ws, "mydev", "dev"))):
        assert main(["ner", "train", "--train", lc, "--dev", dev, "--out", str(tmp_path / f"n{i}"),
                     "--workspace", str(ws.root), "--quiet"]) == 0
    assert [c["train"] for c in captured][:2] == ["mylc", "mylc"] and captured[2]["dev"] == str(ws.corpus_path("mydev"))


def test_experiment_accepts_name_role_path(ws, tmp_path, captured):
    for i, names in enumerate((["mytc", "mydc", "mylc", "mydev", "mytest"], ["tc", "dc", "lc", "dev", "test"],
                               [str(ws.corpus_path(n)) for n in ("mytc", "mydc", "mylc", "mydev", "mytest")])):
        args = [x for k, v in zip(("--tc", "--dc", "--lc", "--dev", "--test"), names) for x in (k, v)]
        assert main(["experiment", *args, "--out", str(tmp_path / f"x{i}"), "--workspace", str(ws.root), "--quiet",
                     "--json"]) == 0
    assert captured[0]["lc"] == captured[1]["lc"] == "mylc"
    assert captured[2]["lc"] == str(ws.corpus_path("mylc"))
