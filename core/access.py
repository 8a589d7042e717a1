"""Who may change what: roles, the acting user, and the one check every state-changing core function makes.

The check lives here, in core, where state changes, so a page that forgets to hide a button, a crafted
request or a script calling core directly is refused all the same. The CLI and the single-user app on
loopback act as `LOCAL`, the machine's owner (an admin): whoever can run `python -m core` on the server
already owns its files.

>>> require(Actor("ann", Role.ANNOTATOR), "review").name  # allowed: the actor as it is now
'ann'
>>> require(Actor("ann", Role.ANNOTATOR), "submit a job")
Traceback (most recent call last):
...
core.access.AccessDenied: ann (annotator) may not submit a job: that needs the admin or researcher role
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from core.errors import UserError


class Role(str, Enum):
    ADMIN = "admin"  # users and workspace settings, and everything a researcher does
    RESEARCHER = "researcher"  # every page of one workspace: corpora, selections, jobs, tasks, adjudication
    ANNOTATOR = "annotator"  # their own review queue, nothing else

    @classmethod
    def parse(cls, text: str | Role) -> Role:
        try:
            return cls(str(text.value if isinstance(text, Role) else text).strip().lower())
        except ValueError:
            raise UserError(f"unknown role {text!r}: expected one of {', '.join(r.value for r in cls)}") from None


@dataclass(frozen=True)
class Actor:
    """The acting user of a core call (from the sign-in, never from a typed name)."""

    name: str
    role: Role
    # how to read this user as they are now (a signed-in session: core.team.users.session_actor): `require` judges a
    # write from a tab opened before the user was disabled, demoted or signed out by what holds at the write, not by
    # the role the tab's last run saw (a button's callback runs before the app checks the session again)
    recheck: Callable[[], Actor] | None = field(default=None, compare=False, hash=False, repr=False)
    # the machine's owner (the CLI, the single-user app): compared, so an account named "local" is never LOCAL
    local: bool = field(default=False, repr=False)

    def current(self) -> Actor:
        """This user as they are now (read again where the actor can be; a session that ended raises)."""
        return self.recheck() if self.recheck is not None else self

    def __str__(self) -> str:
        return f"{self.name} ({self.role.value})"


LOCAL = Actor("local", Role.ADMIN, local=True)  # CLI and the single-user app on loopback

_STAFF = frozenset({Role.ADMIN, Role.RESEARCHER})
# action -> roles allowed. An action is the phrase the refusal prints ("may not <action>").
PERMISSIONS: dict[str, frozenset[Role]] = {
    "review": frozenset(Role),  # an item of a task assigned to the actor (tasks check the assignment)
    "review in Inspect": _STAFF,
    "submit a job": _STAFF,
    "cancel, resume or delete a job": _STAFF,
    "free disk space": _STAFF,  # unused MLM snapshots of finished runs (core.experiments.disk)
    "import a corpus": _STAFF,
    "change corpora or roles": _STAFF,
    "manage review tasks": _STAFF,
    "adjudicate": _STAFF,
    "read other annotators' work": _STAFF,
    "change workspace settings": frozenset({Role.ADMIN}),
    "manage users": frozenset({Role.ADMIN}),
}


class AccessDenied(UserError):
    """A signed-in user asked for something their role does not allow."""


def require(actor: Actor, action: str) -> Actor:
    """Raise AccessDenied unless `actor`'s role may do `action` (a key of PERMISSIONS), as the user is now where the
    actor can be read again (a session that ended raises its own UserError); returns the actor as it is now, for the
    checks that follow (a role read from the tab's old actor after require() let a demoted admin pass them)."""
    actor = actor.current()
    allowed = PERMISSIONS[action]
    if actor.role not in allowed:
        names = " or ".join(r.value for r in Role if r in allowed)
        raise AccessDenied(f"{actor} may not {action}: that needs the {names} role")
    return actor


# --------------------------------------------------------------------------- server paths

DATA_ROOTS_ENV = "NERSELECT_DATA_ROOTS"  # folders (os.pathsep-separated) whose files signed-in users may name
CHECKOUT = Path(__file__).resolve().parents[1]  # the app's own code and settings (.streamlit/secrets.toml)
_SECRET_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal", ".db")
_SECRET_NAMES = frozenset({"secrets.toml", ".env", ".netrc", ".git-credentials", "id_rsa", "id_ed25519"})
PATH_FIELDS = frozenset({"path", "out", "snapshots", "final"})  # job params that are always server paths


def data_roots() -> list[Path]:
    """The folders an admin opened to signed-in users (NERSELECT_DATA_ROOTS), resolved."""
    return [Path(r).expanduser().resolve() for r in os.environ.get(DATA_ROOTS_ENV, "").split(os.pathsep) if r.strip()]


def server_roots_text() -> str:
    """Where a signed-in user may name server files, in words (pages and refusals)."""
    roots = ", ".join(str(r) for r in data_roots()) or f"no data root (an admin sets {DATA_ROOTS_ENV})"
    return f"{roots} or the workspace"


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _secret(path: Path) -> bool:
    """Account stores, app secrets and keys: never readable through the app, whatever root holds them."""
    return (path.name in _SECRET_NAMES or path.name.endswith(_SECRET_SUFFIXES)
            or any(part in (".streamlit", ".ssh", ".git") for part in path.parts))


def check_server_path(actor: Actor, path: str | Path, workspace_root: str | Path, what: str = "use") -> Path:
    """`path` resolved (symbolic links followed), or AccessDenied when `actor` may not name it.

    The CLI and the single-user app (LOCAL) name any path: whoever runs them owns the machine. A signed-in user is
    a guest of the server: only paths under a data root (NERSELECT_DATA_ROOTS) or the workspace, never a database,
    the app's secrets or its checkout (the workspace inside it aside). Uploads do not come here.

    >>> import tempfile; ws = Path(tempfile.mkdtemp())
    >>> check_server_path(Actor("rita", Role.RESEARCHER), "/etc/passwd", ws, "import")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.access.AccessDenied: rita (researcher) may not import /etc/passwd: with accounts, server paths must be under ...
    """
    try:
        given = Path(path).expanduser()
    except RuntimeError:  # '~name' of no user on this machine: no path it could mean
        raise AccessDenied(f"{actor} may not {what} {path}: '~' names no home folder here; give a server path in full") \
            from None
    if actor == LOCAL:
        return (given if given.is_absolute() else Path.cwd() / given).resolve()
    if not given.is_absolute():  # relative to what? the app's folder here, the checkout in a job: never guessed
        raise AccessDenied(f"{actor} may not {what} {path}: with accounts, give a server path in full (from /), under "
                           f"{server_roots_text()}")
    resolved = given.resolve()
    ws = Path(workspace_root).expanduser().resolve()
    if _secret(resolved):
        raise AccessDenied(f"{actor} may not {what} {path}: account stores, secrets and keys are never read through the app")
    allowed = _under(resolved, ws) or (not _under(resolved, CHECKOUT) and any(_under(resolved, r) for r in data_roots()))
    if not allowed:
        raise AccessDenied(f"{actor} may not {what} {path}: with accounts, server paths must be under "
                           f"{server_roots_text()}; upload the file instead")
    return resolved


def _looks_like_path(key: str, value: str, workspace_root: Path, names: frozenset[str]) -> bool:
    """A job setting that names a file or folder on the server, not a corpus name, a role or a Hugging Face id
    ("org/model" that is no local folder is fetched from the hub, nothing on the server is read). A bare relative
    name counts when a file of that name exists where a job or the app would open it (a job runs in the checkout:
    `README.md` read the checkout's own file), unless it is one of the workspace's corpus names or roles."""
    if key in PATH_FIELDS or value.startswith(("/", "~", "./", "../")) or os.path.isabs(value):
        return True
    if value in names:
        return False
    return any((base / value).exists() for base in (CHECKOUT, Path.cwd(), workspace_root))


def check_ray_address(actor: Actor, ray: str | None, workspace_address: str | None) -> None:
    """A job's Ray cluster: with accounts, only the address an admin set for the workspace, or a cluster started on
    this machine ("local", "local:N"); another address would ship the workspace's code and corpora to any machine
    (the address is an admin's setting, and a job's own `ray` went around it)."""
    text = str(ray or "").strip()
    if actor == LOCAL or actor.role == Role.ADMIN or not text or text == (workspace_address or "").strip():
        return
    if text == "local" or (text.startswith("local:") and text[6:].isdigit()):
        return
    raise AccessDenied(f"{actor} may not send a job to the Ray cluster {text!r}: with accounts, only the workspace's "
                       f"own ({workspace_address or 'none set'}) or 'local'; an admin sets the address")


OUTPUT_FIELDS = frozenset({"out"})  # job params a job writes to
# job params that never name a server file: the browser's file name of an upload (its copy is `path`), however it
# looks ("README.md", "~notes.txt")
TEXT_FIELDS = frozenset({"upload"})
# Where a signed-in user's job may write: its own run folders, and the predictions cache the Predict buttons fill
# (core.review.predictions.PRED_KIND, which a test holds to this)
OUTPUT_FOLDERS = ("runs", "artifacts/predictions")


def check_param_paths(actor: Actor, params: Mapping[str, Any], workspace_root: str | Path,
                      names: frozenset[str] = frozenset()) -> None:
    """Every server path among a job's settings (nested ones too) checked with check_server_path, before it runs;
    `names` are the workspace's corpus names and roles (never paths). With accounts, an output goes only under the
    workspace's runs folder: a job's `out` replaced files it named, the workspace's own settings and corpora too."""
    if actor == LOCAL:
        return
    root = Path(workspace_root).expanduser().resolve()

    def walk(key: str, value: Any) -> None:
        if key in TEXT_FIELDS:
            return
        # judged as the job reads it, stripped ('<space>/etc/x' was no path to the check and '/etc/x' to the job)
        text = value.strip() if isinstance(value, str) else ""
        if isinstance(value, str) and value and not text and key in PATH_FIELDS:  # '   ': a folder named so in the checkout
            raise AccessDenied(f"{actor} may not use {key} = {value!r}: a path of spaces only")
        if text and _looks_like_path(key, text, root, names):
            if text != value:
                raise AccessDenied(f"{actor} may not use {key} = {value!r}: a path with spaces or line breaks around it")
            resolved = check_server_path(actor, value, root, f"use {key} =")
            if key in OUTPUT_FIELDS and not any(_under(resolved, root / f) and resolved != root / f
                                                for f in OUTPUT_FOLDERS):
                raise AccessDenied(f"{actor} may not write {key} = {value}: with accounts, outputs go under "
                                   f"{root / 'runs'} (leave {key} empty for the job's own folder)")
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(str(k), v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(key, v)

    for k, v in params.items():
        walk(k, v)
