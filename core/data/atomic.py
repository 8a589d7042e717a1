"""Atomic file writes and the workspace's SQLite connections.

A module of its own so that readers/writers (core.data.corpus) and the workspace share one
implementation without importing each other (core.data.workspace imports core.data.corpus).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.errors import UserError


def current_umask() -> int:
    """The process umask, read without changing it where Linux says it (/proc), else by the
    set-and-restore call (which is not thread-safe, hence the preference)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def honour_umask(path: str | Path, directory: bool = False) -> None:
    """Give a temp file/folder (mkstemp/mkdtemp make them 0600/0700) the mode a plain open() or
    mkdir() would have, before it is moved into place: outputs stay readable by the group and
    others exactly as the user's umask says (0644 / 0755 typically)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_default(o: Any) -> Any:
    """The one JSON fallback of the project (stored files, job rows, metrics, CLI output): numpy scalars become
    numbers and arrays lists (not strings, so a result.json reads back as numbers), paths and the rest text."""
    if hasattr(o, "tolist"):  # numpy arrays and scalars alike
        return o.tolist()
    if callable(getattr(o, "to_dict", None)):  # a typed record (Cell, SelectionMeta, RunEntry, ...): its JSON form
        return o.to_dict()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    return str(o)


def split_fields(cls: type, data: Mapping[str, Any], own: Iterable[str] = (),
                 drop_none: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """A typed record read from JSON, once for every record: (the values of dataclass `cls`'s fields found in `data`,
    every other key, kept so a newer or older writer's fields are written back). `own`: keys the caller reads itself
    (the catch-all field, nested records, renamed keys), in neither part; `drop_none`: a null leaves the default.

    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class R:
    ...     a: int = 0
    ...     other: dict = field(default_factory=dict)
    >>> split_fields(R, {"a": 1, "b": 2, "other": {}}, own=("other",))
    ({'a': 1}, {'b': 2})
    """
    skip = set(own)
    names = {f.name for f in dataclasses.fields(cls)} - skip
    known = {k: v for k, v in data.items() if k in names and not (drop_none and v is None)}
    return known, {k: v for k, v in data.items() if k not in names and k not in skip}


def plain_json(obj: Any) -> Any:
    """`obj` as plain JSON values (numpy scalars become numbers): what it reads as after a write and a read."""
    return json.loads(json.dumps(obj, default=json_default))


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=json_default) + "\n")


def temp_path_for(path: str | Path) -> Path:
    """A fresh temp path beside `path`, for writers that need a filename (Parquet, numpy);
    pair it with os.replace(tmp, path)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, 0o666 & ~current_umask())
    os.close(fd)
    return Path(tmp)


def open_sqlite(path: str | Path, schema: str) -> sqlite3.Connection:
    """A connection to one of the workspace's SQLite stores (jobs, reviews). WAL lets the app,
    the CLI and job processes read while one writes; autocommit (isolation_level=None) so
    callers open explicit transactions only where they need one."""
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    con.row_factory = sqlite3.Row
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA busy_timeout=30000")
        con.executescript(schema)
    except sqlite3.DatabaseError as exc:
        con.close()
        if isinstance(exc, sqlite3.OperationalError):  # locked, or a full disk: not the file's fault
            raise
        raise UserError(f"{path}: not a readable SQLite database ({exc}): restore it from a backup, or move it away "
                        "to start an empty one") from None
    return con


def add_columns(con: sqlite3.Connection, added: Iterable[tuple[str, str, str]]) -> None:
    """(table, column, declaration) columns newer than a store's first schema, added to an older database where
    missing (two processes may race: the second one's duplicate column is no error)."""
    for table, column, declaration in added:
        if column not in {r[1] for r in con.execute(f"PRAGMA table_info({table})")}:
            try:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise


@contextmanager
def write_transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT on `con` (one write lock around a read-compare-write, so two writers cannot both
    pass a check), rolled back on any exception, and the connection closed either way."""
    try:
        con.execute("BEGIN IMMEDIATE")
        yield con
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    finally:
        con.close()


@contextmanager
def exclusive(path: str | Path, waiting: Callable[[], None] | None = None, poll_seconds: float = 2.0) -> Iterator[None]:
    """Hold an inter-process lock on `path` (filelock: flock where there is one) while two jobs could write one
    folder; `waiting` runs between tries, e.g. a job's progress, which raises once the job is cancelled, so a wait
    for another job's work can be cancelled. The lock goes with the process, so a killed holder never leaves it."""
    from filelock import FileLock, Timeout

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    while True:
        try:
            lock.acquire(timeout=poll_seconds)
            break
        except Timeout:
            if waiting is not None:
                waiting()
    try:
        yield
    finally:
        lock.release()
