"""Similarity and n-gram LM commands: similarity, lm build, lm score."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from core.cliutil import add_workspace_arg, out_file, print_json, progress_wanted, tqdm_progress
from core.data.atomic import atomic_write_text
from core.data.corpus import Corpus
from core.data.workspace import Workspace, resolve_corpus_ref
from core.lm.ngram import build_lm, check_order, lm_from
from core.similarity.measures import MEASURES, SimilarityParams, compare_corpora, corpus_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("similarity", help="similarity measures between a source and a target corpus (Dai et al. 2019/2020)")
    p.add_argument("--source", required=True, help="corpus file, or workspace corpus name/role (e.g. dc)")
    p.add_argument("--target", required=True, help="corpus file, or workspace corpus name/role (e.g. tc)")
    p.add_argument("--measures", default=",".join(MEASURES), help=f"comma-separated subset of {','.join(MEASURES)}")
    p.add_argument("--order", type=int, default=3, help="n-gram order of the PPL model (3 or 5 are usual)")
    p.add_argument("--subsample-tokens", type=int, default=None, help="size control: sub-sample the source to N tokens ...")
    p.add_argument("--subsample-k", type=int, default=1, help="... K times and average the measures")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tvcc-method", default="auto", choices=["auto", "spacy", "approx"])
    p.add_argument("--json", action="store_true", help="print one JSON object (the default output is a table)")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_similarity)

    p = sub.add_parser("lm", help="Kneser-Ney n-gram LM: build an ARPA file, score sentences")
    lsub = p.add_subparsers(dest="lm_cmd", required=True)
    b = lsub.add_parser("build", help="train an interpolated modified Kneser-Ney LM and write it as ARPA")
    b.add_argument("file", help="corpus file, or workspace corpus name/role")
    b.add_argument("--order", type=int, default=3)
    b.add_argument("--arpa", required=True, type=out_file, help="output ARPA file")
    add_workspace_arg(b)
    b.set_defaults(func=cmd_lm_build)
    s = lsub.add_parser("score", help="per-sentence log10 probability and perplexity under an LM")
    s.add_argument("file", help="corpus file, or workspace corpus name/role, to score")
    s.add_argument("--arpa", required=True, help="ARPA file, or a corpus to train an LM on the fly")
    s.add_argument("--order", type=int, default=3, help="order when --arpa is a corpus")
    s.add_argument("--backend", default="auto", choices=["auto", "numpy", "kenlm"],
                   help="numpy (default via auto: measured faster) or the kenlm-ex query library for ARPA files")
    s.add_argument("--out", default=None, type=out_file, help="write JSON lines here (default: stdout) and print a summary")
    s.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="score on a Ray cluster ('local' starts one on this machine); numpy backend")
    add_workspace_arg(s)
    s.set_defaults(func=cmd_lm_score)


def resolve(ref: str, workspace: str | None) -> Corpus:
    """`core.data.workspace.resolve_corpus_ref` (name, role, then file), loaded."""
    return resolve_corpus_ref(ref, workspace).load()


def cmd_similarity(args: argparse.Namespace) -> int:
    params = SimilarityParams.from_dict({"measures": args.measures, "order": args.order, "subsample_tokens": args.subsample_tokens,
                                         "subsample_k": args.subsample_k, "seed": args.seed, "tvcc_method": args.tvcc_method})
    # a workspace corpus is read in record batches (a large DC is never held as token lists)
    source = corpus_text(resolve_corpus_ref(args.source, args.workspace))
    target = corpus_text(resolve_corpus_ref(args.target, args.workspace))
    with tqdm_progress("similarity", enabled=progress_wanted(args)) as progress:
        result = compare_corpora(source, target, params, progress=progress)
    if args.json:
        print_json(result)
        return 0
    for key, value in result.items():
        label = MEASURES[key].direction if key in MEASURES else ""
        print(f"{key:<14} {value:.6g}  {label}" if isinstance(value, float) else f"{key:<14} {value}")
    return 0


def cmd_lm_build(args: argparse.Namespace) -> int:
    check_order(args.order)  # before the corpus is read: a bad order after minutes of encoding helps no one
    corpus = resolve(args.file, args.workspace)
    with tqdm_progress(f"{args.order}-gram LM") as progress:
        lm = build_lm(corpus, order=args.order, progress=progress)
        lm.write_arpa(args.arpa)
    print_json({"arpa": str(args.arpa), "order": lm.order, "ngrams": lm.counts(), "vocab": lm.vocab_size,
                "discounts": lm.discounts, "discount_fallback_orders": lm.fallback_orders})
    return 0


def cmd_lm_score(args: argparse.Namespace) -> int:
    from core.data.stream import open_corpus_stream

    ws = Workspace(args.workspace)
    corpus = open_corpus_stream(ws, args.file)  # a workspace corpus is read in record batches
    lm = lm_from(args.arpa, order=args.order, workspace=args.workspace)
    ray = args.ray or ws.settings().ray_address or None
    if ray:
        from core.lm.distributed import ray_lm_scores

        scores = ray_lm_scores(lm, corpus, ray)
    else:
        scores = lm.score_sentences(corpus.token_batches(), backend=args.backend)
    lines = [json.dumps({"sentence": i, "log10_prob": float(lp), "tokens": int(n), "perplexity": float(pp), "oov": int(o)})
             for i, (lp, n, pp, o) in enumerate(zip(scores.log10_prob, scores.n_predicted, scores.perplexity, scores.oov))]
    summary: dict[str, Any] = {"sentences": len(lines), "predicted_tokens": int(scores.n_predicted.sum()),
                               "oov": int(scores.oov.sum()), "perplexity": scores.corpus_perplexity,
                               "perplexity_sum": scores.summed_perplexity, "order": lm.order}
    if args.out:
        atomic_write_text(args.out, "\n".join(lines) + ("\n" if lines else ""))
        summary["out"] = str(args.out)
        print_json(summary)
    else:
        sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))
        print(json.dumps(summary), file=sys.stderr)
    return 0

