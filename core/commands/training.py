"""Training commands: `mlm`, `ner train|predict|eval`, `experiment`.

Each runs the same job function the app submits (`jobs.run_inline`), in this process,
with a tqdm bar; the run folder (log.txt, metrics.jsonl, checkpoints) goes under the
workspace's runs/ unless --run-dir is given, so an interrupted command can be resumed
by running it again with the same --run-dir.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cliutil import add_workspace_arg, out_file, out_folder, print_json, print_warning, progress_wanted, tqdm_progress
from core.data.workspace import CorpusRef, Workspace, resolve_corpus_ref
from core.errors import TIME_LIMIT_EXIT, UserError
from core.experiments.plan import BASELINES
from core.recipes.budget import Budget
from core.recipes.duration import parse_duration
from core.recipes.modes import MODES, mode_reads
from core.recipes.presets import DEFAULT_PRESET, PICK_SNAPSHOTS, PRESETS, pick_defaults, preset_help
from core.runner.jobresult import JobResult
from core.runner.params import ExperimentParams, MlmParams, NerParams, PickParams, PredictParams, field_default


def _run(args: argparse.Namespace, kind: str, params: dict, desc: str) -> dict:
    from core.runner import jobs

    ws = Workspace(args.workspace)
    run_dir = Path(args.run_dir) if getattr(args, "run_dir", None) else None
    with tqdm_progress(desc, enabled=progress_wanted(args)) as bar:
        result = jobs.run_inline(ws, kind, params, run_dir=run_dir, progress=bar)
    print_warning(result)
    return result


def _config_overrides(args: argparse.Namespace, names: tuple[str, ...]) -> dict:
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _corpus(args: argparse.Namespace, ref: str | None) -> str | None:
    """A corpus argument resolved now (name, role, then file; core.data.workspace.resolve_corpus_ref), so a
    typo fails before any training and the job records the corpus it will read."""
    if ref is None:
        return None
    return resolve_corpus_ref(ref, getattr(args, "workspace", None)).param


def _model(ref: str | None) -> str | None:
    """A model folder becomes absolute (jobs run elsewhere); 'default' and HF ids pass through."""
    if ref is None:
        return None
    p = Path(ref)
    return str(p.resolve()) if p.exists() else ref


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mlm", help="MLM continued pretraining: a named recipe over TC, a selection and DC (--mode, as "
                                   "the Runs page), or plain on corpus files (--train)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--mode", choices=MODES, help="tc+sc: TC and a saved selection (SC) mixed 1:1, the smaller "
                                                      "repeated (the seed method); tapt: TC; dapt: DC; tapt+dapt: DC "
                                                      "then TC")
    source.add_argument("--train", nargs="+", metavar="FILE",
                        help="plain continued pretraining on these corpus files or workspace corpora, concatenated")
    p.add_argument("--tc", default=field_default(MlmParams, "tc"), help="with --mode: the task corpus (default: tc)")
    p.add_argument("--selection", help="with --mode tc+sc: a saved selection's key (`python -m core selections`)")
    p.add_argument("--dc", help="with --mode dapt or tapt+dapt: the domain corpus (e.g. dc)")
    p.add_argument("--model", default=field_default(MlmParams, "model"), help="encoder: 'default', a folder, or a Hugging Face id")
    p.add_argument("--out", required=True, type=out_folder, help="output model folder (safetensors + tokenizer)")
    p.add_argument("--preset", default=field_default(MlmParams, "preset"), choices=PRESETS, help=preset_help("mlm"))
    p.add_argument("--epochs", type=int)
    p.add_argument("--max-steps", type=int, dest="max_steps")
    p.add_argument("--batch-size", type=int, dest="batch_size")
    p.add_argument("--lr", type=float)
    p.add_argument("--block-size", type=int, dest="block_size")
    p.add_argument("--grad-accum", type=int, dest="grad_accum")
    p.add_argument("--seed", type=int)
    p.add_argument("--no-pack", action="store_false", dest="pack", default=None, help="one sentence per example (slower)")
    p.add_argument("--snapshot-every", type=int, dest="snapshot_every",
                   help="keep a model snapshot every N steps (RUN_DIR/phase-train/snapshots) for `pick-checkpoint`")
    p.add_argument("--head-warmup-steps", type=int, dest="head_warmup_steps",
                   help="train only the MLM head for the first N steps, the encoder frozen (default 0)")
    p.add_argument("--layer-lr-decay", type=float, dest="layer_lr_decay",
                   help="lr x DECAY per layer below the head, so lower layers move less (default 1.0: one lr)")
    p.add_argument("--freeze-layers", type=int, dest="freeze_layers",
                   help="keep the embeddings and the lowest N transformer layers as they are (default 0)")
    p.add_argument("--run-dir", help="run folder for log, metrics and checkpoints (rerun with it to resume)")
    p.add_argument("--quiet", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_mlm)

    p = sub.add_parser("drift", help="how far MLM moved an encoder: sentence cosine and linear CKA of its embeddings "
                                     "against the base encoder's, on a corpus's sentences")
    p.add_argument("--model", required=True, help="the pretrained encoder (a folder, e.g. an MLM run's model)")
    p.add_argument("--base", default="default", help="the encoder it started from (default: default)")
    p.add_argument("--corpus", default="tc", help="sentences to compare on: a workspace corpus, role or file (default: tc)")
    p.add_argument("--sample", type=int, default=300, help="at most this many sentences (default: 300)")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_drift)

    p = sub.add_parser("pick-checkpoint", help="score the base encoder and an MLM run's snapshots by DEV F1 after a short "
                                               "NER fine-tune on LC; say which to use and whether pretraining helped")
    p.add_argument("--base", default=field_default(PickParams, "base"), help="the encoder the MLM run started from")
    p.add_argument("--snapshots", help="folder of step-N snapshots (an MLM run's RUN_DIR/phase-NAME/snapshots)")
    p.add_argument("--final", help="the MLM run's final model folder")
    p.add_argument("--lc", required=True, help="labeled corpus for the probe's fine-tune")
    p.add_argument("--dev", required=True, help="labeled DEV corpus the probe scores")
    p.add_argument("--preset", default=field_default(PickParams, "preset"), choices=PRESETS,
                   help="NER recipe of the probe (epochs capped)")
    p.add_argument("--epochs", type=int, default=field_default(PickParams, "epochs"), help="probe epochs per candidate")
    p.add_argument("--min-gain", type=float, default=field_default(PickParams, "min_gain"),
                   help="DEV F1 a checkpoint must add over the base to be used")
    p.add_argument("--seed", type=int, default=field_default(PickParams, "seed"))
    p.add_argument("--run-dir", help="run folder for the probe runs and the log (default: a temporary one)")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_pick_checkpoint)

    ner = sub.add_parser("ner", help="BERT-CRF NER: train, predict, eval")
    nsub = ner.add_subparsers(dest="ner_cmd", required=True)
    t = nsub.add_parser("train", help="fine-tune encoder + CRF on a labeled corpus, early stopping on dev F1")
    t.add_argument("--train", required=True)
    t.add_argument("--dev", help="dev corpus for early stopping (default: none, train for --epochs)")
    t.add_argument("--test", help="also evaluate on this corpus and save its predictions in the run folder")
    t.add_argument("--model", default=field_default(NerParams, "model"))
    t.add_argument("--out", required=True, type=out_folder)
    t.add_argument("--preset", default=field_default(NerParams, "preset"), choices=PRESETS, help=preset_help("ner"))
    t.add_argument("--epochs", type=int)
    t.add_argument("--patience", type=int)
    t.add_argument("--seed", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--head-lr", type=float, dest="head_lr")
    t.add_argument("--batch-size", type=int, dest="batch_size")
    t.add_argument("--dev-limit", type=int, dest="dev_limit")
    t.add_argument("--max-steps", type=int, dest="max_steps")
    t.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    t.add_argument("--run-dir")
    t.add_argument("--quiet", action="store_true")
    add_workspace_arg(t)
    t.set_defaults(func=cmd_ner_train)
    pr = nsub.add_parser("predict", help="spans, c1 and c2 per sentence as JSON lines")
    pr.add_argument("--model", required=True)
    pr.add_argument("corpus", metavar="FILE")
    pr.add_argument("--out", type=out_file, help="output .jsonl; without it, a workspace corpus's predictions go to the "
                                                 "cache Inspect and the Map read (`project --predictions MODEL`)")
    pr.add_argument("--batch-size", type=int, default=field_default(PredictParams, "batch_size"))
    pr.add_argument("--quiet", action="store_true")
    add_workspace_arg(pr)
    pr.set_defaults(func=cmd_ner_predict)
    e = nsub.add_parser("eval", help="span-level P/R/F1 overall and per type (seqeval strict IOBES)")
    e.add_argument("--model", required=True)
    e.add_argument("--test", required=True)
    e.add_argument("--json", action="store_true")
    e.add_argument("--quiet", action="store_true")
    add_workspace_arg(e)
    e.set_defaults(func=cmd_ner_eval)

    x = sub.add_parser("experiment", help="strategies x seeds x SC budgets x LC sizes: selection -> MLM -> NER -> test F1 (mean, std)",
                       description="Every cell: select SC from DC (strategies), MLM on TC+SC 1:1 (or the baseline's corpus), "
                                   "NER on LC (or an LC subset), test F1. Baselines run once per seed and LC size, strategies once "
                                   "per SC budget. A rerun with the same --out skips finished cells.")
    x.add_argument("--tc", required=True, help="task corpus: workspace name, role or file (required)")
    x.add_argument("--dc", required=True, help="domain corpus to select from: name, role or file (required)")
    x.add_argument("--lc", required=True, help="labeled training corpus: name, role or file (required)")
    x.add_argument("--dev", required=True, help="labeled corpus for early stopping (required)")
    x.add_argument("--test", required=True, help="labeled corpus the F1 is measured on (required)")
    x.add_argument("--strategies", default="", help="comma-separated selection strategies (core.selection.strategies); NAME@b1 reads B1, "
                                                    "NAME:KEY=VALUE sets a selection option (dsir:length=chunk), each its own row "
                                                    "(default: none, only baselines)")
    x.add_argument("--baselines", default=",".join(field_default(ExperimentParams, "baselines")),
                   help=f"comma-separated subset of {', '.join(BASELINES)}; '' for no baselines (default: {','.join(BASELINES)})")
    x.add_argument("--seeds", default=",".join(map(str, field_default(ExperimentParams, "seeds"))),
                   help="comma-separated seeds; each repeats every cell (default: %(default)s; the papers use 3 or more)")
    x.add_argument("--budgets", help="SC sizes to sweep (Fig. 2), comma-separated counts (e.g. 500,2000) or ratios of DC "
                                     "(e.g. 0.05,0.1); 1.0 = all of DC (default: one budget, |TC|, so TC:SC is 1:1)")
    x.add_argument("--budget", help="one SC size, the same as --budgets with one value (default: |TC|)")
    x.add_argument("--lc-sizes", dest="lc_sizes", help="LC sizes to sweep (Fig. 4), comma-separated counts (e.g. 50,100) or ratios "
                                                       "of LC (e.g. 0.25,0.5,1.0), each subset drawn with the cell's seed "
                                                       "(default: all of LC)")
    x.add_argument("--model", default=field_default(ExperimentParams, "model"),
                   help="base encoder: 'default' (packaged MiniLM), a folder or an HF id "
                                                      "(default: default)")
    x.add_argument("--exclude-leaked", action="store_true", dest="exclude_leaked",
                   help="also drop DC sentences that duplicate DEV text where --allow-dev-in-mlm keeps DEV text in TC "
                        "(TEST and DEV duplicates are otherwise always dropped from TC/DC before MLM; see `leakage`); "
                        "default: off")
    x.add_argument("--allow-dev-in-mlm", action="store_true", dest="allow_dev_in_mlm",
                   help="run although TC holds DEV sentences (refused by default: DEV drives early stopping and the "
                        "checkpoint pick, so MLM on it flatters both); recorded in the result and beside every row; "
                        "default: off")
    x.add_argument("--pick-checkpoint", type=int, nargs="?", const=PICK_SNAPSHOTS, default=None, dest="pick_checkpoint", metavar="N",
                   help=f"keep N MLM snapshots per cell ({PICK_SNAPSHOTS} when given without N) and fine-tune NER from the one, or the "
                        "base encoder, that a short NER fine-tune scores best on DEV (one short run per candidate; the base wins "
                        "ties, so pretraining is used only when it won the short probe, which also rewards faster convergence; the "
                        f"experiment reports the converged DEV F1 against none); default: the preset's ({pick_defaults()})")
    x.add_argument("--no-pick-checkpoint", action="store_const", const=0, dest="pick_checkpoint",
                   help="fine-tune from the last MLM model whatever DEV says, the seed paper's protocol "
                        "(default: the preset's, see --pick-checkpoint)")
    x.add_argument("--mlm", action="append", default=[], metavar="KEY=VALUE",
                   help="an MLM setting over the preset's for every pretraining cell (core.recipes.configs.MlmConfig), "
                        "once per setting: lr=5e-5, head_warmup_steps=100, mlm_probability=0.3, layer_lr_decay=0.8, "
                        "freeze_layers=3, l2sp=0.1, epochs=20, max_steps=400 (issue 46's knobs); none trains no MLM, so "
                        "it is the same cell with or without; default: the preset's recipe")
    x.add_argument("--rehearsal-share", type=float, default=0.0, dest="rehearsal_share", metavar="S",
                   help="mix random DC sentences into every MLM corpus as this share of it (general text replayed so the "
                        "encoder keeps what it knew; 0 <= S < 1); default: 0, none")
    x.add_argument("--preset", default=field_default(ExperimentParams, "preset"), choices=PRESETS,
                   help=preset_help("experiment") + f" (default: {DEFAULT_PRESET})")
    x.add_argument("--domain", help="column name in the results table (default: the workspace's target domain, else the test "
                                    "corpus name)")
    x.add_argument("--parallel", default=field_default(ExperimentParams, "parallel"), metavar="N|auto",
                   help="cells at once, each in its own process: a number, or 'auto' (as many as the GPUs' free memory fits "
                        "at the memory a cell of this recipe was measured to need; 1 on a machine without a GPU); results are "
                        "the same cells in the same folders (default: %(default)s)")
    x.add_argument("--ray", metavar="ADDRESS", help="run the cells as Ray tasks, a share of a GPU each: 'local', 'local:N' "
                                                   "(N CPUs) or a cluster address; across machines the workspace must be on a "
                                                   "shared disk (default: no Ray)")
    x.add_argument("--time-limit", dest="time_limit", metavar="DURATION",
                   help="start no cell whose expected clock (the median of its row's finished cells on this kind of "
                        "device) would end past this long from the start, e.g. 2h, 1h30m, 90m or seconds; the run then "
                        f"stops with its finished cells kept (exit {TIME_LIMIT_EXIT}) and the same command continues "
                        "(default: no limit)")
    x.add_argument("--out", required=True, type=out_folder, help="run folder for the experiment; rerun with it to resume (required)")
    x.add_argument("--json", action="store_true", help="print the result as one JSON object (default: the results table)")
    x.add_argument("--quiet", action="store_true", help="no progress bar (default: a bar on stderr)")
    add_workspace_arg(x)
    x.set_defaults(func=cmd_experiment)


def cmd_drift(args: argparse.Namespace) -> int:
    from core.data.workspace import resolve_corpus_ref
    from core.train.drift import encoder_drift

    texts = resolve_corpus_ref(args.corpus, args.workspace).load().texts()
    result = {"model": _model(args.model), "base": _model(args.base), "corpus": args.corpus,
              **encoder_drift(_model(args.base), _model(args.model), texts, args.sample)}
    if args.json:
        print_json(result)
    else:
        print(f"{args.model} against {args.base} on {result['sentences']} {args.corpus} sentences: sentence cosine "
              f"{result['cosine']:.3f}, linear CKA {result['cka']:.3f} (1 = unchanged)")
    return 0


def cmd_mlm(args: argparse.Namespace) -> int:
    config = _config_overrides(args, ("epochs", "max_steps", "batch_size", "lr", "block_size", "grad_accum", "seed", "pack",
                                      "snapshot_every", "head_warmup_steps", "layer_lr_decay", "freeze_layers"))
    reads = mode_reads(args.mode) if args.mode else set()
    source = ({"train": [_corpus(args, f) for f in args.train]} if args.train else  # only the corpora the mode reads
              {"mode": args.mode, "tc": _corpus(args, args.tc) if "tc" in reads else None,
               "selection": args.selection if "sc" in reads else None, "dc": _corpus(args, args.dc) if "dc" in reads else None})
    params = {**source, "model": _model(args.model), "out": str(Path(args.out).resolve()), "preset": args.preset,
              "config": config}
    result = JobResult.from_dict(_run(args, "mlm", params, "mlm"))
    print(f"model written to {result.out_dir} ({result.steps} steps"
          + ("; a fresh MLM head was initialised" if result.fresh_head else "") + ")")
    return 0


def cmd_pick_checkpoint(args: argparse.Namespace) -> int:
    """The "pick-checkpoint" job run in-process: the same function as the Runs page's button."""
    params = {"snapshots": args.snapshots, "final": args.final, "base": _model(args.base), "lc": _corpus(args, args.lc),
              "dev": _corpus(args, args.dev), "preset": args.preset, "epochs": args.epochs,
              "min_gain": args.min_gain, "seed": args.seed}
    result = _run(args, "pick-checkpoint", params, "pick-checkpoint")
    if args.json:
        print_json(result)
    else:
        print(f"use {result['chosen']['label']}: {result['chosen']['path']}\n{result['reason']}")
    return 0


def cmd_ner_train(args: argparse.Namespace) -> int:
    from core.runner.kinds import validate
    from core.runner.params import check_out_folder

    out = Path(args.out).resolve()
    config = _config_overrides(args, ("epochs", "patience", "seed", "lr", "head_lr", "batch_size", "dev_limit", "max_steps"))
    params = {"train": _corpus(args, args.train), "dev": _corpus(args, args.dev), "test": _corpus(args, args.test),
              "model": _model(args.model),
              "out": str(out), "preset": args.preset, "config": config,
              "overwrite": bool(args.overwrite or args.run_dir)}  # a resumed run (--run-dir) writes its own out again
    check_out_folder("ner", validate("ner", params))
    result = JobResult.from_dict(_run(args, "ner", params, "ner train"))
    msg = f"model written to {result.out_dir}: {result.steps} steps, {result.epochs_run} epochs"
    if result.best_dev_f1 is not None:
        msg += f", best dev F1 {result.best_dev_f1:.4f} (epoch {result.best_epoch})"
    if result.test_f1 is not None:
        msg += f", test F1 {result.test_f1:.4f}"
    print(msg)
    return 0


def cmd_ner_predict(args: argparse.Namespace) -> int:
    from core.data.stream import CorpusStream
    from core.train.ner_model import load_ner_model
    from core.train.ner_predict import predict_to_file

    ref = resolve_corpus_ref(args.corpus, args.workspace)
    if args.out is None:
        return _predict_into_cache(args, ref)
    # a workspace corpus (DC) is read and written chunk by chunk; a file is read into memory
    corpus = CorpusStream(path=ref.path, name=ref.name, file_hash=ref.hash) if ref.kind != "path" else ref.load()
    model = load_ner_model(args.model)
    with tqdm_progress("predict", enabled=progress_wanted(args)) as bar:
        result = predict_to_file(model, corpus, args.out, batch_size=args.batch_size, progress=bar)
    print(f"{result['sentences']} sentences, {result['entities']} entities -> {args.out}", file=sys.stderr)
    return 0


def _predict_into_cache(args: argparse.Namespace, ref: CorpusRef) -> int:
    """Inspect's Predict at the CLI: the workspace's predictions cache, filled by the same "predict" job."""
    from core.review.predictions import predict_cached, prediction_request

    if ref.kind == "path":
        raise UserError(f"{args.corpus}: predictions are cached for workspace corpora; import the file first, or give "
                        "--out FILE")
    ws = Workspace(args.workspace)
    req = prediction_request(ws, _model(args.model), ref.name)
    cached = req.done
    with tqdm_progress("predict", enabled=progress_wanted(args)) as bar:
        path = predict_cached(ws, req, progress=bar)
    print(f"predictions of {ref.name!r} by {args.model} {'were cached already' if cached else 'cached'}: {path} "
          "(Inspect and `project --predictions` read them)", file=sys.stderr)
    return 0


def cmd_ner_eval(args: argparse.Namespace) -> int:
    from core.train.ner_model import load_ner_model
    from core.train.ner_predict import evaluate

    test = resolve_corpus_ref(args.test, args.workspace).load()
    model = load_ner_model(args.model)
    with tqdm_progress("eval", enabled=progress_wanted(args)) as bar:
        scores = evaluate(model, test, progress=bar)
    if args.json:
        print_json(scores)
        return 0
    print(f"f1 {scores['f1']:.4f}  precision {scores['precision']:.4f}  recall {scores['recall']:.4f}  "
          f"({scores['support']} gold entities, {scores['sentences']} sentences)")
    print("per_type:")
    for name, s in sorted(scores["per_type"].items()):
        print(f"  {name:<24} f1 {s['f1']:.4f}  precision {s['precision']:.4f}  recall {s['recall']:.4f}  support {s['support']}")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from core.experiments.experiment import format_results
    from core.experiments.plan import experiment_request

    params = experiment_request(
        args.seeds, args.budgets, args.lc_sizes, args.mlm, args.strategies, args.baselines,
        names={"seeds": "--seeds", "budgets": "--budgets", "lc_sizes": "--lc-sizes", "mlm": "--mlm"},
        tc=_corpus(args, args.tc), dc=_corpus(args, args.dc), lc=_corpus(args, args.lc), dev=_corpus(args, args.dev),
        test=_corpus(args, args.test),
        budget=Budget.parse(args.budget, "--budget").value if args.budget is not None else None,
        model=_model(args.model), preset=args.preset, domain=args.domain, exclude_leaked=args.exclude_leaked,
        allow_dev_in_mlm=args.allow_dev_in_mlm, pick_checkpoint=args.pick_checkpoint,
        rehearsal_share=args.rehearsal_share, parallel=args.parallel, ray=args.ray,
        time_limit=parse_duration(args.time_limit, "--time-limit"))
    args.run_dir = args.out
    result = _run(args, "experiment", params, "experiment")
    if args.json:
        print_json(result)
    else:
        print(format_results(result))
    return 0
