"""Accounts: users with a role, argon2 password hashes (argon2-cffi; never hand-rolled), sign-in with a lock
after repeated failures, and server-side sessions.

A session token is random (secrets), handed to the browser once and stored here only as its SHA-256, so a
copied database cannot be replayed as a session; an unknown (forged), expired or revoked token, or one of a
user disabled since, gets "sign in again". Users who sign in through OIDC (`st.login`) are matched by e-mail
and have no password here.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from core.access import LOCAL, Actor, Role, require
from core.data.workspace import Workspace
from core.errors import UserError
from core.team.db import audit, connect, transaction

MAX_FAILURES = 5  # wrong passwords in a row before the account locks
LOCK_SECONDS = 15 * 60
SESSION_SECONDS = 12 * 3600
MIN_PASSWORD = 8
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_HASHER = PasswordHasher()


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
        return self.locked_until > time.time()

    def actor(self) -> Actor:
        return Actor(self.name, self.role)


def _user(row) -> User:
    return User(row["name"], Role(row["role"]), row["email"], bool(row["disabled"]), row["failed"], row["locked_until"])


def check_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise UserError(f"user name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return name


def check_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD:
        raise UserError(f"password too short: at least {MIN_PASSWORD} characters")
    return password


def list_users(ws: Workspace) -> list[User]:
    con = connect(ws)
    try:
        return [_user(r) for r in con.execute("SELECT * FROM users ORDER BY name").fetchall()]
    finally:
        con.close()


def has_accounts(ws: Workspace) -> bool:
    """Whether sign-in is on: any enabled user exists."""
    return any(not u.disabled for u in list_users(ws))


def get_user(ws: Workspace, name: str) -> User:
    con = connect(ws)
    try:
        row = con.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
    finally:
        con.close()
    if row is None:
        raise UserError(f"no user {name!r} in {ws.root}: `python -m core users list` shows who exists")
    return _user(row)


def add_user(ws: Workspace, name: str, role: Role | str, password: str | None = None, email: str | None = None,
             actor: Actor = LOCAL) -> User:
    """A new account. `password` may be None only for an OIDC user (then `email` is required)."""
    require(actor, "manage users")
    check_name(name)
    role = Role.parse(role)
    if password is None and not email:
        raise UserError(f"user {name!r}: give a password, or an e-mail for sign-in through OIDC")
    pw_hash = _HASHER.hash(check_password(password)) if password is not None else None
    with transaction(ws) as con:
        if con.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
            raise UserError(f"user {name!r} exists already: `users set-role` or `users set-password` change it")
        if email and con.execute("SELECT 1 FROM users WHERE lower(email) = lower(?)", (email,)).fetchone():
            raise UserError(f"e-mail {email!r} belongs to another user")
        con.execute("INSERT INTO users (name, role, pw_hash, email, created) VALUES (?, ?, ?, ?, ?)",
                    (name, role.value, pw_hash, email or None, time.time()))
        audit(con, actor, "user added", name, role=role.value, email=email or "")
    return get_user(ws, name)


def _change(ws: Workspace, actor: Actor, name: str, what: str, sql: str, args: tuple, **detail) -> User:
    require(actor, "manage users")
    get_user(ws, name)  # a clear message for an unknown name
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
    return _change(ws, actor, name, "password changed", "UPDATE users SET pw_hash = ?, failed = 0, locked_until = 0 WHERE name = ?",
                   (pw_hash,))


def unlock(ws: Workspace, name: str, actor: Actor = LOCAL) -> User:
    return _change(ws, actor, name, "user unlocked", "UPDATE users SET failed = 0, locked_until = 0 WHERE name = ?", ())


def authenticate(ws: Workspace, name: str, password: str) -> Actor:
    """The actor for a right name and password. Every failure says the same about name and password (no hint
    which one was wrong); the MAX_FAILURES-th wrong password in a row locks the account for LOCK_SECONDS."""
    wrong = SignInError("wrong user name or password")
    name = (name or "").strip()
    refusal: SignInError | None = None  # raised after the transaction commits: failures must be recorded
    with transaction(ws) as con:
        row = con.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        user = _user(row) if row else None
        if user is None:
            audit(con, name or "?", "sign-in failed", name, reason="unknown user")
            refusal = wrong
        elif user.disabled:
            audit(con, user.name, "sign-in refused", user.name, reason="disabled")
            refusal = SignInError(f"account {user.name!r} is disabled: ask an admin")
        elif user.locked:
            audit(con, user.name, "sign-in refused", user.name, reason="locked")
            refusal = SignInError(_locked_text(user.name, user.locked_until))
        elif not _password_matches(row["pw_hash"], password):
            failed = user.failed + 1
            locked_until = time.time() + LOCK_SECONDS if failed >= MAX_FAILURES else 0.0
            con.execute("UPDATE users SET failed = ?, locked_until = ? WHERE name = ?", (failed, locked_until, user.name))
            audit(con, user.name, "sign-in failed", user.name, failures=failed, locked=bool(locked_until))
            refusal = SignInError(_locked_text(user.name, locked_until)) if locked_until else wrong
        else:
            if _HASHER.check_needs_rehash(row["pw_hash"]):
                con.execute("UPDATE users SET pw_hash = ? WHERE name = ?", (_HASHER.hash(password), user.name))
            con.execute("UPDATE users SET failed = 0, locked_until = 0 WHERE name = ?", (user.name,))
            audit(con, user.name, "signed in", user.name)
    if refusal is not None:
        raise refusal
    return user.actor()


def _password_matches(pw_hash: str | None, password: str) -> bool:
    if pw_hash is None:  # an OIDC-only user has no password to sign in with
        return False
    try:
        return _HASHER.verify(pw_hash, password or "")
    except (VerificationError, InvalidHashError):
        return False


def _locked_text(name: str, locked_until: float) -> str:
    until = time.strftime("%H:%M", time.localtime(locked_until))
    return (f"account {name!r} is locked until {until} after {MAX_FAILURES} wrong passwords; an admin can unlock it "
            f"now with `python -m core users unlock {name}`")


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
