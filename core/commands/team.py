"""Team commands: `users` (accounts), `task` (review tasks), `agreement`, `serve-check`.

The CLI acts as the machine's owner (core.access.LOCAL): whoever runs it on the server already owns the
workspace files. Passwords come from a prompt or a file, never from the command line (shell history).
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from pathlib import Path

from core.access import LOCAL, Role
from core.cliutil import add_workspace_arg, comma_list, out_file, parse_spans, print_json, read_text_file, spans_text
from core.data.workspace import Workspace
from core.errors import UserError

ROLES = [r.value for r in Role]


def register(sub: argparse._SubParsersAction) -> None:
    users = sub.add_parser("users", help="accounts for a team: add, list, set-role, disable, enable, unlock, set-password")
    us = users.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    p = us.add_parser("add", help="add a user (password from a prompt or --password-file)")
    p.add_argument("name")
    p.add_argument("--role", required=True, choices=ROLES)
    p.add_argument("--password-file", help="file whose first line is the password")
    p.add_argument("--email", help="e-mail: the user signs in through OIDC (st.login) with it")
    p.add_argument("--oidc-only", action="store_true", help="no password: sign-in through OIDC only (needs --email)")
    p.set_defaults(func=cmd_users_add)
    p = us.add_parser("list", help="users, roles and lock state")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_users_list)
    p = us.add_parser("set-role", help="change a user's role")
    p.add_argument("name")
    p.add_argument("role", choices=ROLES)
    p.set_defaults(func=cmd_users_change)
    for action, text in (("disable", "stop a user from signing in (ends their sessions)"), ("enable", "allow a user again"),
                         ("unlock", "lift a lock after failed sign-ins")):
        p = us.add_parser(action, help=text)
        p.add_argument("name")
        p.set_defaults(func=cmd_users_change)
    p = us.add_parser("set-password", help="a new password (prompt or --password-file); ends the user's sessions")
    p.add_argument("name")
    p.add_argument("--password-file")
    p.set_defaults(func=cmd_users_change)
    p = us.add_parser("audit", help="the audit log, newest first (sign-ins, reviews, adjudication, task changes)")
    p.add_argument("--user", help="only this user's actions")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)
    for p in [users, *us.choices.values()]:
        add_workspace_arg(p)

    task = sub.add_parser("task", help="review tasks for annotators: create, list, progress, export, import")
    ts = task.add_subparsers(dest="task_command", metavar="ACTION", required=True)
    p = ts.add_parser("create", help="hand a selection's (or corpus's) sentences to annotators")
    p.add_argument("--name", required=True)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--selection", help="saved selection (key, key prefix or folder): its best-ranked sentences")
    src.add_argument("--corpus", help="workspace corpus (name or role): a seeded sample of its sentences")
    p.add_argument("--annotators", required=True, help="comma-separated user names")
    p.add_argument("--items", type=int, help="how many sentences (default: all)")
    p.add_argument("--overlap", type=float, default=None,
                   help="share of items reviewed by two annotators (default 0.2 with two annotators or more, 0 with one)")
    p.add_argument("--guidelines-file", help="text file shown to annotators above their queue")
    p.add_argument("--types", help="entity types, comma-separated (default: the LC's types)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--suggest-model", dest="suggest_model", metavar="MODEL",
                   help="a fine-tuned NER model folder: its spans are pre-filled in every item as suggestions, shown apart "
                        "from the annotator's own until accepted, corrected or rejected (default: none)")
    p.set_defaults(func=cmd_task_create)
    p = ts.add_parser("list", help="tasks with their size and annotators")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_task_list)
    p = ts.add_parser("progress", help="per annotator: assigned, done, skipped, left")
    p.add_argument("task")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_task_progress)
    p = ts.add_parser("reassign", help="hand an annotator's unanswered items to another user (one who left or was "
                                       "disabled: their items never settle)")
    p.add_argument("task")
    p.add_argument("from_user", metavar="FROM")
    p.add_argument("to_user", metavar="TO")
    p.set_defaults(func=cmd_task_reassign)
    p = ts.add_parser("disagreements", help="the sentences whose annotators differ, still to decide first, with each "
                                           "answer and the decision (the Agreement page's list)")
    p.add_argument("task")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_task_disagreements)
    p = ts.add_parser("adjudicate", help="set one sentence's final spans: one annotator's answer, or spans given")
    p.add_argument("task")
    p.add_argument("index", type=int, help="the sentence (as `task disagreements` lists it)")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--pick", metavar="ANNOTATOR", help="take this annotator's answer as final")
    how.add_argument("--spans", metavar="START-END:TYPE,...",
                     help="the final spans, token positions from 0, end exclusive (e.g. 0-2:PER,4-5:LOC); '' for none")
    p.add_argument("--version", type=int, default=None,
                   help="the decision's version you saw (`task disagreements`; 0: none yet): refused if someone "
                        "decided since (default: the version read now; a decision it replaces is named)")
    p.set_defaults(func=cmd_task_adjudicate)
    p = ts.add_parser("export", help="the settled sentences (adjudicated or agreed) as CoNLL, or JSONL by --out's "
                                     "extension")
    p.add_argument("task")
    p.add_argument("--out", required=True, type=out_file, help="a .conll/.txt file (CoNLL) or .jsonl")
    p.add_argument("--scheme", choices=["bio", "bioes"], default=None,
                   help="tag scheme (default: the task's corpus's, else BIO)")
    p.set_defaults(func=cmd_task_export)
    p = ts.add_parser("import", help="the settled sentences as a workspace corpus (e.g. --role lc)")
    p.add_argument("task")
    p.add_argument("--name", required=True)
    p.add_argument("--role", default=None, type=str.lower, choices=["tc", "dc", "lc", "dev", "test"])
    p.add_argument("--scheme", choices=["bio", "bioes"], default=None,
                   help="tag scheme (default: the task's corpus's, else BIO)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier import of this name (more settled since)")
    p.set_defaults(func=cmd_task_import)
    for p in [task, *ts.choices.values()]:
        add_workspace_arg(p)

    p = sub.add_parser("agreement", help="agreement between annotators: entity F1 (exact, partial), token and BIO kappa, per type")
    p.add_argument("files", nargs="*", metavar="CONLL", help="two annotators' CoNLL files of the same sentences")
    p.add_argument("--task", help="a review task's overlapping items instead of files")
    p.add_argument("--json", action="store_true")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser("serve-check", help="exit 0 when the app may listen on ADDRESS (loopback, or accounts/OIDC set up)")
    p.add_argument("address")
    add_workspace_arg(p)
    p.set_defaults(func=cmd_serve_check)


def _ws(args: argparse.Namespace) -> Workspace:
    return Workspace(getattr(args, "workspace", None))


def _password(args: argparse.Namespace) -> str:
    if getattr(args, "password_file", None):
        path = Path(args.password_file)
        lines = read_text_file(path, "password file").splitlines()
        if not lines or not lines[0]:
            raise UserError(f"{path}: line 1 is empty; expected the password on the first line")
        return lines[0]
    if not sys.stdin.isatty():
        raise UserError("no terminal to ask for the password: give --password-file FILE")
    first = getpass.getpass(f"password for {args.name}: ")
    if first != getpass.getpass("again: "):
        raise UserError("the two passwords differ; nothing changed")
    return first


def cmd_users_add(args: argparse.Namespace) -> int:
    from core.team.users import add_user

    if args.oidc_only and not args.email:
        raise UserError("--oidc-only needs --email (the identity the provider vouches for)")
    user = add_user(_ws(args), args.name, args.role, None if args.oidc_only else _password(args), args.email)
    print(f"added {user.name} ({user.role.value}){' · ' + user.email if user.email else ''}")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    from core.team.users import list_users

    users = list_users(_ws(args))
    if args.json:
        print_json([{"name": u.name, "role": u.role.value, "email": u.email, "disabled": u.disabled, "locked": u.locked}
                    for u in users])
        return 0
    if not users:
        print("no users: the app is single-user on this machine (add one with `users add NAME --role admin`)")
    for u in users:
        state = "disabled" if u.disabled else "locked" if u.locked else "active"
        print(f"{u.name:<20} {u.role.value:<11} {state:<9} {u.email or ''}")
    return 0


def cmd_users_change(args: argparse.Namespace) -> int:
    from core.team import users

    ws, action = _ws(args), args.users_command
    if action == "set-role":
        user = users.set_role(ws, args.name, args.role)
    elif action == "set-password":
        user = users.set_password(ws, args.name, _password(args))
    elif action == "unlock":
        user = users.unlock(ws, args.name)
    else:
        user = users.set_disabled(ws, args.name, action == "disable")
    print(f"{user.name}: {user.role.value}, {'disabled' if user.disabled else 'locked' if user.locked else 'active'}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from core.team.db import read_audit

    rows = read_audit(_ws(args), args.limit, args.user)
    if args.json:
        print_json(rows)
        return 0
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["at"]))
        print(f"{when}  {r['actor']:<16} {r['action']:<24} {r['target']}")
    return 0


def cmd_task_create(args: argparse.Namespace) -> int:
    from core.team.tasks import create_task

    guidelines = ""
    if args.guidelines_file:
        guidelines = read_text_file(args.guidelines_file, "guidelines file")
    task = create_task(_ws(args), LOCAL, args.name, comma_list(args.annotators), selection=args.selection, corpus=args.corpus,
                       n_items=args.items, overlap=args.overlap, guidelines=guidelines,
                       types=comma_list(args.types) if args.types else None, seed=args.seed,
                       suggest_model=args.suggest_model)
    print(f"task {task.id}: {task.items} sentences of {task.source} for {', '.join(task.annotators)} "
          f"({task.overlap:.0%} reviewed twice" + (f"; suggestions from {task.suggested_by}" if task.suggested_by else "") + ")")
    return 0


def cmd_task_list(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from core.team.tasks import list_tasks

    tasks = list_tasks(_ws(args), LOCAL)
    if args.json:
        print_json([asdict(t) for t in tasks])
        return 0
    for t in tasks:
        print(f"{t.id}  {t.name:<24} {t.items:>6} sentences  {t.source}  annotators {', '.join(t.annotators)}")
    return 0


def cmd_task_progress(args: argparse.Namespace) -> int:
    from core.team.tasks import progress

    rows = progress(_ws(args), LOCAL, args.task)
    if args.json:
        print_json(rows)
        return 0
    for r in rows:
        print(f"{r['annotator']:<20} {r['done'] + r['skipped']:>5} of {r['assigned']:<5} ({r['skipped']} skipped)")
    return 0


def cmd_task_disagreements(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from core.team.adjudicate import disagreements

    items = disagreements(_ws(args), LOCAL, args.task)
    if args.json:
        print_json([asdict(i) for i in items])
        return 0
    if not items:
        print(f"task {args.task}: no sentence where annotators differ")
        return 0
    for i in items:
        state = f"decided by {i.adjudicated_by} (version {i.version})" if i.adjudicated is not None else "to decide (version 0)"
        print(f"sentence {i.index}: {state}\n  {' '.join(i.tokens)}")
        for who, spans in i.answers.items():
            print(f"  {who:<16} {spans_text(i.tokens, spans)}")
        if i.adjudicated is not None:
            print(f"  {'final':<16} {spans_text(i.tokens, i.adjudicated)}")
    print(f"{sum(i.adjudicated is None for i in items)} of {len(items)} still to decide")
    return 0


def cmd_task_reassign(args: argparse.Namespace) -> int:
    from core.team.reassign import reassign

    done = reassign(_ws(args), LOCAL, args.task, args.from_user, args.to_user)
    print(f"{done['moved']} unanswered item(s) of {args.from_user} handed to {args.to_user}"
          + (f"; {done['kept']} kept ({args.to_user} has them already: nobody reviews a sentence twice)"
             if done["kept"] else ""))
    return 0


def cmd_task_adjudicate(args: argparse.Namespace) -> int:
    from core.team.adjudicate import adjudicate, items

    ws = _ws(args)
    item = next((i for i in items(ws, LOCAL, args.task) if i.index == args.index), None)
    if item is None:
        raise UserError(f"task {args.task} has no sentence {args.index}")
    version = args.version if args.version is not None else item.version  # no --version: the one read just now
    if args.version is None and item.adjudicated is not None:  # replaced, and said (it was replaced silently)
        print(f"replacing the decision of {item.adjudicated_by} (version {item.version}): "
              f"{spans_text(item.tokens, item.adjudicated)}", file=sys.stderr)
    if args.pick is not None:
        if args.pick not in item.answers:
            raise UserError(f"sentence {args.index} has no answer by {args.pick!r}: answered by "
                            f"{', '.join(item.answers) or 'no one yet'}")
        spans, source = item.answers[args.pick], args.pick
    else:
        spans, source = parse_spans(args.spans), "edited"
    done = adjudicate(ws, LOCAL, args.task, args.index, spans, source, expected_version=version)
    print(f"sentence {done.index}: final {spans_text(done.tokens, done.final or [])} (version {done.version}, "
          f"from {source})")
    return 0


def cmd_task_export(args: argparse.Namespace) -> int:
    from core.team.adjudicate import export_task, left_out

    suffix = Path(args.out).suffix.lower()
    fmt = {".jsonl": "jsonl", ".conll": "conll", ".txt": "conll", ".bio": "conll", ".iob": "conll", "": "conll"}.get(suffix)
    if fmt is None:  # a .jsonl got CoNLL; a .json or .parquet would have too
        raise UserError(f"--out {args.out}: write .conll (or .txt) for CoNLL, .jsonl for JSON lines")
    data, report = export_task(_ws(args), LOCAL, args.task, fmt, args.scheme)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_bytes(data)
    print(f"wrote {report['sentences']} settled sentences to {args.out} ({left_out(report)}: left out)")
    return 0


def cmd_task_import(args: argparse.Namespace) -> int:
    from core.team.adjudicate import import_task

    info, report = import_task(_ws(args), LOCAL, args.task, args.name, args.role, args.scheme, args.overwrite)
    print(f"imported {info.sentences} sentences as {info.name!r}{' (' + args.role.upper() + ')' if args.role else ''}: "
          f"{info.source}")
    for warning in info.warnings:  # the role moved from another corpus, among others
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from core.team.agreement import agreement_files, task_agreement

    if args.task and args.files:
        raise UserError("give either two CoNLL files or --task, not both")
    if args.task:
        result = task_agreement(_ws(args), LOCAL, args.task)
    elif len(args.files) == 2:
        result = agreement_files(*args.files)
    else:
        raise UserError(f"give two CoNLL files (got {len(args.files)}) or --task TASK")
    if args.json:
        print_json(result)
        return 0
    if not result["sentences"]:
        print("no sentences reviewed by two annotators yet")
        return 0
    print(f"{result['sentences']} sentences · entity F1 exact {result['f1_exact']:.3f} · partial {result['f1_partial']:.3f} "
          f"· token kappa {result['kappa_token']:.3f} · BIO kappa {result['kappa_bio']:.3f}")
    for t, r in result["per_type"].items():
        print(f"  {t:<20} F1 exact {r['f1_exact']:.3f}  partial {r['f1_partial']:.3f}  spans {r['support']}")
    return 0


def cmd_serve_check(args: argparse.Namespace) -> int:
    from core.team.serving import auth_mode

    mode = auth_mode(_ws(args), args.address, Path(__file__).resolve().parents[2])
    print(f"serving on {args.address}: {mode.value}")
    return 0
