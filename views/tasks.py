"""Review tasks: hand a selection's sentences to annotators (with an overlap reviewed twice), follow their progress."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.access import Role
from core.data.selection_store import list_selections
from core.data.showtext import markdown_literal
from core.review.predictions import list_ner_models
from core.tables import count
from core.team import tasks
from core.team.reassign import reassign
from core.team.users import list_users
from ui import actor, corpus_names, get_workspace, run_guarded

st.title("Review tasks")
st.caption("Annotators sign in and see only their own queue; a share of the items goes to two of them, so the "
           "Agreement page can measure how far they agree before their work becomes training data.")
ws, me = get_workspace(), actor()
people = [u for u in list_users(ws) if not u.disabled]
if not people:
    st.info("No accounts yet. Add annotators on the Users page (admin) or with "
            "`python -m core users add NAME --role annotator`; the app then asks everyone to sign in.")

with st.expander("New task", expanded=not tasks.list_tasks(ws, me)):
    with st.form("task_form"):
        name = st.text_input("Name", placeholder="e.g. music DSIR top 200")
        kind = st.radio("Sentences from", ["a saved selection", "a corpus"], horizontal=True, key="task_kind")
        sels = list_selections(ws)
        c = st.columns(2)
        labels = {m.key: m.label for m in sels}
        selection = c[0].selectbox("Selection (its best-ranked sentences)", list(labels), format_func=labels.get,
                                   key="task_sel")
        corpus = c[1].selectbox("Corpus (a seeded sample)", corpus_names(ws), key="task_corpus")
        annotators = st.multiselect("Annotators", [u.name for u in people],
                                    default=[u.name for u in people if u.role == Role.ANNOTATOR], key="task_annotators")
        c = st.columns(4)
        n_items = c[0].number_input("Sentences", min_value=1, max_value=tasks.MAX_ITEMS, value=50, key="task_items")
        # a new seed per task by default: with one seed, a second task over a corpus drew the first's sentences again
        made_so_far = len(tasks.list_tasks(ws, me))  # keyed by it: a kept widget value repeated the last task's seed
        seed = c[3].number_input("Sample seed", min_value=0, value=made_so_far, step=1, key=f"task_seed_{made_so_far}",
                                 help="Which sentences a corpus sample draws (a selection gives its best-ranked ones); "
                                      "CLI --seed")
        overlap = c[1].slider("Reviewed by two annotators", 0.0, 1.0, tasks.DEFAULT_OVERLAP, 0.05, key="task_overlap",
                              help="The share of sentences that goes to a second annotator: agreement is measured on "
                                   "these (with one annotator nobody reviews twice: none)")
        types = c[2].text_input("Entity types", value=", ".join(tasks.default_types(ws)), key="task_types",
                                help="Comma-separated; default: the types of the workspace's LC")
        models = [str(m) for m in list_ner_models(ws)]
        suggest = st.selectbox("Suggestions from an NER model", [None, *models], key="task_suggest",
                               format_func=lambda m: "none: annotators start from an empty sentence" if m is None else m,
                               help="The model's spans are pre-filled in every sentence, drawn apart (dashed) until the "
                                    "annotator accepts, corrects or rejects them; only saved answers count for agreement")
        guidelines = st.text_area("Guidelines for the annotators", key="task_guidelines")
        if st.form_submit_button("Create task", type="primary"):
            made = run_guarded(lambda: tasks.create_task(
                ws, me, name, annotators, selection=selection if kind == "a saved selection" else None,
                corpus=corpus if kind == "a corpus" else None, n_items=int(n_items), seed=int(seed),
                overlap=overlap if len(annotators) > 1 else None, guidelines=guidelines,
                types=[t.strip() for t in types.split(",") if t.strip()], suggest_model=suggest), "Could not create the task")
            if made:
                st.success(f"Task {made.id}: {count(made.items, 'sentence')} for {', '.join(made.annotators)}.")

if said := st.session_state.pop("reassign_said", None):
    st.success(said)
for t in tasks.list_tasks(ws, me):
    with st.container(border=True):
        name = f"\u2068{markdown_literal(t.name)}\u2069"  # isolated (core.data.showtext) and literal
        st.markdown(f"**{name}** · `{t.id}` · {count(t.items, 'sentence')} of {markdown_literal(t.source)} · "
                    f"{t.overlap:.0%} reviewed twice · "
                    f"by {markdown_literal(t.created_by)}")
        rows = tasks.progress(ws, me, t.id)
        st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"task_progress_{t.id}")
        waiting = [r["annotator"] for r in rows if r["left"]]
        if waiting:
            with st.expander("Hand unanswered items to another user" + (" (a disabled annotator has some)" if any(
                    r["account"] for r in rows if r["left"]) else "")):
                with st.form(f"reassign_{t.id}"):
                    c = st.columns(2)
                    giver = c[0].selectbox("From", waiting, key=f"reassign_from_{t.id}")
                    taker = c[1].selectbox("To", [u.name for u in people], key=f"reassign_to_{t.id}")
                    if st.form_submit_button("Hand over"):
                        done = run_guarded(lambda t=t, giver=giver, taker=taker: reassign(ws, me, t.id, giver, taker),
                                           "Could not hand the items over")
                        if done is not None:  # said after the rerun that redraws the progress table above
                            st.session_state["reassign_said"] = (
                                f"{done['moved']} item(s) handed to {markdown_literal(taker)}"
                                + (f"; {done['kept']} kept (already theirs)" if done["kept"] else "") + ".")
                            st.rerun()
