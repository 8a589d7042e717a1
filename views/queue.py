"""A review queue: an annotator's tasks only (a researcher's too, when a task names them), one sentence at a time,
spans marked by selecting tokens. Who reviews is the signed-in account (core.team.tasks checks the item is in their
queue)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from core.access import Role
from core.errors import UserError
from core.review.highlight import legend_html, page_css, sentence_html, type_colors
from core.review.predictions import edit_spans
from core.team import tasks
from ui import actor, get_workspace, show_error
from ui_review import ClickOrder, chosen_type, token_pills, type_picker

st.title("My review queue")
st.html(page_css())
ws, me = get_workspace(), actor()
mine = tasks.assigned_tasks(ws, me)
if not mine:
    st.info("No review task is assigned to you yet. A researcher creates one on the Review tasks page"
            + (" (naming you among its annotators)." if me.role != Role.ANNOTATOR else "."))
    st.stop()
task = st.selectbox("Task", mine, format_func=lambda t: t.label, key="q_task")
items = tasks.queue(ws, me, task.id)
if not items:
    st.info("This task has no sentences for you.")
    st.stop()
if task.guidelines:
    with st.expander("Guidelines", expanded=False):
        st.markdown(task.guidelines)  # Markdown on purpose: written by the task's researcher (staff) for formatting
answered = sum(1 for i in items if i.status)
st.progress(answered / len(items), text=f"{answered} of {len(items)} sentences answered")

pos_key = f"q_pos_{task.id}"
if pos_key not in st.session_state:
    st.session_state[pos_key] = next((p for p, i in enumerate(items) if not i.status), 0)
pos = min(st.session_state[pos_key], len(items) - 1)
item = items[pos]
draft_key = f"q_draft_{task.id}_{item.index}_{item.version}"
pending_key = f"q_pending_{draft_key}"  # suggestions shown but not yet accepted, rejected or changed
if draft_key not in st.session_state:
    answered = item.status == "done"  # a skipped item comes back with its suggestions, not as "no entity"
    st.session_state[draft_key] = list(item.spans if answered else item.suggested)
    st.session_state[pending_key] = [] if answered else list(item.suggested)
draft = st.session_state[draft_key]


def go(step: int | None = None) -> None:
    st.session_state.pop("q_error", None)  # an error was about the sentence left behind
    if step is None:  # the next unanswered one after this
        nxt = [p for p, i in enumerate(items) if not i.status and p != pos]
        st.session_state[pos_key] = next((p for p in nxt if p > pos), nxt[0] if nxt else pos)
    else:
        st.session_state[pos_key] = max(0, min(len(items) - 1, pos + step))


def edit(remove: bool) -> None:
    picked = st.session_state.get(f"q_tokens_{draft_key}") or []
    chosen = chosen_type("q_type")
    try:
        st.session_state[draft_key] = edit_spans(st.session_state.get(draft_key, []), picked, chosen, len(item.tokens),
                                                 remove=remove, fill=st.session_state.get("q_range", True))
        st.session_state[pending_key] = [s for s in st.session_state.get(pending_key, []) if s in st.session_state[draft_key]]
        st.session_state[f"q_tokens_{draft_key}"] = []
        st.session_state.pop("q_error", None)
    except UserError as exc:
        st.session_state["q_error"] = str(exc)


def settle_suggestions(accept: bool) -> None:
    """Accept every suggestion still shown as the annotator's own spans, or take them all out of the answer."""
    pending = st.session_state.get(pending_key, [])
    if not accept:
        st.session_state[draft_key] = [s for s in st.session_state.get(draft_key, []) if s not in pending]
    st.session_state[pending_key] = []


def save(status: str) -> None:
    # the draft as it is now, not as it was when this run drew the page: a "Save" clicked after the rerun of
    # "Assign type" began would otherwise store the sentence without the span just assigned
    spans = st.session_state.get(draft_key, []) if status == "done" else []
    try:
        tasks.save_annotation(ws, me, task.id, item.index, spans, status, item.version)
        st.session_state.pop("q_error", None)
        go(None)
    except UserError as exc:
        st.session_state["q_error"] = str(exc)


state = {"done": "answered", "skipped": "skipped", None: "not answered yet"}[item.status]
st.markdown(f"**Sentence {pos + 1} of {len(items)}** · {state}" + (" · also reviewed by another annotator" if item.annotators > 1 else ""))
types = task.types or sorted({s.type for s in draft})
colors = type_colors(types + [s.type for s in draft])
pending = st.session_state.get(pending_key, [])
# Back/Next before Save: a Save merged with them still stores the sentence drawn and ends on the next unanswered one
buttons = ClickOrder([("q_accept", settle_suggestions, (True,)), ("q_reject", settle_suggestions, (False,)),
                     ("q_assign", edit, (False,)), ("q_remove", edit, (True,)), ("q_prev", go, (-1,)),
                     ("q_next", go, (1,)), ("q_save", save, ("done",)), ("q_skip", save, ("skipped",))])
with st.container(border=True, key="q_card"):
    st.html(sentence_html(item.tokens, draft, colors, marks=dict.fromkeys(pending, "suggested")))
    st.html(legend_html(colors, gold=False, suggested=bool(pending)))
    if pending:
        s = st.columns([2, 1.2, 1.2])
        s[0].caption(f"{len(pending)} span(s) suggested by {Path(task.suggested_by).name or 'a model'} (dashed): accept, correct "
                     "or reject them; what is shown when you save is your answer.")
        buttons.button(s[1], "Accept suggestions", "q_accept")
        buttons.button(s[2], "Reject suggestions", "q_reject")
    token_pills(item.tokens, f"q_tokens_{draft_key}")
    st.toggle("Range: first to last picked token", value=True, key="q_range",
              help="On: click a span's first and last token (as a shift-click or a drag marks a range), then its type. "
                   "Off: each run of adjacent picked tokens becomes its own span.")
    if types:
        type_picker(types, "q_type", colors)
    else:
        st.caption("This task names no entity types: ask its researcher.")
    if err := st.session_state.get("q_error"):
        show_error(err)
    b = st.columns([1.2, 1, 1.5, 1, 1, 1])
    buttons.button(b[0], "Assign type", "q_assign", disabled=not types)
    buttons.button(b[1], "Remove", "q_remove")
    buttons.button(b[2], "Save and next", "q_save", type="primary",
                  help="Saves the spans shown (none: the sentence has no entity)")
    buttons.button(b[3], "Skip", "q_skip", help="Unsure or not a sentence: leave it out")
    buttons.button(b[4], "◀ Back", "q_prev", disabled=pos == 0)
    buttons.button(b[5], "Next ▶", "q_next", disabled=pos == len(items) - 1)
