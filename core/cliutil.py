"""Helpers every CLI command shares: JSON printing, a tqdm progress callback, --workspace.

Separate from core.cli (which imports every core.commands module) so that the command modules
import these without importing core.cli back.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from core.data.atomic import json_default


def comma_list(text: str) -> list[str]:
    """'a, b,,c' -> ['a', 'b', 'c']: the items of a comma-separated option."""
    return [s.strip() for s in text.split(",") if s.strip()]


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
