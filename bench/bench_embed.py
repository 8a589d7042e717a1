"""Embedding throughput against plain sentence-transformers `encode` (the named baseline), same
sentences, same run; with cosine agreement to the fp32 baseline. Best of `--repeats` runs per row.

CPU rows (same batch size everywhere): ST encode fp32 (baseline), ours fp32, ours bf16 autocast
(CPUs with AMX/avx512_bf16), ours "auto" (what the app picks after its probe), and int8 dynamic
quantisation (measured, not used by default: its agreement is too low).
GPU rows (--device cuda): ST encode with its defaults (batch 32, fp32: the issue's baseline), then
ours as the app runs it (auto precision = bf16, batch 512, tokenizer threads = half the cores, at
most 4), and ours with 1 tokenizer thread, fp16 and batch 1024, to show where the time goes.
The CrossNER sentences are repeated up to --n.

    python bench/bench_embed.py [--n 2000] [--batch-size 32]
    python bench/bench_embed.py --device cuda --n 100000 --model PATH   # on a GPU machine
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
    return [texts[i % len(texts)] for i in range(n)]


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
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = ap.parse_args()
    if args.device == "cuda":
        return main_cuda(args)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    from core.lm.encoder import SentenceEncoder
    from core.lm.models import resolve_model
    from core.lm.precision import cpu_has_bf16

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


def main_cuda(args: argparse.Namespace) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from core.lm.encoder import SentenceEncoder
    from core.lm.models import resolve_model

    texts = sentences(args.n)
    ref = resolve_model(args.model)
    st = SentenceTransformer(ref.load_path, device="cuda")
    st.encode(texts[:2000])  # warm-up: CUDA context, kernels
    base, t_base = best_of(lambda: st.encode(texts), args.repeats)
    rows = [{"variant": "sentence-transformers encode defaults (batch 32, fp32): baseline", "sent_per_s": len(texts) / t_base,
             "ratio": 1.0, "min_cosine": 1.0, "mean_cosine": 1.0}]

    def measure(label: str, precision: str = "auto", threads: int | None = None, batch: int | None = None) -> None:
        enc = SentenceEncoder(ref, precision=precision, device="cuda")
        if threads is not None:
            enc.tokenizer_threads = threads
        enc.encode(texts[:2000], batch)
        vecs, t = best_of(lambda: enc.encode(texts, batch), args.repeats)
        a, b = vecs.astype(np.float64), base.astype(np.float64)
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        rows.append({"variant": f"{label} [{enc.precision}, batch {batch or enc.default_batch_size()}, "
                                f"{enc.tokenizer_threads} tokenizer threads]",
                     "sent_per_s": len(texts) / t, "ratio": t_base / t, "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean())})
        print(rows[-1], flush=True)

    measure("ours, as the app runs it")
    measure("ours, 1 tokenizer thread", threads=1)
    measure("ours, 8 tokenizer threads", threads=8)
    measure("ours, fp16", precision="fp16")
    measure("ours, batch 1024", batch=1024)
    measure("ours, fp32", precision="fp32")
    print_table(rows, f"Embedding {len(texts):,} sentences with {args.model} on {torch.cuda.get_device_name()} "
                      f"({os.cpu_count()} CPU cores); ratio = speed vs sentence-transformers encode defaults")
    write_json("embed-cuda", {"n": len(texts), "model": args.model, "device": torch.cuda.get_device_name(),
                              "cpus": os.cpu_count(), "rows": rows})


if __name__ == "__main__":
    main()
