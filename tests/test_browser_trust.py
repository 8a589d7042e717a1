"""Issue 22 in a real browser: the Selection page's leakage panel reports planted TEST sentences, and the Results
page warns about an experiment whose MLM corpus held TEST text."""

from __future__ import annotations

import json

import pytest

from tests.browser import browser_page, screenshot, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def leaky_ws(tmp_path_factory):
    from core.data.demo import write_demo_workspace
    from core.data.stream import open_corpus_stream
    from core.runner import jobs, jobstore
    from core.selection.strategies import select

    root = tmp_path_factory.mktemp("leakyws")
    ws = write_demo_workspace(root, dc_size=300)
    test = ws.load_corpus(ws.corpus_for_role("test")).texts()
    (root / "leaky.txt").write_text("\n".join([*test[:3], "Ships left the harbour at dawn with the tide ."]) + "\n")
    ws.import_corpus(root / "leaky.txt", name="leaky-dc")
    select(ws.resolve_corpus("tc"), open_corpus_stream(ws, "leaky-dc"), "random", 1.0, workspace=ws,
           names={"tc": "tc", "dc": "leaky-dc"})
    exp = jobs.submit(ws, "experiment", {"domain": "music"}, start=False)
    leakage = {"dc": {"exact": 2, "near": 1, "threshold": 0.5, "per_against": {"test": {"exact": 2, "near": 1}}}}
    jobstore.update(ws, exp.id, status="done", progress=1.0, result=json.dumps(
        {"domain": "music", "cells": [{"row": "tapt", "seed": 1, "f1": 0.6}], "leakage": leakage}))
    return root


def test_leakage_panel_and_experiment_warning(leaky_ws):
    with streamlit_server(leaky_ws) as url, browser_page(height=1600) as page:
        page.goto(f"{url}/selection")
        wait_for_app(page, "Leakage: does this selection contain DEV/TEST sentences?")
        page.get_by_text("Leakage: does this selection contain DEV/TEST sentences?").click()
        page.locator("[class*='st-key-sel_leak_run'] button").click()
        wait_for_app(page, "3 exact and 0 near duplicates")
        screenshot(page, "selection_leakage")
        page.goto(f"{url}/results")
        wait_for_app(page, "holds 2 exact and 1 near duplicates of TEST sentences")
        screenshot(page, "results_leakage_warning")
