"""Regenerate the README's screenshots of Inspect, Map and Runs (docs/screenshots/*.png).

    python scripts/screenshots.py                      # a fresh demo workspace in a temp folder (a few minutes on CPU)
    python scripts/screenshots.py --workspace DIR      # reuse (and fill in) a workspace
    python scripts/screenshots.py --out docs/screenshots

It prepares the workspace through the same background jobs the app starts (a DSIR selection,
its map, a NER model with the `tiny` preset on the default encoder, its predictions over DC),
adds a few review decisions, then drives the real app in Debian's Chromium with Playwright
(tests/browser.py), so the pictures show what a user sees.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WIDTH, HEIGHT = 1400, 1100


def _run(ws, kind: str, params: dict, what: str) -> dict:
    """Submit a background job (so Runs lists it) and wait for it, printing its progress."""
    from core.runner import jobs

    job = jobs.submit(ws, kind, params)
    print(f"{what}: job {job.id}", flush=True)
    done = jobs.wait(ws, job.id, timeout=1800)
    if done.status != "done":
        raise SystemExit(f"error: {what} {done.status}: {done.error or done.message}")
    return done.result or {}


def prepare(root: Path, dc_size: int) -> None:
    from core.data.demo import write_demo_workspace
    from core.data.selection_store import list_selections
    from core.review.predictions import list_ner_models, prediction_request
    from core.review.store import ReviewStore
    from core.selection.atlas import find_atlas

    ws = write_demo_workspace(root, dc_size=dc_size)
    if not list_selections(ws):
        _run(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": "dsir", "budget": 0.2, "seed": 0}, "selection")
    if find_atlas(ws, ["demo-tc", "demo-dc"]) is None:
        _run(ws, "project", {"corpora": ["demo-tc", "demo-dc"], "model": "default"}, "map")
    if not list_ner_models(ws):
        _run(ws, "ner", {"train": "demo-lc", "dev": "demo-dev", "test": "demo-test", "model": "default", "preset": "tiny"},
             "NER training (tiny preset)")
    model = str(list_ner_models(ws)[0])
    req = prediction_request(ws, model, "demo-dc")
    if not req.done:
        from core.review.predictions import predict_job_params

        _run(ws, "predict", predict_job_params(ws, req), "predictions over DC")
    store = ReviewStore(ws, req.review_key)
    if not store.items():
        from core.review.predictions import load_predictions, row_spans

        rows = sorted(load_predictions(req), key=lambda r: -len(r.get("spans") or []))[:3]
        store.save(rows[0]["index"], "accepted", rows[0]["tokens"], row_spans(rows[0]), 0, reviewer="ann")
        store.save(rows[1]["index"], "rejected", rows[1]["tokens"], [], 0, reviewer="bob")
        fixed = row_spans(rows[2])[1:]
        store.save(rows[2]["index"], "corrected", rows[2]["tokens"], fixed, 0, reviewer="ann")


def _idle(page) -> None:
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000)


def shoot(root: Path, out: Path) -> list[Path]:
    from tests.browser import browser_page, streamlit_server, wait_for_app

    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with streamlit_server(root) as url, browser_page(WIDTH, HEIGHT) as page:
        page.set_viewport_size({"width": WIDTH, "height": 2000})  # the app scrolls inside its own container: fit it all
        page.goto(f"{url}/inspect")
        wait_for_app(page, "sentences reviewed", timeout=180_000)
        page.get_by_role("button", name="Correct", exact=True).nth(2).click()
        page.locator("[class*='st-key-insp_tokens_']").first.wait_for()
        _idle(page)
        page.locator("[class*='st-key-insp_tokens_'] button").nth(0).click()
        _idle(page)
        shots.append(out / "inspect.png")  # from the top: progress per annotator, coloured review cards, the open editor
        page.screenshot(path=str(shots[-1]), full_page=False)
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

        page.goto(f"{url}/map")
        wait_for_app(page, "Colour by", timeout=180_000)
        page.locator(".js-plotly-plot .nsewdrag").first.wait_for(state="visible")
        _idle(page)
        from tests.test_browser_pages import _point_position

        pos = _point_position(page, "TC")
        page.mouse.click(pos["x"], pos["y"])
        page.get_by_text("closest points").first.wait_for(timeout=120_000)
        _idle(page)
        shots.append(out / "map.png")
        page.set_viewport_size({"width": WIDTH, "height": 1500})
        page.screenshot(path=str(shots[-1]), full_page=False)
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

        page.goto(f"{url}/runs")
        wait_for_app(page, "Jobs", timeout=180_000)
        page.locator("[data-testid='stDataFrame']").first.wait_for()
        _idle(page)
        page.get_by_text("Jobs", exact=True).first.scroll_into_view_if_needed()
        page.mouse.wheel(0, 250)
        _idle(page)
        shots.append(out / "runs.png")
        page.screenshot(path=str(shots[-1]), full_page=False)
    return shots


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, help="workspace folder to use (default: a fresh temporary demo)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--dc-size", type=int, default=1200, help="demo DC size when the demo is generated (default 1200)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nerselect-shots-") as tmp:
        root = args.workspace or Path(tmp) / "ws"
        prepare(root, args.dc_size)
        for path in shoot(root, args.out):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
