"""Issue 48: a hostile corpus opened on every page by each role runs no script. Its tokens, its `domain` field, the
review task's name and guidelines carry script payloads (<img onerror>, <svg onload>, a closing quote and <script>,
javascript: links); every page each role can open is visited, the Map coloured by the poisoned field and hovered;
the globals the payloads would set stay unset, in the page and in every frame, and the payload is shown as text."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from core.access import Actor, Role
from tests.browser import IDLE, browser_page, screenshot, sign_in_as, streamlit_server, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.long]  # ~60 s: CI runs it after the default suite
PASSWORD = "correct horse"
PAYLOADS = [
    '<img src=x onerror="window.__xss=1">',
    "<svg onload=window.__xss=2>",
    '"><script>window.__xss=3</script>',
    "' onmouseover='window.__xss=4' x='",
    "javascript:window.__xss=5",
]
# the same payloads as single tokens: a token holds no whitespace (the readers refuse one that does), and browsers take
# '/' between a tag's attributes as they take a space
TOKEN_PAYLOADS = [
    "<img/src/onerror=window.__xss=1>",
    "<svg/onload=window.__xss=2>",
    '"><script>window.__xss=3</script>',
    "'/onmouseover='window.__xss=4'",
    "javascript:window.__xss=5",
]
RESEARCH_PAGES = ["Corpora", "Similarity", "Selection", "Map", "Inspect", "Adapt", "Runs", "Results", "Review tasks",
                  "Agreement"]


@pytest.fixture(scope="module")
def hostile_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace
    from core.runner import jobs
    from core.team import tasks, users

    root = tmp_path_factory.mktemp("hostilews")
    ws = write_demo_workspace(root, dc_size=200)
    dc = ws.load_corpus("demo-dc")
    with open(root / "evil.jsonl", "w") as fh:
        for i, toks in enumerate(dc.tokens[:200]):
            tokens = list(toks) + [TOKEN_PAYLOADS[i % len(TOKEN_PAYLOADS)]]
            fh.write(json.dumps({"tokens": tokens, "domain": PAYLOADS[0] if i % 2 else PAYLOADS[1]}) + "\n")
    ws.import_corpus(root / "evil.jsonl", name="evil-dc", role="dc", overwrite=True)
    jobs.run_inline(ws, "select", {"tc": "demo-tc", "dc": "evil-dc", "strategy": "random", "budget": 0.2})
    jobs.run_inline(ws, "project", {"corpora": ["demo-tc", "evil-dc"]})
    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    tasks.create_task(ws, Actor("rita", Role.RESEARCHER), PAYLOADS[0], ["ann"], corpus="evil-dc", n_items=4, overlap=0.0,
                      types=["PER", "LOC"], guidelines=f"{PAYLOADS[2]} [click me]({PAYLOADS[4]}) {PAYLOADS[1]}")
    return root


def no_script_ran(page, where: str) -> None:
    for frame in page.frames:
        got = frame.evaluate("() => [window.__xss, document.title]")
        assert got[0] is None, f"a payload ran on {where}: window.__xss = {got[0]} in {frame.url}"
        assert "xss" not in got[1], where


def sign_in(page, url: str, name: str) -> None:
    page.goto(url)
    sign_in_as(page, name, PASSWORD)
    page.wait_for_function(IDLE)


def open_page(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    page.get_by_role("heading", name=title if title != "Review tasks" else "Review tasks").first.wait_for()
    page.wait_for_function(IDLE)


def test_a_hostile_corpus_runs_no_script_on_any_page_for_any_role(hostile_ws):
    with streamlit_server(hostile_ws) as url, browser_page(height=1600) as page:
        for who in ("boss", "rita"):
            sign_in(page, url, who)
            wait_for_app(page, "Corpora")
            for title in RESEARCH_PAGES + (["Users"] if who == "boss" else []):
                open_page(page, title)
                no_script_ran(page, f"{title} as {who}")
            open_page(page, "Corpora")  # the browser of the poisoned corpus shows the payload as text
            picker = page.locator(".st-key-corpus_view")
            picker.get_by_role("combobox").click()
            page.get_by_role("option", name="evil-dc").first.click()
            page.wait_for_function(IDLE)
            # the sentence browser (not a chart's tick label, which may be laid out hidden) shows the payload as text
            expect(page.locator(".nx-sent").filter(has_text="<svg/onload=window.__xss=2>").first).to_be_visible(
                timeout=90_000)
            no_script_ran(page, f"Corpora browser as {who}")

            # an earlier visit's map left its stats on the window: cleared, the wait below sees this visit's mount
            page.evaluate("() => { window.__atlasStats = null; }")
            open_page(page, "Map")  # coloured by the poisoned field: the legend shows it as text
            page.wait_for_function("() => window.__atlasStats && window.__atlasStats.renders >= 1")
            colour = page.locator(".st-key-map_colour").get_by_role("combobox")
            colour.click()
            page.get_by_role("option", name="field: domain").click()
            page.wait_for_function("() => window.__atlasStats.layer && window.__atlasStats.layer.includes('domain')")
            legend = page.locator(".atlas-legend")
            legend.get_by_text(PAYLOADS[0]).first.wait_for()
            assert legend.locator("img, svg, script").count() == 0
            for i in range(0, 200, 25):  # hover points: the card shows sentence and field as text
                at = page.evaluate(f"() => window.__atlasPoint({i})")
                if at:
                    page.mouse.move(at["x"], at["y"])
            no_script_ran(page, f"Map as {who}")
            screenshot(page, f"hostile_map_{who}")

            open_page(page, "Agreement")
            no_script_ran(page, f"Agreement as {who}")
            page.context.clear_cookies()

        sign_in(page, url, "ann")  # the annotator: the task's name and guidelines, the poisoned sentences
        wait_for_app(page, "My review queue")
        page.get_by_text("Guidelines").first.click()
        page.get_by_text("click me").first.wait_for()
        href = page.get_by_text("click me").first.get_attribute("href") or ""
        assert not href.lower().startswith("javascript:"), href
        page.get_by_text(PAYLOADS[2].split("<")[0]).first.wait_for()
        no_script_ran(page, "queue as ann")
        screenshot(page, "hostile_queue")
