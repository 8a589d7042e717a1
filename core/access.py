"""Who may change what: roles, the acting user, and the one check every state-changing core function makes.

The check lives here, in core, where state changes, so a page that forgets to hide a button, a crafted
request or a script calling core directly is refused all the same. The CLI and the single-user app on
loopback act as `LOCAL`, the machine's owner (an admin): whoever can run `python -m core` on the server
already owns its files.

>>> require(Actor("ann", Role.ANNOTATOR), "review")
>>> require(Actor("ann", Role.ANNOTATOR), "submit a job")
Traceback (most recent call last):
...
core.access.AccessDenied: ann (annotator) may not submit a job: that needs the admin or researcher role
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

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

    def __str__(self) -> str:
        return f"{self.name} ({self.role.value})"


LOCAL = Actor("local", Role.ADMIN)  # CLI and the single-user app on loopback

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


def require(actor: Actor, action: str) -> None:
    """Raise AccessDenied unless `actor`'s role may do `action` (a key of PERMISSIONS)."""
    allowed = PERMISSIONS[action]
    if actor.role not in allowed:
        names = " or ".join(r.value for r in Role if r in allowed)
        raise AccessDenied(f"{actor} may not {action}: that needs the {names} role")
