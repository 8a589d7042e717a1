"""How the app may serve: single user on loopback, accounts, or OIDC, and the refusal to listen on the network
with no access control at all.

>>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("")
(True, True, True, False, False)
"""

from __future__ import annotations

import ipaddress
import socket
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
