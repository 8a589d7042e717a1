"""Similarity: TVC, TVcC, PPL, JSD, WVV and TTR between workspace corpora (Dai et al. 2019, 2020),
the per-sentence PPL of DC under a TC model, and each measure against downstream F1."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from core.data.workspace import CorpusRole
from core.similarity.correlation import correlate_with_f1, finished_f1_runs
from core.similarity.matrix import subsample_note
from core.similarity.matrix_result import SimilarityMatrix
from core.similarity.measures import MEASURES, PAIRWISE
from core.tables import count
from ui import corpus_names, get_workspace, job_status, latest_job, run_guarded, submit_job

JOB_KEY = "similarity_job"
ws = get_workspace()
st.title("Corpus similarity")
st.caption("How close is each candidate pretraining source to the target? The measures of Dai et al. 2019 "
           "(*Using Similarity Measures to Select Pretraining Data for NER*) and 2020 (*Cost-effective Selection of "
           "Pretraining Data*), computed as a background job and cached per corpus pair.")

names = corpus_names(ws)
if not names:
    st.info("No corpora in the workspace yet: load some on the Corpora page.")
    st.stop()
roles = ws.roles()
tc, dc = roles.get(CorpusRole.TC), roles.get(CorpusRole.DC)

with st.expander("What the measures mean", expanded=False):
    for m in MEASURES.values():
        st.markdown(f"**{m.label}** ({m.direction}): {m.description}")

with st.form("similarity_form"):
    c1, c2 = st.columns(2)
    sources = c1.multiselect("Sources (candidate pretraining corpora)", names, key="sim_sources",
                             default=[n for n in (dc, roles.get(CorpusRole.LC)) if n])
    targets = c2.multiselect("Targets (the task's text)", names, key="sim_targets",
                             default=[n for n in (tc, roles.get(CorpusRole.TEST)) if n])
    measures = st.multiselect("Measures", list(MEASURES), default=["tvc", "tvcc", "ppl", "jsd", "ttr"], key="sim_measures",
                              format_func=lambda k: f"{MEASURES[k].label} ({MEASURES[k].direction})",
                              help="WVV trains skip-gram vectors per pair: the slowest measure.")
    c1, c2, c3 = st.columns(3)
    order = c1.selectbox("PPL n-gram order", [3, 4, 5], key="sim_order")
    sub_tokens = c2.number_input("Sub-sample each source to N tokens (0: off)", min_value=0, value=0, step=10_000,
                                 key="sim_sub_tokens", help="Size control (Dai et al. 2020): compare sources at equal size.")
    sub_k = c3.number_input("Number of sub-samples to average", min_value=1, max_value=20, value=1, key="sim_sub_k")
    histogram = st.checkbox("Also: per-sentence PPL of DC under a TC model", value=bool(tc and dc), disabled=not (tc and dc),
                            key="sim_histogram", help="Needs corpora with the TC and DC roles.")
    if st.form_submit_button("Compute", type="primary"):
        if not sources or not targets or not measures:
            st.error("Choose at least one source, one target and one measure.")
        else:
            submit_job("similarity", {"sources": sources, "targets": targets, "measures": measures, "order": int(order),
                                      "subsample_tokens": int(sub_tokens) or None, "subsample_k": int(sub_k),
                                      "histogram": {"tc": tc, "dc": dc} if histogram and tc and dc else None}, JOB_KEY)

job = latest_job("similarity", JOB_KEY)
if job is None:
    st.info("Choose sources and targets, then **Compute**.")
    st.stop()
job_status(job, cancel_key="similarity")
if job.status != "done" or not job.result:
    st.stop()
result = SimilarityMatrix.from_dict(job.result)


def heatmap(measure: str, values: list[list[float | None]]) -> None:
    info = MEASURES[measure]
    z = np.array([[math.nan if v is None else v for v in row] for row in values], dtype=float)
    arrow = "↑ higher = more similar" if info.higher_is_better else "↓ lower = more similar"
    # The same colour means "more similar" in every panel: reverse the scale where lower is better.
    scale = "Viridis" if info.higher_is_better else "Viridis_r"
    fig = px.imshow(z, x=result.targets, y=result.sources, text_auto=".3g", aspect="auto", color_continuous_scale=scale,
                    labels={"x": "target", "y": "source", "color": info.label})
    fig.update_layout(title=f"{info.label} · {arrow}", height=140 + 60 * len(result.sources), margin={"t": 50, "b": 10})
    st.plotly_chart(fig, key=f"sim_heat_{measure}")
    st.caption(info.description + (f" Method: {result.tvcc_method}." if measure == "tvcc" and result.tvcc_method else ""))


st.subheader("Source × target")
st.caption(f"{result.computed} values computed, {result.cached} from the cache. {subsample_note(ws, result)}")
cols = st.columns(2)
for i, measure in enumerate(m for m in PAIRWISE if m in result.measures):
    with cols[i % 2]:
        heatmap(measure, result.values[measure])
if "ppl_sum" in result.values:
    with st.expander("PPL as Dai et al. sum it: Σᵢ P(sᵢ)^(-1/Nᵢ) (grows with target size)"):
        st.dataframe(pd.DataFrame(result.values["ppl_sum"], index=result.sources, columns=result.targets),
                     key="sim_ppl_sum")

if result.ttr:
    st.subheader("Type-token ratio")
    ttr = pd.DataFrame([{"corpus": n, "TTR": v, "tokens": result.tokens.get(n)} for n, v in result.ttr.items()])
    st.dataframe(ttr, hide_index=True, key="sim_ttr")
    st.caption(MEASURES["ttr"].description)

hist = result.histogram
if hist and hist["counts"]:
    st.subheader(f"Per-sentence PPL of {hist['dc']} (DC) under a {hist['order']}-gram model of {hist['tc']} (TC)")
    edges = np.array(hist["log10_edges"])
    centers = 10 ** ((edges[:-1] + edges[1:]) / 2)
    fig = px.bar(x=centers, y=hist["counts"], labels={"x": "sentence perplexity (log scale)", "y": "DC sentences"}, log_x=True)
    fig.update_traces(width=np.diff(10 ** edges))
    st.plotly_chart(fig, key="sim_ppl_hist")
    st.caption(f"{count(hist['sentences'], 'sentence')} · median {hist['median']:.1f} · 10th-90th percentile "
               f"{hist['p10']:.1f}-{hist['p90']:.1f}. Low perplexity = close to TC: the PPL selection baseline keeps these.")

st.subheader("Measures against downstream F1")
runs = run_guarded(lambda: finished_f1_runs(ws), "could not read finished runs") or []
usable = [r for r in runs if r["source"] in result.sources]
if not usable:
    st.info("This panel needs finished NER runs pretrained on different sources (compare-sources, experiment cells or NER "
            "runs on an MLM model, with a test F1 and a last MLM corpus among the sources above); as in Dai et al. 2020 "
            f"Fig. 2 it then plots each measure against the F1 gain with Pearson r. Finished runs with an F1 found: {len(runs)}.")
    st.stop()
groups = sorted({r["data"] for r in usable})
# a gain compares runs on one LC and TEST: only that group's runs enter, baselines included (a baseline of another
# LC or TEST, such as an LC-size sweep's none cells, would shift every gain)
data = groups[0] if len(groups) == 1 else st.selectbox(
    "Runs trained and tested on", groups, key="sim_f1_data",
    help="F1 gains only compare runs on the same LC and TEST (an experiment's LC-size sweep adds subsets).")
runs = [r for r in runs if r["data"] == data]
target = st.selectbox("Similarity target (x: each source measured against it)", result.targets, key="sim_f1_target",
                      help="The corpus the measures compared each source with (usually TC). The runs' F1 is on their TEST.")
corr = run_guarded(lambda: correlate_with_f1(runs, result, target), "could not correlate")
if corr:
    base = corr["baseline_f1"]
    st.caption(f"{len(corr['points'])} sources with runs; y = {corr['y_label']} on TEST"
               + (f" over the no-pretraining baseline F1 {base:.4f}" if base is not None else " (no baseline run found)")
               + "; error bars: std over a source's runs (seeds), none where a source has one run."
               + (f" {corr['left_out']} run(s) left out: pretrained on another version of their source than the one "
                  "these measures read (re-imported since one or the other)."
                  if corr["left_out"] else ""))
    if not corr["points"]:
        st.info("No run of these sources is left to plot: every run was pretrained on another version of its source "
                "than the one these measures read (compute the measures again, or rerun the runs).")
        st.stop()
    points = pd.DataFrame(corr["points"])
    error_y = "y_err" if points["y_err"].notna().any() else None
    cols = st.columns(2)
    for i, (measure, stats) in enumerate(corr["measures"].items()):
        with cols[i % 2]:
            r = f"Pearson r = {stats['r']:.3f} (p = {stats['p']:.3g}, n = {stats['n']})" if stats["r"] is not None else stats["reason"]
            fig = px.scatter(points, x=measure, y="y", text="source", error_y=error_y,
                             labels={"y": corr["y_label"], measure: MEASURES[measure].label})
            fig.update_traces(textposition="top center", cliponaxis=False)  # the top point's label stays readable
            fig.update_layout(title=f"{MEASURES[measure].label}: {r}", height=320)
            st.plotly_chart(fig, key=f"sim_f1_{measure}")
