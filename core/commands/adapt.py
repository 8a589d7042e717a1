"""Data adaptation commands (Tokarchuk et al. 2021): selftrain, augment.

Both run their job functions (core.adapt.selftrain, core.adapt.augment) in-process (jobs.run_inline), so the
numbers printed here are the ones the Adapt page shows for the same inputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cliutil import add_workspace_arg, out_file, out_folder, print_json, print_warning, progress_wanted, tqdm_progress
from core.data.workspace import Workspace
from core.errors import UserError
from core.recipes.presets import PRESETS, preset_help
from core.runner import jobs
from core.runner.params import (
    CONFIDENCE_MEASURES,
    CRITERIA,
    ORDERS,
    SAMPLINGS,
    AugmentParams,
    SelftrainParams,
    check_threshold,
    field_default,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("selftrain", help="self-training with CRF confidence: pseudo-label, filter by a CER threshold, retrain")
    p.add_argument("--model", required=True, help="fine-tuned NER model folder trained on LC")
    p.add_argument("--lc", required=True, help="labeled corpus (file, workspace corpus name or role)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--unlabeled", help="unlabeled sentences to pseudo-label (a corpus: DC, a name or a file)")
    source.add_argument("--selection", help="or the DC sentences a saved selection picked (its KEY: `selections`)")
    p.add_argument("--dev", required=True, help="labeled DEV split (threshold choice by confidence error rate)")
    p.add_argument("--test", default=None, help="labeled TEST split (F1 of the LC model and of the self-trained model)")
    p.add_argument("--measure", choices=CONFIDENCE_MEASURES, default=field_default(SelftrainParams, "measure"),
                   help="c1 = sequence posterior, c2 = minimum tag marginal")
    p.add_argument("--threshold", default=field_default(SelftrainParams, "threshold"),
                   help="confidence threshold in [0, 1], or 'auto' for the CER-optimal one")
    p.add_argument("--ratio", type=float, default=field_default(SelftrainParams, "ratio"),
                   help="pseudo-labeled sentences k = ratio x |LC| (paper: 0.5, 1, 2)")
    p.add_argument("--preset", default=None, choices=PRESETS,
                   help="NER training preset for the retraining (default: the LC model's own, as on the Adapt page, "
                        "so the F1 comparison measures self-training alone): " + preset_help("ner"))
    p.add_argument("--seed", type=int, default=field_default(SelftrainParams, "seed"))
    p.add_argument("--out", required=True, type=out_folder, help="folder for the self-trained NER model")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_selftrain)

    p = sub.add_parser("augment", help="MLM-based augmentation of a labeled corpus (labels are kept)")
    p.add_argument("--lc", required=True, help="labeled corpus to augment (file, workspace corpus name or role)")
    p.add_argument("--model", required=True, help="masked LM with a trained MLM head (an MLM run's folder or a HF id)")
    p.add_argument("--sampling", choices=SAMPLINGS, default=field_default(AugmentParams, "sampling"))
    p.add_argument("--order", choices=ORDERS, default=field_default(AugmentParams, "order"))
    p.add_argument("--criterion", choices=CRITERIA, default=field_default(AugmentParams, "criterion"))
    p.add_argument("--min-token-prob", type=float, default=field_default(AugmentParams, "min_token_prob"),
                   help="ignore MLM candidates below this probability")
    p.add_argument("--ner-model", default=None, help="NER model folder scoring generated sentences")
    p.add_argument("--min-confidence", type=float, default=field_default(AugmentParams, "min_confidence"),
                   help="drop generated sentences below this NER confidence")
    p.add_argument("--measure", choices=CONFIDENCE_MEASURES, default=field_default(AugmentParams, "measure"),
                   help="which NER confidence --min-confidence applies to")
    p.add_argument("--per-sentence", type=int, default=field_default(AugmentParams, "per_sentence"),
                   help="variants generated per LC sentence")
    p.add_argument("--seed", type=int, default=field_default(AugmentParams, "seed"))
    p.add_argument("--device", default=field_default(AugmentParams, "device"))
    p.add_argument("--out", required=True, type=out_file, help="output CoNLL file (a .jsonl with the same stem is written beside it)")
    p.add_argument("--check-tc", default=field_default(AugmentParams, "check_tc"),
                   help="corpus on which the MLM's masked-word accuracy is measured, a check that its head predicts "
                   "words at all (default: the workspace's TC, which B1 trained on: a floor, not a held-out score; "
                   "give DEV for text it never saw; 'none' skips it)")
    p.add_argument("--allow-degenerate", action="store_true",
                   help="write the output even when the quality gate finds the MLM degenerate (same few words everywhere)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_augment)


def _threshold(value: str) -> float | str:
    if value == "auto":
        return value
    try:
        t = float(value)
        check_threshold(t)  # the range the job's params check (core.runner.params)
    except ValueError:
        raise UserError(f"--threshold: expected a number in [0, 1] or 'auto', got {value!r}") from None
    except UserError as exc:
        raise UserError(f"--threshold: {exc}") from None
    return t


def cmd_selftrain(args: argparse.Namespace) -> int:
    from core.train.lineage import model_preset

    ws = Workspace(args.workspace)
    own = model_preset(args.model) if args.preset is None else None
    preset = args.preset or own or field_default(SelftrainParams, "preset")
    if args.preset is None:
        print(f"retraining with preset {preset} (" + ("the LC model's own" if own else "the LC model's preset is not "
              "recorded, so the default: the F1 comparison may mix recipes") + "; --preset sets it)", file=sys.stderr)
    params = {"model": args.model, "lc": args.lc, "unlabeled": args.unlabeled, "selection": args.selection,
              "dev": args.dev, "test": args.test, "measure": args.measure, "threshold": _threshold(args.threshold),
              "ratio": args.ratio, "preset": preset, "seed": args.seed, "out": str(Path(args.out).resolve())}
    with tqdm_progress("selftrain", enabled=progress_wanted(args)) as progress:
        result = jobs.run_inline(ws, "selftrain", params, progress=progress)
    print_warning(result)
    if args.json:
        print_json(result)
        return 0
    print(f"{args.measure} threshold {result['threshold']:.3f} (CER-optimal on DEV: {result['optimal_threshold']:.3f})")
    print(f"pseudo-labeled: {result['pseudo_labeled']} of {result['confident']} confident / {result['unlabeled']} unlabeled "
          f"(k = {result['k']}); trained on {result['train_sentences']} sentences -> {result['model_dir']}")
    if "baseline_f1" in result:
        print(f"TEST F1: LC model {result['baseline_f1']:.4f}, self-trained {result['selftrain_f1']:.4f}")
    return 0


def cmd_augment(args: argparse.Namespace) -> int:
    ws = Workspace(args.workspace)
    if args.min_confidence > 0 and not args.ner_model:
        raise UserError("--min-confidence needs --ner-model")
    params = {"lc": args.lc, "model": args.model, "sampling": args.sampling, "order": args.order, "criterion": args.criterion,
              "min_token_prob": args.min_token_prob, "ner_model": args.ner_model, "min_confidence": args.min_confidence,
              "measure": args.measure, "per_sentence": args.per_sentence, "seed": args.seed, "device": args.device,
              "out": str(Path(args.out).resolve()),
              "check_tc": None if str(args.check_tc).lower() == "none" else args.check_tc,
              "allow_degenerate": args.allow_degenerate}
    with tqdm_progress("augment", enabled=progress_wanted(args)) as progress:
        result = jobs.run_inline(ws, "augment", params, progress=progress)
    print_warning(result)
    if args.json:
        print_json({k: v for k, v in result.items() if k != "config"})
        return 0
    print(f"{result['generated']} sentences generated from {result['input_sentences']} "
          f"({result['masked_per_sentence']:.2f} masked per sentence, {result['replaced_tokens']} tokens replaced) -> {args.out}")
    return 0
