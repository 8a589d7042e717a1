"""Review widgets shared by Inspect's span editor and the annotator's queue, and Inspect's export panel."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import streamlit as st

from core.data.showtext import markdown_literal
from core.data.workspace import Workspace
from core.review import predictions
from core.review.highlight import token_labels, type_colors
from core.review.store import ReviewStore
from core.tables import count
from ui import actor, run_guarded

KEYED_TYPES = 9  # keys 1-9 pick the first nine types; the rest are clicked


def _choose(key: str, entity: str) -> None:
    st.session_state[key] = entity


class ClickOrder:
    """A span editor's buttons (button key, action, its arguments), drawn with `button`: every button clicked for this
    run acts in the order of `steps` (edits before the save), once.

    Why not one callback per button: clicks that reach the server while a run is in flight are merged into one run
    (`runner.fastReruns` is off, .streamlit/config.toml), and Streamlit then calls their callbacks in the order the
    merge left them, which puts the earlier click last: a type key, Assign and Save pressed on a slow server stored
    the sentence without the span just assigned. Streamlit calls each clicked button's callback once per run, so the
    callback of the first clicked button in `steps` does the work and the others return; no state outlives the run
    (a run cut short by the next click leaves the buttons below the cut with the previous run's callback)."""

    def __init__(self, steps: Sequence[tuple[str, Callable[..., None], tuple]]) -> None:
        self.steps = list(steps)

    def __call__(self, me: str) -> None:
        clicked = [(key, action, args) for key, action, args in self.steps if st.session_state.get(key)]
        if not clicked or clicked[0][0] != me:
            return
        for _, action, args in clicked:
            action(*args)

    def button(self, where, label: str, key: str, **kwargs) -> bool:
        """One of the editor's buttons, in `where` (a column or `st`). A key that is not one of the steps would draw
        a button that does nothing when clicked, so it fails here, on the first draw of the page."""
        if key not in {k for k, _, _ in self.steps}:
            raise ValueError(f"button {key!r} is not one of this editor's steps ({', '.join(k for k, _, _ in self.steps)})")
        return where.button(label, key=key, on_click=self, args=(key,), **kwargs)


def chosen_type(key: str) -> str | None:
    """The type picked in `type_picker(key=...)` for this run: a type button clicked in the same merged run as Assign
    may have its own callback called after Assign's, so its click is read here rather than waited for."""
    for k, entity in enumerate(st.session_state.get(f"{key}_types", [])):
        if st.session_state.get(f"{key}_b{k}"):
            st.session_state[key] = entity
    return st.session_state.get(key)


def type_picker(types: list[str], key: str, colors: dict[str, str] | None = None, container=None) -> str | None:
    """One button per entity type, in the type's colour; keys 1-9 pick the first nine, so an annotator marks
    tokens, presses a digit and assigns without the mouse. The chosen type is `st.session_state[key]`."""
    where = container or st
    chosen = st.session_state.get(key)
    if chosen not in types:
        chosen = st.session_state[key] = None
    colors = colors or type_colors(types)
    st.session_state[f"{key}_types"] = list(types)  # for chosen_type
    box = where.container(horizontal=True, key=f"{key}_box", gap="small")
    for k, entity in enumerate(types):
        box.button(markdown_literal(entity), key=f"{key}_b{k}", on_click=_choose, args=(key, entity),
                   type="primary" if entity == chosen else "secondary",
                   shortcut=str(k + 1) if k < KEYED_TYPES else None,
                   help=f"key {k + 1}" if k < KEYED_TYPES else None)
    css = "".join(f".st-key-{key}_b{k} button {{border-left: 6px solid {html.escape(colors.get(t, '#ccc'))};}}"
                  for k, t in enumerate(types))
    st.html(f"<style>{css}</style>")
    return chosen


def token_pills(tokens: list[str], key: str, container=None) -> None:
    """The token picker of every span editor: options are token positions, labels unique within the sentence
    (`token_labels`), so the first of two equal words is the one marked. The picked positions are
    `st.session_state[key]`."""
    labels = [markdown_literal(label) for label in token_labels(tokens)]  # pills render Markdown: a token shows as itself
    (container or st).pills("Tokens", list(range(len(tokens))), selection_mode="multi", format_func=labels.__getitem__,
                            key=key, label_visibility="collapsed")


def export_panel(ws: Workspace, store: ReviewStore) -> None:
    """Inspect's export of the accepted and corrected sentences: a file, or a workspace corpus to train on."""
    counts = store.counts()
    if counts["accepted"] + counts["corrected"] == 0:
        return
    with st.expander(f"Export the {counts['accepted'] + counts['corrected']} accepted / corrected sentences "
                     "(unreviewed and rejected ones are left out)"):
        c = st.columns(4)
        fmt = c[0].selectbox("Format", ["conll", "jsonl"], key="insp_fmt")
        scheme = c[1].selectbox("Tag scheme", ["bio", "bioes"], key="insp_scheme")
        names = [r["annotator"] if r["annotator"] != "(no name)" else "" for r in store.progress_by_reviewer()]
        who = c[2].multiselect("Annotators", names, key="insp_export_who", placeholder="all annotators",
                               format_func=lambda n: n or "(no name)") if len(names) > 1 else []
        reviewers = who or None
        data = run_guarded(lambda: predictions.export_bytes(store, fmt, scheme, reviewers))
        if data:
            c[3].download_button("Download", data, file_name=f"reviewed.{fmt}", key="insp_download")
        d = st.columns([2, 1, 3])
        name = d[0].text_input("Save as workspace corpus", value="reviewed", key="insp_save_name")
        if d[1].button("Save corpus", key="insp_save"):
            info = run_guarded(lambda: predictions.save_reviewed_corpus(ws, store, name, None, reviewers, actor=actor()), "Could not save")
            if info:
                st.success(f"Saved {count(info.sentences, 'sentence')} as {info.name!r}: add it to LC on the Corpora page or train on it.")
