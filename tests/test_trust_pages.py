"""Issue 22 in the app (AppTest): the Selection page's leakage panel finds TEST sentences in a selection, and the
Results page warns about an experiment whose MLM corpus held TEST text and shows its paired comparisons."""

from __future__ import annotations

import json

import pytest

from core.data.stream import open_corpus_stream
from core.data.workspace import Workspace
from core.errors import UserError
from core.runner import jobs, jobstore
from core.selection.strategies import select
from tests.apptest import open_app, shown


@pytest.fixture(scope="module")
def trust_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("trustws")
    ws = write_demo_workspace(root, dc_size=300)
    test = ws.load_corpus(ws.corpus_for_role("test")).texts()
    leaky = root / "leaky.txt"
    leaky.write_text("\n".join([*test[:4], "An unrelated sentence about harbours and ships at dawn ."] * 1) + "\n")
    ws.import_corpus(leaky, name="leaky-dc")
    select(ws.resolve_corpus("tc"), open_corpus_stream(ws, "leaky-dc"), "random", 1.0, workspace=ws,
           names={"tc": "tc", "dc": "leaky-dc"})
    return root


def test_selection_page_leakage_panel_finds_test_sentences(trust_ws, monkeypatch):
    at = open_app(trust_ws, monkeypatch, "views/selection.py")
    at.button(key="sel_leak_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(w.value for w in at.warning)
    assert "4 exact" in warnings and "5 selected sentences" in warnings
    examples = next(df.value for df in at.dataframe if "corpus_index" in getattr(df.value, "columns", []))
    assert len(examples) == 4 and set(examples["against"]) == {"demo-test"}


def test_results_page_warns_about_leaked_test_text_and_shows_comparisons(trust_ws, monkeypatch):
    ws = Workspace(trust_ws)
    exp = jobs.submit(ws, "experiment", {"domain": "music"}, start=False)
    cells = [{"row": r, "seed": s, "f1": f} for r, s, f in (("tapt", 1, 0.6), ("dsir", 1, 0.7))]
    leakage = {"dc": {"exact": 3, "near": 1, "threshold": 0.5, "per_against": {"test": {"exact": 3, "near": 1}}}}
    jobstore.update(ws, exp.id, status="done", progress=1.0,
                 result=json.dumps({"domain": "music", "cells": cells, "leakage": leakage}))
    at = open_app(trust_ws, monkeypatch, "views/results.py")
    warnings = " ".join(w.value for w in at.warning)
    assert "DC of this experiment holds 3 exact and 1 near duplicates of TEST" in warnings
    table = next(df.value for df in at.dataframe if "music" in getattr(df.value, "columns", []))
    assert table.loc["dsir", "music"] == "70.00 (1 seed)"  # no kept predictions: no interval, and no fake spread
    assert any("kept no per-sentence" in c.value for c in at.caption)


def test_selection_page_explains_a_sentence(trust_ws, monkeypatch):
    at = open_app(trust_ws, monkeypatch, "views/selection.py")
    at.button(key="sel_why_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.value.startswith("**DC #") for m in at.markdown)
    ranks = next(df.value for df in at.dataframe if "percentile" in getattr(df.value, "columns", []))
    assert list(ranks["strategy"]) == ["random"] and 0 <= ranks["percentile"].iloc[0] <= 100


def test_results_page_pools_compare_sources_results_of_several_targets(trust_ws, monkeypatch, capsys):
    from tests.test_compare_sources import _comparison

    ws = Workspace(trust_ws)
    results = [_comparison("a", {"a": 0.5, "x": 0.5, "y": 0.5}, {"a": 0.9, "x": 0.8, "y": 0.7}),  # rerun below: not pooled
               _comparison("a", {"a": 0.03, "x": 0.02, "y": 0.01}, {"a": 0.9, "x": 0.8, "y": 0.7}),
               _comparison("b", {"b": 0.13, "x": 0.12, "y": 0.11}, {"b": 0.3, "x": 0.2, "y": 0.1}),
               _comparison("b", {"b": 0.5}, {"b": 0.3}, preset="demo")]  # another recipe: not pooled by default
    for when, result in enumerate(results):  # finished one after another: the newest per target is pooled
        job = jobs.submit(ws, "compare-sources", {"sources": ["x", "y"], "lc": "lc", "dev": "dev", "test": "test",
                                                  "target": result["target"], "seeds": [1]}, start=False)
        jobstore.update(ws, job.id, status="done", progress=1.0, finished=1000.0 + when, result=json.dumps(result))
    old = jobs.submit(ws, "compare-sources", {"sources": ["x", "y"], "lc": "lc", "dev": "dev", "test": "test", "target": "c",
                                              "seeds": [1]}, start=False)  # a result without what pooling reads: not listed
    jobstore.update(ws, old.id, status="done", progress=1.0, finished=999.0, result=json.dumps({"target": "c", "sources": "?"}))
    at = open_app(trust_ws, monkeypatch, "views/results.py")
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.multiselect(key="pool_pick").options) == 4
    picked = at.multiselect(key="pool_pick").value
    measures = next(df.value for df in at.dataframe if "Pearson r" in getattr(df.value, "columns", []))
    assert list(measures["measure"]) == ["tvc", "jsd"] and set(measures["r within targets"]) == {"+1.00", "-1.00"}
    pairs = next(df.value for df in at.dataframe if "in-domain" in getattr(df.value, "columns", []))
    assert len(pairs) == 6 and pairs["gain"].iloc[0] == "+3.00"
    assert sorted(picked) == [1, 2]  # newest first: the demo run (0), then b (1), the newer a (2), the older a (3)
    other = 0
    at.multiselect(key="pool_pick").select(other).run()  # a third result of another recipe: refused, said in words
    assert not at.exception and any("different recipes" in shown(e) for e in at.error)
    # the CLI pools the same comparisons from the workspace, saying which
    from core.cli import main

    assert main(["compare-pool", "--workspace", str(trust_ws)]) == 0
    out = capsys.readouterr().out
    assert "pooled from the workspace: b · 3 sources" in out and "; a · 3 sources" in out
    assert "6 (source, target) pairs over 2 targets" in out


def test_results_page_shows_the_verdict_and_marks_dev_in_mlm(trust_ws, monkeypatch):
    """Issue 42: the experiment's verdict sentence on the page (a smoke preset says it is no evidence), and a run that
    allowed DEV text in its MLM corpus is flagged."""
    ws = Workspace(trust_ws)
    exp = jobs.submit(ws, "experiment", {"domain": "science"}, start=False)
    verdict = {"evidence": False, "preset": "tiny", "pretraining_helps": "cannot say", "selection_beats_random": "not tested",
               "comparisons": 0, "text": "smoke test (preset tiny): not evidence, the figures only show that the setup runs"}
    jobstore.update(ws, exp.id, status="done", progress=1.0,
                 result=json.dumps({"domain": "science", "cells": [{"row": "tapt", "seed": 1, "f1": 0.5}], "verdict": verdict,
                                    "protocol": {"dev_in_mlm": 4, "allow_dev_in_mlm": True, "dropped_from_mlm": {}}}))
    at = open_app(trust_ws, monkeypatch, "views/results.py")
    picker = at.selectbox(key="per_type_pick")
    picker.set_value(next(k for k, o in enumerate(picker.options) if "science" in o)).run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(w.value for w in at.warning)
    assert "**Verdict**: smoke test (preset tiny): not evidence" in warnings and "allowed DEV text in its MLM corpus" in warnings


def test_one_damaged_experiment_or_predictions_file_never_takes_down_the_results_page(trust_ws, monkeypatch, tmp_path):
    """Found in review: an F1 that is no number (with no counts to recompute it) raised through the whole page, a
    cell from before sweeps (no lc_size) broke Fig. 2, and a damaged test_predictions.jsonl showed a traceback."""
    from core.train.ner_predict import read_predictions

    ws = Workspace(trust_ws)
    bad = jobs.submit(ws, "experiment", {"domain": "politics"}, start=False)
    cells = [{"row": "dsir", "seed": 1, "f1": float("nan"), "budget": 10},
             {"row": "dsir", "seed": 2, "f1": 0.5, "budget": 20}]
    jobstore.update(ws, bad.id, status="done", progress=1.0, result=json.dumps({"domain": "politics", "cells": cells}))
    at = open_app(trust_ws, monkeypatch, "views/results.py")
    assert not at.exception, [e.value for e in at.exception]
    picker = at.selectbox(key="per_type_pick")
    picker.set_value(next(k for k, o in enumerate(picker.options) if "politics" in o)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("F1 is nan" in e.value for e in at.error), [e.value for e in at.error]
    damaged = tmp_path / "test_predictions.jsonl"
    damaged.write_text('{"tokens": ["a"], "spans": [], "c1": 0.9, "c2": 0.1}\n{ bad\n')
    with pytest.raises(UserError, match="test_predictions.jsonl:2"):
        read_predictions(damaged)
