"""Issue 47 in a real browser: the first of two identical words is the one marked, in the annotator's queue, the
Agreement page's adjudication editor and Inspect's span editor (the token pickers once mapped a label back to the
last token with that text); and signing in as each role while a job runs opens the role's page (the sidebar's link
to Runs once named a page before the pages were registered, leaving an empty page)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from core.access import Actor, Role
from core.data.tags import Span
from core.data.workspace import Workspace
from core.review.store import ReviewStore
from core.runner import jobs, jobstore
from core.team import tasks
from tests.browser import IDLE, browser_page, screenshot, sign_in_as, streamlit_server, wait_for_app, wait_for_span, wait_until

pytestmark = pytest.mark.browser
PASSWORD = "correct horse"
SENTENCE = "The paper won the best paper award ."


@pytest.fixture(scope="module")
def paper_ws(tmp_path_factory):
    """Demo workspace, a corpus whose first sentence repeats "paper", a tiny NER model's predictions on it, four
    accounts (one per role) and a task giving that corpus to two annotators."""
    from core.data.demo import write_demo_workspace
    from core.review import predictions as insp
    from core.team import users
    from core.train.ner_train import preset_config, train_ner
    from tests.tiny_models import build_tiny_bert

    root = tmp_path_factory.mktemp("paperws")
    ws = write_demo_workspace(root, dc_size=200)
    (root / "paper.txt").write_text(f"{SENTENCE}\nMary visited Berlin today .\n")
    ws.import_corpus(root / "paper.txt", name="paper")
    lc = ws.load_corpus("demo-lc")
    base = build_tiny_bert(root / "tinybase", [" ".join(t) for t in lc.tokens] + [SENTENCE])
    model_dir = ws.runs_dir / "tiny-ner" / "model"
    train_ner(lc, ws.load_corpus("demo-dev").subset(range(20)), str(base), model_dir, preset_config("tiny", epochs=1))
    insp.predict_cached(ws, insp.prediction_request(ws, str(model_dir), "paper"))
    for name, role in (("boss", "admin"), ("rita", "researcher"), ("ann", "annotator"), ("bob", "annotator")):
        users.add_user(ws, name, role, PASSWORD)
    tasks.create_task(ws, Actor("rita", Role.RESEARCHER), "papers", ["ann", "bob"], corpus="paper", overlap=1.0,
                      types=["PER", "LOC", "ORG"])
    return root, str(model_dir)


def sign_in(page, name: str) -> None:
    sign_in_as(page, name, PASSWORD)


def click_token(page, grid: str, label: str) -> None:
    """Pick a token and wait until the grid shows it picked (aria-pressed): state, not time."""
    page.locator(f"[class*='{grid}'] button", has_text=label).first.click()
    expect(page.locator(f"[class*='{grid}'] button[aria-pressed='true']", has_text=label).first).to_be_visible(timeout=90_000)
    page.wait_for_function(IDLE)


def nothing_picked(page, grid: str) -> None:
    """Wait until an Assign or Remove has cleared the grid's picked tokens: on a loaded machine a token picked before
    that rerun is drawn would still carry the old selection with it."""
    expect(page.locator(f"[class*='{grid}'] button[aria-pressed='true']")).to_have_count(0, timeout=90_000)
    page.wait_for_function(IDLE)


def test_the_first_of_two_identical_words_is_marked(paper_ws):
    root, model = paper_ws
    ws = Workspace(root)
    task = tasks.list_tasks(ws, Actor("rita", Role.RESEARCHER))[0]
    with streamlit_server(root) as url, browser_page(height=1600) as page:
        # the queue: ann the first paper, waiting for each click's run; bob the second, as a quick annotator clicks
        # type, Assign and Save without waiting (clicks merged into one run once stored his sentence without its span)
        for who, label in (("ann", "paper ·2"), ("bob", "paper ·6")):
            page.goto(url)
            sign_in(page, who)
            wait_for_app(page, "Sentence 1 of 2")
            click_token(page, "st-key-q_tokens", label)
            page.locator("[class*='st-key-q_type'] button", has_text="ORG").first.click()
            page.locator("[class*='st-key-q_assign'] button").first.click()
            if who == "ann":
                wait_for_span(page, "q_card", "paper")
            page.locator("[class*='st-key-q_save'] button").first.click()
            wait_for_app(page, "1 of 2 sentences answered")
            page.context.clear_cookies()
        got = tasks.answers(ws, Actor("rita", Role.RESEARCHER), task.id)[0]
        assert got == {"ann": [Span(1, 2, "ORG")], "bob": [Span(5, 6, "ORG")]}

        page.goto(f"{url}/agreement")  # adjudication: a final span on the first paper
        sign_in(page, "rita")
        wait_for_app(page, "where annotators differ")
        item = page.locator("[class*='st-key-agr_item_0_']")
        item.get_by_text("Edit the final spans").click()
        click_token(page, "st-key-agr_tok_0_", "paper ·6")  # ann's span is the draft: first clear it, then mark
        page.locator("[class*='st-key-agr_remove_0_'] button").click()
        nothing_picked(page, "st-key-agr_tok_0_")
        click_token(page, "st-key-agr_tok_0_", "paper ·2")
        page.locator("[class*='st-key-agr_type_0_'] button", has_text="PER").first.click()
        page.wait_for_function(IDLE)
        page.locator("[class*='st-key-agr_assign_0_'] button").click()
        nothing_picked(page, "st-key-agr_tok_0_")
        page.locator("[class*='st-key-agr_save_0_'] button").click()
        wait_for_app(page, "decided (rita)")
        from core.team import adjudicate

        decided = {i.index: i.adjudicated for i in adjudicate.disagreements(ws, Actor("rita", Role.RESEARCHER), task.id)}
        assert decided[0] == [Span(1, 2, "PER")]

        page.goto(f"{url}/inspect?insp_corpus=paper&insp_model={model}")  # Inspect: correct a prediction
        sign_in(page, "rita")
        wait_for_app(page, "sentences reviewed")
        page.locator("[class*='st-key-correct_0'] button").click()
        grid = "st-key-insp_tokens_0_"
        page.locator(f"[class*='{grid}']").first.wait_for()
        click_token(page, grid, "paper ·2")
        page.get_by_role("textbox", name="or a new type").fill("work")
        page.get_by_role("textbox", name="or a new type").press("Enter")
        page.wait_for_function(IDLE)
        page.get_by_role("button", name="Assign type").click()
        page.locator("[class*='st-key-insp_editor_'] .nx-lbl", has_text="work").first.wait_for()
        page.get_by_role("button", name="Save correction").click()
        page.locator("[class*='st-key-insp_card_corrected_']").first.wait_for()
        screenshot(page, "inspect_repeated_word")
        from core.review import predictions as insp

        req = insp.prediction_request(ws, model, "paper")
        spans = ReviewStore(ws, req.review_key).get(0).spans
        assert Span(1, 2, "work") in spans and not any(s.start <= 5 < s.end and s.type == "work" for s in spans)


def test_each_role_signs_in_while_a_job_runs(paper_ws):
    root, _ = paper_ws
    ws = Workspace(root)
    job = jobs.submit(ws, "sleep", {"steps": 2000, "seconds": 0.1})
    try:
        assert wait_until(lambda: jobstore.get_job(ws, job.id).status == "running", timeout=120)
        with streamlit_server(root) as url, browser_page() as page:
            for who, expect in (("boss", "Corpora"), ("rita", "Corpora"), ("ann", "My review queue")):
                page.goto({"boss": f"{url}/corpora", "rita": f"{url}/runs", "ann": url}[who])  # /corpora: issue 43.9
                wait_for_app(page, "Sign in")  # drawn: a body read right after goto checks nothing
                assert "Page not found" not in page.inner_text("body")
                sign_in(page, who)
                wait_for_app(page, "Runs" if who == "rita" else expect)
                body = page.inner_text("body")
                assert "StreamlitAPIException" not in body and "different page is registered" not in body, (who, body[:800])
                if who != "ann":
                    page.get_by_text("Open the jobs on Runs").first.wait_for()  # the badge and its link are drawn
                    assert "running" in page.inner_text("[data-testid='stSidebar']")
                page.context.clear_cookies()
                page.goto("about:blank")
    finally:
        jobs.cancel(ws, job.id)


def test_a_task_with_suggestions_is_annotated_in_the_browser(paper_ws):
    """Issue 43.6: the model's spans are pre-filled and drawn apart (dashed, '?') from the annotator's own; rejecting
    them empties the answer; a range is marked with two clicks (its first and last token); only the saved answer is
    stored."""
    from tests.tiny_models import build_rigged_ner

    root, _ = paper_ws
    ws = Workspace(root)
    rigged = build_rigged_ner(root / "rigged-ner", root / "tinybase", "LOC")  # S-LOC on every word
    task = tasks.create_task(ws, Actor("rita", Role.RESEARCHER), "suggested papers", ["ann"], corpus="paper",
                             overlap=0.0, types=["PER", "LOC", "ORG"], suggest_model=str(rigged))
    n_tokens = len(SENTENCE.split())
    with streamlit_server(root) as url, browser_page(height=1600) as page:
        page.goto(url)
        sign_in(page, "ann")
        wait_for_app(page, "suggested by")
        card = "[class*='st-key-q_card']"
        spans, dashed = (page.locator(f"{card} .nx-sent:not(.nx-legend) {c}") for c in (".nx-ent", ".nx-sug"))
        expect(dashed).to_have_count(n_tokens, timeout=90_000)  # every suggestion dashed, none solid
        screenshot(page, "queue_suggestions")
        page.locator("[class*='st-key-q_reject'] button").click()
        expect(spans).to_have_count(0, timeout=90_000)  # waits for the rerun to draw the sentence without them
        page.wait_for_function(IDLE)
        click_token(page, "st-key-q_tokens", "best")  # a range with two clicks: "best paper award"
        click_token(page, "st-key-q_tokens", "award")
        page.locator("[class*='st-key-q_type'] button", has_text="ORG").first.click()
        page.wait_for_function(IDLE)
        page.locator("[class*='st-key-q_assign'] button").first.click()
        expect(spans).to_have_count(1, timeout=90_000)
        expect(dashed).to_have_count(0, timeout=90_000)
        page.wait_for_function(IDLE)
        page.locator("[class*='st-key-q_save'] button").first.click()
        wait_for_app(page, "1 of 2 sentences answered")
    item = next(i for i in tasks.queue(ws, Actor("ann", Role.ANNOTATOR), task.id) if i.position == 0)
    assert item.spans == [Span(4, 7, "ORG")] and len(item.suggested) == n_tokens
