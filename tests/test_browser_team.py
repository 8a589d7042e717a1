"""Issue 23 in a real browser: signed out every URL shows only the sign-in form; an annotator sees only their
queue, even at a researcher page's URL; two annotators review overlapping sentences and the Agreement page shows
what a hand computation gives; repeated wrong passwords lock the account."""

from __future__ import annotations

import pytest

from core.data.workspace import Workspace
from core.team import users
from core.team.db import read_audit
from tests.browser import browser_page, screenshot, sign_in_as, streamlit_server, wait_for_app, wait_for_span, wait_until

pytestmark = pytest.mark.browser
PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def team_ws(tmp_path_factory):
    from core.access import Actor, Role
    from core.data.demo import write_demo_workspace
    from core.team import tasks, users

    root = tmp_path_factory.mktemp("teamws")
    ws = write_demo_workspace(root, dc_size=200)
    (root / "two.txt").write_text("John lives in Paris\nMary visited Berlin today\n")
    ws.import_corpus(root / "two.txt", name="two")
    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator"), ("bob", "annotator"), ("eve", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    tasks.create_task(ws, Actor("rita", Role.RESEARCHER), "two sentences", ["ann", "bob"], corpus="two", overlap=1.0,
                      types=["PER", "LOC", "ORG"], guidelines="Mark people and places.")
    return root


def sign_in(page, name: str, password: str = PASSWORD) -> None:
    sign_in_as(page, name, password)


def mark(page, token: str, entity: str) -> None:
    page.locator("[class*='st-key-q_tokens'] button", has_text=token).first.click()
    page.locator("[class*='st-key-q_type'] button", has_text=entity).first.click()
    page.locator("[class*='st-key-q_assign'] button").first.click()
    wait_for_span(page, "q_card", token)


def annotate(page, url: str, who: str, sentences: list[list[tuple[str, str]]]) -> None:
    page.goto(url)
    sign_in(page, who)
    wait_for_app(page, "My review queue")
    for n, marks in enumerate(sentences, 1):
        wait_for_app(page, f"Sentence {n} of {len(sentences)}")
        for token, entity in marks:
            mark(page, token, entity)
        if n == 1:
            screenshot(page, f"team_queue_{who}")
        page.locator("[class*='st-key-q_save'] button").first.click()
        wait_for_app(page, f"{n} of {len(sentences)} sentences answered")
    wait_for_app(page, f"{len(sentences)} of {len(sentences)} sentences answered")


def test_team_flow_in_the_browser(team_ws):
    with streamlit_server(team_ws) as url, browser_page(height=1400) as page:
        for path in ("", "/runs", "/corpora", "/agreement"):  # signed out: the form only, no workspace data
            page.goto(url + path)
            wait_for_app(page, "this server needs an account")
            body = page.inner_text("body")
            assert "demo-dc" not in body and "Workspace" not in body and "Start NER training" not in body, path
        screenshot(page, "team_sign_in")

        page.goto(f"{url}/runs")  # an annotator at a researcher page's URL gets their queue, nothing else
        sign_in(page, "eve")
        wait_for_app(page, "This page needs the researcher role")
        body = page.inner_text("body")
        assert "Start NER training" not in body and "Corpora" not in body and "Folder" not in body
        page.get_by_text("Open my review queue").click()
        wait_for_app(page, "No review task is assigned to you yet")

        annotate(page, url, "ann", [[("John", "PER"), ("Paris", "LOC")], [("Mary", "PER"), ("Berlin", "LOC")]])
        annotate(page, url, "bob", [[("John", "PER"), ("Paris", "ORG")], [("Mary", "PER")]])

        # By hand: strict matches John, Mary of 4 + 3 spans: F1 4/7 = 0.571. Partial: John, Paris (same boundaries),
        # Mary correct, Berlin missed: P 3/3, R 3/4, F1 0.857. Tokens: 6 of 8 agree; A {PER 2, LOC 2, O 4},
        # B {PER 2, ORG 1, O 5}: pe = (4 + 20) / 64, kappa = (0.75 - 0.375) / 0.625 = 0.600.
        page.goto(f"{url}/agreement")
        sign_in(page, "rita")
        wait_for_app(page, "Sentences reviewed twice")
        metrics = page.inner_text("[data-testid='stMainBlockContainer']")
        for label, value in (("Entity F1, exact", "0.571"), ("Entity F1, partial", "0.857"), ("Token kappa", "0.600")):
            assert label in metrics and value in metrics, (label, value, metrics[:1500])
        wait_for_app(page, "2 sentences where annotators differ")
        screenshot(page, "team_agreement")
        page.locator("[class*='st-key-agr_pick_'] button", has_text="Pick ann").first.click()
        wait_for_app(page, "1 settled")
        screenshot(page, "team_adjudicated")

        page.goto(url)
        bob = lambda: users.get_user(Workspace(team_ws), "bob").failed
        while (before := bob()) < users.FREE_FAILURES:  # wait for each refusal to be stored before the next one: a
            sign_in(page, "bob", "not the password")  # submit made while the last rerun still draws can be lost
            wait_until(lambda: bob() > before, timeout=30)  # (lost: the loop submits again)
        wait_for_app(page, "wrong user name or password")
        assert users.get_user(Workspace(team_ws), "bob").locked  # the next attempt from this address waits ...
        audited = len(read_audit(Workspace(team_ws), user="bob"))
        page.goto(url)  # a fresh page: the refusal's words can only come from the next submit
        sign_in(page, "bob")  # ... so the right password is not even checked now, and the page says the same words
        wait_for_app(page, "wrong user name or password")
        assert "Signed in as" not in page.inner_text("body")
        assert len(read_audit(Workspace(team_ws), user="bob")) == audited  # a waiting attempt writes nothing
        screenshot(page, "team_locked")


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_a_reload_and_a_new_tab_stay_signed_in_until_the_session_ends(team_ws):
    """Issue 43.3: a password session lived in the tab's session state, so a reload signed the user out. The server
    now keeps it in an HttpOnly cookie, which sign-out and a password change end."""
    from core.team.websession import COOKIE

    def session_cookie(page):
        return next((c for c in page.context.cookies() if c["name"] == COOKIE), None)

    with streamlit_server(team_ws) as url, browser_page() as page:
        page.goto(url)
        sign_in(page, "rita")
        wait_for_app(page, "Signed in as")
        assert wait_until(lambda: session_cookie(page) is not None), "the page never handed its session to the cookie"
        cookie = session_cookie(page)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
        assert page.evaluate("() => document.cookie").find(COOKIE) < 0  # scripts on the page cannot read it
        page.reload()
        wait_for_app(page, "Signed in as")
        assert "rita" in page.inner_text("section[data-testid='stSidebar']")
        tab = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
        tab.add_cookies(page.context.cookies())  # a new tab of the same browser: the same cookie jar
        other = tab.new_page()
        other.set_default_timeout(120_000)
        other.goto(f"{url}/runs")
        wait_for_app(other, "Start NER training")

        page.get_by_role("button", name="Sign out").click()
        wait_for_app(page, "this server needs an account")
        assert wait_until(lambda: session_cookie(page) is None), "sign-out left the cookie in the browser"
        other.reload()  # the other tab (which still holds the cookie) finds the session ended
        wait_for_app(other, "this server needs an account")

        sign_in(page, "rita")
        wait_for_app(page, "Signed in as")
        assert wait_until(lambda: session_cookie(page) is not None)
        users.set_password(Workspace(team_ws), "rita", "a new password 42")  # ends every session of rita's
        page.reload()
        wait_for_app(page, "this server needs an account")
