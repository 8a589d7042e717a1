"""Streamlit entry point: navigation, sidebar workspace picker, demo on first start.

Run with `streamlit run app.py`. Every page lives in views/ and calls into core/. The folder is
not called pages/ on purpose: Streamlit (1.67) switches to its legacy multipage mode when a
pages/ folder sits beside the entry script, and then a first visit straight to a page URL
(/map, /inspect) runs that page file alone, without this script's sidebar and demo setup.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from core.access import LOCAL, Actor, Role
from core.data.demo import ensure_demo_workspace
from core.data.workspace import Workspace, default_root, folder_state
from core.errors import UserError
from core.runner import jobs
from core.runner.jobview import LIST_POLL_S, active_ids, ended_since, running_summary
from ui import ACTOR_KEY, WS_KEY, actor, run_guarded, show_error, still_signed_in
from ui_auth import sidebar_account, sign_in_page, signed_in

st.set_page_config(page_title="NER pretraining data selection", page_icon="🔎", layout="wide")

ROOT = Path(__file__).resolve().parent
RESEARCH_PAGES = [
    CORPORA_PAGE := st.Page("views/corpora.py", title="Corpora", icon="📚", url_path="corpora"),
    st.Page("views/similarity.py", title="Similarity", icon="📏"),
    st.Page("views/selection.py", title="Selection", icon="🎯"),
    st.Page("views/map.py", title="Map", icon="🗺️"),
    st.Page("views/inspect.py", title="Inspect", icon="🖍️"),
    st.Page("views/adapt.py", title="Adapt", icon="🧪"),
    RUNS_PAGE := st.Page("views/runs.py", title="Runs", icon="🏃"),
    st.Page("views/results.py", title="Results", icon="📊"),
    st.Page("views/tasks.py", title="Review tasks", icon="👥"),
    st.Page("views/agreement.py", title="Agreement", icon="🤝"),
]
ADMIN_PAGES = [st.Page("views/users.py", title="Users", icon="🔑")]
ANNOTATOR_PAGES = [st.Page("views/queue.py", title="My review queue", icon="✍️", default=True)]
# the same queue at the same URL for staff that a task names among its annotators (team mode: the local user has none)
STAFF_QUEUE = st.Page("views/queue.py", title="My review queue", icon="✍️", url_path="queue")


@st.cache_resource(show_spinner="Generating the demo workspace (first start only)...")
def _prepare(root: str, demo: bool = True) -> str:
    """Create the demo corpora once per workspace folder (a no-op when corpora exist, or `demo` is False). On the
    demo's first start, also queue its TC/DC embeddings and warm UMAP in the background (a fast first map)."""
    fresh = not Workspace(root).list_corpora()
    if not demo:
        return root
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


def _create(pending: str, demo: bool) -> None:
    try:
        Workspace(pending)  # creates the folders, or says why it cannot
    except UserError as exc:
        st.session_state["ws_create_error"] = str(exc)
        return
    st.session_state[WS_KEY] = pending
    if demo:
        st.session_state["ws_with_demo"] = (*st.session_state.get("ws_with_demo", ()), pending)
    st.session_state.pop("ws_pending", None)


def _keep_current() -> None:
    st.session_state.pop("ws_pending", None)
    st.session_state["ws_input"] = st.session_state[WS_KEY]


def ask_to_create(pending: str) -> None:
    what = "does not exist" if folder_state(pending) == "missing" else "is not a workspace"
    st.warning(f"`{pending}` {what}. Create a workspace there?")
    if err := st.session_state.pop("ws_create_error", None):
        show_error(f"Cannot use this folder: {err}")
    c = st.columns(2)
    c[0].button("Create, empty", key="ws_create_empty", on_click=_create, args=(pending, False))
    c[1].button("Create with the demo", key="ws_create_demo", on_click=_create, args=(pending, True))
    st.button("Keep the current workspace", key="ws_keep", on_click=_keep_current)


def sidebar_workspace(team: bool) -> None:
    """The workspace picker; with accounts or OIDC the workspace is the server's and no folder can be typed."""
    home = str(default_root(ROOT / "workspace"))
    if WS_KEY not in st.session_state or team:
        st.session_state[WS_KEY] = home
    with st.sidebar:
        st.markdown("### Workspace")
        typed = None if team else st.text_input(
            "Folder", value=st.session_state[WS_KEY], key="ws_input",
            help="Holds corpora, embeddings, selections and runs. A folder that is not a workspace yet is created "
                 "only when you say so.")
        if typed and typed.strip() != st.session_state[WS_KEY]:
            if folder_state(typed.strip()) == "workspace":
                st.session_state[WS_KEY] = typed.strip()
            else:  # a typo must not create a folder tree, a demo and its embedding jobs: ask first
                st.session_state["ws_pending"] = typed.strip()
        if pending := st.session_state.get("ws_pending"):
            ask_to_create(pending)
        root = st.session_state[WS_KEY]
        try:
            _prepare(root, demo=root == home or root in st.session_state.get("ws_with_demo", ()))
            ws = Workspace(st.session_state[WS_KEY])
        except (UserError, OSError) as exc:
            show_error(f"Cannot use this workspace: {exc}")
            st.session_state[WS_KEY] = home
            _prepare(home)
            ws = Workspace(home)
        roles = ws.roles()
        st.caption(f"{len(ws.list_corpora())} corpora · target domain: {ws.settings().target_domain or '-'}")
        for role, name in roles.items():
            st.caption(f"**{role.value.upper()}** → {name}")
        if actor().role != Role.ADMIN:
            return
        with st.expander("Compute (Ray)"):
            current = str(ws.settings().ray_address or "")
            addr = st.text_input("Ray address", value=current, key="ray_address", placeholder="empty: this machine, no Ray",
                                 help="Embedding and selection jobs run their passes over DC on this Ray cluster: "
                                      "'local' starts one on this machine's cores, or e.g. ray://head:10001 (see README).")
            if addr.strip() != current:
                run_guarded(lambda: ws.update_settings(actor=actor(), ray_address=addr.strip() or None))


def sidebar_jobs() -> None:
    """A badge of running and queued jobs on every page, with a link to Runs; redraws itself
    every few seconds while anything is active."""
    ws = Workspace(st.session_state[WS_KEY])
    drawn_active = active_ids(jobs.list_jobs(ws))

    @st.fragment(run_every=LIST_POLL_S if drawn_active else None)
    def _badge() -> None:
        still_signed_in()
        listed = jobs.list_jobs(ws)
        if ended_since(drawn_active, listed):  # an import or a run ended: the corpus count and pages change too
            st.rerun(scope="app")
        running, queued, names = running_summary(listed)
        if not running and not queued:
            return
        st.markdown(f":orange-badge[⏳ {running} running · {queued} queued]")
        for name in names[:3]:
            st.caption(name)
        st.page_link(RUNS_PAGE, label="Open the jobs on Runs", icon="🏃")

    with st.sidebar:
        _badge()


def _open_corpora() -> None:
    st.switch_page(CORPORA_PAGE, query_params=st.query_params.to_dict())  # a shared link's choices travel along


# "/" opens Corpora at its own URL: a default page is served at "/" only, so a bookmark or link to /corpora found no
# page; Corpora is an ordinary page and the default one only moves there.
HOME = st.Page(_open_corpora, title="Corpora", url_path="home", default=True, visibility="hidden")


def pages_for(who: Actor) -> list:
    """Pages are built per role: a page not in the list cannot be opened, not even by its URL."""
    if who.role == Role.ANNOTATOR:
        return ANNOTATOR_PAGES + _under_every_url(not_for_this_role, "Not for your role")
    return [HOME, *RESEARCH_PAGES] + ([STAFF_QUEUE] if who != LOCAL else []) + \
        (ADMIN_PAGES if who.role == Role.ADMIN else [])


def _under_every_url(page_fn, title: str, skip: tuple[str, ...] = ()) -> list:
    """`page_fn` as the page of every research and admin URL: a bookmark opens it (no "page not found" dialog, which
    would cover the sign-in form) and, once signed in with a role that has the page, the same URL shows it."""
    paths = [p.url_path for p in RESEARCH_PAGES + ADMIN_PAGES if p.url_path and p.url_path not in skip]
    return [st.Page(page_fn, title=title, url_path=path, visibility="hidden") for path in paths]


def not_for_this_role() -> None:
    st.warning(f"This page needs the researcher role; {actor()} has the review queue only.")
    st.page_link(ANNOTATOR_PAGES[0], label="Open my review queue", icon="✍️")


who = signed_in(Workspace(default_root(ROOT / "workspace")), ROOT)
if who is None:  # signed out: the sign-in form is the only page, whatever the URL
    st.navigation([st.Page(sign_in_page, title="Sign in", icon="🔑", default=True),
                   *_under_every_url(sign_in_page, "Sign in")], position="hidden").run()
    st.stop()
st.session_state[ACTOR_KEY] = who
team = who != LOCAL
# The pages are registered before anything links to one: the sidebar's link to Runs named a page of the previous
# run's navigation (the sign-in form's, right after signing in) and Streamlit refused it with an empty page.
page = st.navigation(pages_for(who), position="hidden" if who.role == Role.ANNOTATOR else "sidebar")
if who.role != Role.ANNOTATOR:
    sidebar_workspace(team)
    sidebar_jobs()
else:
    st.session_state[WS_KEY] = str(default_root(ROOT / "workspace"))
if team:
    sidebar_account(who)
page.run()
