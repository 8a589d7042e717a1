"""Review widgets shared by Inspect's span editor and the annotator's queue."""

from __future__ import annotations

import html

import streamlit as st

from core.review.highlight import token_labels, type_colors

KEYED_TYPES = 9  # keys 1-9 pick the first nine types; the rest are clicked


def _choose(key: str, entity: str) -> None:
    st.session_state[key] = entity


def type_picker(types: list[str], key: str, colors: dict[str, str] | None = None, container=None) -> str | None:
    """One button per entity type, in the type's colour; keys 1-9 pick the first nine, so an annotator marks
    tokens, presses a digit and assigns without the mouse. The chosen type is `st.session_state[key]`."""
    where = container or st
    chosen = st.session_state.get(key)
    if chosen not in types:
        chosen = st.session_state[key] = None
    colors = colors or type_colors(types)
    box = where.container(horizontal=True, key=f"{key}_box", gap="small")
    for k, entity in enumerate(types):
        box.button(entity, key=f"{key}_b{k}", on_click=_choose, args=(key, entity),
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
    labels = token_labels(tokens)
    (container or st).pills("Tokens", list(range(len(tokens))), selection_mode="multi", format_func=labels.__getitem__,
                            key=key, label_visibility="collapsed")
