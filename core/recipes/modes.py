"""MLM recipes by name: which phases run, in order, and which corpora each reads. MLM training, lineage and
experiments all read this one table, so a recipe and the record of what it read cannot drift apart.

>>> phases_of("tapt+dapt")
[('dapt', ('dc',)), ('tapt', ('tc',))]
"""

from __future__ import annotations

from core.errors import UserError

# mode -> [(phase name, corpora it reads)]; "sc" is a saved selection, mixed 1:1 with TC (the seed paper's TC+SC).
MODE_PHASES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "tc+sc": [("tc+sc", ("tc", "sc"))],
    "tapt": [("tapt", ("tc",))],  # task-adaptive pretraining (Gururangan et al. 2020)
    "dapt": [("dapt", ("dc",))],  # domain-adaptive pretraining
    "tapt+dapt": [("dapt", ("dc",)), ("tapt", ("tc",))],
}
MODES = tuple(MODE_PHASES)


def phases_of(mode: str) -> list[tuple[str, tuple[str, ...]]]:
    if mode not in MODE_PHASES:
        raise UserError(f"unknown MLM mode {mode!r}: expected one of {', '.join(MODES)}")
    return MODE_PHASES[mode]


def mode_reads(mode: str) -> set[str]:
    """The corpora a mode's phases read ('tc', 'sc', 'dc'): only these are resolved (dapt needs no TC)."""
    return {k for _, reads in phases_of(mode) for k in reads}
