"""`env`: the environment variables the tool reads (core.environment), their values here and what they change."""

from __future__ import annotations

import argparse

from core.cliutil import print_json
from core.environment import describe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("env", help="the environment variables nerselect reads: value here, default and meaning",
                       description="Every environment variable the app, the CLI and the job runner read (declared once, "
                                   "in core/environment.py), with its value in this shell.")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.set_defaults(func=cmd_env)


def cmd_env(args: argparse.Namespace) -> int:
    rows = describe()
    if args.json:
        print_json(rows)
        return 0
    width = max(len(r["variable"]) for r in rows)
    for r in rows:
        value = r["value"] or f"(unset: {r['default'] or 'off'})"
        print(f"{r['variable']:<{width}}  {value}\n{'':<{width}}  {r['meaning']}")
    return 0
