"""The workspace's one annotation database (`team.sqlite`): users, sessions, review tasks, their answers and
adjudications, the append-only audit log, and the decisions taken in Inspect. One file, one schema and one
version check, so an answer saved from the queue and a decision saved in Inspect follow the same rules.

SQLite (WAL) because the app, the CLI and several browser sessions write at once; the audit table refuses
UPDATE and DELETE with triggers. Inspect's decisions lived in a second file, `review.sqlite`, before; the first
connection merges it in (inside one write transaction, marked done in `merged`, so two processes cannot merge
it twice) and renames it to `review.sqlite.merged`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from core.data.atomic import add_columns, open_sqlite, write_transaction
from core.data.tags import Span
from core.data.workspace import Workspace

FILE = "team.sqlite"
_OLD_REVIEW_FILE = "review.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    pw_hash TEXT,
    email TEXT UNIQUE,
    disabled INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    locked_until REAL NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS throttle (
    key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    corpus TEXT NOT NULL,
    corpus_hash TEXT NOT NULL,
    annotators TEXT NOT NULL,
    overlap REAL NOT NULL,
    guidelines TEXT NOT NULL DEFAULT '',
    types TEXT NOT NULL DEFAULT '[]',
    created_by TEXT NOT NULL,
    created REAL NOT NULL,
    suggested_by TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS task_items (
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    position INTEGER NOT NULL,
    tokens TEXT NOT NULL,
    suggested TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (task_id, idx)
);
CREATE TABLE IF NOT EXISTS assignments (
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    PRIMARY KEY (task_id, idx, annotator)
);
CREATE TABLE IF NOT EXISTS annotations (
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    status TEXT NOT NULL,
    spans TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (task_id, idx, annotator)
);
CREATE TABLE IF NOT EXISTS adjudications (
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    spans TEXT NOT NULL,
    source TEXT NOT NULL,
    by TEXT NOT NULL,
    updated REAL NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, idx)
);
CREATE TABLE IF NOT EXISTS review (
    set_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,
    tokens TEXT NOT NULL,
    spans TEXT NOT NULL,
    version INTEGER NOT NULL,
    reviewer TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    updated REAL NOT NULL,
    PRIMARY KEY (set_key, idx)
);
CREATE TABLE IF NOT EXISTS review_history (
    set_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    spans TEXT NOT NULL,
    reviewer TEXT NOT NULL DEFAULT '',
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS merged (
    source TEXT PRIMARY KEY,
    at REAL NOT NULL
);
"""

# columns added after a store was first written: (table, column, declaration); added in place, older rows take the default
_ADDED_COLUMNS = (("tasks", "suggested_by", "TEXT NOT NULL DEFAULT ''"),
                  ("adjudications", "version", "INTEGER NOT NULL DEFAULT 0"))  # a decision before versions: 0


class StaleVersion(Exception):
    """Someone saved the row after the version the caller saw; `row` is what is stored now (None: no row).
    Each store turns it into its own message (an Inspect decision, a task answer)."""

    def __init__(self, row: sqlite3.Row | None):
        super().__init__("stale version")
        self.row = row


def connect(ws: Workspace) -> sqlite3.Connection:
    con = open_sqlite(ws.root / FILE, _SCHEMA)
    add_columns(con, _ADDED_COLUMNS)
    if (ws.root / _OLD_REVIEW_FILE).exists():
        _merge_review_file(ws, con)
    return con


def transaction(ws: Workspace) -> AbstractContextManager[sqlite3.Connection]:
    """`with transaction(ws) as con:` one write transaction on the store (core.data.atomic.write_transaction)."""
    return write_transaction(connect(ws))


def next_version(con: sqlite3.Connection, table: str, key: Mapping[str, Any], expected: int | None) -> tuple[sqlite3.Row | None, int]:
    """Optimistic concurrency, once for every versioned table: inside the caller's write transaction, read the
    row at `key` and return it with the version to write next; raise StaleVersion when its version is not
    `expected` (0: the caller saw no row; None: overwrite deliberately)."""
    where = " AND ".join(f"{column} = ?" for column in key)
    row = con.execute(f"SELECT * FROM {table} WHERE {where}", tuple(key.values())).fetchone()
    current = row["version"] if row else 0
    if expected is not None and current != expected:
        raise StaleVersion(row)
    return row, current + 1


def spans_json(spans: Iterable[Span]) -> str:
    """Spans as one column's text, in order (every spans column of the store is written here)."""
    return json.dumps([s.to_dict() for s in sorted(spans)])


def spans_from_json(text: str) -> list[Span]:
    return [Span.from_dict(d) for d in json.loads(text)]


def _merge_review_file(ws: Workspace, con: sqlite3.Connection) -> None:
    """Copy Inspect's decisions and their history from the old `review.sqlite` into this store and keep the old
    file as `review.sqlite.merged`. The process that renames it away first merges it; every other one finds
    nothing to claim (an ATTACH of a vanished file would create an empty one)."""
    old = ws.root / _OLD_REVIEW_FILE
    claimed = old.with_name(f"{old.name}.merging-{os.getpid()}-{threading.get_ident()}")
    try:
        old.rename(claimed)
    except FileNotFoundError:
        return
    for suffix in ("-wal", "-shm"):  # SQLite finds the WAL by the database's name: it moves with it
        with contextlib.suppress(FileNotFoundError):
            old.with_name(old.name + suffix).rename(claimed.with_name(claimed.name + suffix))
    con.execute("ATTACH DATABASE ? AS old", (str(claimed),))
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            done = con.execute("SELECT 1 FROM merged WHERE source = ?", (_OLD_REVIEW_FILE,)).fetchone()
            tables = {r[0] for r in con.execute("SELECT name FROM old.sqlite_master WHERE type = 'table'")}
            if not done and {"review", "review_history"} <= tables:
                con.execute("INSERT OR IGNORE INTO main.review SELECT set_key, idx, status, tokens, spans, version, reviewer, "
                            "model, updated FROM old.review")
                con.execute("INSERT INTO main.review_history SELECT set_key, idx, version, status, spans, reviewer, updated "
                            "FROM old.review_history")
            con.execute("INSERT OR IGNORE INTO merged (source, at) VALUES (?, strftime('%s', 'now'))", (_OLD_REVIEW_FILE,))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("PRAGMA old.wal_checkpoint(TRUNCATE)")  # the kept copy holds every decision, not its WAL
    finally:
        con.execute("DETACH DATABASE old")
    claimed.replace(old.with_name(old.name + ".merged"))
    for suffix in ("-wal", "-shm"):
        claimed.with_name(claimed.name + suffix).unlink(missing_ok=True)
