"""How the app may serve: single user on loopback, accounts, or OIDC, and the refusal to listen on the network
with no access control at all, or to serve a request that came through a proxy without it.

>>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("")
(True, True, True, False, False)
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from core.data.workspace import Workspace
from core.errors import UserError
from core.team.users import has_accounts


class AuthMode(str, Enum):
    LOCAL = "local"  # loopback, no accounts: one person, no sign-in (as before teams)
    ACCOUNTS = "accounts"  # users in the workspace's team store sign in with a password
    OIDC = "oidc"  # Streamlit's st.login against an identity provider; roles by e-mail from the team store


def is_loopback(address: str | None) -> bool:
    """Whether a server told to listen on `address` is reachable from this machine only. Judged by what the address
    resolves to, as the server's bind() resolves it, not by its spelling: an empty or missing address makes Streamlit
    listen on every interface; '0', '0.0.0.0', '::', '[::]' are every interface too; '127.1' and 'localhost' resolve
    to loopback. A name that does not resolve, or resolves to any non-loopback address, is not loopback."""
    host = (address or "").strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        return False
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return False
    try:
        return bool(found) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in found)
    except ValueError:
        return False


def oidc_configured(app_root: Path) -> bool:
    """Whether .streamlit/secrets.toml has an [auth] section (what st.login needs)."""
    import tomllib

    path = app_root / ".streamlit" / "secrets.toml"
    if not path.exists():
        return False
    try:
        return "auth" in tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{path}: not valid TOML ({exc})") from None


def auth_mode(ws: Workspace, address: str | None, app_root: Path) -> AuthMode:
    """OIDC when configured, else accounts when the workspace has any, else local, which only loopback may use."""
    if oidc_configured(app_root):
        return AuthMode.OIDC
    if has_accounts(ws):
        return AuthMode.ACCOUNTS
    if is_loopback(address):
        return AuthMode.LOCAL
    where = address or "every interface (no address given)"
    raise UserError(f"refusing to listen on {where} with no access control: add a user first, e.g. "
                    f"`python -m core --workspace {ws.root} users add NAME --role admin` (or configure OIDC, see README)")


FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip", "via", "x-forwarded-proto",
                      "x-forwarded-port", "x-forwarded-server", "x-client-ip", "true-client-ip",
                      "cf-connecting-ip")  # set by a proxy on its way


def check_local_request(workspace_root: str | Path, headers: Mapping[str, str] | None, ip_address: str | None) -> None:
    """Refuse (UserError) a request that the single-user mode, which makes everyone the local admin, must not serve.

    That mode trusts the bind address alone, but a reverse proxy on this machine (the README's nginx:
    `proxy_pass http://127.0.0.1:8501`) connects from loopback on every remote visitor's behalf. So a request is
    refused when it carries a proxy's forwarding header, comes from an address that is not loopback
    (`ip_address`; Streamlit gives None for loopback), or names a Host other than this machine's loopback: the
    README's proxy passes the public host name on (`proxy_set_header Host $host`), and a DNS-rebinding page sends
    its own. No headers at all (no request behind the run: a test) is served.

    >>> check_local_request("/ws", {"Host": "localhost:8501", "Origin": "http://localhost:8501"}, None)
    >>> check_local_request("/ws", {"Host": "127.0.0.1:8501", "Origin": "http://192.0.2.2:18712"}, None)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: this app has no accounts, ... comes from a page of '192.0.2.2:18712': create an admin...
    >>> check_local_request("/ws", {"Host": "127.0.0.1", "X-Forwarded-For": "203.0.113.9"}, None)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: this app has no accounts, ... came through a proxy (X-Forwarded-For): create an admin account...
    """
    lower = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    forwarded = [k for k in FORWARDING_HEADERS if k in lower]
    host = lower.get("host", "").strip()
    if forwarded:
        why = f"came through a proxy ({', '.join(h.title() for h in forwarded)})"
    elif ip_address and not _loopback_ip(ip_address):
        why = f"comes from {ip_address}"
    elif host and not _local_host(host):
        why = f"names the host {host[:100]!r}"
    elif (origin := _origin_host(lower.get("origin", ""))) and not _local_host(origin):
        # a browser names the page it came from on every websocket handshake: a proxy that adds no header and sets
        # Host to 127.0.0.1 (nginx's plain proxy_pass) still carries the remote page's origin
        why = f"comes from a page of {origin[:100]!r}"
    else:
        return
    raise UserError(f"this app has no accounts, so it serves a browser on this machine only, and this request {why}: "
                    f"create an admin account first (`python -m core --workspace {workspace_root} users add NAME --role admin`); "
                    "then everyone signs in")


def _origin_host(origin: str) -> str:
    """'http://203.0.113.9:8080' -> '203.0.113.9:8080'; '' and 'null' (a file or sandboxed page) -> ''."""
    text = origin.strip()
    if not text or text == "null":
        return ""
    return text.split("://", 1)[-1].split("/", 1)[0]


def _loopback_ip(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.strip().strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return False


def _local_host(host: str) -> bool:
    """Whether a Host header names this machine's loopback: localhost, a *.localhost name or a loopback address,
    with or without a port. Judged by spelling, never by resolving (a rebinding name resolves to loopback too)."""
    name = host.lower()
    if name.startswith("["):
        name = name[1:name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    name = name.rstrip(".")
    return name == "localhost" or name.endswith(".localhost") or _loopback_ip(name)


def client_key(peer: str | None) -> str:
    """The address sign-in's slow-down counts a request under. Behind a proxy the peer is already the browser's:
    Streamlit's server, uvicorn, rewrites it from X-Forwarded-For when the request comes from an address in
    FORWARDED_ALLOW_IPS (default 127.0.0.1 and ::1, a proxy on this machine), reading the chain right to left as far
    as those addresses wrote it; a well-kept reading, so none is written here. What is added: Streamlit's None for a
    loopback peer is 127.0.0.1, an IPv4 address written as IPv6 is that IPv4 address, and an IPv6 address counts as its
    /64, the block one household or server gets, so stepping through one's own block gives no fresh free guesses.

    >>> client_key(None), client_key("::ffff:198.51.100.7"), client_key("2001:db8:1:2:aa:bb:cc:dd")
    ('127.0.0.1', '198.51.100.7', '2001:db8:1:2::/64')
    >>> client_key("::1"), client_key("not an address")
    ('::1', 'not an address')
    """
    if not peer:
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(peer.strip().strip("[]").split("%")[0])
    except ValueError:
        return peer.strip()[:200]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        if not address.is_loopback:
            return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)
