"""Command line: `python -m core COMMAND ...`.

Each module in core/commands/ contributes subcommands through `register(subparsers)`
and sets `func` on its parsers; this file only wires them and turns a `UserError`
into `error: ...` on stderr with exit status 2 (the contract scripts rely on).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from pathlib import Path

import core.commands
from core.environment import variable
from core.errors import TIME_LIMIT_EXIT, Interrupted, TimeLimitReached, UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core",
        description="Select pretraining data for NER: corpora, similarity, embeddings, selection, training.",
    )
    parser.add_argument("--workspace", default=None,
                        help="workspace folder (default: $NERSELECT_WORKSPACE or ./workspace)")
    parser.add_argument("--create-workspace", action="store_true",
                        help="make --workspace a new workspace when it is not one yet (default: refuse, so a typo creates nothing)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(core.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"core.commands.{info.name}")
        module.register(sub)
    return parser


def _quiet_libraries() -> None:
    """Our own messages say what matters (e.g. 'no trained MLM head'); transformers' load reports
    and weight-loading bars would bury them on a terminal."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


CREATE_ENV = "NERSELECT_CREATE_WORKSPACE"  # "1": --create-workspace for every command (scripts, tests)


def check_workspace_arg(args: argparse.Namespace) -> None:
    """A --workspace that is no workspace yet is created only when asked (--create-workspace), as the app asks first:
    a typo must not leave a folder tree behind."""
    from pathlib import Path

    from core.data.workspace import folder_state

    given = getattr(args, "workspace", None)
    if not given or getattr(args, "create_workspace", False) or variable(CREATE_ENV).text() == "1":
        return
    state = folder_state(given)
    if state == "missing":
        raise UserError(f"--workspace {given}: no such folder; give --create-workspace to make a new workspace there")
    if state == "other" and Path(given).is_dir() and any(Path(given).iterdir()):
        raise UserError(f"--workspace {given}: a folder that is not a workspace (no corpora/ or workspace.json); "
                        "give --create-workspace to make it one")


def how_to_continue(args: argparse.Namespace, run_dir: Path) -> str:
    """What an interrupted inline run tells its user: a command with --run-dir resumes from that folder's last
    checkpoint (`experiment --out` keeps its finished cells); the folder was named nowhere before."""
    if getattr(args, "run_dir", None):
        return f"rerun the same command to continue from {run_dir}"
    if hasattr(args, "run_dir"):
        return f"rerun it with --run-dir {run_dir} to continue from its last checkpoint"
    return f"its run folder: {run_dir}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if "select" in argv and argv[argv.index("select") + 1:argv.index("select") + 2] == ["explain"]:
        at = argv.index("select")  # `select explain SELECTION INDEX`: a verb of its own beside select's options
        argv[at:at + 2] = ["select-explain"]
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    _quiet_libraries()
    try:
        check_workspace_arg(args)
        code = args.func(args)
        sys.stdout.flush()  # a reader that left (`| head`) shows up here, inside the handler below, not at exit
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TimeLimitReached as exc:  # not an error: the finished cells are kept and the same command continues
        print(str(exc), file=sys.stderr)
        return TIME_LIMIT_EXIT
    except KeyboardInterrupt as exc:
        print("interrupted" + (f"; {how_to_continue(args, exc.run_dir)}" if isinstance(exc, Interrupted) else ""),
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # `python -m core jobs list | head`: the reader left; no traceback, and none at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path the system refused (full disk, no permission, a folder where a file goes)
        where = exc.filename if exc.filename is not None else ""
        print(f"error: {where}{': ' if where else ''}{exc.strerror or exc}", file=sys.stderr)
        return 2
    return int(code or 0)
