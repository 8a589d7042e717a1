"""Does torch.compile pay for MLM training here? Eager vs compiled encoder on the study cell's MLM step.

Issue 11 lists torch.compile "where it pays". This times the product's MLM step (core.train.mlm: packed
128-token blocks of the CrossNER music study TC, batch 16, the vocabulary head on masked positions only,
core.train.training's AdamW, autocast at the precision `auto` picks) with the encoder eager (baseline)
and wrapped in torch.compile, each in its own subprocess, alternating over --rounds rounds because one
round varies by more than the effect. The first step (compilation) is reported apart from the steady
s/step; "break-even" is how many steps a compiled run needs to win back its compilation.

    python bench/bench_compile.py --steps 15 --rounds 2 --threads 2     # ~6 min on 2 CPU cores
    python bench/bench_compile.py --device cuda --steps 50              # on a GPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import CROSSNER, print_table, write_json

ROOT = Path(__file__).resolve().parent.parent


def worker(mode: str, steps: int, device: str, threads: int) -> dict[str, Any]:
    import torch
    from transformers import DataCollatorForLanguageModeling

    from core.experiments.study import crossner_protocol, demo_protocol
    from core.lm.models import load_masked_lm, load_tokenizer, resolve_model
    from core.train.mlm import masked_lm_loss, pack_blocks
    from core.train.training import adamw, autocast, device_and_precision

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    study = crossner_protocol(CROSSNER, "music") if (CROSSNER / "music" / "train.txt").exists() else demo_protocol()
    device, precision = device_and_precision(device, "auto")
    ref = resolve_model("default")
    tokenizer = load_tokenizer(ref)
    model, _ = load_masked_lm(ref)
    model.to(device).train()
    blocks = pack_blocks(tokenizer, study.tc.texts(), 128)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    optimizer = adamw([{"params": list(model.parameters())}], lr=1e-4)
    prefix = model.base_model_prefix
    if mode == "compile":
        setattr(model, prefix, torch.compile(getattr(model, prefix)))

    def step(i: int) -> float:
        batch = collator([{"input_ids": blocks[(i * 16 + j) % len(blocks)]} for j in range(16)])
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device, precision):
            loss = masked_lm_loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss)

    def timed(fn) -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    first = timed(lambda: step(0))
    steady = timed(lambda: [step(i) for i in range(1, steps + 1)]) / steps
    return {"mode": mode, "device": device, "precision": precision, "first_step_s": first, "steady_s_per_step": steady}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=15, help="timed steps after the first")
    parser.add_argument("--rounds", type=int, default=2, help="eager/compiled pairs, alternating")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps, args.device, args.threads)))
        return
    runs = []
    for r in range(args.rounds):
        for mode in ("eager", "compile"):
            out = subprocess.run([sys.executable, __file__, "--worker", mode, "--steps", str(args.steps), "--device", args.device,
                                  "--threads", str(args.threads)], capture_output=True, text=True, cwd=ROOT, check=True)
            runs.append({"round": r + 1, **json.loads(out.stdout.strip().splitlines()[-1])})
            print(f"round {r + 1} {mode}: {runs[-1]['steady_s_per_step']:.3f} s/step (first step {runs[-1]['first_step_s']:.1f} s)",
                  flush=True)
    print_table(runs, "MLM step, eager vs torch.compile (each run its own process)")
    mean = {m: statistics.fmean(r["steady_s_per_step"] for r in runs if r["mode"] == m) for m in ("eager", "compile")}
    first = {m: statistics.fmean(r["first_step_s"] for r in runs if r["mode"] == m) for m in ("eager", "compile")}
    gain = mean["eager"] - mean["compile"]
    summary = {"eager_s_per_step": mean["eager"], "compile_s_per_step": mean["compile"],
               "speedup": mean["eager"] / mean["compile"], "compile_overhead_s": first["compile"] - first["eager"],
               "break_even_steps": (first["compile"] - first["eager"]) / gain if gain > 0 else None}
    print_table([summary], "mean over rounds (speedup = eager / compiled steady s/step)")
    write_json("bench_compile", {"args": vars(args), "runs": runs, "summary": summary,
                                 "data": "CrossNER music study TC" if (CROSSNER / "music").exists() else "demo TC"})


if __name__ == "__main__":
    main()
