"""The Map at demo size and at a million sentences: first map, reuse, switching the selection, and the
browser's frame time.

  demo       the demo workspace (TC 400 + DC 6,000): embedding, then the layout (UMAP on every sentence),
             the same map asked for again (reused), and switching between two saved selections (a layer over
             the same points). Baseline: the Map before the redesign ran a UMAP per selection, so a switch cost
             a layout; the ratio switch / layout is printed.
  1M layout  a million synthetic 384-d embeddings (clustered, float16, memory-mapped as the embedding cache
             is): UMAP fitted on --fit-points sentences, the rest placed by the fitted model's transform.
             Baseline: the fit alone (what a sample-only map would cost).
  browser    that million-point map in a workspace (a 1M-sentence synthetic DC and TC, two random selections),
             opened in headless Chromium on the real Map page: seconds to the first drawn frame, frame time
             while zooming and panning (WebGL, measured with a pixel readback after each draw), and seconds
             from picking the other selection until its colours are drawn.

Nothing else may run meanwhile (2 cores): the note in the JSON says what was running. Embeddings of the 1M map
are synthetic (the layout and the browser do not care what made them).

The large layout places its unfitted points in one worker process per core (issue 45) and, for the ratio, once more in
one process (--no-serial-baseline skips that second layout).

Usage: python bench/bench_map.py [--points 1000000] [--fit-points 20000] [--skip-1m] [--skip-browser] [--skip-demo]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import peak_rss_mb, print_table, write_json


def demo_rows(tmp: Path) -> list[dict]:
    from core.data.demo import write_demo_workspace
    from core.data.stream import open_corpus_stream
    from core.lm.embed import embed_corpus
    from core.runner import jobs
    from core.selection.atlas import build_atlas
    from core.selection.layers import selection_layer, view_data

    ws = write_demo_workspace(tmp / "demo")
    t0 = time.time()
    for role in ("tc", "dc"):
        embed_corpus(open_corpus_stream(ws, role), "default", workspace=ws)
    embed_s = time.time() - t0
    t0 = time.time()
    atlas, reused = build_atlas(ws, ["tc", "dc"])
    layout_s = time.time() - t0
    t0 = time.time()
    again, reused_again = build_atlas(ws, ["tc", "dc"])
    reuse_s = time.time() - t0
    assert not reused and reused_again and again.key == atlas.key
    keys = [jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 0.1, "seed": s})["key"]
            for s in (0, 1)]
    switches = []
    for k in keys * 3:
        t0 = time.time()
        view_data(again, selection_layer(ws, again, k))
        switches.append(time.time() - t0)
    switch_s = float(np.median(switches))
    return [{"case": "demo 6,400", "step": "embed TC + DC (default encoder)", "seconds": embed_s, "baseline_s": None, "ratio": None},
            {"case": "demo 6,400", "step": f"layout ({atlas.meta['method']})", "seconds": layout_s, "baseline_s": None,
             "ratio": None},
            {"case": "demo 6,400", "step": "same map again (reused)", "seconds": reuse_s, "baseline_s": layout_s,
             "ratio": reuse_s / layout_s},
            {"case": "demo 6,400", "step": "switch selection (layer + browser data)", "seconds": switch_s,
             "baseline_s": layout_s, "ratio": switch_s / layout_s}]


def synthetic_vectors(path: Path, n: int, dim: int = 384, clusters: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Clustered unit-ish vectors written as float16 .npy a block at a time (the embedding cache's format)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, size=n)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(n, dim))
    for s in range(0, n, 100_000):
        lab = labels[s:s + 100_000]
        out[s:s + len(lab)] = (centers[lab] + 0.8 * rng.normal(size=(len(lab), dim))).astype(np.float16)
    out.flush()
    return np.load(path, mmap_mode="r"), labels


def layout_rows(tmp: Path, n: int, fit_points: int, serial_baseline: bool = True) -> tuple[list[dict], np.ndarray, np.ndarray]:
    from core.selection.atlas import layout

    vecs, labels = synthetic_vectors(tmp / "vectors.npy", n)
    tc_n = 1_000
    t0 = time.time()
    coords, info = layout([vecs[:tc_n], vecs[tc_n:]], fit_points=fit_points, seed=0)
    total = time.time() - t0
    rows = [{"case": f"{n:,} synthetic", "step": f"UMAP fit on {info['fitted']:,}", "seconds": info["fit_seconds"],
             "baseline_s": None, "ratio": None},
            {"case": f"{n:,} synthetic", "step": f"place {info['placed']:,} by transform", "seconds": info["place_seconds"],
             "baseline_s": info["fit_seconds"], "ratio": info["place_seconds"] / max(info["fit_seconds"], 1e-9)},
            {"case": f"{n:,} synthetic", "step": "whole layout", "seconds": total, "baseline_s": info["fit_seconds"],
             "ratio": total / max(info["fit_seconds"], 1e-9)}]
    if serial_baseline and info["place_workers"] > 1:  # the placement in one process, as before issue 45: the ratio
        one, one_info = layout([vecs[:tc_n], vecs[tc_n:]], fit_points=fit_points, seed=0, workers=1)
        rows.append({"case": f"{n:,} synthetic", "step": f"place in {info['place_workers']} processes vs 1 (same map: "
                     f"{bool(np.array_equal(one, coords))})", "seconds": info["place_seconds"],
                     "baseline_s": one_info["place_seconds"],  # seconds / baseline like every row: below 1 is faster
                     "ratio": info["place_seconds"] / max(one_info["place_seconds"], 1e-9)})
    return rows, coords, labels


def browser_rows(tmp: Path, coords: np.ndarray, labels: np.ndarray, fit_points: int) -> list[dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.data.stream import open_corpus_stream
    from core.data.workspace import Workspace
    from core.runner import jobs
    from core.selection import atlas as atlas_mod
    from tests.browser import CHROMIUM, CHROMIUM_ARGS, streamlit_process, wait_for_app

    n, tc_n = len(coords), 1_000
    ws = Workspace(tmp / "ws1m")
    vocab = [f"w{c}x{j}" for c in range(40) for j in range(12)]
    rng = np.random.default_rng(1)

    def sentences(lab: np.ndarray) -> list[list[str]]:
        picks = rng.integers(0, 12, size=(len(lab), 8))
        return [[vocab[c * 12 + j] for j in row] for c, row in zip(lab, picks)]

    for name, role, lab in (("syn-tc", "tc", labels[:tc_n]), ("syn-dc", "dc", labels[tc_n:])):
        path = tmp / f"{name}.parquet"
        with pq.ParquetWriter(path, pa.schema([("tokens", pa.list_(pa.string()))])) as w:
            for s in range(0, len(lab), 200_000):
                w.write_table(pa.table({"tokens": sentences(lab[s:s + 200_000])}))
        ws.import_corpus(path, role=role, name=name, fmt="parquet")
    keys = [jobs.run_inline(ws, "select", {"tc": "tc", "dc": "dc", "strategy": "random", "budget": 0.1, "seed": s})["key"]
            for s in (0, 1)]
    streams = {"syn-tc": open_corpus_stream(ws, "tc"), "syn-dc": open_corpus_stream(ws, "dc")}
    key = atlas_mod._key_for(ws, streams, "default", "mean", atlas_mod.DEFAULT_FIT_POINTS, 0, 15, 0.1)
    meta = {"model": "default", "pooling": "mean", "seed": 0, "fit_points": atlas_mod.DEFAULT_FIT_POINTS,
            "method": f"synthetic embeddings, umap-learn fitted on {fit_points:,}, the rest placed by transform",
            "points": n, "seconds": 0.0,
            "corpora": [{"name": nm, "digest": s.digest(), "sentences": len(s), "offset": o}
                        for (nm, s), o in zip(streams.items(), (0, tc_n))]}
    atlas_mod.save_atlas(ws, key, coords, meta, atlas_mod._texts_of(streams.values()))
    from playwright.sync_api import sync_playwright

    rows = []
    with streamlit_process(ws.root, timeout=180) as (_, url), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.set_default_timeout(600_000)
        t0 = time.time()
        page.goto(f"{url}/map")
        page.wait_for_function("() => window.__atlasStats && window.__atlasStats.renders >= 1")
        first = time.time() - t0
        wait_for_app(page, "Colour by", timeout=600_000)
        stats = page.evaluate("() => ({...window.__atlasStats})")
        assert stats["points"] == n, stats
        page.evaluate("() => { const s = window.__atlasStats; s.frames = 0; s.totalMs = 0; s.maxFrameMs = 0; }")
        box = page.locator(".atlas-stage canvas").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(cx, cy)
        t0 = time.time()
        for i in range(15):
            page.mouse.wheel(0, -120 if i < 10 else 120)
            page.wait_for_function("(k) => window.__atlasStats.frames >= k", arg=i + 1)
        for _ in range(10):
            page.mouse.move(cx, cy)
            page.mouse.down()
            page.mouse.move(cx + 40, cy + 25, steps=2)
            page.mouse.up()
        interact = page.evaluate("() => ({...window.__atlasStats})")
        wall = time.time() - t0
        rows.append({"case": f"browser {n:,}", "step": f"first frame drawn ({stats['renderer']})", "seconds": first,
                     "baseline_s": None, "ratio": None})
        rows.append({"case": f"browser {n:,}", "step": f"frame time over {interact['frames']} zoom/pan frames: mean ms",
                     "seconds": interact["meanFrameMs"] / 1000, "baseline_s": None, "ratio": None,
                     "mean_ms": interact["meanFrameMs"], "max_ms": interact["maxFrameMs"], "fps_wall": interact["frames"] / wall})
        before = page.evaluate("() => window.__atlasStats.layer")
        picker = page.locator(".st-key-map_selection").get_by_role("combobox")
        current = picker.input_value()
        picker.click()
        options = page.get_by_role("option")
        other = next(options.nth(i) for i in range(options.count()) if options.nth(i).inner_text() != current)
        t0 = time.time()
        other.click()
        page.wait_for_function("(b) => window.__atlasStats.layer !== b", arg=before)
        switch = time.time() - t0
        rows.append({"case": f"browser {n:,}", "step": "switch selection until its colours are drawn", "seconds": switch,
                     "baseline_s": None, "ratio": None})
        assert len(jobs.list_jobs(ws, "project")) == 0, "switching started a map job"
        page.screenshot(path=str(tmp / "map1m.png"))
        shutil.copy(tmp / "map1m.png", Path(__file__).resolve().parent / "results" / "map1m.png")
        browser.close()
    assert len(keys) == 2
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--fit-points", type=int, default=20_000)
    ap.add_argument("--skip-1m", action="store_true", help="only the demo")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--skip-demo", action="store_true", help="only the large layout (and browser)")
    ap.add_argument("--no-serial-baseline", action="store_true",
                    help="skip the second layout that places the points in one process (the ratio's baseline)")
    ap.add_argument("--note", default="nothing else running", help="what else ran on the machine (goes into the JSON)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    tmp = Path(tempfile.mkdtemp(prefix="bench-map-"))
    (Path(__file__).resolve().parent / "results").mkdir(exist_ok=True)
    rows: list[dict] = []
    try:
        if not args.skip_demo:
            rows += demo_rows(tmp)
            print_table(rows, "demo")
        if not args.skip_1m:
            more, coords, labels = layout_rows(tmp, args.points, args.fit_points, not args.no_serial_baseline)
            rows += more
            print_table(more, f"{args.points:,} points")
            if not args.skip_browser:
                rows += browser_rows(tmp, coords, labels, args.fit_points)
        print_table(rows, "bench_map")
        write_json("bench_map", {"rows": rows, "points": args.points, "fit_points": args.fit_points,
                                 "cpus": os.cpu_count(), "peak_rss_mb": peak_rss_mb(), "note": args.note})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
