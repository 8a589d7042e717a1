"""Daily-use bugs of issue 13 (Streamlit AppTest): one role per corpus, presets not overridden,
the Runs detail panel follows the launched job, a zero budget cannot run, self-training says
when it compares two recipes, the DSIR ranking shows its sampled key; plus the core helpers
behind the Corpora browser and the job names."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from core.data.corpus import corpus_bytes
from core.data.workspace import CorpusRole, Workspace
from core.runner import jobs, jobstore
from tests.apptest import open_app


@pytest.fixture(scope="module")
def small_ws(tmp_path_factory) -> Path:
    from core.data.demo import write_demo_workspace

    root = tmp_path_factory.mktemp("dailyws")
    write_demo_workspace(root, dc_size=600)
    return root


@pytest.fixture(autouse=True)
def _start_no_process(monkeypatch) -> None:
    """No test here wants a real job process: one started by a page (a queued row it lists) would outlive its test
    and, when it ends, start the next test's queued rows in the shared workspace."""
    monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)


def _no_start(monkeypatch) -> None:
    real = jobs.submit
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: real(ws, kind, params, start=False, **kw))


# --------------------------------------------------------------------------- Corpora


def test_a_role_belongs_to_one_corpus_at_a_time(tmp_path, monkeypatch):
    from core.data.demo import write_demo_workspace

    ws = write_demo_workspace(tmp_path, dc_size=300)
    data = corpus_bytes(ws.load_corpus("demo-dev"), "conll")
    ws.import_upload("politics-train.conll", data, role=CorpusRole.LC)
    assert ws.corpus_for_role(CorpusRole.LC) == "politics-train"
    assert ws.corpus_info("demo-lc").role is None  # the previous holder lost it
    at = open_app(tmp_path, monkeypatch)
    table = next(df.value for df in at.dataframe if "role" in getattr(df.value, "columns", []))
    assert list(table.loc[table["role"] == "LC", "name"]) == ["politics-train"]


def test_corpora_browser_searches_filters_and_pages(small_ws, monkeypatch):
    from core.data.browse import browse_corpus, filter_fields

    ws = Workspace(small_ws)
    assert "domain" in filter_fields(ws, "demo-dc")
    first = browse_corpus(ws, "demo-dc", per_page=50)
    assert first.total == 600 and first.pages == 12 and len(first.rows) == 50 and first.rows[0]["index"] == 0
    last = browse_corpus(ws, "demo-dc", page=99, per_page=50)
    assert last.page == 11 and last.rows[-1]["index"] == 599
    music = browse_corpus(ws, "demo-dc", field="domain", values=["music"], per_page=1000)
    assert music.matches == sum(1 for d in ws.load_corpus("demo-dc").fields["domain"] if d == "music") > 0
    assert {r["domain"] for r in music.rows} == {"music"}
    word = first.rows[3]["text"].split()[0]
    hits = browse_corpus(ws, "demo-dc", query=word.upper(), per_page=1000)
    assert hits.matches >= 1 and all(word.lower() in r["text"].lower() for r in hits.rows)
    at = open_app(small_ws, monkeypatch)
    at.selectbox(key="corpus_view").select("demo-dc").run()
    assert any("Page 1 of" in c.value for c in at.caption)
    at.button(key="browse_next_demo-dc").click().run()
    assert not at.exception and any("Page 2 of" in c.value for c in at.caption)


def test_every_value_the_field_filter_offers_finds_its_rows(tmp_path):
    """Booleans and whole floats were offered as Python writes them ('True', '1.0') and matched as Arrow casts them
    ('true', '1'): picking one showed no row."""
    import json

    from core.data.browse import browse_corpus, filter_fields

    src = tmp_path / "f.jsonl"
    rows = [{"text": "a b", "gold": True, "w": 1.0}, {"text": "c d", "gold": False, "w": 2.5},
            {"text": "e f", "gold": True, "w": 1.0}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = Workspace(tmp_path / "ws")
    ws.import_corpus(src, name="f")
    fields = filter_fields(ws, "f")
    for field in ("gold", "w"):
        counts = {v: browse_corpus(ws, "f", field=field, values=[v]).matches for v in fields[field]}
        assert sum(counts.values()) == 3 and all(counts.values()), (field, counts)


# --------------------------------------------------------------------------- Runs


def test_tiny_preset_keeps_its_epochs_and_the_panel_shows_the_new_job(small_ws, monkeypatch):
    from core.train.ner_train import preset_config

    ws = Workspace(small_ws)
    older = jobs.submit(ws, "sleep", {"seconds": 0}, start=False)
    jobstore.update(ws, older.id, status="done", progress=1.0)
    _no_start(monkeypatch)
    at = open_app(small_ws, monkeypatch, "views/runs.py")
    at.selectbox(key="ner_preset").select("tiny")
    at.button(key="FormSubmitter:ner_form-Start NER training").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = jobs.list_jobs(ws, "ner")[0]
    assert job.params["preset"] == "tiny" and "epochs" not in job.params["config"]
    assert preset_config("tiny", **job.params["config"]).epochs == preset_config("tiny").epochs
    assert at.selectbox(key="runs_selected").value == job.id
    assert any("NER training" in m.value and job.id in m.value for m in at.markdown)
    jobs.delete(ws, job.id)
    jobs.delete(ws, older.id)


def test_every_job_kind_is_listed_with_a_readable_name(small_ws, monkeypatch):
    from core.runner.jobview import describe_job, status_text

    ws = Workspace(small_ws)
    monkeypatch.setenv("NERSELECT_MAX_INTERACTIVE_JOBS", "1")  # one exploring job at a time: the map waits
    sel = jobs.submit(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "dsir", "budget": 0.2}, start=False)
    jobstore.update(ws, sel.id, status="running", started=time.time())
    time.sleep(0.01)
    proj = jobs.submit(ws, "project", {"selection": "abcdef0123456789", "model": "default"}, start=False)
    assert describe_job(jobstore.get_job(ws, sel.id)) == "Selection · strategy dsir · tc demo-tc · dc demo-dc · budget 0.2"
    assert describe_job(proj) == "Map · selection abcdef01 · model default"
    listed = jobs.list_jobs(ws)
    assert status_text(proj, listed).startswith("queued behind Selection · strategy dsir")
    at = open_app(small_ws, monkeypatch, "views/runs.py")
    table = next(df.value for df in at.dataframe if "job" in getattr(df.value, "columns", []))
    names = list(table["job"])
    assert any(n.startswith("Selection") for n in names) and any(n.startswith("Map") for n in names)
    assert any(s.startswith("queued behind Selection") for s in table["status"])
    sidebar = " ".join(m.value for m in at.sidebar.markdown)
    assert "1 running" in sidebar
    for j in (sel, proj):
        jobs.delete(ws, j.id)


# --------------------------------------------------------------------------- Selection


def test_budget_zero_disables_run_selection_with_a_message(small_ws, monkeypatch):
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: submitted.append(params))
    at = open_app(small_ws, monkeypatch, "views/selection.py")
    at.radio(key="sel_budget_kind").set_value("count").run()
    at.number_input(key="sel_budget_count").set_value(0).run()
    assert not at.exception
    assert at.button(key="sel_run").disabled
    assert any("Budget is 0" in w.value for w in at.warning)
    assert submitted == []


@pytest.mark.parametrize(("kind", "key", "value"), [("count", "sel_budget_count", -5), ("ratio of DC", "sel_budget_ratio", -0.5),
                                                    ("ratio of DC", "sel_budget_ratio", 1.5),
                                                    ("ratio of DC", "sel_budget_ratio", 2.0)])  # not 2 sentences
def test_a_negative_or_too_large_budget_disables_run_selection(small_ws, monkeypatch, kind, key, value):
    """Issue 24: with min_value on the field the browser kept (and ran) the previous value after a typed -5."""
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: submitted.append(params))
    at = open_app(small_ws, monkeypatch, "views/selection.py")
    at.radio(key="sel_budget_kind").set_value(kind).run()
    at.number_input(key=key).set_value(value).run()
    assert not at.exception
    assert at.button(key="sel_run").disabled
    assert any(f"Budget is {value:g}" in w.value for w in at.warning)
    assert submitted == []


def test_the_pooled_entity_gain_sends_its_pool_with_the_selection(small_ws, monkeypatch):
    """Issue 46: entity-gain-pool's pool is set on the page and reaches the job as the same option the CLI takes."""
    from core.selection.strategies import Strategy

    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: submitted.append(params))
    at = open_app(small_ws, monkeypatch, "views/selection.py")
    at.selectbox(key="sel_strategy").set_value(Strategy.ENTITY_GAIN_POOL).run()
    assert not at.exception and not [s for s in at.slider if s.key == "sel_gain_mix"]
    at.slider(key="sel_gain_pool").set_value(5.0).run()
    at.text_input(key="sel_ner_model").set_value("runs/ner/model").run()
    at.button(key="sel_run").click().run()
    assert not at.exception
    assert submitted and submitted[-1]["strategy"] == "entity-gain-pool" and submitted[-1]["options"] == {"pool": 5.0}
    at.checkbox(key="sel_dedupe").check().run()  # any strategy: repeats passed over, the same option as --option dedupe=true
    at.button(key="sel_run").click().run()
    assert not at.exception and submitted[-1]["options"] == {"pool": 5.0, "dedupe": True}


def test_dsir_ranking_shows_the_sampled_key(small_ws, monkeypatch):
    from core.data.selection_store import list_selections, load_selection
    from core.selection.compare import ranking_table

    ws = Workspace(small_ws)
    jobs.run_inline(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "dsir", "budget": 0.2, "seed": 3})
    sel = load_selection(ws, list_selections(ws)[-1].key)
    table = ranking_table(sel, head=15, tail=0)
    keys = list(table["sampled_key"])
    assert keys == sorted(keys, reverse=True)  # the rank follows the key, whatever the scores do
    at = open_app(small_ws, monkeypatch, "views/selection.py")
    assert any("sampled_key" in getattr(df.value, "columns", []) for df in at.dataframe)
    assert any("sampled key" in c.value for c in at.caption)


# --------------------------------------------------------------------------- Adapt


def test_selftrain_states_a_preset_difference(small_ws, monkeypatch):
    from core.train.lineage import model_preset

    ws = Workspace(small_ws)
    base = jobs.submit(ws, "ner", {"train": "demo-lc", "preset": "demo"}, start=False)
    jobstore.update(ws, base.id, status="done", progress=1.0)
    model = base.run_dir / "model"
    model.mkdir()
    (model / "ner_config.json").write_text(json.dumps({"labels": ["O"], "base_model": "default"}))
    assert model_preset(model) == "demo"
    st_job = jobs.submit(ws, "selftrain", {"model": str(model), "lc": "demo-lc", "dev": "demo-dev", "unlabeled": "demo-dc",
                                           "preset": "tiny"}, start=False)
    result = {"threshold": 0.5, "optimal_threshold": 0.5, "pseudo_labeled": 10, "confident": 10, "unlabeled": 600,
              "baseline_f1": 0.878, "selftrain_f1": 0.754, "model_dir": "x"}
    jobstore.update(ws, st_job.id, status="done", progress=1.0, result=json.dumps(result))
    at = open_app(small_ws, monkeypatch, "views/adapt.py")
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "TEST F1, LC model (demo)" in labels and "TEST F1, self-trained (tiny)" in labels
    assert any("Not a like-for-like comparison" in w.value for w in at.warning)
    assert at.selectbox(key="st_preset_demo").value == "demo"  # the form defaults to the model's preset
    jobs.delete(ws, st_job.id)
    jobs.delete(ws, base.id)


# --------------------------------------------------------------------------- progress of long steps


def test_a_running_step_shows_its_message_and_log_and_a_queued_one_what_it_waits_for(small_ws, monkeypatch):
    ws = Workspace(small_ws)
    monkeypatch.setenv("NERSELECT_MAX_INTERACTIVE_JOBS", "1")
    train = jobs.submit(ws, "project", {"selection": "abcdef0123456789", "model": "default"}, start=False)
    jobstore.update(ws, train.id, status="running", started=time.time(), progress=0.3, message="UMAP epoch 100/500")
    sel = jobs.submit(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "cosine", "budget": 0.2}, start=False)
    at = open_app(small_ws, monkeypatch, "views/selection.py")
    bars = [p.proto.text for p in at.get("progress")]
    assert any("queued behind Map · selection abcdef01" in t for t in bars), bars
    jobstore.update(ws, train.id, status="done", finished=time.time())
    jobstore.update(ws, sel.id, status="running", started=time.time(), progress=0.4, message="DC embeddings 2,400/6,000")
    (sel.run_dir / "log.txt").write_text("cosine: scoring chunk 3 of 8\n")
    at = open_app(small_ws, monkeypatch, "views/selection.py")
    bars = [p.proto.text for p in at.get("progress")]
    assert any("Selection · strategy cosine" in t and "DC embeddings 2,400/6,000" in t for t in bars), bars
    assert any("scoring chunk 3 of 8" in c.value for c in at.caption)
    for j in (train, sel):
        jobs.delete(ws, j.id)


def test_a_queued_exploring_job_is_not_said_to_wait_behind_training(small_ws, monkeypatch):
    from core.runner.jobview import status_text, waiting_for

    ws = Workspace(small_ws)
    train = jobs.submit(ws, "ner", {"train": "demo-lc"}, start=False)
    jobstore.update(ws, train.id, status="running", started=time.time())
    sel = jobs.submit(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "random", "budget": 5}, start=False)
    ner2 = jobs.submit(ws, "ner", {"train": "demo-lc", "preset": "tiny"}, start=False)
    listed = jobs.list_jobs(ws)
    assert waiting_for(jobstore.get_job(ws, sel.id), listed) is None  # its own lane has room
    assert status_text(jobstore.get_job(ws, sel.id), listed) == "queued, starting"
    assert waiting_for(jobstore.get_job(ws, ner2.id), listed).id == train.id  # training waits behind training
    for j in (train, sel, ner2):
        jobs.delete(ws, j.id)


def test_cli_jobs_list_names_jobs_like_the_app(small_ws, capsys):
    from core.cli import main

    ws = Workspace(small_ws)
    job = jobs.submit(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "random", "budget": 5}, start=False)
    jobstore.update(ws, job.id, status="done", progress=1.0)
    assert main(["--workspace", str(small_ws), "jobs", "list"]) == 0
    assert "Selection · strategy random · tc demo-tc · dc demo-dc · budget 5" in capsys.readouterr().out
    jobs.delete(ws, job.id)


def test_the_sidebar_prints_no_stray_values(small_ws, monkeypatch):
    """Streamlit 'magic' writes the value of a bare expression statement (a 'False' in the sidebar)."""
    at = open_app(small_ws, monkeypatch)
    stray = [str(e.value).strip("` \n") for kind in ("markdown", "text", "code", "json") for e in at.sidebar.get(kind)]
    assert not [v for v in stray if v in ("False", "True", "None")], stray


def test_augment_form_can_allow_a_degenerate_model(small_ws, monkeypatch):
    """Issue 10: the quality gate refuses a degenerate MLM's output; the Adapt page can ask for it
    anyway (as `--allow-degenerate` does) and picks the held-out text the gate measures."""
    ws = Workspace(small_ws)
    _no_start(monkeypatch)
    model = small_ws / "mlm-model"
    model.mkdir(exist_ok=True)
    monkeypatch.setattr("core.review.predictions.list_mlm_models", lambda ws: [str(model)])
    at = open_app(small_ws, monkeypatch, "views/adapt.py")
    assert not at.exception
    assert at.selectbox(key="aug_check_tc").value == "demo-tc"
    at.checkbox(key="aug_allow_degenerate").check().run()
    at.button(key="aug_go").click().run()
    assert not at.exception
    job = jobs.list_jobs(ws, "augment")[0]
    assert job.params["allow_degenerate"] is True and job.params["check_tc"] == "demo-tc"
    jobs.delete(ws, job.id)


def test_polls_slow_down_as_a_job_ages():
    """An open page redraws a young job often and an old one rarely (bench/bench_server.py: the page
    must cost a running job at most 5%)."""
    from core.runner.jobview import CHART_POLL_S, LIST_POLL_S, poll_seconds

    assert poll_seconds(None) == poll_seconds(5) == 2.0
    assert poll_seconds(60) == 5.0 and poll_seconds(3600) == 10.0
    assert LIST_POLL_S >= poll_seconds(3600) and CHART_POLL_S > LIST_POLL_S


def test_a_typed_folder_that_is_not_a_workspace_is_created_only_when_asked(small_ws, monkeypatch, tmp_path):
    """Issue 24: a typo in the folder field silently created the folder tree, a whole demo and two embedding jobs."""
    typo = tmp_path / "typo" / "wrkspace"
    at = open_app(small_ws, monkeypatch)
    at.sidebar.text_input(key="ws_input").set_value(str(typo)).run()
    assert not at.exception
    assert not typo.exists() and not (tmp_path / "typo").exists()
    assert any("does not exist" in w.value for w in at.sidebar.warning)
    at.sidebar.button(key="ws_keep").click().run()
    assert at.sidebar.text_input(key="ws_input").value == str(small_ws) and not typo.exists()
    at.sidebar.text_input(key="ws_input").set_value(str(typo)).run()
    at.sidebar.button(key="ws_create_empty").click().run()
    assert not at.exception
    assert typo.is_dir() and Workspace(typo).list_corpora() == [] and jobs.list_jobs(Workspace(typo)) == []
    assert any("0 corpora" in c.value for c in at.sidebar.caption)
    at.sidebar.text_input(key="ws_input").set_value(str(small_ws)).run()  # an existing workspace: no question
    assert not at.sidebar.warning and any("demo-dc" in c.value for c in at.sidebar.caption)


def test_corpora_browser_colours_entities_marks_the_search_and_wraps(small_ws, monkeypatch):
    """Issue 24: the browser showed tags as "O O B-album ...", no mark on the match, long rows cut off."""
    from core.review.highlight import browse_rows_html

    rows = [{"index": 7, "text": "John Smith plays in London", "tags": "B-PER I-PER O O B-LOC"}]
    html = browse_rows_html(rows, "smith plays")
    assert "<mark>Smith</mark>" in html and "<mark>plays</mark>" in html and "<mark>John</mark>" not in html
    assert html.count('class="nx-ent"') == 2 and "B-PER" not in html and ">PER<" in html
    ws = Workspace(small_ws)
    lc = ws.load_corpus("demo-lc")
    word = lc.tokens[0][0]
    at = open_app(small_ws, monkeypatch)
    at.selectbox(key="corpus_view").select("demo-lc").run()
    at.text_input(key="browse_query_demo-lc").set_value(word).run()
    assert not at.exception
    shown = " ".join(str(h.proto.body) for h in at.get("html"))
    assert f"<mark>{word}</mark>" in shown and 'class="nx-ent"' in shown and "B-" not in shown.split("nx-sent", 1)[1]


def test_a_job_that_ends_while_the_page_polls_redraws_the_whole_page(small_ws, monkeypatch):
    """Issue 24: the Runs picker said "running" after the job ended, the sidebar's counts lagged: the polling parts
    (the job table, the sidebar badge) now redraw the page when a job drawn as active has ended."""
    from core.runner.jobview import active_ids, ended_since

    ws = Workspace(small_ws)
    job = jobs.submit(ws, "sleep", {"seconds": 0}, start=False)
    jobstore.update(ws, job.id, status="running", started=time.time())
    drawn = active_ids(jobs.list_jobs(ws))
    assert job.id in drawn and not ended_since(drawn, jobs.list_jobs(ws))
    open_app(small_ws, monkeypatch, "views/runs.py")  # the page with a running job and its polling parts draws
    jobstore.update(ws, job.id, status="done", progress=1.0, finished=time.time())
    assert ended_since(drawn, jobs.list_jobs(ws))
    jobs.delete(ws, job.id)
