"""Browser uploads, kept as a file in the workspace until a background import reads them.

A Streamlit upload lives in the page's memory: read in the page, a large one stopped when the tab closed. Staged
under `uploads/`, the file is read by the same "import" job as a server path (it survives the tab, shows progress on
every page) and is removed once the import ends, with a corpus or with a user error. A job that was stopped keeps
its copy, so Resume finds it; copies nobody resumed for a week are swept at the next upload.
"""

from __future__ import annotations

import re
import shutil
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from core.access import LOCAL, AccessDenied, Actor, Role, require
from core.errors import CorpusError, UserError

if TYPE_CHECKING:
    from core.data.workspace import CorpusInfo, CorpusRole, Workspace
    from core.progress import Progress

UPLOADS = "uploads"
OWNER = ".owner"  # beside the copy: who uploaded it (check_upload_owner)
KEEP_SECONDS = 7 * 24 * 3600  # a stopped import's copy waits this long for Resume


def uploads_dir(ws: Workspace) -> Path:
    return ws.root / UPLOADS


def _safe_filename(filename: str) -> str:
    """The browser's file name as one path part (its suffix tells the format, its stem the corpus's default name):
    no folders, only what a corpus name may hold ("my music.conll" -> "my_music.conll")."""
    base = Path(filename.replace("\\", "/")).name.strip()
    safe = re.sub(r"[^\w.-]", "_", base).lstrip(".")
    return safe or "upload.txt"


def sweep_old_uploads(ws: Workspace, now: float | None = None) -> int:
    """Copies older than KEEP_SECONDS removed (an import stopped and never resumed); how many."""
    now = time.time() if now is None else now
    removed = 0
    for folder in uploads_dir(ws).glob("*"):
        if folder.is_dir() and now - folder.stat().st_mtime > KEEP_SECONDS:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def stage_upload(ws: Workspace, filename: str, data: bytes, actor: Actor = LOCAL) -> Path:
    """The uploaded bytes as a file under uploads/ (a folder of its own, so two uploads of one name never meet)."""
    require(actor, "import a corpus")
    if not data:
        raise UserError(f"{filename}: the uploaded file is empty")
    sweep_old_uploads(ws)
    folder = uploads_dir(ws) / uuid.uuid4().hex
    folder.mkdir(parents=True)
    (folder / OWNER).write_text(actor.name, "utf-8")  # a dot name: no browser file name becomes it (_safe_filename)
    path = folder / _safe_filename(filename)
    path.write_bytes(data)
    return path


def check_upload_owner(ws: Workspace, actor: Actor, path: str | Path) -> None:
    """An import of an upload's copy (the job's `upload` set) names the actor's own copy: another user's would be read
    into a corpus and removed, and their import then fail. The CLI and the single-user app (LOCAL) and admins pass."""
    staged = existing_copy(ws, path, Path(path).name)  # gone: said as such, not as someone else's
    if actor == LOCAL or actor.role == Role.ADMIN:
        return
    try:
        owner = (staged.parent / OWNER).read_text("utf-8").strip()
    except OSError:
        owner = ""
    if owner != actor.name:
        raise AccessDenied(f"{actor} may not import {staged.name}: it is another user's upload; upload the file yourself")


def discard_upload(ws: Workspace, path: str | Path) -> None:
    """Remove an upload's copy whose import was refused at submit (it would wait a week for the sweep)."""
    try:
        shutil.rmtree(staged_copy(ws, path).parent, ignore_errors=True)
    except UserError:
        pass


def staged_copy(ws: Workspace, path: str | Path) -> Path:
    """`path` when it is an upload's copy under uploads/, else UserError: an import that removes its file afterwards
    must never be pointed at another workspace file."""
    resolved = Path(path).expanduser().resolve()
    base = uploads_dir(ws).resolve()
    if base not in resolved.parents or resolved.parent.parent != base:
        raise UserError(f"{path} is no uploaded file's copy (those are under {base}); name it as a path instead")
    return resolved


def existing_copy(ws: Workspace, path: str | Path, filename: str) -> Path:
    """`staged_copy` that is still there, else a UserError saying the upload's copy is gone."""
    staged = staged_copy(ws, path)
    if not staged.exists():
        raise UserError(f"the copy of the upload {filename!r} is gone (imported already, or swept after a week): "
                        "upload the file again")
    return staged


def import_staged(ws: Workspace, path: str | Path, filename: str, role: CorpusRole | str | None = None,
                  name: str | None = None, fmt: str = "auto", overwrite: bool = False, progress: Progress | None = None,
                  actor: Actor = LOCAL) -> CorpusInfo:
    """Import an upload's copy; errors and the corpus's source name the browser's file, not the copy."""
    require(actor, "import a corpus")
    staged = existing_copy(ws, path, filename)
    try:
        # the server-path check is not for this file: it is the workspace's own copy (staged_copy checked where)
        info = ws._import_file(staged, role, name, fmt, overwrite, progress,
                              f"upload: {filename}", actor)
    except CorpusError as exc:
        shutil.rmtree(staged.parent, ignore_errors=True)
        raise CorpusError(filename, exc.line, exc.message) from None
    except UserError:
        shutil.rmtree(staged.parent, ignore_errors=True)
        raise
    shutil.rmtree(staged.parent, ignore_errors=True)
    return info
