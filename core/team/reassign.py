"""Handing an annotator's unanswered items to another: the way out for items stranded with someone who left or was
disabled (their overlap items never settled, and only `task adjudicate` one by one could settle them)."""

from __future__ import annotations

import json

from core.access import Actor, Role, require
from core.data.annotation_db import transaction
from core.data.workspace import Workspace
from core.errors import UserError
from core.team.db import audit
from core.team.tasks import get_task
from core.team.users import get_user, name_key


def reassign(ws: Workspace, actor: Actor, task_id: str, from_user: str, to_user: str) -> dict[str, int]:
    """Move `from_user`'s items of the task that they have neither answered nor skipped to `to_user` (an enabled
    annotator or researcher). An item `to_user` already has (an overlap item) stays: one person never reviews a
    sentence twice. Returns {"moved", "kept"}; audited."""
    require(actor, "manage review tasks")
    task = get_task(ws, task_id)
    # names as stored: typed 'ANN' made a second annotator "ANN" next to ann (names are compared without case)
    from_user = next((a for a in task.annotators if name_key(a) == name_key(from_user)), from_user)
    if from_user not in task.annotators:
        raise UserError(f"{from_user!r} is not an annotator of task {task_id} ({', '.join(task.annotators)})")
    target = get_user(ws, to_user)
    to_user = target.name
    if to_user == from_user:
        raise UserError("give another user to hand the items to")
    if target.disabled:
        raise UserError(f"{to_user!r} is disabled: enable the account first, or choose another user")
    if target.role not in (Role.ANNOTATOR, Role.RESEARCHER, Role.ADMIN):
        raise UserError(f"{to_user!r} cannot review")
    with transaction(ws) as con:
        open_items = [r[0] for r in con.execute(
            "SELECT s.idx FROM assignments s LEFT JOIN annotations a ON a.task_id = s.task_id AND a.idx = s.idx "
            "AND a.annotator = s.annotator WHERE s.task_id = ? AND s.annotator = ? AND a.idx IS NULL",
            (task_id, from_user))]
        theirs = {r[0] for r in con.execute("SELECT idx FROM assignments WHERE task_id = ? AND annotator = ?",
                                            (task_id, to_user))}
        moved = [i for i in open_items if i not in theirs]
        con.executemany("UPDATE assignments SET annotator = ? WHERE task_id = ? AND idx = ? AND annotator = ?",
                        [(to_user, task_id, i, from_user) for i in moved])
        # read again inside the write lock: two hand-overs at once each added their user to an older list
        annotators = json.loads(con.execute("SELECT annotators FROM tasks WHERE id = ?", (task_id,)).fetchone()[0])
        if moved and to_user not in annotators:
            con.execute("UPDATE tasks SET annotators = ? WHERE id = ?", (json.dumps([*annotators, to_user]), task_id))
        audit(con, actor, "task items reassigned", task_id, from_user=from_user, to_user=to_user, moved=len(moved),
              kept=len(open_items) - len(moved))
    return {"moved": len(moved), "kept": len(open_items) - len(moved)}
