"""Inspect: predicted entities highlighted, annotator review (accept / reject / correct by
selecting tokens and picking a type), undo, progress per annotator, export of reviewed sentences."""

from __future__ import annotations

import streamlit as st

from core.access import LOCAL
from core.data import selection_store
from core.data.showtext import markdown_literal
from core.data.tags import Span
from core.data.workspace import CorpusRole
from core.errors import UserError
from core.review import predictions
from core.review.highlight import legend_html, page_css, prediction_html, sentence_html, type_colors
from core.review.store import ReviewConflict, ReviewStore
from ui import (
    actor,
    get_workspace,
    keep_in_url,
    load_prediction_rows,
    model_picker,
    predictions_ready,
    restore_from_url,
    run_guarded,
    show_error,
    source_picker,
)
from ui_review import ClickOrder, chosen_type, export_panel, token_pills, type_picker

ws = get_workspace()
PER_PAGE = 10
BADGE = {"accepted": "green", "rejected": "red", "corrected": "blue", "unreviewed": "gray"}
st.title("Inspect NER predictions")
st.html(page_css())


def reviewer() -> str:
    return (st.session_state.get("insp_reviewer") or "").strip()


def decide(set_key: str, index: int, status: str, version: int | None, tokens: list, spans: list | None, model: str) -> None:
    """Button callback: runs before the rerun, with the version the reviewer saw on screen. `spans` None: the span
    editor's draft as it is now (not as the page was drawn: a Save right after Assign must keep the new span)."""
    if spans is None:
        spans = st.session_state.get(f"insp_draft_{index}", [])
    try:
        item = ReviewStore(ws, set_key).save(index, status, tokens, spans, expected_version=version, model=model,
                                             reviewer=reviewer(), actor=actor())
        st.session_state.pop("insp_conflict", None)
        st.session_state.pop("insp_edit", None)
        undo_stack().append((set_key, index, item.replaced_version, item.version, status))
        if st.session_state.get("insp_cursor_index") == index:
            move_cursor(1)
    except ReviewConflict as exc:
        st.session_state["insp_conflict"] = (str(exc), (set_key, index, status, None, tokens, spans, model))


def undo_stack() -> list[tuple[str, int, int, int, str]]:
    """(review set, sentence, version before, version after, status) of this session's decisions."""
    return st.session_state.setdefault("insp_undo", [])


def undo_last() -> None:
    set_key, index, before, after, _ = undo_stack().pop()
    try:
        ReviewStore(ws, set_key).undo(index, expected_version=after, to_version=before, reviewer=reviewer(), actor=actor())
        st.session_state.pop("insp_undo_error", None)
    except UserError as exc:
        st.session_state["insp_undo_error"] = f"Could not undo #{index}: {exc}"


def move_cursor(step: int) -> None:
    st.session_state["insp_cursor"] = st.session_state.get("insp_cursor", 0) + step


REMEMBERED = ("insp_model", "insp_source", "insp_sel", "insp_corpus", "insp_reviewer")


def review_tab() -> None:
    models = predictions.list_ner_models(ws)
    restore_from_url({"insp_model": [str(m) for m in models], "insp_source": ["corpus", "saved selection"],
                      "insp_sel": [m.key for m in selection_store.list_selections(ws, in_workspace=True)],
                      "insp_corpus": [i.name for i in ws.list_corpora()], "insp_reviewer": None})
    c = st.columns([2, 2, 2, 1])
    with c[0]:
        model = model_picker("NER model (finished run)", "insp_model", models)
    with c[1]:
        corpus, sel_key = source_picker(ws, "insp", CorpusRole.DC)
    status_sel = None
    if corpus and (labels := {m.key: m.label for m in selection_store.list_selections(ws, dc=corpus)}):
        over = list(labels)
        with c[2]:
            status_sel = st.selectbox("Selected-vs-filtered status from", [None, *over], key="insp_status_sel",
                                      format_func=lambda k: "(no selection)" if k is None else labels[k])
    if actor() == LOCAL:  # signed in, the reviewer is the account (core.review.store ignores a typed name then)
        c[3].text_input("Annotator", key="insp_reviewer", placeholder="your name",
                        help="Saved with each decision: progress is counted per annotator, exports can keep one annotator's work.")
    else:
        c[3].caption(f"Reviewing as **{actor().name}**")
    keep_in_url(*REMEMBERED)
    if not model:
        st.info("Train a NER model on the Runs page (or name a model folder) to inspect its predictions.")
        return
    req = run_guarded(lambda: predictions.prediction_request(ws, model, corpus, sel_key, actor=actor()))
    if req is None or not predictions_ready(req, "insp_predict_job", "entities"):
        return
    rows = load_prediction_rows(req.key, req)
    store = ReviewStore(ws, req.review_key)
    selected = (set(req.indices) if req.indices is not None
                else set(selection_store.selected_indices(ws, status_sel)) if status_sel else None)
    items = store.items()
    df = predictions.inspection_table(rows, items, selected)
    has_gold = any("gold_spans" in r for r in rows[:1])
    types = predictions.view_types(req.model, rows, items)  # the model's label set: colours stay, the editor offers all
    f = st.columns(6)
    query = f[0].text_input("Search text", key="insp_query")
    want_types = f[1].multiselect("Entity types", types, key="insp_types")
    top = max(int(df["n_entities"].max()), 1)
    lo, hi = f[2].slider("Predicted entities", 0, top, (0, top), key="insp_nents")
    review = f[3].multiselect("Review state", predictions.REVIEW_STATES, key="insp_review")
    sel_state = f[4].multiselect("Selection", ["selected", "filtered"], key="insp_selstate") if selected is not None else []
    sort_by = f[5].selectbox("Sort by", list(predictions.SORT_KEYS), key="insp_sort",
                             format_func=lambda k: {"entities": "# predicted entities (NER-Selected)"}.get(k, k))
    descending = f[5].toggle("Descending", value=True, key="insp_desc")
    view = predictions.filter_table(df, query, want_types, lo, hi, review, sel_state, sort_by, descending)
    progress_panel(store, predictions.review_counts(df), len(view))
    colors = type_colors(types)
    st.html(legend_html(colors, gold=has_gold))
    if conflict := st.session_state.get("insp_conflict"):
        st.warning(f"Conflict: {conflict[0]}")
        k = st.columns(4)
        k[0].button("Overwrite with my decision", key="insp_overwrite", on_click=decide, args=conflict[1])
        k[1].button("Keep the stored one", key="insp_keep", on_click=lambda: st.session_state.pop("insp_conflict", None))
    if err := st.session_state.pop("insp_undo_error", None):
        st.warning(err)
    n_pages = max(1, -(-len(view) // PER_PAGE))
    cursor = min(max(st.session_state.get("insp_cursor", 0), 0), len(view) - 1) if len(view) else 0
    st.session_state["insp_cursor"] = cursor
    page = cursor // PER_PAGE
    nav = st.columns([1, 1, 2, 4])
    nav[0].button("Previous", key="insp_prev", on_click=move_cursor, args=(-1,), shortcut="p")
    nav[1].button("Next", key="insp_next", on_click=move_cursor, args=(1,), shortcut="n")
    stack = undo_stack()
    nav[2].button(f"Undo #{stack[-1][1]} {stack[-1][4]}" if stack else "Undo", key="insp_undo_btn", on_click=undo_last,
                  disabled=not stack, shortcut="u", help="Take back your last decision (key u)")
    nav[3].caption(f"Page {page + 1} of {n_pages} · keys: **a** accept, **x** reject, **n** next, **p** previous, "
                   "**u** undo (current ▶)")
    for pos in range(page * PER_PAGE, min(len(view), (page + 1) * PER_PAGE)):
        line = view.iloc[pos]
        row, i = rows[int(line["row"])], int(line["index"])
        item = items.get(i)
        reviewed = item is not None and item.status != "pending"
        state = item.status if reviewed else "unreviewed"
        spans = item.spans if reviewed and item.status != "rejected" else predictions.row_spans(row)
        version = item.version if item else 0
        current = pos == cursor
        if current:
            st.session_state["insp_cursor_index"] = i
        with st.container(border=True, key=f"insp_card_{state}_{i}"):
            where = f" · {markdown_literal(line['selection'])}" if line["selection"] else ""
            who = f" by {markdown_literal(item.reviewer)}" if reviewed and item.reviewer else ""  # typed by anyone
            st.markdown(f"{'▶ ' if current else ''}**#{i}** · {line['n_entities']} predicted · c1 {line['c1']:.3f} · "
                        f"c2 {line['c2']:.3f}{where} · state: :{BADGE[state]}-badge[{state}]{who}")
            gold = predictions.row_spans(row, "gold_spans") if "gold_spans" in row else None
            st.html(prediction_html(row["tokens"], spans, colors, gold, label="review" if reviewed else "pred"))
            b = st.columns([1, 1, 1, 5])
            args = (req.review_key, i)
            b[0].button("Accept", key=f"accept_{i}", on_click=decide, shortcut="a" if current else None,
                        args=(*args, "accepted", version, row["tokens"], spans, req.model))
            b[1].button("Reject", key=f"reject_{i}", on_click=decide, shortcut="x" if current else None,
                        args=(*args, "rejected", version, row["tokens"], [], req.model))
            b[2].button("Correct", key=f"correct_{i}", on_click=start_edit, args=(i, version, spans))
            if st.session_state.get("insp_edit", (None,))[0] == i:
                span_editor(req, row, types, colors, st.session_state["insp_edit"][1])
    export_panel(ws, store)


def progress_panel(store: ReviewStore, counts: dict[str, int], shown: int) -> None:
    done, total = counts["reviewed"], counts["total"]
    st.progress(done / max(total, 1), text=f"{done} of {total} sentences reviewed · {counts['accepted']} accepted · "
                                           f"{counts['rejected']} rejected · {counts['corrected']} corrected · {shown} shown")
    if by := store.progress_by_reviewer():
        with st.expander(f"Progress per annotator ({len(by)})", expanded=len(by) > 1):
            st.dataframe(by, hide_index=True, key="insp_by_reviewer",
                         column_order=["annotator", "reviewed", "accepted", "rejected", "corrected"])


# --------------------------------------------------------------------------- span editor: select tokens, pick a type


def start_edit(index: int, version: int, spans: list[Span]) -> None:
    st.session_state["insp_edit"] = (index, version)
    st.session_state[f"insp_draft_{index}"] = list(spans)
    st.session_state.pop("insp_edit_error", None)


def _grid_key(index: int) -> str:
    return f"insp_tokens_{index}_{st.session_state.get(f'insp_grid_gen_{index}', 0)}"


def edit_draft(index: int, n_tokens: int, remove: bool) -> None:
    """Callback of Assign / Remove: apply the token selection to the draft, then clear the selection."""
    picked = st.session_state.get(_grid_key(index)) or []
    typed = (st.session_state.get(f"insp_newtype_{index}") or "").strip()
    chosen = typed or chosen_type(f"insp_type_{index}")
    try:
        draft = st.session_state.get(f"insp_draft_{index}", [])
        st.session_state[f"insp_draft_{index}"] = predictions.edit_spans(draft, picked, chosen, n_tokens, remove=remove)
        st.session_state[f"insp_grid_gen_{index}"] = st.session_state.get(f"insp_grid_gen_{index}", 0) + 1
        st.session_state.pop("insp_edit_error", None)
    except UserError as exc:
        st.session_state["insp_edit_error"] = str(exc)


def span_editor(req: predictions.PredictionRequest, row: dict, types: list, colors: dict, version: int) -> None:
    i, tokens = row["index"], row["tokens"]
    draft = st.session_state.get(f"insp_draft_{i}", [])
    with st.container(border=True, key=f"insp_editor_{i}"):
        st.markdown("**Correct the spans**: select tokens, pick a type (keys 1-9), press **Assign type**; **Remove** "
                    "clears spans on the selected tokens. Save when the sentence is right.")
        st.html(sentence_html(tokens, draft, type_colors(list(colors) + [s.type for s in draft])))
        token_pills(tokens, _grid_key(i))
        c = st.columns([4, 2])
        if types:
            type_picker(types, f"insp_type_{i}", colors, container=c[0])
        else:
            c[0].caption("No entity types in this corpus yet: type a new one.")
        c[1].text_input("or a new type", key=f"insp_newtype_{i}", placeholder="e.g. band")
        if err := st.session_state.get("insp_edit_error"):
            show_error(err)
        b = st.columns([1, 1, 1.5, 1, 2])
        buttons = ClickOrder([(f"insp_assign_{i}", edit_draft, (i, len(tokens), False)),
                             (f"insp_remove_{i}", edit_draft, (i, len(tokens), True)),
                             (f"save_{i}", decide, (req.review_key, i, "corrected", version, tokens, None, req.model)),
                             (f"insp_cancel_{i}", st.session_state.pop, ("insp_edit", None))])
        buttons.button(b[0], "Assign type", f"insp_assign_{i}", type="primary")
        buttons.button(b[1], "Remove", f"insp_remove_{i}")
        buttons.button(b[2], "Save correction", f"save_{i}")
        buttons.button(b[3], "Cancel", f"insp_cancel_{i}")


review_tab()
