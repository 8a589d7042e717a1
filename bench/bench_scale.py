"""Scale: selection over 1M and 10M-sentence DCs, streamed, against the previous in-memory code.

For each DC size (the scaled demo: `python -m core demo DIR --dc-size N`) every step runs in
its own child process; the parent polls the resident memory of the child's whole process tree
(Ray workers included) with psutil, so each row's peak RSS is that step's alone.

Steps: import (streamed import of DC as a .txt file), dsir, ppl (KN 3-gram of TC), random,
cosine (top-k from cached embeddings: synthetic float16 embeddings written into the cache,
since embedding 1M+ sentences on 2 CPU cores takes hours), each at budget 10% with the
selection written to the workspace. "old" rows run the same selection with the code of
commit 2acd97f (whole DC in memory), where the DC fits (--baseline-max). Then embedding
throughput of `embed --ray local` against the single-process path on --embed-n sentences.

Usage (smoke):   python bench/bench_scale.py --sizes 20000 --embed-n 200
Embedding rows only (quiet machine, ~5-8 min):
                 python bench/bench_scale.py --sizes 20000 --embed-n 20000 --embed-only --workdir /tmp/scale-embed
Full (quiet machine, ~1.5-2.5 h; the 10M demo alone takes ~15-20 min to generate):
                 python bench/bench_scale.py --sizes 1000000,10000000 --workdir /tmp/scale
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent
OLD_COMMIT = "2acd97f"
STRATEGIES = ("dsir", "ppl", "random", "cosine")


# --------------------------------------------------------------------------- children


def _child(step: str, ws_dir: str, extra: str) -> dict[str, Any]:
    """One measured step, run in a fresh process; returns what the parent prints."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if os.environ.get("BENCH_CORE"):  # the old code's checkout goes before the one _common put on sys.path
        sys.path.insert(0, os.environ["BENCH_CORE"])
        from core.workspace import Workspace  # the old package (OLD_COMMIT): flat core/, before the subpackages
    else:
        from core.data.workspace import Workspace

    ws = Workspace(ws_dir)
    t = time.perf_counter()
    if step == "import":
        n = ws.import_corpus(extra, name="dc-imported", overwrite=True).sentences
    elif step.startswith("new-") or step.startswith("old-"):
        strategy = step[4:]
        shutil.rmtree(ws.root / "artifacts" / "selection", ignore_errors=True)  # measure the work, not the cache
        tc = ws.resolve_corpus("tc")
        if step.startswith("new-"):
            from core.data.stream import open_corpus_stream
            from core.selection.strategies import select

            dc = open_corpus_stream(ws, "dc")
        else:
            from core.select import select  # the old package (OLD_COMMIT, flat core/): BENCH_CORE points at its checkout

            dc = ws.resolve_corpus("dc")
        sel = select(tc, dc, strategy, 0.1, workspace=ws, names={"tc": "tc", "dc": "dc"})
        n = int(sel.meta["dc_size"])
    elif step in ("embed-local", "embed-ray"):
        return _embed_child(step, ws, int(extra))
    else:
        raise SystemExit(f"unknown step {step}")
    return {"seconds": time.perf_counter() - t, "sentences": n}


WARM_N = 64  # sentences of the Ray start-up run: actors start and load the model, then one tiny block each


def _embed_child(step: str, ws: Any, m: int) -> dict[str, Any]:
    """Embedding throughput with start-up apart from steady state.

    local: start-up = loading the encoder (get_encoder, the same one embed_corpus then reuses);
    steady = embed_corpus of m sentences. Ray local: cluster start (connect) once; start-up =
    a run on WARM_N sentences (Ray Data starts its actors, each imports torch and loads the
    model, for every pass); steady = (m - WARM_N) / (time of the m-sentence run - start-up run)."""
    from core.data.stream import open_corpus_stream

    shutil.rmtree(ws.root / "artifacts" / "embeddings", ignore_errors=True)
    part = open_corpus_stream(ws, "dc").take(range(m))
    t0 = time.perf_counter()
    if step == "embed-local":
        from core.lm.embed import embed_corpus
        from core.lm.encoder import get_encoder

        get_encoder("default", workspace=ws)
        startup = time.perf_counter() - t0
        t1 = time.perf_counter()
        n = len(embed_corpus(part, "default", workspace=ws))
        steady_s = time.perf_counter() - t1
        return {"seconds": startup + steady_s, "sentences": n, "cluster_s": 0.0, "startup_s": startup,
                "steady_per_s": n / steady_s}
    from core.lm.distributed import connect, ray_embed

    connect("local")
    cluster = time.perf_counter() - t0
    warm: dict[str, Any] = {}
    ray_embed(part.subset(range(min(WARM_N, m))), "default", "local", stats=warm)
    full: dict[str, Any] = {}
    n = len(ray_embed(part, "default", "local", stats=full))
    work_s = full["seconds"] - warm["seconds"]  # start-up varies run to run: meaningful at thousands of sentences
    return {"seconds": cluster + full["seconds"], "sentences": n, "cluster_s": cluster, "startup_s": warm["seconds"],
            "steady_per_s": (n - min(WARM_N, m)) / work_s if work_s > 0 else None,
            "actors": full["actors"], "rows_per_block": full["rows_per_block"], "first_result_s": full["first_result_s"]}


def _prepare(ws_dir: str, n: int, txt: str) -> None:
    """Untimed: hash DC once (cached by file hash), write synthetic cached embeddings for
    cosine, and DC as a .txt file for the import step."""
    import numpy as np

    from core.data.atomic import atomic_write_json
    from core.data.stream import open_corpus_stream
    from core.data.workspace import Workspace
    from core.lm.embed import ARTIFACT, embed_corpus, embedding_key

    ws = Workspace(ws_dir)
    dc = open_corpus_stream(ws, "dc")
    digest = dc.digest()
    folder = ws.artifact_dir(ARTIFACT, embedding_key("default", digest, "mean"))
    if not (folder / "meta.json").exists():
        arr = np.lib.format.open_memmap(folder / "embeddings.npy", mode="w+", dtype=np.float16, shape=(len(dc), 384))
        rng = np.random.default_rng(0)
        for s in range(0, len(dc), 1 << 18):
            arr[s:s + (1 << 18)] = rng.standard_normal((min(1 << 18, len(dc) - s), 384), dtype=np.float32)
        arr.flush()
        del arr
        atomic_write_json(folder / "meta.json", {"synthetic": True, "n": len(dc), "dim": 384, "dtype": "float16"})
    embed_corpus(ws.resolve_corpus("tc"), "default", workspace=ws)  # TC is embedded for real (400 sentences)
    if not Path(txt).exists():
        with open(txt, "w", encoding="utf-8") as fh:
            for batch in dc.text_batches():
                fh.write("\n".join(batch) + "\n")


# --------------------------------------------------------------------------- parent


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_step(step: str, ws_dir: str, extra: str = "", old_path: str | None = None) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=old_path or str(ROOT), BENCH_CORE=old_path or "", TOKENIZERS_PARALLELISM="false")
    proc = subprocess.Popen([sys.executable, __file__, "--child", step, ws_dir, extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=old_path or str(ROOT))
    peak = [0]

    def poll() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.2)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    out, err = proc.communicate()
    th.join()
    if proc.returncode != 0:
        return {"error": (err or out).strip().splitlines()[-1:] or ["failed"]}
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_rss_mb"] = peak[0] / 2**20
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000", help="DC sizes, comma-separated (smoke: 20000)")
    ap.add_argument("--workdir", default=None, help="keep the generated workspaces here (reused by later runs)")
    ap.add_argument("--baseline-max", type=int, default=2_000_000, help="run the old in-memory code up to this DC size")
    ap.add_argument("--embed-n", type=int, default=5000, help="sentences for the Ray-local vs single-process embedding rows")
    ap.add_argument("--embed-only", action="store_true", help="only the embedding rows (DC of the first --sizes; no selection)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--prepare", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    if args.prepare:
        _prepare(args.prepare[0], int(args.prepare[1]), args.prepare[2])
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    base = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench_scale-"))
    base.mkdir(parents=True, exist_ok=True)
    old = base / f"old-{OLD_COMMIT}"
    if not (old / "core").exists():
        old.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_COMMIT, "core"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows: list[dict[str, Any]] = []
    for n in sizes:
        ws_dir = str(base / f"ws-{n}")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "core", "demo", ws_dir, "--dc-size", str(n)], check=True, env=env, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        gen_s = time.perf_counter() - t
        if args.embed_only:
            break  # the embedding rows read the first size's DC; nothing else to prepare
        txt = str(base / f"dc-{n}.txt")
        subprocess.run([sys.executable, __file__, "--prepare", ws_dir, str(n), txt], check=True, env=env, cwd=ROOT)
        print(f"DC {n:,}: demo ready ({gen_s:.0f}s, reused if it existed), digest + synthetic embeddings cached", flush=True)
        steps = [("import", "new", txt)] + [(s, "new", "") for s in STRATEGIES]
        if n <= args.baseline_max:
            steps += [(s, "old", "") for s in STRATEGIES]
        for step, code, extra in steps:
            name = step if step == "import" else f"{code}-{step}"
            res = run_step(name, ws_dir, extra, str(old) if code == "old" else None)
            row = {"dc": n, "step": step, "code": "streamed" if code == "new" else f"in-memory ({OLD_COMMIT})",
                   "seconds": res.get("seconds"), "sentences/s": (res["sentences"] / res["seconds"]) if "seconds" in res else None,
                   "peak_rss_mb": res.get("peak_rss_mb"), "error": " ".join(res.get("error", []))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    embed_rows: list[dict[str, Any]] = []
    if args.embed_n > 0:
        ws_dir = str(base / f"ws-{sizes[0]}")
        m = min(args.embed_n, sizes[0])
        for step in ("embed-local", "embed-ray"):
            res = run_step(step, ws_dir, str(m))
            embed_rows.append({"step": step, "sentences": m, "cluster_start_s": res.get("cluster_s"),
                               "startup_s": res.get("startup_s"), "steady_sent/s": res.get("steady_per_s"),
                               "end_to_end_sent/s": (m / res["seconds"]) if "seconds" in res else None,
                               "peak_rss_mb": res.get("peak_rss_mb"), "error": " ".join(res.get("error", []))})
            print(json.dumps(embed_rows[-1]), flush=True)
    print_table(rows, "Selection at scale (budget 10%, selection written to the workspace)")
    if embed_rows:
        print_table(embed_rows, "Embedding: Ray local (1 actor per core, 1 torch thread each) vs single process; "
                                "start-up (model load; Ray: actors start + load, per pass) apart from steady-state sentences/s")
    write_json("scale", {"sizes": sizes, "rows": rows, "embed": embed_rows, "cpus": os.cpu_count(),
                         "note": "cosine uses synthetic float16 embeddings written into the cache (TC embedded for real)"})
    if not args.workdir:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
