"""Atomic file writes and the workspace's SQLite connections.

A module of its own so that readers/writers (core.corpus) and the workspace share one
implementation without importing each other (core.workspace imports core.corpus).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
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


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def temp_path_for(path: str | Path) -> Path:
    """A fresh temp path beside `path`, for writers that need a filename (Parquet, numpy);
    pair it with os.replace(tmp, path)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def open_sqlite(path: str | Path, schema: str) -> sqlite3.Connection:
    """A connection to one of the workspace's SQLite stores (jobs, reviews). WAL lets the app,
    the CLI and job processes read while one writes; autocommit (isolation_level=None) so
    callers open explicit transactions only where they need one."""
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    con.row_factory = sqlite3.Row
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA busy_timeout=30000")
    con.executescript(schema)
    return con
