"""The project's own error types: one place so the UI and the CLI can tell a user
mistake (show a message, exit 2) from a bug (let it raise)."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """A problem with what the user asked for or gave us; the message is shown as is."""


class CorpusError(UserError):
    """Bad corpus input, located at a file and line so a user can fix it.

    >>> str(CorpusError("x.conll", 3, "expected 'TOKEN TAG'"))
    "x.conll:3: expected 'TOKEN TAG'"
    """

    def __init__(self, path: str | Path | None, line: int | None, message: str):
        self.path = str(path) if path is not None else "<input>"
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ModelError(UserError):
    """A model name that cannot be resolved or lacks what a step needs (e.g. an MLM head)."""


TIME_LIMIT_EXIT = 3  # the CLI's exit status for a run stopped at its time limit (2: a user error, 130: interrupted)


class TimeLimitReached(Exception):
    """An experiment stopped at its time limit, its finished cells kept: not a failure, and not a user's mistake
    (core.experiments.cell_clock)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C in a job run in this process (core.runner.jobs.run_inline): it carries the run folder, so the CLI can
    say how to continue (a training run resumes from the folder's last checkpoint)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
