"""The Runs page (Streamlit AppTest): job list, curves, results tables and the prediction viewer
render from real job rows; the NER form submits a job with the chosen parameters."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.data.workspace import Workspace
from core.runner import jobs, jobstore
from tests.apptest import open_app, shown


@pytest.fixture(scope="module")
def runs_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("runsws")
    write_demo_workspace(root)
    ws = Workspace(root)
    ner = jobs.submit(ws, "ner", {"train": "lc", "dev": "dev", "test": "test"}, start=False)
    with open(ner.run_dir / "metrics.jsonl", "w") as fh:
        for step in range(1, 6):
            fh.write(json.dumps({"step": step, "epoch": 1, "loss": 5.0 / step, "lr": 1e-3, "sentences_per_s": 10.0}) + "\n")
        fh.write(json.dumps({"step": 5, "epoch": 1, "dev_f1": 0.4}) + "\n")
    pred = {"tokens": ["Abba", "played", "Stockholm"], "tags": ["B-band", "O", "O"], "spans": [{"start": 0, "end": 1, "type": "band"}],
            "c1": 0.8, "c2": 0.9, "n_entities": 1,
            "gold_spans": [{"start": 0, "end": 1, "type": "band"}, {"start": 2, "end": 3, "type": "location"}]}
    (ner.run_dir / "test_predictions.jsonl").write_text(json.dumps(pred) + "\n")
    jobstore.update(ws, ner.id, status="done", progress=1.0, result=json.dumps({"test": {"f1": 0.667}, "steps": 5}))
    from core.train.lineage import Lineage, record_run

    record_run(ws, ner.id, "ner", Lineage(), ner.run_dir, None, f1=0.667)  # as the NER job does when it finishes
    exp = jobs.submit(ws, "experiment", {"domain": "music"}, start=False)
    cells = [{"row": r, "seed": s, "f1": f, "per_type": {"band": {"f1": f}}}
             for r, s, f in (("none", 1, 0.5), ("none", 2, 0.6), ("dsir", 1, 0.7), ("dsir", 2, 0.72))]
    jobstore.update(ws, exp.id, status="done", progress=1.0, result=json.dumps({"domain": "music", "cells": cells}))
    return root


def _runs_page(root, monkeypatch) -> AppTest:
    return open_app(root, monkeypatch, "views/runs.py")


def test_results_page_shows_tables_and_predictions_and_runs_lists_the_jobs(runs_ws, monkeypatch):
    assert _runs_page(runs_ws, monkeypatch).selectbox(key="runs_selected").value is not None
    at = open_app(runs_ws, monkeypatch, "views/results.py")
    tables = [df.value for df in at.dataframe]
    results = next(t for t in tables if "music" in getattr(t, "columns", []))
    assert list(results.index) == ["none", "dsir"] and results.loc["dsir", "music"] == "71.00 ± 1.41"
    per_type = next(t for t in tables if "dsir" in getattr(t, "columns", []) and "band" in getattr(t, "index", []))
    assert per_type.loc["band", "none"] == 55.0
    htmls = " ".join(h.proto.body for h in at.get("html"))
    assert "Abba" in htmls and "∅" in htmls  # the missed gold span is marked
    assert any("test F1 0.667" in o for o in at.selectbox(key="pred_job").options)


def test_ner_form_submits_a_job(runs_ws, monkeypatch):
    real_submit = jobs.submit
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: real_submit(ws, kind, params, start=False, **kw))
    at = _runs_page(runs_ws, monkeypatch)
    at.number_input(key="ner_epochs").set_value(7)
    at.button(key="FormSubmitter:ner_form-Start NER training").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = jobs.list_jobs(Workspace(runs_ws), "ner")[0]
    assert job.params["config"]["epochs"] == 7 and job.params["preset"] == "demo" and job.params["train"]
    jobs.delete(Workspace(runs_ws), job.id)


def test_resume_and_delete_buttons(runs_ws, monkeypatch):
    ws = Workspace(runs_ws)
    monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)  # keep the row queued, start nothing
    job = jobs.submit(ws, "mlm", {"train": ["tc"]}, start=False)
    jobstore.update(ws, job.id, status="failed", error="process 1 exited without reporting")
    at = _runs_page(runs_ws, monkeypatch)
    at.selectbox(key="runs_selected").select(job.id).run()
    assert any("exited without reporting" in shown(e) for e in at.error)
    at.button(key=f"resume_{job.id}").click().run()
    assert not at.exception and jobstore.get_job(ws, job.id).status == "queued"
    at.button(key=f"delete_{job.id}").click().run()
    assert not at.exception and job.id not in [j.id for j in jobs.list_jobs(ws)]


# --------------------------------------------------------------------------- issue 9: sweeps and lineage on the Runs page


@pytest.fixture(scope="module")
def sweep_ws(tmp_path_factory, tiny_bert_dir):
    """A workspace with one finished experiment sweep run from the CLI (2 SC budgets x 2 LC sizes, tiny models):
    the page finds it through the run index, not through a job row."""
    from core.cli import main
    from tests.conftest import TOY_SENTENCES, unlike
    from tests.ner_data import write_toy_conll

    root = tmp_path_factory.mktemp("sweepws")
    (root / "tc.txt").write_text("\n".join(unlike(s) for s in TOY_SENTENCES[:8]) + "\n")  # no DEV/TEST text in MLM
    (root / "dc.txt").write_text("\n".join(unlike(s, k) for k in (1, 2, 3) for s in TOY_SENTENCES[:8]) + "\n")
    labeled = write_toy_conll(root / "lc.conll")
    ws = root / "ws"
    for name, path in (("tc", root / "tc.txt"), ("dc", root / "dc.txt"), ("lc", labeled)):  # a workspace with corpora:
        assert main(["--workspace", str(ws), "import", str(path), "--name", name]) == 0  # the app queues no demo jobs
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NERSELECT_TORCH_THREADS", "1")
        assert main(["--workspace", str(ws), "experiment", "--tc", "tc", "--dc", "dc", "--lc", "lc", "--dev", "lc", "--test", "lc",
                     "--strategies", "random", "--baselines", "none", "--seeds", "1", "--budgets", "4,8", "--lc-sizes", "12,24",
                     "--model", str(tiny_bert_dir), "--preset", "tiny", "--domain", "toy", "--out", str(root / "exp"),
                     "--quiet"]) == 0
    return ws


def _values(v) -> list:
    """A plotly JSON array: a plain list, or a typed array {dtype, bdata} (base64 of a numpy buffer)."""
    import base64

    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def test_results_page_draws_sweep_figures_table5_and_lineage(sweep_ws, monkeypatch):
    import json

    from core.train.lineage import list_runs

    at = open_app(sweep_ws, monkeypatch, "views/results.py")
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")} if at.get("plotly_chart") else {}
    titles = [spec["layout"]["title"]["text"] for spec in charts.values() if spec.get("layout", {}).get("title")]
    assert any(t.startswith("Fig. 2") for t in titles) and any(t.startswith("Fig. 4") for t in titles), titles
    fig2 = next(s for s in charts.values() if s["layout"]["title"]["text"].startswith("Fig. 2"))
    line = next(t for t in fig2["data"] if t["name"] == "random")
    assert _values(line["x"]) == [4, 8] and len(_values(line["error_y"]["array"])) == 2  # mean ± std over seeds
    fig4 = next(s for s in charts.values() if s["layout"]["title"]["text"].startswith("Fig. 4"))
    assert {t["name"] for t in fig4["data"]} == {"none", "random · SC 4", "random · SC 8"}
    assert all(_values(t["x"]) == [12, 24] for t in fig4["data"])
    tables = [df.value for df in at.dataframe]
    table5 = next(t for t in tables if "MLM time (s)" in getattr(t, "columns", []))
    assert list(table5.index) == ["none", "random · SC 4", "random · SC 8"]
    import numpy as np

    # the MLM time shown is the one the cell recorded (a tiny MLM takes ~0.05 s, which rounds to 0.0 or 0.1: compare with state)
    recorded = json.loads((sweep_ws.parent / "exp" / "pretrain" / "random.b8" / "seed-1" / "mlm" / "seconds.json").read_text())
    assert recorded["seconds"] > 0 and table5.loc["random · SC 8", "MLM time (s)"] == np.round(recorded["seconds"], 1)
    assert table5.loc["none", "MLM time (s)"] == 0
    assert table5.loc["random · SC 8", "sentences"] == 16 and "±" in table5.loc["random · SC 4", "F1 (%)"]
    assert list(table5["seeds"]) == [1, 1, 1]
    results = next(t for t in tables if "toy" in getattr(t, "columns", []))
    assert list(results.index) == ["none", "random · SC 4", "random · SC 8"]  # Table 3 at the largest LC size

    runs = {e.id: e for e in list_runs(Workspace(sweep_ws), "ner")}
    half = next(i for i, e in runs.items() if e.extra["lc_size"] == 12 and e.extra["budget"] == 4)
    at.selectbox(key="lineage_run").select(half).run()
    assert not at.exception, [e.value for e in at.exception]
    facts = next(t for t in (df.value for df in at.dataframe) if list(getattr(t, "columns", [])) == ["field", "value"])
    facts = dict(zip(facts["field"], facts["value"], strict=True))
    assert facts["run"] == half and facts["seed"] == "1" and facts["preset"] == "tiny" and facts["test F1"] == f"{runs[half].f1:.4f}"
    assert "random" in facts["selection"] and "4 sentences" in facts["selection"]
    phases = next(t for t in (df.value for df in at.dataframe) if "phase" in getattr(t, "columns", []))
    assert list(phases["phase"]) == ["tc+sc", "tc+sc"] and all(h for h in phases["hash"])
    data = next(t for t in (df.value for df in at.dataframe) if "role" in getattr(t, "columns", []))
    assert list(data["role"]) == ["LC", "DEV", "TEST"] and data["sentences"].iloc[0] == "12 of 24 (drawn with seed 1)"


def test_experiment_form_submits_budgets_and_lc_sizes(runs_ws, monkeypatch):
    real_submit = jobs.submit
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: real_submit(ws, kind, params, start=False, **kw))
    at = _runs_page(runs_ws, monkeypatch)
    at.text_input(key="exp_budget").input("100, 0.2")
    at.text_input(key="exp_lc_sizes").input("abc")
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    assert not at.exception and any("LC sizes" in shown(e) and "abc" in shown(e) for e in at.error)
    at.text_input(key="exp_lc_sizes").input("0.5,1.0")
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = next(j for j in jobs.list_jobs(Workspace(runs_ws), "experiment") if j.params.get("budgets"))
    assert job.params["budgets"] == [100, 0.2] and job.params["lc_sizes"] == [0.5, 1.0]
    assert job.params["preset"] == "demo" and job.params["pick_checkpoint"] == 4  # the preset's pick, stored resolved
    jobs.delete(Workspace(runs_ws), job.id)
    at.selectbox(key="exp_pick").set_value("off: the last MLM model")
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    job = next(j for j in jobs.list_jobs(Workspace(runs_ws), "experiment") if j.params.get("budgets"))
    assert job.params["pick_checkpoint"] == 0 and job.params["mlm_config"] is None  # no MLM settings: the preset's
    jobs.delete(Workspace(runs_ws), job.id)
    # a recipe variant (issue 46's knobs): typed settings become the job's MLM config; a bad one starts nothing
    before = len(jobs.list_jobs(Workspace(runs_ws), "experiment"))
    for bad, said in (("lr", "expected KEY=VALUE"), ("lrr=1e-4", "unknown MLM setting"), ("mlm_probability=2", "(0, 1)")):
        at.text_input(key="exp_mlm").input(bad)
        at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
        assert not at.exception and any(said in shown(e) for e in at.error), (bad, [shown(e) for e in at.error])
    assert len(jobs.list_jobs(Workspace(runs_ws), "experiment")) == before
    at.text_input(key="exp_mlm").input("lr=5e-5, head_warmup_steps=100")
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    job = next(j for j in jobs.list_jobs(Workspace(runs_ws), "experiment") if j.params.get("budgets"))
    assert job.params["mlm_config"] == {"lr": 5e-5, "head_warmup_steps": 100}
    jobs.delete(Workspace(runs_ws), job.id)
    # a time limit: a bad one starts nothing and says what a duration looks like; a good one is stored in seconds
    at.text_input(key="exp_time_limit").input("soon")
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    assert not at.exception and any("time_limit" in shown(e) and "90m" in shown(e) for e in at.error)
    assert len(jobs.list_jobs(Workspace(runs_ws), "experiment")) == before
    at.text_input(key="exp_time_limit").input("1h30m")
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    job = next(j for j in jobs.list_jobs(Workspace(runs_ws), "experiment") if j.params.get("budgets"))
    assert job.params["time_limit"] == 5400.0
    jobs.delete(Workspace(runs_ws), job.id)
    # a typed row with a selection option: its own row, stored as one name; a misspelt option starts nothing
    at.text_input(key="exp_time_limit").input("")
    at.multiselect(key="exp_strategies").set_value(["dsir", "DSIR:length=chunk"])
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    job = next(j for j in jobs.list_jobs(Workspace(runs_ws), "experiment") if j.params.get("budgets"))
    assert job.params["strategies"] == ["dsir", "dsir:length=chunk"]
    jobs.delete(Workspace(runs_ws), job.id)
    for bad in ("dsir:lenght=chunk", "dsri"):  # a misspelt option or strategy: said on the page, nothing submitted
        at.multiselect(key="exp_strategies").set_value([bad])
        at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
        assert not at.exception and any(bad.split(":")[-1] in shown(e) for e in at.error), [shown(e) for e in at.error]
    assert len(jobs.list_jobs(Workspace(runs_ws), "experiment")) == before
    # found in review: "Exclude leaked" was disabled by the box beside it, which inside a form changed nothing until
    # the form was sent: it could not be ticked without starting an experiment
    at.multiselect(key="exp_strategies").set_value(["dsir"])
    assert not at.checkbox(key="exp_exclude_leaked").disabled
    at.checkbox(key="exp_allow_dev").check()
    at.checkbox(key="exp_exclude_leaked").check()
    at.button(key="FormSubmitter:exp_form-Start experiment").click().run()
    job = next(j for j in jobs.list_jobs(Workspace(runs_ws), "experiment") if j.params.get("budgets"))
    assert job.params["exclude_leaked"] is True and job.params["allow_dev_in_mlm"] is True
    jobs.delete(Workspace(runs_ws), job.id)
