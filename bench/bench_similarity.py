"""Similarity measures with a >= 1M-token DC as the source and the TC as the target.

Each measure runs in its own child process so its time and peak RSS are its own. Baseline in
the same run: JSD and TVC written the obvious pure-Python way (collections.Counter over n-gram
tuples, sets), on the same corpora; the ratio is baseline time / ours.

Usage: python bench/bench_similarity.py [--dc-size 60000] [--skip-wvv]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections import Counter

from _common import peak_rss_mb, print_table, write_json


def corpora(dc_size: int):
    from core.data.demo import generate_demo

    demo = generate_demo(seed=1, dc_size=dc_size)
    return demo.dc.tokens, demo.tc.tokens


def counter_jsd(source, target, max_order: int = 3) -> float:
    """The baseline: n-gram tuples counted in Counters, JSD summed in Python."""
    def counts(corpus):
        c = Counter()
        for s in corpus:
            for n in range(1, max_order + 1):
                c.update(tuple(s[i:i + n]) for i in range(len(s) - n + 1))
        return c

    p, q = counts(source), counts(target)
    sp, sq = sum(p.values()), sum(q.values())
    js = 0.0
    for g in p.keys() | q.keys():
        a, b = p.get(g, 0) / sp, q.get(g, 0) / sq
        m = (a + b) / 2
        js += 0.5 * (a * math.log2(a / m) if a else 0) + 0.5 * (b * math.log2(b / m) if b else 0)
    return js


def run_child(step: str, dc_size: int) -> None:
    """Print 'seconds peak_mb value' for one step."""
    from core.similarity.measures import (
        SimilarityParams,
        content_vocabulary,
        lm_perplexities,
        ngram_jsd,
        target_vocab_covered,
        train_word_vectors,
        type_token_ratio,
        vocabulary,
        word_vector_variance,
    )

    dc, tc = corpora(dc_size)
    params = SimilarityParams()
    t = time.perf_counter()
    if step == "corpus-only":  # imports + the corpora as Python lists: the floor under every other row's RSS
        value = float(len(dc))
    elif step == "tvc":
        value = target_vocab_covered(vocabulary(dc), vocabulary(tc))
    elif step == "tvcc":
        value = target_vocab_covered(content_vocabulary(dc, "approx"), content_vocabulary(tc, "approx"))
    elif step == "ppl":
        from core.lm.ngram import build_lm

        value = lm_perplexities(build_lm(dc, order=3), tc)[0]
    elif step == "jsd":
        value = ngram_jsd(dc, tc)
    elif step == "ttr":
        value = type_token_ratio(dc)
    elif step == "wvv":
        value = word_vector_variance(train_word_vectors(dc, params), tc)
    elif step == "dc-ppl-under-tc":
        from core.lm.ngram import build_lm

        value = float(build_lm(tc, order=3).sentence_perplexities(dc).mean())
    elif step == "jsd-baseline":
        value = counter_jsd(dc, tc)
    elif step == "tvc-baseline":
        vs = {w for s in dc for w in s}
        vt = {w for s in tc for w in s}
        value = sum(1 for w in vt if w in vs) / len(vt)
    else:
        raise SystemExit(f"unknown step {step}")
    print(time.perf_counter() - t, peak_rss_mb(), value)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dc-size", type=int, default=60000, help="demo DC sentences (~20 tokens each)")
    ap.add_argument("--skip-wvv", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_child(args.child, args.dc_size)
        return
    dc, tc = corpora(args.dc_size)
    n_dc, n_tc = sum(map(len, dc)), sum(map(len, tc))
    del dc, tc
    steps = ["corpus-only", "tvc", "tvcc", "ppl", "jsd", "ttr", "dc-ppl-under-tc"]
    steps += ([] if args.skip_wvv else ["wvv"]) + ["jsd-baseline", "tvc-baseline"]
    rows, by_step = [], {}
    for step in steps:
        out = subprocess.run([sys.executable, __file__, "--child", step, "--dc-size", str(args.dc_size)],
                             capture_output=True, text=True, check=True).stdout.split()
        seconds, peak, value = float(out[0]), float(out[1]), float(out[2])
        by_step[step] = seconds
        rows.append({"measure": step, "seconds": seconds, "peak_rss_mb": peak, "value": value, "dc_tok/s": n_dc / seconds})
    for row in rows:
        base = by_step.get(f"{row['measure']}-baseline")
        row["baseline/ours"] = base / row["seconds"] if base else None
    print_table(rows, f"Similarity with DC = {n_dc:,} tokens (source), TC = {n_tc:,} tokens (target); "
                      "each row in a fresh process")
    write_json("similarity", {"dc_tokens": n_dc, "tc_tokens": n_tc, "rows": rows,
                              "note": "times exclude corpus generation and include imports (tvcc: scikit-learn's ~2 s); "
                                      "peak RSS includes the corpus as Python lists"})
    print(json.dumps({r["measure"]: round(r["seconds"], 2) for r in rows}))


if __name__ == "__main__":
    main()
