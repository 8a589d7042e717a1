"""Map: UMAP of TC, selected and filtered DC sentences; hover to read, box/lasso to list a region."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.express as px
import streamlit as st

from core.projection import DEFAULT_MAX_POINTS, GROUP_ORDER, list_projections, load_projection, sample_rows
from core.select import list_selections, selection_label
from ui import get_workspace, job_status, latest_job, run_guarded, submit_job

ws = get_workspace()
st.title("Map")
st.caption("Sentence embeddings of TC, the selected DC sentences and the filtered rest, laid out in 2-D with UMAP (cosine). "
           "Hover a point to read it; draw a box or a lasso to list the sentences inside.")
GROUP_COLORS = {"TC": "#d62728", "selected": "#1f77b4", "filtered": "#c7c7c7"}

saved = list_selections(ws)
if not saved:
    st.info("No saved selections yet: run one on the Selection page, then map it here.")
    st.stop()

keys = [m["key"] for m in reversed(saved)]
metas = {m["key"]: m for m in saved}
c1, c2, c3 = st.columns([3, 2, 1])
sel_key = c1.selectbox("Selection", keys, format_func=lambda k: selection_label(metas[k]), key="map_selection")
model_default = metas[sel_key].get("model") or "default"
model = c2.text_input("Encoder for the map", value=model_default, key=f"map_model_{sel_key}",
                      help="'default', a model folder or a Hugging Face id; embeddings are reused from the selection when cached.")
cap = int(c3.number_input("Point cap", min_value=100, value=DEFAULT_MAX_POINTS, step=5000, key="map_cap",
                          help="Above this many sentences the map shows a stratified sample."))

if st.button("Compute map", type="primary", key="map_run"):
    submit_job("project", {"selection": sel_key, "model": model or "default", "max_points": cap, "seed": 0}, "map_job")
job = latest_job("project", "map_job")
if job is not None and (job.active or st.session_state.get("map_job") == job.id):
    job_status(job, cancel_key="map")

found = [p for p in list_projections(ws) if p.get("selection") == sel_key and p.get("model") == (model or "default")
         and int(p.get("max_points", 0)) == cap]
if not found:
    st.info("No map for this selection, encoder and cap yet: press **Compute map** (it runs in the background).")
    st.stop()


@st.cache_data(show_spinner="Loading the map...", max_entries=4)
def _points(key: str, root: str):
    del root  # part of the cache key
    proj = load_projection(ws, key)
    df = proj.points.reset_index(drop=True)
    df["_pid"] = np.arange(len(df))
    df["_hover"] = ["<br>".join(textwrap.wrap(t, 80)[:6]) + f"<br><i>{g}</i>" for t, g in zip(df["text"], df["group"])]
    return df, proj.meta


loaded = run_guarded(lambda: _points(found[-1]["key"], str(ws.root)), "Could not load the map")
if loaded is None:
    st.stop()
df, meta = loaded
if meta.get("sampled"):
    st.warning(f"Sampled: {meta['note']}. Raise the point cap to see more (slower).")
st.caption(f"{len(df):,} points · {meta.get('backend')} · {meta.get('seconds', 0):.0f}s · "
           + " · ".join(f"{g}: {v['shown']:,}/{v['total']:,}" for g, v in meta.get("groups", {}).items()))

fields = [c for c in df.columns if c not in {"x", "y", "row", "text", "group", "score", "_pid", "_hover"}
          and df[c].nunique() <= 40]
color = st.selectbox("Colour by", ["group", "score", *fields], key="map_color")
plot_df = df if color != "score" else df.assign(score=df["score"].astype(float))
kwargs = {"color_discrete_map": GROUP_COLORS, "category_orders": {"group": list(GROUP_ORDER)}} if color == "group" else {}
fig = px.scatter(plot_df, x="x", y="y", color=color, custom_data=["_pid", "_hover"], render_mode="webgl", **kwargs)
fig.update_traces(marker=dict(size=4, opacity=0.75), hovertemplate="%{customdata[1]}<extra></extra>")
fig.update_layout(height=620, margin=dict(t=10, b=10), dragmode="lasso", xaxis_title=None, yaxis_title=None,
                  legend=dict(itemsizing="constant"))
event = st.plotly_chart(fig, on_select="rerun", selection_mode=("box", "lasso"), key="map_chart")

points = event.selection.points if event and event.selection else []
chosen = df.iloc[sorted({int(p["customdata"][0]) for p in points if p.get("customdata")})] if points else df.iloc[[]]
st.subheader("Chosen sentences")
if chosen.empty:
    st.caption("Draw a box or a lasso on the map to list the sentences inside.")
    st.stop()
s1, s2, s3 = st.columns([2, 2, 1])
s1.metric("Points chosen", f"{len(chosen):,}")
s2.write(chosen["group"].value_counts().rename("points").to_frame().T)
show = int(s3.number_input("Show at most", min_value=10, value=200, step=50, key="map_show_n"))
if len(chosen) > show:
    if st.button("Resample", key="map_resample"):
        st.session_state["map_sample_seed"] = st.session_state.get("map_sample_seed", 0) + 1
    chosen = chosen.iloc[sample_rows(len(chosen), show, st.session_state.get("map_sample_seed", 0))]
    st.caption(f"A random sample of {show} of the chosen points; press Resample for another.")
cols = ["group", "score", "text", *[c for c in df.columns if c not in {"x", "y", "group", "score", "text", "_pid", "_hover"}]]
st.dataframe(chosen[cols], hide_index=True, width="stretch", key="map_chosen_table")
