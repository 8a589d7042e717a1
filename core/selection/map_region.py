"""A region of the Map (lasso, box or search result) saved as a selection or as a corpus, with lineage:
both record the map, how the region was drawn and how many of its points they kept."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from core.access import LOCAL, Actor, require
from core.data.corpus import Corpus
from core.data.selection import Selection, SelectionMeta
from core.data.stream import open_corpus_stream
from core.data.workspace import CorpusInfo, Workspace, content_hash, valid_name
from core.errors import UserError
from core.selection.atlas import Atlas


def region_rows(atlas: Atlas, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Rows of each corpus inside the region, in corpus order."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (len(atlas),):
        raise UserError(f"the region mask has {mask.shape[0]:,} entries for a map of {len(atlas):,} points")
    return {name: rows for name, rows, _ in atlas.locate(np.flatnonzero(mask))}


def save_region_selection(ws: Workspace, atlas: Atlas, mask: np.ndarray, dc: str, how: dict[str, Any],
                          actor: Actor = LOCAL) -> Selection:
    """The region's sentences of `dc` as a saved selection (strategy "map-region", scored 1 inside,
    0 outside), listed with every other selection. Points of other corpora in the region are not
    part of it (a selection chooses DC rows); `how` says how the region was drawn (lineage)."""
    from core.data.selection_store import save_selection

    require(actor, "submit a job")
    dc = ws.ref(dc).name  # a role (dc) or a name, as everywhere
    rows = region_rows(atlas, mask).get(dc)
    if rows is None or len(rows) == 0:
        raise UserError(f"the region holds no sentence of {dc!r}: draw it over that corpus's points")
    stream = open_corpus_stream(ws, dc)
    n = len(stream)
    lo, hi = atlas.span(dc)
    if hi - lo != n:
        raise UserError(f"{dc!r} has {n:,} sentences, the map shows {hi - lo:,}: it changed since; recompute the map")
    scores = np.zeros(n, dtype=np.float32)
    scores[rows] = 1.0
    order = np.concatenate([rows, np.flatnonzero(scores == 0)]).astype(np.int64)
    others = [c["name"] for c in atlas.corpora if c["name"] != dc]
    lineage = {"atlas": atlas.key, "region": how, "points_in_region": int(np.asarray(mask).sum()),
               "corpora": [c["name"] for c in atlas.corpora]}
    key = content_hash("map-region", atlas.key, dc, stream.digest(), np.asarray(rows).tobytes())
    meta = SelectionMeta(
        strategy="map-region", budget_requested=int(len(rows)), budget=int(len(rows)), dc_size=n,
        tc_size=sum(int(c["sentences"]) for c in atlas.corpora if c["name"] != dc), model=atlas.meta.get("model"), seed=0,
        dc_hash=stream.digest(), tc_name=others[0] if others else None, dc_name=dc, score_name="in the map region",
        notes=[f"{len(rows):,} sentences of {dc} chosen on the map ({_describe(how)})"], lineage=lineage,
        created=time.time(), created_by=actor.name)
    sel = Selection(strategy="map-region", indices=np.asarray(rows, dtype=np.int64), scores=scores, order=order, meta=meta,
                    key=key, source=stream)
    save_selection(ws, sel)
    return sel


def save_region_corpus(ws: Workspace, atlas: Atlas, mask: np.ndarray, name: str, how: dict[str, Any],
                       actor: Actor = LOCAL) -> CorpusInfo:
    """Every sentence in the region (of every corpus on the map, with the fields they share) as a new corpus."""
    require(actor, "import a corpus")
    name = valid_name(name)
    if ws.has_corpus(name):
        raise UserError(f"a corpus named {name!r} exists already: choose another name")
    parts = []
    for corpus, rows in region_rows(atlas, mask).items():
        parts.append(open_corpus_stream(ws, corpus).take(rows))
    if not parts:
        raise UserError("the region holds no sentence: draw it over some points")
    shared = set.intersection(*(set(p.fields) for p in parts))
    parts = [Corpus(tokens=p.tokens, fields={f: v for f, v in p.fields.items() if f in shared}, name=name)
             for p in parts]
    corpus = Corpus.concat(parts, name=name)
    source = f"map region of {atlas.key[:8]} ({_describe(how)}; {len(corpus):,} sentences of " + \
        ", ".join(f"{c}" for c in region_rows(atlas, mask)) + ")"
    return ws.save_corpus(corpus, name, source=source, actor=actor)


def _describe(how: dict[str, Any]) -> str:
    if how.get("query"):
        return f"search “{how['query']}”"
    if how.get("polygon") is not None:
        return f"{how.get('mode', 'lasso')} of {len(how['polygon'])} corners"
    return "region"
