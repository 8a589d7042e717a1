"""Runs: launch MLM / NER / experiment jobs, watch them live, compare results, view predictions."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.adapt.highlight import CSS, legend_html, prediction_html, type_colors
from core.data.workspace import Role
from core.experiments.experiment import BASELINES, collect_results, parse_amounts, parse_seeds, per_type_table, results_table
from core.experiments.sweeps import fig2_frame, fig4_frame, sweep_axes, table5_frame
from core.runner import jobs
from core.runner.jobtypes import DEFAULT_PRESET, PRESETS, preset_help
from core.runner.jobview import CHART_POLL_S, KIND_NAMES, LIST_POLL_S, describe_job, job_charts, job_rows, status_text
from core.selection.select import Strategy, list_selections, selection_label
from core.train.lineage import describe_run, get_run, list_runs
from core.train.mlm import MODES
from core.train.ner import PRESETS as NER_PRESETS
from core.train.ner import read_predictions
from ui import corpus_picker, fmt_seconds, get_workspace, job_poll, run_guarded, slow_down_polling, submit_job

# the default first, then core.runner.jobtypes.PRESETS cheapest first (one list for pages and CLI)
PRESET_CHOICES = [DEFAULT_PRESET, *(p for p in PRESETS if p != DEFAULT_PRESET)]

ws = get_workspace()
st.title("Runs")
st.caption("MLM continued pretraining, BERT-CRF fine-tuning and full experiments run as background jobs: "
           "close the tab and they keep going; cancelled or killed training resumes from its last checkpoint.")


def show_launched(job: jobs.Job | None) -> None:
    """Point the detail panel at the job just started (its selectbox is drawn further down this run)."""
    if job is not None:
        st.session_state["runs_selected"] = job.id


ner_tab, mlm_tab, exp_tab = st.tabs(["NER fine-tuning", "MLM pretraining", "Experiment"])
with ner_tab, st.form("ner_form"):
    c = st.columns(3)
    with c[0]:
        n_train = corpus_picker(ws, "Train (LC)", Role.LC, "ner_train", labeled=True)
    with c[1]:
        n_dev = corpus_picker(ws, "Dev (early stopping)", Role.DEV, "ner_dev", labeled=True, allow_none=True)
    with c[2]:
        n_test = corpus_picker(ws, "Test", Role.TEST, "ner_test", labeled=True, allow_none=True)
    c = st.columns(4)
    n_model = c[0].text_input("Encoder", "default", key="ner_model", help="'default', a folder (e.g. an MLM run's model), or an HF id")
    n_preset = c[1].selectbox("Preset", PRESET_CHOICES, key="ner_preset", help=preset_help("ner"))
    # empty = the preset's own value: a fixed default here overrode every preset (tiny trained 20 epochs)
    n_epochs = c[2].number_input("Max epochs", 1, 200, None, key="ner_epochs", placeholder="preset's",
                                 help="Empty: the preset decides (" + ", ".join(f"{k} {v.get('epochs', 100)}"
                                                                                 for k, v in NER_PRESETS.items()) + ").")
    n_seed = c[3].number_input("Seed", 0, 10_000, 1, key="ner_seed")
    if st.form_submit_button("Start NER training", type="primary") and n_train:
        config = {"seed": int(n_seed), **({"epochs": int(n_epochs)} if n_epochs is not None else {})}
        show_launched(submit_job("ner", {"train": n_train, "dev": n_dev, "test": n_test, "model": n_model.strip() or "default",
                                         "preset": n_preset, "config": config}, "runs_job"))

with mlm_tab, st.form("mlm_form"):
    c = st.columns(3)
    m_mode = c[0].selectbox("Corpus", MODES, key="mlm_mode",
                            format_func={"tc+sc": "TC + selected SC, 1:1 (seed method)", "tapt": "TAPT: TC only",
                                         "dapt": "DAPT: all of DC", "tapt+dapt": "DAPT then TAPT"}.get)
    with c[1]:
        m_tc = corpus_picker(ws, "TC", Role.TC, "mlm_tc")
    with c[2]:
        m_dc = corpus_picker(ws, "DC", Role.DC, "mlm_dc")
    sels = {m["key"]: selection_label(m) for m in list_selections(ws)}
    m_sel = st.selectbox("Selection (SC) for TC + SC", [None, *sels], key="mlm_selection",
                         format_func=lambda k: "(none saved yet: run one on the Selection page)" if k is None else sels[k])
    c = st.columns(3)
    m_model = c[0].text_input("Encoder", "default", key="mlm_model")
    m_preset = c[1].selectbox("Preset", PRESET_CHOICES, key="mlm_preset", help=preset_help("mlm"))
    m_steps = c[2].number_input("Max steps", 0, 1_000_000, None, key="mlm_steps", placeholder="preset's",
                                help="Empty: the preset decides; 0: the epochs decide.")
    if m_model.strip() in ("", "default"):
        st.info("The default encoder has no MLM head: a fresh head is initialised and trained (the run log says so too).")
    if st.form_submit_button("Start MLM pretraining", type="primary"):
        config = {} if m_steps is None else {"max_steps": int(m_steps)}  # 0 reaches the trainer: epochs decide
        show_launched(submit_job("mlm", {"mode": m_mode, "tc": m_tc, "dc": m_dc, "selection": m_sel,
                                         "model": m_model.strip() or "default", "preset": m_preset, "config": config}, "runs_job"))

with exp_tab, st.form("exp_form"):
    strategies = [s.value for s in Strategy]
    c = st.columns(2)
    e_strats = c[0].multiselect("Selection strategies", strategies, default=["dsir"],
                                key="exp_strategies", help="name@b1 reads B1 (the TAPT model) instead of the base encoder")
    e_base = c[1].multiselect("Baselines", BASELINES, default=["none", "tapt"], key="exp_baselines")
    c = st.columns(4)
    e_seeds = c[0].text_input("Seeds", "1", key="exp_seeds", help="e.g. 1,2,3 for mean ± std (each seed repeats every row)")
    e_budget = c[1].text_input("SC budgets", "", key="exp_budget", placeholder="|TC|",
                               help="One SC size, or several for a sweep (Fig. 2): counts (500) or ratios of DC (0.1), "
                                    "comma-separated. Empty: |TC|, so TC:SC is 1:1.")
    e_lc = c[1].text_input("LC sizes", "", key="exp_lc_sizes", placeholder="all of LC",
                           help="Several for a sweep (Fig. 4): counts (50) or ratios of LC (0.25), comma-separated; each "
                                "subset is drawn with the cell's seed. Empty: all of LC.")
    e_preset = c[2].selectbox("Preset", PRESET_CHOICES, key="exp_preset", help=preset_help("experiment"))
    e_model = c[3].text_input("Encoder", "default", key="exp_model")
    st.caption("Uses the workspace roles TC, DC, LC, DEV and TEST. Each strategy x seed x SC budget x LC size: select -> "
               "MLM on TC+SC -> NER on LC -> test F1; baselines once per seed and LC size.")
    if st.form_submit_button("Start experiment", type="primary"):
        parsed = run_guarded(lambda: (parse_seeds(e_seeds, "Seeds"), parse_amounts(e_budget, "SC budgets"),
                                      parse_amounts(e_lc, "LC sizes")))
        if parsed is not None:
            seeds, budgets, lc_sizes = parsed
            params = {"tc": "tc", "dc": "dc", "lc": "lc", "dev": "dev", "test": "test", "strategies": e_strats,
                      "baselines": e_base, "seeds": seeds, "budgets": budgets or None,
                      "lc_sizes": lc_sizes or None, "preset": e_preset, "model": e_model.strip() or "default"}
            show_launched(submit_job("experiment", params, "runs_job"))


# ---------------------------------------------------------------- jobs list (H13: every kind, readable names)
def _jobs() -> list[jobs.Job]:
    return [j for j in jobs.list_jobs(ws) if j.kind != "sleep" or st.session_state.get("runs_show_sleep")]


st.subheader("Jobs")
st.caption("Every background job of this workspace: training, selections, maps, similarity, predictions, imports.")


@st.fragment(run_every=LIST_POLL_S if any(j.active for j in _jobs()) else None)
def job_list() -> None:
    all_jobs = _jobs()
    if not all_jobs:
        st.info("No jobs yet: start one above or on another page.")
        return
    kinds = sorted({j.kind for j in all_jobs})
    only = st.multiselect("Kinds", kinds, key="runs_kinds", placeholder="all kinds",
                          format_func=lambda k: KIND_NAMES.get(k, k))
    rows = job_rows([j for j in all_jobs if not only or j.kind in only])
    for r in rows:
        r["elapsed"] = fmt_seconds(r["elapsed"])
    st.dataframe(rows, hide_index=True, key="runs_table", column_order=["job", "status", "progress", "message", "elapsed", "id"],
                 column_config={"progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0,
                                                                            format="percent")})


job_list()
all_listed = _jobs()
job_ids = [j.id for j in all_listed]
names = {j.id: f"{describe_job(j, 90)} · {j.status} · {j.id}" for j in all_listed}
if job_ids and st.session_state.get("runs_selected") not in job_ids:
    wanted = st.session_state.get("runs_job")
    st.session_state["runs_selected"] = wanted if wanted in job_ids else job_ids[0]
chosen = st.selectbox("Job", job_ids, key="runs_selected", format_func=lambda i: names.get(i, i)) if job_ids else None


def job_detail(job_id: str, interval: float | None) -> None:
    job = run_guarded(lambda: jobs.get_job(ws, job_id))
    if job is None:
        return
    if interval is not None and not job.active:
        st.rerun(scope="app")  # finished while polling: redraw once without the timer, with its results
    slow_down_polling(job, interval)
    st.markdown(f"**{describe_job(job)}** · `{job.id}`")
    said = status_text(job, jobs.list_jobs(ws))
    st.progress(job.progress, text=" · ".join([said, fmt_seconds(job.elapsed)] + ([job.message] if job.message not in ("", said) else [])))
    if job.error:
        st.error(job.error)
    b = st.columns(6)
    if job.active and b[0].button("Cancel", key=f"cancel_{job.id}"):
        jobs.cancel(ws, job.id)
        st.rerun()
    if job.status in ("failed", "cancelled") and b[1].button("Resume", key=f"resume_{job.id}", help="continue from the last checkpoint"):
        jobs.resume(ws, job.id)
        st.rerun()
    if b[2].button("Delete", key=f"delete_{job.id}"):
        jobs.delete(ws, job.id)
        st.session_state.pop("runs_job", None)
        st.rerun(scope="app")
    if job.result and job.kind == "mlm":
        st.caption(("A fresh MLM head was initialised. " if job.result.get("fresh_head") else "")
                   + f"Model folder (usable as B1): `{job.result.get('out_dir')}`")
    with st.expander("Log", expanded=job.status == "failed"):
        st.code(job.log_tail(60) or "(empty)")


def job_curves(job_id: str) -> None:
    """Loss, throughput and dev-F1 curves: a slower poll than the progress bar (see core.runner.jobview)."""
    job = run_guarded(lambda: jobs.get_job(ws, job_id))
    charts = job_charts(job) if job is not None else []
    cols = st.columns(2)
    for i, (name, fig) in enumerate(charts):
        (cols[i] if name != "dev" else st).plotly_chart(fig, key=f"{name}_{job_id}")


if chosen:
    interval = job_poll(jobs.get_job(ws, chosen))
    st.fragment(job_detail, run_every=interval)(chosen, interval)
    st.fragment(job_curves, run_every=CHART_POLL_S if interval else None)(chosen)

st.subheader("Results")
experiments = collect_results(ws)
if not experiments:
    st.info("No experiment results yet. An experiment fills this table: rows strategies and baselines, columns domains.")
else:
    st.markdown("**Test F1 (%), mean ± std over seeds** (as the seed paper's Table 3)")
    st.dataframe(results_table(experiments), key="results_table")
    labels = {i: f"{e['domain']} · job {e['job']}" + (" (partial)" if e.get("partial") else "") for i, e in enumerate(experiments)}
    st.caption("A strategy run at several SC budgets has one row per budget; sweeps enter at their largest LC size.")
    pick = st.selectbox("Experiment", list(labels), format_func=labels.get, key="per_type_pick",
                        help="Its per-type F1 (Table 4), sweep figures (Fig. 2, Fig. 4) and Table 5 below.")
    st.markdown("**Per entity type, test F1 (%) mean over seeds** (as Table 4)")
    st.dataframe(per_type_table(experiments[pick]), key="per_type_table")


def sweep_section(cells: list[dict]) -> None:
    """Fig. 2, Fig. 4 and Table 5 of the seed paper for one experiment (frames from core.experiments.sweeps)."""
    axes = sweep_axes(cells)
    lc_size = None
    if len(axes["lc_sizes"]) > 1:
        lc_size = st.selectbox("LC size for Fig. 2 and Table 5", axes["lc_sizes"], index=len(axes["lc_sizes"]) - 1,
                               key="sweep_lc_size", format_func=lambda n: f"{n:,} LC sentences")
    f2 = fig2_frame(cells, lc_size)
    strat = f2[f2["kind"] == "strategy"]
    if len(axes["budgets"]) > 1 and not strat.empty:
        fig = px.line(strat, x="budget", y="f1_mean", error_y="f1_std", color="series", markers=True,
                      labels={"budget": "SC sentences (budget)", "f1_mean": "test F1", "series": "strategy"},
                      title=f"Fig. 2: test F1 (mean ± std over seeds) against the amount of SC, LC {int(f2['lc_size'].max()):,}")
        for _, b in f2[f2["kind"] == "baseline"].iterrows():
            fig.add_hline(y=b["f1_mean"], line_dash="dot", annotation_text=f"{b['row']} {b['f1_mean']:.3f}",
                          annotation_position="bottom right")
        st.plotly_chart(fig, key="sweep_fig2")
    else:
        st.caption("Fig. 2 (F1 against the amount of SC) needs strategies run at two or more SC budgets: "
                   "give several in SC budgets (CLI: --budgets 500,2000).")
    if len(axes["lc_sizes"]) > 1:
        f4 = fig4_frame(cells)
        fig = px.line(f4, x="lc_size", y="f1_mean", error_y="f1_std", color="series", markers=True,
                      labels={"lc_size": "LC sentences", "f1_mean": "test F1", "series": "method"},
                      title="Fig. 4: test F1 (mean ± std over seeds) against the amount of LC")
        st.plotly_chart(fig, key="sweep_fig4")
    else:
        st.caption("Fig. 4 (F1 against the amount of LC) needs two or more LC sizes (CLI: --lc-sizes 0.25,0.5,1.0).")
    st.markdown("**Table 5: MLM corpus, its size, test F1 (%) and MLM wall time**")
    st.dataframe(table5_frame(cells, lc_size), key="sweep_table5",
                 column_config={"sentences": st.column_config.NumberColumn(format="%d"),
                                "MLM time (s)": st.column_config.NumberColumn(format="%.1f")})


if experiments:
    sweep_section(experiments[pick].get("cells", []))


st.subheader("Lineage")
st.caption("Where a model came from: base model, every MLM phase with its corpora (name + content hash), the selection, "
           "LC/DEV/TEST hashes, seed, preset and wall time — the data `python -m core runs show RUN --json` prints.")
index = [e for e in (run_guarded(lambda: list_runs(ws), "could not read the run index") or []) if e.get("kind") in ("mlm", "ner")]
if not index:
    st.info("No finished training run yet: MLM and NER jobs, CLI runs and experiment / compare-sources cells list their "
            "lineage here when they finish.")
else:
    ids = [e["id"] for e in index]
    described = {e["id"]: f"{e['id']} · {e['kind']}" + (f" · test F1 {e['f1']:.3f}" if isinstance(e.get("f1"), (int, float)) else "")
                 for e in index}
    if st.session_state.get("lineage_run") not in ids:
        st.session_state["lineage_run"] = chosen if chosen in ids else ids[0]
    run_id = st.selectbox("Training run", ids, key="lineage_run", format_func=described.get)
    entry = run_guarded(lambda: get_run(ws, run_id))
    if entry is not None:
        shown = describe_run(entry)
        c = st.columns([2, 3])
        c[0].dataframe(pd.DataFrame(shown["facts"], columns=["field", "value"]), hide_index=True, key="lineage_facts")
        with c[1]:
            if shown["phases"]:
                st.markdown("**MLM phases** (in order)")
                st.dataframe(pd.DataFrame(shown["phases"]), hide_index=True, key="lineage_phases")
            else:
                st.caption("No MLM phase: trained straight from the base model.")
            if shown["data"]:
                st.markdown("**Labeled data**")
                st.dataframe(pd.DataFrame(shown["data"]).astype({"sentences": str}), hide_index=True, key="lineage_data")
        with st.expander("JSON (as `runs show --json`)"):
            st.json(entry, expanded=False)

st.subheader("Test-set predictions")
with_preds = [j for j in jobs.list_jobs(ws, "ner") if (j.run_dir / "test_predictions.jsonl").exists()]
if not with_preds:
    st.info("Train an NER model with a test corpus to see its predictions next to the gold spans here.")
else:
    c = st.columns([3, 1, 1])
    by_id = {j.id: j for j in with_preds}  # listed once above: no job read per option and rerun
    pj = c[0].selectbox("NER run", list(by_id), key="pred_job",
                        format_func=lambda i: f"{i} · test F1 {(by_id[i].result or {}).get('test', {}).get('f1', 0):.3f}")
    only_errors = c[1].checkbox("Only sentences with errors", key="pred_errors")
    limit = c[2].number_input("Show", 5, 500, 25, step=5, key="pred_limit")
    rows = read_predictions(by_id[pj].run_dir / "test_predictions.jsonl", limit=int(limit), only_errors=only_errors)
    colors = type_colors({s.type for r in rows for s in [*r["spans"], *(r["gold"] or [])]})
    st.html(legend_html(colors))
    for r in rows:
        st.caption(f"c1 {r['c1']:.3f} · c2 {r['c2']:.3f} · {r['errors']} mismatched spans")
        st.html(CSS + prediction_html(r["tokens"], r["spans"], colors, r["gold"]))
