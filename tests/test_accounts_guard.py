"""Review of the accounts code: sign-in stays on with every account disabled, the single-user mode refuses a
proxied request, a sign-in flood cannot grow the store, others cannot keep a person out, a refused unlock or
password change changes nothing, the team always keeps an enabled admin, and an OIDC e-mail counts only verified."""

from __future__ import annotations

import pytest

from core.access import AccessDenied, Actor, Role
from core.data.annotation_db import connect
from core.data.workspace import Workspace
from core.errors import UserError
from core.team import users
from core.team.serving import AuthMode, auth_mode, check_local_request

PASSWORD = "correct horse"


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch) -> None:
    """Argon2 at its smallest cost: these tests count attempts, and test_team checks the real hashes."""
    from argon2 import PasswordHasher

    monkeypatch.setattr(users, "_HASHER", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))


@pytest.fixture
def ws(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    users.add_user(ws, "boss", "admin", PASSWORD)
    users.add_user(ws, "ann", "annotator", PASSWORD)
    users.add_user(ws, "bob", "annotator", PASSWORD)
    return ws


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    """A clock the test moves by hand (waits are judged by it, never slept)."""
    now = [1_000_000.0]
    monkeypatch.setattr(users.time, "time", lambda: now[0])
    return now


def _rows(ws: Workspace, table: str) -> list[tuple]:
    con = connect(ws)
    try:
        return [tuple(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()]
    finally:
        con.close()


def _refused(ws: Workspace, name: str, password: str, client: str) -> bool:
    try:
        users.authenticate(ws, name, password, client=client)
    except users.SignInError:
        return True
    return False


# --------------------------------------------------------------------------- 1: sign-in never switches itself off


def test_sign_in_stays_on_when_every_account_is_disabled(ws, tmp_path):
    """Counting enabled users only, disabling everyone turned sign-in off and made every visitor the local admin."""
    app_root = tmp_path / "app"
    app_root.mkdir()
    assert users.nobody_can_sign_in(ws) is None
    con = connect(ws)
    con.execute("UPDATE users SET disabled = 1")  # an old store, or one edited by hand: the API keeps an admin
    con.close()
    assert users.has_accounts(ws)
    assert auth_mode(ws, "127.0.0.1", app_root) == AuthMode.ACCOUNTS
    assert "users enable NAME" in users.nobody_can_sign_in(ws)
    with pytest.raises(users.SignInError, match="disabled.*users enable boss"):
        users.authenticate(ws, "boss", PASSWORD)
    assert not users.has_accounts(Workspace(tmp_path / "empty"))
    assert users.nobody_can_sign_in(Workspace(tmp_path / "empty")) is None


@pytest.mark.parametrize("headers, ip, why", [
    ({"Host": "127.0.0.1:8501", "X-Forwarded-For": "203.0.113.9"}, None, "proxy"),
    ({"host": "localhost:8501", "forwarded": "for=203.0.113.9"}, None, "proxy"),
    ({"Host": "127.0.0.1:8501", "X-Real-IP": "203.0.113.9"}, None, "proxy"),
    ({"Host": "ner.example.org"}, None, "host 'ner.example.org'"),  # the README's nginx: proxy_set_header Host $host
    ({"Host": "localhost.example.org:8501"}, None, "host"),
    ({"Host": "localhost:8501"}, "203.0.113.9", "comes from 203.0.113.9"),
])
def test_single_user_mode_refuses_a_request_from_elsewhere(headers, ip, why):
    """Behind a reverse proxy on this machine every visitor connects from loopback: with no accounts each one was
    the local admin."""
    with pytest.raises(UserError, match=why) as err:
        check_local_request("/srv/ws", headers, ip)
    assert "users add NAME --role admin" in str(err.value)


@pytest.mark.parametrize("headers, ip", [
    ({}, None), ({"Host": "localhost:8501"}, None), ({"Host": "127.0.0.1:8501"}, "127.0.0.1"),
    ({"Host": "[::1]:8501"}, "::1"), ({"Host": "app.localhost"}, None), ({"Host": "LOCALHOST"}, None),
])
def test_single_user_mode_serves_a_browser_on_this_machine(headers, ip):
    check_local_request("/srv/ws", headers, ip)


@pytest.mark.parametrize("peer, expected", [
    (None, "127.0.0.1"),  # Streamlit's loopback
    ("198.51.100.7", "198.51.100.7"),
    ("::ffff:198.51.100.7", "198.51.100.7"),  # one IPv4 browser, however it is written
    ("2001:db8:1:2::1", "2001:db8:1:2::/64"), ("2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"),  # one /64: one counter
    ("[2001:db8:1:3::1]", "2001:db8:1:3::/64"), ("::1", "::1"),
])
def test_a_browser_is_counted_under_one_key_however_its_address_is_written(peer, expected):
    from core.team.serving import client_key

    assert client_key(peer) == expected


def test_stepping_through_ones_ipv6_block_gives_no_fresh_guesses(ws):
    """An IPv6 host owns a /64: were each address its own counter, every new one would start with free guesses."""
    from core.team.serving import client_key

    for k in range(users.CLIENT_FREE_FAILURES + 1):
        with pytest.raises(UserError):
            users.authenticate(ws, f"nobody{k}", "wrong", client=client_key(f"2001:db8::{k + 1}"))
    with pytest.raises(UserError):  # the block waits, even with the right password from a fresh address in it
        users.authenticate(ws, "boss", PASSWORD, client=client_key("2001:db8::ffff"))
    assert users.authenticate(ws, "boss", PASSWORD, client=client_key("2001:db8:0:1::1")).name == "boss"


def test_streamlits_server_reads_a_local_proxys_forwarded_address():
    """Behind the README's nginx, the browser's address reaches the app only because Streamlit's server (uvicorn)
    rewrites the peer from X-Forwarded-For for a proxy on loopback: a Streamlit release that turned that off would
    make every browser one address again, sharing one slow-down."""
    import uvicorn
    from streamlit.web.server.starlette import starlette_server

    config = uvicorn.Config(lambda scope, receive, send: None, **starlette_server._get_uvicorn_config_kwargs())
    assert config.proxy_headers
    assert {"127.0.0.1", "::1"} <= set(str(config.forwarded_allow_ips).replace(" ", "").split(","))


# --------------------------------------------------------------------------- 2: a flood cannot grow the store


def test_a_typed_name_is_cut_and_an_attempt_that_must_wait_writes_nothing(ws, clock):
    huge = "x" * 200_000
    assert _refused(ws, huge, "guess-guess", "c" * 5_000)
    audit = [r for r in _rows(ws, "audit") if r[3] == "sign-in failed"]
    assert len(audit) == 1 and len(audit[0][2]) == users.MAX_NAME + 1 and len(audit[0][4]) == users.MAX_NAME + 1
    assert len(audit[0][5]) < 1000  # the detail (client address cut too)
    assert max(len(r[0]) for r in _rows(ws, "throttle")) < 2 * users.MAX_NAME + users.MAX_CLIENT + 10
    for k in range(users.CLIENT_FREE_FAILURES):
        assert _refused(ws, f"n{k}-" + huge, "guess-guess", "flood")
    before = (_rows(ws, "audit"), _rows(ws, "throttle"))
    for k in range(50):  # the address waits: refused unchecked, nothing stored, whatever the name
        assert _refused(ws, f"other{k}-" + huge, "guess-guess", "flood")
    assert (_rows(ws, "audit"), _rows(ws, "throttle")) == before
    clock[0] += users.FORGET_SECONDS + 1  # a day later, the first failure after drops the idle counters
    assert _refused(ws, "nobody", "guess-guess", "later")
    assert {r[0] for r in _rows(ws, "throttle")} == {"name:nobody", "pair:nobody\nlater", "client:later"}


# --------------------------------------------------------------------------- 3: nobody keeps another person out


def test_wrong_guesses_from_elsewhere_never_keep_the_owner_out(ws, clock):
    """One wrong guess each time the wait ended kept the per-name wait armed, and the right password was refused
    during it. Now the guessing address waits; the owner's address is checked at once."""
    for _ in range(users.FREE_FAILURES + 10):  # the attacker guesses whenever allowed, past the longest wait
        _refused(ws, "bob", "guess-guess", "attacker")
        clock[0] += users.MAX_DELAY
        _refused(ws, "bob", "guess-guess", "attacker")  # and again at once (refused unchecked)
        assert users.authenticate(ws, "bob", PASSWORD, client="home").name == "bob"
        assert users.authenticate(ws, "bob", PASSWORD, client=f"hotel-{_}").name == "bob"  # a new address too
    for _ in range(users.FREE_FAILURES):
        assert _refused(ws, "bob", "guess-guess", "attacker")
    assert _refused(ws, "bob", PASSWORD, "attacker")  # the guessing address itself waits, right password or not


def test_brute_force_from_many_addresses_gets_one_guess_per_address_per_wait(ws, clock):
    for k in range(users.FREE_FAILURES + 8):  # the name's own delay reaches MAX_DELAY
        assert _refused(ws, "bob", "guess-guess", f"bot{k}")
    assert users.delay_after(users.FREE_FAILURES + 8) == users.MAX_DELAY

    def failures() -> int:
        return sum(r[3] == "sign-in failed" for r in _rows(ws, "audit"))

    assert failures() == 13
    for _ in range(5):  # 30 addresses, each trying 5 times a second
        for k in range(30):
            _refused(ws, "bob", "guess-guess", f"bot{k}")
        clock[0] += 1
    assert failures() == 13 + 17  # the 13 used addresses waited; each of the 17 fresh ones got one guess
    clock[0] += users.MAX_DELAY
    for _ in range(3):
        for k in range(30):
            _refused(ws, "bob", "guess-guess", f"bot{k}")
    assert failures() == 30 + 30  # one guess per address per MAX_DELAY


# --------------------------------------------------------------------------- 4: a refused admin action changes nothing


def test_unlock_and_set_password_by_a_non_admin_change_nothing(ws, clock):
    for _ in range(users.FREE_FAILURES):
        _refused(ws, "boss", "guess-guess", "c1")
    before = (_rows(ws, "throttle"), _rows(ws, "users"), _rows(ws, "audit"))
    ann = Actor("ann", Role.ANNOTATOR)
    for call in (lambda: users.unlock(ws, "boss", actor=ann),
                 lambda: users.set_password(ws, "boss", "another password", actor=ann),
                 lambda: users.set_password(ws, "boss", "short", actor=ann)):
        with pytest.raises(AccessDenied):
            call()
    assert (_rows(ws, "throttle"), _rows(ws, "users"), _rows(ws, "audit")) == before
    assert _refused(ws, "boss", PASSWORD, "c1")  # still waiting
    users.unlock(ws, "boss", actor=Actor("boss", Role.ADMIN))
    assert users.authenticate(ws, "boss", PASSWORD, client="c1").name == "boss"


# --------------------------------------------------------------------------- 5: the team keeps an enabled admin


def test_the_first_account_must_be_an_admin(tmp_path):
    empty = Workspace(tmp_path / "empty")
    for role in ("annotator", "researcher"):
        with pytest.raises(UserError, match="must be one.*users add NAME --role admin"):
            users.add_user(empty, "ann", role, PASSWORD)
    assert users.list_users(empty) == [] and not users.has_accounts(empty)
    assert users.add_user(empty, "olga", "admin", None, email="olga@example.org").role == Role.ADMIN  # OIDC-only


def test_the_last_enabled_admin_cannot_be_demoted_or_disabled(ws):
    boss = Actor("boss", Role.ADMIN)
    before = (_rows(ws, "users"), _rows(ws, "audit"))
    for call in (lambda: users.set_role(ws, "boss", "researcher", actor=boss),  # themselves
                 lambda: users.set_disabled(ws, "BOSS", True, actor=boss),
                 lambda: users.set_role(ws, "boss", "annotator")):  # the CLI too
        with pytest.raises(UserError, match="last enabled admin.*set-role NAME admin"):
            call()
    assert (_rows(ws, "users"), _rows(ws, "audit")) == before
    users.set_role(ws, "ann", "admin", actor=boss)
    assert users.set_disabled(ws, "boss", True, actor=boss).disabled  # another admin is left
    with pytest.raises(UserError, match="'ann' is the last enabled admin"):
        users.set_role(ws, "ann", "annotator", actor=Actor("ann", Role.ADMIN))
    users.set_disabled(ws, "boss", False)
    assert users.set_role(ws, "ann", "annotator").role == Role.ANNOTATOR


# --------------------------------------------------------------------------- 6: OIDC e-mail must be verified


@pytest.mark.parametrize("verified, ok", [(False, False), ("false", False), (None, False), ("", False), (0, False),
                                          (True, True), ("true", True), ("missing", False)])
def test_oidc_e_mail_counts_only_when_the_provider_says_it_verified_it(ws, verified, ok, monkeypatch):
    """Found in review: a provider sending no email_verified (one that lets users type any address) was trusted: anyone
    signing in there could claim an admin's address. It is trusted only where an admin says so."""
    users.add_user(ws, "olga", "annotator", None, email="olga@example.org")
    claims = {"email": "olga@example.org", "is_logged_in": True}
    if verified != "missing":
        claims["email_verified"] = verified
    if ok:
        assert users.actor_for_oidc(ws, claims) == Actor("olga", Role.ANNOTATOR)
    else:
        with pytest.raises(users.SignInError, match="verified the e-mail olga@example.org"):
            users.actor_for_oidc(ws, claims)
    if verified == "missing":
        monkeypatch.setenv("NERSELECT_OIDC_TRUST_EMAIL", "1")
        assert users.actor_for_oidc(ws, claims) == Actor("olga", Role.ANNOTATOR)


def test_an_unknown_name_costs_the_same_argon2_work_as_a_wrong_password(ws, monkeypatch):
    """Found in review: argon2 was skipped for an unknown name, so the answer's time told which names exist."""
    verified: list[str] = []
    real = users._HASHER

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def verify(self, pw_hash: str, password: str) -> bool:
            verified.append(pw_hash)
            return real.verify(pw_hash, password)

    monkeypatch.setattr(users, "_HASHER", Counting())
    for name in ("nobody", "ann"):
        with pytest.raises(users.SignInError):
            users.authenticate(ws, name, "not the password", client="127.0.0.1")
    assert len(verified) == 2 and all(h.startswith("$argon2") for h in verified)


def test_the_password_check_runs_outside_the_write_lock(ws, monkeypatch):
    """Found in review: argon2 ran inside BEGIN IMMEDIATE, so a flood of sign-in attempts stalled every other writer
    (a one-row write took 12.9 s). The check now runs before the transaction, which only records the outcome."""
    import sqlite3

    users.add_user(ws, "olga", "annotator", "correct horse battery")
    real = users._password_matches

    def while_checking(stored, password):  # another writer, while the password is being checked
        con = sqlite3.connect(ws.root / "team.sqlite", timeout=0.5)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("ROLLBACK")
        finally:
            con.close()
        return real(stored, password)

    monkeypatch.setattr(users, "_password_matches", while_checking)
    assert users.authenticate(ws, "olga", "correct horse battery", client="198.51.100.7").name == "olga"
    with pytest.raises(users.SignInError):
        users.authenticate(ws, "olga", "wrong password here", client="198.51.100.7")
