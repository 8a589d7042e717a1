"""The GPU halves of issues 25 and 45 in one prepared call to a lent device machine, time-boxed, so that the few
minutes of device time a session may get go to measuring, not to typing commands:

  study     issue 45: `bench/bench_study.py`: one study cell alone, then 20 cells (none, tapt, cosine, dsir x 5 seeds;
            LC 200, TC 1,000, DC 6,600) through one `experiment --parallel auto`. Target: under 180 s on one H100.
  training  item 1: `bench/bench_training.py` on the card (the product's NER and MLM steps against a plain fp32 loop
            and a plain bf16-autocast loop, each with its quality after the same steps, and one study cell), then
            `--profile` (torch.profiler tables, host-device syncs per step). Target: the product >= 1.3x the bf16 loop.
  sharing   item 2: three NER jobs through the product's runner at once (which device each got, how many ran on the
            card together, the peaks it measured), then a job that cannot fit: a helper process holds the card's memory
            down to a room that the MLM recipe's micro-batch of 256 overflows, calibrated from two short jobs of the same
            recipe (peak at micro-batch 16 and 32: weights + per-sentence cost); the job must come back at a smaller
            micro-batch with the same effective batch and finish, not be lost.
  map       item 4: a 1M-sentence DC (the scaled demo), its embedding on the card, the map's layout (cuML when
            installed, else umap-learn fitted on 20,000 and the rest placed by one process per core), and the Map
            page's data for a selection.

Each part runs in its own process group with the time that is left and writes OUT/gpu-proof-PART.json as its
figures come (its log: OUT/gpu-proof-PART.log); OUT/gpu-proof.json gathers them with the device. A call cut short
still brings back what finished; a later call with `--parts` of the rest continues (the training bench keeps its
finished rows in .proof/ in the checkout, which a warm device machine keeps between calls).

On the device (after `bash scripts/device_bundle.sh` here, carrying [".device"]) two calls fit the 15 minutes a task
is lent, machine start included (the first call's parts in order of what the open issues need most):
    source scripts/device_env.sh && python3 scripts/gpu_proof.py --parts study,training,sharing --budget-s 540
    source scripts/device_env.sh && python3 scripts/gpu_proof.py --parts map --budget-s 240
(the JSON and logs go to $OUT there, which the call brings back). The map's GPU figure is the embedding of the 1M
sentences (about 2.5 min at the ~7,000 sentences/s measured on an H100); its layout is CPU work (umap-learn's
placement of 980,000 points took 254 s single-threaded in bench/bench_map.py; now one process per core) and is kept
only if time is left.
A part that would not fit in what is left of --budget-s is not started (and says so); one that overruns it is stopped
with its process group, its runner jobs cancelled, before the device's own limit ends the call.
Here, to check the plumbing before spending device time (CPU, toy sizes, two simulated cards; about 10 min on 2 cores):
    python scripts/gpu_proof.py --dry          (writes .proof/out/)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = ROOT / ".proof"  # git-ignored; kept by a warm device machine between calls
PARTS = ("study", "training", "sharing", "map")
# about what each needs on an H100 (16 cores) before its first figure is kept; less left: not started
NEEDS_S = {"study": 200, "training": 270, "sharing": 180, "map": 200}
OOM_BATCH = 256  # the micro-batch the out-of-memory job starts at; the runner halves it up to 3 times (to 32)
OOM_BLOCK = 256  # tokens per MLM example in the out-of-memory recipe (activations grow with it)


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _write(path: Path, payload: dict[str, Any]) -> None:
    """Atomic: the driver reads a part's file right after stopping it, never a half-written one."""
    from core.data.atomic import atomic_write_json

    atomic_write_json(path, payload)


def _partial(out: Path, part: str, payload: dict[str, Any]) -> None:
    """What the part has so far: a part stopped at its budget still brings these figures back."""
    _write(out / f"gpu-proof-{part}.json", {**payload, "partial": True})


def device_info() -> dict[str, Any]:
    info: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.cuda.is_available()
        if info["cuda"]:
            info["gpu"] = torch.cuda.get_device_name(0)
            info["bf16"] = torch.cuda.is_bf16_supported()
    except ImportError:
        info["torch"] = None
    from core.runner import devices

    info["cards"] = [vars(g) for g in devices.gpus()]
    try:
        import cuml  # noqa: F401

        info["cuml"] = True
    except ImportError:
        info["cuml"] = False
    return info


# --------------------------------------------------------------------------- item 1: training speed


def _summarise_training(bench: dict[str, Any]) -> dict[str, Any]:
    """The product's rows against the plain bf16 loop: speed ratio and the quality after the same steps."""
    rows = bench.get("throughput", [])
    verdict = {}
    for task in ("NER", "MLM"):
        new = next((r for r in rows if r["task"] == task and r["impl"] == "new"), None)
        loop = next((r for r in rows if r["task"] == task and r["impl"] == "baseline-bf16"), None)
        if new and loop:
            verdict[task] = {"x_bf16_loop": new.get("x bf16 loop"), "meets_1_3x": (new.get("x bf16 loop") or 0) >= 1.3,
                             "quality_product": new.get("quality"), "quality_bf16_loop": loop.get("quality")}
    cells = [{k: c.get(k) for k in ("impl", "seed", "wall_s", "mlm_s", "ner_s", "ner_epochs", "test_f1")}
             for c in bench.get("cells") or []]
    return {"verdict": verdict, "throughput": rows, "cell": bench.get("cell_summary"), "cells": cells}


def part_training(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    device = "cpu" if args.dry else "cuda"
    steps, profile = (3, 2) if args.dry else (args.steps, args.profile_steps)
    cell = "tiny" if args.dry else "study"  # the dry run's cell: the same code path in about a minute on CPU
    work = args.work / f"training-{device}-{steps}-{cell}"
    bench = [sys.executable, str(ROOT / "bench" / "bench_training.py"), "--device", device, "--skip", "old,new-foreach",
             "--cell-preset", cell, "--workdir", str(work)]
    results = ROOT / "bench" / "results"
    t0 = time.time()
    subprocess.run([*bench, "--steps", str(steps), "--seeds", "1"], check=True, cwd=ROOT)
    timed_s = time.time() - t0
    summary = _summarise_training(json.loads((results / "training.json").read_text("utf-8")))
    shutil.copy(results / "training.json", out / f"bench-training-{device}.json")
    _partial(out, "training", {**summary, "steps": steps, "timed_s": round(timed_s, 1)})  # kept if the profile overruns
    t0 = time.time()
    subprocess.run([*bench, "--profile", str(profile)], check=True, cwd=ROOT)
    profile_doc = json.loads((results / "training-profile.json").read_text("utf-8"))
    for table in results.glob("training-profile-*.txt"):
        shutil.copy(table, out / table.name)
    return {**summary, "profile": profile_doc.get("rows"), "steps": steps, "timed_s": round(timed_s, 1),
            "profile_s": round(time.time() - t0, 1)}


# --------------------------------------------------------------------------- issue 45: a study with cells at once


def part_study(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """bench/bench_study.py: one cell alone, then 20 cells (none, tapt, cosine, dsir x 5 seeds; LC 200, TC 1,000,
    DC 6,600) in one `experiment --parallel auto`. Target: under 180 s on one H100. Dry: tiny preset, 2 cells at once."""
    device = "cpu" if args.dry else "cuda"
    command = [sys.executable, str(ROOT / "bench" / "bench_study.py"), "--work", str(args.work / "study"),
               "--out", str(out / f"bench-study-{device}.json"), "--note", "alone on the device (gpu_proof study part)"]
    command += ["--preset", "tiny", "--seeds", "1", "--parallel", "2"] if args.dry else ["--preset", "study"]
    subprocess.run(command, check=True, cwd=ROOT)
    bench = json.loads((out / f"bench-study-{device}.json").read_text("utf-8"))
    return {k: bench[k] for k in ("device", "preset", "cells", "wall_s", "one_cell_s", "speedup_vs_one_at_a_time",
                                  "at_once", "devices", "target")} | {"meets_180_s": bench["wall_s"] < 180}


# --------------------------------------------------------------------------- item 2: jobs sharing the card


class Sampler:
    """Every half second: how many training jobs run, and the MiB each process holds on the cards (nvidia-smi)."""

    def __init__(self, ws: Any) -> None:
        self.ws, self.max_running, self.max_on_card, self.peak_by_pid = ws, 0, 0, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from core.runner import devices, jobs

        while not self._stop.is_set():
            running = [j for j in jobs.list_jobs(self.ws) if j.status == "running"]
            self.max_running = max(self.max_running, len(running))
            used = devices.used_by_pid()
            ours = {j.pid: used[j.pid] for j in running if j.pid in used}
            self.max_on_card = max(self.max_on_card, len(ours))
            for pid, mib in ours.items():
                self.peak_by_pid[pid] = max(self.peak_by_pid.get(pid, 0), mib)
            self._stop.wait(0.5)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant.

    >>> max_overlap([(0, 10), (1, 5), (6, 9), (12, 13)])
    2
    """
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals], key=lambda e: (e[0], e[1]))
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def _wait_all(ws: Any, ids: list[str], deadline: float) -> list[Any]:
    """The jobs once finished and their processes gone: a job's peak is recorded and its card memory freed only
    after its status says done."""
    from core.runner import jobs, jobstore

    done = [jobs.wait(ws, i, timeout=max(1.0, deadline - time.time())) for i in ids]
    while any(jobstore.pid_alive(j.pid) for j in done) and time.time() < deadline:
        time.sleep(0.1)
    return done


def calibration_peaks(ws: Any, calib: list[Any]) -> list[int]:
    """The peak MiB the runner measured for each job's recipe, 0 where none: keyed by the params the runner stored
    (validated, defaults filled in), as record_job_peak keyed them, not by the dict that was submitted."""
    from core.runner import devices

    memory = devices.measured_peaks(ws.runs_dir)
    return [memory.get(devices.recipe_key(j.kind, j.spec), 0) for j in calib]


def _job_row(job: Any, pid_peaks: dict[int, int]) -> dict[str, Any]:
    from core.runner import devices

    result = job.result or {}
    f1 = (result.get("test") or {}).get("f1", result.get("best_dev_f1"))
    log = (job.run_dir / "log.txt").read_text("utf-8", errors="replace") if (job.run_dir / "log.txt").exists() else ""
    return {"id": job.id, "kind": job.kind, "status": job.status, "error": job.error, "attempts": job.attempts,
            "device": devices.describe(devices.read_device(job.run_dir)), "seconds": job.elapsed,
            "started": job.started, "finished": job.finished, "f1": f1, "smi_peak_mib": pid_peaks.get(job.pid or -1),
            "grad_accum": (getattr(job.spec, "config", None) or {}).get("grad_accum", 1),
            "out_of_memory_lines": [ln for ln in log.splitlines() if "out of GPU memory" in ln]}


def oom_room(peak_16: int, peak_32: int, context: int) -> dict[str, int]:
    """The room to leave on the card: a recipe's peak grows about linearly with the micro-batch (weights and optimizer
    state, plus a per-sentence share), so weights + 100 sentences (+ the CUDA context and a slack) overflows at 256 and
    (when a sentence costs over 10 MiB) at 128, and fits at 64: two retries, then the job finishes at grad_accum 4.

    >>> oom_room(1000, 1800, 600)
    {'per_sentence_mib': 50, 'weights_mib': 200, 'room_mib': 6056}
    """
    per_sentence = (peak_32 - peak_16) / 16
    weights = peak_16 - 16 * per_sentence
    return {"per_sentence_mib": round(per_sentence), "weights_mib": round(weights),
            "room_mib": int(context + weights + 100 * per_sentence + 256)}


def _oom_step(ws: Any, deadline: float, hold: bool) -> dict[str, Any]:
    """Calibrate the MLM recipe's memory at micro-batch 16 and 32, then (`hold`: on a real card) hold the card down to
    the room `oom_room` gives and run the recipe at a micro-batch of OOM_BATCH."""
    from core.runner import devices, jobs

    def mlm(batch: int) -> dict[str, Any]:
        return {"train": ["dc"], "preset": "demo", "config": {"batch_size": batch, "block_size": OOM_BLOCK, "max_steps": 3,
                                                               "checkpoint_every": 1000, "log_every": 1}}

    batches = (16, 32)
    with Sampler(ws) as sampler:  # one after the other: each reads the card alone, and their peaks cannot race
        calib = [_wait_all(ws, [jobs.submit(ws, "mlm", mlm(b)).id], deadline)[0] for b in batches]
    p16, p32 = calibration_peaks(ws, calib)
    out: dict[str, Any] = {"calibration": [_job_row(j, sampler.peak_by_pid) for j in calib], "peak_mib_16": p16, "peak_mib_32": p32}
    if not hold:
        out["skipped"] = ("no CUDA card: the calibration jobs ran (the plumbing), nothing to hold; the CPU tests cover "
                          "the retry with a simulated failure")
        return out
    if not devices.gpus():
        out["skipped"] = "CUDA works but nvidia-smi shows no card: the runner cannot place jobs by memory here"
        return out
    if not p16 or not p32 or p32 <= p16:
        out["skipped"] = "calibration gave no usable peaks (see calibration)"
        return out
    # what nvidia-smi counts beyond the allocator's peak (the CUDA context), from the calibration jobs' processes
    context = max([sampler.peak_by_pid.get(j.pid or -1, 0) - peak for j, peak in zip(calib, (p16, p32))] + [600])
    sizing = oom_room(p16, p32, context)
    room = sizing["room_mib"]
    free = devices.gpus()[0].free_mib
    out.update({**sizing, "context_mib": context, "free_before_mib": free})
    hog = subprocess.Popen([sys.executable, "-c", "import sys, time, torch\n"
                            "x = torch.empty(int(sys.argv[1]) * 2**20, dtype=torch.uint8, device='cuda')\n"
                            "print('held', flush=True)\ntime.sleep(3600)", str(max(0, free - room - 600))],
                           stdout=subprocess.PIPE, text=True)  # in this part's process group: a timeout stops it too
    try:
        hog.stdout.readline()  # 'held' (or EOF if it failed: the job then simply fits)
        out["free_with_helper_mib"] = devices.gpus()[0].free_mib
        with Sampler(ws) as sampler:
            (job,) = _wait_all(ws, [jobs.submit(ws, "mlm", mlm(OOM_BATCH)).id], deadline)
        out["job"] = _job_row(job, sampler.peak_by_pid)
        out["retried_and_finished"] = job.status == "done" and bool(out["job"]["out_of_memory_lines"])
    finally:
        hog.kill()
    return out


def part_sharing(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from core.data.demo import write_demo_workspace
    from core.errors import UserError
    from core.runner import devices, jobs

    if args.dry:  # two simulated cards; each job reserves 3,000 MiB, so two share card 0 (CPU does the work)
        os.environ.update({"NERSELECT_GPU_BUDGET": "0:8000,1:8000", "NERSELECT_JOB_GPU_MIB": "3000"})
    shutil.rmtree(args.work / "sharing-ws", ignore_errors=True)
    ws = write_demo_workspace(args.work / "sharing-ws")
    deadline = time.time() + args.part_timeout - 20

    def stop(signum: int, frame: Any) -> None:
        sys.exit(1)  # through the `finally` below

    signal.signal(signal.SIGTERM, stop)
    preset = "tiny" if args.dry else "demo"
    try:
        with Sampler(ws) as sampler:
            ids = [jobs.submit(ws, "ner", {"train": "lc", "dev": "dev", "test": "test", "preset": preset,
                                           "config": {"seed": seed}}).id for seed in (1, 2, 3)]
            done = _wait_all(ws, ids, deadline)
        rows = [_job_row(j, sampler.peak_by_pid) for j in done]
        result: dict[str, Any] = {
            "jobs": rows, "max_running_sampled": sampler.max_running, "max_processes_on_card": sampler.max_on_card,
            "max_overlap": max_overlap([(r["started"], r["finished"]) for r in rows if r["started"] and r["finished"]]),
            "peaks_by_pid_mib": sampler.peak_by_pid, "measured_peaks": devices.measured_peaks(ws.runs_dir)}
        _partial(out, "sharing", result)
        import torch

        result["out_of_memory"] = _oom_step(ws, deadline, hold=not args.dry and torch.cuda.is_available())
        return result
    finally:  # a part that timed out or failed leaves no job of its own holding the card
        for job in jobs.list_jobs(ws):
            if job.active:
                try:
                    jobs.cancel(ws, job.id)
                except UserError:  # it finished meanwhile
                    pass


# --------------------------------------------------------------------------- item 4: a million-sentence map


def part_map(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from core.data.demo import write_demo_workspace
    from core.lm.embed import embed_corpus
    from core.runner import jobs
    from core.selection.atlas import build_atlas
    from core.selection.layers import selection_layer, view_data

    n = 20_000 if args.dry else args.points
    device = "cpu" if args.dry else "cuda"
    rows: list[dict[str, Any]] = []

    def row(**figures: Any) -> None:
        rows.append(figures)
        _partial(out, "map", {"points": n, "device": device, "rows": rows})
    t0 = time.time()
    ws = write_demo_workspace(args.work / f"map-ws-{n}", dc_size=n)
    row(step=f"generate the scaled demo (DC {n:,})", seconds=round(time.time() - t0, 1))
    for role in ("tc", "dc"):
        t0 = time.time()
        last, messages = [0.0], []

        def progress(f: float, msg: str = "", last: list[float] = last, role: str = role,
                     messages: list[str] = messages) -> None:
            messages.append(msg)
            if f - last[0] >= 0.1 or f >= 1.0:
                last[0] = f
                _log(f"embed {role}: {msg}")

        vectors = embed_corpus(role, "default", device=device, workspace=ws, progress=progress)
        s = time.time() - t0
        cached = any("from the cache" in m for m in messages)  # a rerun on a warm machine: no embedding figure
        row(step=f"embed {role} on {device} ({len(vectors):,} sentences)", seconds=round(s, 1),
            sentences_per_s=None if cached else round(len(vectors) / s), reused=cached)
    t0 = time.time()
    atlas, reused = build_atlas(ws, ["tc", "dc"], fit_points=20_000, progress=lambda f, m="": _log(f"map: {m}"))
    meta = atlas.meta
    row(step=f"layout of {len(atlas):,} points ({meta.get('method')})", seconds=round(time.time() - t0, 1),
        fit_s=meta.get("fit_seconds"), place_s=meta.get("place_seconds"), backend=meta.get("backend"), reused=reused)
    key = jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 0.1, "seed": 0})["key"]
    t0 = time.time()
    data = view_data(atlas, selection_layer(ws, atlas, key))
    row(step="the Map page's data for a selection (layer + Arrow payload)", seconds=round(time.time() - t0, 2),
        points=len(atlas), texts_sent=data.get("texts") is not None)
    return {"points": len(atlas), "device": device, "rows": rows,
            "browser": "not measured here (no Chromium on the device): bench/bench_map.py times the drawing of a "
                       "million-point map, which does not depend on where the layout was made"}


# --------------------------------------------------------------------------- driver


def run_part(part: str, args: argparse.Namespace, out: Path, timeout: float) -> dict[str, Any]:
    """The part in its own process group: on timeout the whole group (bench workers, the hog) is stopped."""
    log, path = out / f"gpu-proof-{part}.log", out / f"gpu-proof-{part}.json"
    path.unlink(missing_ok=True)  # a figure from an earlier call is not this call's
    command = [sys.executable, __file__, "--child", part, "--out", str(out), "--part-timeout", str(int(timeout)),
               "--steps", str(args.steps), "--profile-steps", str(args.profile_steps), "--points", str(args.points),
               "--work", str(args.work)]
    command += ["--dry"] if args.dry else []
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            rc = None
    figures = json.loads(path.read_text("utf-8")) if path.exists() else {}
    if rc == 0 and not figures.get("partial"):
        return {"status": "done", "seconds": round(time.time() - t0, 1), **figures}
    status = f"timed out after {time.time() - t0:.0f} s" if rc is None else f"failed (exit {rc})"
    tail = log.read_text("utf-8", errors="replace").splitlines()[-15:]
    return {"status": status + (" with partial figures" if figures else ""), "log": log.name, "log_tail": tail, **figures}


def _print_summary(results: dict[str, Any]) -> None:
    """The figures that answer the issue (partial ones too), short enough for the device tool's output tail."""
    for part, r in results["parts"].items():
        print(f"\n== {part}: {r.get('status')}" + (f" in {r['seconds']} s" if "seconds" in r else ""))
        if r.get("status") != "done":
            print("\n".join(r.get("log_tail", [])))
        for task, v in r.get("verdict", {}).items():
            print(f"{task}: product {v['x_bf16_loop']:.2f}x the bf16 loop (target 1.3x: {v['meets_1_3x']}); "
                  f"quality product {v['quality_product']}, bf16 loop {v['quality_bf16_loop']}")
        if "verdict" in r:
            print("cell:", json.dumps(r.get("cell")), "\nprofile:", json.dumps(r.get("profile")))
        for j in r.get("jobs", []):
            print(f"{j['id']} {j['status']} on {j['device']} in {j['seconds'] or 0:.0f} s, F1 {j['f1']}, "
                  f"nvidia-smi peak {j['smi_peak_mib']} MiB")
        if "jobs" in r:
            print(f"ran together: {r['max_overlap']} (sampled {r['max_running_sampled']}, on the card at once "
                  f"{r['max_processes_on_card']}"
                  + ("; nvidia-smi listed none of the job pids (a container?): the jobs' times are the figure"
                     if results["device"].get("cards") and not r["max_processes_on_card"] else "")
                  + f"); peaks {r['measured_peaks']}")
        if "out_of_memory" in r:
            print("out of memory:", json.dumps({k: v for k, v in r["out_of_memory"].items() if k != "calibration"}))
        if "speedup_vs_one_at_a_time" in r:
            print(f"study: {r['cells']} cells in {r['wall_s']:.0f} s ({r['at_once']} at once; target under 180 s: "
                  f"{r['meets_180_s']}), {r['speedup_vs_one_at_a_time']:.2f}x one cell at a time ({r['one_cell_s']:.0f} s)")
        for row in r.get("rows", []):
            print(json.dumps(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT") else WORK / "out",
                    help="folder for the JSON and logs (default: $OUT, the folder a device call brings back, else .proof/out)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, in order: {', '.join(PARTS)}")
    ap.add_argument("--budget-s", type=float, help="wall seconds for all parts together (default 540; --dry: 1800)")
    ap.add_argument("--steps", type=int, default=300, help="optimizer steps per bench_training throughput row")
    ap.add_argument("--profile-steps", type=int, default=50)
    ap.add_argument("--points", type=int, default=1_000_000, help="DC sentences of the map part")
    ap.add_argument("--work", type=Path, default=WORK, help="workspaces and bench rows kept between calls")
    ap.add_argument("--dry", action="store_true", help="CPU, toy sizes, simulated cards: check the script itself")
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    ap.add_argument("--part-timeout", type=float, default=600, help=argparse.SUPPRESS)
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        fn = {"study": part_study, "training": part_training, "sharing": part_sharing, "map": part_map}[args.child]
        _write(out / f"gpu-proof-{args.child}.json", fn(args, out))
        return
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if unknown := [p for p in parts if p not in PARTS]:
        sys.exit(f"--parts: unknown {', '.join(unknown)}; expected some of {', '.join(PARTS)}")
    end = time.time() + (args.budget_s or (1800 if args.dry else 540))
    results: dict[str, Any] = {"device": device_info(), "dry": args.dry, "parts": {}}
    _log(f"device: {json.dumps(results['device'])}")
    for part in parts:
        left = end - time.time()
        if not args.dry and left < NEEDS_S[part]:
            results["parts"][part] = {"status": f"not started: {left:.0f} s left, needs about {NEEDS_S[part]}"}
            continue
        _log(f"{part}: starting with {left:.0f} s left")
        results["parts"][part] = run_part(part, args, out, left)
        _log(f"{part}: {results['parts'][part]['status']}")
        _write(out / "gpu-proof.json", results)
    _write(out / "gpu-proof.json", results)
    _print_summary(results)


if __name__ == "__main__":
    main()
