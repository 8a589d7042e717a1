"""The selection store: every saved selection is looked up, listed, labelled and read through here.

A selection lives in artifacts/selection/KEY/ (KEY a content hash of its inputs): scores.npy, order.npy,
selected.jsonl (the selected rows in rank order, with dc_index) and meta.json, written last, whose presence
marks a complete selection. Pages, the CLI, MLM training, self-training, lineage and review all name a
selection the same way: its key, a key prefix of 6+ hex digits, or its folder."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from core.data.atomic import atomic_write_json, temp_path_for
from core.data.selection import Selection, SelectionMeta
from core.data.stream import CorpusStream, open_corpus_stream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError

ARTIFACT = "selection"


def save_selection(ws: Workspace, sel: Selection) -> Path:
    """selected.jsonl + scores.npy + order.npy + meta.json under artifacts/selection/KEY; meta.json last
    (its presence marks a complete artifact). The selected rows are written one by one, read
    from DC in a single pass when DC is streamed."""
    folder = ws.artifact_dir(ARTIFACT, sel.key or content_hash(sel.meta.to_dict()))
    for name, arr in (("scores.npy", sel.scores), ("order.npy", sel.order)):
        tmp = temp_path_for(folder / name)
        with open(tmp, "wb") as fh:
            np.save(fh, np.asarray(arr, dtype=np.float32 if name == "scores.npy" else np.int64))
        os.replace(tmp, folder / name)
    sel.write_export(folder / "selected.jsonl", "jsonl")
    sel.meta.key = folder.name
    atomic_write_json(folder / "meta.json", sel.meta.to_dict())
    sel.folder, sel.key, sel.meta.path = folder, folder.name, str(folder)
    return folder


def load_selection(ws: Workspace, ref: str | Path) -> Selection:
    """A saved selection, named as everywhere (`find_selection`: key, key prefix or folder); scores and order
    memory-mapped, the selected rows read from selected.jsonl only when asked for (`records()` streams them,
    `.selected` loads them)."""
    folder = selection_folder(ws, ref)
    if not (folder / "meta.json").exists():
        raise UserError(f"selection {str(ref)!r} has no meta.json (unfinished or hand-made): only its texts can be read")
    meta = _read_meta(folder)
    if meta is None:
        raise UserError(f"selection {str(ref)!r}: {folder / 'meta.json'} is not readable JSON")
    order = np.load(folder / "order.npy", mmap_mode="r")
    return Selection(strategy=str(meta.strategy), indices=np.asarray(order[:int(meta.budget)], dtype=np.int64),
                     scores=np.load(folder / "scores.npy", mmap_mode="r"), order=order, meta=meta, key=folder.name,
                     folder=folder)


def cached_selection(ws: Workspace, key: str, dc: CorpusStream) -> Selection | None:
    folder = ws.find_artifact(ARTIFACT, key)
    if folder is None or not (folder / "meta.json").exists():
        return None
    sel = load_selection(ws, folder)
    if not dc.streamed:
        sel.source = dc  # carried fields with their original types, read from DC on first use
    sel.meta.notes = [*sel.notes, "loaded from the workspace (same inputs and parameters)"]
    return sel


def list_selections(ws: Workspace, dc: str | None = None, in_workspace: bool = False) -> list[SelectionMeta]:
    """Metadata of every saved selection, newest first: the one listing of the selection store (`key`, `path` and
    `label` included). `dc`: only selections over that corpus as it is now, matched by content (a DC re-imported
    under the same name holds other sentences: its old selections' dc_index would mark the wrong rows), by name
    for one saved without its DC's hash; `in_workspace`: only those whose DC is a workspace corpus (their dc_index
    values resolve here)."""
    @functools.cache  # read once, and only when a selection recording its DC's hash is met
    def dc_digest() -> str | None:
        from core.data.stream import open_corpus_stream

        return open_corpus_stream(ws, dc).digest() if ws.has_corpus(dc) else None  # cached per import

    out = []
    for folder in reversed(ws.list_artifacts(ARTIFACT)):
        meta = _read_meta(folder)
        if meta is None:
            continue  # a half-written or foreign folder is not a selection
        if dc is not None and (meta.dc_hash != dc_digest() if meta.dc_hash and dc_digest() else meta.dc_name != dc):
            continue
        if in_workspace and not _names_a_workspace_corpus(ws, meta.dc_name):
            continue
        out.append(meta)
    return out


def _names_a_workspace_corpus(ws: Workspace, name: str | None) -> bool:
    """A name or (a selection recorded before DCs were pinned) a role of a workspace corpus, not a file."""
    try:
        return bool(name) and ws.ref(name).kind != "path"
    except UserError:
        return False


def _read_meta(folder: Path) -> SelectionMeta | None:
    try:
        data = json.loads((folder / "meta.json").read_text("utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    meta = SelectionMeta.from_dict(data)
    meta.key, meta.path = folder.name, str(folder)
    return meta


def find_selection(ws: Workspace, ref: str | Path) -> Path | None:
    """The folder of a saved selection named by key (or a unique key prefix), or by its folder path."""
    def usable(folder: Path) -> bool:  # meta.json marks a complete selection; selected.jsonl alone is readable too
        return (folder / "meta.json").exists() or (folder / "selected.jsonl").exists()

    path = Path(str(ref))
    if path.is_dir() and usable(path):
        return path
    exact = ws.find_artifact(ARTIFACT, str(ref)) if "/" not in str(ref) else None
    if exact is not None and usable(exact):
        return exact
    text = str(ref)
    if len(text) < 6 or any(c not in "0123456789abcdef" for c in text):
        return None  # only a key prefix of 6+ hex digits, so a corpus name never matches by accident
    matches = [Path(str(m.path)) for m in list_selections(ws) if m.key.startswith(text)]
    return matches[0] if len(matches) == 1 else None


def selection_folder(ws: Workspace, ref: str | Path) -> Path:
    """`find_selection`, or a UserError saying how a selection can be named."""
    folder = find_selection(ws, ref)
    if folder is None:
        raise UserError(f"no saved selection {str(ref)!r} in workspace {ws.root} (a key, a key prefix of 6+ hex digits, "
                        "or a selection folder)")
    return folder


def selection_texts(ws: Workspace, ref: str | Path) -> Iterator[str]:
    """The selected sentences' texts in rank order, streamed from selected.jsonl (MLM training
    reads a selection through here)."""
    folder = selection_folder(ws, ref)
    with open(folder / "selected.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield rec["text"] if rec.get("text") is not None else " ".join(rec.get("tokens") or [])


def selection_meta(ws: Workspace, ref: str | Path) -> SelectionMeta:
    """meta.json of a saved selection (strategy, budget, model, dc_name, ...) with its key and folder; a selection
    with only selected.jsonl (older or hand-made) gets what can be counted from it."""
    folder = selection_folder(ws, ref)
    meta = _read_meta(folder)
    if meta is None:
        with open(folder / "selected.jsonl", encoding="utf-8") as fh:
            meta = SelectionMeta(budget=sum(1 for line in fh if line.strip()))
        meta.key, meta.path = folder.name, str(folder)
    return meta


def selection_dc(ws: Workspace, meta: SelectionMeta) -> str:
    """The workspace corpus a selection's row indices point into, checked against the DC it was made on (its size and
    token digest), so the indices never read another corpus's rows: a selection made before DCs were recorded by name
    names its DC by a role, which may have moved since, and a corpus may have been imported again under its name."""
    what = f"selection {meta.key[:8]} was made on {meta.dc_name!r}"
    try:
        ref = ws.ref(meta.dc_name) if meta.dc_name else None
    except UserError:
        ref = None
    if ref is None:
        raise UserError(f"{what}, which cannot be found now: its rows cannot be read here")
    where = ref.name if ref.kind != "path" else str(meta.dc_name)  # a DC given as a file is read as that file
    stream = open_corpus_stream(ws, where)
    if (meta.dc_size is not None and len(stream) != meta.dc_size) or (meta.dc_hash and stream.digest() != meta.dc_hash):
        # e.g. the role moved to another corpus, the corpus was imported again, or (an experiment's selection) the DC
        # it ranked had its DEV/TEST duplicates dropped first
        raise UserError(f"{what} ({int(meta.dc_size or 0):,} sentences), but {where!r} holds other sentences now "
                        f"({len(stream):,}): make the selection again on this DC")
    return where


def selected_indices(ws: Workspace, ref: str | Path) -> list[int]:
    """The selected sentences' row indices in DC (`dc_index`), in rank order."""
    folder = selection_folder(ws, ref)
    with open(folder / "selected.jsonl", encoding="utf-8") as fh:
        return [int(json.loads(line)["dc_index"]) for line in fh if line.strip()]
