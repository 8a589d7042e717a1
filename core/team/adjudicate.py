"""Adjudication and the way back: a researcher settles the items annotators disagree on, and the settled set
becomes a corpus (e.g. more LC) whose source names the task, the annotators and their agreement."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.access import Actor, require
from core.data.annotation_db import StaleVersion, connect, next_version, spans_from_json, spans_json, transaction
from core.data.corpus import Corpus, corpus_bytes
from core.data.tags import Span, TagScheme, tags_from_spans
from core.data.workspace import CorpusInfo, CorpusRole, Workspace
from core.errors import UserError
from core.review.store import check_spans
from core.tables import count
from core.team.agreement import task_agreement
from core.team.db import audit
from core.team.tasks import answers, check_task_types, get_task, item_tokens


@dataclass
class Item:
    index: int
    tokens: list[str]
    answers: dict[str, list[Span]]  # annotator -> spans ('done' answers only)
    adjudicated: list[Span] | None  # a researcher's decision, if any
    adjudicated_by: str = ""
    version: int = 0  # of the decision (0: none yet): what a researcher saw, checked when they decide
    waiting: int = 0  # annotators it is assigned to who have neither answered nor skipped it yet

    @property
    def agreed(self) -> bool:
        """One answer, or all answers the same spans."""
        return len({tuple(sorted(s)) for s in self.answers.values()}) == 1

    @property
    def final(self) -> list[Span] | None:
        """The adjudicated spans, else the agreed ones once every annotator it is assigned to has answered or skipped
        it (one answer of two is not agreement: the second may differ), else None (still open)."""
        if self.adjudicated is not None:
            return self.adjudicated
        return next(iter(self.answers.values())) if self.answers and self.agreed and not self.waiting else None


def items(ws: Workspace, actor: Actor, task_id: str) -> list[Item]:
    """Every item of the task with its answers and decision, in task order."""
    got = answers(ws, actor, task_id)
    get_task(ws, task_id)  # an unknown task is said ("no review task"), not "no settled sentences yet"
    con = connect(ws)
    try:
        decided = {r["idx"]: (spans_from_json(r["spans"]), r["by"], r["version"])
                   for r in con.execute("SELECT idx, spans, by, version FROM adjudications WHERE task_id = ?", (task_id,))}
        waiting = {r["idx"]: r["n"] for r in con.execute(
            "SELECT s.idx, COUNT(*) AS n FROM assignments s LEFT JOIN annotations a ON a.task_id = s.task_id "
            "AND a.idx = s.idx AND a.annotator = s.annotator WHERE s.task_id = ? AND a.status IS NULL GROUP BY s.idx",
            (task_id,))}
    finally:
        con.close()
    out = []
    for idx, tokens in item_tokens(ws, task_id).items():
        spans, by, version = decided.get(idx, (None, "", 0))
        out.append(Item(idx, tokens, got.get(idx, {}), spans, by, version, waiting.get(idx, 0)))
    return out


def disagreements(ws: Workspace, actor: Actor, task_id: str) -> list[Item]:
    """The items whose annotators differ, those still to decide first (in task order), then the decided ones: a page
    that shows the first twenty reaches every open item as they are decided, and can still show the settled ones."""
    differ = [i for i in items(ws, actor, task_id) if len(i.answers) >= 2 and not i.agreed]
    return [i for i in differ if i.adjudicated is None] + [i for i in differ if i.adjudicated is not None]


class AdjudicationConflict(UserError):
    """Another researcher decided the item after the version this one saw."""


def adjudicate(ws: Workspace, actor: Actor, task_id: str, index: int, spans: Sequence[Span], source: str = "edited",
               expected_version: int | None = None) -> Item:
    """Set the final spans of one item (`source`: the annotator whose answer was picked, or 'edited').
    `expected_version`: the decision's version the researcher saw (`Item.version`, 0: none); a decision saved by
    someone else since raises AdjudicationConflict instead of being overwritten. None overwrites on purpose."""
    require(actor, "adjudicate")
    task = get_task(ws, task_id)
    tokens = item_tokens(ws, task_id)
    if index not in tokens:
        raise UserError(f"task {task_id} has no sentence {index}")
    spans = check_spans(list(spans), len(tokens[index]))
    check_task_types(task, index, spans)
    with transaction(ws) as con:
        try:
            _, version = next_version(con, "adjudications", {"task_id": task_id, "idx": int(index)}, expected_version)
        except StaleVersion as stale:
            now = stale.row
            raise AdjudicationConflict(
                f"sentence {index} of task {task_id} was decided by {now['by'] if now else 'someone'} since you opened it "
                f"({len(spans_from_json(now['spans'])) if now else 0} spans, from {now['source'] if now else '?'}): "
                "reload to see that decision before changing it") from None
        con.execute("INSERT OR REPLACE INTO adjudications (task_id, idx, spans, source, by, updated, version) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", (task_id, index, spans_json(spans), source, actor.name, time.time(), version))
        audit(con, actor, "adjudicated", f"{task_id}/{index}", source=source, version=version,
              spans=[s.to_dict() for s in spans])
    return next(i for i in items(ws, actor, task_id) if i.index == index)


def task_scheme(ws: Workspace, task_id: str) -> TagScheme:
    """The tag scheme settled sentences are written in by default: the task's corpus's, where it is a labeled workspace
    corpus still holding what the task was made from (a BIOES LC came back as BIO), else BIO."""
    task = get_task(ws, task_id)
    try:
        info = ws.corpus_info(task.corpus) if ws.has_corpus(task.corpus) else None
    except UserError:
        info = None
    if info is not None and task.corpus_hash and info.hash != task.corpus_hash:  # re-imported since: not its scheme
        info = None
    if info is not None and info.labeled and info.tag_scheme in {s.value for s in TagScheme} - {TagScheme.NONE.value}:
        return TagScheme(info.tag_scheme)
    return TagScheme.BIO


def settled_corpus(ws: Workspace, actor: Actor, task_id: str,
                   scheme: TagScheme | str | None = None) -> tuple[Corpus, dict[str, int]]:
    """The items with final spans as a labeled corpus (tags in `scheme`, default `task_scheme`), and counts of what was
    left out and why: disagreements still to decide, sentences whose answers so far agree but wait for another
    annotator's, and sentences nobody answered."""
    scheme = TagScheme(scheme) if scheme else task_scheme(ws, task_id)
    all_items = items(ws, actor, task_id)
    done = [i for i in all_items if i.final is not None]
    report = {"sentences": len(done),
              "open_disagreements": sum(1 for i in all_items if i.answers and not i.agreed and i.adjudicated is None),
              "awaiting_review": sum(1 for i in all_items if i.answers and i.agreed and i.final is None),
              "unanswered": sum(1 for i in all_items if not i.answers and i.adjudicated is None)}
    corpus = Corpus(tokens=[i.tokens for i in done], tags=[tags_from_spans(i.final, len(i.tokens), scheme) for i in done],
                    fields={"task_index": [i.index for i in done]}, name=f"task-{task_id}")
    return corpus, report


def left_out(report: dict[str, int]) -> str:
    """What settled_corpus left out, in words.

    >>> left_out({"open_disagreements": 1, "awaiting_review": 2, "unanswered": 0})
    "1 disagreement open, 2 awaiting another annotator's answer, 0 unanswered"
    """
    return (f"{count(report['open_disagreements'], 'disagreement')} open, {report['awaiting_review']:,} awaiting another "
            f"annotator's answer, {report['unanswered']:,} unanswered")


def export_task(ws: Workspace, actor: Actor, task_id: str, fmt: str = "conll",
                scheme: TagScheme | str | None = None) -> tuple[bytes, dict[str, int]]:
    require(actor, "adjudicate")
    corpus, report = settled_corpus(ws, actor, task_id, scheme)
    if not len(corpus):
        raise UserError(f"task {task_id} has no settled sentences yet ({left_out(report)})")
    return corpus_bytes(corpus, fmt), report


def parse_role(role: str | None) -> str | None:
    """A role typed for a corpus ('lc', 'LC'), or a UserError naming the roles; None stays None."""
    if not role:
        return None
    try:
        return CorpusRole(str(role).strip().lower()).value
    except ValueError:
        raise UserError(f"unknown role {role!r}: expected one of {', '.join(r.value for r in CorpusRole)}") from None


def import_task(ws: Workspace, actor: Actor, task_id: str, name: str, role: str | None = None,
                scheme: TagScheme | str | None = None, overwrite: bool = False) -> tuple[CorpusInfo, dict[str, Any]]:
    """Store the settled set as a workspace corpus whose source records the task, annotators and agreement;
    `overwrite` replaces an earlier import of it (more sentences settled since). Its `warnings` say what changed besides
    (a role moved from another corpus)."""
    require(actor, "import a corpus")
    task = get_task(ws, task_id)
    role = parse_role(role)  # 'bogus' raised a ValueError traceback
    corpus, report = settled_corpus(ws, actor, task_id, scheme)
    if not len(corpus):
        raise UserError(f"task {task_id} has no settled sentences yet ({left_out(report)})")
    agree = task_agreement(ws, actor, task_id)
    kappa = "-" if agree["kappa_token"] is None else f"{agree['kappa_token']:.3f} (BIO {agree['kappa_bio']:.3f})"
    f1 = "-" if agree["f1_exact"] is None else f"{agree['f1_exact']:.3f}"
    source = (f"review task {task.id} ({task.name}) over {task.source}; annotators {', '.join(task.annotators)}; "
              f"agreement on {agree['sentences']} sentences: F1 exact {f1}, token kappa {kappa}; "
              f"{report['sentences']} settled sentences ({left_out(report)} left out)")
    info = ws.save_corpus(corpus, name, role=role, source=source, overwrite=overwrite, actor=actor)
    con = connect(ws)
    try:
        audit(con, actor, "task imported as corpus", task_id, corpus=name, role=role or "", **report)
    finally:
        con.close()
    return info, {**report, "agreement": agree}
