"""The team's side of the workspace's one annotation database (core.data.annotation_db): the append-only audit
log, written inside the caller's transaction, and read by admins only.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from core.access import LOCAL, Actor, require
from core.data.annotation_db import connect
from core.data.workspace import Workspace


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
