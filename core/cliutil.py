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


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default))


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


@contextmanager
def tqdm_progress(desc: str, enabled: bool = True) -> Iterator[Callable[[float, str], None]]:
    """A core `progress(fraction, message)` callback drawn as a tqdm bar on stderr."""
    from tqdm import tqdm

    bar = tqdm(total=1000, desc=desc, disable=not enabled, file=sys.stderr,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining} {postfix}")

    def report(fraction: float, message: str = "") -> None:
        bar.n = int(max(0.0, min(1.0, fraction)) * 1000)
        if message:
            bar.set_postfix_str(message[:60], refresh=False)
        bar.refresh()

    try:
        yield report
    finally:
        bar.close()


def add_workspace_arg(parser: argparse.ArgumentParser) -> None:
    """Commands accept --workspace after the command name too."""
    parser.add_argument("--workspace", default=argparse.SUPPRESS, help="workspace folder")
