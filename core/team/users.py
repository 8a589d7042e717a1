"""Accounts: users with a role, argon2 password hashes (argon2-cffi; never hand-rolled), sign-in slowed down after
repeated failures, and server-side sessions.

Names are Unicode (NFC; letters of any script, digits, '.', '_', '-') and compared without case: `ANN` is `ann`.
Once any account exists (enabled or not) the app asks everyone to sign in, and the team always keeps an enabled
admin: the first account is one, and the last enabled admin cannot be demoted or disabled.

Repeated failures slow sign-in down instead of locking an account, counted three ways (SQLite table `throttle`):
- per address (`client:`): after CLIENT_FREE_FAILURES wrong attempts from one address, its next attempt waits
  BASE_DELAY seconds, doubling with each further failure up to MAX_DELAY;
- per name and address (`pair:`): after FREE_FAILURES wrong attempts at one name from one address, the same;
- per name from everywhere (`name:`): after FREE_FAILURES wrong attempts at a name, every address's next attempt
  at it waits at least the name's delay (doubling to MAX_DELAY) after that address's own last failure there.
An attempt made while it waits is refused unchecked and writes nothing (no audit row, no counter), so a flood
cannot grow the store. The name's counter never refuses an address that has not failed at that name within the
name's delay: others cannot keep a person out (unless they share that person's address); a right password clears
the name's, the pair's and the address's counters. Brute force of one account from k addresses stays slow: past
FREE_FAILURES + 8 failures at a name, each address gets at most one guess at it per MAX_DELAY (plus one first
guess per fresh address), i.e. about k guesses every five minutes against a password of MIN_PASSWORD or more
characters hashed with argon2. Every refusal reads the same, so no one learns which names exist. A typed name is
cut to MAX_NAME characters before it is stored (a longer one cannot be an account), and counters idle for
FORGET_SECONDS are dropped.

A session token is random (secrets), handed to the browser once and stored here only as its SHA-256, so a
copied database cannot be replayed as a session; an unknown (forged), expired or revoked token, or one of a
user disabled since, gets "sign in again". Users who sign in through OIDC (`st.login`) are matched by e-mail
and have no password here; the provider must say it verified the address (`email_verified` true): a provider that
sends no such claim may let users type any address (an admin's among them), so it is trusted only where an admin
says so (NERSELECT_OIDC_TRUST_EMAIL=1, for a provider that owns its users' addresses).
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from core.access import LOCAL, Actor, Role, require
from core.data.annotation_db import connect, transaction
from core.data.workspace import Workspace
from core.environment import variable
from core.errors import UserError
from core.team.db import audit

FREE_FAILURES = 5  # wrong attempts at one name (from one address, or from all) before it slows down ...
CLIENT_FREE_FAILURES = 20  # ... and from one address, which many people may share (a NAT, a proxy, this machine)
BASE_DELAY = 2.0  # seconds to wait after the first slowed failure, doubling with each further one ...
MAX_DELAY = 300.0  # ... up to this
FORGET_SECONDS = 24 * 3600  # a throttle counter with no failure for this long is dropped
MAX_CLIENT = 100  # characters of a client address kept (an IPv6 address with a zone fits)
SESSION_SECONDS = 12 * 3600
MIN_PASSWORD = 8
MAX_NAME = 64
_HASHER = PasswordHasher()
REFUSED = ("wrong user name or password (after repeated failures, another try from the same place waits up to "
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
        """Sign-in for this name is slowed after repeated failures (no lock: see the module's docstring)."""
        return self.locked_until > time.time()

    def actor(self) -> Actor:
        return Actor(self.name, self.role)


def _user(row, throttle: dict[str, tuple[int, float]] | None = None) -> User:
    failures, until = _waiting((throttle or {}).get(name_key(row["name"])))
    return User(row["name"], Role(row["role"]), row["email"], bool(row["disabled"]), failures, until)


def name_key(name: str) -> str:
    """How names are compared: NFC, case-folded ('ANN', 'ann' and 'Ann' are one name)."""
    return unicodedata.normalize("NFC", (name or "").strip()).casefold()


# Unicode's default-ignorable code points that are letters or marks by category (variation selectors, the combining
# grapheme joiner, Hangul fillers, tags): drawn as nothing, they made "ann" and "ann\ufe0f" two users who look alike.
# Written out because unicodedata has no Default_Ignorable_Code_Point property.
_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
              (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))


def _ignorable(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in _IGNORABLE)


def check_name(name: str) -> str:
    """The name as stored (NFC). Letters of any script, combining marks, digits, '.', '_', '-'; a letter or digit
    first; no invisible characters (a name must read as what it is).

    >>> check_name("zoe\u0308"), check_name("דנה")
    ('zoë', 'דנה')
    """
    text = unicodedata.normalize("NFC", (name or "").strip())
    allowed = all((unicodedata.category(c)[0] in "LMN" or c in "._-") and not _ignorable(c) for c in text)
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
    """Whether sign-in is on: any user exists, enabled or not. Counting enabled users only turned sign-in off (and
    made every visitor the local admin) once every account was disabled."""
    con = connect(ws)
    try:
        return con.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None
    finally:
        con.close()


def nobody_can_sign_in(ws: Workspace) -> str | None:
    """A message when accounts exist but every one is disabled (sign-in stays on, so nobody gets in), else None."""
    con = connect(ws)
    try:
        rows = con.execute("SELECT disabled FROM users").fetchall()
    finally:
        con.close()
    if not rows or any(not r["disabled"] for r in rows):
        return None
    return (f"every account of this workspace is disabled, so nobody can sign in: an admin with a shell on the server "
            f"re-enables one with `python -m core --workspace {ws.root} users enable NAME`")


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
    if name_key(name) == LOCAL.name:  # the machine's owner's name in every log and audit line: never an account's
        raise UserError(f"user name {name!r} is reserved (it names the CLI and the single-user app): choose another")
    role = Role.parse(role)
    if password is None and not email:
        raise UserError(f"user {name!r}: give a password, or an e-mail for sign-in through OIDC")
    pw_hash = _HASHER.hash(check_password(password)) if password is not None else None
    with transaction(ws) as con:
        if (same := _find(con, name)) is not None:
            raise UserError(f"user {name!r} exists already" + (f" as {same['name']!r} (names are compared without case)"
                                                                if same["name"] != name else "")
                            + ": `users set-role` or `users set-password` change it")
        if email and not re.fullmatch(r"[^@\s]+@[^@\s]+", email):  # ann@localhost is an internal provider's
            raise UserError(f"e-mail {email!r}: expected an address such as ann@example.org (sign-in through the "
                            "identity provider matches it)")
        if email and con.execute("SELECT 1 FROM users WHERE lower(email) = lower(?)", (email,)).fetchone():
            raise UserError(f"e-mail {email!r} belongs to another user")
        if role != Role.ADMIN and _enabled_admins(con) == 0:
            raise UserError(f"user {name!r}: the team has no enabled admin, so the next account must be one (the first "
                            "account turns sign-in on, and only an admin manages users): "
                            "`python -m core users add NAME --role admin` first")
        con.execute("INSERT INTO users (name, role, pw_hash, email, created) VALUES (?, ?, ?, ?, ?)",
                    (name, role.value, pw_hash, email or None, time.time()))
        audit(con, actor, "user added", name, role=role.value, email=email or "")
    return get_user(ws, name)


def _enabled_admins(con, besides: str | None = None) -> int:
    return con.execute("SELECT count(*) FROM users WHERE role = ? AND disabled = 0 AND name IS NOT ?",
                       (Role.ADMIN.value, besides)).fetchone()[0]


def _keep_an_admin(con, name: str) -> None:
    """Refuse a change that takes the last enabled admin away: nobody could manage users from the app any more."""
    row = con.execute("SELECT role, disabled FROM users WHERE name = ?", (name,)).fetchone()
    if row is not None and row["role"] == Role.ADMIN.value and not row["disabled"] and not _enabled_admins(con, name):
        raise UserError(f"{name!r} is the last enabled admin: the team would have no one to manage users; make "
                        "another user admin first (`python -m core users set-role NAME admin`)")


def _change(ws: Workspace, actor: Actor, name: str, what: str, sql: str, args: tuple, drops_admin: bool = False,
            clear: bool = False, **detail) -> User:
    """One change to one user, after the role check and inside one transaction: refused, it changes nothing."""
    require(actor, "manage users")
    name = get_user(ws, name).name  # a clear message for an unknown name; the name as stored
    with transaction(ws) as con:
        if drops_admin:
            _keep_an_admin(con, name)
        con.execute(sql, (*args, name))
        if clear:
            _clear(con, name)
        if what in ("user disabled", "password changed"):  # their open sessions end now
            con.execute("DELETE FROM sessions WHERE name = ?", (name,))
        audit(con, actor, what, name, **detail)
    return get_user(ws, name)


def set_role(ws: Workspace, name: str, role: Role | str, actor: Actor = LOCAL) -> User:
    role = Role.parse(role)
    return _change(ws, actor, name, "role changed", "UPDATE users SET role = ? WHERE name = ?", (role.value,),
                   drops_admin=role != Role.ADMIN, role=role.value)


def set_disabled(ws: Workspace, name: str, disabled: bool = True, actor: Actor = LOCAL) -> User:
    return _change(ws, actor, name, "user disabled" if disabled else "user enabled",
                   "UPDATE users SET disabled = ? WHERE name = ?", (int(disabled),), drops_admin=disabled)


def set_password(ws: Workspace, name: str, password: str, actor: Actor = LOCAL) -> User:
    """A new password; the name's sign-in slow-down ends with it (checked for the role before anything is done)."""
    require(actor, "manage users")
    pw_hash = _HASHER.hash(check_password(password))
    return _change(ws, actor, name, "password changed", "UPDATE users SET pw_hash = ?, failed = 0, locked_until = 0 "
                   "WHERE name = ?", (pw_hash,), clear=True)


def unlock(ws: Workspace, name: str, actor: Actor = LOCAL) -> User:
    """Lift the slow-down of a name at once (an admin who knows the person asked), from every address."""
    return _change(ws, actor, name, "user unlocked", "UPDATE users SET failed = 0, locked_until = 0 WHERE name = ?", (),
                   clear=True)


def _clear(con, name: str) -> None:
    """Drop a name's counters: its own and those of every (name, address) pair."""
    pair = _pair_key(name_key(name), "")
    con.execute("DELETE FROM throttle WHERE key = ? OR substr(key, 1, ?) = ?", (f"name:{name_key(name)}", len(pair), pair))


def _pair_key(key: str, client: str) -> str:
    return f"pair:{key}\n{client}"  # no name holds a newline (check_name), and a typed one is never an account's


def _cut(text: str, limit: int) -> str:
    """`text` as stored: at most `limit` characters, '…' marking a cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def _typed(name: str) -> str:
    """A typed name, cut to MAX_NAME characters before anything is stored (a longer one cannot be an account: its
    tail tells nothing, and an attacker could fill the audit log and the throttle table with it)."""
    return _cut(unicodedata.normalize("NFC", (name or "")[:4 * MAX_NAME].strip()), MAX_NAME)


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


def _held(seen: dict[str, tuple[int, float]], now: float) -> bool:
    """Whether an attempt must wait (see the module's docstring): its address, or its (name, address) pair, is
    waiting out its own failures, or this address failed at this name within the name's delay."""
    client_failures, client_last = seen.get("client", (0, 0.0))
    pair_failures, pair_last = seen.get("pair", (0, 0.0))
    name_failures = seen.get("name", (0, 0.0))[0]
    if now < client_last + delay_after(client_failures, CLIENT_FREE_FAILURES):
        return True
    return now < pair_last + max(delay_after(pair_failures), delay_after(name_failures))


def _seen(con, keys: dict[str, str]) -> dict[str, tuple[int, float]]:
    return {kind: (r["failures"], r["last"]) for kind, k in keys.items()
            if (r := con.execute("SELECT failures, last FROM throttle WHERE key = ?", (k,)).fetchone())}


_CHECKS = threading.BoundedSemaphore(2)  # password checks at once in this process (outside the database's write lock)


def authenticate(ws: Workspace, name: str, password: str, client: str = "local") -> Actor:
    """The actor for a right name and password. Every refusal reads REFUSED, whether the name exists, the password
    was wrong, or this attempt waits out repeated failures (refused unchecked, nothing written); a disabled account
    says so only to someone who gave its password. `client` is the address the attempt comes from."""
    typed, client = _typed(name), _cut(client or "unknown", MAX_CLIENT)
    keys = {"name": f"name:{name_key(typed)}", "pair": _pair_key(name_key(typed), client), "client": f"client:{client}"}
    now = time.time()
    con = connect(ws)
    try:  # a flood of attempts that must wait is refused on a read, without taking the store's write lock
        held = _held(_seen(con, keys), now)
        first = _find(con, typed)
    finally:
        con.close()
    if held:
        raise SignInError(REFUSED)
    # argon2 (~0.1 s) outside the write lock: held inside it, a flood of attempts from fresh addresses stalled every
    # annotation save and session for seconds; the lock only records the outcome
    checked = first["pw_hash"] if first is not None else None
    with _CHECKS:  # a few at once: argon2 takes 64 MiB a check, and a flood of them ran the server out of memory
        matches = _password_matches(checked or _dummy_hash(), password) and checked is not None
    refusal: SignInError | None = None  # raised after the transaction commits: failures must be recorded
    with transaction(ws) as con:
        if _held(seen := _seen(con, keys), now):  # another attempt failed in between
            raise SignInError(REFUSED)
        row = _find(con, typed)
        who = row["name"] if row else (typed or "?")
        stored = row["pw_hash"] if row is not None else None  # none for an unknown name or an OIDC-only user
        if stored != checked:  # the password changed in between (rare): judged on the stored one, under the lock
            with _CHECKS:
                matches = _password_matches(stored or _dummy_hash(), password) and stored is not None
        if not matches:
            for k in keys.values():
                con.execute("INSERT INTO throttle (key, failures, last) VALUES (?, 1, ?) ON CONFLICT(key) DO UPDATE SET "
                            "failures = failures + 1, last = excluded.last", (k, now))
            con.execute("DELETE FROM throttle WHERE last < ?", (now - FORGET_SECONDS,))
            audit(con, who, "sign-in failed", who, reason="unknown user" if row is None else "wrong password",
                  failures=seen.get("name", (0, 0.0))[0] + 1, client=client)
            refusal = SignInError(REFUSED)
        elif row["disabled"]:
            audit(con, who, "sign-in refused", who, reason="disabled", client=client)
            refusal = SignInError(_disabled(ws, who))
        else:
            if _HASHER.check_needs_rehash(row["pw_hash"]):
                con.execute("UPDATE users SET pw_hash = ? WHERE name = ?", (_HASHER.hash(password), who))
            con.execute("DELETE FROM throttle WHERE key IN (?, ?, ?)", tuple(keys.values()))
            audit(con, who, "signed in", who, client=client)
    if refusal is not None:
        raise refusal
    return _user(row).actor()


def _disabled(ws: Workspace, name: str) -> str:
    return (f"account {name!r} is disabled: ask an admin (one with a shell on the server runs "
            f"`python -m core --workspace {ws.root} users enable {name}`)")


@functools.lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """A hash to verify against when the name is unknown, so an unknown name costs the same argon2 work as a wrong
    password: the answer's time must not tell which names exist, as its words do not."""
    return _HASHER.hash(secrets.token_urlsafe(16))


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
        raise SignInError(_disabled(ws, user.name))
    return replace(user.actor(), recheck=partial(actor_for_email, ws, email))  # as session_actor: judged at each write


def actor_for_oidc(ws: Workspace, claims: Mapping[str, Any]) -> Actor:
    """The role of an OIDC sign-in from the provider's claims (`st.user`). An e-mail the provider says it has not
    verified names no one: anyone could have typed it at the provider. A provider that sends no `email_verified` is
    trusted on its e-mail only with NERSELECT_OIDC_TRUST_EMAIL=1 (see the module's docstring)."""
    email = str(claims.get("email") or "")
    if "email_verified" not in claims and variable("NERSELECT_OIDC_TRUST_EMAIL").text() != "1":
        raise SignInError(f"your identity provider does not say whether it verified the e-mail {email or '(none)'}, so "
                          "it cannot stand for an account here: an admin who knows the provider owns its users' "
                          "addresses sets NERSELECT_OIDC_TRUST_EMAIL=1")
    if "email_verified" in claims and not _true(claims["email_verified"]):
        raise SignInError(f"your identity provider has not verified the e-mail {email or '(none)'}, so it cannot "
                          "stand for an account here: verify it with the provider, then sign in again")
    return actor_for_email(ws, email)


def _true(value: Any) -> bool:
    """A claim's truth: JSON true, or the string "true" some providers send (AWS Cognito)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


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


def _ended() -> Actor:
    raise SignInError("your session has ended (signed out): sign in again")


# who acts in a browser session right after its sign-out, until the app draws the sign-in form: every require() refuses
SIGNED_OUT = Actor("signed out", Role.ANNOTATOR, recheck=_ended)


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
    return replace(_user(row).actor(), recheck=partial(session_actor, ws, token))


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
