import json
import subprocess
import sys
from pathlib import Path

from core.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_help_lists_commands():
    out = run_cli("--help")
    assert out.returncode == 0
    for cmd in ("demo", "stats", "convert", "import", "jobs"):
        assert cmd in out.stdout


def test_stats_json_on_crossner(crossner, capsys):
    assert main(["stats", str(crossner("music", "train")), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["sentences"] == 100 and stats["labeled"] and stats["tag_scheme"] == "bio"
    for key in ("tokens", "vocab", "ttr", "entity_types"):
        assert key in stats
    assert stats["entity_types"]["band"] > 0


def test_convert_to_bioes_and_back(crossner, tmp_path, capsys):
    src = crossner("music", "dev")
    assert main(["convert", str(src), "--to", "bioes", "--out", str(tmp_path / "d.conll")]) == 0
    assert main(["convert", str(tmp_path / "d.conll"), "--to", "bio", "--out", str(tmp_path / "back.conll")]) == 0
    from core.data.corpus import read_corpus

    assert read_corpus(tmp_path / "back.conll").tags == read_corpus(src).tags
    assert read_corpus(tmp_path / "d.conll").scheme.value == "bioes"


def test_import_into_workspace(tmp_path, capsys):
    f = tmp_path / "tc.txt"
    f.write_text("a b c\nd e\n")
    assert main(["import", str(f), "--role", "tc", "--workspace", str(tmp_path / "ws")]) == 0
    assert main(["corpora", "--json", "--workspace", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("["):])[0]["role"] == "tc"


def test_an_import_option_given_twice_is_refused_and_stores_nothing(tmp_path, capsys):
    """Found in review: `--role dc ... --role lc` kept the last role silently."""
    import pytest

    f = tmp_path / "dc.txt"
    f.write_text("a b c\n")
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(f), "--role", "dc", "--role", "lc", "--workspace", str(tmp_path / "ws")])
    assert exit_.value.code == 2 and "--role given twice ('dc', then 'lc')" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "corpora").exists() or not any((tmp_path / "ws" / "corpora").iterdir())


def test_bad_input_exit_2_with_one_line_message(tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("John B-PER\nlives\n")
    out = run_cli("stats", str(bad))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"error: {bad}:2: expected 'TOKEN<TAB>TAG' (at least two columns), got 'lives'"]
    assert "Traceback" not in out.stderr


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`python -m core jobs list | head`: the reader leaves early; no BrokenPipeError traceback, exit 0 (issue 24)."""
    import subprocess
    import sys
    from pathlib import Path

    from core.data.workspace import Workspace
    from core.runner import jobs

    ws = Workspace(tmp_path / "ws")
    for _ in range(30):
        jobs.submit(ws, "sleep", {"steps": 1}, start=False)
    proc = subprocess.Popen([sys.executable, "-m", "core", "--workspace", str(ws.root), "jobs", "list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
    proc.stdout.close()  # like `head` exiting before the listing is written
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "BrokenPipe" not in err and "Traceback" not in err, err


def test_jobs_list_json_holds_the_rows_fields_and_nothing_else(tmp_path, capsys):
    """The listing's JSON is the stored row (params as stored, run folder, device), not the typed params the listing
    validated, written out as a Python repr."""
    import dataclasses

    from core.data.workspace import Workspace
    from core.runner import jobs, jobstore

    ws = Workspace(tmp_path / "ws")
    jobs.submit(ws, "sleep", {"steps": 1}, start=False)
    assert main(["--workspace", str(ws.root), "jobs", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    fields = {f.name for f in dataclasses.fields(jobstore.Job)} - {"typed"}
    assert set(row) == fields | {"device"} and row["params"]["steps"] == 1


def test_saved_selections_are_listed_exported_and_pretrained_on_from_the_cli(tmp_path, tiny_mlm_dir, capsys):
    """Found in review: a selection's KEY was shown only by `select --json` (one saved from the Map not at all), and
    the CLI's mlm only concatenated files, where the Runs page mixes TC and SC 1:1 (`--mode`, the same job)."""
    import json

    from core.cli import main

    ws = str(tmp_path / "ws")
    assert main(["demo", ws, "--dc-size", "60"]) == 0
    assert main(["--workspace", ws, "select", "--tc", "tc", "--dc", "dc", "--strategy", "random", "--budget", "6",
                 "--out", str(tmp_path / "sc.jsonl")]) == 0
    capsys.readouterr()
    assert main(["--workspace", ws, "selections", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["strategy"] == "random" and listed["budget"] == 6 and listed["label"].startswith("random")
    assert main(["--workspace", ws, "selections", "export", listed["key"][:8], "--out", str(tmp_path / "sc.txt")]) == 0
    assert len((tmp_path / "sc.txt").read_text().splitlines()) == 6
    capsys.readouterr()
    assert main(["--workspace", ws, "mlm", "--mode", "tc+sc", "--selection", listed["key"], "--model", str(tiny_mlm_dir),
                 "--preset", "tiny", "--out", str(tmp_path / "b1"), "--quiet"]) == 0
    lineage = json.loads((tmp_path / "b1" / "lineage.json").read_text())
    assert [p["name"] for p in lineage["mlm_phases"]] == ["tc+sc"] and lineage["selection"]["id"] == listed["key"]
    assert main(["--workspace", ws, "corpora", "set-role", "demo-tc", "none"]) == 0  # DAPT reads DC alone: no TC needed
    assert main(["--workspace", ws, "mlm", "--mode", "dapt", "--dc", "dc", "--model", str(tiny_mlm_dir), "--preset",
                 "tiny", "--out", str(tmp_path / "dapt"), "--quiet"]) == 0


def test_roles_are_set_and_corpora_deleted_from_the_cli_as_on_the_corpora_page(tmp_path, capsys):
    from core.cli import main
    from core.data.workspace import Workspace

    ws = str(tmp_path / "ws")
    assert main(["demo", ws, "--dc-size", "40"]) == 0
    capsys.readouterr()
    assert main(["--workspace", ws, "corpora", "set-role", "demo-dc", "tc"]) == 0
    err = capsys.readouterr().err
    assert "'demo-dc' is no longer the DC" in err and "the TC was 'demo-tc' until now" in err
    assert {r.value: n for r, n in Workspace(ws).roles().items()}["tc"] == "demo-dc"
    assert main(["--workspace", ws, "corpora", "set-role", "demo-dc", "none"]) == 0
    assert main(["--workspace", ws, "corpora", "delete", "demo-dc"]) == 0
    assert not Workspace(ws).has_corpus("demo-dc")
    assert main(["--workspace", ws, "corpora", "delete", "../../etc/x"]) == 2
