"""The jobs table: one SQLite row per job (WAL mode), its encoding, and the liveness check that marks a row failed
when its process vanished. The scheduler, spawn, cancel and the job's side live in core.runner.jobs; this module
only stores and reads, so a page or a report can look at jobs without the runner.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.data.atomic import add_columns, json_default, open_sqlite
from core.data.workspace import Workspace
from core.errors import UserError
from core.runner.jobresult import JobResult
from core.runner.kinds import KINDS, validate
from core.runner.params import SCHEMA_VERSION

ACTIVE = ("queued", "running")
FINISHED = ("done", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    pid INTEGER,
    progress REAL NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    error TEXT,
    run_dir TEXT NOT NULL,
    result TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    pid_start TEXT
)
"""
_ADDED_COLUMNS = (("jobs", "pid_start", "TEXT"),)  # columns newer than the first schema, added to an older database
_MIGRATED: set[str] = set()  # databases this process has already brought up to date


class JobCancelled(Exception):
    """Raised inside a job when it sees its cancel flag; the runner records 'cancelled'."""


@dataclass
class Job:
    id: str
    kind: str
    params: dict[str, Any]
    status: str
    pid: int | None
    progress: float
    message: str
    created: float
    started: float | None
    finished: float | None
    error: str | None
    run_dir: Path
    result: dict[str, Any] | None
    attempts: int
    pid_start: str | None = None  # which process `pid` was (core.runner.jobstore.process_start): a reused pid is not it
    schema_version: int = SCHEMA_VERSION
    params_error: str | None = None  # an old row whose params no longer validate: why
    # the params as the kind's dataclass, when the row was read (row_to_job validates every row): `spec` without a
    # second validation, which a jobs listing polled every few seconds would pay for each row
    typed: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def elapsed(self) -> float | None:
        if self.started is None:
            return None
        return max(0.0, (self.finished or time.time()) - self.started)  # a clock stepped back: never negative

    def log_tail(self, lines: int = 40) -> str:
        path = self.run_dir / "log.txt"
        if not path.exists():
            return ""
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64_000))
            text = fh.read().decode("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def metrics(self) -> list[dict[str, Any]]:
        return read_metrics(self.run_dir)

    @functools.cached_property
    def outcome(self) -> JobResult:
        """What the job returned, typed (core.runner.jobresult); empty while it runs or after it failed."""
        return JobResult.from_dict(self.result)

    @functools.cached_property
    def spec(self) -> Any:
        """The params as the kind's dataclass, every default filled in: what the job function gets, and how a page,
        the scheduler or a report reads a job's settings (a UserError says why an old row does not fit)."""
        if self.params_error:
            raise UserError(self.params_error)
        return self.typed if self.typed is not None else validate(self.kind, self.params)


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text("utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line being written right now
    return rows


# --------------------------------------------------------------------------- database


def connect(ws: Workspace) -> sqlite3.Connection:
    con = open_sqlite(ws.jobs_db, _SCHEMA)
    if str(ws.jobs_db) not in _MIGRATED:
        add_columns(con, _ADDED_COLUMNS)
        _MIGRATED.add(str(ws.jobs_db))
    return con


def decode(text: str | None, key: str) -> tuple[Any, int]:
    """A stored params/result column: {"schema_version": N, key: ...} since schema 2, a bare
    JSON value before it (schema 1)."""
    if not text:
        return None, SCHEMA_VERSION
    value = json.loads(text)
    if isinstance(value, dict) and "schema_version" in value and key in value:
        return value[key], int(value["schema_version"])
    return value, 1


def encode(value: Any, key: str) -> str:
    return json.dumps({"schema_version": SCHEMA_VERSION, key: value}, default=json_default)


def _run_dir(ws: Workspace, row: sqlite3.Row) -> Path:
    """The stored run folder, or the same job's folder in this workspace when the workspace was moved or copied
    (rows store absolute paths)."""
    stored = Path(row["run_dir"])
    here = ws.runs_dir / row["id"]
    return here if not stored.exists() and here.exists() else stored


def row_to_job(ws: Workspace, row: sqlite3.Row) -> Job:
    params, version = decode(row["params"], "params")
    result, _ = decode(row["result"], "result")
    params_error, typed = None, None
    if row["kind"] in KINDS:
        try:  # an old row: fill today's defaults where it validates; any row: say why where it does not (a check
            # added since it was stored, e.g. an option its strategy does not read, would break every listing)
            typed = validate(row["kind"], params)
            params = dataclasses.asdict(typed) if version < SCHEMA_VERSION else params
        except UserError as exc:
            params_error = f"stored with schema {version}; {exc}" if version < SCHEMA_VERSION else str(exc)
    return Job(
        id=row["id"], kind=row["kind"], params=params or {}, status=row["status"], pid=row["pid"],
        progress=row["progress"], message=row["message"], created=row["created"], started=row["started"],
        finished=row["finished"], error=row["error"], run_dir=_run_dir(ws, row),
        result=result, attempts=row["attempts"], pid_start=row["pid_start"], schema_version=version,
        params_error=params_error, typed=typed,
    )


def update(ws: Workspace, job_id: str, attempt: int | None = None, if_status: tuple[str, ...] = (),
           **values: Any) -> bool:
    """Set columns of a job's row. With `attempt`, only while the row is still that attempt: a cancelled process
    that takes a moment to stop must not write its end over the attempt a Resume started meanwhile. With
    `if_status`, only while the row has one of those statuses (a cancel must not turn a job that just finished into
    a cancelled one). False when nothing was written."""
    if "pid" in values and "pid_start" not in values:
        values["pid_start"] = process_start(values["pid"])
    cols = ", ".join(f"{k} = ?" for k in values)
    where, args = "id = ?", [job_id]
    if attempt is not None:
        where, args = where + " AND attempts = ?", [*args, attempt]
    if if_status:
        where, args = where + f" AND status IN ({', '.join('?' * len(if_status))})", [*args, *if_status]
    con = connect(ws)
    try:
        return con.execute(f"UPDATE jobs SET {cols} WHERE {where}", [*values.values(), *args]).rowcount > 0
    finally:
        con.close()


def get_job(ws: Workspace, job_id: str) -> Job:
    """The job of that id, or of the one id that starts with it (ids are long). An empty reference, or one that
    several ids start with, names no job: `jobs delete ""` (or `%`, a LIKE wildcard) deleted whichever came first."""
    ref = str(job_id or "").strip()
    if not ref:
        raise UserError("give a job id (python -m core jobs list shows them)")
    con = connect(ws)
    try:
        rows = con.execute("SELECT * FROM jobs WHERE id = ?", (ref,)).fetchall()
        if not rows:  # a prefix, its LIKE wildcards taken literally
            escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            rows = con.execute("SELECT * FROM jobs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 4",
                               (f"{escaped}%",)).fetchall()
    finally:
        con.close()
    if not rows:
        raise UserError(f"no job {ref!r} in workspace {ws.root}")
    if len(rows) > 1:
        shown = ", ".join(r["id"] for r in rows[:3]) + (" and more" if len(rows) > 3 else "")
        raise UserError(f"{ref!r} starts several job ids ({shown}): give more of the id")
    return reap(ws, row_to_job(ws, rows[0]))


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), read once; None where there is none."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def _boot_id() -> str | None:
    """This boot's id: fixed while this process lives, so read once."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _start_of(fields: list[str] | None) -> str | None:
    boot = _boot_id()
    return f"{boot}:{fields[19]}" if fields is not None and len(fields) > 19 and boot is not None else None


def process_start(pid: int | None) -> str | None:
    """Which process a pid is: the boot and the kernel's start tick of the process (/proc/PID/stat, field 22), so a
    pid the system handed to another program after a restart or a long run is not taken for the job. None where
    there is no /proc (then a live pid is trusted as before)."""
    return _start_of(_stat(pid)) if pid else None


def pid_alive(pid: int | None, start: str | None = None) -> bool:
    """Whether the process is running; with `start` (process_start when the pid was stored), only if it is still
    that process. /proc/PID/stat is read once for both questions (the Jobs page asks it of every row)."""
    if not pid:
        return False
    fields = _stat(pid)
    if start is not None and (now := _start_of(fields)) is not None and now != start:
        return False  # the pid was reused by another program
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own child that exited unreaped) counts as dead; no /proc: a live pid is trusted
    return fields is None or not fields or fields[0] != "Z"


SPAWN_GRACE_S = 60.0  # a claimed row has no pid until Popen returns; it is not "vanished" meanwhile


def spawning(pid: int | None, started: float | None) -> bool:
    return pid is None and started is not None and time.time() - started < SPAWN_GRACE_S


def reap(ws: Workspace, job: Job) -> Job:
    """Mark a running job whose process is gone as failed, with a reason."""
    if job.status == "running" and not pid_alive(job.pid, job.pid_start) and not spawning(job.pid, job.started):
        current = get_status(ws, job.id)
        if current == "running":
            reason = f"process {job.pid} exited without reporting (killed, out of memory, or the machine restarted)"
            update(ws, job.id, job.attempts, ("running",), status="failed", error=reason, finished=time.time())
            job.status, job.error = "failed", reason
    return job


def get_status(ws: Workspace, job_id: str) -> str:
    con = connect(ws)
    try:
        row = con.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
    finally:
        con.close()
    return row["status"] if row else "missing"
