"""Corpus commands: demo, stats, convert, import, corpora."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cliutil import Once, add_workspace_arg, out_file, print_json, tqdm_progress
from core.data.corpus import FORMAT_CHOICES, format_from_extension, write_corpus
from core.data.stats import corpus_stats
from core.data.tags import TagScheme
from core.data.workspace import CorpusRole, Workspace, resolve_corpus_ref
from core.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="write the generated demo workspace into DIR (idempotent)")
    p.add_argument("dir", help="workspace folder to create or complete")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--dc-size", type=int, default=6000, help="DC sentences (streamed to Parquet: 10M fit in flat memory)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("stats", help="statistics of a corpus: workspace name, role (tc/dc/lc/dev/test) or file")
    p.add_argument("file", help="workspace corpus name, role, or file path (in that order)")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="format of a file path")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("convert", help="convert a labeled corpus to another tag scheme or format")
    p.add_argument("file", help="workspace corpus name, role, or file path (in that order)")
    p.add_argument("--to", required=True, choices=["bio", "bioes", "iob1"], help="target tag scheme")
    p.add_argument("--out", required=True, type=out_file, help="output file (format from its extension; CoNLL by default)")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="input format of a file path")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("import", help="import a corpus file into the workspace with a role")
    p.add_argument("file")
    p.add_argument("--role", choices=[r.value for r in CorpusRole], default=None, action=Once)
    p.add_argument("--name", default=None, help="corpus name (default: file stem)", action=Once)
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, action=Once)
    p.add_argument("--overwrite", action="store_true", help="replace a different corpus of the same name")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("corpora", help="list the workspace's corpora and roles; `corpora set-role NAME ROLE` and "
                                       "`corpora delete NAME` change them, as the Corpora page does")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_corpora)
    cs = p.add_subparsers(dest="corpora_command")
    r = cs.add_parser("set-role", help="give a workspace corpus a role (a role belongs to one corpus at a time)")
    r.add_argument("name")
    r.add_argument("role", choices=[*(c.value for c in CorpusRole), "none"], help="'none' takes its role away")
    add_workspace_arg(r)
    r.set_defaults(func=cmd_set_role)
    d = cs.add_parser("delete", help="delete a workspace corpus (its selections, runs and maps stay)")
    d.add_argument("name")
    add_workspace_arg(d)
    d.set_defaults(func=cmd_delete_corpus)


def cmd_demo(args: argparse.Namespace) -> int:
    from core.data.demo import write_demo_workspace

    with tqdm_progress("demo", enabled=args.dc_size > 100_000) as progress:
        ws = write_demo_workspace(args.dir, seed=args.seed, dc_size=args.dc_size, progress=progress)
    for info in ws.list_corpora():
        print(f"{info.name:<12} {str(info.role or '-'):<5} {info.sentences:>6} sentences  {info.tokens:>7} tokens")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    corpus = resolve_corpus_ref(args.file, getattr(args, "workspace", None), fmt=args.format).load()
    stats = corpus_stats(corpus)
    if args.json:
        print_json(stats)
        return 0
    print(f"{args.file}")
    for key in ("sentences", "tokens", "vocab", "ttr", "mean_length", "labeled", "tag_scheme", "entities",
                "entities_per_sentence"):
        value = stats[key]
        print(f"  {key:<22} {value:.4f}" if isinstance(value, float) else f"  {key:<22} {value}")
    for typ, n in stats["entity_types"].items():
        print(f"    {typ:<20} {n}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    corpus = resolve_corpus_ref(args.file, getattr(args, "workspace", None), fmt=args.format).load()
    if not corpus.labeled:
        raise UserError(f"{args.file}: has no tags to convert (expected a labeled corpus)")
    out = Path(args.out)
    fmt = format_from_extension(out)
    fmt = "conll" if fmt in (None, "txt") else fmt  # plain text would drop the tags being converted
    write_corpus(corpus, out, fmt=fmt, scheme=TagScheme(args.to))
    print(f"wrote {len(corpus)} sentences to {out} ({args.to.upper()}, {fmt})")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    ws = Workspace(args.workspace)
    with tqdm_progress(f"import {Path(args.file).name}") as progress:
        info = ws.import_corpus(args.file, role=args.role, name=args.name, fmt=args.format, overwrite=args.overwrite,
                                progress=progress)
    print(f"imported {info.name!r}: {info.sentences} sentences, {info.tokens} tokens, role {info.role or '-'}, "
          f"scheme {info.tag_scheme} -> {ws.corpus_path(info.name)}")
    for warning in info.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def cmd_corpora(args: argparse.Namespace) -> int:
    ws = Workspace(args.workspace)
    infos = ws.list_corpora()
    if args.json:
        print_json([vars(i) for i in infos])
        return 0
    for i in infos:
        print(f"{i.name:<20} {str(i.role or '-'):<5} {i.sentences:>8} sent {i.tokens:>9} tok  labeled={i.labeled}")
    return 0


def cmd_set_role(args: argparse.Namespace) -> int:
    ws = Workspace(args.workspace)
    notes = ws.set_role(args.name, None if args.role == "none" else args.role)
    print(f"{args.name!r}: role {args.role}")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_delete_corpus(args: argparse.Namespace) -> int:
    Workspace(args.workspace).delete_corpus(args.name)
    print(f"deleted corpus {args.name!r}")
    return 0
