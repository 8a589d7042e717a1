"""Issue 42: DEV and TEST text kept out of every MLM corpus. DEV text in TC is refused (exit 2, naming DEV, no
traceback) unless allowed, which is recorded in the run folder, the result and beside every pretraining row; TEST
text is dropped from TC and DC, and how many is listed in the result. A smoke preset's verdict is no evidence."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from tests.conftest import TOY_SENTENCES, unlike
from tests.ner_data import single_thread_torch, write_toy_conll  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")


def _args(tmp_path, tc, dc, model, *extra: str, test_is_dev: bool = False) -> list[str]:
    labeled = write_toy_conll(tmp_path / "lab.conll")
    # TEST apart from DEV: a DEV sentence that is a TEST duplicate too is dropped with those and never reaches MLM
    test = tmp_path / "test.conll"
    test.write_text("Ada\tB-PER\nsang\tO\nin\tO\nOslo\tB-LOC\n.\tO\n\nBob\tB-PER\nran\tO\n.\tO\n")
    test = labeled if test_is_dev else test
    return ["--workspace", str(tmp_path / "ws"), "experiment", "--tc", str(tc), "--dc", str(dc), "--lc", labeled,
            "--dev", labeled, "--test", str(test), "--baselines", "none,tapt", "--seeds", "1", "--model", str(model),
            "--preset", "tiny", "--out", str(tmp_path / "exp"), "--quiet", *extra]


def test_dev_text_in_tc_is_refused_then_allowed_and_recorded(tmp_path, tiny_bert_dir, capsys):
    tc, dc = tmp_path / "tc.txt", tmp_path / "dc.txt"
    tc.write_text("\n".join([*TOY_SENTENCES[:3], *(unlike(s) for s in TOY_SENTENCES[3:8])]) + "\n")  # 3 DEV sentences
    dc.write_text("\n".join(unlike(s, k) for k in (1, 2) for s in TOY_SENTENCES[:8]) + "\n")
    assert main(_args(tmp_path, tc, dc, tiny_bert_dir)) == 2
    err = capsys.readouterr().err
    assert "DEV text in the MLM corpus" in err and "3 exact" in err and "--allow-dev-in-mlm" in err
    assert "Traceback" not in err and not list((tmp_path / "exp").glob("cells/*/seed-*/cell.json"))  # nothing trained

    assert main(_args(tmp_path, tc, dc, tiny_bert_dir, "--allow-dev-in-mlm")) == 0
    out = capsys.readouterr().out
    assert "DEV text in TC allowed (3 sentences)" in out and "(DEV in MLM)" in out
    guard = json.loads((tmp_path / "exp" / "mlm_guard.json").read_text())
    assert guard["allow_dev_in_mlm"] is True and guard["dev_in_mlm"] == 3
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["protocol"]["dev_in_mlm"] == 3
    rows = {e["row"]: e for e in result["summary"]}
    assert rows["tapt"]["dev_in_mlm"] is True and "dev_in_mlm" not in rows["none"]


def test_test_text_is_dropped_from_tc_and_dc_and_counted(tmp_path, tiny_bert_dir, capsys):
    """The labeled toy corpus is DEV and TEST at once here, so its text is DEV text too: allowed, TC keeps it, but a
    sentence that duplicates TEST is dropped from TC and DC all the same."""
    tc, dc = tmp_path / "tc.txt", tmp_path / "dc.txt"
    tc.write_text("\n".join([TOY_SENTENCES[0], *(unlike(s) for s in TOY_SENTENCES[1:8])]) + "\n")
    dc.write_text("\n".join([*(unlike(s, 1) for s in TOY_SENTENCES[:8]), TOY_SENTENCES[1].replace(".", "!"),
                             TOY_SENTENCES[2]]) + "\n")
    assert main(_args(tmp_path, tc, dc, tiny_bert_dir, "--allow-dev-in-mlm", test_is_dev=True)) == 0
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["protocol"]["dev_in_mlm"] == 0  # TC's DEV sentence is a TEST one too: dropped, it reached no MLM
    dropped = result["protocol"]["dropped_from_mlm"]
    assert dropped["tc"] == {"dev": 0, "test": 1} and dropped["dc"] == {"dev": 0, "test": 2}
    assert "TC: 1 duplicating TEST dropped before any MLM" in capsys.readouterr().out
    assert not result["verdict"]["evidence"] and result["verdict"]["text"].startswith("smoke test (preset tiny)")


def test_compare_sources_refuses_a_source_holding_dev_text_unless_allowed(tmp_path, tiny_bert_dir, capsys):
    from core.data.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    for name, text in (("own", TOY_SENTENCES[:8]), ("other", [unlike(s, 1) for s in TOY_SENTENCES[:8]])):
        (tmp_path / f"{name}.txt").write_text("\n".join(text) + "\n")
        ws.import_corpus(tmp_path / f"{name}.txt", name=name)
    labeled = write_toy_conll(tmp_path / "lab.conll")
    test = tmp_path / "test.conll"  # TEST unlike DEV: only DEV text is in the source here
    test.write_text("".join("".join(f"{w}\t{'B-PER' if k == 0 else 'O'}\n" for k, w in enumerate(unlike(s, 3).split())) + "\n"
                            for s in TOY_SENTENCES[:8]))
    argv = ["--workspace", str(ws.root), "compare-sources", "--sources", "own,other", "--lc", labeled, "--dev", labeled,
            "--test", str(test), "--target", "own", "--measures", "tvc", "--preset", "tiny", "--model", str(tiny_bert_dir),
            "--out", str(tmp_path / "cs"), "--json", "--quiet"]
    assert main(argv) == 2
    assert "DEV text in the MLM corpus source own" in capsys.readouterr().err
    assert main([*argv, "--allow-dev-in-mlm"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["protocol"]["allow_dev_in_mlm"] is True
    assert result["protocol"]["sources"]["own"]["dev_in_mlm"] == 8 and result["protocol"]["sources"]["other"]["dev_in_mlm"] == 0


def test_none_is_bit_identical_when_rerun_on_one_machine(tmp_path, tiny_bert_dir, corpora_for_none):
    """Issue 42: the same code, seed, device, precision and threads give the same `none` cell to the last bit, and
    the cell records those numerics (another machine's bf16 or thread count is why two machines differ)."""
    from core.data.workspace import Workspace
    from core.runner import jobs

    runs = []
    for k in (1, 2):
        params = {**corpora_for_none, "baselines": ["none"], "seeds": [3], "model": str(tiny_bert_dir), "preset": "tiny"}
        runs.append(jobs.run_inline(Workspace(tmp_path / f"ws{k}"), "experiment", params, run_dir=tmp_path / f"run{k}")["cells"][0])
    a, b = runs
    assert a["f1"] == b["f1"] and a["test_counts"] == b["test_counts"] and a["best_dev_f1"] == b["best_dev_f1"]
    assert a["ner_epochs"] == b["ner_epochs"] and a["numerics"] == b["numerics"]
    assert a["numerics"]["dtype"] in ("fp32", "bf16") and a["numerics"]["torch_threads"] >= 1


@pytest.fixture
def corpora_for_none(tmp_path):
    tc, dc = tmp_path / "tc.txt", tmp_path / "dc.txt"
    tc.write_text("\n".join(unlike(s) for s in TOY_SENTENCES[:8]) + "\n")
    dc.write_text("\n".join(unlike(s, 1) for s in TOY_SENTENCES[:8]) + "\n")
    labeled = write_toy_conll(tmp_path / "lab.conll")
    return {"tc": str(tc), "dc": str(dc), "lc": labeled, "dev": labeled, "test": labeled}


class _Leak:
    """A leakage report's two questions the guard asks (core.selection.leakage.LeakageReport)."""

    def __init__(self, dev: set[int], test: set[int]) -> None:
        self._rows = {"dev": dev, "test": test}
        self.per_against = {k: {"exact": len(v), "near": 0} for k, v in self._rows.items()}

    def rows(self, against: str) -> set[int]:
        return self._rows[against]

    def example(self, against: str) -> None:
        return None


def test_dev_text_kept_in_dc_marks_the_run_and_survives_a_refresh():
    """Found in review: with DEV allowed, DC's DEV duplicates stayed in DC (selectable, DAPT's corpus) while the
    protocol counted TC's alone, so no row was marked; and a merged or refreshed study JSON lost the mark."""
    import sys

    from core.data.corpus import Corpus
    from core.experiments.guard import GuardReport, guard_mlm_corpora, guard_text

    tc = Corpus(tokens=[["t", str(i)] for i in range(4)])
    dc = Corpus(tokens=[["d", str(i)] for i in range(6)])
    leakage = {"tc": _Leak(set(), set()), "dc": _Leak({0, 1, 2}, {2})}  # row 2 duplicates TEST too: dropped anyway
    _, kept, report = guard_mlm_corpora(tc, dc, leakage, allow_dev_in_mlm=True, pretrains=True)
    assert len(kept) == 5 and report.dev_in_dc == 2 and report.dev_kept == 2
    assert any("DEV text in DC kept (2 sentences" in line for line in guard_text(report))
    assert GuardReport.from_protocol(report.protocol).dev_kept == 2
    _, kept, report = guard_mlm_corpora(tc, dc, leakage, allow_dev_in_mlm=True, pretrains=True, drop_dev_from_dc=True)
    assert len(kept) == 3 and report.dev_kept == 0  # exclude_leaked
    sys.path.insert(0, "scripts")
    try:
        from crossner_study import derived_fields
    finally:
        sys.path.remove("scripts")
    cells = [{"row": row, "seed": 1, "f1": f1} for row, f1 in (("none", 0.5), ("tapt", 0.52))]
    marked = derived_fields(cells, {"preset": "study"}, [{"dev_in_mlm": 0, "dev_in_dc": 2, "allow_dev_in_mlm": True}])
    assert {e["row"]: e.get("dev_in_mlm", False) for e in marked["summary"]} == {"none": False, "tapt": True}
    plain = derived_fields(cells, {"preset": "study"}, [{"dev_in_mlm": 0, "allow_dev_in_mlm": False}])
    assert not any(e.get("dev_in_mlm") for e in plain["summary"])
