"""Honest outputs: a run whose F1 is near 0 says so and why, instead of reporting 0.0 in silence.

The reasons checked are the ones seen in practice: the training data has no entity labels, DEV
(or TEST) uses entity types the training data never shows, or the run was far too short for the
data (a `tiny` preset meant for tests, a step cap).
"""

from __future__ import annotations

from typing import Any

from core.recipes.presets import PLUMBING_PRESETS, TRAINING_PRESETS

NEAR_ZERO_F1 = 0.05  # below this a NER model has learned (almost) nothing
MIN_STEPS = 100  # fewer optimisation steps than this rarely get a fresh CRF head off the ground


def _types(corpus: Any) -> set[str]:
    out: set[str] = set()
    for tags in corpus.tags or []:
        out.update(t.split("-", 1)[1] for t in tags if t != "O" and "-" in t)
    return out


def weak_f1_reason(f1: float | None, train: Any, dev: Any = None, *, steps: int | None = None,
                   preset: str | None = None, what: str = "NER model") -> str | None:
    """None when `f1` is fine (or unknown); else one sentence: the F1, the likely cause, what to do."""
    if f1 is None or f1 >= NEAR_ZERO_F1:
        return None
    reasons = []
    train_types = _types(train)
    if not train_types:
        reasons.append(f"the training data ({len(train)} sentences) has no entity labels at all: check its tag column")
    elif dev is not None and dev.tags:
        unseen = _types(dev) - train_types
        if unseen:
            reasons.append(f"the evaluation data has entity types the training data never shows ({', '.join(sorted(unseen)[:5])})")
    better = " or ".join(f"`{p}`" for p in TRAINING_PRESETS)
    if steps is not None and steps < MIN_STEPS:
        reasons.append(f"it trained for only {steps} steps" + (f" (preset {preset!r})" if preset else "")
                       + f": use the {better} preset, or more epochs")
    elif preset in PLUMBING_PRESETS:
        reasons.append(f"the `{preset}` preset only checks that training runs: use {better}")
    if not reasons:
        reasons.append("the model predicts (almost) no correct entities: train longer (more epochs), "
                       "or check that LC and DEV use the same tag scheme")
    return f"the {what} scores F1 {f1:.3f}, near 0: " + "; ".join(reasons) + "."
