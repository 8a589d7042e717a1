"""The Map's point view: a components.v2 component (assets/atlas.js, assets/atlas.css) that draws every point of
a map with WebGL in the browser. Written for this app because no maintained Streamlit component draws a
million points with lasso selection on WebGL: Embedding Atlas's needs WebGPU (absent in headless Chromium),
Plotly's scattergl sends every point as JSON and returns lasso selections as point lists, and pydeck has no lasso."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

ASSETS = Path(__file__).resolve().parent / "assets"


@st.cache_resource
def _component() -> Any:
    return st.components.v2.component("nerselect_atlas", js=(ASSETS / "atlas.js").read_text("utf-8"),
                                      css=(ASSETS / "atlas.css").read_text("utf-8"), html="<div></div>")


def atlas_view(data: dict[str, Any], key: str, on_change: Callable[[str], None]) -> Any:
    """Mount the view; `on_change(name)` runs when the browser reports a pinned point, a region or a search."""
    return _component()(data=data, key=key, on_pinned_change=lambda: on_change("pinned"),
                        on_region_change=lambda: on_change("region"), on_query_change=lambda: on_change("query"))
