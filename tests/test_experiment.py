"""Experiments: the result tables, a tiny strategies x seeds run (resumable), bad input as user errors."""

from __future__ import annotations

import pytest

from core import jobs
from core.errors import UserError
from core.experiment import BASELINES, load_cells, parse_strategy, per_type_table, results_table, summarize
from core.workspace import Workspace
from tests.conftest import TOY_SENTENCES
from tests.ner_data import single_thread_torch, write_toy_conll  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")

CELLS = [
    {"row": "dsir", "seed": 1, "f1": 0.60, "per_type": {"PER": {"f1": 0.5}, "LOC": {"f1": 0.7}}},
    {"row": "dsir", "seed": 2, "f1": 0.64, "per_type": {"PER": {"f1": 0.7}, "LOC": {"f1": 0.7}}},
    {"row": "none", "seed": 1, "f1": 0.50, "per_type": {"PER": {"f1": 0.4}}},
    {"row": "none", "seed": 2, "f1": 0.50, "per_type": {"PER": {"f1": 0.6}}},
    {"row": "tapt", "seed": 1, "f1": 0.55, "per_type": {}},
]


def test_summary_and_tables():
    s = summarize(CELLS)
    assert s["dsir"]["mean"] == pytest.approx(0.62) and s["dsir"]["std"] == pytest.approx(0.028284, abs=1e-5)
    assert s["none"]["std"] == 0.0 and s["tapt"]["n"] == 1 and s["dsir"]["per_type"] == {"LOC": 0.7, "PER": 0.6}
    table = results_table([{"domain": "music", "cells": CELLS}, {"domain": "ai", "cells": CELLS[:2]}])
    assert list(table.index) == ["none", "tapt", "dsir"] and list(table.columns) == ["music", "ai"]
    assert table.loc["dsir", "music"] == "62.00 ± 2.83" and table.loc["tapt", "music"] == "55.00 ± 0.00 (n=1)"
    assert table.loc["none", "ai"] == "–"
    types = per_type_table({"cells": CELLS})
    assert list(types.columns) == ["none", "tapt", "dsir"] and types.loc["PER", "dsir"] == 60.0 and types.loc["PER", "none"] == 50.0


def test_parse_strategy():
    assert parse_strategy("cosine@b1") == ("cosine", "b1") and parse_strategy(" dsir ") == ("dsir", None)
    with pytest.raises(UserError):
        parse_strategy("cosine@b7")


@pytest.fixture
def corpora(tmp_path):
    tc = tmp_path / "tc.txt"
    tc.write_text("\n".join(TOY_SENTENCES[:8]) + "\n")
    dc = tmp_path / "dc.txt"
    dc.write_text("\n".join(s.replace(".", "!") for s in TOY_SENTENCES) + "\n" + "\n".join(TOY_SENTENCES[:8]) + "\n")
    labeled = write_toy_conll(tmp_path / "lc.conll")
    return {"tc": str(tc), "dc": str(dc), "lc": labeled, "dev": labeled, "test": labeled}


def test_experiment_runs_cells_and_resumes(tmp_path, corpora, tiny_bert_dir, monkeypatch):
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = Workspace(tmp_path / "ws")
    params = {**corpora, "strategies": ["random", "ner"], "baselines": ["none", "tapt"], "seeds": [1, 2],
              "model": str(tiny_bert_dir), "preset": "tiny", "domain": "toy", "budget": 8}
    run_dir = tmp_path / "run"
    result = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)
    assert result["rows"] == ["none", "tapt", "random", "ner"] and len(result["cells"]) == 8
    assert all(0 <= c["f1"] <= 1 and c["per_type"] for c in result["cells"])
    assert {c["selected"] for c in result["cells"] if c["row"] in ("random", "ner")} == {8}
    assert result["summary"]["random"]["n"] == 2 and len(load_cells(run_dir)) == 8
    log = (run_dir / "log.txt").read_text()
    assert "training B1/B2" in log  # NER-Selected reads B2 = the TAPT model fine-tuned on LC
    table = results_table([result])
    assert list(table.columns) == ["toy"] and "±" in table.loc["ner", "toy"]

    (run_dir / "log.txt").write_text("")
    again = jobs.run_inline(ws, "experiment", params, run_dir=run_dir)  # a resumed job: every cell is already done
    assert again["cells"] == result["cells"] and "test F1" not in (run_dir / "log.txt").read_text()


def test_bad_baseline_is_a_user_error(tmp_path, corpora):
    with pytest.raises(UserError, match="unknown baseline"):
        jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", {**corpora, "baselines": ["bert"], "seeds": [1]})
    assert BASELINES == ("none", "tapt", "dapt", "tapt+dapt")


def test_cli_experiment_baselines_only(tmp_path, corpora, tiny_bert_dir, capsys, monkeypatch):
    from core.cli import main

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    assert main(["--workspace", str(tmp_path / "ws"), "experiment", "--tc", corpora["tc"], "--dc", corpora["dc"], "--lc",
                 corpora["lc"], "--dev", corpora["dev"], "--test", corpora["test"], "--baselines", "none,dapt", "--seeds", "1",
                 "--model", str(tiny_bert_dir), "--preset", "tiny", "--out", str(tmp_path / "exp"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "none" in out and "dapt" in out and "±" in out
    assert main(["experiment", "--tc", "x", "--dc", "x", "--lc", "x", "--dev", "x", "--test", "x", "--seeds", "a",
                 "--out", str(tmp_path / "e2")]) == 2
