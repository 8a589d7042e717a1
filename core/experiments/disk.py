"""What a workspace holds on disk, and the MLM snapshots that finished runs no longer need.

With checkpoint selection on (the demo and study presets), every MLM model keeps four snapshots for the pick, each as
large as the model: in one CrossNER study domain's run (7 rows x 3 seeds) they were 6.6 GB of its 10.2 GB, and the
study's folders filled this machine's disk. Once a finished run has made its picks, only the chosen snapshot is still
read (an NER model's lineage names it as its parent); the others are freed here, on request, never by a job on its own: extending the
run with a new LC size would need them, so their folder then keeps `FREED.json`, and a later pick there stops with a
message that says so instead of choosing among fewer candidates than its siblings did (checkpoint_pick.candidates).

A run counts as finished when its job is done, or, for a CLI run (no job), when its folder has result.json and its log
is not newer than it (a resumed CLI run writes to its log before its new result): state, never a clock.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.access import LOCAL, Actor, check_server_path, require
from core.data.atomic import atomic_write_json
from core.data.workspace import Workspace
from core.experiments.plan import PICK_FILE
from core.train.checkpoint_pick import FREED_FILE

if TYPE_CHECKING:
    from core.runner.jobstore import Job

SNAPSHOTS_GLOB = "**/mlm/phase-*/snapshots"


def folder_bytes(path: Path, skip: frozenset[Path] = frozenset()) -> int:
    """Bytes of the files under `path` (links not followed), less the folders in `skip` (resolved paths, already
    counted by the caller); 0 when it is gone."""
    total = 0
    stack = [path]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if not skip or Path(e.path).resolve() not in skip:
                        stack.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    total += e.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def human_bytes(n: float) -> str:
    """Decimal units, as disks are sold and `df -H` prints them.

    >>> human_bytes(0), human_bytes(1536), human_bytes(6.3e9)
    ('0 B', '1.5 KB', '6.3 GB')
    """
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("KB", "MB"):
        n /= 1000
        if n < 1000:
            return f"{n:.1f} {unit}"
    return f"{n / 1000:.1f} GB"


@dataclass(frozen=True)
class Snapshots:
    """One MLM model's kept snapshots: which a pick chose, which it did not, and whether they may go now."""

    folder: Path  # .../mlm/phase-X/snapshots
    run_dir: Path | None  # the run folder holding it (params.json), None outside a run (a shared artifact)
    chosen: tuple[str, ...]  # step-N names some pick chose
    unused: tuple[str, ...]  # step-N names no pick chose
    unused_bytes: int
    why_kept: str | None  # None: the unused ones may be freed now

    def to_dict(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "run_dir": str(self.run_dir) if self.run_dir else None,
                "chosen": list(self.chosen), "unused": list(self.unused), "unused_bytes": self.unused_bytes,
                "freeable": self.why_kept is None, "why_kept": self.why_kept}


def _run_root(folder: Path, stop: Path) -> Path | None:
    for parent in folder.parents:
        if (parent / "params.json").is_file():
            return parent
        if parent == stop or parent == parent.parent:
            return None
    return None


def _why_run_busy(run_dir: Path | None, job_states: dict[Path, str]) -> str | None:
    """None when the run that holds these snapshots has finished; else why they stay. A job's folder goes by its
    status (the runner logs "job finished" after result.json); a CLI run's by its files: run_inline writes
    result.json after its last log line, so a log newer than the result means the run was continued since."""
    if run_dir is None:
        return "a shared model outside any run (another comparison may still pick from it)"
    from core.runner.jobstore import ACTIVE

    status = job_states.get(run_dir.resolve())
    if status in ACTIVE:
        return "its run is queued or running"
    if status is not None:
        return None if status == "done" else f"its job is {status}: a resume would pick from them"
    result, log = run_dir / "result.json", run_dir / "log.txt"
    if not result.is_file():
        return "its run has not finished (no result.json): a resume would pick from them"
    if log.is_file() and log.stat().st_mtime > result.stat().st_mtime:
        return "its run was continued after its result (log newer than result.json)"
    return None


def scan_snapshots(ws: Workspace, roots: list[Path] | None = None, listed: list[Job] | None = None) -> list[Snapshots]:
    """Every kept-snapshot folder under the workspace (and `roots`: run folders elsewhere, e.g. a study's --out);
    `listed`: the workspace's jobs when the caller has them already."""
    from core.runner import jobs

    states = {Path(j.run_dir).resolve(): j.status for j in (jobs.list_jobs(ws) if listed is None else listed)}
    out, seen = [], set()
    for root in [ws.runs_dir, ws.root / "artifacts", *(roots or [])]:
        for folder in sorted(Path(root).glob(SNAPSHOTS_GLOB)) if Path(root).is_dir() else []:
            if folder.resolve() in seen or not folder.is_dir():
                continue
            seen.add(folder.resolve())
            steps = sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith("step-"))
            mlm_dir = folder.parent.parent
            picks = []
            for path in sorted(mlm_dir.glob(f"{Path(PICK_FILE).stem}*{Path(PICK_FILE).suffix}")):
                try:
                    picks.append(Path(str(json.loads(path.read_text("utf-8"))["chosen"]["path"])))
                except (OSError, json.JSONDecodeError, KeyError, TypeError):
                    picks.append(None)
            chosen = {p.name for p in picks if p is not None and p.parent.name == "snapshots"}
            unused = tuple(s for s in steps if s not in chosen)
            run_dir = _run_root(folder, Path(root))
            why = _why_run_busy(run_dir, states)
            if why is None and not picks:
                why = "no pick has been made from them (pick-checkpoint reads them)"
            elif why is None and None in picks:
                why = f"a pick file in {mlm_dir} is unreadable, so which snapshot it chose is unknown"
            out.append(Snapshots(folder, run_dir, tuple(s for s in steps if s in chosen), unused,
                                 sum(folder_bytes(folder / s) for s in unused), why))
    return out


def _top_level(ws: Workspace, listed: list[Job]) -> Iterator[tuple[str, Path]]:
    from core.runner.jobview import describe_job

    yield "corpora", ws.corpora_dir
    artifacts = ws.root / "artifacts"
    for kind in sorted(p for p in artifacts.iterdir() if p.is_dir()) if artifacts.is_dir() else []:
        yield f"artifacts: {kind.name}", kind
    named = {Path(j.run_dir).resolve(): describe_job(j, 60) for j in listed}  # the job's readable name
    for run in sorted(p for p in ws.runs_dir.iterdir() if p.is_dir()) if ws.runs_dir.is_dir() else []:
        yield f"run: {named[run.resolve()]} ({run.name})" if run.resolve() in named else f"run: {run.name}", run


def _within(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def disk_use(ws: Workspace, roots: list[Path] | None = None) -> dict[str, Any]:
    """The workspace's corpora, artifacts per kind and run folders (and `roots`: run folders elsewhere), largest first,
    with the bytes the unused MLM snapshots hold in each and how many of those may be freed now."""
    from core.runner import jobs

    listed = jobs.list_jobs(ws)
    snaps = scan_snapshots(ws, roots, listed)
    scanned = [ws.runs_dir, ws.root / "artifacts"]
    extra = [Path(r) for r in roots or [] if not any(_within(Path(r), f) for f in scanned)]
    rows = []
    for label, path in [*_top_level(ws, listed), *((f"folder: {r}", r) for r in extra)]:
        inside = [s for s in snaps if _within(s.folder, path)]
        rows.append({"what": label, "path": str(path), "bytes": folder_bytes(path), "in_workspace": _within(path, ws.root),
                     "unused_snapshot_bytes": sum(s.unused_bytes for s in inside),
                     "freeable_bytes": sum(s.unused_bytes for s in inside if s.why_kept is None)})
    # the rest of the workspace folder, walking none of the rows' folders a second time
    rest = folder_bytes(ws.root, frozenset(Path(r["path"]).resolve() for r in rows if r["in_workspace"]))
    if rest > 0:  # the job table, lineage index, settings, and anything else kept in the workspace folder
        rows.append({"what": "other files in the workspace", "path": str(ws.root), "bytes": rest, "in_workspace": True,
                     "unused_snapshot_bytes": 0, "freeable_bytes": 0})
    rows.sort(key=lambda r: r["bytes"], reverse=True)
    kept: dict[str, int] = {}  # unused snapshot bytes that stay, per reason (the CLI and the Runs page say why)
    for s in snaps:
        if s.why_kept and s.unused_bytes:
            kept[s.why_kept] = kept.get(s.why_kept, 0) + s.unused_bytes
    return {"workspace": str(ws.root), "rows": rows, "total_bytes": sum(r["bytes"] for r in rows),
            "freeable_bytes": sum(s.unused_bytes for s in snaps if s.why_kept is None),
            "kept": [{"why": why, "bytes": n} for why, n in kept.items()],
            "disk_free_bytes": shutil.disk_usage(ws.root if ws.root.exists() else Path.cwd()).free,
            "snapshots": [s.to_dict() for s in snaps]}


def free_snapshots(ws: Workspace, roots: list[Path] | None = None, dry_run: bool = False,
                   actor: Actor = LOCAL) -> dict[str, Any]:
    """Delete the snapshots no pick chose in finished runs; each folder keeps FREED.json (what went, when, by whom)
    so a later pick there refuses instead of choosing among fewer candidates. Returns what was (or would be) freed."""
    require(actor, "free disk space")
    for root in roots or []:  # with accounts, only folders the app may read and write (never any folder on the server)
        check_server_path(actor, root, ws.root, "free snapshots in")
    freed, kept = [], []
    for s in scan_snapshots(ws, roots):
        if not s.unused:
            continue
        if s.why_kept is not None:
            kept.append({"folder": str(s.folder), "bytes": s.unused_bytes, "why": s.why_kept})
            continue
        if not dry_run:
            marker = s.folder / FREED_FILE
            before = json.loads(marker.read_text("utf-8")) if marker.is_file() else {"freed": []}
            # the marker first: a kill between it and the deletions leaves a folder that refuses new picks, never one
            # that silently picks among fewer snapshots
            atomic_write_json(marker, {"freed": sorted({*before["freed"], *s.unused}), "kept": list(s.chosen),
                                       "time": time.time(), "by": str(actor)})
            for step in s.unused:
                shutil.rmtree(s.folder / step, ignore_errors=True)
        freed.append({"folder": str(s.folder), "steps": list(s.unused), "bytes": s.unused_bytes})
    return {"dry_run": dry_run, "freed_bytes": sum(f["bytes"] for f in freed), "freed": freed, "kept": kept}


def format_disk_use(report: dict[str, Any]) -> str:
    """`runs disk`'s text: a row per place, largest first, then what may be freed and why the rest is kept."""
    lines = [f"{'place':<48} {'size':>9} {'unused snapshots':>17} {'freeable now':>13}"]
    for r in report["rows"]:
        what = r["what"] if len(r["what"]) <= 48 else "..." + r["what"][-45:]
        lines.append(f"{what:<48} {human_bytes(r['bytes']):>9} {human_bytes(r['unused_snapshot_bytes']):>17} "
                     f"{human_bytes(r['freeable_bytes']):>13}")
    lines.append(f"total {human_bytes(report['total_bytes'])}; free on the disk {human_bytes(report['disk_free_bytes'])}")
    if report["freeable_bytes"]:
        lines.append(f"{human_bytes(report['freeable_bytes'])} of MLM snapshots no checkpoint pick chose, in finished runs: "
                     "`python -m core runs free-snapshots` deletes them (the chosen ones, the models and results stay)")
    lines += [f"kept {human_bytes(k['bytes'])}: {k['why']}" for k in report["kept"]]
    return "\n".join(lines)


def format_freed(result: dict[str, Any]) -> str:
    verb = "would free" if result["dry_run"] else "freed"
    lines = [f"{verb} {human_bytes(result['freed_bytes'])} in {len(result['freed'])} snapshot folders"]
    lines += [f"  {f['folder']}: {', '.join(f['steps'])} ({human_bytes(f['bytes'])})" for f in result["freed"]]
    lines += [f"kept {human_bytes(k['bytes'])} in {k['folder']}: {k['why']}" for k in result["kept"]]
    return "\n".join(lines)
