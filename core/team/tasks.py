"""Review tasks: a researcher hands the sentences of a saved selection (or of a corpus) to annotators, with an
overlap share reviewed twice so agreement can be measured; each annotator works through their own queue.

Items keep their tokens in the task, so a task outlives the selection it came from. Every annotator has their
own row per item (two annotators never overwrite each other); one annotator saving the same item from two
tabs is caught by the item's version (optimistic concurrency: core.data.annotation_db.next_version). Every change goes to
the append-only audit log.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.access import AccessDenied, Actor, Role, check_param_paths, require
from core.data.annotation_db import StaleVersion, connect, next_version, spans_from_json, spans_json, transaction
from core.data.showtext import isolated
from core.data.tags import Span
from core.data.workspace import CorpusRole, Workspace
from core.errors import UserError
from core.review.store import check_spans, check_type
from core.team.db import audit
from core.team.users import get_user, list_users

ITEM_STATES = ("done", "skipped")  # "done": the spans are the annotator's answer (none = no entity)
MAX_ITEMS = 20_000


class TaskConflict(UserError):
    """The same annotator saved this item after the version they are editing (a second tab)."""


@dataclass
class Task:
    id: str
    name: str
    source: str  # "selection KEY" or "corpus NAME"
    corpus: str
    corpus_hash: str
    annotators: list[str]
    overlap: float
    guidelines: str
    types: list[str]
    created_by: str
    created: float
    items: int = 0
    suggested_by: str = ""  # the NER model whose spans the items carry as suggestions ("": none)

    @property
    def label(self) -> str:
        """'name · id' for pickers: the name's hidden characters shown, a right-to-left name isolated from the id."""
        return f"{isolated(self.name)} · {self.id}"


@dataclass
class QueueItem:
    task_id: str
    index: int  # sentence index in the task's corpus (DC for a selection)
    position: int
    tokens: list[str]
    suggested: list[Span]
    status: str | None = None  # None: not yet reviewed by this annotator
    spans: list[Span] = field(default_factory=list)
    version: int = 0
    annotators: int = 1  # how many annotators have this item


def _task(row: sqlite3.Row, items: int = 0) -> Task:
    return Task(row["id"], row["name"], row["source"], row["corpus"], row["corpus_hash"], json.loads(row["annotators"]),
                row["overlap"], row["guidelines"], json.loads(row["types"]), row["created_by"], row["created"], items,
                row["suggested_by"])


DEFAULT_OVERLAP = 0.2  # a fifth of a task's items reviewed by two annotators, for agreement


def assign(n_items: int, annotators: Sequence[str], overlap: float, seed: int = 0) -> list[list[str]]:
    """Per item, who reviews it: a seeded `overlap` share of the items goes to two annotators, the rest to one; each
    item to the least loaded (ties in rotation order), so every annotator's share differs by at most one item
    (round-robin with the second reviewer "the next one" once gave one annotator every single item).

    >>> assign(4, ["ann", "bob"], 0.5, seed=0)
    [['ann', 'bob'], ['bob'], ['ann', 'bob'], ['ann']]
    """
    if not annotators:
        raise UserError("a task needs at least one annotator")
    if not 0.0 <= overlap <= 1.0:
        raise UserError(f"overlap {overlap}: give a share between 0 and 1 (0.2 = a fifth of the items reviewed twice)")
    if overlap > 0 and len(annotators) < 2:
        raise UserError(f"overlap {overlap}: a share reviewed twice needs two annotators or more (agreement compares two "
                        "people); with one annotator give overlap 0")
    doubled = set(np.random.default_rng(seed).permutation(n_items)[: math.ceil(round(overlap * n_items, 9))].tolist()) if overlap else set()
    load = dict.fromkeys(annotators, 0)
    out = []
    for i in range(n_items):
        rotation = {a: (k - i) % len(annotators) for k, a in enumerate(annotators)}
        chosen = sorted(annotators, key=lambda a: (load[a], rotation[a]))[: 2 if i in doubled else 1]
        for a in chosen:
            load[a] += 1
        out.append(chosen)
    return out


def _source_items(ws: Workspace, selection: str | None, corpus: str | None, n_items: int | None, seed: int
                  ) -> tuple[str, str, str, list[int], list[list[str]]]:
    """(source, corpus name, corpus hash, indices, tokens) of the sentences a task reviews."""
    if bool(selection) == bool(corpus):
        raise UserError("give a task either a selection or a corpus")
    if selection:
        from core.data.selection_store import load_selection

        sel = load_selection(ws, selection)
        indices = [int(i) for i in sel.indices]
        take = indices[:n_items] if n_items else indices  # best-ranked first
        rows = sel.selected
        tokens = [list(t) for t in rows.tokens[: len(take)]]
        return f"selection {sel.key}", sel.meta.dc_name or "", sel.meta.dc_hash or "", take, tokens
    ref = ws.ref(corpus)
    if ref.kind == "path":  # items are read back from the workspace corpus by index: a file has none to read
        raise UserError(f"{corpus} is a file: import it first (Corpora page, or python -m core import), then make the "
                        "task over the workspace corpus")
    data = ws.load_corpus(ref.name)
    indices = list(range(len(data)))
    if n_items and n_items < len(indices):
        indices = sorted(np.random.default_rng(seed).choice(len(indices), n_items, replace=False).tolist())
    return f"corpus {ref.name}", ref.name, ref.hash, indices, [list(data.tokens[i]) for i in indices]


def default_types(ws: Workspace) -> list[str]:
    """The entity types of the workspace's LC (what the trained model will predict)."""
    name = ws.corpus_for_role(CorpusRole.LC)
    return list(ws.corpus_info(name).entity_types) if name else []


def suggest_spans(model: str, tokens: Sequence[Sequence[str]], types: Sequence[str] = ()) -> list[list[Span]]:
    """An NER model's spans for each item, as pre-filled suggestions (types the task does not list are dropped)."""
    from core.data.corpus import Corpus
    from core.train.ner_model import load_ner_model
    from core.train.ner_predict import predict_corpus

    predicted = predict_corpus(load_ner_model(model), Corpus([list(t) for t in tokens]))
    keep = set(types)
    return [[s for s in p.spans if not keep or s.type in keep] for p in predicted]


def suggestion_outcome(suggested: Sequence[Span], answer: Sequence[Span]) -> dict[str, int]:
    """What an answer did with the suggestions: kept as suggested, rejected or corrected, and the annotator's own.

    >>> suggestion_outcome([Span(0, 1, "PER"), Span(3, 4, "LOC")], [Span(0, 1, "PER"), Span(3, 5, "LOC")])
    {'accepted': 1, 'rejected': 1, 'added': 1}
    """
    mine, offered = set(answer), set(suggested)
    return {"accepted": len(mine & offered), "rejected": len(offered - mine), "added": len(mine - offered)}


def create_task(ws: Workspace, actor: Actor, name: str, annotators: Sequence[str], selection: str | None = None,
                corpus: str | None = None, n_items: int | None = None, overlap: float | None = None, guidelines: str = "",
                types: Sequence[str] | None = None, seed: int = 0, suggest_model: str | None = None) -> Task:
    """A task over the first `n_items` of a selection (best ranked) or a seeded sample of a corpus; with
    `suggest_model`, each item carries that NER model's spans as suggestions (pre-filled in the queue, shown apart from
    the annotator's own; only what the annotator saves is an answer). `overlap` None: DEFAULT_OVERLAP with two
    annotators or more, 0 with one."""
    require(actor, "manage review tasks")
    # a suggesting model folder or a selection folder is read in this process: checked like a job's settings
    check_param_paths(actor, {"model": suggest_model or "", "selection": selection or "", "corpus": corpus or ""},
                      ws.root, ws.corpus_words())
    if not name.strip():
        raise UserError("a task needs a name")
    people = [get_user(ws, a.strip()) for a in annotators if a.strip()]  # names as stored ('ANN' is 'ann')
    annotators = [u.name for u in people]
    if twice := next((a for i, a in enumerate(annotators) if a in annotators[:i]), None):
        raise UserError(f"annotator {twice!r} is named twice: name each annotator once")
    if seed < 0:
        raise UserError(f"seed {seed}: give a whole number of at least 0")
    if overlap is None:
        overlap = DEFAULT_OVERLAP if len(annotators) > 1 else 0.0
    for u in people:
        if u.disabled:
            raise UserError(f"user {u.name!r} is disabled: enable them or pick someone else")
    if n_items is not None and not 1 <= n_items <= MAX_ITEMS:
        raise UserError(f"items {n_items}: give 1 to {MAX_ITEMS:,}")
    source, corpus_name, corpus_hash, indices, tokens = _source_items(ws, selection, corpus, n_items, seed)
    if not indices:
        raise UserError(f"{source} has no sentences to review")
    who = assign(len(indices), annotators, overlap, seed)
    types = list(dict.fromkeys(check_type(t, "a task's entity type") for t in
                               (types if types is not None else default_types(ws)) if str(t).strip()))
    if not types:  # the queue offers only the task's types: with none, every answer could only be "no entity"
        raise UserError("a task needs at least one entity type: give them (e.g. PER,LOC,ORG), or set an LC whose "
                        "types they are")
    suggested = suggest_spans(suggest_model, tokens, types) if suggest_model else [[] for _ in tokens]
    task_id = time.strftime("%Y%m%d-") + uuid.uuid4().hex[:6]
    with transaction(ws) as con:
        con.execute("INSERT INTO tasks (id, name, source, corpus, corpus_hash, annotators, overlap, guidelines, types, created_by, "
                    "created, suggested_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (task_id, name.strip(), source, corpus_name, corpus_hash, json.dumps(annotators), overlap, guidelines,
                     json.dumps(types), actor.name, time.time(), str(suggest_model or "")))
        con.executemany("INSERT INTO task_items (task_id, idx, position, tokens, suggested) VALUES (?, ?, ?, ?, ?)",
                        [(task_id, i, p, json.dumps(t), spans_json(sug))
                         for p, (i, t, sug) in enumerate(zip(indices, tokens, suggested))])
        con.executemany("INSERT INTO assignments (task_id, idx, annotator) VALUES (?, ?, ?)",
                        [(task_id, i, a) for i, names in zip(indices, who) for a in names])
        audit(con, actor, "task created", task_id, name=name, source=source, items=len(indices), annotators=annotators,
              overlap=overlap, suggested_by=suggest_model or None, suggestions=sum(len(x) for x in suggested))
    return get_task(ws, task_id)


def get_task(ws: Workspace, task_id: str) -> Task:
    con = connect(ws)
    try:
        row = con.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        n = con.execute("SELECT COUNT(*) FROM task_items WHERE task_id = ?", (task_id,)).fetchone()[0]
    finally:
        con.close()
    if row is None:
        raise UserError(f"no review task {task_id!r}: `python -m core task list` shows the tasks")
    return _task(row, n)


def list_tasks(ws: Workspace, actor: Actor) -> list[Task]:
    """Every task for staff; an annotator's own tasks only."""
    con = connect(ws)
    try:
        if actor.role == Role.ANNOTATOR:
            rows = con.execute("SELECT * FROM tasks WHERE id IN (SELECT task_id FROM assignments WHERE annotator = ?) "
                               "ORDER BY created DESC", (actor.name,)).fetchall()
        else:
            rows = con.execute("SELECT * FROM tasks ORDER BY created DESC").fetchall()
        counts = dict(con.execute("SELECT task_id, COUNT(*) FROM task_items GROUP BY task_id").fetchall())
    finally:
        con.close()
    return [_task(r, counts.get(r["id"], 0)) for r in rows]


def assigned_tasks(ws: Workspace, actor: Actor) -> list[Task]:
    """The tasks with items assigned to the actor, whatever their role: a researcher or admin named among a task's
    annotators answers in the same queue as an annotator (else their items would stay open and their overlap never
    measured)."""
    return [t for t in list_tasks(ws, actor) if actor.name in t.annotators]


def queue(ws: Workspace, actor: Actor, task_id: str, annotator: str | None = None) -> list[QueueItem]:
    """The items of `task_id` assigned to `annotator` (default: the actor) in task order, with their answers.
    Reading someone else's queue needs a staff role."""
    annotator = annotator or actor.name
    if annotator != actor.name:
        require(actor, "read other annotators' work")
    get_task(ws, task_id)
    con = connect(ws)
    try:
        rows = con.execute(
            "SELECT i.idx, i.position, i.tokens, i.suggested, a.status, a.spans, a.version, "
            "(SELECT COUNT(*) FROM assignments x WHERE x.task_id = i.task_id AND x.idx = i.idx) AS n "
            "FROM assignments s JOIN task_items i ON i.task_id = s.task_id AND i.idx = s.idx "
            "LEFT JOIN annotations a ON a.task_id = s.task_id AND a.idx = s.idx AND a.annotator = s.annotator "
            "WHERE s.task_id = ? AND s.annotator = ? ORDER BY i.position", (task_id, annotator)).fetchall()
    finally:
        con.close()
    return [QueueItem(task_id, r["idx"], r["position"], json.loads(r["tokens"]), spans_from_json(r["suggested"]), r["status"],
                      spans_from_json(r["spans"]) if r["spans"] else [], r["version"] or 0, r["n"]) for r in rows]


def check_task_types(task: Task, index: int, spans: Sequence[Span]) -> None:
    """Refuse a span whose type the task does not list: the queue offers only the task's types, and a type from
    elsewhere (a typo at the CLI, a hand-made request) would enter agreement and the exported corpus."""
    if other := sorted({s.type for s in spans} - set(task.types)):
        raise UserError(f"sentence {index} of task {task.id}: type(s) {', '.join(map(repr, other))} are not this task's "
                        f"({', '.join(task.types)})")


def save_annotation(ws: Workspace, actor: Actor, task_id: str, index: int, spans: Sequence[Span], status: str = "done",
                    expected_version: int = 0) -> QueueItem:
    """The actor's answer for one item of their queue. `expected_version` is the version they saw (0: none yet)."""
    require(actor, "review")
    if status not in ITEM_STATES:
        raise UserError(f"status {status!r}: expected one of {', '.join(ITEM_STATES)}")
    task = get_task(ws, task_id)  # a clear message for a task deleted meanwhile
    with transaction(ws) as con:
        item = con.execute("SELECT tokens, suggested FROM task_items WHERE task_id = ? AND idx = ?", (task_id, index)).fetchone()
        mine = con.execute("SELECT 1 FROM assignments WHERE task_id = ? AND idx = ? AND annotator = ?",
                           (task_id, index, actor.name)).fetchone()
        if item is None or mine is None:
            raise AccessDenied(f"sentence {index} of task {task_id} is not in {actor.name}'s queue")
        spans = check_spans(list(spans), len(json.loads(item["tokens"]))) if status == "done" else []
        check_task_types(task, index, spans)
        try:
            _, version = next_version(con, "annotations", {"task_id": task_id, "idx": index, "annotator": actor.name},
                                      expected_version)
        except StaleVersion:
            raise TaskConflict(f"sentence {index} of task {task_id} was saved meanwhile (another tab of yours?): "
                               "reload it to see that answer before changing it") from None
        con.execute("INSERT OR REPLACE INTO annotations (task_id, idx, annotator, status, spans, version, updated) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", (task_id, index, actor.name, status, spans_json(spans), version, time.time()))
        offered = spans_from_json(item["suggested"])
        audit(con, actor, "annotation saved", f"{task_id}/{index}", status=status, version=version,
              spans=[s.to_dict() for s in spans], **({"suggestions": suggestion_outcome(offered, spans)} if offered else {}))
    return next(q for q in queue(ws, actor, task_id) if q.index == index)


def progress(ws: Workspace, actor: Actor, task_id: str) -> list[dict]:
    """Per annotator: assigned, done, skipped (staff only: it shows everyone's work)."""
    require(actor, "read other annotators' work")
    get_task(ws, task_id)  # an unknown task is said, not an empty table
    con = connect(ws)
    try:
        assigned = Counter(r[0] for r in con.execute("SELECT annotator FROM assignments WHERE task_id = ?", (task_id,)))
        rows = con.execute("SELECT a.annotator, a.status, a.spans, i.suggested FROM annotations a JOIN task_items i "
                           "ON i.task_id = a.task_id AND i.idx = a.idx WHERE a.task_id = ?", (task_id,)).fetchall()
    finally:
        con.close()
    states = Counter((r["annotator"], r["status"]) for r in rows)
    disabled = {u.name for u in list_users(ws) if u.disabled}  # their items wait for no one: hand them on (reassign)
    out = [{"annotator": a, "assigned": n, "done": states[(a, "done")], "skipped": states[(a, "skipped")],
            "left": n - states[(a, "done")] - states[(a, "skipped")], "account": "disabled" if a in disabled else ""}
           for a, n in sorted(assigned.items())]
    if any(r["suggested"] != "[]" for r in rows):  # what each annotator did with the model's suggestions
        for entry in out:
            totals = Counter()
            for r in rows:
                if r["annotator"] == entry["annotator"] and r["status"] == "done":
                    totals.update(suggestion_outcome(spans_from_json(r["suggested"]), spans_from_json(r["spans"])))
            entry.update({f"suggestions {k}": totals[k] for k in ("accepted", "rejected", "added")})
    return out


def answers(ws: Workspace, actor: Actor, task_id: str) -> dict[int, dict[str, list[Span]]]:
    """Per item: annotator -> spans, for the items answered 'done' (staff only)."""
    require(actor, "read other annotators' work")
    con = connect(ws)
    try:
        rows = con.execute("SELECT idx, annotator, spans FROM annotations WHERE task_id = ? AND status = 'done' "
                           "ORDER BY idx, annotator", (task_id,)).fetchall()
    finally:
        con.close()
    out: dict[int, dict[str, list[Span]]] = {}
    for r in rows:
        out.setdefault(r["idx"], {})[r["annotator"]] = spans_from_json(r["spans"])
    return out


def item_tokens(ws: Workspace, task_id: str) -> dict[int, list[str]]:
    con = connect(ws)
    try:
        rows = con.execute("SELECT idx, tokens FROM task_items WHERE task_id = ? ORDER BY position", (task_id,)).fetchall()
    finally:
        con.close()
    return {r["idx"]: json.loads(r["tokens"]) for r in rows}
