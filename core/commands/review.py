"""Review commands: Inspect's review of a fine-tuned NER model's predictions at the CLI (list and filter the
sentences, accept / reject / correct one, undo, progress per annotator, export or save the reviewed sentences),
through the same core functions the page calls (core.review.predictions, core.review.store)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.access import LOCAL
from core.cliutil import (
    add_workspace_arg,
    out_file,
    parse_spans,
    print_json,
    progress_wanted,
    spans_text,
    tqdm_progress,
)
from core.data.workspace import Workspace
from core.errors import UserError
from core.review import predictions
from core.review.store import ReviewStore, check_type

DECISIONS = {"accept": "accepted", "reject": "rejected", "correct": "corrected"}


def register(sub: argparse._SubParsersAction) -> None:
    review = sub.add_parser("review", help="review a fine-tuned NER model's predictions, as the Inspect page does: list, "
                                           "accept/reject/correct, undo, progress, export")
    rs = review.add_subparsers(dest="review_command", required=True, metavar="ACTION")
    p = rs.add_parser("list", help="the sentences with their predicted entities, c1, c2 and review state, filtered "
                                   "and sorted as on Inspect (predicts first when the predictions are not cached)")
    p.add_argument("--query", default="", help="literal text the sentence holds (case-insensitive)")
    p.add_argument("--type", dest="types", action="append", default=[], help="a predicted entity type (repeatable)")
    p.add_argument("--min-entities", type=int, default=0)
    p.add_argument("--state", action="append", default=[], choices=["unreviewed", "accepted", "rejected", "corrected"],
                   help="review state (repeatable; default: all)")
    p.add_argument("--sort", default="entities", choices=sorted(predictions.SORT_KEYS))
    p.add_argument("--ascending", action="store_true")
    p.add_argument("--limit", type=int, default=20, help="sentences shown (0: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_review_list)
    p = rs.add_parser("decide", help="accept (the predicted spans), reject, or correct (give --spans) one sentence")
    p.add_argument("index", type=int, help="the sentence's index in the corpus (as `review list` shows it)")
    p.add_argument("decision", choices=sorted(DECISIONS))
    p.add_argument("--spans", metavar="START-END:TYPE,...",
                   help="with correct: the sentence's spans, token positions from 0, end exclusive (e.g. 0-2:PER); '' for none")
    p.add_argument("--version", type=int, default=None,
                   help="the version you saw (`review list --json`; 0: never reviewed): refused if someone decided since "
                        "(default: the version read now)")
    p.set_defaults(func=cmd_review_decide)
    p = rs.add_parser("undo", help="take back the last decision on one sentence (history is kept)")
    p.add_argument("index", type=int)
    p.set_defaults(func=cmd_review_undo)
    p = rs.add_parser("progress", help="decided sentences by status, and per annotator")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_review_progress)
    p = rs.add_parser("export", help="the accepted and corrected sentences with their reviewed labels, as a file or a "
                                     "workspace corpus")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=out_file, help="CoNLL (.conll/.txt) or JSONL (.jsonl) file")
    where.add_argument("--save", metavar="NAME", help="a workspace corpus of this name (to add to LC or train on)")
    p.add_argument("--scheme", default="bio", choices=["bio", "bioes"])
    p.add_argument("--role", default=None, help="with --save: give the corpus this role")
    p.add_argument("--annotator", action="append", default=None, help="only this annotator's decisions (repeatable)")
    p.set_defaults(func=cmd_review_export)
    for p in rs.choices.values():
        p.add_argument("--model", required=True, help="the fine-tuned NER model folder (a finished NER run)")
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--corpus", help="workspace corpus (name or role) whose predictions are reviewed")
        src.add_argument("--selection", help="a saved selection: its selected sentences of its DC")
        p.add_argument("--reviewer", default="", help="your name, saved with each decision (progress counts per name)")
        p.add_argument("--quiet", action="store_true", help="no progress bar while predicting")
        add_workspace_arg(p)


def _request(args: argparse.Namespace) -> tuple[Workspace, predictions.PredictionRequest]:
    ws = Workspace(args.workspace)
    req = predictions.prediction_request(ws, args.model, args.corpus and ws.ref(args.corpus).name, args.selection)
    if not req.done:
        with tqdm_progress("predict", enabled=progress_wanted(args)) as bar:
            predictions.predict_cached(ws, req, progress=bar)
    return ws, req


def _row(req: predictions.PredictionRequest, index: int) -> dict:
    row = next((r for r in predictions.load_predictions(req) if r["index"] == index), None)
    if row is None:
        raise UserError(f"sentence {index} is not among the reviewed sentences of {req.corpus}"
                        + (" (this selection's)" if req.indices is not None else ""))
    return row


def _counts_text(counts: dict) -> str:
    return (f"{counts['reviewed']} of {counts['total']} sentences reviewed ({counts['accepted']} accepted, "
            f"{counts['corrected']} corrected, {counts['rejected']} rejected)")


def cmd_review_list(args: argparse.Namespace) -> int:
    ws, req = _request(args)
    store = ReviewStore(ws, req.review_key)
    items = store.items()
    table = predictions.inspection_table(predictions.load_predictions(req), items)
    shown = predictions.filter_table(table, args.query, args.types, args.min_entities, review=args.state,
                                     sort_by=args.sort, descending=not args.ascending)
    if args.limit:
        shown = shown.head(args.limit)
    counts = predictions.review_counts(table)
    if args.json:
        print_json({"counts": counts, "sentences": [{**r, "version": items[r["index"]].version if r["index"] in items else 0}
                                                    for r in shown.drop(columns=["row"]).to_dict("records")]})
        return 0
    for r in shown.itertuples():
        print(f"#{r.index:<6} {r.n_entities} predicted  c1 {r.c1:.3f}  c2 {r.c2:.3f}  {r.review:<10} {r.text}")
    print(f"{_counts_text(counts)}; {len(shown)} shown")
    return 0


def cmd_review_decide(args: argparse.Namespace) -> int:
    ws, req = _request(args)
    row = _row(req, args.index)
    if args.decision == "correct" and args.spans is None:
        raise UserError("correct needs --spans (the sentence's entities, e.g. 0-2:PER; '' for none)")
    if args.decision != "correct" and args.spans is not None:
        raise UserError(f"--spans goes with correct; {args.decision} takes "
                        + ("the predicted spans" if args.decision == "accept" else "no span"))
    spans = (parse_spans(args.spans) if args.decision == "correct" else
             predictions.row_spans(row) if args.decision == "accept" else [])
    if args.decision == "correct":
        for span in spans:  # typed here: a tag (B-PER) is refused, as in the page's span editor
            check_type(span.type, f"--spans {span.start}-{span.end}")
    store = ReviewStore(ws, req.review_key)
    current = store.get(args.index)
    version = args.version if args.version is not None else (current.version if current else 0)
    item = store.save(args.index, DECISIONS[args.decision], row["tokens"], spans, expected_version=version,
                      reviewer=args.reviewer, model=str(req.model), actor=LOCAL)
    print(f"sentence {item.index}: {item.status} {spans_text(item.tokens, item.spans)} (version {item.version})")
    return 0


def cmd_review_undo(args: argparse.Namespace) -> int:
    ws, req = _request(args)
    store = ReviewStore(ws, req.review_key)
    current = store.get(args.index)
    if current is None or current.version == 0:
        raise UserError(f"sentence {args.index} has no decision to undo")
    item = store.undo(args.index, expected_version=current.version, to_version=current.replaced_version,
                      reviewer=args.reviewer, actor=LOCAL)
    state = "unreviewed" if item.status == "pending" else item.status
    print(f"sentence {item.index}: back to {state} (version {item.version})")
    return 0


def cmd_review_progress(args: argparse.Namespace) -> int:
    ws, req = _request(args)
    store = ReviewStore(ws, req.review_key)
    counts = predictions.review_counts(predictions.inspection_table(predictions.load_predictions(req), store.items()))
    people = store.progress_by_reviewer()
    if args.json:
        print_json({"counts": counts, "annotators": people})
        return 0
    print(_counts_text(counts))
    for p in people:
        print(f"  {p['annotator']:<20} {p['reviewed']:>5} ({p['accepted']} accepted, {p['corrected']} corrected, "
              f"{p['rejected']} rejected)")
    return 0


def cmd_review_export(args: argparse.Namespace) -> int:
    ws, req = _request(args)
    store = ReviewStore(ws, req.review_key)
    if args.save:
        info = predictions.save_reviewed_corpus(ws, store, args.save, args.role, args.annotator, actor=LOCAL)
        print(f"saved {info.sentences} reviewed sentences as {info.name!r}")
        return 0
    fmt = "jsonl" if Path(args.out).suffix.lower() == ".jsonl" else "conll"
    data = predictions.export_bytes(store, fmt, args.scheme, args.annotator)
    Path(args.out).write_bytes(data)
    print(f"wrote the reviewed sentences to {args.out} ({fmt}, {args.scheme.upper()})", file=sys.stderr)
    return 0
