"""'Why this sentence' (core.selection.explain.explain_sentence) on the demo workspace: the first click, with nothing
cached (the named baseline: TC is embedded and DC's DSIR n-gram counts are built), against later clicks on other
sentences, which read TC's embeddings and DC's counts from the workspace and embed one sentence. Issue 43 asked for
under 2 s per click with the embeddings cached.

Usage: python bench/bench_explain.py [--dc-size 6000] [--clicks 10] [--workspace DIR]
Writes bench/results/bench-explain.json. Time it with nothing else running (2-core machines).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from _common import print_table, write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dc-size", type=int, default=6000, help="demo DC sentences (the app's demo: 6000)")
    ap.add_argument("--clicks", type=int, default=10, help="cached clicks timed after the first")
    ap.add_argument("--workspace", help="a folder for the demo workspace (default: a new temporary one)")
    args = ap.parse_args()

    from core.data.demo import write_demo_workspace
    from core.data.stream import open_corpus_stream
    from core.selection.explain import explain_sentence
    from core.selection.strategies import select

    ws = write_demo_workspace(args.workspace or tempfile.mkdtemp(prefix="bench-explain-"), dc_size=args.dc_size)
    tc = ws.resolve_corpus("tc")
    sel = select(tc, open_corpus_stream(ws, "dc"), "dsir", 500, workspace=ws, names={"tc": "tc", "dc": "dc"})
    picks = [int(i) for i in sel.indices[: args.clicks + 1]]

    t0 = time.perf_counter()
    explain_sentence(ws, sel.key, picks[0])
    cold = time.perf_counter() - t0
    cached = []
    for i in picks[1:]:
        t0 = time.perf_counter()
        explain_sentence(ws, sel.key, i)
        cached.append(time.perf_counter() - t0)
    median = statistics.median(cached)
    rows = [{"click": "first (nothing cached: baseline)", "seconds": cold, "vs baseline": 1.0},
            {"click": f"later, median of {len(cached)}", "seconds": median, "vs baseline": median / cold},
            {"click": f"later, slowest of {len(cached)}", "seconds": max(cached), "vs baseline": max(cached) / cold}]
    print_table(rows, f"Why this sentence, demo DC of {args.dc_size:,} sentences (target: under 2 s once cached)")
    write_json("bench-explain", {"dc_size": args.dc_size, "clicks": len(cached), "rows": rows,
                                 "under_2s_cached": max(cached) < 2.0})


if __name__ == "__main__":
    main()
