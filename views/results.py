"""Results: experiment tables (mean ± std over seeds), per-type F1, sweep figures, the lineage of every
training run, and a NER run's test-set predictions beside the gold spans."""

from __future__ import annotations

import json

import pandas as pd
import plotly.express as px
import streamlit as st

from core.experiments.compare import collect_comparisons
from core.experiments.decision import variant_comparisons
from core.experiments.experiment import collect_results, per_type_table, results_table
from core.experiments.readout import readout
from core.experiments.records import Cell
from core.experiments.summary import (
    comparison_rows,
    result_summary,
)
from core.experiments.sweeps import lc_amount_frame, mlm_time_frame, sc_amount_frame, sweep_axes
from core.review.highlight import CSS, legend_html, prediction_html, type_colors
from core.similarity.correlation import POOLED_HELP, default_pool, pair_rows, pool_comparisons, pooled_rows
from core.tables import readable
from core.train.lineage import describe_run, get_run, list_runs
from core.train.ner_predict import read_predictions, runs_with_test_predictions
from ui import get_workspace, run_guarded, show_readout

INTERVAL_HELP = ("95% CI: percentile bootstrap of the seed-mean F1, two-level: the seeds are drawn again, then the TEST "
                 "sentences (10,000 resamples), so it holds both test-set and seed variation. Differences: the same draws "
                 "for both rows (paired over sentences and seeds); p-value by the shifted null (Berg-Kirkpatrick et al. "
                 "2012). With two or more seeds each is also read as a t-test (seed and sentence variance added, "
                 "Welch-Satterthwaite df), since resampling three seeds shows too little of their spread: p is the larger "
                 "of the two readings, the interval the hull of both. p is Holm-adjusted over every comparison of the "
                 "experiment: verdicts and significance read the adjusted p. With one seed the table says '(1 seed)' "
                 "instead of a spread.")



@st.cache_data(max_entries=16, show_spinner="Resampling the TEST sentences (10,000 draws)...")
def _summary(result_json: str) -> list[dict]:
    return result_summary(json.loads(result_json))


@st.cache_data(max_entries=4, show_spinner="Resampling the TEST sentences (10,000 draws)...")
def _table(experiments_json: str) -> pd.DataFrame:
    return results_table(json.loads(experiments_json))


ws = get_workspace()
st.title("Results")
st.caption("What finished runs measured, and where each model came from. Every figure here can be regenerated from the "
           "CLI: `python -m core experiment ... --json`, `python -m core runs show RUN --json`.")

st.subheader("Experiments")
experiments = collect_results(ws)
if not experiments:
    st.info("No experiment results yet. An experiment fills this table: rows strategies and baselines, columns domains.")
else:
    st.markdown("**Test F1 (%), mean ± std over seeds [95% CI]** (as the seed paper's Table 3)",
                help=INTERVAL_HELP)
    table = run_guarded(lambda: _table(json.dumps([e.to_dict() for e in experiments], sort_keys=True, default=str)),
                        "Could not build the results table")
    if table is not None:
        st.dataframe(table, key="results_table")
    labels = {i: f"{e.domain} · job {e.job}" + (" (partial)" if e.partial else "") for i, e in enumerate(experiments)}
    st.caption("A strategy run at several SC budgets has one row per budget; sweeps enter at their largest LC size.")
    pick = st.selectbox("Experiment", list(labels), format_func=labels.get, key="per_type_pick",
                        help="Its per-type F1 (Table 4), sweep figures (Fig. 2, Fig. 4) and Table 5 below.")
    chosen = experiments[pick]
    # one damaged experiment (an F1 that is no number, a seed twice) is said and skipped, never the whole page
    entries = run_guarded(lambda: _summary(json.dumps(chosen.to_dict(), sort_keys=True, default=str)),
                          f"Could not read experiment {labels[pick]}") or []
    if entries:
        show_readout(readout(chosen, entries))
    comparisons = comparison_rows(entries)
    st.markdown("**Against TAPT, no pretraining and, for a selection, the random control**: difference in test F1 "
                "points, its 95% CI, p-value and the Holm-adjusted p (significance reads the adjusted one)",
                help=INTERVAL_HELP)
    if comparisons:
        st.dataframe(readable(comparisons), hide_index=True, key="comparison_table")
    else:
        st.caption("No paired comparison: the experiment has no `tapt` or `none` row, or its runs kept no per-sentence "
                   "TEST predictions (runs made before they were kept: rerun them for intervals).")
    st.markdown("**Per entity type, test F1 (%) mean over seeds** (as Table 4)")
    types = run_guarded(lambda: per_type_table(chosen), f"Could not read experiment {labels[pick]}")
    if types is not None:
        st.dataframe(types, key="per_type_table")


def sweep_section(cells: list[Cell]) -> None:
    """Fig. 2, Fig. 4 and Table 5 of the seed paper for one experiment (frames from core.experiments.sweeps)."""
    axes = sweep_axes(cells)
    lc_size = None
    if len(axes["lc_sizes"]) > 1:
        lc_size = st.selectbox("LC size for Fig. 2 and Table 5", axes["lc_sizes"], index=len(axes["lc_sizes"]) - 1,
                               key="sweep_lc_size", format_func=lambda n: f"{n:,} LC sentences")
    f2 = sc_amount_frame(cells, lc_size)
    strat = f2[f2["kind"] == "strategy"]
    if len(axes["budgets"]) > 1 and not strat.empty:
        fig = px.line(strat, x="budget", y="f1_mean", error_y="ci_plus", error_y_minus="ci_minus", color="series", markers=True,
                      hover_data={"seeds_label": True, "ci_plus": False, "ci_minus": False},
                      labels={"budget": "SC sentences (budget)", "f1_mean": "test F1", "series": "strategy", "seeds_label": "seeds"},
                      title="Fig. 2: test F1 (mean over seeds, bars: 95% CI) against the amount of SC"
                            + (f", LC {int(f2['lc_size'].max()):,}" if f2["lc_size"].notna().any() else ""))
        for _, b in f2[f2["kind"] == "baseline"].iterrows():
            fig.add_hline(y=b["f1_mean"], line_dash="dot", annotation_text=f"{b['row']} {b['f1_mean']:.3f}",
                          annotation_position="bottom right")
        st.plotly_chart(fig, key="sweep_fig2")
    else:
        st.caption("Fig. 2 (F1 against the amount of SC) needs strategies run at two or more SC budgets: "
                   "give several in SC budgets (CLI: --budgets 500,2000).")
    if len(axes["lc_sizes"]) > 1:
        f4 = lc_amount_frame(cells)
        fig = px.line(f4, x="lc_size", y="f1_mean", error_y="ci_plus", error_y_minus="ci_minus", color="series", markers=True,
                      hover_data={"seeds_label": True, "ci_plus": False, "ci_minus": False},
                      labels={"lc_size": "LC sentences", "f1_mean": "test F1", "series": "method", "seeds_label": "seeds"},
                      title="Fig. 4: test F1 (mean over seeds, bars: 95% CI) against the amount of LC")
        st.plotly_chart(fig, key="sweep_fig4")
    else:
        st.caption("Fig. 4 (F1 against the amount of LC) needs two or more LC sizes (CLI: --lc-sizes 0.25,0.5,1.0).")
    st.markdown("**Table 5: MLM corpus, its size, test F1 (%) and MLM wall time**")
    st.dataframe(mlm_time_frame(cells, lc_size), key="sweep_table5",
                 column_config={"sentences": st.column_config.NumberColumn(format="%d"),
                                "MLM time (s)": st.column_config.NumberColumn(format="%.1f")})


if experiments:
    run_guarded(lambda: sweep_section(experiments[pick].cells), "Could not draw the sweep figures")


@st.cache_data(max_entries=4, show_spinner="Pairing each recipe variant with its default (10,000 draws a row)...")
def _variants(experiments_json: str) -> dict:
    from core.experiments.records import ExperimentResult

    made = variant_comparisons([ExperimentResult.from_dict(e) for e in json.loads(experiments_json)])
    return {"rows": made.rows(), "unpaired": made.unpaired, "without_default": made.without_default,
            "without_recipe": made.without_recipe}


st.subheader("Recipe variants")
st.caption("An experiment run with other MLM settings (Runs page: MLM settings; CLI `experiment --mlm KEY=VALUE`) or a "
           "rehearsal share, each pretraining row against the same row of the default recipe's run on the same task "
           "and device: paired over seeds and TEST sentences, Holm-adjusted over every comparison here. `python -m core "
           "compare-recipes` prints the same.")
variants = _variants(json.dumps([e.to_dict() for e in experiments], sort_keys=True, default=str)) if experiments else None
if variants and variants["rows"]:
    st.dataframe(readable(variants["rows"]), hide_index=True, key="variant_table")
else:
    st.info("No recipe variant has run beside its default recipe yet: start an experiment with the same corpora, rows "
            "and seeds and other MLM settings.")
for line in (variants or {}).get("unpaired", []):
    st.caption(f"Not compared: {line}")
for line in (variants or {}).get("without_default", []):
    st.caption(f"No run of its default recipe here to compare with: {line}")
if unknown := (variants or {}).get("without_recipe"):
    st.caption(f"Left out, their recipe unrecorded (run folders from before recipe.json): {', '.join(unknown)}")


st.subheader("Source comparisons")
st.caption("compare-sources (Dai et al. 2019/2020): each source's F1 gain over no pretraining on a target, and whether a "
           "similarity measure predicts it. Several targets are pooled into (source, target) pairs, as `python -m core "
           "compare-pool` does.")
comparisons = run_guarded(lambda: collect_comparisons(ws), "could not read compare-sources results") or []
if not comparisons:
    st.info("No finished compare-sources run yet: `python -m core compare-sources` (or scripts/crossner_compare_sources.py "
            "on CrossNER) pretrains on each source, fine-tunes on the target's LC and lists the gains here.")
else:
    default = default_pool(comparisons)
    picked = st.multiselect("Comparisons to pool (one per target, one recipe)", list(range(len(comparisons))),
                            default=[i for i, c in enumerate(comparisons) if any(c is d for d in default)],
                            format_func=lambda i: comparisons[i].label, key="pool_pick")
    pooled = run_guarded(lambda: pool_comparisons([comparisons[i] for i in picked]), "cannot pool these") if picked else None
    if pooled:
        st.markdown(f"**Does a measure predict the gain?** Pearson r over {pooled['pairs']} (source, target) pairs of "
                    f"{len(pooled['targets'])} target(s), preset {pooled['preset']}",
                    help=POOLED_HELP)
        st.dataframe(readable(pooled_rows(pooled)), hide_index=True, key="pool_measures")
        measure = st.selectbox("Measure on the x axis", list(pooled["measures"]), key="pool_measure")
        points = pd.DataFrame(pooled["points"]).assign(gain_points=lambda d: 100 * d["gain"],
                                                       pair=lambda d: d["in_domain"].map({True: "in-domain", False: "cross-domain"}))
        fig = px.scatter(points, x=measure, y="gain_points", color="target", symbol="pair", hover_name="source",
                         labels={"gain_points": "F1 gain over no pretraining (points)", "pair": "source"})
        st.plotly_chart(fig, key="pool_scatter")
        st.markdown("**Each pair**: test F1 (%), gain over the target's no-pretraining baseline with its paired 95% CI and p")
        st.dataframe(readable(pair_rows(pooled)), hide_index=True, key="pool_pairs")


st.subheader("Lineage")
st.caption("Where a model came from: base model, every MLM phase with its corpora (name + content hash), the selection, "
           "LC/DEV/TEST hashes, seed, preset and wall time — the data `python -m core runs show RUN --json` prints.")
index = [e for e in (run_guarded(lambda: list_runs(ws), "could not read the run index") or [])
         if e.kind in ("mlm", "ner", "selftrain")]
if not index:
    st.info("No finished training run yet: MLM and NER jobs, CLI runs and experiment / compare-sources cells list their "
            "lineage here when they finish.")
else:
    ids = [e.id for e in index]
    described = {e.id: f"{e.id} · {e.kind}" + (f" · test F1 {e.f1:.3f}" if isinstance(e.f1, (int, float)) else "")
                 for e in index}
    if st.session_state.get("lineage_run") not in ids:
        chosen = st.session_state.get("runs_selected")  # the job last opened on the Runs page
        st.session_state["lineage_run"] = chosen if chosen in ids else ids[0]
    run_id = st.selectbox("Training run", ids, key="lineage_run", format_func=described.get)
    entry = run_guarded(lambda: get_run(ws, run_id))
    if entry is not None:
        shown = describe_run(entry)
        c = st.columns([2, 3])
        c[0].dataframe(readable(pd.DataFrame(shown["facts"], columns=["field", "value"])), hide_index=True, key="lineage_facts")
        with c[1]:
            if shown["phases"]:
                st.markdown("**MLM phases** (in order)")
                st.dataframe(readable(shown["phases"]), hide_index=True, key="lineage_phases")
            else:
                st.caption("No MLM phase: trained straight from the base model.")
            if shown["data"]:
                st.markdown("**Labeled data**")
                st.dataframe(readable(shown["data"]), hide_index=True, key="lineage_data")
        with st.expander("JSON (as `runs show --json`)"):
            st.json(entry.to_dict(), expanded=False)

st.subheader("Test-set predictions")
with_preds = {r["id"]: r for r in runs_with_test_predictions(ws)}  # NER jobs, CLI runs, experiment/compare cells
if not with_preds:
    st.info("Train an NER model with a test corpus to see its predictions next to the gold spans here.")
else:
    c = st.columns([3, 1, 1])
    pj = c[0].selectbox("NER run", list(with_preds), key="pred_job",
                        format_func=lambda i: f"{i} · {with_preds[i]['kind']}" + (
                            f" · test F1 {with_preds[i]['f1']:.3f}" if isinstance(with_preds[i]["f1"], (int, float)) else ""))
    only_errors = c[1].checkbox("Only sentences with errors", key="pred_errors")
    limit = c[2].number_input("Show", 5, 500, 25, step=5, key="pred_limit")
    rows = run_guarded(lambda: read_predictions(with_preds[pj]["path"], limit=int(limit), only_errors=only_errors),
                       "Could not read the test predictions") or []
    colors = type_colors({s.type for r in rows for s in [*r["spans"], *(r["gold"] or [])]})
    st.html(legend_html(colors))
    for r in rows:
        st.caption(f"c1 {r['c1']:.3f} · c2 {r['c2']:.3f} · {r['errors']} mismatched spans")
        st.html(CSS + prediction_html(r["tokens"], r["spans"], colors, r["gold"]))
