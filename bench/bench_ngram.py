"""Kneser-Ney LM throughput and agreement, against NLTK's KneserNeyInterpolated in the same run.

1. Throughput on a large generated corpus (core.data.demo DC, ~1.2M tokens): estimation (order 3
   and 5), scoring with the numpy scorer and with kenlm-ex on the written ARPA, ARPA write/load.
2. Baseline on a small real corpus (CrossNER train+dev, ~30k tokens, or the demo if absent):
   NLTK fit + score vs ours on the same text (tokens/s ratio).
3. Agreement: NLTK's model is ours with fixed discounts (0, 0.1, 0.1) when both see the same
   n-grams (sentences padded with one <s>); compare p(w | 2-word context) on held-out sentences
   whose words are all in the training vocabulary (NLTK gives unseen words probability 0).

Usage: python bench/bench_ngram.py [--dc-size 60000] [--nltk-tokens 30000]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import peak_rss_mb, print_table, write_json

from core.lm.ngram import build_lm, load_arpa


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def small_corpus(n_tokens: int) -> tuple[list[list[str]], list[list[str]], str]:
    root = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "crossner"
    from core.data.corpus import read_corpus

    if (root / "music" / "train.txt").exists():
        files = [root / d / f"{sp}.txt" for d in ("music", "literature", "politics") for sp in ("train", "dev")]
        sents = [s for f in files for s in read_corpus(f).tokens]
        test = read_corpus(root / "music" / "test.txt").tokens
        name = "CrossNER music+literature+politics train/dev"
    else:
        from core.data.demo import generate_demo

        demo = generate_demo(seed=3, dc_size=3000)
        sents, test, name = demo.dc.tokens, demo.tc.tokens, "demo DC"
    out, n = [], 0
    for s in sents:
        out.append(s)
        n += len(s)
        if n >= n_tokens:
            break
    return out, test, name


def nltk_comparison(n_tokens: int) -> tuple[list[dict], dict]:
    from nltk.lm import KneserNeyInterpolated
    from nltk.util import everygrams

    train, test, name = small_corpus(n_tokens)
    n = sum(map(len, train))
    vocab = {w for s in train for w in s}
    held = [s for s in test if s and all(w in vocab for w in s)][:60]
    padded = [["<s>", *s, "</s>"] for s in train]
    nltk_lm = KneserNeyInterpolated(3, discount=0.1)
    _, t_nltk_fit = timed(lambda: nltk_lm.fit([list(everygrams(p, max_len=3)) for p in padded],
                                              vocabulary_text=[w for p in padded for w in p]))
    ours, t_ours_fit = timed(lambda: build_lm(train, order=3, discounts=[0.0, 0.1, 0.1]))
    # Positions with a full 2-word context (NLTK divides by zero for the first word after a single <s>).
    queries = [(p[i - 2:i], p[i]) for s in held for p in [["<s>", *s, "</s>"]] for i in range(2, len(p))]
    nl, t_nltk_score = timed(lambda: np.array([nltk_lm.logscore(w, c) for c, w in queries]) / math.log2(10))
    idx = ours.vocab.index

    def ours_scores() -> np.ndarray:
        out = []
        for c, w in queries:
            start = c[0] == "<s>"
            out.append(ours.next_word_log10(c[1:] if start else c, sentence_start=start)[idx[w]])
        return np.array(out)

    mine = ours_scores()
    # Our bulk scorer on the same held-out sentences (all positions), for throughput.
    _, t_ours_score = timed(lambda: ours.score_sentences(held))
    n_scored = sum(len(s) + 1 for s in held)
    ppl_nltk = 10 ** (-nl.mean())
    ppl_ours = 10 ** (-mine.mean())
    rows = [{"step": "fit (order 3)", "nltk_s": t_nltk_fit, "ours_s": t_ours_fit, "nltk_tok/s": n / t_nltk_fit,
             "ours_tok/s": n / t_ours_fit, "speedup": t_nltk_fit / t_ours_fit},
            {"step": "score", "nltk_s": t_nltk_score, "ours_s": t_ours_score, "nltk_tok/s": len(queries) / t_nltk_score,
             "ours_tok/s": n_scored / t_ours_score, "speedup": (n_scored / t_ours_score) / (len(queries) / t_nltk_score)}]
    agreement = {"corpus": name, "train_tokens": n, "held_out_sentences": len(held), "compared_probabilities": len(queries),
                 "max_abs_log10_diff": float(np.max(np.abs(nl - mine))), "ppl_nltk": float(ppl_nltk), "ppl_ours": float(ppl_ours),
                 "setting": "ours with discounts (0, 0.1, 0.1) vs NLTK KneserNeyInterpolated(3, discount=0.1), same single-<s> n-grams"}
    return rows, agreement


def throughput(dc_size: int) -> list[dict]:
    from core.data.demo import generate_demo

    demo = generate_demo(seed=1, dc_size=dc_size)
    tokens = demo.dc.tokens
    n = sum(map(len, tokens))
    rows = []
    for order in (3, 5):
        lm, t = timed(lambda o=order: build_lm(tokens, order=o))
        rows.append({"step": f"estimate order {order}", "tokens": n, "seconds": t, "tok/s": n / t, "ngrams": sum(lm.counts())})
    lm = build_lm(tokens, order=3)
    scores, t = timed(lambda: lm.score_sentences(tokens, backend="numpy"))
    rows.append({"step": "score numpy (order 3)", "tokens": n, "seconds": t, "tok/s": n / t, "ngrams": sum(lm.counts())})
    with tempfile.TemporaryDirectory() as tmp:
        path, t = timed(lambda: lm.write_arpa(Path(tmp) / "dc.arpa"))
        rows.append({"step": "write ARPA", "tokens": n, "seconds": t, "tok/s": n / t, "ngrams": sum(lm.counts())})
        loaded, t = timed(lambda: load_arpa(path))
        rows.append({"step": "load ARPA", "tokens": n, "seconds": t, "tok/s": n / t, "ngrams": sum(loaded.counts())})
        try:
            via_kenlm, t = timed(lambda: loaded.score_sentences(tokens, backend="kenlm"))
            diff = float(np.max(np.abs(via_kenlm.log10_prob - scores.log10_prob)))
            rows.append({"step": f"score kenlm-ex (max |diff| {diff:.1e})", "tokens": n, "seconds": t, "tok/s": n / t,
                         "ngrams": sum(loaded.counts())})
        except Exception as exc:
            rows.append({"step": f"score kenlm-ex unavailable: {exc}", "tokens": n, "seconds": float("nan"), "tok/s": float("nan"),
                         "ngrams": 0})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dc-size", type=int, default=60000, help="demo DC sentences (~20 tokens each)")
    ap.add_argument("--nltk-tokens", type=int, default=30000)
    args = ap.parse_args()
    big = throughput(args.dc_size)
    print_table(big, "Throughput (numpy KN estimator and scorers)")
    small, agreement = nltk_comparison(args.nltk_tokens)
    print_table(small, f"Against NLTK KneserNeyInterpolated on {agreement['train_tokens']:,} tokens")
    print_table([agreement], "Agreement with NLTK where the models coincide")
    print(f"\npeak RSS {peak_rss_mb():.0f} MB")
    write_json("ngram", {"throughput": big, "nltk": small, "agreement": agreement, "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()
