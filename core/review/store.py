"""Annotator review state: accept / reject / correct predicted entity spans, per sentence.

Stored in the workspace's one annotation database (core.data.annotation_db, SQLite in WAL mode)
so every click is saved as it happens, a reload or a second browser sees it, and several processes
can share it. Each item carries a version number: a save names the version its author saw, and if
someone saved in between the store raises `ReviewConflict` instead of silently erasing the earlier
decision (optimistic concurrency, the same check as a task's answers). Every save is also appended to a history table, so nothing a
reviewer decided is ever lost, even after an explicit overwrite.

A review set is one corpus at one content hash (`review_set_key`): the same sentence keeps its
review whichever NER model proposed the spans, and the item stores the spans that were
accepted or corrected, so an export never depends on predictions still being cached.

>>> store = ReviewStore(Workspace(tmp), "demo-dc@abc")                        # doctest: +SKIP
>>> item = store.save(3, "accepted", ["Paris", "is"], [Span(0, 1, "LOC")], expected_version=0)  # doctest: +SKIP
>>> item.version                                                               # doctest: +SKIP
1
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.access import LOCAL, Actor, require
from core.data.annotation_db import StaleVersion, connect, next_version, spans_from_json, spans_json, transaction
from core.data.corpus import Corpus
from core.data.tags import Span, TagScheme, tags_from_spans
from core.data.workspace import Workspace
from core.errors import UserError

STATUSES = ("accepted", "rejected", "corrected", "pending")  # "pending" = a decision taken back
EXPORTED = ("accepted", "corrected")

@dataclass
class ReviewItem:
    set_key: str
    index: int  # sentence index in the reviewed corpus
    status: str
    tokens: list[str]
    spans: list[Span]
    version: int
    reviewer: str = ""
    model: str = ""
    updated: float = 0.0

    def tags(self, scheme: TagScheme | str = TagScheme.BIO) -> list[str]:
        return tags_from_spans(self.spans, len(self.tokens), scheme)

    @property
    def replaced_version(self) -> int:
        """The version this decision replaced (each save counts up by one; 0: none): what undoing it goes back to,
        also when it overwrote someone else's decision after a conflict, a version its reviewer never saw."""
        return self.version - 1


class ReviewConflict(UserError):
    """Someone saved this item after the version the caller saw; `current` is what is stored."""

    def __init__(self, index: int, expected_version: int, current: ReviewItem | None):
        self.index = index
        self.expected_version = expected_version
        self.current = current
        who = f" by {current.reviewer}" if current and current.reviewer else ""
        now = f"{current.status} (version {current.version}{who})" if current else "removed"
        super().__init__(f"sentence {index} changed since you opened it: it is now {now}, you edited version "
                         f"{expected_version}. Reload to see it, or overwrite it explicitly.")


def review_set_key(corpus_name: str, corpus_hash: str) -> str:
    return f"{corpus_name}@{corpus_hash}"


# not entity types: BIO's "outside" (kappa and the tags read it as no entity) and the agreement tables' "not marked"
RESERVED_TYPES = ("O", "—")


MAX_TYPE_CHARS = 40  # a label on a pill and in every export, not a sentence


def check_type(entity_type: str, where: str, typed: bool = True) -> str:
    """An entity type as spans, tasks and exports need it: one word, not a reserved marker; one a user `typed` (a
    task's types, the span editor, --spans) also not a tag (B-PER, stored as B-B-PER) nor over MAX_TYPE_CHARS. Types
    that came with a model or an LC (E-MAIL is a real one) are stored as they are."""
    text = str(entity_type or "").strip()
    if not text or any(c.isspace() for c in text):
        raise UserError(f"{where} needs an entity type without spaces, got {entity_type!r}")
    if text in RESERVED_TYPES:
        raise UserError(f"{where}: {text!r} is not an entity type ('O' is outside any entity, '—' marks a span not "
                        "marked by an annotator): name the type, e.g. PER or MISC")
    if not typed:
        return text
    if len(text) >= 2 and text[0] in "BI" and text[1] == "-":  # a tag, not a type: stored as B-B-PER (E-MAIL is a type)
        raise UserError(f"{where}: {text!r} is a tag, not an entity type: give the type alone, e.g. {text[2:] or 'PER'}")
    if len(text) > MAX_TYPE_CHARS:
        raise UserError(f"{where}: an entity type of {len(text)} characters ({text[:20]}...): at most {MAX_TYPE_CHARS}")
    return text


def check_spans(spans: Sequence[Span], n_tokens: int) -> list[Span]:
    """Spans must lie inside the sentence, be non-empty, have a type and not overlap (BIO
    cannot encode overlaps, and an export must round-trip)."""
    ordered = sorted(spans)
    for s in ordered:
        if not (0 <= s.start < s.end <= n_tokens):
            raise UserError(f"span {s.start}-{s.end} ({s.type}) is outside the sentence of {n_tokens} tokens "
                            "(start counts from 0, end is exclusive)")
        check_type(s.type, f"span {s.start}-{s.end}", typed=False)
    for a, b in zip(ordered, ordered[1:]):
        if b.start < a.end:
            raise UserError(f"spans {a.start}-{a.end} ({a.type}) and {b.start}-{b.end} ({b.type}) overlap")
    return ordered


def list_review_sets(ws: Workspace) -> list[str]:
    """Every review set of the workspace with at least one decision (the set key names the corpus and its hash)."""
    con = connect(ws)
    try:
        return [r["set_key"] for r in con.execute("SELECT DISTINCT set_key FROM review ORDER BY set_key")]
    finally:
        con.close()


class ReviewStore:
    """Review decisions of one review set. Cheap to construct: each call opens the database
    afresh, so the app, the CLI and tests can all share one workspace."""

    def __init__(self, ws: Workspace, set_key: str):
        self.ws = ws
        self.set_key = set_key
        con = self._connect()
        con.close()

    def _connect(self) -> sqlite3.Connection:
        return connect(self.ws)

    def _item(self, row: sqlite3.Row) -> ReviewItem:
        return ReviewItem(set_key=row["set_key"], index=row["idx"], status=row["status"], tokens=json.loads(row["tokens"]),
                          spans=spans_from_json(row["spans"]), version=row["version"], reviewer=row["reviewer"],
                          model=row["model"], updated=row["updated"])

    def get(self, index: int) -> ReviewItem | None:
        con = self._connect()
        try:
            row = con.execute("SELECT * FROM review WHERE set_key = ? AND idx = ?", (self.set_key, int(index))).fetchone()
        finally:
            con.close()
        return self._item(row) if row else None

    def items(self) -> dict[int, ReviewItem]:
        con = self._connect()
        try:
            rows = con.execute("SELECT * FROM review WHERE set_key = ? ORDER BY idx", (self.set_key,)).fetchall()
        finally:
            con.close()
        return {r["idx"]: self._item(r) for r in rows}

    def save(self, index: int, status: str, tokens: Sequence[str], spans: Sequence[Span], expected_version: int,
             reviewer: str = "", model: str = "", actor: Actor = LOCAL) -> ReviewItem:
        """Record a decision. `expected_version` is the version the reviewer saw (0 for an item
        never reviewed); pass `None` only to overwrite deliberately after a conflict. A signed-in
        actor is the reviewer (a typed name counts only in the single-user app and the CLI)."""
        require(actor, "review in Inspect")
        reviewer = reviewer if actor == LOCAL else actor.name
        if status not in STATUSES:
            raise UserError(f"unknown review status {status!r}: expected one of {', '.join(STATUSES)}")
        spans = check_spans(list(spans), len(tokens))
        now = time.time()
        with transaction(self.ws) as con:  # read-compare-write under one write lock: no lost update
            try:
                _, version = next_version(con, "review", {"set_key": self.set_key, "idx": int(index)}, expected_version)
            except StaleVersion as stale:
                raise ReviewConflict(index=int(index), expected_version=int(expected_version or 0),
                                     current=self._item(stale.row) if stale.row else None) from None
            con.execute("INSERT OR REPLACE INTO review (set_key, idx, status, tokens, spans, version, reviewer, model, updated) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (self.set_key, int(index), status, json.dumps(list(tokens)), spans_json(spans), version, reviewer,
                         model, now))
            con.execute("INSERT INTO review_history (set_key, idx, version, status, spans, reviewer, updated) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)", (self.set_key, int(index), version, status, spans_json(spans),
                                                         reviewer, now))
        return ReviewItem(self.set_key, int(index), status, list(tokens), spans, version, reviewer, model, now)

    def history(self, index: int) -> list[dict]:
        con = self._connect()
        try:
            rows = con.execute("SELECT * FROM review_history WHERE set_key = ? AND idx = ? ORDER BY version",
                               (self.set_key, int(index))).fetchall()
        finally:
            con.close()
        return [{"version": r["version"], "status": r["status"], "spans": json.loads(r["spans"]), "reviewer": r["reviewer"],
                 "updated": r["updated"]} for r in rows]

    def undo(self, index: int, expected_version: int, to_version: int, reviewer: str = "", actor: Actor = LOCAL) -> ReviewItem:
        """Take back decisions on `index`: a new version restores the state of `to_version` (0 =
        never reviewed: "pending", no spans), so history stays append-only. `expected_version` is
        the version the undoing reviewer last saw, as in `save`: a later save by someone else
        raises ReviewConflict instead of being undone silently."""
        require(actor, "review in Inspect")
        current = self.get(index)
        if current is None:
            raise UserError(f"sentence {index} has no decision to undo")
        status, spans = "pending", []
        if to_version > 0:
            found = [h for h in self.history(index) if h["version"] == to_version]
            if not found:
                raise UserError(f"sentence {index} has no version {to_version} to go back to")
            status, spans = found[0]["status"], [Span.from_dict(d) for d in found[0]["spans"]]
        return self.save(index, status, current.tokens, spans, expected_version=expected_version,
                         reviewer=reviewer or current.reviewer, model=current.model, actor=actor)

    def progress_by_reviewer(self) -> list[dict[str, Any]]:
        """Per annotator name: how many sentences they decided, by status (the latest decision
        of each sentence counts for whoever made it)."""
        con = self._connect()
        try:
            rows = con.execute("SELECT reviewer, status, COUNT(*) AS n FROM review WHERE set_key = ? AND status != 'pending' "
                               "GROUP BY reviewer, status ORDER BY reviewer", (self.set_key,)).fetchall()
        finally:
            con.close()
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            entry = out.setdefault(r["reviewer"], {"annotator": r["reviewer"] or "(no name)", "accepted": 0, "rejected": 0,
                                                   "corrected": 0, "reviewed": 0})
            entry[r["status"]] += r["n"]
            entry["reviewed"] += r["n"]
        return sorted(out.values(), key=lambda e: -e["reviewed"])

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        con = self._connect()
        try:
            for r in con.execute("SELECT status, COUNT(*) AS n FROM review WHERE set_key = ? GROUP BY status", (self.set_key,)):
                out[r["status"]] = r["n"]
        finally:
            con.close()
        return out

    def export_corpus(self, statuses: Sequence[str] = EXPORTED, name: str = "reviewed",
                      reviewers: Sequence[str] | None = None) -> Corpus:
        """Accepted and corrected sentences with their reviewed labels (BIO), ready for LC;
        `source_index` keeps the link to the reviewed corpus. Unreviewed sentences never go out;
        `reviewers` keeps only the decisions of those annotator names."""
        chosen = [it for it in self.items().values()
                  if it.status in statuses and (reviewers is None or it.reviewer in reviewers)]
        if not chosen:
            raise UserError("nothing to export yet: accept or correct some sentences first")
        return Corpus(tokens=[it.tokens for it in chosen], tags=[it.tags() for it in chosen],
                      fields={"source_index": [it.index for it in chosen]}, name=name)
