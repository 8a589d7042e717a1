"""Selection: rank the domain corpus DC for the task corpus TC with one strategy, keep a budget,
compare saved selections (overlap, scores, domain precision) and export."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.data.selection import EXPORT_FORMATS
from core.data.selection_store import list_selections, load_selection
from core.data.showtext import markdown_literal
from core.data.workspace import CorpusRole
from core.errors import UserError
from core.recipes.budget import Budget
from core.recipes.selection_options import LENGTHS, SAMPLINGS, SMOOTHINGS, SelectionOptions
from core.recipes.strategy_info import Strategy
from core.selection.compare import overlap_matrix, ranking_table, score_histogram
from core.tables import readable
from ui import CURRENT_SELECTION, corpus_picker, get_workspace, job_status, latest_job, run_guarded, selection_picker, submit_job
from ui_selection import coverage_panel, leakage_panel, why_panel

ws = get_workspace()
st.title("Selection")
st.caption("Rank every DC sentence by its closeness to TC, keep the best `budget` of them as pretraining data (SC). "
           "Selections are saved in the workspace; the same inputs and parameters are never computed twice.")

MODEL_HELP = {
    "model": "Encoder: 'default' (all-MiniLM-L6-v2), a model folder (e.g. B1 = MLM run output) or a Hugging Face id.",
    "model2": "B2: B1 fine-tuned for NER (a NER run folder).",
    "ner_model": "A fine-tuned NER model folder (with ner_config.json), e.g. a NER run's output.",
}

# ---------------------------------------------------------------- inputs
c1, c2 = st.columns(2)
with c1:
    tc_name = corpus_picker(ws, "Task corpus (TC)", CorpusRole.TC, key="sel_tc")
with c2:
    dc_name = corpus_picker(ws, "Domain corpus (DC)", CorpusRole.DC, key="sel_dc")

strategy = st.selectbox("Strategy", list(Strategy), format_func=lambda s: f"{s.value} — {s.info.label}", key="sel_strategy")
st.caption(strategy.info.description)
models: dict[str, str] = {}
if strategy.info.models:
    cols = st.columns(len(strategy.info.models))
    for col, name in zip(cols, strategy.info.models):
        models[name] = col.text_input(name.replace("_", " "), value="default" if name == "model" else "", key=f"sel_{name}",
                                      help=MODEL_HELP[name]).strip()
if strategy == Strategy.MLM_PPL and models.get("model") in ("", "default"):
    st.warning("mlm-ppl needs an MLM-trained model (B1): the default encoder ships without a trained MLM head.")

b1, b2, b3, b4 = st.columns(4)
budget_kind = b1.radio("Budget as", ["ratio of DC", "count"], key="sel_budget_kind", horizontal=True)
# No min/max on these fields, checked below in core: with limits the browser turns a typed -5 red and silently
# keeps (and runs) the previous value
if budget_kind == "count":
    budget: float | int = int(b2.number_input("Sentences", value=1000, step=100, key="sel_budget_count"))
else:
    budget = float(b2.number_input("Ratio of DC", value=0.2, step=0.05, format="%.3f", key="sel_budget_ratio"))
seed = int(b3.number_input("Seed", min_value=0, value=0, step=1, key="sel_seed", help="random, dsir (Gumbel sampling)"))
ws_target = ws.settings().target_domain
target = b4.text_input("Target domain", key="sel_target", placeholder=f"TC's, else {ws_target}" if ws_target else "TC's",
                       help="For domain precision when DC carries a `domain` field; empty: TC's majority domain, else "
                            "the workspace's target, as at the CLI. A domain typed here must be one of DC's.").strip()
options: dict[str, object] = {}
if strategy == Strategy.DSIR:
    options["sampling"] = st.radio("DSIR ranking", list(SAMPLINGS), key="sel_dsir_sampling", horizontal=True,
                                   help="gumbel: importance resampling as in the paper; topk: deterministic highest weights")
    length = st.radio("DSIR sentence length", list(LENGTHS), key="sel_dsir_length", horizontal=True,
                      help="sum: the paper's sum over a sentence's n-grams, which favours short sentences; "
                           "chunk: each sentence weighed as a chunk of DC's mean length would be")
    if length != SelectionOptions().length:  # the default left unset: a selection made before keeps its key
        options["length"] = length
    smoothing = st.radio("DSIR smoothing", list(SMOOTHINGS), key="sel_dsir_smoothing", horizontal=True,
                         help="add-one: one count added to every n-gram bucket of TC and DC (what the studies ran); "
                              "with a small TC it rewards n-grams rare in DC. dc: TC's counts take DC's distribution "
                              "as their prior, so every n-gram TC lacks costs the same and a small TC still finds its "
                              "domain (docs/results/dsir-smoothing.json)")
    if smoothing != SelectionOptions().smoothing:
        options["smoothing"] = smoothing
if strategy == Strategy.ENTITY_GAIN_POOL:
    options["pool"] = st.slider("Domain pool, in budgets", 1.0, 20.0, SelectionOptions().pool, 0.5, key="sel_gain_pool",
                                help="Only this many budgets' worth of the DC sentences nearest TC compete on entity gain; "
                                     "1: the nearest sentences only (cosine), larger: entity gain decides more")
if strategy == Strategy.ENTITY_GAIN:
    options["mix"] = st.slider("Entity gain's share of the score", 0.0, 1.0, SelectionOptions().mix, 0.05, key="sel_gain_mix",
                               help="1: only the new entity mentions count; 0: only the closeness to TC (cosine) counts")
if st.checkbox("Pass over repeated sentences", key="sel_dedupe",
               help="A sentence whose text (case, punctuation and spacing folded) repeats one ranked before it is skipped "
                    "and the budget filled from the next ranked. Off, repeats are counted in the selection's notes."):
    options["dedupe"] = True

budget_problem = None
try:
    budget = Budget.of_kind(budget, ratio=budget_kind != "count").value
except UserError as exc:
    budget_problem = f"Budget is {budget:g}: {exc}. Choose how many DC sentences to keep before running the selection."
if budget_problem:
    st.warning(budget_problem)
if missing := strategy.info.missing(models):
    st.warning(f"{strategy.value} needs {', '.join(m.replace('_', ' ') for m in missing)}: "
               + "; ".join(MODEL_HELP[m] for m in missing))
if st.button("Run selection", type="primary", key="sel_run",
             disabled=not (tc_name and dc_name) or budget_problem is not None or bool(missing)):
    params = {"tc": tc_name, "dc": dc_name, "strategy": strategy.value, "budget": budget, "seed": seed,
              "target_domain": target or None, "options": options, **{k: v or None for k, v in models.items()}}
    submit_job("select", params, "selection_job")

job = latest_job("select", "selection_job")
if job is not None and (job.active or st.session_state.get("selection_job") == job.id):
    job_status(job, cancel_key="selection")

# ---------------------------------------------------------------- results
saved = list_selections(ws)
if not saved:
    st.info("No saved selections yet: choose a strategy and run one.")
    st.stop()

st.subheader("Saved selection")
keys = [m.key for m in saved]  # newest first
labels = {m.key: m.label for m in saved}
just_done = job.outcome.key if job is not None and job.status == "done" else None
# a selection this session started finished: show it, once (another session's job, e.g. the newest in the workspace,
# must not take the picker off the selection this session saved on the Map)
if just_done in keys and st.session_state.get("selection_job") == job.id and st.session_state.get("sel_done_seen") != job.id:
    st.session_state["sel_done_seen"] = job.id
    st.session_state[CURRENT_SELECTION] = just_done
view_key = selection_picker("Selection", saved, key="sel_view")


@st.cache_data(show_spinner=False, max_entries=8)
def _load(key: str, root: str):
    del root  # part of the cache key: another workspace holds other selections
    return load_selection(ws, key)


sel = run_guarded(lambda: _load(view_key, str(ws.root)), "Could not load the selection")
if sel is None:
    st.stop()
summary = run_guarded(lambda: sel.summary(target or None), "Domain precision") or sel.summary()
m = st.columns(4)
m[0].metric("Selected", f"{summary['selected']:,}", help=f"of {summary['dc_size']:,} DC sentences")
m[1].metric("Strategy", sel.strategy)
if "domain_precision" in summary:
    dp, rp = summary["domain_precision"], summary["random_domain_precision"]
    m[2].metric(f"Domain precision ({markdown_literal(summary['target_domain'])})", f"{dp:.3f}", delta=f"{dp - rp:+.3f} vs random",
                help="Share of selected sentences whose `domain` is the target domain; random selection expects the "
                     "domain's share of DC.")
    m[3].metric("Random baseline", f"{rp:.3f}")
else:
    m[2].caption("Domain precision needs a `domain` field in DC and a target domain.")
for note in sel.notes:
    st.info(markdown_literal(note))


coverage_panel(ws, view_key)
leakage_panel(ws, view_key)
why_panel(ws, sel, view_key)

left, right = st.columns([3, 2])
with left:
    st.markdown(f"**Top and bottom of the ranking** · score: {sel.meta.score_name} "
                f"({'higher' if sel.meta.higher_is_better else 'lower'} is better)")
    ranking = ranking_table(sel, head=15, tail=15, workspace=ws)
    if "sampled_key" in ranking:
        ranking.insert(ranking.columns.get_loc("score") + 1, "sampled_key", ranking.pop("sampled_key"))
        st.caption(f"DSIR with Gumbel sampling: the rank follows the **sampled key** = score + Gumbel noise (seed "
                   f"{sel.meta.seed or 0}), an importance resample, so a lower score can rank above a higher one. "
                   "Choose the topk ranking for an order by score alone.")
    st.dataframe(ranking, hide_index=True, width="stretch", key="sel_ranking")
    if ranking.attrs.get("note"):
        st.caption(markdown_literal(ranking.attrs["note"]))
with right:
    fig = px.bar(score_histogram(sel), x="score", y="count", color="part", barmode="overlay", title="Score distribution")
    fig.update_traces(marker_line_width=0)
    fig.update_layout(height=330, margin=dict(t=40, b=10))
    st.plotly_chart(fig, key="sel_score_hist")


@st.cache_data(show_spinner=False, max_entries=16)
def _export(key: str, fmt: str, root: str) -> bytes:
    del root
    return load_selection(ws, key).export_bytes(fmt)


MIME = {"txt": "text/plain", "jsonl": "application/jsonl", "csv": "text/csv"}
cols = st.columns(len(EXPORT_FORMATS))
for col, fmt in zip(cols, EXPORT_FORMATS):
    col.download_button(f"Export {fmt.upper()}", data=_export(view_key, fmt, str(ws.root)),
                        file_name=f"selection-{sel.strategy}-{view_key[:8]}.{fmt}", mime=MIME[fmt],
                        key=f"sel_export_{fmt}")

# ---------------------------------------------------------------- comparison
st.subheader("Compare saved selections")
# the current selection and the newest others; keyed on the count so that a new selection joins the default
compare = st.multiselect("Selections", keys, default=list(dict.fromkeys([view_key, *keys]))[:4], format_func=labels.get,
                         key=f"sel_compare_{len(keys)}")
if len(compare) >= 2:
    chosen = [_load(k, str(ws.root)) for k in compare]
    short = [f"{s.strategy} [{s.key[:6]}]" for s in chosen]
    matrix = overlap_matrix(chosen, short)
    fig = px.imshow(matrix, text_auto=".2f", zmin=0, zmax=1, color_continuous_scale="Blues", title="Overlap (Jaccard)")
    fig.update_layout(height=360, margin=dict(t=40, b=10))
    c1, c2 = st.columns(2)
    c1.plotly_chart(fig, key="sel_overlap")
    dist = pd.concat([score_histogram(s, bins=40).assign(selection=name) for s, name in zip(chosen, short)])
    fig = px.bar(dist, x="score", y="count", color="part", facet_col="selection", facet_col_wrap=2, barmode="stack",
                 title="Score distributions over DC")
    fig.update_xaxes(matches=None, showticklabels=True)
    fig.update_yaxes(matches=None)
    fig.update_layout(height=360, margin=dict(t=40, b=10))
    c2.plotly_chart(fig, key="sel_score_facets")
    def summary_of(s):  # a typed target none of this selection's DC domains: its row without domain precision
        try:
            return s.summary(target or None)
        except UserError:
            return s.summary()

    rows = [{"selection": name, **{k: summary_of(s).get(k) for k in ("selected", "domain_precision",
                                                                      "random_domain_precision")}}
            for s, name in zip(chosen, short)]
    st.dataframe(readable(rows), hide_index=True, key="sel_compare_table")
else:
    st.caption("Pick two or more selections to see their overlap and score distributions.")
