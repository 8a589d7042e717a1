"""Agreement between annotators on a task, adjudication of their disagreements side by side, and the way back:
the settled sentences exported as CoNLL or stored as a corpus (e.g. more LC) that names the task and its agreement."""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from core.data.showtext import markdown_literal
from core.errors import UserError
from core.review.highlight import legend_html, page_css, sentence_html, type_colors
from core.review.predictions import edit_spans
from core.tables import count
from core.team import adjudicate, tasks
from core.team.agreement import task_agreement
from ui import actor, get_workspace, run_guarded, show_error
from ui_review import ClickOrder, token_pills


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


st.title("Agreement")
st.html(page_css())
ws, me = get_workspace(), actor()
all_tasks = tasks.list_tasks(ws, me)
if not all_tasks:
    st.info("No review tasks yet: create one on the Review tasks page.")
    st.stop()
task = st.selectbox("Task", all_tasks, format_func=lambda t: t.label, key="agr_task")
result = run_guarded(lambda: task_agreement(ws, me, task.id))
if result is None:
    st.stop()
if not result["sentences"]:
    st.info("No sentence has been answered by two annotators yet: agreement appears once overlapping items are done.")
else:
    c = st.columns(5)
    c[0].metric("Sentences reviewed twice", result["sentences"])
    c[1].metric("Entity F1, exact", _num(result["f1_exact"]), help="Same boundaries and type (1.0 when neither marked an entity)")
    c[2].metric("Entity F1, partial", _num(result["f1_partial"]), help="Same boundaries count 1, overlapping spans half, type ignored")
    c[3].metric("Token kappa", _num(result["kappa_token"]), help="Cohen's kappa over each token's entity type (O for none); "
                "blind to boundaries between adjacent spans of one type")
    c[4].metric("BIO kappa", _num(result.get("kappa_bio")), help="Cohen's kappa over each token's BIO tag: also sees where "
                "adjacent spans of one type split")
    t = st.columns(2)
    t[0].markdown("**Per entity type**")
    t[0].dataframe(pd.DataFrame([{"type": k, **v} for k, v in result["per_type"].items()]), hide_index=True, key="agr_types")
    t[1].markdown("**Per annotator** (exact F1 against the others on shared sentences)")
    t[1].dataframe(pd.DataFrame([{"annotator": k, **v} for k, v in result["per_annotator"].items()]), hide_index=True,
                   key="agr_people")
    st.markdown("**Type confusion** (rows: first annotator of a pair, columns: second; — = not marked)")
    st.dataframe(pd.DataFrame(result["confusion"]).T.fillna(0).astype(int), key="agr_confusion")

st.subheader("Disagreements")
open_items = adjudicate.disagreements(ws, me, task.id)
colors = type_colors(task.types + [s.type for i in open_items for a in i.answers.values() for s in a])
undecided = sum(i.adjudicated is None for i in open_items)
st.caption(f"{count(len(open_items), 'sentence')} where annotators differ, {undecided} still to decide (shown first). "
           "Pick one answer, or edit it, for the final set.")
if open_items:
    st.html(legend_html(colors, gold=False))


def slot(index: int, version: int) -> str:
    """A sentence's editor keys: its index, the task and the decision's version, so a draft made on one task (or before
    another researcher's decision) is never the draft of another: tasks over one corpus share sentence indices."""
    return f"{index}_{task.id}_{version}"


def decide(index: int, spans: list | None, source: str, version: int) -> None:
    """`version`: the decision's version as the page was drawn, so another researcher's later one is not overwritten."""
    draft = f"agr_draft_{slot(index, version)}"
    if spans is None:  # the edited draft as it is now, not as the page was drawn
        spans = st.session_state.get(draft, [])
    try:
        adjudicate.adjudicate(ws, me, task.id, index, spans, source, expected_version=version)
        st.session_state.pop("agr_error", None)
        st.session_state.pop(draft, None)  # the editor starts again from the decision just taken
    except UserError as exc:
        st.session_state["agr_error"] = str(exc)


def edit(index: int, version: int, n: int, remove: bool) -> None:
    key, tok = f"agr_draft_{slot(index, version)}", f"agr_tok_{slot(index, version)}"
    try:
        st.session_state[key] = edit_spans(st.session_state[key], st.session_state.get(tok) or [],
                                           st.session_state.get(f"agr_type_{slot(index, version)}"), n, remove=remove)
        st.session_state[tok] = []
    except UserError as exc:
        st.session_state["agr_error"] = str(exc)


if err := st.session_state.get("agr_error"):
    show_error(err)
for item in open_items[:20]:
    at = slot(item.index, item.version)
    with st.container(border=True, key=f"agr_item_{item.index}_{task.id}"):
        done = f" · decided ({markdown_literal(item.adjudicated_by)})" if item.adjudicated is not None else ""
        st.markdown(f"**Sentence {item.index}**{done}")
        for who, spans in item.answers.items():
            c = st.columns([5, 1])
            c[0].html(f"<b>{html.escape(who)}</b>" + sentence_html(item.tokens, spans, colors))
            c[1].button(f"Pick {markdown_literal(who)}", key=f"agr_pick_{at}_{who}", on_click=decide,
                         args=(item.index, spans, who, item.version))
        if item.adjudicated is not None:
            st.html("<b>final</b>" + sentence_html(item.tokens, item.adjudicated, colors))
        # Keyed, its open state is kept by the server: a redraw of the page cannot close it in the middle of an edit.
        with st.expander("Edit the final spans", key=f"agr_edit_{item.index}_{task.id}", on_change="rerun"):
            key = f"agr_draft_{at}"
            # a decision of no entity ([]) is the draft as it is, not a cue to start from an annotator's answer
            st.session_state.setdefault(key, list(item.adjudicated if item.adjudicated is not None
                                                  else next(iter(item.answers.values()))))
            st.html(sentence_html(item.tokens, st.session_state[key], colors))
            token_pills(item.tokens, f"agr_tok_{at}")
            st.pills("Entity type", list(colors), selection_mode="single", key=f"agr_type_{at}", format_func=markdown_literal)
            b, n = st.columns(3), len(item.tokens)
            buttons = ClickOrder([(f"agr_assign_{at}", edit, (item.index, item.version, n, False)),
                                 (f"agr_remove_{at}", edit, (item.index, item.version, n, True)),
                                 (f"agr_save_{at}", decide, (item.index, None, "edited", item.version))])
            buttons.button(b[0], "Assign type", f"agr_assign_{at}")
            buttons.button(b[1], "Remove", f"agr_remove_{at}")
            buttons.button(b[2], "Save as final", f"agr_save_{at}", type="primary")
if len(open_items) > 20:
    st.caption(f"The first 20 of {len(open_items)} are shown, those still to decide first: each one decided makes "
               "room for the next.")

st.subheader("Use the settled sentences")
corpus, report = adjudicate.settled_corpus(ws, me, task.id)
st.caption(f"{report['sentences']} settled (every annotator answered and agreed, or adjudicated) · "
           f"{adjudicate.left_out(report).replace(', ', ' · ')}: only settled sentences are exported.")
if len(corpus):
    default = adjudicate.task_scheme(ws, task.id).value
    scheme = st.radio("Tag scheme", ["bio", "bioes"], index=["bio", "bioes"].index(default) if default in ("bio", "bioes") else 0,
                      horizontal=True, key=f"agr_scheme_{task.id}", format_func=str.upper,
                      help="Of the download and the stored corpus; by default the task's corpus's.")
    data = run_guarded(lambda: adjudicate.export_task(ws, me, task.id, "conll", scheme)[0])
    if data:
        st.download_button("Download CoNLL", data, file_name=f"task-{task.id}.conll", key="agr_download")
    with st.form("agr_import"):
        c = st.columns(3)
        name = c[0].text_input("Corpus name", value=f"task-{task.id}")
        role = c[1].selectbox("Role", [None, "lc", "dev", "test"], format_func=lambda r: "(none)" if r is None else r.upper())
        overwrite = c[2].checkbox("Replace an earlier import of this name", key="agr_overwrite",
                                  help="More sentences settled since the corpus was stored: store them all again.")
        if st.form_submit_button("Store as a corpus"):
            got = run_guarded(lambda: adjudicate.import_task(ws, me, task.id, name, role, scheme, overwrite),
                              "Could not store")
            if got:
                st.success(f"Stored {count(got[0].sentences, 'sentence')} as {got[0].name!r}: {got[0].source}")
                for warning in got[0].warnings:  # e.g. the LC role moved here from another corpus
                    st.warning(markdown_literal(warning))
