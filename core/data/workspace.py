"""The on-disk workspace: corpora with roles, content-hashed artifacts, runs.

Layout (all under one root, default ./workspace, or $NERSELECT_WORKSPACE)::

    workspace.json              roles: {"tc": name, "dc": name, ...}
    corpora/NAME.parquet        tokens, tags?, carried fields
    corpora/NAME.json           CorpusInfo (role, source, hash, counts)
    artifacts/KIND/KEY/...      embeddings, selections, LMs, projections, ...
    runs/ID/                    job run folders (metrics.jsonl, log.txt, checkpoints)
    jobs.sqlite                 the job table

Every write is atomic (temp file in the same folder + os.replace), so a reader
sees either the old or the new file, never half of one; a corpus name that
already holds different content is never silently overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from core.access import LOCAL, Actor, check_server_path, require
from core.data.atomic import (
    atomic_write_json,
    split_fields,
    temp_path_for,
)
from core.data.corpus import Corpus, read_corpus, write_corpus
from core.data.parquet_import import write_parquet
from core.data.tags import TagScheme
from core.data.uploads import import_staged, stage_upload
from core.environment import variable
from core.errors import CorpusError, UserError
from core.progress import Progress

ENV_VAR = "NERSELECT_WORKSPACE"
DEFAULT_ROOT = "workspace"


def default_root(fallback: str | Path = DEFAULT_ROOT) -> str | Path:
    """The workspace folder when none is named: $NERSELECT_WORKSPACE, else `fallback` (./workspace; the app passes
    the one beside its checkout)."""
    return variable(ENV_VAR).text() or fallback


@dataclass
class Settings:
    """A workspace's settings (workspace.json), read and written here only."""

    roles: dict[str, str] = field(default_factory=dict)  # role value -> corpus name
    target_domain: str | None = None  # the domain a selection's precision and an experiment's name refer to
    ray_address: str | None = None  # a Ray cluster for embedding and scoring ("local" starts one)
    demo_seed: int | None = None
    demo: dict[str, Any] | None = None  # the demo generator's stamp and corpus hashes, when the demo was written
    other: dict[str, Any] = field(default_factory=dict)  # a newer version's settings, kept as they were

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)} - {"other"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        known, other = split_fields(cls, data, own=("other",))
        known["roles"] = dict(known.get("roles") or {})
        return cls(**known, other=other)

    def to_dict(self) -> dict[str, Any]:
        return {**self.other, **{name: getattr(self, name) for name in sorted(self.names())}}


class CorpusRole(str, Enum):
    TC = "tc"  # task-level corpus, unlabeled, small
    DC = "dc"  # domain-level corpus, unlabeled, large
    LC = "lc"  # labeled training corpus
    DEV = "dev"
    TEST = "test"

    def __str__(self) -> str:
        return self.value

    @property
    def label(self) -> str:
        return ROLE_LABELS[self]

    @property
    def needs_labels(self) -> bool:
        return self in (CorpusRole.LC, CorpusRole.DEV, CorpusRole.TEST)


ROLE_LABELS = {
    CorpusRole.TC: "TC: task-level corpus (unlabeled)",
    CorpusRole.DC: "DC: domain-level corpus (unlabeled, large)",
    CorpusRole.LC: "LC: labeled training corpus",
    CorpusRole.DEV: "DEV: labeled development split",
    CorpusRole.TEST: "TEST: labeled test split",
}


# --------------------------------------------------------------------------- atomic writes & hashing


def content_hash(*parts: Any, length: int = 16) -> str:
    """Stable key for artifacts: JSON of the parts (sorted keys), sha256, hex prefix."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, bytes):
            h.update(part)
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:length]


def file_hash(path: str | Path, length: int = 16) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:length]


# --------------------------------------------------------------------------- corpus metadata


@dataclass
class CorpusInfo:
    name: str
    role: str | None
    source: str
    hash: str
    sentences: int
    tokens: int
    labeled: bool
    tag_scheme: str
    fields: list[str] = field(default_factory=list)
    entity_types: list[str] = field(default_factory=list)
    created: float = 0.0
    warnings: list[str] = field(default_factory=list)  # what looks wrong in the data, said at import (an absurd length)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CorpusInfo:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


def _read_info(path: Path) -> CorpusInfo:
    """A corpus's stored description; one damaged by hand or by a full disk is a UserError naming the file."""
    try:
        data = json.loads(path.read_text("utf-8"))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        return CorpusInfo.from_dict(data)
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
        raise UserError(f"{path}: the corpus description is damaged ({exc}); import the corpus {path.stem!r} again "
                        f"with overwrite (CLI: import FILE --name {path.stem} --overwrite), or delete it") from None


MAX_SENTENCE_TOKENS = 1_000  # far past any NER model's input (they read 256 sub-tokens): a sentence this long is a format slip


def length_warnings(path: str | Path, tokens: int, sentence: int) -> list[str]:
    """A warning when a 'sentence' is absurdly long: usually a text file that is not one sentence per line, or
    CoNLL sentences missing the blank line between them. Imported anyway (it may be meant), but never silently."""
    if tokens <= MAX_SENTENCE_TOKENS:
        return []
    return [f"{path}: sentence {sentence:,} has {tokens:,} tokens (more than {MAX_SENTENCE_TOKENS:,}); models read at most "
            "256 sub-tokens of a sentence and ignore the rest. Is the file one sentence per line (CoNLL: a blank line "
            "between sentences)?"]


def valid_name(name: str) -> str:
    name = name.strip()
    if not name or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
        raise UserError(f"invalid corpus name {name!r}: use letters, digits, '-', '_' and '.'")
    if len(name) > MAX_NAME:  # its files add '.parquet' and a temporary suffix, and most file systems stop at 255 bytes
        raise UserError(f"corpus name of {len(name)} characters ({name[:40]}...): give one of at most {MAX_NAME}")
    return name


MAX_NAME = 120


def is_valid_name(name: str) -> bool:
    """Whether `name` could name a corpus (a reference that cannot, e.g. '../x', names no workspace file)."""
    try:
        return valid_name(name) == name
    except UserError:
        return False


@dataclass(frozen=True)
class CorpusRef:
    """One corpus as a command, page or job named it, resolved: what was written (`ref`), how it
    matched (`kind`: "name", "role" or "path"), the corpus name (a workspace name, or the file's
    stem), the file it lives in and its content hash (runs record the hash of every corpus read)."""

    ref: str
    kind: str
    name: str
    path: Path
    hash: str
    role: str | None = None
    fmt: str = "auto"

    def load(self) -> Corpus:
        if self.kind == "path":
            return read_corpus(self.path, self.fmt)
        return Corpus.from_arrow(pq.read_table(self.path), name=self.name)

    def to_dict(self) -> dict[str, str]:
        """The {name, hash} pair lineage records."""
        return {"name": self.name, "hash": self.hash}

    @property
    def param(self) -> str:
        """How a job's params store it: the workspace name (a role is pinned to the corpus holding
        it at submit time), or the absolute path of a file (jobs run in another folder)."""
        return str(self.path) if self.kind == "path" else self.name


def resolve_corpus_ref(ref: str | Path | CorpusRef, workspace: Workspace | str | Path | None = None,
                       fmt: str = "auto") -> CorpusRef:
    """The one resolver of corpus references: every CLI command, page and job goes through it.

    Precedence (first match wins):
      1. a workspace corpus NAME (corpora/NAME.parquet),
      2. a ROLE (tc, dc, lc, dev, test; any case) held by a workspace corpus,
      3. a FILE path (read with format detection, or `fmt`).
    Names win over files so that `lc` in a folder that happens to hold a file called `lc` still
    means the workspace's LC. `workspace` may be a Workspace, a folder, or None ($NERSELECT_WORKSPACE
    or ./workspace); a folder that is not a workspace yet is not created just to look a name up.
    Nothing matching raises a UserError listing what was tried.
    """
    if isinstance(ref, CorpusRef):
        return ref
    text = str(ref).strip()
    if not text:
        raise UserError("empty corpus reference: give a workspace corpus name, a role (tc, dc, lc, dev, test) or a file path")
    ws: Workspace | None
    if isinstance(workspace, Workspace):
        ws = workspace
    else:
        root = Path(workspace or default_root()).resolve()
        ws = Workspace(root) if (root / "corpora").is_dir() else None
    tried = []
    if ws is not None:
        if ws.has_corpus(text):
            info = ws.corpus_info(text)
            return CorpusRef(text, "name", text, ws.corpus_path(text), info.hash, info.role)
        tried.append(f"corpus name {text!r} in workspace {ws.root}: no such corpus")
        try:
            role: CorpusRole | None = CorpusRole(text.lower())
        except ValueError:
            role = None
        if role is not None:
            holder = ws.corpus_for_role(role)
            if holder:
                info = ws.corpus_info(holder)
                return CorpusRef(text, "role", holder, ws.corpus_path(holder), info.hash, role.value)
            tried.append(f"role {role.value.upper()}: no corpus holds it")
        else:
            tried.append(f"role: {text!r} is not one of {', '.join(r.value for r in CorpusRole)}")
    else:
        tried.append("workspace names and roles: no workspace at "
                     f"{Path(workspace or default_root()).resolve()}")
    path = Path(text).expanduser()
    if path.is_file():
        return CorpusRef(text, "path", path.stem, path.resolve(), file_hash(path), None, fmt)
    tried.append(f"file {path.resolve()}: {'is a folder' if path.is_dir() else 'does not exist'}")
    if ws is not None and text.lower() in {r.value for r in CorpusRole}:  # a role no corpus holds: say that first
        raise UserError(f"no corpus holds the role {text.upper()}: give one that role (Corpora page, or python -m core "
                        f"corpora set-role NAME {text.lower()}) or name a corpus")
    raise UserError(f"no corpus {text!r}; tried " + "; ".join(tried))


def folder_state(path: str | Path) -> str:
    """'workspace' (has corpora/ or workspace.json), 'missing', or 'other' (a file, or a folder that is not one):
    the app asks before turning a typed path into a workspace, so a typo creates nothing.

    >>> folder_state("/nonexistent/typo")
    'missing'
    """
    p = Path(path).expanduser()
    if not p.exists():
        return "missing"
    if p.is_dir() and ((p / "corpora").is_dir() or (p / "workspace.json").exists()):
        return "workspace"
    return "other"


class Workspace:
    """A workspace folder. Cheap to construct; every method reads the disk afresh so
    several processes (the app, the CLI, job subprocesses) can share it."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root or default_root()).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise UserError(f"workspace {self.root} is a file, not a folder: give a folder (new or existing)")
        try:
            for sub in ("corpora", "artifacts", "runs"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a parent that is a file, no permission, read-only disk, name too long
            reason = exc.strerror or type(exc).__name__
            where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(self.root) else ""
            raise UserError(f"cannot use workspace {self.root}: {reason}{where}") from None
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise UserError(f"cannot use workspace {self.root}: not writable by this user")

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # ---- settings (roles, target domain)
    @property
    def settings_path(self) -> Path:
        return self.root / "workspace.json"

    def settings(self) -> Settings:
        if not self.settings_path.exists():
            return Settings()
        try:
            data = json.loads(self.settings_path.read_text("utf-8"))
        except json.JSONDecodeError as exc:
            raise UserError(f"{self.settings_path}: not readable JSON (line {exc.lineno}: {exc.msg}); fix or remove it") from None
        if not isinstance(data, dict):
            raise UserError(f"{self.settings_path}: expected a JSON object of settings")
        roles = data.get("roles") or {}
        if not isinstance(roles, dict) or not all(isinstance(v, str) for v in roles.values()):
            raise UserError(f"{self.settings_path}: 'roles' must map a role (tc, dc, lc, dev, test) to a corpus name; "
                            "fix it, or set the roles again on the Corpora page")
        return Settings.from_dict(data)

    def update_settings(self, actor: Actor = LOCAL, **changes: Any) -> Settings:
        """Change named settings (an unknown name is refused: a typo must not be stored and silently ignored)."""
        require(actor, "change workspace settings")
        unknown = sorted(set(changes) - Settings.names())
        if unknown:
            raise UserError(f"unknown workspace setting(s) {', '.join(map(repr, unknown))}: expected some of "
                            f"{', '.join(sorted(Settings.names()))}")
        settings = replace(self.settings(), **changes)
        atomic_write_json(self.settings_path, settings.to_dict())
        return settings

    def roles(self) -> dict[CorpusRole, str]:
        return {CorpusRole(k): v for k, v in self.settings().roles.items() if (self.corpora_dir / f"{v}.parquet").exists()}

    def corpus_for_role(self, role: CorpusRole | str) -> str | None:
        return self.roles().get(CorpusRole(role))

    def set_role(self, name: str, role: CorpusRole | str | None, actor: Actor = LOCAL) -> list[str]:
        """Give `name` the role (None: none); a corpus holds one role and a role one corpus. Returns what else
        changed, for the user to read: the role it held before, the corpus that held this role, and a role corpus
        with the very same sentences (LC as TEST would score a model on its training data)."""
        require(actor, "change corpora or roles")
        info = self.corpus_info(name)
        settings = self.settings()
        roles = {k: v for k, v in settings.roles.items() if v != name}
        role = CorpusRole(role) if role is not None else None
        notes = [f"{name!r} is no longer the {old.upper()}: the workspace has no {old.upper()} now"
                 for old, v in settings.roles.items() if v == name and old != (role.value if role else None)]
        if role is not None:
            if role.needs_labels and not info.labeled:
                raise UserError(f"corpus {name!r} is unlabeled; role {role.value.upper()} needs a labeled corpus")
            previous = roles.get(role.value)
            if previous and previous != name and self.has_corpus(previous):
                # a role belongs to one corpus at a time: the previous holder loses it in its info too
                old = self.corpus_info(previous)
                old.role = None
                atomic_write_json(self._info_path(previous), asdict(old))
                notes.append(f"the {role.value.upper()} was {previous!r} until now")
            roles[role.value] = name
            notes += [f"{name!r} ({role.value.upper()}) holds the same sentences as {other!r}, the {r.upper()}"
                      for r, other in roles.items() if r != role.value and other != name and self.has_corpus(other)
                      and self.corpus_info(other).hash == info.hash]
        atomic_write_json(self.settings_path, replace(settings, roles=roles).to_dict())
        info.role = role.value if role is not None else None
        atomic_write_json(self._info_path(name), asdict(info))
        return notes

    # ---- corpora
    @property
    def corpora_dir(self) -> Path:
        return self.root / "corpora"

    def _info_path(self, name: str) -> Path:
        return self.corpora_dir / f"{name}.json"

    def _described(self, name: str) -> bool:
        """Whether `name`'s description is there and readable: a damaged one (by hand, a full disk) is as good as
        lost, so importing the file again with overwrite, or deleting the corpus, repairs it as for a lost one."""
        try:
            return self._info_path(name).exists() and _read_info(self._info_path(name)) is not None
        except UserError:
            return False

    def corpus_path(self, name: str) -> Path:
        path = self.corpora_dir / f"{name}.parquet"
        if not is_valid_name(name) or not path.exists():  # '../x' would reach outside corpora/
            raise UserError(f"no corpus named {name!r} in workspace {self.root}")
        if not self._info_path(name).exists():
            raise UserError(f"corpus {name!r} has lost its description ({self._info_path(name).name}): import its "
                            "file again with overwrite")
        return path

    def corpus_words(self) -> frozenset[str]:
        """The corpus names and roles a setting may give: words, never server paths (core.access.check_param_paths)."""
        return frozenset(i.name for i in self.list_corpora()) | {r.value for r in CorpusRole}

    def has_corpus(self, name: str) -> bool:
        return is_valid_name(name) and (self.corpora_dir / f"{name}.parquet").exists()

    def list_corpora(self) -> list[CorpusInfo]:
        infos = []
        for p in sorted(self.corpora_dir.glob("*.json")):
            if (self.corpora_dir / f"{p.stem}.parquet").exists():
                infos.append(_read_info(p))
        return infos

    def corpus_info(self, name: str) -> CorpusInfo:
        self.corpus_path(name)
        return _read_info(self._info_path(name))

    def load_corpus(self, name: str) -> Corpus:
        return Corpus.from_arrow(pq.read_table(self.corpus_path(name)), name=name)

    def iter_corpus(self, name: str, chunk_size: int = 50_000) -> Iterator[Corpus]:
        pf = pq.ParquetFile(self.corpus_path(name))
        for batch in pf.iter_batches(batch_size=chunk_size):
            yield Corpus.from_arrow(pa.Table.from_batches([batch]), name=name)

    def resolve_corpus(self, ref: str | Path) -> Corpus:
        """The corpus `ref` names (see `resolve_corpus_ref` for the precedence), loaded."""
        return resolve_corpus_ref(ref, self).load()

    def ref(self, ref: str | Path) -> CorpusRef:
        """`resolve_corpus_ref(ref, self)`: name, role or path -> CorpusRef with its content hash."""
        return resolve_corpus_ref(ref, self)

    def import_corpus(self, path: str | Path, role: CorpusRole | str | None = None, name: str | None = None,
                      fmt: str = "auto", overwrite: bool = False, progress: Progress | None = None,
                      source: str | None = None, actor: Actor = LOCAL) -> CorpusInfo:
        """Stream a file into corpora/NAME.parquet, validating every chunk first.

        Memory stays at one chunk plus Parquet's row-group buffer, so a 1 GB DC costs
        far less than 2x its size. The parquet is written to a temp file and only moved
        into place once the whole file parsed, so a bad line changes nothing stored. A signed-in `actor` names only
        files under a data root or the workspace (core.access.check_server_path); uploads come through
        `import_upload` or the job's `upload` setting (core.data.uploads), which read the workspace's own copy.
        """
        require(actor, "import a corpus")
        check_server_path(actor, path, self.root, "import")
        return self._import_file(path, role, name, fmt, overwrite, progress, source, actor)

    def _import_file(self, path: str | Path, role: CorpusRole | str | None, name: str | None, fmt: str, overwrite: bool,
                     progress: Progress | None, source: str | None, actor: Actor) -> CorpusInfo:
        path = Path(path)
        try:
            name = valid_name(name if name and name.strip() else path.stem)
        except UserError as exc:
            if name and name.strip():
                raise
            raise UserError(f"{exc}; the name comes from the file name ({path.name}): give one "
                            "(CLI: --name; Corpora page: 'Name in the workspace')") from None
        role = CorpusRole(role) if role else None
        target = self.corpora_dir / f"{name}.parquet"
        size = max(path.stat().st_size, 1) if path.exists() else 1
        tmp = temp_path_for(target)
        try:
            written = write_parquet(path, fmt, tmp, size, progress)
            n_sent, n_tok, longest, labeled, fields, types, schemes = (
                written.sentences, written.tokens, written.longest, written.labeled, written.fields, written.types,
                written.schemes)
            if role is not None and role.needs_labels and not labeled:
                raise CorpusError(path, None, f"role {role.value.upper()} needs a labeled corpus "
                                              "(CoNLL, or JSONL/CSV/Parquet with tags); this file has no tags")
            new_hash = file_hash(tmp)
            if target.exists() and not self._described(name) and overwrite:
                # data that lost its description (a first import stopped between the two) or holds a damaged one:
                # replaced as asked, keeping a role the settings still give it
                held_roles = [CorpusRole(r) for r, v in self.settings().roles.items() if v == name]
                if held_roles and role is None and (labeled or not held_roles[0].needs_labels):
                    role = held_roles[0]
            elif target.exists():
                old = self.corpus_info(name)
                if old.hash == new_hash:
                    tmp.unlink(missing_ok=True)
                    notes = self.set_role(name, role, actor=actor) if role is not None else []
                    same = self.corpus_info(name)
                    return replace(same, warnings=[*same.warnings, *notes])
                if not overwrite:
                    raise UserError(f"a different corpus named {name!r} already exists; choose another name, or replace it "
                                    "(CLI: --overwrite; Corpora page: 'Replace a different corpus of the same name')")
                held = CorpusRole(old.role) if old.role else None  # the new file keeps the role the old one held
                if held is not None and role is None:
                    if held.needs_labels and not labeled:
                        raise CorpusError(path, None, f"{name!r} is the workspace's {held.value.upper()}, which needs a "
                                                      "labeled corpus, and this file has no tags: import it under "
                                                      "another name, or give the role to another corpus first")
                    role = held
            scheme = _combined_scheme(schemes) if labeled else TagScheme.NONE
            info = CorpusInfo(name=name, role=None, source=source or str(path), hash=new_hash, sentences=n_sent,
                              tokens=n_tok, labeled=bool(labeled), tag_scheme=scheme.value, fields=fields,
                              entity_types=sorted(t for t in types if t), created=time.time(),
                              warnings=length_warnings(source or path, *longest))
            # the description first: a first import that stops between the two leaves a description with no data
            # (listed nowhere, imported again as new), never data with no description
            atomic_write_json(self._info_path(name), asdict(info))
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        notes = self.set_role(name, role, actor=actor) if role is not None else []
        if name.lower() in {r.value for r in CorpusRole} and (role is None or role.value != name.lower()):
            notes.append(f"a corpus named {name!r} is what {name!r} means in every corpus argument (names come before "
                         f"roles), not the workspace's {name.upper()}: give it another name to keep the two apart")
        if progress is not None:
            progress(1.0, f"imported {n_sent:,} sentences as {name!r}")
        done = self.corpus_info(name)
        return replace(done, warnings=[*done.warnings, *notes])

    def import_upload(self, filename: str, data: bytes, role: CorpusRole | str | None = None, name: str | None = None,
                      fmt: str = "auto", overwrite: bool = False, progress: Progress | None = None,
                      actor: Actor = LOCAL) -> CorpusInfo:
        """Import bytes from a browser upload here and now (the page stages them for the "import" job instead);
        errors name the uploaded file, not its copy."""
        path = stage_upload(self, filename, data, actor=actor)
        return import_staged(self, path, filename, role, name, fmt, overwrite, progress, actor=actor)

    def save_corpus(self, corpus: Corpus, name: str, role: CorpusRole | str | None = None, source: str = "generated",
                    overwrite: bool = False, actor: Actor = LOCAL) -> CorpusInfo:
        """Store an in-memory corpus (demo data, selections, augmentations) like an import."""
        require(actor, "import a corpus")
        name = valid_name(name)  # before the temp file beside it: '../../x' or '/tmp/x' wrote one outside corpora/
        tmp = temp_path_for(self.corpora_dir / f"{name}.jsonl")
        try:
            try:
                write_corpus(corpus, tmp, fmt="parquet")
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # a field whose values one column cannot hold
                raise UserError(f"corpus {name!r} was not stored: a field holds values of different kinds, which one "
                                f"Parquet column cannot ({exc})") from None
            return self._import_file(tmp, role, name, "parquet", overwrite, None, source, actor)
        finally:
            tmp.unlink(missing_ok=True)

    def delete_corpus(self, name: str, actor: Actor = LOCAL) -> None:
        require(actor, "change corpora or roles")
        if not self.has_corpus(name):  # a name, never a path: '../../data/x' deleted x.parquet outside corpora/
            raise UserError(f"no corpus {name!r} in the workspace to delete")
        if self._described(name):
            self.set_role(name, None, actor=actor)
        else:  # data that lost its description or holds a damaged one: only the settings' roles that name it change
            settings = self.settings()
            atomic_write_json(self.settings_path, replace(settings, roles={
                k: v for k, v in settings.roles.items() if v != name}).to_dict())
        (self.corpora_dir / f"{name}.parquet").unlink(missing_ok=True)
        self._info_path(name).unlink(missing_ok=True)

    # ---- artifacts and runs
    def artifact_dir(self, kind: str, key: str) -> Path:
        path = self.root / "artifacts" / kind / key
        path.mkdir(parents=True, exist_ok=True)
        return path

    def find_artifact(self, kind: str, key: str) -> Path | None:
        path = self.root / "artifacts" / kind / key
        return path if path.exists() else None

    def list_artifacts(self, kind: str) -> list[Path]:
        base = self.root / "artifacts" / kind
        return sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime) if base.exists() else []

    def remove_artifact(self, kind: str, key: str) -> None:
        shutil.rmtree(self.root / "artifacts" / kind / key, ignore_errors=True)

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def jobs_db(self) -> Path:
        return self.root / "jobs.sqlite"


def _combined_scheme(schemes: set[TagScheme]) -> TagScheme:
    schemes = {s for s in schemes if s != TagScheme.NONE}
    if not schemes:
        return TagScheme.NONE
    for s in (TagScheme.BIOES, TagScheme.IOB1, TagScheme.BIO):
        if s in schemes:
            return s
    return TagScheme.BIO

