"""Selection benchmarks.

1. CrossNER domain precision (`--part crossner`): DC = the sentences of all five CrossNER
   domains (train+dev+test) with a `domain` field, TC = one domain's train+dev, budget =
   that domain's share of DC. For every strategy that needs no trained model (cosine, knn,
   dsir, ppl, random) and every domain: the share of selected sentences from the target
   domain; the named baseline is `random` (expected: the domain's share of DC).
   `--exclude-tc` drops TC's own sentences from DC (TC is part of DC in the plain setup,
   which flatters every similarity-based strategy).
2. Top-k over 1M x 384 float16 vectors (`--part topk`): chunked scoring on a memory-mapped
   float16 array (core.selection.strategies) against the naive baseline (load everything as float32,
   normalise, one matrix product, argsort), same data, same run; time and peak traced memory.

Usage: python bench/bench_select.py [--part crossner|topk|all] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _common import CROSSNER, print_table, write_json

DOMAINS = ("ai", "literature", "music", "politics", "science")
STRATEGIES = (("cosine", {}), ("knn", {}), ("dsir", {"sampling": "gumbel"}), ("dsir", {"sampling": "topk"}), ("ppl", {}),
              ("random", {}))


def crossner_corpora(target: str, root: Path = CROSSNER, exclude_tc: bool = False):
    """(TC, DC) as described in the module docstring."""
    from core.data.corpus import Corpus, read_corpus

    parts = []
    for domain in DOMAINS:
        for split in ("train", "dev", "test"):
            c = read_corpus(root / domain / f"{split}.txt").unlabeled()
            parts.append(Corpus(tokens=c.tokens, fields={"domain": [domain] * len(c), "split": [split] * len(c)}))
    dc = Corpus.concat(parts, name="crossner-all")
    tc_idx = [i for i, (d, s) in enumerate(zip(dc.fields["domain"], dc.fields["split"])) if d == target and s in ("train", "dev")]
    tc = dc.subset(tc_idx)
    if exclude_tc:
        drop = set(tc_idx)
        dc = dc.subset([i for i in range(len(dc)) if i not in drop])
    return tc, dc


def bench_crossner(workspace: str | None, exclude_tc: bool, domains: list[str]) -> list[dict]:
    from core.data.workspace import Workspace
    from core.errors import UserError
    from core.selection.strategies import select

    ws = Workspace(workspace or tempfile.mkdtemp(prefix="bench-select-"))
    rows = []
    for domain in domains:
        tc, dc = crossner_corpora(domain, exclude_tc=exclude_tc)
        budget = sum(1 for d in dc.fields["domain"] if d == domain)
        for name, options in STRATEGIES:
            label = name + (f"-{options['sampling']}" if name == "dsir" else "")
            t0 = time.perf_counter()
            try:
                sel = select(tc, dc, name, budget, workspace=ws, options=options, target_domain=domain)
            except UserError as exc:
                print(f"{domain} {label}: skipped ({exc})")
                continue
            s = sel.summary(domain)
            rows.append({"domain": domain, "strategy": label, "tc": len(tc), "dc": len(dc), "budget": budget,
                         "domain_precision": s["domain_precision"], "random_expected": s["random_domain_precision"],
                         "ratio_vs_random": s["domain_precision"] / s["random_domain_precision"],
                         "seconds": time.perf_counter() - t0})
            print(f"{domain:<11} {label:<12} precision {s['domain_precision']:.3f} (random {s['random_domain_precision']:.3f}) "
                  f"{rows[-1]['seconds']:.1f}s", flush=True)
    return rows


def _measure(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, seconds, peak


def bench_topk(rows_n: int, dim: int = 384, queries: int = 100, k: int = 10) -> list[dict]:
    from core.selection.kernels import cosine_to_vector, topk_cosine

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "emb.npy"
        arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(rows_n, dim))
        rng = np.random.default_rng(0)
        for s in range(0, rows_n, 100_000):
            arr[s:s + 100_000] = rng.standard_normal((min(100_000, rows_n - s), dim), dtype=np.float32)
        arr.flush()
        del arr
        q = rng.standard_normal((queries, dim)).astype(np.float32)
        emb = np.load(path, mmap_mode="r")
        out = []

        def naive_single():
            full = np.asarray(np.load(path), dtype=np.float32)
            full /= np.linalg.norm(full, axis=1, keepdims=True)
            v = q[0] / np.linalg.norm(q[0])
            return np.argsort(-(full @ v), kind="stable")[:k]

        def naive_multi():
            full = np.asarray(np.load(path), dtype=np.float32)
            full /= np.linalg.norm(full, axis=1, keepdims=True)
            qn = q / np.linalg.norm(q, axis=1, keepdims=True)
            sims = qn @ full.T  # (Q, N)
            part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            return np.take_along_axis(part, np.argsort(-np.take_along_axis(sims, part, 1), axis=1), 1)

        ours_1, t_ours_1, m_ours_1 = _measure(lambda: np.argsort(-cosine_to_vector(emb, q[0]), kind="stable")[:k])
        base_1, t_base_1, m_base_1 = _measure(naive_single)
        ours_q, t_ours_q, m_ours_q = _measure(lambda: topk_cosine(emb, q, k)[0])
        base_q, t_base_q, m_base_q = _measure(naive_multi)
        agree_1 = len(set(ours_1.tolist()) & set(base_1.tolist())) / k
        agree_q = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(ours_q.tolist(), base_q.tolist())]))
        for task, t_o, m_o, t_b, m_b, agree in (("cosine to 1 vector + full ranking", t_ours_1, m_ours_1, t_base_1, m_base_1, agree_1),
                                                (f"top-{k} for {queries} queries", t_ours_q, m_ours_q, t_base_q, m_base_q, agree_q)):
            out.append({"task": task, "rows": rows_n, "dim": dim, "chunked_s": t_o, "naive_s": t_b, "speedup": t_b / t_o,
                        "chunked_peak_mb": m_o, "naive_peak_mb": m_b, "memory_ratio": m_b / max(m_o, 1e-9),
                        "topk_agreement": agree})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["crossner", "topk", "all"], default="all")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--workspace", default=None, help="reuse embeddings across runs (default: a temp folder)")
    ap.add_argument("--exclude-tc", action="store_true", help="drop TC's sentences from DC")
    ap.add_argument("--domains", nargs="*", default=list(DOMAINS))
    args = ap.parse_args()
    if args.part in ("crossner", "all"):
        if not CROSSNER.exists():
            print(f"CrossNER not found at {CROSSNER}: skipping the domain-precision part")
        else:
            rows = bench_crossner(args.workspace, args.exclude_tc, args.domains)
            print_table(rows, "CrossNER domain precision (budget = target domain's share of DC; baseline: random)")
            by_strategy: dict[str, list[float]] = {}
            for r in rows:
                by_strategy.setdefault(r["strategy"], []).append(r["domain_precision"])
            summary = [{"strategy": s, "mean_precision": float(np.mean(v)), "domains": len(v)} for s, v in by_strategy.items()]
            print_table(summary, "Mean over domains")
            write_json("select-crossner" + ("-exclude-tc" if args.exclude_tc else ""),
                       {"exclude_tc": args.exclude_tc, "rows": rows, "mean": summary})
    if args.part in ("topk", "all"):
        rows = bench_topk(args.rows)
        print_table(rows, f"Top-k over {args.rows:,} x 384 float16 (chunked memmap vs naive float32 in memory)")
        write_json("select-topk", {"rows": rows})


if __name__ == "__main__":
    main()
