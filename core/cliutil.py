"""Helpers every CLI command shares: JSON printing, a tqdm progress callback, --workspace.

Separate from core.cli (which imports every core.commands module) so that the command modules
import these without importing core.cli back.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.data.atomic import json_default
from core.errors import UserError


def comma_list(text: str) -> list[str]:
    """'a, b,,c' -> ['a', 'b', 'c']: the items of a comma-separated option."""
    return [s.strip() for s in text.split(",") if s.strip()]


def out_file(text: str) -> str:
    """An --out that names a file to write, checked when the command line is read (argparse's `type`), so a folder or
    a path under a file is refused before the work, not after it as an IsADirectoryError (`project` ran its UMAP
    first). Parents that do not exist yet are made by the writers.

    >>> out_file("/")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: / is a folder: give a file (in it, or anywhere)
    """
    path = Path(text).expanduser()
    if not text.strip():
        raise argparse.ArgumentTypeError("give a file name")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file (in it, or anywhere)")
    _check_parents(text, path)
    return text


def out_folder(text: str) -> str:
    """An --out that names a folder to write (a model, a run): refused when it is a file or lies under one."""
    path = Path(text).expanduser()
    if not text.strip():
        raise argparse.ArgumentTypeError("give a folder name")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file: give a folder (a new one is made)")
    if path.is_dir():  # a run folder is written inside; a model folder beside it, then renamed in (its parent's)
        if not os.access(path, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text}: cannot write in it")
        return text
    _check_parents(text, path)
    return text


def _check_parents(text: str, path: Path) -> None:
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise argparse.ArgumentTypeError(f"{text}: cannot write in {parent}")
            return


def read_text_file(path: str | Path, what: str) -> str:
    """A small text file a command reads whole (a password, guidelines), UTF-8 with or without a BOM; a file that
    cannot be read or is not UTF-8 is a UserError naming it, the line and the column, as corpus files get."""

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UserError(f"{path}:{line}: the {what} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                        f"{column}); save the file as UTF-8") from None


def parse_spans(text: str, option: str = "--spans") -> list:
    """'0-2:PER,4-5:LOC' as spans (positions checked against the sentence by core)."""
    from core.data.tags import Span

    spans = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        where, sep, entity = part.partition(":")
        start, dash, end = where.partition("-")
        if not (sep and dash and start.strip().isdigit() and end.strip().isdigit()):
            raise UserError(f"{option} {part!r}: expected START-END:TYPE, e.g. 0-2:PER (token positions, end exclusive)")
        spans.append(Span(int(start), int(end), entity.strip()))
    return spans


def spans_text(tokens: list[str], spans: list) -> str:
    """Spans as `parse_spans` reads them, each with its words: "0-2:PER 'Ada Lovelace'"."""
    return ", ".join(f"{s.start}-{s.end}:{s.type} '{' '.join(tokens[s.start:s.end])}'" for s in spans) or "(no entity)"


def print_warning(result: dict[str, Any]) -> None:
    """A job result's warning (a quality gate, DEV or TEST that is the training corpus) on stderr, as a panel shows it."""
    if warning := result.get("warning"):
        print(f"warning: {warning}", file=sys.stderr)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=json_default))


@contextmanager
def tqdm_progress(desc: str, enabled: bool = True) -> Iterator[Callable[[float, str], None]]:
    """A core `progress(fraction, message)` callback drawn as a tqdm bar on stderr (core.progress.cli_progress:
    drawn only once something reports, cleared on an error, `.echo(line)` prints above it)."""
    from core.progress import cli_progress

    with cli_progress(desc, enabled) as bar:
        yield bar


class Once(argparse.Action):
    """An option that may be given once: argparse keeps the last of two silently, so `import f --role dc ... --role
    lc` stored an LC where the first word said DC."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, f"_given_{self.dest}", False):
            parser.error(f"{option_string} given twice ({getattr(namespace, self.dest)!r}, then {values!r}): give it once")
        setattr(namespace, f"_given_{self.dest}", True)
        setattr(namespace, self.dest, values)


def progress_wanted(args: argparse.Namespace) -> bool:
    """Progress bars go to stderr, so `--json` (which owns stdout) never hides them on a terminal: a 28-minute
    `compare-sources --json` used to print nothing until the end. `--quiet` hides them, and so does `--json` when
    stderr is not a terminal (a log file keeps every redraw)."""
    if getattr(args, "quiet", False):
        return False
    return not getattr(args, "json", False) or sys.stderr.isatty()


def add_workspace_arg(parser: argparse.ArgumentParser) -> None:
    """Commands accept --workspace (and --create-workspace) after the command name too."""
    parser.add_argument("--workspace", default=argparse.SUPPRESS,
                        help="workspace folder (default: $NERSELECT_WORKSPACE, else ./workspace)")
    parser.add_argument("--create-workspace", action="store_true", default=argparse.SUPPRESS,
                        help="make --workspace a new workspace when it is not one yet (default: refuse)")
