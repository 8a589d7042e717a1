"""Map: the sentences of a corpus set laid out once (UMAP, cosine), coloured by a selection, a score or a field;
pan, zoom, hover, search, box and lasso run in the browser; a region or a search can be saved as a selection or a corpus."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.data.selection_store import list_selections
from core.data.showtext import markdown_literal
from core.review.predictions import list_ner_models, prediction_request
from core.runner import jobs
from core.runner.jobview import model_labels
from core.selection.atlas import DEFAULT_FIT_POINTS, Atlas, find_atlas, list_atlases, load_atlas, map_corpora
from core.selection.layers import (
    PREDICTION_MEASURES,
    colour_layer,
    layer_stamp,
    map_fields,
    predicted_models,
    selection_dc,
    selection_matches,
    view_data,
)
from core.selection.map_region import MapChoice, region_rows
from core.selection.mapview import atlas_neighbours
from core.selection.projection import sample_rows
from core.tables import count
from ui import (
    CURRENT_SELECTION,
    actor,
    corpus_names,
    get_workspace,
    job_status,
    latest_job,
    model_picker,
    predictions_ready,
    run_guarded,
    selection_picker,
    submit_job,
)
from ui_atlas import atlas_view, save_panel

ws = get_workspace()
st.title("Map")
st.caption("The sentences of the chosen corpora laid out once per encoder (UMAP, cosine); a selection, its scores or a "
           "field colour the same map, so switching them redraws at once. Drag to pan, scroll to zoom, hover to read, "
           "click a point for its nearest neighbours; Box or Lasso choose a region, the search box highlights sentences; "
           "a region or a search can be saved as a selection or a corpus.")

names = corpus_names(ws)
if not names:
    st.info("No corpora yet: load a TC and a DC on the Corpora page.")
    st.stop()
saved = list_selections(ws)  # matched to the map by DC content hash, however they named their DC
current = next((m for m in saved if m.key == st.session_state.get(CURRENT_SELECTION)), saved[0] if saved else None)


default = [n for n in map_corpora(ws, selection=current.key if current else None, strict=False) if n in names]
c1, c2 = st.columns([3, 2])
corpora = c1.multiselect("Corpora on the map", names, default=default, key="map_corpora",
                         help="Every sentence of these corpora is on the map. By default: TC and DC of the current selection.")
model = c2.text_input("Encoder", value="default", key="map_model",
                      help="'default', a model folder or a Hugging Face id; cached embeddings are reused.").strip() or "default"
if not corpora:
    st.info("Choose the corpora to map.")
    st.stop()


@st.cache_resource(max_entries=2, show_spinner="Loading the map...")
def _atlas(root: str, key: str) -> Atlas:
    del root
    return load_atlas(ws, key)


def _find() -> Atlas | None:
    found = find_atlas(ws, corpora, model, actor=actor())
    return None if found is None else _atlas(str(ws.root), found.key).named([c["name"] for c in found.corpora])


atlas = run_guarded(_find, "Could not open the map")
job = latest_job("project", "map_job")
if atlas is None:
    if st.button("Compute the map", type="primary", key="map_run",
                 help=f"Embeds what is not embedded yet, fits UMAP on up to {DEFAULT_FIT_POINTS:,} sentences and places "
                      "the rest on the fitted map; once per corpus set and encoder."):
        submit_job("project", {"corpora": corpora, "model": model}, "map_job")
        job = latest_job("project", "map_job")
    if job is not None and (job.active or st.session_state.get("map_job") == job.id):
        job_status(job, cancel_key="map", on_done=lambda j: st.rerun())
    others = [m for m in list_atlases(ws) if m.get("model") == model]
    st.info("No map of these corpora with this encoder yet: **Compute the map** (a background job; it survives a "
            "closed tab). It is computed once: every selection, score and search is then drawn over it."
            + (f" Maps that exist: {'; '.join(' + '.join(c['name'] for c in m['corpora']) for m in others[:4])}." if others else ""))
    st.stop()

# ---------------------------------------------------------------- layer: what colours the points
matching = [m for m in saved if selection_matches(atlas, m)]
fields = run_guarded(lambda: map_fields(ws, atlas), "Could not read the corpora's fields") or []
predicted = run_guarded(lambda: predicted_models(ws, atlas), "Could not list the NER models' predictions") or []
options = ((["selection", "selection score"] if matching else []) + ["corpus"] + [f"field: {f}" for f in fields]
           + ([f"predictions: {m}" for m in PREDICTION_MEASURES] if predicted else []))
l1, l2 = st.columns([2, 3])
colour = l1.selectbox("Colour by", options, key="map_colour",
                      help="selection: TC, selected and filtered DC; selection score: the selection's rank as a percentile "
                           "(100 = ranked first); corpus; a field the corpora carry (e.g. domain); predictions: entities "
                           "an NER model finds per sentence, or its confidence c1.")
sel_key = selection_picker("Selection", matching, key="map_selection", col=l2) if colour.startswith("selection") else None
if colour.startswith("predictions: "):
    named = model_labels(predicted, jobs.list_jobs(ws))
    sel_key = l2.selectbox("NER model", predicted, key="map_pred_model", format_func=lambda m: named.get(m, m),
                           help="Models whose predictions of a corpus on this map are cached (Inspect makes them).")
with st.expander("Predict a corpus on this map with an NER model" if predicted else
                 "Colour by an NER model's predictions: predict a corpus on this map first"):
    ner_models = run_guarded(lambda: list_ner_models(ws), "Could not list the NER models") or []
    if not ner_models:
        st.caption("No fine-tuned NER model yet: train one on Runs (NER training).")
    else:
        p1, p2 = st.columns(2)
        with p1:
            pred_model = model_picker("NER model", "map_pm", ner_models)
        names_on_map = [c["name"] for c in atlas.corpora]
        pred_corpus = p2.selectbox("Corpus", names_on_map, index=len(names_on_map) - 1, key="map_pc",
                                   help="Its predictions are kept and shared with Inspect.")
        req = run_guarded(lambda: prediction_request(ws, pred_model, pred_corpus, actor=actor()), "Cannot predict with this model") \
            if pred_model else None
        if req is not None and predictions_ready(req, "map_pred_job", pred_corpus) and str(req.model) not in predicted:
            st.caption("Predicted: choose predictions in Colour by.")
if not matching and saved:
    l2.caption("No saved selection is over a corpus on this map (or its DC changed since): map a selection's TC and DC to colour by it.")


@st.cache_data(max_entries=8, show_spinner=False)
def _layer(root: str, key: str, colour: str, sel_key: str | None, stamp: str):
    del root, key, stamp  # the cache key: the stamp changes when what the layer reads does (core.selection.layers)
    return colour_layer(ws, atlas, colour, sel_key)


layer = run_guarded(lambda: _layer(str(ws.root), atlas.key, colour, sel_key,
                                   layer_stamp(ws, atlas, sel_key if colour.startswith("predictions: ") else None)),
                    "Could not colour the map")
if layer is None:
    st.stop()

# ---------------------------------------------------------------- region and search (from the browser)
STATE = f"map_state_{atlas.key}"
state: MapChoice = st.session_state.setdefault(STATE, MapChoice())


def _from_browser(name: str) -> None:
    state.take(name, (st.session_state.get("map_view") or {}).get(name), atlas.key)


how = state.active
mask = run_guarded(lambda: how.mask(atlas), "Could not apply the chosen region") if how is not None else None
if how is not None and mask is None:  # said above; dropped, so the page is usable again (and Clear is drawn)
    state.clear()

st.caption(f"{count(len(atlas), 'sentence')} · {atlas.method} · computed in {atlas.seconds:.0f}s · "
           + " · ".join(f"{c['name']}: {int(c['sentences']):,}" for c in atlas.corpora))
atlas_view(view_data(atlas, layer, mask), key="map_view", on_change=_from_browser)

# ---------------------------------------------------------------- nearest neighbours of a clicked point
pinned = state.pinned
if pinned is not None and 0 <= int(pinned) < len(atlas):
    pinned = int(pinned)
    st.subheader("Nearest neighbours")
    k = int(st.columns([1, 5])[0].number_input("Neighbours (k)", min_value=1, max_value=100, value=10, key="map_k"))
    found = run_guarded(lambda: atlas_neighbours(ws, atlas, pinned, k), "Could not read the embeddings")
    texts = atlas.texts()
    (corpus, rows, _), = atlas.locate(np.array([pinned]))
    st.markdown(f"📌 **{markdown_literal(corpus)}** row {int(rows[0]):,} · {markdown_literal(texts[pinned])}")
    if found is not None:
        idx, sims = found
        table = pd.DataFrame({"cosine": np.round(sims, 4), "colour": [layer.legend[c]["label"] if not layer.continuous else
                                                                      "" for c in layer.codes[idx]],
                              "corpus": [atlas.locate(np.array([i]))[0][0] for i in idx], "text": [texts[i] for i in idx]})
        st.caption(f"The {len(idx)} closest sentences on this map by cosine of their embeddings ({atlas.model}).")
        st.dataframe(table, hide_index=True, width="stretch", key="map_neighbours")
    if st.button("Unpin", key="map_unpin"):
        state.pinned = None
        st.rerun()

# ---------------------------------------------------------------- the chosen sentences, and saving them
st.subheader("Chosen sentences")
if mask is None or not mask.any():
    st.caption("Choose Box or Lasso above the map and draw over it, or search: the sentences inside are listed here "
               "and can be saved as a selection or a corpus." + (" Nothing matched." if mask is not None else ""))
    st.stop()
chosen = np.flatnonzero(mask)
per_corpus = {name: len(rows) for name, rows in region_rows(atlas, mask).items()}
what = how.short
s1, s2 = st.columns([2, 3])
s1.metric(f"Sentences ({markdown_literal(what)})", f"{len(chosen):,}")  # a search typed shows as typed
s2.write(pd.DataFrame([per_corpus], index=["sentences"]))
show = 200
picked = chosen[sample_rows(len(chosen), show, st.session_state.get("map_sample_seed", 0))]
texts = atlas.texts()
located = {int(p): (name, int(r)) for name, rows, at in atlas.locate(picked) for p, r in zip(picked[at], rows)}
st.dataframe(pd.DataFrame({"corpus": [located[int(p)][0] for p in picked], "row": [located[int(p)][1] for p in picked],
                           "colour": [layer.legend[c]["label"] if not layer.continuous else "" for c in layer.codes[picked]],
                           "text": [texts[p] for p in picked]}), hide_index=True, width="stretch", key="map_chosen_table")
if len(chosen) > show:
    b1, b2 = st.columns([1, 5])
    if b1.button("Resample", key="map_resample"):
        st.session_state["map_sample_seed"] = st.session_state.get("map_sample_seed", 0) + 1
        st.rerun()
    b2.caption(f"A random sample of {show} of the {len(chosen):,} chosen sentences.")
if st.button("Clear the choice", key="map_clear"):
    state.clear()
    st.rerun()

save_panel(ws, atlas, mask, how, per_corpus, sel_key and next((selection_dc(atlas, m) for m in matching if m.key == sel_key), None))
