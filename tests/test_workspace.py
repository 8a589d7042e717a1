import json
import os

import pytest

from core.data.atomic import atomic_write_bytes
from core.data.corpus import Corpus
from core.data.workspace import CorpusRole, Workspace, content_hash
from core.errors import CorpusError, UserError

CONLL = "John\tB-PER\nlives\tO\n\nParis\tB-LOC\n"


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path / "ws")


def test_import_with_role_and_fields(ws, tmp_path):
    p = tmp_path / "dc.jsonl"
    p.write_text("\n".join(json.dumps({"text": f"s {i}", "domain": "music" if i % 2 else "ai"}) for i in range(10)))
    info = ws.import_corpus(p, role=CorpusRole.DC)
    assert (info.sentences, info.fields, info.role) == (10, ["domain"], "dc")
    assert ws.corpus_for_role("dc") == "dc"
    assert ws.load_corpus("dc").fields["domain"][:2] == ["ai", "music"]


def test_reimport_same_content_is_a_noop_and_different_content_is_refused(ws, tmp_path):
    p = tmp_path / "lc.conll"
    p.write_text(CONLL)
    first = ws.import_corpus(p, role="lc")
    assert ws.import_corpus(p).hash == first.hash
    p.write_text(CONLL + "\nBerlin\tB-LOC\n")
    with pytest.raises(UserError, match="already exists"):
        ws.import_corpus(p)
    assert ws.corpus_info("lc").sentences == 2  # unchanged
    assert ws.import_corpus(p, overwrite=True).sentences == 3


def test_a_field_that_widens_after_the_first_chunk_is_imported_and_one_that_changes_kind_is_refused(ws, tmp_path,
                                                                                                   monkeypatch):
    """The Parquet schema came from the first chunk (50,000 sentences): a field null there and text later, or whole
    numbers turning decimal, refused a file the readers accept. Text in one chunk and numbers in another still is."""
    from core.data import corpus, parquet_import

    monkeypatch.setattr(parquet_import, "iter_corpus", lambda path, fmt: corpus.iter_corpus(path, fmt, chunk_size=2))
    rows = [{"text": "a b", "domain": None, "w": 1}, {"text": "c d", "domain": None, "w": 2},
            {"text": "e f", "domain": "news", "w": 2.5}]
    src = tmp_path / "wide.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    info = ws.import_corpus(src, name="wide")
    back = ws.load_corpus("wide")
    assert info.sentences == 3 and back.fields["domain"] == [None, None, "news"] and back.fields["w"] == [1.0, 2.0, 2.5]
    src.write_text("".join(json.dumps({"text": f"s {i}", "id": i if i < 2 else f"x{i}"}) + "\n" for i in range(3)))
    with pytest.raises(CorpusError, match="wide.jsonl:3: field 'id' is text here but number on line 1"):
        ws.import_corpus(src, name="mixed")
    assert not ws.has_corpus("mixed")


def test_bad_input_changes_nothing_stored(ws, tmp_path):
    good = tmp_path / "c.conll"
    good.write_text(CONLL)
    ws.import_corpus(good, role="lc")
    before = {p.name: p.read_bytes() for p in ws.corpora_dir.iterdir()}
    bad = tmp_path / "c2.conll"
    bad.write_text(CONLL + "\nBerlin\n")
    with pytest.raises(CorpusError, match=r"c2.conll:6:"):
        ws.import_corpus(bad, name="c", overwrite=True)
    after = {p.name: p.read_bytes() for p in ws.corpora_dir.iterdir()}
    assert before == after  # no temp files left, nothing replaced


def test_labeled_role_needs_labels(ws, tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("just text\n")
    with pytest.raises(CorpusError, match="needs a labeled corpus"):
        ws.import_corpus(p, role="test")
    assert not ws.has_corpus("t")


def test_an_overwrite_keeps_the_role_and_an_unlabeled_file_cannot_take_a_labeled_one(ws, tmp_path):
    """Found in review: overwriting the LC with a text file left workspace.json naming it LC while its description
    said no role and no labels."""
    p = tmp_path / "c1.conll"
    p.write_text(CONLL)
    ws.import_corpus(p, role="lc")
    before = {f.name: f.read_bytes() for f in ws.corpora_dir.iterdir()}
    text = tmp_path / "c1.txt"
    text.write_text("just text\n")
    with pytest.raises(CorpusError, match="workspace's LC, which needs a labeled corpus"):
        ws.import_corpus(text, overwrite=True)
    assert {f.name: f.read_bytes() for f in ws.corpora_dir.iterdir()} == before
    p.write_text(CONLL + "\nBerlin\tB-LOC\n")
    info = ws.import_corpus(p, overwrite=True)
    assert (info.role, info.sentences, ws.corpus_for_role("lc")) == ("lc", 3, "c1")


def test_names_that_reach_outside_or_are_too_long_name_no_corpus(ws, tmp_path):
    p = tmp_path / "c.conll"
    p.write_text(CONLL)
    with pytest.raises(UserError, match="at most 120"):
        ws.import_corpus(p, name="x" * 250)
    outside = ws.root / "outside.parquet"
    ws.root.mkdir(parents=True, exist_ok=True)
    outside.write_bytes(b"")
    (ws.root / "outside.json").write_text("{}")
    assert not ws.has_corpus("../outside")
    with pytest.raises(UserError, match="no corpus named '../outside'"):
        ws.corpus_info("../outside")
    ws.import_corpus(p, name="c")
    ws._info_path("c").unlink()  # an import that stopped between its two files (an older order)
    with pytest.raises(UserError, match="lost its description"):
        ws.corpus_info("c")


def test_a_field_the_first_record_lacks_is_kept(ws, tmp_path):
    p = tmp_path / "late.jsonl"
    p.write_text("\n".join(json.dumps({"text": f"s {i}", **({"domain": "ai"} if i else {})}) for i in range(3)))
    info = ws.import_corpus(p)
    assert info.fields == ["domain"] and ws.load_corpus("late").fields["domain"] == [None, "ai", "ai"]


def test_a_field_that_changes_kind_is_named_with_both_lines(ws, tmp_path):
    p = tmp_path / "ids.jsonl"
    p.write_text("\n".join(json.dumps({"text": f"s {i}", "id": v}) for i, v in enumerate([1, 2.5, "x"])))
    with pytest.raises(CorpusError, match=r"ids.jsonl:3: field 'id' is text here but number on line 1"):
        ws.import_corpus(p)
    assert not ws.has_corpus("ids")


@pytest.mark.parametrize(("tokens", "tags", "said"), [
    ([["a", "b"]], [["O"]], r"bad.parquet:1: 2 tokens but 1 tags"),
    ([["a"], ["a", "b"]], [["O"], ["O", "FOO"]], r"bad.parquet:2: tag 'FOO' is not O"),
    ([["a"]], [[3]], r"bad.parquet:1: tag '3' is not O"),  # Hugging Face's integer tags
    ([["a"], None], None, r"bad.parquet:2: 'tokens' must be a list of strings"),
])
def test_a_parquet_file_is_checked_row_by_row(ws, tmp_path, tokens, tags, said):
    """Found in review: typed Parquet lists skipped every check (a tags list shorter than its tokens was stored) and
    other types fell through to tracebacks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {"tokens": tokens, **({"tags": tags} if tags is not None else {})}
    pq.write_table(pa.table(columns), tmp_path / "bad.parquet")
    with pytest.raises(CorpusError, match=said):
        ws.import_corpus(tmp_path / "bad.parquet")
    assert not ws.has_corpus("bad")


def test_upload_errors_name_the_uploaded_file(ws):
    with pytest.raises(CorpusError) as err:
        ws.import_upload("mine.conll", b"John B-PER\nlives\n")
    assert str(err.value).startswith("mine.conll:2:")


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    atomic_write_bytes(target, b"old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_content_hash_is_order_insensitive_for_dict_keys():
    assert content_hash({"a": 1, "b": 2}) == content_hash({"b": 2, "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})


def test_workspace_root_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("NERSELECT_WORKSPACE", str(tmp_path / "envws"))
    assert Workspace().root == (tmp_path / "envws").resolve()


def test_outputs_honour_the_umask(tmp_path):
    import os
    import stat

    from core.data.atomic import atomic_write_json, temp_path_for
    from core.train.training import atomic_dir

    old = os.umask(0o022)
    try:
        atomic_write_json(tmp_path / "a.json", {"x": 1})
        tmp = temp_path_for(tmp_path / "b.parquet")
        with atomic_dir(tmp_path / "model") as d:
            (d / "weights.bin").write_bytes(b"0")
        os.umask(0o077)
        atomic_write_json(tmp_path / "private.json", {})
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)
    assert (mode(tmp_path / "a.json"), mode(tmp), mode(tmp_path / "model")) == (0o644, 0o644, 0o755)
    assert mode(tmp_path / "private.json") == 0o600


def test_bad_workspace_paths_are_one_line_errors(tmp_path, capsys):
    from core.cli import main

    afile = tmp_path / "file"
    afile.write_text("x")
    for bad in (afile, afile / "sub"):
        assert main(["--workspace", str(bad), "corpora"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_empty_import_prints_its_error_and_no_progress_bar(tmp_path, capsys):
    from core.cli import main

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["--workspace", str(tmp_path / "ws"), "import", str(empty), "--name", "e"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "%|" not in err and err.count("\n") == 1


def test_an_absurdly_long_sentence_is_imported_with_a_warning(tmp_path, capsys):
    """A 'sentence' of 1,500 tokens (a text that is not one sentence per line) is said, not imported silently (issue 24)."""
    from core.cli import main

    path = tmp_path / "dc.txt"
    path.write_text("a short sentence .\n" + " ".join(["word"] * 1500) + "\nanother one .\n")
    info = Workspace(tmp_path / "ws").import_corpus(path, name="long")
    assert info.sentences == 3 and len(info.warnings) == 1 and "sentence 2 has 1,500 tokens" in info.warnings[0]
    ok = tmp_path / "ok.txt"
    ok.write_text("a short sentence .\n")
    assert Workspace(tmp_path / "ws").import_corpus(ok, name="ok").warnings == []
    capsys.readouterr()
    assert main(["--workspace", str(tmp_path / "ws2"), "import", str(path), "--name", "long"]) == 0
    assert "sentence 2 has 1,500 tokens" in capsys.readouterr().err


def test_exclusive_waits_for_the_holder_and_its_wait_can_be_cancelled(tmp_path):
    """Two jobs needing one shared model folder: the second waits (its progress callback runs meanwhile) and gets
    the lock once the first lets go; a cancelled job's progress raises, which ends the wait."""
    import threading

    from filelock import FileLock

    from core.data.atomic import exclusive
    from core.runner.jobstore import JobCancelled

    path = tmp_path / "model.lock"
    holder = FileLock(str(path))
    holder.acquire()
    waits: list[int] = []

    def waiting() -> None:
        waits.append(1)
        if len(waits) == 3:
            holder.release()

    with exclusive(path, waiting, poll_seconds=0.01):
        assert len(waits) == 3
        got_in = threading.Event()

        def cancelled() -> None:  # what JobContext.progress does once the job's CANCEL flag is set
            raise JobCancelled()

        def other() -> None:
            try:
                with exclusive(path, cancelled, poll_seconds=0.01):
                    got_in.set()
            except JobCancelled:
                pass

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert not got_in.is_set()  # held here: the other side gave up, its cancel raised out of the wait
    with exclusive(path, poll_seconds=0.01):
        pass  # released on exit


def test_settings_are_a_typed_record_that_refuses_a_misspelt_name(tmp_path):
    """Issue 44: workspace.json is read in one place; a misspelt setting is refused instead of stored and ignored,
    and a setting a newer version wrote survives a change."""
    ws = Workspace(tmp_path / "ws")
    assert ws.settings().target_domain is None and ws.settings().roles == {}
    ws.update_settings(target_domain="music")
    with pytest.raises(UserError, match="unknown workspace setting.*'target_domian'"):
        ws.update_settings(target_domian="ai")
    data = json.loads(ws.settings_path.read_text("utf-8"))
    ws.settings_path.write_text(json.dumps({**data, "from_the_future": 1}), "utf-8")
    ws.update_settings(ray_address="local")
    again = json.loads(ws.settings_path.read_text("utf-8"))
    assert again["from_the_future"] == 1 and again["target_domain"] == "music" and again["ray_address"] == "local"
    ws.settings_path.write_text("{not json", "utf-8")
    with pytest.raises(UserError, match="workspace.json: not readable JSON"):
        ws.settings()


def test_a_corpus_that_lost_its_description_can_be_replaced_or_deleted(ws, tmp_path):
    """The message said "import its file again with overwrite", and that import (and a delete) failed on the same
    missing description."""
    src = tmp_path / "x.txt"
    src.write_text("a b\n")
    ws.import_corpus(src, name="x", role="dc")
    (ws.corpora_dir / "x.json").unlink()
    with pytest.raises(UserError, match="lost its description .*overwrite"):
        ws.import_corpus(src, name="x")
    info = ws.import_corpus(src, name="x", overwrite=True)
    assert info.sentences == 1 and info.role == "dc" and ws.settings().roles["dc"] == "x"
    (ws.corpora_dir / "x.json").unlink()
    ws.delete_corpus("x")
    assert not ws.has_corpus("x") and "dc" not in ws.settings().roles


def test_a_value_no_wider_column_holds_is_refused_at_once(tmp_path):
    """A whole number past 2^53 in a float column: the merged schema is the same one, and the import re-read the whole
    file MAX_SCHEMA_WIDENINGS times before a vague message."""
    import pyarrow as pa

    from core.data.parquet_import import _fitted

    table = pa.table({"x": pa.array([2**53 + 1], pa.int64())})
    with pytest.raises(CorpusError, match="sentences 50,001 on hold a value the columns of the ones before cannot"):
        _fitted(tmp_path / "f.jsonl", table, pa.schema([("x", pa.float64())]), 50_000)


def test_save_corpus_checks_the_name_before_writing_anything(ws, tmp_path, monkeypatch):
    """Found in review: the temp file beside corpora/NAME was made before the name was checked, so '../../x' or an
    absolute path wrote a file outside the workspace (removed afterwards), and an empty name blamed a temp name."""
    import core.data.workspace as workspace_mod

    made: list = []
    real = workspace_mod.temp_path_for
    monkeypatch.setattr(workspace_mod, "temp_path_for", lambda path: made.append(path) or real(path))
    corpus = Corpus(tokens=[["a", "b"]])
    for bad in (str(tmp_path / "outside" / "abs"), "../../outside2", "", "   ", "x" * 300):
        with pytest.raises(UserError) as err:
            ws.save_corpus(corpus, bad)
        assert ".tmp" not in str(err.value)
    assert made == []  # no file was made anywhere for a bad name
    ws.save_corpus(corpus, "good")
    assert made and all(ws.root in p.parents for p in made)
