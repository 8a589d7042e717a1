"""Comparing selections and reading one: overlap between selections, the top and bottom of a ranking, and the
score histogram split into selected and filtered."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.data.corpus import Corpus
from core.data.selection import Selection, finite_or_none
from core.data.selection_store import selection_dc
from core.data.stream import CorpusStream
from core.data.workspace import Workspace
from core.errors import UserError


def overlap_matrix(selections: Sequence[Selection], labels: Sequence[str] | None = None):
    """Pairwise Jaccard overlap of selected DC indices (NaN between selections of different DCs)."""
    import pandas as pd

    labels = list(labels or [f"{s.strategy} [{(s.key or '')[:6]}]" for s in selections])
    sets = [set(s.indices.tolist()) for s in selections]
    m = np.full((len(sets), len(sets)), np.nan)
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            if selections[i].meta.dc_hash == selections[j].meta.dc_hash:
                m[i, j] = len(a & b) / max(1, len(a | b))
    return pd.DataFrame(m, index=labels, columns=labels)


def ranking_table(sel: Selection, dc: Corpus | None = None, head: int = 20, tail: int = 20, workspace: Workspace | None = None):
    """Top and bottom of the full ranking. The bottom's texts need DC: pass it, or a workspace
    holding the selection's DC by name (only the shown rows are read, as Arrow, not the whole corpus). Without DC (a
    file, or a DC re-imported since), the selected rows show their saved texts and the frame's attrs["note"] says why
    the others have none (the table went blank, unexplained)."""
    import itertools

    import pandas as pd

    n = len(sel.order)
    picks = list(range(min(head, n))) + list(range(max(min(head, n), n - tail), n))
    idx = [int(sel.order[r]) for r in picks]
    rows_corpus, note = None, ""
    if dc is not None:
        rows_corpus = dc.subset(idx)
    elif workspace is not None:
        rows_corpus, note = _dc_rows(workspace, sel, idx)
    saved: list[str] = []
    if rows_corpus is None:  # the selected rows' own texts, from selected.jsonl (the first few only)
        shown = min(sel.budget, head)
        saved = [" ".join(r["tokens"]) if "tokens" in r else str(r.get("text", ""))
                 for r in itertools.islice(sel.records(), shown)] if shown else []
    keys = None
    if sel.meta.extra.get("sampling") == "gumbel":  # the order sorts on score + Gumbel noise: show it
        from core.lm.dsir import gumbel_keys

        keys = gumbel_keys(sel.scores, int(sel.meta.seed or 0))
    rows = []
    for j, (r, i) in enumerate(zip(picks, idx)):
        text = " ".join(rows_corpus.tokens[j]) if rows_corpus is not None else saved[r] if r < len(saved) else ""
        row = {"rank": r + 1, "dc_index": i, "score": finite_or_none(sel.scores[i]), "selected": r < sel.budget,
               "text": text}
        if keys is not None:
            row["sampled_key"] = float(keys[i])
        if rows_corpus is not None:
            row.update({k: v[j] for k, v in rows_corpus.fields.items() if k != "id"})
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs["note"] = note
    return frame


def _dc_rows(ws: Workspace, sel: Selection, idx: list[int]) -> tuple[Corpus | None, str]:
    """(DC's rows at `idx` with every field, ""), when the selection's DC is a workspace corpus still holding the
    sentences it was made on (core.data.selection_store.selection_dc); else (None, why: the table then shows the
    selected rows' saved texts)."""
    try:
        name = selection_dc(ws, sel.meta)
    except UserError as exc:
        return None, f"Only the selected sentences' saved texts are shown: {exc}"
    if not ws.has_corpus(name):  # a DC given as a file: the table shows the saved texts
        return None, f"Only the selected sentences' saved texts are shown: the DC {name!r} is a file, not a workspace corpus."
    return CorpusStream.from_workspace(ws, name).take(idx), ""  # only the row groups holding these rows


def score_histogram(sel: Selection, bins: int = 60):
    """Counts of scores per bin, split into selected and filtered: a few hundred rows for the
    browser instead of one per DC sentence."""
    import pandas as pd

    scores = np.asarray(sel.scores, dtype=np.float64)
    finite = np.isfinite(scores)
    if not finite.any():
        return pd.DataFrame(columns=["score", "count", "part"])
    edges = np.histogram_bin_edges(scores[finite], bins=bins)
    mask = np.zeros(len(scores), dtype=bool)
    mask[sel.indices] = True
    frames = []
    for part, m in (("selected", mask), ("filtered", ~mask)):
        counts, _ = np.histogram(scores[m & finite], bins=edges)
        frames.append(pd.DataFrame({"score": (edges[:-1] + edges[1:]) / 2, "count": counts, "part": part}))
    return pd.concat(frames, ignore_index=True)
