"""User mistakes a review reproduced at the CLI that ended in a traceback, blamed the wrong line or passed as success;
each is now a message naming the file, the line and what was expected, and changes nothing stored."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.access import Actor, Role
from core.cli import main
from core.data.corpus import read_corpus
from core.data.demo import write_demo_workspace
from core.data.workspace import Workspace
from core.errors import CorpusError, UserError

PASSWORD = "correct horse"


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return write_demo_workspace(tmp_path / "ws", dc_size=60)


def test_a_stray_bioes_tag_in_a_bio_file_is_named_at_its_own_line(tmp_path):
    lines = []
    for _ in range(50):
        lines += ["John B-PER", "Smith I-PER", "ran O", ""]
    lines[150] = "Mary S-PER"  # file line 151, sentence 38
    (tmp_path / "stray.conll").write_text("\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=r"stray.conll:151: sentence 38, token 3: 'S-PER' is a BIOES tag.*mixes BIO and BIOES"):
        read_corpus(tmp_path / "stray.conll")


def test_a_typo_in_a_bioes_file_is_named_not_a_correct_tag(tmp_path):
    (tmp_path / "typo.conll").write_text("John S-PER\nlives O\n\nMary B-PER\nSmith E-PER\n\nAnn B-PER\nsings O\n")
    with pytest.raises(CorpusError, match=r"typo.conll:8: sentence 3, token 2: span B-PER at token 0 is not closed"):
        read_corpus(tmp_path / "typo.conll")


def test_a_compressed_corpus_is_said_to_be_one(tmp_path):
    (tmp_path / "dc.txt.gz").write_bytes(gzip.compress(b"a sentence\n"))
    with pytest.raises(CorpusError, match=r"dc.txt.gz:1: a gzip archive, not text: unpack it first"):
        read_corpus(tmp_path / "dc.txt.gz")


def test_numeric_ner_tags_are_refused_not_kept_as_an_unlabeled_field(tmp_path):
    (tmp_path / "hf.jsonl").write_text(json.dumps({"tokens": ["a", "b"], "ner_tags": [1, 0]}) + "\n")
    pq.write_table(pa.table({"tokens": [["a", "b"]], "ner_tags": [[1, 0]]}), tmp_path / "hf.parquet")
    for name in ("hf.jsonl", "hf.parquet"):
        with pytest.raises(CorpusError, match=r":1: 'ner_tags' holds numbers .* write the label names"):
            read_corpus(tmp_path / name)
    pq.write_table(pa.table({"tokens": [["a", "b"]], "ner_tags": [["B-PER", "O"]]}), tmp_path / "named.parquet")
    assert read_corpus(tmp_path / "named.parquet").tags == [["B-PER", "O"]]


def test_an_import_says_which_roles_moved_and_when_two_roles_hold_the_same_sentences(ws, tmp_path):
    (tmp_path / "a.conll").write_text("John B-PER\nran O\n")
    first = ws.import_corpus(tmp_path / "a.conll", name="mylc", role="lc")
    assert any("the LC was 'demo-lc' until now" in w for w in first.warnings)
    again = ws.import_corpus(tmp_path / "a.conll", name="mylc", role="test")  # the same content, another role
    assert any("'mylc' is no longer the LC: the workspace has no LC now" in w for w in again.warnings)
    copy = ws.import_corpus(tmp_path / "a.conll", name="copy", role="lc")
    assert any("holds the same sentences as 'mylc', the TEST" in w for w in copy.warnings)
    assert ws.corpus_info("copy").warnings == []  # said once, not stored as a property of the data
    shadow = ws.import_corpus(tmp_path / "a.conll", name="dc")
    assert any("a corpus named 'dc' is what 'dc' means in every corpus argument" in w for w in shadow.warnings)


def test_a_name_taken_from_the_file_name_says_where_it_came_from(ws, tmp_path):
    (tmp_path / "my corpus (1).conll").write_text("John B-PER\n")
    with pytest.raises(UserError, match=r"comes from the file name \(my corpus \(1\).conll\): give one"):
        ws.import_corpus(tmp_path / "my corpus (1).conll")
    with pytest.raises(UserError, match=r"invalid corpus name 'my corpus': use letters") as given:
        ws.import_corpus(tmp_path / "my corpus (1).conll", name="my corpus")
    assert "file name" not in str(given.value)  # a name the user gave is theirs to fix


def test_damaged_stored_files_are_named_not_a_traceback(ws):
    settings = ws.settings_path.read_text()
    (ws.corpora_dir / "demo-tc.json").write_text("{ bad")
    with pytest.raises(UserError, match=r"demo-tc.json: the corpus description is damaged"):
        ws.list_corpora()
    tc_file = ws.root / "tc-again.txt"
    tc_file.write_text("a sentence of TC\n")
    info = ws.import_corpus(tc_file, name="demo-tc", overwrite=True)  # the repair the message names
    assert info.sentences == 1 and ws.list_corpora()
    (ws.corpora_dir / "demo-tc.json").write_text("{ bad")
    ws.delete_corpus("demo-tc")  # or the other repair
    assert not ws.has_corpus("demo-tc") and ws.list_corpora()
    ws.settings_path.write_text(json.dumps({"roles": "notadict"}))
    with pytest.raises(UserError, match=r"workspace.json: 'roles' must map a role"):
        ws.settings()
    ws.settings_path.write_text(settings)
    ws.jobs_db.write_bytes(b"garbage, not a database" * 10)
    from core.runner import jobs

    with pytest.raises(UserError, match=r"jobs.sqlite: not a readable SQLite database"):
        jobs.list_jobs(ws)


def test_a_task_for_one_annotator_needs_no_overlap_and_each_annotator_is_named_once(ws):
    from core.team import tasks, users

    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator"), ("bob", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    rita = Actor("rita", Role.RESEARCHER)
    one = tasks.create_task(ws, rita, "checked", ["ann"], corpus="demo-dc", n_items=10)  # README's example
    two = tasks.create_task(ws, rita, "pair", ["ann", "bob"], corpus="demo-dc", n_items=10)
    assert one.overlap == 0.0 and two.overlap == tasks.DEFAULT_OVERLAP
    with pytest.raises(UserError, match="with one annotator give overlap 0"):
        tasks.create_task(ws, rita, "x", ["ann"], corpus="demo-dc", n_items=10, overlap=0.5)
    with pytest.raises(UserError, match="annotator 'ann' is named twice"):
        tasks.create_task(ws, rita, "x", ["ann", "ANN"], corpus="demo-dc", n_items=10, overlap=0.5)
    with pytest.raises(UserError, match="seed -1: give a whole number of at least 0"):
        tasks.create_task(ws, rita, "x", ["ann", "bob"], corpus="demo-dc", n_items=10, seed=-1)
    with pytest.raises(UserError, match=r"e-mail 'notanemail': expected an address"):
        users.add_user(ws, "carl", "annotator", PASSWORD, email="notanemail")


def test_a_password_or_guidelines_file_that_is_not_utf8_is_named(ws, tmp_path, capsys):
    (tmp_path / "latin").write_bytes(b"caf\xe9pw\n")
    root = str(ws.root)
    assert main(["--workspace", root, "users", "add", "boss", "--role", "admin", "--password-file",
                 str(tmp_path / "latin")]) == 2
    assert "latin:1: the password file is not valid UTF-8 (byte 0xe9 at column 4)" in capsys.readouterr().err
    assert main(["--workspace", root, "task", "create", "--name", "t", "--corpus", "dc", "--annotators", "x",
                 "--guidelines-file", str(tmp_path / "latin")]) == 2
    assert "latin:1: the guidelines file is not valid UTF-8" in capsys.readouterr().err


def test_a_target_domain_dc_does_not_hold_is_refused_before_the_selection(ws, tmp_path, capsys):
    root = str(ws.root)
    argv = ["--workspace", root, "select", "--tc", "tc", "--dc", "dc", "--strategy", "random", "--budget", "5",
            "--out", str(tmp_path / "sc.jsonl")]
    assert main([*argv, "--target-domain", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "target domain 'nosuch' is not a value of the 'domain' field of DC 'dc'" in err and "'music'" in err
    assert not (tmp_path / "sc.jsonl").exists()
    assert main([*argv, "--target-domain", "music"]) == 0
