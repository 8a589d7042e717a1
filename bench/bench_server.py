"""Is the app a server you can leave running? Its CPU use idle and while a job runs, and what an
open page costs a running job.

Starts the app as README does (`streamlit run app.py` from the checkout, so .streamlit/config.toml
applies: 127.0.0.1, no file watcher) on a free port with its own temporary demo workspace, and
measures the server process's CPU seconds (utime + stime from /proc) in four phases:

  idle            no page, no job
  idle + page     a headless Chromium page open on Runs (Playwright, /usr/bin/chromium)
  job             an embedding job (the demo DC, MiniLM, a CPU-bound job) running, no page
  job + page      the same job with the Runs page open (its panels poll while the job runs)

The job is submitted by this script (core.jobs.submit, as the app does) and its throughput is
sentences per second from its own start/finish times; the embedding cache is cleared between
the two job phases. Targets (issue 10): idle < 0.02 CPU-s/s; the page costs the job <= 5%.

Usage: python bench/bench_server.py [--duration 60] [--sentences 3000]
Smoke: python bench/bench_server.py --duration 5 --sentences 200
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("NERSELECT_CHROMIUM", "/usr/bin/chromium")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (the Streamlit server; job processes are not its children here)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def app_server(workspace: Path):
    """The app as the browser tests start it (tests/browser.py), given two minutes to come up."""
    from tests.browser import streamlit_process

    return streamlit_process(workspace, timeout=120)


@contextmanager
def open_page(url: str):
    """A headless Chromium tab on `url`, left open (the app's fragments keep polling)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(url)
            page.get_by_text("Start NER training").first.wait_for()
            yield page
        finally:
            browser.close()


def measure_idle(pid: int, seconds: float) -> float:
    time.sleep(min(5.0, seconds))  # let the last page load / rerun settle
    c0, t0 = cpu_seconds(pid), time.time()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.time() - t0)


def run_job(ws, pid: int, corpus: str) -> dict[str, float]:
    """Submit an embedding of `corpus` (cache cleared first); server CPU-s/s while it ran, job sentences/s."""
    from core import jobs
    from core.embed import ARTIFACT

    shutil.rmtree(ws.root / "artifacts" / ARTIFACT, ignore_errors=True)
    n = ws.corpus_info(corpus).sentences
    job = jobs.submit(ws, "embed", {"corpus": corpus, "model": "default"})
    while jobs.get_job(ws, job.id).status == "queued":
        time.sleep(0.1)
    c0, t0 = cpu_seconds(pid), time.time()
    done = jobs.wait(ws, job.id, timeout=3600, poll=0.5)
    wall = time.time() - t0
    if done.status != "done":
        raise SystemExit(f"the benchmark job {done.status}: {done.error}")
    return {"server_cpu_s_per_s": (cpu_seconds(pid) - c0) / wall,
            "job_sentences_per_s": n / max(1e-9, done.finished - done.started), "job_s": done.finished - done.started}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60, help="seconds of each idle phase")
    ap.add_argument("--sentences", type=int, default=3000, help="DC sentences the benchmark job embeds")
    args = ap.parse_args()
    from core.demo import write_demo_workspace
    from core.workspace import Role

    tmp = Path(tempfile.mkdtemp(prefix="bench-server-"))
    try:
        ws = write_demo_workspace(tmp / "ws", dc_size=args.sentences)
        dc = ws.roles()[Role.DC]
        rows = []
        with app_server(ws.root) as (proc, url):
            pid = proc.pid
            rows.append({"phase": "idle", "server_cpu_s_per_s": measure_idle(pid, args.duration)})
            with open_page(f"{url}/runs"):
                rows.append({"phase": "idle + page", "server_cpu_s_per_s": measure_idle(pid, args.duration)})
            time.sleep(2)  # the tab's websocket closed
            rows.append({"phase": "job", **run_job(ws, pid, dc)})
            with open_page(f"{url}/runs"):
                rows.append({"phase": "job + page", **run_job(ws, pid, dc)})
        keys = ("phase", "server_cpu_s_per_s", "server_cpu_s_per_min", "job_sentences_per_s", "job_s")
        rows = [{k: r.get(k, r["server_cpu_s_per_s"] * 60 if k == "server_cpu_s_per_min" else "") for k in keys} for r in rows]
        base, paged = rows[2]["job_sentences_per_s"], rows[3]["job_sentences_per_s"]
        loss = 1 - paged / base
        print_table(rows, f"Server CPU and job throughput ({args.duration:.0f}s idle phases, {args.sentences} sentences "
                          f"embedded per job phase, {os.cpu_count()} cores)")
        idle = rows[0]["server_cpu_s_per_s"]
        print(f"\nidle: {idle:.4f} CPU-s/s (target < 0.02: {'met' if idle < 0.02 else 'NOT met'}); "
              f"the open page cost the job {loss:+.1%} throughput (target <= 5%: {'met' if loss <= 0.05 else 'NOT met'})")
        write_json("server", {"duration_s": args.duration, "sentences": args.sentences, "cores": os.cpu_count(),
                              "rows": rows, "page_throughput_loss": loss, "idle_target_met": idle < 0.02,
                              "page_target_met": loss <= 0.05})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
