"""BERT-CRF on CrossNER music with the default encoder on CPU: test F1 and wall time.

The reference data is read from /work/shared/data/crossner (or $NERSELECT_CROSSNER);
training uses the 100 train sentences, early stopping on a dev subset, evaluation on
the full test split. Baseline in the same run: the untrained model (same head, epoch 0),
whose F1 shows what "far above zero" is measured against. Usage:
    python bench/bench_ner_crossner.py --epochs 20 --dev-limit 100
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _common import crossner_splits, print_table, write_json


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--domain", default="music")
    parser.add_argument("--model", default="default")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--dev-limit", type=int, default=100)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from core.train.ner_model import build_ner_model, label_set, load_ner_model
    from core.train.ner_predict import evaluate
    from core.train.ner_train import preset_config, train_ner

    train, dev, test = crossner_splits(args.domain)
    config = preset_config("demo", epochs=args.epochs, patience=args.patience, dev_limit=args.dev_limit, lr=args.lr,
                           head_lr=args.head_lr, seed=args.seed)
    untrained = evaluate(build_ner_model(args.model, label_set(train, dev)), test)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        summary = train_ner(train, dev, args.model, Path(tmp) / "model", config, log=print)
        train_s = time.time() - t0
        t1 = time.time()
        scores = evaluate(load_ner_model(Path(tmp) / "model"), test)
        eval_s = time.time() - t1
    rows = [
        {"model": "untrained head (baseline)", "test_f1": untrained["f1"], "precision": untrained["precision"],
         "recall": untrained["recall"], "epochs": 0, "train_s": 0.0},
        {"model": f"BERT-CRF {args.model}", "test_f1": scores["f1"], "precision": scores["precision"], "recall": scores["recall"],
         "epochs": summary["epochs_run"], "train_s": train_s},
    ]
    print_table(rows, f"CrossNER {args.domain}: train {len(train)}, dev {min(len(dev), args.dev_limit)} (subset), test {len(test)}")
    print(f"best dev F1 {summary['best_dev_f1']:.4f} at epoch {summary['best_epoch']}; train {summary['sentences_per_s']:.1f} "
          f"sentences/s; test eval {eval_s:.1f}s; total {train_s + eval_s:.0f}s")
    print_table([{"type": k, **v} for k, v in scores["per_type"].items()], "per type")
    write_json(f"ner_crossner_{args.domain}", {"args": vars(args), "rows": rows, "per_type": scores["per_type"],
                                               "summary": summary, "eval_s": eval_s, "ratio_vs_untrained":
                                               scores["f1"] / untrained["f1"] if untrained["f1"] else None})


if __name__ == "__main__":
    main()
