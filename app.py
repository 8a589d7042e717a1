"""Streamlit entry point: navigation, sidebar workspace picker, demo on first start.

Run with `streamlit run app.py`. Every page lives in views/ and calls into core/. The folder is
not called pages/ on purpose: Streamlit (1.67) switches to its legacy multipage mode when a
pages/ folder sits beside the entry script, and then a first visit straight to a page URL
(/map, /inspect) runs that page file alone, without this script's sidebar and demo setup.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from core.data.demo import ensure_demo_workspace
from core.data.workspace import Workspace
from core.errors import UserError
from core.runner import jobs
from core.runner.jobview import LIST_POLL_S, running_summary
from ui import WS_KEY

st.set_page_config(page_title="NER pretraining data selection", page_icon="🔎", layout="wide")

ROOT = Path(__file__).resolve().parent
PAGES = [
    st.Page("views/corpora.py", title="Corpora", icon="📚", default=True),
    st.Page("views/similarity.py", title="Similarity", icon="📏"),
    st.Page("views/selection.py", title="Selection", icon="🎯"),
    st.Page("views/map.py", title="Map", icon="🗺️"),
    st.Page("views/inspect.py", title="Inspect", icon="🖍️"),
    st.Page("views/adapt.py", title="Adapt", icon="🧪"),
    RUNS_PAGE := st.Page("views/runs.py", title="Runs", icon="🏃"),
    st.Page("views/results.py", title="Results", icon="📊"),
]


@st.cache_resource(show_spinner="Generating the demo workspace (first start only)...")
def _prepare(root: str) -> str:
    """Create the demo corpora once per workspace folder (a no-op when corpora exist). On the demo's
    first start, also queue its TC/DC embeddings and warm UMAP in the background (a fast first map)."""
    fresh = not Workspace(root).list_corpora()
    ensure_demo_workspace(root)
    try:
        from core.selection.projection import prepare_first_map, start_warm_up

        if fresh:  # a statement, not a conditional expression: Streamlit's magic would print its value
            prepare_first_map(Workspace(root))
        else:
            start_warm_up()
    except (UserError, OSError) as exc:  # a speed-up only: the app works without it
        print(f"first-map preparation skipped: {exc}")
    return root


def sidebar_workspace() -> None:
    default_root = os.environ.get("NERSELECT_WORKSPACE") or str(ROOT / "workspace")
    if WS_KEY not in st.session_state:
        st.session_state[WS_KEY] = default_root
    with st.sidebar:
        st.markdown("### Workspace")
        typed = st.text_input("Folder", value=st.session_state[WS_KEY], key="ws_input",
                              help="Holds corpora, embeddings, selections and runs. A new empty folder gets the demo data.")
        if typed and typed != st.session_state[WS_KEY]:
            st.session_state[WS_KEY] = typed
        try:
            _prepare(st.session_state[WS_KEY])
            ws = Workspace(st.session_state[WS_KEY])
        except (UserError, OSError) as exc:
            st.error(f"Cannot use this workspace: {exc}")
            st.session_state[WS_KEY] = default_root
            _prepare(default_root)
            ws = Workspace(default_root)
        roles = ws.roles()
        st.caption(f"{len(ws.list_corpora())} corpora · target domain: {ws.settings().get('target_domain', '-')}")
        for role, name in roles.items():
            st.caption(f"**{role.value.upper()}** → {name}")
        with st.expander("Compute (Ray)"):
            current = str(ws.settings().get("ray_address") or "")
            addr = st.text_input("Ray address", value=current, key="ray_address", placeholder="empty: this machine, no Ray",
                                 help="Embedding and selection jobs run their passes over DC on this Ray cluster: "
                                      "'local' starts one on this machine's cores, or e.g. ray://head:10001 (see README).")
            if addr.strip() != current:
                ws.update_settings(ray_address=addr.strip() or None)


def sidebar_jobs() -> None:
    """A badge of running and queued jobs on every page, with a link to Runs; redraws itself
    every few seconds while anything is active."""
    ws = Workspace(st.session_state[WS_KEY])
    active = any(j.active for j in jobs.list_jobs(ws))

    @st.fragment(run_every=LIST_POLL_S if active else None)
    def _badge() -> None:
        running, queued, names = running_summary(jobs.list_jobs(ws))
        if not running and not queued:
            return
        st.markdown(f":orange-badge[⏳ {running} running · {queued} queued]")
        for name in names[:3]:
            st.caption(name)
        st.page_link(RUNS_PAGE, label="Open the jobs on Runs", icon="🏃")

    with st.sidebar:
        _badge()


sidebar_workspace()
sidebar_jobs()
st.navigation(PAGES).run()
