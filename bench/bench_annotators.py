"""Team annotation under load in a real browser: N annotators work one review task at once while a researcher
reloads the Review tasks page; is every save stored, counted and exported, and how long does "Save and next" take?

One `streamlit run app.py` (tests/browser.py, its own temporary demo workspace), one headless Chromium
(/usr/bin/chromium) driven by Playwright's async API: one browser context per annotator and one for the
researcher, all in one event loop (asyncio.gather), so the annotators click at the same time. Each run makes a
fresh task (`--sentences` DC sentences, `--overlap` reviewed twice, types PER/LOC/ORG) for annotators ann1..annN;
they sign in together, wait for one another, then each works through their queue: click their token, pick their
type, Assign type, Save and next. The save latency is the time from clicking "Save and next" until the
progress line shows the new count ("K of M sentences answered"); a save error is an error or exception shown
instead, or no new count within --save-timeout (the page is then reopened and the annotator goes on). The
researcher reloads /tasks (start to start) every --reload-s seconds while they work; a reload asks to sign in
again (the session lives in the server's session state), so each reload signs in as rita and waits for the
task's progress table.

Each annotator marks their own span: annotator k (0-based) the token k // 3 with type PER/LOC/ORG[k % 3], so
ann1-ann3 mark the first token, ann4-ann6 the second, ann7-ann9 the third; the two answers of an item reviewed
twice always differ (the task picks any two annotators for an item) and an answer written over another's row
would show. After
each run, core (not the browser) is checked: every save a browser saw confirmed is in the store
(tasks.queue / tasks.answers) with the span that browser marked, saved once (version 1); no stored answer holds
another annotator's span or was not made by that annotator's browser; tasks.progress counts equal the saves;
the CoNLL export (core.team.adjudicate.export_task) holds every item with one answer with its tags, and counts
each item with two (differing) answers as an open disagreement.

Usage: python bench/bench_annotators.py [--annotators 8] [--sentences 40] [--overlap 0.75] [--runs 4]
Smoke: python bench/bench_annotators.py --annotators 2 --sentences 6 --runs 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from _common import RESULTS, print_table, write_json

CHROMIUM = os.environ.get("NERSELECT_CHROMIUM", "/usr/bin/chromium")
PASSWORD = "correct horse battery"
TYPES = ["PER", "LOC", "ORG"]
# settled: the script is not running and no element of a previous run is left (Streamlit marks every element stale
# as soon as a widget asks for a rerun, until the new run draws it again)
SETTLED = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && !document.querySelector('[data-stale=\"true\"]')"
TASK_PICKED = "id => [...document.querySelectorAll(\"[class*='st-key-q_task'] input\")].some(e => e.value.includes(id))"
ERRORS = "[data-testid='stAlertContentError'], [data-testid='stException']"
HEADER = re.compile(r"Sentence (\d+) of (\d+)")
ANSWERED = re.compile(r"(\d+) of (\d+) sentences answered")


def annotator_mark(k: int) -> tuple[int, str]:
    """Annotator k's (0-based) token position and type: no two annotators mark the same span (in sentences of
    k // 3 + 1 tokens or more; a shorter one has its last token marked)."""
    return k // 3, TYPES[k % 3]


def marked_span(k: int, n_tokens: int):
    from core.data.tags import Span

    token, entity = annotator_mark(k)
    token = min(token, n_tokens - 1)
    return Span(token, token + 1, entity)


async def settled(page, timeout: float) -> None:
    await page.wait_for_function(SETTLED, timeout=timeout)


async def wait_for_app(page, text: str, timeout: float) -> None:
    """As tests.browser.wait_for_app: `text` visible and the script finished running."""
    await page.get_by_text(text, exact=False).first.wait_for(state="visible", timeout=timeout)
    await settled(page, timeout)


async def sign_in(page, name: str, timeout: float) -> None:
    await wait_for_app(page, "Sign in", timeout)
    await page.get_by_label("User name", exact=True).fill(name)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Sign in").click()


async def main_text(page) -> str:
    return await page.locator("[data-testid='stMainBlockContainer']").inner_text()


async def open_queue(page, url: str, who: str, task_id: str, timeout: float) -> int:
    """Sign in, wait for the queue of this run's task; the number of answers the page shows."""
    await page.goto(url)
    await sign_in(page, who, timeout)
    await wait_for_app(page, "My review queue", timeout)
    await page.wait_for_function(TASK_PICKED, arg=task_id, timeout=timeout)  # the picker shows this run's task (newest first)
    await page.get_by_text(ANSWERED).first.wait_for(timeout=timeout)
    await settled(page, timeout)
    m = ANSWERED.search(await main_text(page))
    return int(m.group(1)) if m else 0


async def annotator(browser, url: str, who: str, k: int, task_id: str, order: list[int], start: asyncio.Barrier,
                    timeout: float, save_timeout: float) -> dict:
    """One annotator's whole queue (`order`: the item indices in queue order); what each save did, as the browser saw it.

    Every step waits for the state the server draws, not for time: the item's token picker (its key names the item),
    the chosen type button, the span drawn in the sentence, then the new count; a click is made only once the page
    has settled (no element of the previous run left, not running), so each click reaches the run that drew it."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1400})
    page = await context.new_page()
    page.set_default_timeout(timeout * 1000)
    n_items, saves, errors, stopped, ms = len(order), [], [], None, timeout * 1000
    entity = annotator_mark(k)[1]
    card = page.locator("[class*='st-key-q_card']")
    failed = page.locator(ERRORS)
    try:
        try:
            answered = await open_queue(page, url, who, task_id, ms)
        finally:
            await start.wait()  # every annotator signed in (or failed to): they work at once
        position = await shown_position(page)
        attempts = 0
        while answered < n_items and attempts < n_items + 5:
            attempts += 1
            if not 1 <= position <= n_items:
                raise RuntimeError(f"the page shows sentence {position} of a queue of {n_items}")
            pills = page.locator(f"[class*='st-key-q_tokens_q_draft_{task_id}_{order[position - 1]}_']")
            await pills.first.wait_for(state="visible", timeout=ms)  # this item's token picker, drawn by the server
            await settled(page, ms)
            buttons = pills.locator("button")
            at = marked_span(k, await buttons.count()).start
            token = buttons.nth(at)
            label = await token.inner_text()
            await token.click()
            await pills.locator("button[aria-pressed='true']").first.wait_for(timeout=ms)  # the picked token (in the page)
            kind = page.locator("[class*='st-key-q_type'] button", has_text=entity).first
            if await kind.get_attribute("kind") != "primary":  # the type stays chosen from one sentence to the next
                await settled(page, ms)
                await kind.click()
                await page.locator("[class*='st-key-q_type'] button[kind='primary']", has_text=entity).first.wait_for(timeout=ms)
            await settled(page, ms)
            await page.locator("[class*='st-key-q_assign'] button").first.click()
            drawn = card.locator(f".nx-sent .nx-ent[title='{entity} [{at}:{at + 1}]']")
            await drawn.or_(failed).first.wait_for(state="visible", timeout=ms)
            await settled(page, ms)
            if await failed.count():
                errors.append({"position": position, "label": label, "step": "assign",
                               "error": (await failed.first.inner_text())[:300]})
                answered = await open_queue(page, url, who, task_id, ms)
                position = await shown_position(page)
                continue
            shown = page.get_by_text(f"{answered + 1} of {n_items} sentences answered", exact=True)
            t0 = time.perf_counter()
            await page.locator("[class*='st-key-q_save'] button").first.click()
            try:
                await shown.or_(failed).first.wait_for(state="visible", timeout=save_timeout * 1000)
                latency = time.perf_counter() - t0
                error = (await failed.first.inner_text())[:300] if await failed.count() else None
            except Exception as exc:  # a timeout (or a page gone) is a save error; the run goes on
                latency, error = time.perf_counter() - t0, f"no new count within {save_timeout:.0f} s: {type(exc).__name__}"
            if error is None:
                answered += 1
                saves.append({"position": position, "token": at, "label": label, "type": entity, "latency_s": latency})
                position += 1  # the queue moves to the next unanswered sentence: the next one, in a fresh task
                continue
            errors.append({"position": position, "label": label, "step": "save", "error": error, "after_s": latency})
            answered = await open_queue(page, url, who, task_id, ms)  # reopen the queue (signing in again) and go on
            position = await shown_position(page)
    except Exception as exc:  # an annotator who cannot go on is reported; the other annotators go on
        stopped = f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        await context.close()
    return {"who": who, "k": k, "type": entity, "saves": saves, "errors": errors, "stopped": stopped}


async def shown_position(page) -> int:
    """The sentence a settled queue page shows (1-based); 0 when none."""
    head = HEADER.search(await main_text(page))
    return int(head.group(1)) if head else 0


async def researcher(browser, url: str, task_id: str, done: asyncio.Event, every_s: float, timeout: float) -> dict:
    """Reload /tasks every `every_s` seconds (start to start) until `done`; each reload signs in again."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1400})
    page = await context.new_page()
    page.set_default_timeout(timeout * 1000)
    loads, errors, ms = [], [], timeout * 1000
    try:
        while not done.is_set():
            t0 = time.perf_counter()
            try:
                await page.goto(f"{url}/tasks")
                await sign_in(page, "rita", ms)
                await wait_for_app(page, "Review tasks", ms)
                await page.get_by_text(task_id).first.wait_for(timeout=ms)
                await settled(page, ms)
                if await page.locator(ERRORS).count():
                    errors.append((await page.locator(ERRORS).first.inner_text())[:300])
                loads.append(time.perf_counter() - t0)
            except Exception as exc:  # counted; the annotators' run goes on
                if not done.is_set():
                    errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            try:
                await asyncio.wait_for(done.wait(), timeout=max(0.0, every_s - (time.perf_counter() - t0)))
            except asyncio.TimeoutError:
                pass
    finally:
        await context.close()
    return {"reloads": len(loads), "load_s": loads, "errors": errors}


async def browse_run(browser, url: str, task_id: str, names: list[str], queues: dict[str, list[int]], args) -> tuple[list[dict], dict]:
    start = asyncio.Barrier(len(names))
    done = asyncio.Event()
    watcher = asyncio.create_task(researcher(browser, url, task_id, done, args.reload_s, args.timeout))
    try:
        results = await asyncio.gather(*(annotator(browser, url, who, k, task_id, queues[who], start, args.timeout,
                                                   args.save_timeout) for k, who in enumerate(names)))
    finally:
        done.set()
    return list(results), await watcher


def parse_conll(data: bytes) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    out, toks, tags = [], [], []
    for line in data.decode("utf-8").split("\n"):
        if not line.strip():
            if toks:
                out.append((tuple(toks), tuple(tags)))
            toks, tags = [], []
            continue
        tok, tag = line.rsplit("\t", 1)
        toks.append(tok)
        tags.append(tag)
    if toks:
        out.append((tuple(toks), tuple(tags)))
    return out


def check_run(ws, task_id: str, browsed: list[dict]) -> dict:
    """Core's view of the run against what the browsers saw confirmed."""
    from core.access import Actor, Role
    from core.data.tags import tags_from_spans
    from core.errors import UserError
    from core.team import adjudicate, tasks

    rita = Actor("rita", Role.RESEARCHER)
    got = tasks.answers(ws, rita, task_id)
    progress = {r["annotator"]: r for r in tasks.progress(ws, rita, task_id)}
    lost, overwritten, unconfirmed, twice, label_mismatch, progress_off, problems = 0, 0, 0, 0, 0, 0, []
    for b in browsed:
        who = b["who"]
        queue = tasks.queue(ws, rita, task_id, who)
        seen = Counter(s["position"] for s in b["saves"])
        if again := sum(n - 1 for n in seen.values()):
            twice += again
            problems.append(f"{who}: {again} sentences saved twice (the page showed an answered one again)")
        for s in b["saves"]:
            item = queue[s["position"] - 1] if 1 <= s["position"] <= len(queue) else None
            span = marked_span(b["k"], len(item.tokens)) if item else None
            if item is None or item.status != "done" or item.spans != [span] or got.get(item.index, {}).get(who) != [span]:
                lost += 1
                problems.append(f"{who} sentence {s['position']}: saved {span}, stored "
                                f"{None if item is None else (item.status, item.spans)}")
            elif s["label"].split(" ·")[0] != item.tokens[span.start]:
                label_mismatch += 1  # the browser marked a sentence other than the one stored at that position
                problems.append(f"{who} sentence {s['position']}: clicked {s['label']!r}, the item's token is "
                                f"{item.tokens[span.start]!r}")
        for p, item in enumerate(queue, 1):
            if item.status is None:
                continue
            span = marked_span(b["k"], len(item.tokens))
            if item.spans != [span] or item.version != 1:
                overwritten += 1  # another annotator's span in this row, or the row written more than once
                problems.append(f"{who} sentence {p}: stored {item.spans} version {item.version}, expected [{span}] version 1")
            if p not in seen:
                unconfirmed += 1  # stored, though this browser saw an error or no new count
        if progress.get(who, {}).get("done") != len(b["saves"]):
            progress_off += 1
            problems.append(f"{who}: progress says {progress.get(who, {}).get('done')} done, the browser saved {len(b['saves'])}")
    # the export: items every assigned annotator answered (or skipped), alike, with their tags, in task order;
    # differing pairs and those still waiting for a second answer left out
    tokens = tasks.item_tokens(ws, task_id)
    pending = Counter(q.index for b in browsed for q in tasks.queue(ws, rita, task_id, b["who"]) if q.status is None)
    expected = [(tuple(tokens[i]), tuple(tags_from_spans(next(iter(got[i].values())), len(tokens[i]))))
                for i in tokens if i in got and not pending[i] and len({tuple(sorted(v)) for v in got[i].values()}) == 1]
    differing = sum(1 for i in got if len({tuple(sorted(v)) for v in got[i].values()}) > 1)
    try:
        data, report = adjudicate.export_task(ws, rita, task_id)
        exported = parse_conll(data)
    except UserError:  # nothing settled (no answers at all)
        exported, report = [], {"open_disagreements": 0}
    missing_export = sum((Counter(expected) - Counter(exported)).values())
    extra_export = sum((Counter(exported) - Counter(expected)).values())
    if report["open_disagreements"] != differing:
        problems.append(f"export: {report['open_disagreements']} open disagreements, expected {differing}")
    if missing_export or extra_export:
        problems.append(f"export: {missing_export} expected sentences missing, {extra_export} unexpected")
    stored = sum(len(v) for v in got.values())
    return {"stored": stored, "lost": lost, "overwritten": overwritten, "saved_twice": twice, "label_mismatch": label_mismatch,
            "unconfirmed_stored": unconfirmed, "progress_mismatch": progress_off, "exported": len(exported),
            "export_missing": missing_export, "export_unexpected": extra_export, "open_disagreements": report["open_disagreements"],
            "expected_disagreements": differing, "problems": problems}


def pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


async def bench(args) -> dict:
    from playwright.async_api import async_playwright

    from core.access import Actor, Role
    from core.data.demo import write_demo_workspace
    from core.data.workspace import CorpusRole
    from core.team import tasks, users
    from tests.browser import CHROMIUM_ARGS, streamlit_process

    tmp = Path(tempfile.mkdtemp(prefix="bench-annotators-"))
    try:
        ws = write_demo_workspace(tmp / "ws", dc_size=max(200, args.sentences))
        dc = ws.roles()[CorpusRole.DC]
        names = [f"ann{k}" for k in range(1, args.annotators + 1)]
        users.add_user(ws, "rita", "researcher", PASSWORD)
        for who in names:
            users.add_user(ws, who, "annotator", PASSWORD)
        rita = Actor("rita", Role.RESEARCHER)
        runs = []
        with streamlit_process(ws.root, timeout=120) as (_, url):
            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    for run in range(1, args.runs + 1):
                        task = tasks.create_task(ws, rita, f"load test run {run}", names, corpus=dc, n_items=args.sentences,
                                                 overlap=args.overlap, types=TYPES, seed=run)
                        queues = {who: [q.index for q in tasks.queue(ws, rita, task.id, who)] for who in names}
                        t0 = time.perf_counter()
                        browsed, watched = await browse_run(browser, url, task.id, names, queues, args)
                        wall = time.perf_counter() - t0
                        checked = check_run(ws, task.id, browsed)
                        assigned = sum(len(q) for q in queues.values())
                        runs.append({"run": run, "task": task.id, "items": task.items, "assigned": assigned,
                                     "wall_s": wall, "browsers": browsed, "researcher": watched, "check": checked})
                        lat = [s["latency_s"] for b in browsed for s in b["saves"]]
                        print(f"run {run}: {len(lat)} saves of {assigned} assigned in {wall:.0f} s, "
                              f"{sum(len(b['errors']) for b in browsed)} save errors, {checked['lost']} lost, "
                              f"{watched['reloads']} researcher reloads", flush=True)
                finally:
                    await browser.close()
        return {"runs": runs}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, default=8, help="annotators working the task at once (ann1..annN)")
    ap.add_argument("--sentences", type=int, default=40, help="DC sentences in each run's task")
    ap.add_argument("--overlap", type=float, default=0.75, help="share of the sentences reviewed by two annotators")
    ap.add_argument("--runs", type=int, default=4, help="runs, each on a fresh task (same server and browser)")
    ap.add_argument("--reload-s", type=float, default=3.0, help="the researcher reloads /tasks this often (start to start)")
    ap.add_argument("--save-timeout", type=float, default=60.0, help="seconds a save may take before it counts as an error")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds any other wait on the page may take")
    ap.add_argument("--out", type=Path, default=RESULTS / "annotators.json", help="where the JSON goes")
    args = ap.parse_args()
    if args.annotators < 1 or args.sentences < 1 or args.runs < 1:
        raise SystemExit("--annotators, --sentences and --runs must be at least 1")
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM} (set NERSELECT_CHROMIUM)")

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    result = asyncio.run(bench(args))
    wall = time.perf_counter() - t0
    load_after = os.getloadavg()

    runs = result["runs"]
    rows, all_lat = [], []
    for r in runs:
        c, lat = r["check"], [s["latency_s"] for b in r["browsers"] for s in b["saves"]]
        all_lat += lat
        rows.append({"run": r["run"], "annotators": args.annotators, "assigned": r["assigned"], "saves": len(lat),
                     "stored": c["stored"], "lost": c["lost"], "overwritten": c["overwritten"],
                     "save_errors": sum(len(b["errors"]) for b in r["browsers"]),
                     "stopped": sum(1 for b in r["browsers"] if b["stopped"]), "progress_off": c["progress_mismatch"],
                     "export_missing": c["export_missing"], "reloads": r["researcher"]["reloads"],
                     "reload_errors": len(r["researcher"]["errors"]), "median_s": pct(lat, 50), "p95_s": pct(lat, 95)})
    keys = ("assigned", "saves", "stored", "lost", "overwritten", "save_errors", "stopped", "progress_off", "export_missing",
            "reloads", "reload_errors")
    total = {"run": "all", "annotators": args.annotators, **{k: sum(r[k] for r in rows) for k in keys},
             "median_s": pct(all_lat, 50), "p95_s": pct(all_lat, 95)}
    print_table(rows + [total], f"Team annotation in the browser: {args.annotators} annotators, {args.sentences} sentences, "
                                f"overlap {args.overlap}, {args.runs} runs, researcher reloading /tasks every {args.reload_s:g} s "
                                f"({os.cpu_count()} cores)")
    problems = [f"run {r['run']}: {p}" for r in runs for p in r["check"]["problems"]]
    problems += [f"run {r['run']} {b['who']}: {e['error']}" for r in runs for b in r["browsers"] for e in b["errors"]]
    problems += [f"run {r['run']} {b['who']} stopped: {b['stopped']}" for r in runs for b in r["browsers"] if b["stopped"]]
    problems += [f"run {r['run']} researcher: {e}" for r in runs for e in r["researcher"]["errors"]]
    for line in problems[:30]:
        print("  " + line)
    intact = all(not r["check"]["problems"] for r in runs)  # lost, overwritten, progress or export off, a wrong sentence
    complete = total["saves"] == total["assigned"] and not total["stopped"]
    print(f"\n{total['saves']} saves, {total['lost']} lost, {total['overwritten']} overwritten, {total['save_errors']} save errors; "
          f"every confirmed save in the store, the progress counts and the export: {'yes' if intact else 'NO'}; "
          f"every assigned sentence saved: {'yes' if complete else 'NO'}; "
          + (f"'Save and next' {total['median_s']:.2f} s median / {total['p95_s']:.2f} s p95" if all_lat
             else "'Save and next' latency: none (nothing was saved)"))
    reloads = [x for r in runs for x in r["researcher"]["load_s"]]
    if reloads:
        print(f"researcher: {len(reloads)} reloads of /tasks (each signing in again), {pct(reloads, 50):.2f} s median / "
              f"{pct(reloads, 95):.2f} s p95 until the task's progress was drawn")
    payload = {"annotators": args.annotators, "sentences": args.sentences, "overlap": args.overlap, "runs_requested": args.runs,
               "reload_s": args.reload_s, "save_timeout_s": args.save_timeout, "cores": os.cpu_count(),
               "other_load": "unknown: whatever else ran on the machine was not recorded; the load averages (1, 5, 15 min) "
                             "before and after the bench are the only hint",
               "loadavg_before": load_before, "loadavg_after": load_after, "wall_s": wall,
               "marks": {f"ann{k + 1}": {"token": annotator_mark(k)[0], "type": annotator_mark(k)[1]} for k in range(args.annotators)},
               "intact": intact, "complete": complete, "rows": rows + [total],
               "save_latency_s": {"median": total["median_s"], "p95": total["p95_s"], "all": all_lat},
               "researcher_reload_s": {"median": pct(reloads, 50), "p95": pct(reloads, 95), "all": reloads},
               "problems": problems, "per_run": runs}
    if args.out.resolve() == (RESULTS / "annotators.json").resolve():
        write_json("annotators", payload)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"bench": "annotators", "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                        "machine": platform.machine(), "python": platform.python_version(), **payload},
                                       indent=2, default=float))
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
