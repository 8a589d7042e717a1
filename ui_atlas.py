"""The Map's point view: a components.v2 component (assets/atlas.js, assets/atlas.css) that draws every point of
a map with WebGL in the browser. Written for this app because no maintained Streamlit component draws a
million points with lasso selection on WebGL: Embedding Atlas's needs WebGPU (absent in headless Chromium),
Plotly's scattergl sends every point as JSON and returns lasso selections as point lists, and pydeck has no lasso."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from core.data.workspace import Workspace
from core.selection.atlas import Atlas
from core.selection.map_region import Region, save_region_corpus, save_region_selection
from core.tables import count
from ui import CURRENT_SELECTION, actor, run_guarded

ASSETS = Path(__file__).resolve().parent / "assets"


@st.cache_resource
def _component() -> Any:
    return st.components.v2.component("nerselect_atlas", js=(ASSETS / "atlas.js").read_text("utf-8"),
                                      css=(ASSETS / "atlas.css").read_text("utf-8"), html="<div></div>")


def atlas_view(data: dict[str, Any], key: str, on_change: Callable[[str], None]) -> Any:
    """Mount the view; `on_change(name)` runs when the browser reports a pinned point, a region or a search."""
    return _component()(data=data, key=key, on_pinned_change=lambda: on_change("pinned"),
                        on_region_change=lambda: on_change("region"), on_query_change=lambda: on_change("query"))


def save_panel(ws: Workspace, atlas: Atlas, mask: np.ndarray, how: Region, per_corpus: dict[str, int],
               dc_default: str | None) -> None:
    """The Map's chosen sentences saved as a selection of one of its corpora (the current selection's DC first) or as
    a corpus (core.selection.map_region)."""
    with st.expander("Save the chosen sentences", expanded=True):
        targets = list(per_corpus)
        t1, t2 = st.columns(2)
        dc = t1.selectbox("As a selection of", targets, index=targets.index(dc_default) if dc_default in targets else len(targets) - 1,
                          key="map_save_dc", help="A selection chooses sentences of one corpus (its DC); the others are left out.")
        if t1.button("Save as selection", key="map_save_selection"):
            sel = run_guarded(lambda: save_region_selection(ws, atlas, mask, dc, how, actor=actor()), "Could not save the selection")
            if sel is not None:
                st.session_state[CURRENT_SELECTION] = sel.key
                st.success(f"Saved selection {sel.key[:8]}: {count(sel.budget, 'sentence')} of {dc} (strategy map-region); it is listed "
                           "on the Selection page and can be pretrained on from Runs.")
        name = t2.text_input("As a corpus named", value="", key="map_save_name", placeholder="e.g. music-region")
        if t2.button("Save as corpus", key="map_save_corpus", disabled=not name.strip()):
            info = run_guarded(lambda: save_region_corpus(ws, atlas, mask, name.strip(), how, actor=actor()),
                               "Could not save the corpus")
            if info is not None:
                st.success(f"Saved corpus {info.name}: {count(info.sentences, 'sentence')} (on the Corpora page).")
