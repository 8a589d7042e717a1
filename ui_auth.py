"""Sign-in for the app: who is using this browser session, decided before any page or workspace data is drawn.

The rules (which mode, password checks, slow-downs, sessions, roles) live in core.team; this file only draws the
form and keeps the session token in Streamlit's session state and, when the app is served by server.py, in an
HttpOnly cookie (core.team.websession), so a reload or a new tab stays signed in until the session ends.
"""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from core.access import LOCAL, Actor
from core.data.workspace import Workspace
from core.errors import UserError
from core.team import users, websession
from core.team.serving import AuthMode, auth_mode, check_local_request, client_key
from ui import ACTOR_KEY

TOKEN_KEY = "team_session_token"
_WS_KEY = "team_ws_root"
_MSG_KEY = "team_sign_in_message"
_HANDOFF_KEY = "team_cookie_handoff"  # a one-time code the page sends to the cookie route after a sign-in
_CLEAR_KEY = "team_cookie_clear"  # after a sign-out: the page asks the route to clear the cookie


def signed_in(ws: Workspace, app_root: Path) -> Actor | None:
    """The acting user, LOCAL in the single-user mode, or None when the sign-in form must be shown.
    Listening beyond loopback with no accounts, or a request through a proxy to the single-user mode, stops here
    with one line (core.team.serving)."""
    st.session_state[_WS_KEY] = str(ws.root)
    try:
        mode = auth_mode(ws, st.get_option("server.address"), app_root)
        if mode == AuthMode.LOCAL:
            check_local_request(ws.root, *_request())
    except UserError as exc:
        st.error(str(exc))
        st.stop()
    if mode == AuthMode.LOCAL:
        return LOCAL
    if mode == AuthMode.OIDC:
        if not st.user.is_logged_in:
            return None
        try:  # the provider's claims, email_verified among them, are judged in core
            return users.actor_for_oidc(ws, st.user.to_dict())
        except UserError as exc:
            st.session_state[_MSG_KEY] = str(exc)
            return None
    try:
        return users.session_actor(ws, st.session_state.get(TOKEN_KEY))
    except UserError as exc:
        if st.session_state.pop(TOKEN_KEY, None):  # a session that ended (expired, revoked, user disabled)
            st.session_state[_MSG_KEY] = str(exc)
    cookie = _cookie()
    if cookie and not st.session_state.get(_CLEAR_KEY):
        try:  # a reload or a new tab: the browser's cookie names a session that may still be open
            who = users.session_actor(ws, cookie)
        except UserError:
            return None  # ended since: the sign-in form, without a message (nothing happened in this tab)
        st.session_state[TOKEN_KEY] = cookie
        return who
    return None


def _request() -> tuple[dict[str, str], str | None]:
    """The headers and the peer address of the request behind this session (none under AppTest, whose context
    holds mocks: only real strings count)."""
    try:
        headers, address = st.context.headers.to_dict(), st.context.ip_address
    except (AttributeError, RuntimeError):
        return {}, None
    headers = {k: v for k, v in headers.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(headers, dict) else {}
    return headers, address if isinstance(address, str) else None


def _cookie() -> str | None:
    try:
        value = st.context.cookies.get(websession.COOKIE)
    except (AttributeError, RuntimeError):  # no request behind this run (AppTest)
        return None
    return value if isinstance(value, str) and value else None


def keep_session_in_browser() -> None:
    """After a password sign-in the page hands its one-time code to the cookie route, on every run until the route
    has redeemed it (a run cut short by a page switch may never reach the browser); a spent code is refused there.
    Its slot is in the sidebar and drawn on every run: an element that comes and goes above the page's own shifts
    them, and Streamlit redraws shifted elements afresh, closing every expander the user had opened (the Agreement
    page's span editor closed under the first click after a sign-in whose code the route redeemed late)."""
    slot = st.sidebar.empty()  # drawn on every run, filled or not, so nothing after it ever moves
    code = st.session_state.get(_HANDOFF_KEY)
    if not code:
        return
    if websession.pending(code):
        slot.html(websession.cookie_script(code), unsafe_allow_javascript=True)
    else:
        st.session_state.pop(_HANDOFF_KEY, None)


def _client() -> str:
    """Where the sign-in comes from (sign-in is slowed per address after repeated failures): the browser's address,
    which Streamlit's server already read through a trusted proxy's X-Forwarded-For (core.team.serving.client_key)."""
    return client_key(_request()[1])


def _browser() -> str:
    """This browser's Streamlit cookie (websession.BROWSER_COOKIE), which ties a sign-in code to it; "" under AppTest."""
    try:
        value = st.context.cookies.get(websession.BROWSER_COOKIE)
    except Exception:  # no request behind the run (a test): the code is then bound to nothing
        return ""
    return websession.browser_id(value) if isinstance(value, str) else ""


def _submit() -> None:
    ws = Workspace(st.session_state[_WS_KEY])
    try:
        who = users.authenticate(ws, st.session_state.get("signin_name", ""), st.session_state.get("signin_password", ""),
                                 client=_client())
        token = users.open_session(ws, who)
        st.session_state[TOKEN_KEY] = token
        st.session_state[_HANDOFF_KEY] = websession.handoff(token, time.time() + users.SESSION_SECONDS, _browser())
        st.session_state.pop(_MSG_KEY, None)
        st.session_state.pop(_CLEAR_KEY, None)
    except UserError as exc:
        st.session_state[_MSG_KEY] = str(exc)
    st.session_state["signin_password"] = ""


def sign_in_page() -> None:
    st.title("Sign in")
    st.caption("NER pretraining data selection · this server needs an account")
    if msg := st.session_state.get(_MSG_KEY):
        st.error(msg)
    if nobody := users.nobody_can_sign_in(Workspace(st.session_state[_WS_KEY])):
        st.warning(nobody)
    slot = st.empty()  # drawn on every run, like the sign-in handoff's, so the form below never moves
    if st.session_state.get(_CLEAR_KEY) == "pending":  # signed out: the browser drops the (already revoked) cookie
        st.session_state[_CLEAR_KEY] = "sent"
        slot.html(websession.signout_script(), unsafe_allow_javascript=True)
    if _oidc():
        if st.user.is_logged_in:  # the provider vouched for them, but they have no role here
            st.button("Sign out", on_click=st.logout)
        else:
            st.button("Sign in with your organisation's account", type="primary", on_click=st.login)
        return
    with st.form("signin_form"):
        st.text_input("User name", key="signin_name")
        st.text_input("Password", type="password", key="signin_password")
        st.form_submit_button("Sign in", type="primary", on_click=_submit)


def _oidc() -> bool:
    try:
        return auth_mode(Workspace(st.session_state[_WS_KEY]), st.get_option("server.address"),
                         Path(__file__).resolve().parent) == AuthMode.OIDC
    except UserError:
        return False


def _sign_out() -> None:
    """The session ends in the workspace (so the cookie, holding the same token, opens nothing any more), then the
    page asks the server to drop the cookie; until that reload the stale cookie is ignored in this tab."""
    users.close_session(Workspace(st.session_state[_WS_KEY]), st.session_state.pop(TOKEN_KEY, None))
    for key in [k for k in st.session_state if k != _WS_KEY]:
        del st.session_state[key]
    st.session_state[_CLEAR_KEY] = "pending"
    # not no one, which `actor()` reads as LOCAL: a callback run after this one in the same rerun acts as nobody
    st.session_state[ACTOR_KEY] = users.SIGNED_OUT


def sidebar_account(who: Actor) -> None:
    keep_session_in_browser()
    with st.sidebar:
        st.markdown(f"Signed in as **{who.name}** · {who.role.value}")
        if _oidc():
            st.button("Sign out", key="signout", on_click=st.logout)
        else:
            st.button("Sign out", key="signout", on_click=_sign_out)
