"""A signed-in browser keeps its session across a reload and in a new tab: an HttpOnly cookie set by the server.

Streamlit keeps a password sign-in in its per-tab session state, which a reload throws away, and it has no API that
sets a cookie. The app is therefore served as a `st.App` (server.py) with two small routes of its own:

  POST /_nerselect/session   {"handoff": CODE}: exchanges a one-time code for the session cookie (HttpOnly,
                             SameSite=Strict, Path=/, Secure over https, Max-Age = what is left of the session)
  POST /_nerselect/signout   clears the cookie

The session itself is the server-side one of core.team.users (a random token, stored hashed, with an expiry; it
ends at sign-out, at a password change and when the user is disabled), so the cookie holds nothing a client could
forge or extend, and revoking it needs no cookie at all. The page never sees the token: after a sign-in it gets a
one-time code (valid HANDOFF_SECONDS, used once) that a script on the page sends to the route; an injected script
that read the page could only replay a spent code. Every run of the app reads the cookie back from the request
that opened the page's websocket (`st.context.cookies`).
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

COOKIE = "nerselect_session"
SESSION_PATH = "/_nerselect/session"
SIGNOUT_PATH = "/_nerselect/signout"
HANDOFF_SECONDS = 120.0

_handoffs: dict[str, tuple[str, float, float, str]] = {}  # code -> (token, session expiry, code expiry, browser); one process
BROWSER_COOKIE = "_streamlit_xsrf"  # set by Streamlit once per browser: what ties a code to the browser that signed in


def browser_id(cookie: str | None) -> str:
    """The browser's token inside its Streamlit cookie: the cookie's text changes (a new mask at each health check of
    every tab), the token under it does not, so a code is compared on the token ("" when there is none)."""
    if not cookie:
        return ""
    # Read here, not with Streamlit's own decoder: core stays importable without the UI. Version 2 is
    # "2|mask|masked|timestamp", the token each masked byte XOR the mask's (repeated); anything else is taken as it is.
    parts = cookie.strip("\"'").split("|")
    if len(parts) != 4 or parts[0] != "2":
        return cookie
    try:
        mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
    except ValueError:
        return cookie
    if not mask:
        return cookie
    return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)).hex()
_lock = threading.Lock()


def handoff(token: str, expires: float, browser: str = "") -> str:
    """A one-time code that the browser exchanges for the cookie of this session (`expires`: the session's end);
    `browser`: the signing-in browser's BROWSER_COOKIE, which the exchange must show too (a code read off the page by
    someone else opened the session from any client)."""
    code = secrets.token_urlsafe(24)
    now = time.time()
    with _lock:
        for old in [c for c, entry in _handoffs.items() if entry[2] < now]:
            del _handoffs[old]
        _handoffs[code] = (token, expires, now + HANDOFF_SECONDS, browser)
    return code


def redeem(code: str, browser: str = "") -> tuple[str, float] | None:
    """(token, session expiry) for a code not yet used and not expired, asked for by the browser it was made for; the
    code is spent once it is redeemed or expired, never by another browser's attempt (the rightful one still may)."""
    with _lock:
        entry = _handoffs.get(str(code or ""))
        if entry is None or (entry[3] and entry[3] != browser):
            return None
        _handoffs.pop(str(code or ""), None)
    if entry[2] < time.time():
        return None
    return entry[0], entry[1]


def pending(code: str) -> bool:
    """Whether `code` is still waiting for the browser: the page sends it again on every run until it is redeemed,
    because a run that switches pages at once (the home page moves to Corpora) can replace the script before the
    browser ran it."""
    with _lock:
        entry = _handoffs.get(str(code or ""))
    return entry is not None and entry[2] >= time.time()


def cookie_script(code: str) -> str:
    """The script the page runs once after a sign-in: the code goes to the route, which answers with the cookie."""
    import json

    return (f"<script>fetch({json.dumps(SESSION_PATH)}, {{method: 'POST', credentials: 'same-origin', "
            f"headers: {{'Content-Type': 'application/json'}}, body: JSON.stringify({{handoff: {json.dumps(code)}}})}})"
            "</script>")


def signout_script() -> str:
    import json

    return f"<script>fetch({json.dumps(SIGNOUT_PATH)}, {{method: 'POST', credentials: 'same-origin'}})</script>"


def routes() -> list[Any]:
    """The Starlette routes server.py hands to `st.App`."""
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def _secure(request: Request) -> bool:
        return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"

    def _cross_site(request: Request) -> bool:
        """A request another site's page made (a form POSTed there signed a browser into someone else's account, or
        out): the app's own fetch is same-origin, and a browser says so (Sec-Fetch-Site, Origin)."""
        site = request.headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            return True
        origin = request.headers.get("origin")
        return origin is not None and origin.split("://", 1)[-1] != request.headers.get("host", "")

    async def session(request: Request) -> Response:
        # the page's fetch sends JSON; a cross-site form can send text/plain only (no preflight), parsed as JSON too
        if _cross_site(request) or not request.headers.get("content-type", "").startswith("application/json"):
            return Response("a sign-in is handed over by the app's own page only", status_code=403)
        try:
            body = await request.json()
        except ValueError:
            body = {}
        found = redeem(body.get("handoff", "") if isinstance(body, dict) else "",
                       browser_id(request.cookies.get(BROWSER_COOKIE)))
        if found is None:
            return Response("unknown or spent sign-in code", status_code=403)
        token, expires = found
        response = Response(status_code=204)
        response.set_cookie(COOKIE, token, max_age=max(1, int(expires - time.time())), path="/", httponly=True,
                            samesite="strict", secure=_secure(request))
        return response

    async def signout(request: Request) -> Response:
        if _cross_site(request):
            return Response("a sign-out comes from the app's own page only", status_code=403)
        response = Response(status_code=204)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=_secure(request))
        return response

    return [Route(SESSION_PATH, session, methods=["POST"]), Route(SIGNOUT_PATH, signout, methods=["POST"])]
