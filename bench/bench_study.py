"""A whole study through one `python -m core experiment`, cells at once (issue 45), against one cell alone.

  data      the product's demo generator (deterministic, no download): LC 200, TC 1,000, DEV 150, TEST 200 and a DC of
            6,600 sentences mixing five domains (the issue's held-out task has these sizes; the demo stands in for it)
  baseline  one `tapt` cell and one `none` cell alone (`--parallel 1`, each its own seed and run folder): the wall
            seconds of the one-at-a-time rate per kind of cell, start-up included
  study     rows none, tapt, cosine, dsir x --seeds (5: 20 cells) in one `experiment --parallel auto` (or --parallel N),
            every cell recording started / finished / device
  figures   wall seconds, cells, most cells running at once (from the cells' own intervals), and the ratio
            (pretraining cells x tapt seconds + none cells x none seconds) / study wall seconds (the speed-up over one
            cell at a time)

The issue's target: 20 cells of the `study` preset in under 3 minutes on one H100. Here (CPU, 2 cores) the same
command runs as a plumbing check with `--preset tiny --seeds 1,2` (auto gives one cell at a time without a card).
Nothing else may run meanwhile; --note says what did. Writes bench/results/study.json and, with --out,
docs/results/bench-study-<device>.json.

Usage: python bench/bench_study.py [--preset study] [--seeds 1,2,3,4,5] [--parallel auto] [--out docs/results/...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent
ROWS = {"baselines": "none,tapt", "strategies": "cosine,dsir"}


def prepare(ws_dir: Path) -> dict[str, str]:
    """The demo at the issue's sizes, imported once into the bench workspace (reused when it is there)."""
    from core.data.demo import generate_demo
    from core.data.workspace import Workspace

    ws = Workspace(ws_dir)
    names = {r: f"bench-{r}" for r in ("tc", "dc", "lc", "dev", "test")}
    if all(ws.has_corpus(n) for n in names.values()):
        return names
    data = generate_demo(seed=13, dc_size=6_600, tc_size=1_000, lc_size=200, dev_size=150, test_size=200)
    for role, name in names.items():
        ws.save_corpus(getattr(data, role), name)
    return names


def experiment(ws_dir: Path, names: dict[str, str], out: Path, *, baselines: str, strategies: str, seeds: str,
               preset: str, parallel: str) -> tuple[float, dict[str, Any]]:
    """(wall seconds, result) of one `python -m core experiment` process, as a user starts it."""
    command = [sys.executable, "-m", "core", "--workspace", str(ws_dir), "experiment",
               *(a for r in ("tc", "dc", "lc", "dev", "test") for a in (f"--{r}", names[r])),
               "--baselines", baselines, "--strategies", strategies, "--seeds", seeds, "--preset", preset,
               "--parallel", parallel, "--out", str(out), "--json", "--quiet"]
    t0 = time.time()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.time() - t0
    if done.returncode != 0:
        raise SystemExit(f"experiment failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return wall, json.loads(done.stdout)


def most_at_once(cells: list[dict[str, Any]]) -> int:
    """The largest number of cells whose [started, finished] intervals overlap.

    >>> most_at_once([{"started": 0, "finished": 10}, {"started": 5, "finished": 6}, {"started": 7, "finished": 12}])
    2
    """
    events = sorted([(c["started"], 1) for c in cells] + [(c["finished"], -1) for c in cells])
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="study")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--parallel", default="auto", help="the study's --parallel (default: auto)")
    ap.add_argument("--work", type=Path, help="workspace kept between runs (default: a temporary folder)")
    ap.add_argument("--out", type=Path, help="also write the JSON here (docs/results/bench-study-<device>.json)")
    ap.add_argument("--note", default="nothing else running", help="what else ran on the machine (goes into the JSON)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("NERSELECT_CREATE_WORKSPACE", "1")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-study-"))
    try:
        names = prepare(work / "ws")
        stamp = time.strftime("%H%M%S")
        one_s, one = experiment(work / "ws", names, work / f"one-{stamp}", baselines="tapt", strategies="", seeds="99",
                                preset=args.preset, parallel="1")
        # a none cell (NER only) takes a fraction of a pretraining cell: one-at-a-time is timed per kind, not as
        # every cell costing a TAPT cell (which overstated the speed-up by the none cells' share)
        none_s, _ = experiment(work / "ws", names, work / f"none-{stamp}", baselines="none", strategies="", seeds="99",
                               preset=args.preset, parallel="1")
        wall, result = experiment(work / "ws", names, work / f"study-{stamp}", seeds=args.seeds, preset=args.preset,
                                  parallel=args.parallel, **ROWS)
        cells = result["cells"]
        n_none = sum(c["row"] == "none" for c in cells)
        one_at_a_time = (len(cells) - n_none) * one_s + n_none * none_s
        rows = [{"run": "one cell alone (tapt, --parallel 1)", "cells": 1, "wall_s": one_s, "at_once": 1, "ratio": 1.0},
                {"run": "one none cell alone (--parallel 1)", "cells": 1, "wall_s": none_s, "at_once": 1,
                 "ratio": none_s / max(one_s, 1e-9)},
                {"run": f"study ({ROWS['baselines']},{ROWS['strategies']} x seeds {args.seeds}; --parallel {args.parallel})",
                 "cells": len(cells), "wall_s": wall, "at_once": most_at_once(cells),
                 "ratio": one_at_a_time / max(wall, 1e-9)}]
        print_table(rows, f"bench_study ({device_name()}, preset {args.preset})")
        payload = {"device": device_name(), "preset": args.preset, "cells": len(cells), "wall_s": wall,
                   "one_cell_s": one_s, "one_none_cell_s": none_s, "one_at_a_time_s": one_at_a_time,
                   "speedup_vs_one_at_a_time": rows[2]["ratio"], "at_once": rows[2]["at_once"],
                   "devices": sorted({c.get("device", "?") for c in cells}), "rows": rows,
                   "cell_seconds": [round(c["finished"] - c["started"], 1) for c in cells],
                   "target": "20 cells of the study preset in under 180 s on one H100",
                   "sizes": {"lc": 200, "tc": 1_000, "dev": 150, "test": 200, "dc": 6_600}, "cpus": os.cpu_count(),
                   "note": args.note, "baseline_cell": {"f1": one["cells"][0]["f1"]}}
        path = write_json("study", payload)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, args.out)
            print(f"wrote {args.out}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
