"""One rule for every job that fine-tunes on a labeled corpus and scores it on DEV or TEST (ner, selftrain,
experiment, compare-sources): one that is the training corpus itself is said, in the job's log, its result's warning
(every job panel shows it) and at the CLI. Named by role, by name or by path, the corpora are compared by content, so
`--train lc --test demo-lc` is caught as well as `--test lc`: a TEST F1 measured on the sentences trained on reads as a
model far better than it is, and a DEV that is the training set picks the epoch that fits it best. A warning, not a
refusal: a smoke run on one toy file is a fair use."""

from __future__ import annotations

from typing import Any

from core.data.stream import open_corpus_stream
from core.data.workspace import Workspace
from core.errors import UserError

TRAIN_FIELDS = ("train", "lc")  # the labeled corpus a kind fine-tunes on
HELD_OUT_FIELDS = ("dev", "test")


def split_warning(ws: Workspace, kind: str, params: Any) -> str | None:
    """What to say when a DEV or TEST setting names the training corpus, else None. A corpus that does not resolve is
    left to the job, which says what is missing in its own words."""
    field = next((f for f in TRAIN_FIELDS if isinstance(getattr(params, f, None), str)), None)
    if field is None:
        return None
    try:
        train = ws.ref(getattr(params, field))
        train_tokens = open_corpus_stream(ws, getattr(params, field)).digest()
    except (UserError, OSError):
        return None
    same = []
    for name in HELD_OUT_FIELDS:
        value = getattr(params, name, None)
        if not isinstance(value, str) or not value:
            continue
        try:  # the tokens' digest, not the file's hash: a workspace corpus and the file it came from are one corpus
            held = open_corpus_stream(ws, value).digest()
        except (UserError, OSError):
            continue
        if held == train_tokens:
            same.append(name.upper())
    if not same:
        return None
    return (f"{' and '.join(same)} hold{'s' * (len(same) == 1)} the same sentences as the training corpus "
            f"{getattr(params, field)!r} ({train.name}): F1 on {' and '.join(same)} is measured on what the model trained "
            "on, far above what it scores on unseen text; give held-out splits")


def with_warning(result: dict[str, Any], warning: str | None) -> dict[str, Any]:
    """`result` with `warning` joined to its own (the one field every panel and the CLI show)."""
    if not warning:
        return result
    return {**result, "warning": "; ".join(w for w in (result.get("warning"), warning) if w)}
