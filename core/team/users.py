"""Accounts: users with a role, argon2 password hashes (argon2-cffi; never hand-rolled), sign-in slowed down after
repeated failures, and server-side sessions.

Names are Unicode (NFC; letters of any script, digits, '.', '_', '-') and compared without case: `ANN` is `ann`.
Repeated failures slow sign-in down instead of locking an account: after FREE_FAILURES wrong attempts for one name
(existing or not), or CLIENT_FREE_FAILURES from one address, the next attempt waits BASE_DELAY seconds, doubling up
to MAX_DELAY;
an attempt made while it waits is refused unchecked. Every refusal reads the same, so no one learns which names
exist, and no one can lock another person out for long. A right password resets both counters.

A session token is random (secrets), handed to the browser once and stored here only as its SHA-256, so a
copied database cannot be replayed as a session; an unknown (forged), expired or revoked token, or one of a
user disabled since, gets "sign in again". Users who sign in through OIDC (`st.login`) are matched by e-mail
and have no password here.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import unicodedata
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from core.access import LOCAL, Actor, Role, require
from core.data.annotation_db import connect, transaction
from core.data.workspace import Workspace
from core.errors import UserError
from core.team.db import audit

FREE_FAILURES = 5  # wrong attempts for one name before its sign-in slows down ...
CLIENT_FREE_FAILURES = 20  # ... and from one address, which many people may share (a NAT, a proxy, this machine)
BASE_DELAY = 2.0  # seconds to wait after the first slowed failure, doubling with each further one ...
MAX_DELAY = 300.0  # ... up to this
SESSION_SECONDS = 12 * 3600
MIN_PASSWORD = 8
MAX_NAME = 64
_HASHER = PasswordHasher()
REFUSED = ("wrong user name or password (after repeated failures, sign-in for a name or from one place waits up to "
           f"{int(MAX_DELAY // 60)} minutes: try again later)")


class SignInError(UserError):
    """Wrong name or password, a locked or disabled account, or a session to renew."""


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    email: str | None
    disabled: bool
    failed: int
    locked_until: float

    @property
    def locked(self) -> bool:
        """Sign-in for this name is waiting out repeated failures (no lock: see the module's docstring)."""
        return self.locked_until > time.time()

    def actor(self) -> Actor:
        return Actor(self.name, self.role)


def _user(row, throttle: dict[str, tuple[int, float]] | None = None) -> User:
    failures, until = _waiting((throttle or {}).get(name_key(row["name"])))
    return User(row["name"], Role(row["role"]), row["email"], bool(row["disabled"]), failures, until)


def name_key(name: str) -> str:
    """How names are compared: NFC, case-folded ('ANN', 'ann' and 'Ann' are one name)."""
    return unicodedata.normalize("NFC", (name or "").strip()).casefold()


def check_name(name: str) -> str:
    """The name as stored (NFC). Letters of any script, combining marks, digits, '.', '_', '-'; a letter or digit
    first; no invisible characters (a name must read as what it is).

    >>> check_name("zoe\u0308"), check_name("דנה")
    ('zoë', 'דנה')
    """
    text = unicodedata.normalize("NFC", (name or "").strip())
    allowed = all(unicodedata.category(c)[0] in "LMN" or c in "._-" for c in text)
    if not text or len(text) > MAX_NAME or not allowed or unicodedata.category(text[0])[0] not in "LN":
        raise UserError(f"user name {name!r}: use 1-{MAX_NAME} letters (any script), digits, '.', '_' or '-', starting "
                        "with a letter or digit")
    return text


def check_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD:
        raise UserError(f"password too short: at least {MIN_PASSWORD} characters")
    return password


def _throttle(con) -> dict[str, tuple[int, float]]:
    return {r["key"].removeprefix("name:"): (r["failures"], r["last"])
            for r in con.execute("SELECT * FROM throttle WHERE key LIKE 'name:%'").fetchall()}


def list_users(ws: Workspace) -> list[User]:
    con = connect(ws)
    try:
        waiting = _throttle(con)
        return [_user(r, waiting) for r in con.execute("SELECT * FROM users ORDER BY name").fetchall()]
    finally:
        con.close()


def _find(con, name: str):
    """The user row whose name equals `name` without case (NFC), or None."""
    key = name_key(name)
    return next((r for r in con.execute("SELECT * FROM users").fetchall() if name_key(r["name"]) == key), None)


def has_accounts(ws: Workspace) -> bool:
    """Whether sign-in is on: any enabled user exists."""
    return any(not u.disabled for u in list_users(ws))


def get_user(ws: Workspace, name: str) -> User:
    con = connect(ws)
    try:
        row = _find(con, name)
        waiting = _throttle(con)
    finally:
        con.close()
    if row is None:
        raise UserError(f"no user {name!r} in {ws.root}: `python -m core users list` shows who exists")
    return _user(row, waiting)


def add_user(ws: Workspace, name: str, role: Role | str, password: str | None = None, email: str | None = None,
             actor: Actor = LOCAL) -> User:
    """A new account. `password` may be None only for an OIDC user (then `email` is required)."""
    require(actor, "manage users")
    name = check_name(name)
    role = Role.parse(role)
    if password is None and not email:
        raise UserError(f"user {name!r}: give a password, or an e-mail for sign-in through OIDC")
    pw_hash = _HASHER.hash(check_password(password)) if password is not None else None
    with transaction(ws) as con:
        if (same := _find(con, name)) is not None:
            raise UserError(f"user {name!r} exists already" + (f" as {same['name']!r} (names are compared without case)"
                                                                if same["name"] != name else "")
                            + ": `users set-role` or `users set-password` change it")
        if email and con.execute("SELECT 1 FROM users WHERE lower(email) = lower(?)", (email,)).fetchone():
            raise UserError(f"e-mail {email!r} belongs to another user")
        con.execute("INSERT INTO users (name, role, pw_hash, email, created) VALUES (?, ?, ?, ?, ?)",
                    (name, role.value, pw_hash, email or None, time.time()))
        audit(con, actor, "user added", name, role=role.value, email=email or "")
    return get_user(ws, name)


def _change(ws: Workspace, actor: Actor, name: str, what: str, sql: str, args: tuple, **detail) -> User:
    require(actor, "manage users")
    name = get_user(ws, name).name  # a clear message for an unknown name; the name as stored
    with transaction(ws) as con:
        con.execute(sql, (*args, name))
        if what in ("user disabled", "password changed"):  # their open sessions end now
            con.execute("DELETE FROM sessions WHERE name = ?", (name,))
        audit(con, actor, what, name, **detail)
    return get_user(ws, name)


def set_role(ws: Workspace, name: str, role: Role | str, actor: Actor = LOCAL) -> User:
    role = Role.parse(role)
    return _change(ws, actor, name, "role changed", "UPDATE users SET role = ? WHERE name = ?", (role.value,), role=role.value)


def set_disabled(ws: Workspace, name: str, disabled: bool = True, actor: Actor = LOCAL) -> User:
    return _change(ws, actor, name, "user disabled" if disabled else "user enabled",
                   "UPDATE users SET disabled = ? WHERE name = ?", (int(disabled),))


def set_password(ws: Workspace, name: str, password: str, actor: Actor = LOCAL) -> User:
    pw_hash = _HASHER.hash(check_password(password))
    _clear(ws, name)
    return _change(ws, actor, name, "password changed", "UPDATE users SET pw_hash = ?, failed = 0, locked_until = 0 WHERE name = ?",
                   (pw_hash,))


def unlock(ws: Workspace, name: str, actor: Actor = LOCAL) -> User:
    """Lift the slow-down of a name at once (an admin who knows the person asked)."""
    _clear(ws, name)
    return _change(ws, actor, name, "user unlocked", "UPDATE users SET failed = 0, locked_until = 0 WHERE name = ?", ())


def _clear(ws: Workspace, name: str) -> None:
    with transaction(ws) as con:
        con.execute("DELETE FROM throttle WHERE key = ?", (f"name:{name_key(name)}",))


def delay_after(failures: int, free: int = FREE_FAILURES) -> float:
    """Seconds an attempt must wait after `failures` wrong ones in a row (`free` of them cost nothing).

    >>> [delay_after(n) for n in (4, 5, 6, 7, 20)]
    [0.0, 2.0, 4.0, 8.0, 300.0]
    """
    if failures < free:
        return 0.0
    return min(MAX_DELAY, BASE_DELAY * 2 ** (failures - free))


def _waiting(entry: tuple[int, float] | None, free: int = FREE_FAILURES) -> tuple[int, float]:
    """(failures, time until which the next attempt waits) of a throttle entry."""
    if not entry:
        return 0, 0.0
    failures, last = entry
    return failures, last + delay_after(failures, free)


def authenticate(ws: Workspace, name: str, password: str, client: str = "local") -> Actor:
    """The actor for a right name and password. Every refusal reads REFUSED, whether the name exists, the password
    was wrong, or sign-in for this name or from this `client` (an address) waits out repeated failures; a
    disabled account says so only to someone who gave its password."""
    keys = (f"name:{name_key(name)}", f"client:{client}")
    refusal: SignInError | None = None  # raised after the transaction commits: failures must be recorded
    now = time.time()
    with transaction(ws) as con:
        entries = {k: (r["failures"], r["last"]) for k in keys
                   if (r := con.execute("SELECT * FROM throttle WHERE key = ?", (k,)).fetchone())}
        row = _find(con, name)
        who = row["name"] if row else (name or "?")
        if _waiting(entries.get(keys[0]))[1] > now or _waiting(entries.get(keys[1]), CLIENT_FREE_FAILURES)[1] > now:
            audit(con, who, "sign-in refused", who, reason="waiting after repeated failures", client=client)
            refusal = SignInError(REFUSED)
        elif row is None or not _password_matches(row["pw_hash"], password):
            for k in keys:
                con.execute("INSERT INTO throttle (key, failures, last) VALUES (?, 1, ?) ON CONFLICT(key) DO UPDATE SET "
                            "failures = failures + 1, last = excluded.last", (k, now))
            audit(con, who, "sign-in failed", who, reason="unknown user" if row is None else "wrong password",
                  failures=entries.get(keys[0], (0, 0))[0] + 1, client=client)
            refusal = SignInError(REFUSED)
        elif row["disabled"]:
            audit(con, who, "sign-in refused", who, reason="disabled")
            refusal = SignInError(f"account {who!r} is disabled: ask an admin")
        else:
            if _HASHER.check_needs_rehash(row["pw_hash"]):
                con.execute("UPDATE users SET pw_hash = ? WHERE name = ?", (_HASHER.hash(password), who))
            con.execute("DELETE FROM throttle WHERE key IN (?, ?)", keys)
            audit(con, who, "signed in", who, client=client)
    if refusal is not None:
        raise refusal
    return _user(row).actor()


def _password_matches(pw_hash: str | None, password: str) -> bool:
    if pw_hash is None:  # an OIDC-only user has no password to sign in with
        return False
    try:
        return _HASHER.verify(pw_hash, password or "")
    except (VerificationError, InvalidHashError):
        return False


def actor_for_email(ws: Workspace, email: str) -> Actor:
    """The role of an OIDC-signed-in user, looked up by the e-mail the identity provider vouched for."""
    con = connect(ws)
    try:
        row = con.execute("SELECT * FROM users WHERE lower(email) = lower(?)", (email or "",)).fetchone()
    finally:
        con.close()
    if row is None:
        raise SignInError(f"{email or 'this account'} has no role in this workspace: an admin adds it with "
                          f"`python -m core users add NAME --email {email or 'E-MAIL'} --role annotator`")
    user = _user(row)
    if user.disabled:
        raise SignInError(f"account {user.name!r} is disabled: ask an admin")
    return user.actor()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def open_session(ws: Workspace, actor: Actor, seconds: float = SESSION_SECONDS) -> str:
    token = secrets.token_urlsafe(32)
    now = time.time()
    con = connect(ws)
    try:
        con.execute("DELETE FROM sessions WHERE expires < ?", (now,))
        con.execute("INSERT INTO sessions (token_hash, name, created, expires) VALUES (?, ?, ?, ?)",
                    (_digest(token), actor.name, now, now + seconds))
    finally:
        con.close()
    return token


def session_actor(ws: Workspace, token: str | None) -> Actor:
    """The user behind a session token, with their role as it is now (a role change applies at once)."""
    again = SignInError("your session has ended (expired, signed out or not valid here): sign in again")
    if not token:
        raise again
    con = connect(ws)
    try:
        row = con.execute("SELECT s.expires, u.* FROM sessions s JOIN users u ON u.name = s.name WHERE s.token_hash = ?",
                          (_digest(token),)).fetchone()
    finally:
        con.close()
    if row is None or row["expires"] < time.time() or row["disabled"]:
        raise again
    return _user(row).actor()


def close_session(ws: Workspace, token: str | None) -> None:
    if not token:
        return
    con = connect(ws)
    try:
        row = con.execute("SELECT name FROM sessions WHERE token_hash = ?", (_digest(token),)).fetchone()
        con.execute("DELETE FROM sessions WHERE token_hash = ?", (_digest(token),))
        if row:
            audit(con, row["name"], "signed out", row["name"])
    finally:
        con.close()
