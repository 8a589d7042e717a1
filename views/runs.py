"""Runs: launch MLM / NER / experiment jobs and watch every job live (progress, log, curves); results are on the Results page."""

from __future__ import annotations

import streamlit as st

from core.data.selection_store import list_selections
from core.data.workspace import CorpusRole
from core.experiments.plan import BASELINES, experiment_request
from core.recipes import presets
from core.recipes.modes import MODES
from core.recipes.presets import preset_help
from core.recipes.strategy_info import Strategy
from core.runner import jobs, jobstore
from core.runner.jobview import (
    CHART_POLL_S,
    LIST_POLL_S,
    active_ids,
    describe_job,
    ended_since,
    job_rows,
)
from core.runner.kinds import KINDS
from ui import corpus_picker, get_workspace, job_poll, run_guarded, still_signed_in, submit_job
from ui_runs import disk_panel, job_curves, job_detail, show_launched

PRESET_CHOICES = presets.preset_choices()  # the default first, then cheapest first (one list for pages and CLI)
# checkpoint pick (ExperimentParams.pick_checkpoint): None takes the preset's (core.recipes.presets.EXPERIMENT)
PICK_CHOICES = {f"the preset's ({presets.pick_defaults()})": None, f"on: {presets.PICK_SNAPSHOTS} snapshots": presets.PICK_SNAPSHOTS,
                "off: the last MLM model": 0}

ws = get_workspace()
st.title("Runs")
st.caption("MLM continued pretraining, BERT-CRF fine-tuning and full experiments run as background jobs: "
           "close the tab and they keep going; cancelled or killed training resumes from its last checkpoint.")


ner_tab, mlm_tab, exp_tab = st.tabs(["NER fine-tuning", "MLM pretraining", "Experiment"])
with ner_tab, st.form("ner_form"):
    c = st.columns(3)
    with c[0]:
        n_train = corpus_picker(ws, "Train (LC)", CorpusRole.LC, "ner_train", labeled=True)
    with c[1]:
        n_dev = corpus_picker(ws, "Dev (early stopping)", CorpusRole.DEV, "ner_dev", labeled=True, allow_none=True)
    with c[2]:
        n_test = corpus_picker(ws, "Test", CorpusRole.TEST, "ner_test", labeled=True, allow_none=True)
    c = st.columns(4)
    n_model = c[0].text_input("Encoder", "default", key="ner_model", help="'default', a folder (e.g. an MLM run's model), or an HF id")
    n_preset = c[1].selectbox("Preset", PRESET_CHOICES, key="ner_preset", help=preset_help("ner"))
    # empty = the preset's own value: a fixed default here overrode every preset (tiny trained 20 epochs)
    n_epochs = c[2].number_input("Max epochs", 1, 200, None, key="ner_epochs", placeholder="preset's",
                                 help="Empty: the preset decides (" + ", ".join(f"{k} {presets.ner_epochs(k)}" for k in presets.NER) + ").")
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
        m_tc = corpus_picker(ws, "TC", CorpusRole.TC, "mlm_tc")
    with c[2]:
        m_dc = corpus_picker(ws, "DC", CorpusRole.DC, "mlm_dc")
    sels = {m.key: m.label for m in list_selections(ws)}
    m_sel = st.selectbox("Selection (SC) for TC + SC", [None, *sels], key="mlm_selection",
                         format_func=lambda k: "(none saved yet: run one on the Selection page)" if k is None else sels[k])
    c = st.columns(3)
    m_model = c[0].text_input("Encoder", "default", key="mlm_model")
    m_preset = c[1].selectbox("Preset", PRESET_CHOICES, key="mlm_preset", help=preset_help("mlm"))
    m_steps = c[2].number_input("Max steps", 0, 1_000_000, None, key="mlm_steps", placeholder="preset's",
                                help="Empty: the preset decides; 0: the epochs decide.")
    m_snap = st.number_input("Keep a snapshot every N steps (0: none)", 0, 1_000_000, 0, key="mlm_snapshot_every",
                             help="Snapshots let 'Pick the checkpoint' (in the job's panel below) score each against the "
                                  "base encoder by DEV F1 and use the best, or none if pretraining did not help.")
    if m_model.strip() in ("", "default"):
        st.info("The default encoder has no MLM head: a fresh head is initialised and trained (the run log says so too).")
    if st.form_submit_button("Start MLM pretraining", type="primary"):
        config = {} if m_steps is None else {"max_steps": int(m_steps)}  # 0 reaches the trainer: epochs decide
        config.update({"snapshot_every": int(m_snap)} if m_snap else {})
        show_launched(submit_job("mlm", {"mode": m_mode, "tc": m_tc, "dc": m_dc, "selection": m_sel,
                                         "model": m_model.strip() or "default", "preset": m_preset, "config": config}, "runs_job"))

with exp_tab, st.form("exp_form"):
    strategies = [s.value for s in Strategy]
    c = st.columns(2)
    e_strats = c[0].multiselect("Selection strategies", strategies, default=["dsir"], key="exp_strategies",
                                accept_new_options=True,
                                help="Pick, or type a row: name@b1 reads B1 (the TAPT model) instead of the base encoder; "
                                     "name:KEY=VALUE sets a selection option as the Selection page does "
                                     "(dsir:length=chunk, knn:k=5), each typed row its own row of the results.")
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
    g = st.columns(2)
    e_allow_dev = g[0].checkbox("Allow DEV text in TC", key="exp_allow_dev",
                                help="Refused by default: DEV drives early stopping and the checkpoint pick, so MLM on DEV "
                                     "sentences flatters both. Allowed, the run is marked 'DEV in MLM' beside every row.")
    # not disabled by the box beside it: inside a form that box changes nothing until the form is sent
    e_exclude = g[1].checkbox("Exclude leaked (with DEV text in TC allowed)", key="exp_exclude_leaked",
                              help="TEST and DEV duplicates (exact, or near: verified Jaccard of word 2-grams >= 0.5) are "
                                   "always dropped from TC/DC before MLM; with 'Allow DEV text in TC' ticked, this still "
                                   "drops DC's DEV duplicates. Without it, it changes nothing.")
    c = st.columns([1, 1, 2, 1])
    e_limit = c[3].text_input("Time limit", "", key="exp_time_limit", placeholder="none",
                              help="2h, 1h30m, 90m or seconds: no cell starts that would end past it (each row's cells "
                                   "timed by its finished ones on this kind of device); the run then stops with its "
                                   "finished cells kept, and Resume continues with the same limit (CLI --time-limit).")
    e_parallel = c[2].text_input("Cells at once", "1", key="exp_parallel",
                                 help="A number, or 'auto': as many cells as the GPUs' free memory fits at the memory a cell "
                                      "of this recipe was measured to need (1 without a GPU). Each cell runs in its own "
                                      "process; the results are the same cells (CLI --parallel).")
    e_rehearsal = c[0].number_input("Rehearsal share", 0.0, 0.9, 0.0, 0.05, key="exp_rehearsal",
                                    help="Share of every MLM corpus made of random DC sentences, replayed so the encoder "
                                         "keeps general text (CLI --rehearsal-share). 0: none.")
    e_pick = c[1].selectbox("Checkpoint pick", list(PICK_CHOICES), key="exp_pick",
                            help=f"Keep {presets.PICK_SNAPSHOTS} MLM snapshots per cell and fine-tune NER from the one, or "
                                 "the base encoder, that a short NER fine-tune scores best on DEV (one short run per candidate). "
                                 "The base encoder wins "
                                 "ties, so a phase that scores below it in the short probe is not used; the probe also rewards faster "
                                 "convergence, so the results say the converged DEV F1 against no pretraining. By preset: "
                                 f"{presets.pick_defaults()} (paper keeps the seed paper's protocol). CLI --pick-checkpoint, "
                                 "--no-pick-checkpoint.")
    e_mlm = st.text_input("MLM settings", "", key="exp_mlm", placeholder="the preset's recipe",
                          help="KEY=VALUE over the preset's MLM recipe for every pretraining cell, comma-separated, e.g. "
                               "lr=5e-5, head_warmup_steps=100, mlm_probability=0.3, layer_lr_decay=0.8, "
                               "freeze_layers=3, l2sp=0.1 (issue 46's knobs; CLI --mlm KEY=VALUE). A run with other "
                               "settings is its own recipe: the Results page compares it with the default's run.")
    st.caption("Uses the workspace roles TC, DC, LC, DEV and TEST. Each strategy x seed x SC budget x LC size: select -> "
               "MLM on TC+SC -> NER on LC -> test F1; baselines once per seed and LC size.")
    if st.form_submit_button("Start experiment", type="primary"):
        params = run_guarded(lambda: experiment_request(
            e_seeds, e_budget, e_lc, e_mlm, e_strats, e_base,
            names={"seeds": "Seeds", "budgets": "SC budgets", "lc_sizes": "LC sizes", "mlm": "MLM settings"},
            tc="tc", dc="dc", lc="lc", dev="dev", test="test", preset=e_preset, model=e_model.strip() or "default",
            exclude_leaked=bool(e_exclude), allow_dev_in_mlm=bool(e_allow_dev), pick_checkpoint=PICK_CHOICES[e_pick],
            rehearsal_share=float(e_rehearsal), parallel=e_parallel.strip() or 1, time_limit=e_limit.strip() or None))
        if params is not None:
            show_launched(submit_job("experiment", params, "runs_job"))


# ---------------------------------------------------------------- jobs list (H13: every kind, readable names)
def _jobs() -> list[jobstore.Job]:
    return [j for j in jobs.list_jobs(ws) if j.kind != "sleep" or st.session_state.get("runs_show_sleep")]


st.subheader("Jobs")
st.caption("Every background job of this workspace: training, selections, maps, similarity, predictions, imports.")


drawn_active = active_ids(_jobs())  # what the picker below says is running


@st.fragment(run_every=LIST_POLL_S if drawn_active else None)
def job_list() -> None:
    still_signed_in()
    all_jobs = _jobs()
    if ended_since(drawn_active, all_jobs):  # the picker and the sidebar still say "running": redraw the page
        st.rerun(scope="app")
    if not all_jobs:
        st.info("No jobs yet: start one above or on another page.")
        return
    kinds = sorted({j.kind for j in all_jobs})
    only = st.multiselect("Kinds", kinds, key="runs_kinds", placeholder="all kinds",
                          format_func=lambda k: KINDS[k].label if k in KINDS else k)
    rows = job_rows([j for j in all_jobs if not only or j.kind in only])
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


if chosen and (picked := run_guarded(lambda: jobstore.get_job(ws, chosen))) is not None:  # deleted in another tab
    interval = job_poll(picked)
    st.fragment(job_detail, run_every=interval)(ws, chosen, interval)
    st.fragment(job_curves, run_every=CHART_POLL_S if interval else None)(ws, chosen)


st.subheader("Disk use")
disk_panel(ws)
