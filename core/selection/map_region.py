"""A region of the Map (lasso, box or search result) saved as a selection or as a corpus, with lineage:
both record the map, how the region was drawn and how many of its points they kept."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.access import LOCAL, Actor, require
from core.data.corpus import Corpus
from core.data.selection import Selection, SelectionMeta
from core.data.stream import open_corpus_stream
from core.data.workspace import CorpusInfo, Workspace, content_hash, valid_name
from core.errors import UserError
from core.selection.atlas import Atlas
from core.selection.layers import points_in_polygon, search_points


@dataclass(frozen=True)
class Region:
    """How a choice on the Map was made: a drawn polygon (the page's lasso or box, the CLI's `project --region`) or a
    text search (`project --search`). Both the page and the CLI turn it into the chosen points here, and a saved
    selection's or corpus's lineage records it."""

    mode: str | None = None  # "lasso", "box" (the page), "polygon" (the CLI)
    polygon: list[list[float]] | None = None  # corners in map coordinates
    query: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Region:
        polygon = data["polygon"] if "polygon" in data else None
        return cls(mode=data["mode"] if "mode" in data else None, query=data["query"] if "query" in data else None,
                   polygon=[[float(v) for v in corner] for corner in polygon] if polygon is not None else None)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("mode", self.mode), ("polygon", self.polygon), ("query", self.query)) if v is not None}

    def mask(self, atlas: Atlas) -> np.ndarray:
        """The map's points inside the polygon or matching the search."""
        if self.polygon is not None:
            return points_in_polygon(atlas.xy, self.polygon)
        return search_points(atlas, self.query or "")

    def describe(self) -> str:
        if self.query:
            return f"search “{self.query}”"
        if self.polygon is not None:
            return f"{self.mode or 'lasso'} of {len(self.polygon)} corners"
        return "region"

    @property
    def short(self) -> str:
        """'search “x”' or the drawing mode: the page's heading of the chosen sentences."""
        return f"search “{self.query}”" if self.query else self.mode or "region"


@dataclass
class MapChoice:
    """What the reader chose on one map, kept across reruns: a pinned point, and a drawn region or a search (one at
    a time: a new region replaces the search and back). The browser reports each as an event (`take`)."""

    pinned: int | None = None
    region: Region | None = None
    query: str = ""

    def take(self, name: str, value: Any, map_key: str) -> None:
        """One browser event ("pinned", "region" or "query"); a region drawn on another map is ignored."""
        if name == "pinned":
            self.pinned = None if value is None else int(value)
        elif name == "region":
            if isinstance(value, dict) and value.get("map") == map_key and value.get("polygon") is not None:
                try:
                    region = Region.from_dict(value)
                except (TypeError, ValueError, KeyError):
                    return  # a malformed event (another client, a future one): the choice stays as it was
                corners = region.polygon or []
                if len(corners) >= 3 and all(len(c) == 2 and all(np.isfinite(c)) for c in corners):
                    self.region, self.query = region, ""  # fewer corners failed every rerun, Clear never drawn
        elif name == "query":
            self.query, self.region = str(value or ""), None

    def clear(self) -> None:
        self.region, self.query = None, ""

    @property
    def active(self) -> Region | None:
        """The region or search that decides the chosen points, if any."""
        if self.region is not None:
            return self.region
        return Region(query=self.query.strip()) if self.query.strip() else None


def region_rows(atlas: Atlas, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Rows of each corpus inside the region, in corpus order."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (len(atlas),):
        raise UserError(f"the region mask has {mask.shape[0]:,} entries for a map of {len(atlas):,} points")
    return {name: rows for name, rows, _ in atlas.locate(np.flatnonzero(mask))}


def save_region_selection(ws: Workspace, atlas: Atlas, mask: np.ndarray, dc: str, how: Region,
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
    lineage = {"atlas": atlas.key, "region": how.to_dict(), "points_in_region": int(np.asarray(mask).sum()),
               "corpora": [c["name"] for c in atlas.corpora]}
    key = content_hash("map-region", atlas.key, dc, stream.digest(), np.asarray(rows).tobytes())
    meta = SelectionMeta(
        strategy="map-region", budget_requested=int(len(rows)), budget=int(len(rows)), dc_size=n,
        tc_size=sum(int(c["sentences"]) for c in atlas.corpora if c["name"] != dc), model=atlas.model, seed=0,
        dc_hash=stream.digest(), tc_name=others[0] if others else None, dc_name=dc, score_name="in the map region",
        notes=[f"{len(rows):,} sentences of {dc} chosen on the map ({how.describe()})"], lineage=lineage,
        created=time.time(), created_by=actor.name)
    sel = Selection(strategy="map-region", indices=np.asarray(rows, dtype=np.int64), scores=scores, order=order, meta=meta,
                    key=key, source=stream)
    save_selection(ws, sel)
    return sel


def _kind(value: object) -> str:
    """A field value's kind as one Parquet column can hold it: ints and floats are one (numbers), a bool is not."""
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def shared_fields(parts: list[Corpus], name: str) -> list[Corpus]:
    """The parts with only the fields they all have; a field whose parts give it different kinds (ids as numbers in
    one corpus, as text in another) kept as text, since one Parquet column holds one type.

    >>> a, b = Corpus(tokens=[["x"]], fields={"id": [3], "w": [1]}), Corpus(tokens=[["y"]], fields={"id": ["b0"], "w": [0.5]})
    >>> [p.fields for p in shared_fields([a, b], "r")]
    [{'id': ['3'], 'w': [1]}, {'id': ['b0'], 'w': [0.5]}]
    """
    shared = set.intersection(*(set(p.fields) for p in parts))
    as_text = {f for f in shared if len({_kind(v) for p in parts for v in p.fields[f] if v is not None}) > 1}
    return [Corpus(tokens=p.tokens, name=name, fields={
        f: [None if v is None else str(v) for v in values] if f in as_text else values
        for f, values in p.fields.items() if f in shared}) for p in parts]


def save_region_corpus(ws: Workspace, atlas: Atlas, mask: np.ndarray, name: str, how: Region,
                       actor: Actor = LOCAL) -> CorpusInfo:
    """Every sentence in the region (of every corpus on the map, with the fields they share: `shared_fields`) as a
    new corpus."""
    require(actor, "import a corpus")
    name = valid_name(name)
    if ws.has_corpus(name):
        raise UserError(f"a corpus named {name!r} exists already: choose another name")
    parts = []
    for corpus, rows in region_rows(atlas, mask).items():
        parts.append(open_corpus_stream(ws, corpus).take(rows))
    if not parts:
        raise UserError("the region holds no sentence: draw it over some points")
    corpus = Corpus.concat(shared_fields(parts, name), name=name)
    source = f"map region of {atlas.key[:8]} ({how.describe()}; {len(corpus):,} sentences of " + \
        ", ".join(f"{c}" for c in region_rows(atlas, mask)) + ")"
    return ws.save_corpus(corpus, name, source=source, actor=actor)

