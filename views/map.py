"""Map: UMAP of TC, selected and filtered DC sentences; hover to read, box/lasso to list a region."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from core.selection.mapview import (
    draw_order,
    load_point_vectors,
    nearest_neighbours,
    nearest_on_map,
    numeric_columns,
    robust_range,
    search_mask,
)
from core.selection.projection import DEFAULT_MAX_POINTS, list_projections, load_projection, sample_rows
from core.selection.store import list_selections
from ui import get_workspace, job_status, latest_job, run_guarded, selection_picker, submit_job

ws = get_workspace()
st.title("Map")
st.caption("Sentence embeddings of TC, the selected DC sentences and the filtered rest, laid out in 2-D with UMAP (cosine). "
           "Hover a point to read it; draw a box or a lasso to list the sentences inside; click a point for its nearest "
           "neighbours; search to highlight sentences.")
GROUP_COLORS = {"TC": "#d62728", "selected": "#1f77b4", "filtered": "#c7c7c7"}

saved = list_selections(ws)
if not saved:
    st.info("No saved selections yet: run one on the Selection page, then map it here.")
    st.stop()

metas = {m["key"]: m for m in saved}
c1, c2, c3 = st.columns([3, 2, 1])
sel_key = selection_picker("Selection", saved, key="map_selection", col=c1)
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
    if job is not None and job.active:  # redraw the page as soon as the job saves its PCA preview
        @st.fragment(run_every=1.0)
        def _await_preview() -> None:
            if any(p.get("selection") == sel_key for p in list_projections(ws)):
                st.rerun()
        _await_preview()
    st.info("No map for this selection, encoder and cap yet: press **Compute map** (it runs in the background).")
    st.stop()


@st.cache_data(show_spinner="Loading the map...", max_entries=4)
def _points(key: str, root: str, version: float | None = None):
    del root, version  # part of the cache key (version: the PCA preview and the finished UMAP share a key)
    proj = load_projection(ws, key)
    df = proj.points.reset_index(drop=True)
    df["_pid"] = np.arange(len(df))
    df["_hover"] = ["<br>".join(textwrap.wrap(t, 80)[:6]) + f"<br><i>{g}</i>" for t, g in zip(df["text"], df["group"])]
    return df, proj.meta


loaded = run_guarded(lambda: _points(found[-1]["key"], str(ws.root), found[-1].get("created")), "Could not load the map")
if loaded is None:
    st.stop()
df, meta = loaded
if meta.get("preview"):
    st.info("A quick PCA preview: UMAP is still running and the map redraws when it finishes.")
if meta.get("sampled"):
    st.warning(f"Sampled: {meta['note']}. Raise the point cap to see more (slower).")
st.caption(f"{len(df):,} points · {meta.get('backend')} · {meta.get('seconds', 0):.0f}s · "
           + " · ".join(f"{g}: {v['shown']:,}/{v['total']:,}" for g, v in meta.get("groups", {}).items()))

# ---------------------------------------------------------------- view controls (H13: projector-style exploring)
v = st.columns([2, 3, 2, 1.4, 1.6])
numeric = numeric_columns(df)
fields = [c for c in df.columns if c not in {"x", "y", "row", "text", "group", "_pid", "_hover", *numeric}
          and df[c].nunique() <= 40]
color = v[0].selectbox("Colour by", ["group", *numeric, *fields], key="map_color",
                       help="group, a category field, or any score on a continuous scale with a colour bar")
query = v[1].text_input("Search sentences", key="map_search", placeholder="words to highlight on the map")
drag = v[2].segmented_control("Mouse drag", ["pan", "lasso", "box"], default="pan", key="map_drag",
                              help="pan: drag moves, wheel zooms, a click pins a point and lists its nearest neighbours; "
                                   "lasso / box: drag to choose the sentences inside") or "pan"
tc_on_top = v[3].toggle("TC on top", value=True, key="map_tc_top", help="Draw TC over the DC points (else under them)")
robust = v[4].toggle("Robust axes", value=True, key="map_robust",
                     help="Axis ranges from the 0.5-99.5% quantiles, so a few outliers do not shrink the clusters")

order = draw_order(df["group"].tolist(), tc_on_top)
rank = {g: i for i, g in enumerate(order)}
plot_df = df.iloc[np.argsort(df["group"].map(rank).to_numpy(), kind="stable")]  # later rows are drawn on top
matches = search_mask(df["text"].tolist(), query) if query.strip() else None
if color == "group":
    fig = px.scatter(plot_df, x="x", y="y", color="group", custom_data=["_pid", "_hover"], render_mode="webgl",
                     color_discrete_map=GROUP_COLORS, category_orders={"group": order})
elif color in numeric:
    fig = px.scatter(plot_df, x="x", y="y", color=plot_df[color].astype(float), custom_data=["_pid", "_hover"],
                     render_mode="webgl", color_continuous_scale="Viridis", labels={"color": color})
    fig.update_layout(coloraxis_colorbar=dict(title=color, thickness=14))
else:
    fig = px.scatter(plot_df, x="x", y="y", color=plot_df[color].astype(str), custom_data=["_pid", "_hover"],
                     render_mode="webgl", labels={"color": color})
fig.update_traces(marker=dict(size=4, opacity=0.25 if matches is not None else 0.75),
                  hovertemplate="%{customdata[1]}<extra></extra>")
if matches is not None and matches.any():
    hit = df[matches]
    fig.add_trace(go.Scattergl(x=hit["x"], y=hit["y"], mode="markers", name=f"search: {int(matches.sum())} matches",
                               customdata=hit[["_pid", "_hover"]].to_numpy(), hovertemplate="%{customdata[1]}<extra></extra>",
                               marker=dict(size=9, color="rgba(255,215,0,0.9)", line=dict(width=1.5, color="black"))))
PIN = f"map_pinned_{found[-1]['key']}"
_state = st.session_state.get("map_chart") or {}  # the chart's selection, known before it is drawn again
_clicked = {int(p["customdata"][0]) for p in (_state.get("selection") or {}).get("points", []) if p.get("customdata")}
if len(_clicked) == 1 and st.session_state.get("map_last_pick") != (PIN, *_clicked):  # a new click pins that point
    st.session_state[PIN] = next(iter(_clicked))
st.session_state["map_last_pick"] = (PIN, *_clicked) if len(_clicked) == 1 else None
pinned = st.session_state.get(PIN)
if pinned is not None and pinned < len(df):
    p = df.iloc[pinned]
    fig.add_trace(go.Scattergl(x=[p["x"]], y=[p["y"]], mode="markers", name="pinned", hoverinfo="skip",
                               marker=dict(size=16, symbol="x", color="black")))
# plotly selects on click only outside lasso/box mode (Streamlit sets clickmode from the drag mode)
fig.update_layout(height=620, margin=dict(t=10, b=10), dragmode={"pan": "pan", "lasso": "lasso", "box": "select"}[drag],
                  xaxis_title=None, yaxis_title=None, legend=dict(itemsizing="constant"),
                  uirevision=f"{found[-1]['key']}-{robust}-{drag}")
if robust:
    fig.update_xaxes(range=robust_range(df["x"].to_numpy()))
    fig.update_yaxes(range=robust_range(df["y"].to_numpy()))
if matches is not None:
    st.caption(f"**{int(matches.sum()):,} of {len(df):,} sentences match** “{query.strip()}” (highlighted in gold; the rest is dimmed).")
event = st.plotly_chart(fig, on_select="rerun", selection_mode=("points", "box", "lasso"), key="map_chart",
                        config={"scrollZoom": True, "displaylogo": False})

points = event.selection.points if event and event.selection else []
picked = sorted({int(p["customdata"][0]) for p in points if p.get("customdata")})


@st.cache_data(show_spinner=False, max_entries=4)
def _vectors(key: str, root: str):
    del root
    vecs = load_point_vectors(ws, key)
    return None if vecs is None else np.asarray(vecs, dtype=np.float32)


if pinned is not None and pinned < len(df):
    st.subheader("Nearest neighbours")
    me = df.iloc[pinned]
    k = int(st.columns([1, 5])[0].number_input("Neighbours (k)", min_value=1, max_value=100, value=10, key="map_k"))
    vecs = _vectors(found[-1]["key"], str(ws.root))
    if vecs is not None and len(vecs) == len(df):
        idx, sims = nearest_neighbours(vecs, pinned, k)
        how, measure = "cosine similarity of the sentence embeddings", "cosine"
    else:
        idx, sims = nearest_on_map(df["x"].to_numpy(), df["y"].to_numpy(), pinned, k)
        how, measure = "distance on the map (this map was computed before embeddings were kept: recompute it for cosine)", \
            "map distance"
    st.markdown(f"📌 **{me['group']}** · {me['text']}")
    st.caption(f"The {len(idx)} closest points by {how}. Click another point to pin it.")
    near = df.iloc[idx][["group", "score", "text"]].assign(**{measure: np.round(sims, 4)})
    st.dataframe(near[[measure, "group", "score", "text"]], hide_index=True, width="stretch", key="map_neighbours")
    st.button("Unpin", key="map_unpin", on_click=lambda: st.session_state.pop(PIN, None))

chosen = df.iloc[picked] if len(picked) > 1 else df.iloc[[]]
if chosen.empty and matches is not None and matches.any():
    chosen = df[matches]
st.subheader("Chosen sentences")
if chosen.empty:
    st.caption("Draw a box or a lasso on the map to list the sentences inside; click one point for its nearest neighbours.")
    st.stop()
s1, s2, s3 = st.columns([2, 2, 1])
s1.metric("Points chosen" if len(picked) > 1 else "Search matches", f"{len(chosen):,}")
s2.write(chosen["group"].value_counts().rename("points").to_frame().T)
show = int(s3.number_input("Show at most", min_value=10, value=200, step=50, key="map_show_n"))
if len(chosen) > show:
    if st.button("Resample", key="map_resample"):
        st.session_state["map_sample_seed"] = st.session_state.get("map_sample_seed", 0) + 1
    chosen = chosen.iloc[sample_rows(len(chosen), show, st.session_state.get("map_sample_seed", 0))]
    st.caption(f"A random sample of {show} of the chosen points; press Resample for another.")
cols = ["group", "score", "text", *[c for c in df.columns if c not in {"x", "y", "group", "score", "text", "_pid", "_hover"}]]
st.dataframe(chosen[cols], hide_index=True, width="stretch", key="map_chosen_table")
