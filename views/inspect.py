"""Inspect: predicted entities highlighted, annotator review (accept / reject / correct), export."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import inspect as insp
from core.highlight import CSS, legend_html, prediction_html, type_colors
from core.review import ReviewConflict, ReviewStore
from core.workspace import Role
from ui import get_workspace, load_prediction_rows, model_picker, predictions_ready, run_guarded, source_picker

ws = get_workspace()
PER_PAGE = 10
st.title("Inspect NER predictions")
st.html(CSS)


def decide(set_key: str, index: int, status: str, version: int | None, tokens: list, spans: list, model: str) -> None:
    """Button callback: runs before the rerun, with the version the reviewer saw on screen."""
    try:
        ReviewStore(ws, set_key).save(index, status, tokens, spans, expected_version=version, model=model)
        st.session_state.pop("insp_conflict", None)
        st.session_state.pop("insp_edit", None)
        if st.session_state.get("insp_cursor_index") == index:
            move_cursor(1)
    except ReviewConflict as exc:
        st.session_state["insp_conflict"] = (str(exc), (set_key, index, status, None, tokens, spans, model))


def move_cursor(step: int) -> None:
    st.session_state["insp_cursor"] = st.session_state.get("insp_cursor", 0) + step


def review_tab() -> None:
    c = st.columns([2, 2, 2])
    with c[0]:
        model = model_picker("NER model (finished run)", "insp_model", insp.list_ner_models(ws))
    with c[1]:
        corpus, sel_key = source_picker(ws, "insp", Role.DC)
    status_sel = None
    if corpus and (over := [s for s in insp.list_selections(ws) if s.dc == corpus]):
        with c[2]:
            status_sel = st.selectbox("Selected-vs-filtered status from", [None, *over], key="insp_status_sel",
                                      format_func=lambda s: "(no selection)" if s is None else s.label)
    if not model:
        st.info("Train a NER model on the Runs page (or name a model folder) to inspect its predictions.")
        return
    req = run_guarded(lambda: insp.prediction_request(ws, model, corpus, sel_key))
    if req is None or not predictions_ready(req, "insp_predict_job", "entities"):
        return
    rows = load_prediction_rows(req.key, req)
    store = ReviewStore(ws, req.review_key)
    selected = set(req.indices) if req.indices is not None else set(insp.selected_indices(status_sel)) if status_sel else None
    items = store.items()
    df = insp.inspection_table(rows, items, selected)
    types = sorted({t for ts in df["types"] for t in ts} | {d["type"] for r in rows for d in r.get("gold_spans", [])})
    f = st.columns(6)
    query = f[0].text_input("Search text", key="insp_query")
    want_types = f[1].multiselect("Entity types", types, key="insp_types")
    top = max(int(df["n_entities"].max()), 1)
    lo, hi = f[2].slider("Predicted entities", 0, top, (0, top), key="insp_nents")
    review = f[3].multiselect("Review state", insp.REVIEW_STATES, key="insp_review")
    sel_state = f[4].multiselect("Selection", ["selected", "filtered"], key="insp_selstate") if selected is not None else []
    sort_by = f[5].selectbox("Sort by", list(insp.SORT_KEYS), key="insp_sort",
                             format_func=lambda k: {"entities": "# predicted entities (NER-Selected)"}.get(k, k))
    descending = f[5].toggle("Descending", value=True, key="insp_desc")
    view = insp.filter_table(df, query, want_types, lo, hi, review, sel_state, sort_by, descending)
    counts = store.counts()
    done = counts["accepted"] + counts["rejected"] + counts["corrected"]
    st.progress(done / max(len(df), 1), text=f"{done} of {len(df)} sentences reviewed · {counts['accepted']} accepted · "
                                             f"{counts['rejected']} rejected · {counts['corrected']} corrected · {len(view)} shown")
    colors = type_colors(types)
    st.html(legend_html(colors))
    if conflict := st.session_state.get("insp_conflict"):
        st.warning(f"Conflict: {conflict[0]}")
        k = st.columns(4)
        k[0].button("Overwrite with my decision", key="insp_overwrite", on_click=decide, args=conflict[1])
        k[1].button("Keep the stored one", key="insp_keep", on_click=lambda: st.session_state.pop("insp_conflict", None))
    n_pages = max(1, -(-len(view) // PER_PAGE))
    cursor = min(max(st.session_state.get("insp_cursor", 0), 0), len(view) - 1) if len(view) else 0
    st.session_state["insp_cursor"] = cursor
    page = cursor // PER_PAGE
    nav = st.columns([1, 1, 6])
    nav[0].button("Previous", key="insp_prev", on_click=move_cursor, args=(-1,), shortcut="p")
    nav[1].button("Next", key="insp_next", on_click=move_cursor, args=(1,), shortcut="n")
    nav[2].caption(f"Page {page + 1} of {n_pages} · keys: **a** accept, **x** reject, **n** next, **p** previous (current ▶)")
    for pos in range(page * PER_PAGE, min(len(view), (page + 1) * PER_PAGE)):
        line = view.iloc[pos]
        row, i = rows[int(line["row"])], int(line["index"])
        item = items.get(i)
        reviewed = item is not None and item.status != "pending"
        spans = item.spans if reviewed and item.status != "rejected" else insp.row_spans(row)
        version = item.version if item else 0
        current = pos == cursor
        if current:
            st.session_state["insp_cursor_index"] = i
        with st.container(border=True, key=f"insp_item_{i}"):
            where = f" · {line['selection']}" if line["selection"] else ""
            st.markdown(f"{'▶ ' if current else ''}**#{i}** · {line['n_entities']} predicted · c1 {line['c1']:.3f} · "
                        f"c2 {line['c2']:.3f}{where} · state: **{item.status if reviewed else 'unreviewed'}**")
            gold = insp.row_spans(row, "gold_spans") if "gold_spans" in row else None
            st.html(prediction_html(row["tokens"], spans, colors, gold, label="review" if reviewed else "pred"))
            b = st.columns([1, 1, 1, 5])
            args = (req.review_key, i)
            b[0].button("Accept", key=f"accept_{i}", on_click=decide, shortcut="a" if current else None,
                        args=(*args, "accepted", version, row["tokens"], spans, req.model))
            b[1].button("Reject", key=f"reject_{i}", on_click=decide, shortcut="x" if current else None,
                        args=(*args, "rejected", version, row["tokens"], [], req.model))
            if b[2].button("Correct", key=f"correct_{i}"):
                st.session_state["insp_edit"] = (i, version)
            if st.session_state.get("insp_edit", (None,))[0] == i:
                correction_editor(req, row, spans, types, st.session_state["insp_edit"][1])
    export_panel(store)


def correction_editor(req: insp.PredictionRequest, row: dict, spans: list, types: list, version: int) -> None:
    i = row["index"]
    st.caption("Tokens: " + "  ".join(f"`{j}` {t}" for j, t in enumerate(row["tokens"])) + " — end is exclusive.")
    data = pd.DataFrame([s.to_dict() for s in spans], columns=["start", "end", "type"])
    edited = st.data_editor(data, num_rows="dynamic", key=f"edit_{i}", column_config={
        "start": st.column_config.NumberColumn(min_value=0, step=1), "end": st.column_config.NumberColumn(min_value=1, step=1),
        "type": st.column_config.SelectboxColumn(options=types)})
    if st.button("Save correction", key=f"save_{i}", type="primary"):
        new = run_guarded(lambda: insp.spans_from_rows(edited.to_dict("records"), len(row["tokens"])), "Correction")
        if new is not None:
            decide(req.review_key, i, "corrected", version, row["tokens"], new, req.model)
            st.rerun()


def export_panel(store: ReviewStore) -> None:
    counts = store.counts()
    if counts["accepted"] + counts["corrected"] == 0:
        return
    with st.expander(f"Export {counts['accepted'] + counts['corrected']} accepted / corrected sentences"):
        c = st.columns(4)
        fmt = c[0].selectbox("Format", ["conll", "jsonl"], key="insp_fmt")
        scheme = c[1].selectbox("Tag scheme", ["bio", "bioes"], key="insp_scheme")
        data = run_guarded(lambda: insp.export_bytes(store, fmt, scheme))
        if data:
            c[2].download_button("Download", data, file_name=f"reviewed.{fmt}", key="insp_download")
        name = c[3].text_input("Save as workspace corpus", value="reviewed", key="insp_save_name")
        if c[3].button("Save corpus", key="insp_save"):
            info = run_guarded(lambda: insp.save_reviewed_corpus(ws, store, name, None), "Could not save")
            if info:
                st.success(f"Saved {info.sentences} sentences as {info.name!r}: add it to LC on the Corpora page or train on it.")


review_tab()
