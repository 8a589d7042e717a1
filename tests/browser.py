"""Helpers for end-to-end tests: a real `streamlit run` on a free localhost port and
Debian's Chromium driven by Playwright (the browser Playwright would download cannot
be fetched here)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("NERSELECT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
SCREENSHOTS = Path(os.environ.get("NERSELECT_SCREENSHOTS", ROOT / "tests" / "screenshots"))


# No script run in flight. The status widget alone is not enough: Streamlit draws it only after a run has gone on
# for half a second, so the app's own run state (stApp's data-test-script-state) is read too. Right after a click
# both still read idle (the run has not begun): wait first for something only that run draws, then for IDLE.
IDLE = ("() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
        "document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState === 'notRunning'")

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_process(workspace: Path, timeout: float = 90) -> Iterator[tuple[subprocess.Popen, str]]:
    """`streamlit run server.py` (the app as scripts/app.sh serves it) on a free localhost port, once healthy: (process, url). The server
    benchmark reads the process's CPU time; tests want only the url (streamlit_server)."""
    port = free_port()
    env = dict(os.environ, NERSELECT_WORKSPACE=str(workspace), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    log = open(workspace / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "server.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start: {(workspace / 'streamlit.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield proc, url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
        log.close()


@contextmanager
def streamlit_server(workspace: Path, timeout: float = 90) -> Iterator[str]:
    with streamlit_process(workspace, timeout) as (_, url):
        yield url


@contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    if not Path(CHROMIUM).exists() or shutil.which("chromedriver") is None and not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium (scripts/setup.sh --test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(120_000)  # waits are on state; the bound only matters on a loaded 2-core machine
            yield page
        finally:
            browser.close()


def wait_for_app(page, text: str, timeout: float = 90_000) -> None:
    """Wait until the script has finished running and `text` is visible."""
    page.get_by_text(text, exact=False).first.wait_for(state="visible", timeout=timeout)
    page.wait_for_function(IDLE, timeout=timeout)


def wait_for_span(page, card: str, token: str, timeout: float = 90_000) -> None:
    """Wait until the sentence in `card` (a widget key) shows `token` inside an entity span, and the rerun that drew
    it has finished. The legend's type chips share the span class, so a bare `.nx-ent` would match at once: a Save
    clicked then can overtake the Assign and store the sentence without its span."""
    page.locator(f"[class*='st-key-{card}'] .nx-sent:not(.nx-legend) .nx-ent", has_text=token).first.wait_for(
        state="visible", timeout=timeout)
    page.wait_for_function(IDLE, timeout=timeout)


def upload_file(page, path: Path, timeout: float = 90_000) -> None:
    """Choose `path` in the page's file uploader and wait until the browser has sent it: its chip is shown with no
    spinner. A form submitted while the upload is still in flight reaches the script with no file (on a loaded
    machine the click can overtake the upload)."""
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.locator("[data-testid='stFileChipName']", has_text=path.name).first.wait_for(state="visible", timeout=timeout)
    page.locator("[data-testid='stFileChipIconSpinner']").first.wait_for(state="detached", timeout=timeout)


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_until(condition, timeout: float = 90) -> bool:
    """Poll `condition` until it holds; False once `timeout` seconds pass (the caller decides what a miss means)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def sign_in_as(page, name: str, password: str) -> None:
    """Fill the sign-in form as `name`. A session kept in the browser's cookie (core.team.websession) would sign the
    previous user back in, so a test that switches users first drops it, as a sign-out would."""
    from core.team.websession import COOKIE

    if any(c["name"] == COOKIE for c in page.context.cookies()):
        page.context.clear_cookies()
        page.reload()
    wait_for_app(page, "Sign in")
    page.get_by_label("User name", exact=True).fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()
