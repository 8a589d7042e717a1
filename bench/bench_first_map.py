"""How long the demo's first map takes, doing what the app does when a user clicks.

On a fresh temporary workspace: write the demo (TC 400 + DC 6,000 sentences, as the app's first
start does), save a selection (random strategy by default: it embeds nothing, so the map pays for
the embeddings itself), then submit the "project" job exactly as the Map page's "Compute map"
button does and time it:

  cold       the click right after the first start (embeddings + UMAP in the job)
  prepared   the click after the first start's background embedding jobs finished
             (core.selection.projection.prepare_first_map, queued by app.py on the demo's first start)
  cached     a second click for the same map (the saved projection is loaded)

For each: seconds until the PCA preview was saved (the Map page draws it) and until the map was
done. Whether numba's cache was warm (scripts/setup.sh compiles UMAP once) is reported; pass
--cold-numba to time with an empty numba cache instead (a first run without setup.sh).
Targets (issue 10, 2 cores): prepared/cold < 30 s, cached < 10 s.

Usage: python bench/bench_first_map.py [--dc-size 6000] [--cold-numba]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from _common import print_table, write_json


def click_compute_map(ws, selection: str) -> dict[str, float | str]:
    """What views/map.py's button submits; times the preview and the finished map."""
    from core.runner import jobs
    from core.selection.projection import DEFAULT_MAX_POINTS, list_projections

    t0 = time.time()
    job = jobs.submit(ws, "project", {"selection": selection, "model": "default", "max_points": DEFAULT_MAX_POINTS,
                                      "seed": 0})
    preview = None
    while True:
        current = jobs.get_job(ws, job.id)
        if preview is None and any(p.get("selection") == selection for p in list_projections(ws)):
            preview = time.time() - t0
        if current.status in jobs.FINISHED:
            break
        time.sleep(0.1)
    if current.status != "done":
        raise SystemExit(f"the map job {current.status}: {current.error}")
    total = time.time() - t0
    return {"preview_s": preview if preview is not None else total, "map_s": total,
            "backend": (current.result or {}).get("backend", "")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dc-size", type=int, default=6000, help="demo DC sentences (the app's demo: 6000)")
    ap.add_argument("--strategy", default="random", help="selection strategy saved before the map (default: random)")
    ap.add_argument("--cold-numba", action="store_true", help="use an empty numba cache (no setup.sh compilation)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-first-map-"))
    if args.cold_numba:
        os.environ["NUMBA_CACHE_DIR"] = str(tmp / "numba")
    from core.data.demo import write_demo_workspace
    from core.runner import jobs
    from core.selection.projection import numba_cache_dir, prepare_first_map

    warm = (numba_cache_dir() / ".warm").exists()
    rows = []
    try:
        for scenario in ("cold", "prepared"):
            ws = write_demo_workspace(tmp / scenario, dc_size=args.dc_size)
            t0 = time.time()
            if scenario == "prepared":
                prepare_first_map(ws)  # what app.py does on the demo's first start
                for job in jobs.list_jobs(ws, "embed"):
                    jobs.wait(ws, job.id, timeout=3600)
            background = time.time() - t0
            sel = jobs.run_inline(ws, "select", {"tc": "demo-tc", "dc": "demo-dc", "strategy": args.strategy,
                                                 "budget": 0.2})
            rows.append({"scenario": scenario, **click_compute_map(ws, sel["key"]),
                         "background_embedding_s": background if scenario == "prepared" else 0.0})
            if scenario == "prepared":
                rows.append({"scenario": "cached", **click_compute_map(ws, sel["key"]), "background_embedding_s": 0.0})
        print_table(rows, f"First map of the demo (TC 400 + DC {args.dc_size:,}), {os.cpu_count()} cores, "
                          f"numba cache {'warm' if warm and not args.cold_numba else 'cold'}")
        write_json("first_map", {"dc_size": args.dc_size, "strategy": args.strategy, "cores": os.cpu_count(),
                                 "numba_cache_warm": warm and not args.cold_numba, "rows": rows})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
