"""Self-training and MLM augmentation (Tokarchuk et al. 2021) on one CrossNER domain with the
default encoder, against the plain LC baseline in the same run (test F1, mean of seeds).

Data (read from /work/shared/data/crossner or $NERSELECT_CROSSNER, never copied):
  LC   = train.txt (100 sentences)
  DEV  = first half of dev.txt (early stopping, CER threshold choice)
  DC   = second half of dev.txt with its labels dropped (the unlabeled pool to pseudo-label)
  TEST = test.txt
The masked LM for augmentation is B1: the default encoder after a short MLM run (core.train.mlm, its
fresh head trained) on the LC + DEV + DC sentences (no test text). Usage:
    python bench/bench_adaptation.py --domain music --seeds 1 2 --epochs 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import crossner_splits, print_table, write_json


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--domain", default="music")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--dev-limit", type=int, default=100)
    parser.add_argument("--measure", default="c1", choices=["c1", "c2"])
    parser.add_argument("--ratio", type=float, default=1.0)
    parser.add_argument("--sampling", default="entity")
    parser.add_argument("--order", default="independent")
    parser.add_argument("--criterion", default="top")
    parser.add_argument("--mlm-steps", type=int, default=60)
    parser.add_argument("--skip", nargs="*", default=[], choices=["selftrain", "augment"])
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from core.adapt.augment import MaskedLM, augment_corpus, combine_with_lc
    from core.adapt.selftrain import self_train
    from core.errors import UserError
    from core.runner.params import AugmentSettings
    from core.train.mlm import preset_config as mlm_preset
    from core.train.mlm import train_mlm
    from core.train.ner_model import load_ner_model
    from core.train.ner_predict import evaluate
    from core.train.ner_train import preset_config, train_ner

    lc, dev_all, test = crossner_splits(args.domain)
    half = len(dev_all) // 2
    dev, pool = dev_all.subset(range(half)), dev_all.subset(range(half, len(dev_all))).unlabeled()
    overrides = {"epochs": args.epochs, "patience": args.patience, "dev_limit": args.dev_limit, "lr": 5e-5, "head_lr": 1e-3}
    runs: dict[str, list[float]] = {"LC baseline": [], "self-training": [], "MLM augmentation": []}
    extra: dict[str, list] = {"selftrain": [], "augment": []}
    t_start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        mlm_dir = None
        if "augment" not in args.skip:
            t0 = time.time()
            texts = lc.texts() + dev.texts() + pool.texts()
            train_mlm(texts, "default", tmp / "b1", mlm_preset("demo", max_steps=args.mlm_steps), log=print)
            mlm_dir = tmp / "b1"
            print(f"MLM run (B1) finished in {time.time() - t0:.0f}s")
        for seed in args.seeds:
            config = preset_config("demo", seed=seed, **overrides)
            base_dir = tmp / f"lc-{seed}"
            t0 = time.time()
            train_ner(lc, dev, "default", base_dir, config, log=print)
            runs["LC baseline"].append(evaluate(load_ner_model(base_dir), test)["f1"])
            print(f"seed {seed}: LC baseline F1 {runs['LC baseline'][-1]:.4f} ({time.time() - t0:.0f}s)")
            if "selftrain" not in args.skip:
                t0 = time.time()
                try:
                    # test=None: the LC model was just evaluated above; only the self-trained one is scored here
                    r = self_train(base_dir, lc, pool, dev, None, tmp / f"st-{seed}", measure=args.measure, threshold="auto",
                                   ratio=args.ratio, seed=seed, preset="demo", config=overrides, log=print)
                    r["selftrain_f1"] = evaluate(load_ner_model(tmp / f"st-{seed}"), test)["f1"]
                    r["baseline_f1"] = runs["LC baseline"][-1]
                except UserError as exc:  # e.g. no pseudo-label reaches the threshold: report it, keep the other runs
                    print(f"seed {seed}: self-training skipped: {exc}")
                    extra["selftrain"].append({"error": str(exc)})
                    r = None
                if r is not None:
                    runs["self-training"].append(r["selftrain_f1"])
                    extra["selftrain"].append({k: r[k] for k in ("threshold", "confident", "pseudo_labeled", "baseline_f1",
                                                                 "selftrain_f1", "dev_sentence_accuracy")})
                    print(f"seed {seed}: self-training F1 {r['selftrain_f1']:.4f} ({time.time() - t0:.0f}s)")
            if mlm_dir is not None:
                t0 = time.time()
                gen = augment_corpus(lc, MaskedLM(mlm_dir), AugmentSettings(sampling=args.sampling, order=args.order,
                                                                          criterion=args.criterion, seed=seed))
                train_ner(combine_with_lc(lc, gen.corpus), dev, "default", tmp / f"aug-{seed}", config, log=print)
                runs["MLM augmentation"].append(evaluate(load_ner_model(tmp / f"aug-{seed}"), test)["f1"])
                extra["augment"].append({k: v for k, v in gen.stats.items() if k != "config"})
                print(f"seed {seed}: augmentation F1 {runs['MLM augmentation'][-1]:.4f}, {gen.stats['generated']} generated "
                      f"({time.time() - t0:.0f}s)")
    base = statistics.mean(runs["LC baseline"])
    rows = [{"method": name, "seeds": len(f1s), "test_f1_mean": statistics.mean(f1s),
             "test_f1_sd": statistics.stdev(f1s) if len(f1s) > 1 else 0.0,
             "ratio_vs_lc": statistics.mean(f1s) / base if base else None, "per_seed": " ".join(f"{f:.4f}" for f in f1s)}
            for name, f1s in runs.items() if f1s]
    print_table(rows, f"CrossNER {args.domain}: LC {len(lc)}, DEV {len(dev)}, unlabeled {len(pool)}, TEST {len(test)}; "
                      f"default encoder; {time.time() - t_start:.0f}s")
    write_json(f"adaptation_{args.domain}", {"args": vars(args), "rows": rows, "details": extra,
                                             "seconds": time.time() - t_start})


if __name__ == "__main__":
    main()
