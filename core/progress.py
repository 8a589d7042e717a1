"""Progress reporting, one way everywhere: a `progress(fraction, message)` callback.

Long steps take a `Progress`; a step made of parts hands each part `sub(progress, start, end,
prefix)`, which maps the part's 0-1 onto its slice of the whole. In the app the callback is
`JobContext.progress` (the job panel's bar and message); on the terminal it is `cli_progress`,
a tqdm bar on stderr that also prints the job's log lines (epoch + dev F1, self-training rounds)
above the bar, so the figure that matters stays readable after the bar moves on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[float, str], None]


def silent(fraction: float, message: str = "") -> None:
    """A Progress that reports nowhere (the default when a caller passes None)."""


def sub(progress: Progress | None, start: float, end: float, prefix: str = "") -> Progress:
    """A callback mapping a part's 0-1 onto [start, end] of `progress`, its messages prefixed."""
    if progress is None:
        return silent

    def report(fraction: float, message: str = "") -> None:
        fraction = min(1.0, max(0.0, float(fraction)))
        progress(start + (end - start) * fraction, f"{prefix}{message}" if message else prefix.rstrip(": "))
    return report


def rows_part(progress: Progress | None, done: int, size: int, total: int, start: float = 0.0, end: float = 1.0,
              label: str = "") -> Progress:
    """A callback for one part of a long pass over `total` rows (rows done..done+size): its 0-1 maps onto the
    part's share of [start, end], and its message counts the whole pass ("NER on DC: 12,000/40,000 sentences"), not
    the part's own rows (which restarted at 0 with every part of 10,000).

    >>> said = []; report = rows_part(lambda f, m: said.append((round(f, 2), m)), 10, 10, 40, label="NER: ")
    >>> report(0.5, "5/10 sentences"); said
    [(0.38, 'NER: 15/40 sentences')]
    """
    if progress is None:
        return silent
    lo, hi = start + (end - start) * done / max(1, total), start + (end - start) * (done + size) / max(1, total)

    def report(fraction: float, message: str = "") -> None:
        fraction = min(1.0, max(0.0, float(fraction)))
        progress(lo + (hi - lo) * fraction, f"{label}{done + round(size * fraction):,}/{total:,} sentences")
    return report


class CliProgress:
    """A tqdm bar on stderr, drawn only once something reports (and after a short delay), so a
    command that fails at once prints its one-line error and no bar. `echo` prints a line above it.

    The time left is estimated from the progress made by this process only: a resumed run's first report already
    stands at its finished share (a study with 6 of 12 cells kept starts at 50%), and tqdm, counting that share as
    done in the first second, used to promise a minute where hours were left."""

    def __init__(self, desc: str, enabled: bool = True, width: int = 70):
        self.desc, self.enabled, self.width = desc, enabled, width
        self._bar = None
        self._base: tuple[int, float] | None = None  # (share, time) of the first report past zero: the rate's origin

    def _get(self):
        if self._bar is None:
            from tqdm import tqdm

            # elapsed<remaining are written here, not by tqdm: its rate counts from the bar's start and its initial
            # share together, and the elapsed clock must count from the command's start (loading a model is time
            # spent) while the rate counts from the first report past zero (a resumed share is not this run's speed)
            class Bar(tqdm):
                clock = ""

                @property
                def format_dict(self):  # tqdm passes extra keys on to bar_format
                    return {**super().format_dict, "clock": self.clock}

            self._bar = Bar(total=1000, desc=self.desc, file=sys.stderr, delay=0.5,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {clock} {postfix}")
        return self._bar

    def _clock(self, now: float) -> str:
        from tqdm import tqdm

        bar = self._bar
        elapsed = tqdm.format_interval(now - bar.start_t)
        if self._base is None or bar.n <= self._base[0] or now <= self._base[1]:
            return f"{elapsed}<?"
        rate = (bar.n - self._base[0]) / (now - self._base[1])
        return f"{elapsed}<{tqdm.format_interval((bar.total - bar.n) / rate)}"

    def __call__(self, fraction: float, message: str = "") -> None:
        if not self.enabled:
            return
        bar = self._get()
        bar.n = int(max(0.0, min(1.0, float(fraction))) * 1000)
        now = bar._time()
        if self._base is None and bar.n > 0:  # the first report past zero: the resumed share, not this run's speed
            self._base = (bar.n, now)
        bar.clock = self._clock(now)
        if message:
            bar.set_postfix_str(message[: self.width], refresh=False)
        bar.refresh()

    def echo(self, line: str) -> None:
        """A log line worth keeping on the terminal (not the bar's transient message)."""
        if not self.enabled:
            return
        if self._bar is None:
            print(line, file=sys.stderr, flush=True)
        else:
            self._bar.write(line, file=sys.stderr)

    def close(self, failed: bool = False) -> None:
        if self._bar is not None:
            if failed:
                self._bar.leave = False  # an error message follows; a half-drawn bar above it only confuses
            self._bar.close()
            if failed and not sys.stderr.isatty():  # a log file keeps the bar's text: end its line, so the
                print(file=sys.stderr, flush=True)  # error is a line of its own
            self._bar = None


@contextmanager
def cli_progress(desc: str, enabled: bool = True) -> Iterator[CliProgress]:
    """`with cli_progress("train") as bar: run(..., progress=bar)`; also `bar.echo(line)`."""
    bar = CliProgress(desc, enabled)
    try:
        yield bar
    except BaseException:
        bar.close(failed=True)
        raise
    bar.close()
