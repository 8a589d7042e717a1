"""Embedding throughput on CPU against plain sentence-transformers `encode` (the named baseline),
same sentences, same batch size, same run; with cosine agreement to the fp32 baseline.

Rows: ST encode fp32 (baseline), ours fp32, ours bf16 autocast (CPUs with AMX/avx512_bf16),
ours "auto" (what the app picks after its probe), and int8 dynamic quantisation (measured,
not used by default: its agreement is too low). Best of `--repeats` runs per row.
Usage: python bench/bench_embed.py [--n 2000] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import CROSSNER, print_table, write_json


def sentences(n: int) -> list[str]:
    from core.data.corpus import read_corpus

    texts: list[str] = []
    if CROSSNER.exists():
        for domain in ("music", "politics", "science", "ai", "literature"):
            for split in ("test", "dev", "train"):
                texts.extend(read_corpus(CROSSNER / domain / f"{split}.txt").texts())
    else:
        rng = np.random.default_rng(0)
        words = "the band released an album with guitar singer song tour election party minister novel theory".split()
        texts = [" ".join(rng.choice(words, size=rng.integers(5, 40))) for _ in range(n)]
    return texts[:n]


def best_of(fn, repeats: int) -> tuple[np.ndarray, float]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model", default="default")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    from core.lm.embed import SentenceEncoder, cpu_has_bf16
    from core.lm.models import resolve_model

    texts = sentences(args.n)
    ref = resolve_model(args.model)
    st = SentenceTransformer(ref.load_path, device="cpu")
    base, t_base = best_of(lambda: st.encode(texts, batch_size=args.batch_size), args.repeats)
    rows = [{"variant": "sentence-transformers encode fp32 (baseline)", "sent_per_s": len(texts) / t_base, "ratio": 1.0,
             "min_cosine": 1.0, "mean_cosine": 1.0}]

    def add(label: str, vecs: np.ndarray, seconds: float) -> None:
        a, b = vecs.astype(np.float64), base.astype(np.float64)
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        rows.append({"variant": label, "sent_per_s": len(texts) / seconds, "ratio": t_base / seconds,
                     "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean())})
        print(rows[-1], flush=True)

    enc = SentenceEncoder(ref, precision="fp32", device="cpu")
    vecs, t = best_of(lambda: enc.encode(texts, args.batch_size), args.repeats)
    add("ours mean pooling fp32", vecs, t)
    if cpu_has_bf16():
        enc.precision = "bf16"
        vecs, t = best_of(lambda: enc.encode(texts, args.batch_size), args.repeats)
        add("ours mean pooling bf16 autocast", vecs, t)
    auto = SentenceEncoder(ref, precision="auto", device="cpu")
    vecs, t = best_of(lambda: auto.encode(texts, args.batch_size), args.repeats)
    add(f"ours auto (picked {auto.precision})", vecs, t)
    q = SentenceEncoder(ref, precision="fp32", device="cpu")
    q._model = torch.ao.quantization.quantize_dynamic(q._model, {torch.nn.Linear}, dtype=torch.qint8)
    vecs, t = best_of(lambda: q.encode(texts, args.batch_size), args.repeats)
    add("ours int8 dynamic quantisation (not a default)", vecs, t)

    print_table(rows, f"Embedding {len(texts):,} sentences with {args.model} on CPU ({torch.get_num_threads()} threads), "
                      f"batch {args.batch_size}; ratio = speed vs sentence-transformers encode")
    write_json("embed", {"n": len(texts), "batch_size": args.batch_size, "model": args.model, "cpu_bf16": cpu_has_bf16(),
                         "threads": torch.get_num_threads(), "rows": rows})


if __name__ == "__main__":
    main()
