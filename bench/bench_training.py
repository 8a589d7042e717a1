"""Training throughput: MLM tokens/s with packed blocks vs per-sentence padding (the baseline,
same run, same model, same steps), and NER fine-tuning / prediction sentences/s.

Sentences come from CrossNER (train + dev of one domain) when present, else a synthetic
corpus. Tokens/s counts real (non-[PAD]) tokens, so the ratio is what packing buys.
Usage:
    python bench/bench_training.py --steps 10 --threads 1
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from _common import CROSSNER, print_table, write_json


def _corpora(domain: str):
    from core.corpus import Corpus, read_corpus

    data = CROSSNER / domain
    if (data / "train.txt").exists():
        return read_corpus(data / "train.txt"), read_corpus(data / "dev.txt"), f"CrossNER {domain}"
    rng = random.Random(0)
    words = "the band released an album in with guitar singer song tour record label award festival city".split()
    tokens = [rng.choices(words, k=rng.randint(8, 40)) for _ in range(600)]
    tags = [["O"] * (len(t) - 1) + ["B-MISC"] for t in tokens]
    return Corpus(tokens[:100], tags[:100]), Corpus(tokens[100:], tags[100:]), "synthetic"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="default")
    parser.add_argument("--domain", default="music")
    parser.add_argument("--steps", type=int, default=10, help="MLM optimizer steps per variant")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--ner-epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (NERSELECT_TORCH_THREADS)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.threads:
        os.environ["NERSELECT_TORCH_THREADS"] = str(args.threads)
    from transformers.utils import logging as hf_logging

    from core import mlm, ner

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    train, dev, source = _corpora(args.domain)
    texts = train.texts() + dev.texts()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        masked_only = mlm.masked_lm_loss
        variants = (("MLM per-sentence padding (baseline)", False, masked_only),
                    ("MLM packed blocks", True, masked_only),
                    ("MLM packed blocks, head on every position (transformers' loss)", True, lambda m, b: m(**b).loss))
        for name, packed, loss_fn in variants:
            mlm.masked_lm_loss = loss_fn  # the third row measures what computing only masked positions saves
            cfg = mlm.preset_config("paper", max_steps=args.steps, batch_size=args.batch_size, block_size=args.block_size,
                                    pack=packed, epochs=100, warmup_ratio=0.0)
            r = mlm.train_mlm(texts, args.model, Path(tmp) / f"mlm-{len(rows)}", cfg)
            rows.append({"variant": name, "steps": r["steps"], "examples": r["examples"], "tokens/s": r["tokens_per_s"],
                         "seconds": r["seconds"]})
        mlm.masked_lm_loss = masked_only
        ratio = rows[1]["tokens/s"] / rows[0]["tokens/s"]
        head_ratio = rows[1]["tokens/s"] / rows[2]["tokens/s"]
        cfg = ner.preset_config("demo", epochs=args.ner_epochs, patience=args.ner_epochs)
        t0 = time.time()
        s = ner.train_ner(train, None, args.model, Path(tmp) / "ner", cfg)
        ner_train_s = time.time() - t0
        model = ner.load_ner_model(Path(tmp) / "ner")
        sample = dev.subset(range(min(300, len(dev))))
        t1 = time.time()
        ner.predict_corpus(model, sample, batch_size=32)
        predict_s = time.time() - t1
    print_table(rows, f"MLM throughput on {source} ({len(texts)} sentences, batch {args.batch_size}, block {args.block_size})")
    print(f"\npacking / per-sentence padding: {ratio:.2f}x tokens/s")
    print(f"head on masked positions only / on every position: {head_ratio:.2f}x tokens/s")
    ner_rows = [{"step": "NER train", "sentences": s["train_sentences"] * s["epochs_run"], "seconds": ner_train_s,
                 "sentences/s": s["sentences_per_s"]},
                {"step": "NER predict (c1, c2)", "sentences": len(sample), "seconds": predict_s, "sentences/s": len(sample) / predict_s}]
    print_table(ner_rows, "NER")
    write_json("training", {"args": vars(args), "source": source, "mlm": rows, "packing_ratio": ratio, "masked_head_ratio": head_ratio,
                            "ner": ner_rows,
                            "device": s["device"]})


if __name__ == "__main__":
    main()
