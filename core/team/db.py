"""The team store: one SQLite file per workspace (`team.sqlite`) for users, sessions, review tasks and the
audit log. SQLite (WAL) because the app, the CLI and several browser sessions write to it at once; the
audit table refuses UPDATE and DELETE with triggers, so the log is append-only even for code that forgets.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from typing import Any

from core.access import LOCAL, Actor, require
from core.data.atomic import open_sqlite, write_transaction
from core.data.workspace import Workspace

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
    PRIMARY KEY (task_id, idx)
);
"""


def connect(ws: Workspace) -> sqlite3.Connection:
    con = open_sqlite(ws.root / "team.sqlite", _SCHEMA)
    _migrate(con)
    return con


# columns added after a store was first written: (table, column, declaration); added in place, older rows take the default
_ADDED_COLUMNS = (("tasks", "suggested_by", "TEXT NOT NULL DEFAULT ''"),)


def _migrate(con: sqlite3.Connection) -> None:
    for table, column, declaration in _ADDED_COLUMNS:
        if column not in {r[1] for r in con.execute(f"PRAGMA table_info({table})")}:
            try:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise


def transaction(ws: Workspace) -> AbstractContextManager[sqlite3.Connection]:
    """`with transaction(ws) as con:` one write transaction on the team store (core.data.atomic.write_transaction)."""
    return write_transaction(connect(ws))


def audit(con: sqlite3.Connection, actor: Actor | str, action: str, target: str = "", **detail: Any) -> None:
    """Append one line to the audit log (who, what, when), inside the caller's transaction if any."""
    name = actor if isinstance(actor, str) else actor.name
    con.execute("INSERT INTO audit (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)",
                (time.time(), name, action, target, json.dumps(detail, sort_keys=True)))


def read_audit(ws: Workspace, limit: int = 200, user: str | None = None, actor: Actor = LOCAL) -> list[dict[str, Any]]:
    """Newest first (admins only: it shows everyone's actions)."""
    require(actor, "manage users")
    con = connect(ws)
    try:
        q = "SELECT * FROM audit" + (" WHERE actor = ?" if user else "") + " ORDER BY id DESC LIMIT ?"
        rows = con.execute(q, ((user,) if user else ()) + (limit,)).fetchall()
    finally:
        con.close()
    return [{**dict(r), "detail": json.loads(r["detail"])} for r in rows]
