"""How long an experiment cell takes, from the clocks of the cells that finished, and a time limit built on it.

A CPU study cell takes 10 to 37 minutes and a GPU call has a fixed budget, so a run stopped from outside (a session
that ends, a device script's deadline) loses the cell it was in: its MLM checkpoints live in a workspace that a fresh
machine does not have. With a time limit (`ExperimentParams.time_limit`, `--time-limit`) the experiment starts no cell
whose expected clock would end past it, and stops with its finished cells kept (`TimeLimitReached`); the same command
continues. The expected clock of a row is the median of that row's finished cells on this kind of device, or, for a
pretraining row with none yet, of every pretraining row's (a `none` cell only fine-tunes: several times faster). Until
its own cells can time a row, the clocks of other experiments on the same task (a knob variant's default recipe, an
earlier run with other rows: `lent`) time it the same way, so a grid's variant does not start its first, 25-minute CPU
cell blind with ten minutes left. A row nothing can time starts anyway: the limit never stops a run on a guess.

>>> cells = [{"row": "none", "started": 0, "finished": 120, "device": "cpu"},
...          {"row": "tapt", "started": 120, "finished": 720, "device": "cpu"}]
>>> expected_clock("dsir", row_clocks(cells)), expected_clock("none", row_clocks(cells))
(600.0, 120.0)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Mapping
from typing import Any

from core.errors import TimeLimitReached
from core.recipes.duration import format_duration


def device_kind(device: str | None) -> str:
    """'cuda' or 'cpu' from a cell's device ('cuda:3', 'cpu'); clocks of one kind say nothing of the other's."""
    return "cuda" if str(device or "cpu").startswith("cuda") else "cpu"


def clocked(cells: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The cells with a start and an end time (a cell typed in by hand, or an old record, may have neither)."""
    return [c for c in cells if isinstance(c.get("started"), (int, float)) and isinstance(c.get("finished"), (int, float))]


def cell_clock(cell: Mapping[str, Any]) -> float:
    """How long the cell took, in seconds. A cell continued by a later run (its MLM finished before a session ended,
    its fine-tune ran after) started again at that run: its own span is the fine-tune alone, and its `mlm_seconds`
    (the pretraining's, kept with its model) is longer than the span. Then the two add up; timed by the span alone,
    a literature DSIR cell read 5 minutes instead of 33 and the next one started past a time limit.

    >>> cell_clock({"started": 0, "finished": 1800, "mlm_seconds": 1200}), cell_clock(
    ...     {"started": 0, "finished": 285, "mlm_seconds": 1668})
    (1800.0, 1953.0)
    """
    span = float(cell["finished"]) - float(cell["started"])
    mlm = float(cell.get("mlm_seconds") or 0.0)
    return span + mlm if mlm > span else span


def row_clocks(cells: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Each row's finished-cell clocks in seconds (cell_clock)."""
    by_row: dict[str, list[float]] = {}
    for c in clocked(cells):
        by_row.setdefault(str(c.get("row")), []).append(cell_clock(c))
    return by_row


def pretraining_clock(by_row: Mapping[str, list[float]]) -> float | None:
    """The median clock of every pretraining row's cells (all but none), or None."""
    spans = [t for row, times in by_row.items() if row != "none" for t in times]
    return statistics.median(spans) if spans else None


def expected_clock(row: str, by_row: Mapping[str, list[float]]) -> float | None:
    """A cell's expected clock: its row's median, or for a pretraining row with none yet, every pretraining row's."""
    if by_row.get(row):
        return float(statistics.median(by_row[row]))
    typical = pretraining_clock(by_row) if row != "none" else None
    return float(typical) if typical is not None else None


class TimeLimit:
    """Whether a cell still fits before `seconds` from `start` (now by default); None: no limit, every cell fits.
    `skipped` lists the cells that did not, for the message the run stops with."""

    def __init__(self, seconds: float | None, start: float | None = None, device: str = "cpu",
                 lent: Iterable[Mapping[str, Any]] = ()) -> None:
        self.seconds, self.start, self.kind = seconds, time.time() if start is None else start, device_kind(device)
        self.lent = row_clocks(self._this_kind(lent))  # other experiments' clocks: only where its own time nothing
        self.skipped: list[str] = []

    def _this_kind(self, cells: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [c for c in cells if device_kind(c.get("device")) == self.kind]

    @property
    def end(self) -> float | None:
        return None if self.seconds is None else self.start + self.seconds

    def fits(self, row: str, finished: Iterable[Mapping[str, Any]], label: str = "", now: float | None = None) -> bool:
        """True when the cell's expected clock (from `finished` cells of this device kind, else the lent ones) ends
        before the limit, or when nothing can time it; a cell that does not fit is noted in `skipped` under `label`.
        Own clocks first: a lent clock is another recipe's (a variant with 40 MLM passes runs longer than the default),
        and its own first cell is the better guess."""
        if self.end is None:
            return True
        expected = expected_clock(row, row_clocks(self._this_kind(finished)))
        if expected is None:
            expected = expected_clock(row, self.lent)
        if expected is None or (time.time() if now is None else now) + expected <= self.end:
            return True
        self.skipped.append(label or row)
        return False

    def reached(self, done: int) -> TimeLimitReached:
        """The exception a run stops with once cells were skipped."""
        left = ", ".join(self.skipped[:6]) + (f" and {len(self.skipped) - 6} more" if len(self.skipped) > 6 else "")
        return TimeLimitReached(
            f"stopped at its time limit ({format_duration(self.seconds or 0)}): {done} cell{'s' if done != 1 else ''} "
            f"finished and kept; {len(self.skipped)} not started, as each would have ended past the limit ({left}): "
            "run it again (the same command, or Resume) to continue")
