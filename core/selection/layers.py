"""What the Map colours over a saved layout (core.selection.atlas): one code per point and a palette.

A layer is a uint8 code per point, a palette (one colour per code), a draw priority per code (higher
is drawn on top: TC over the selected DC over the filtered rest) and a legend. Categorical layers
(corpus, a saved selection, a corpus field) give each category a code; score layers (a selection's
scores, one scale: percentiles) bin the rank into 255 colours of Viridis, code 0 meaning "no score"
(a TC point under a DC score). Computing one is array work over the points, never a job: switching
the selection on the Map is a redraw. Regions (lasso, box) and search results are point masks here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.data.selection import SelectionMeta
from core.data.stream import open_corpus_stream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.selection.atlas import Atlas

GROUP_COLORS = {"TC": "#d62728", "selected": "#1f77b4", "filtered": "#c7c7c7"}
CATEGORY_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                   "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]
NO_VALUE = "#dddddd"
OTHER_COLOR = "#999999"
MAX_CATEGORIES = len(CATEGORY_COLORS)  # the rest of a field's values share "other"


@dataclass
class Layer:
    name: str
    codes: np.ndarray  # (N,) uint8
    palette: list[str]  # hex colour per code
    priority: list[int]  # draw order per code (0-255): higher on top
    legend: list[dict[str, Any]]  # {"label", "color", "count"} per category, or one {"min", "max", ...} for a scale
    continuous: bool = False

    def counts(self) -> dict[str, int]:
        return {str(e["label"]): int(e["count"]) for e in self.legend if "count" in e}


def _categorical(name: str, codes: np.ndarray, labels: Sequence[str], colors: Sequence[str],
                 priority: Sequence[int] | None = None) -> Layer:
    counts = np.bincount(codes, minlength=len(labels))
    return Layer(name, codes.astype(np.uint8), list(colors), list(priority or range(len(labels))),
                 [{"label": str(lab), "color": c, "count": int(n)} for lab, c, n in zip(labels, colors, counts)])


def corpus_layer(atlas: Atlas) -> Layer:
    names = [c["name"] for c in atlas.corpora]
    n = len(names)
    # the smallest corpus (a TC) on top of a big DC; the colours follow the corpus order
    priority = list(np.argsort(np.argsort([-int(c["sentences"]) for c in atlas.corpora], kind="stable")))
    return _categorical("corpus", atlas.corpus_codes(), names, [CATEGORY_COLORS[i % MAX_CATEGORIES] for i in range(n)],
                        [int(p) for p in priority])


def selection_layer(ws: Workspace, atlas: Atlas, selection: str) -> Layer:
    """Selected and filtered DC of a saved selection, its TC (matched by content, as the DC is), and any other corpus
    on the map (a TEST beside them is no TC)."""
    from core.data.selection_store import load_selection

    sel = load_selection(ws, selection)
    lo, hi = atlas.span(selection_dc(atlas, sel.meta))
    codes = np.full(len(atlas), 3, dtype=np.uint8)  # other corpora
    for c in atlas.corpora:  # a selection saved without its TC's hash (older ones) names it
        if (c.get("digest") == sel.meta.tc_hash) if sel.meta.tc_hash else (c["name"] == sel.meta.tc_name):
            codes[int(c["offset"]):int(c["offset"]) + int(c["sentences"])] = 2
    codes[lo:hi] = 0
    codes[lo + np.asarray(sel.indices, dtype=np.int64)] = 1
    labels = ["filtered", "selected", "TC"] + (["other corpora"] if (codes == 3).any() else [])
    return _categorical(f"selection {sel.meta.strategy} [{sel.key[:8]}]", codes, labels,
                        [GROUP_COLORS["filtered"], GROUP_COLORS["selected"], GROUP_COLORS["TC"], OTHER_COLOR][:len(labels)],
                        [0, 1, 3, 2][:len(labels)])


def selection_percentiles(ws: Workspace, atlas: Atlas, selection: str) -> tuple[np.ndarray, SelectionMeta]:
    """(per point: the selection's rank of the sentence as a percentile, 100 = ranked first, NaN off its DC; its meta)."""
    from core.data.selection_store import load_selection

    sel = load_selection(ws, selection)
    lo, hi = atlas.span(selection_dc(atlas, sel.meta))
    order = np.asarray(sel.order, dtype=np.int64)
    pct = np.empty(len(order), dtype=np.float64)
    pct[order] = 100.0 * (len(order) - 1 - np.arange(len(order))) / max(len(order) - 1, 1)
    values = np.full(len(atlas), np.nan)
    values[lo:hi] = pct
    return values, sel.meta


def selection_score_layer(ws: Workspace, atlas: Atlas, selection: str) -> Layer:
    """The selection's score of every DC sentence as a percentile; other corpora have none."""
    values, meta = selection_percentiles(ws, atlas, selection)
    return score_layer(f"{meta.score_name or meta.strategy} percentile [{meta.key[:8]}]", values)


def score_layer(name: str, values: np.ndarray) -> Layer:
    """A continuous layer: values binned by their range into 255 Viridis colours; NaN is "no value"."""
    from plotly.colors import sample_colorscale

    values = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(values)
    codes = np.zeros(len(values), dtype=np.uint8)
    lo, hi = (float(values[ok].min()), float(values[ok].max())) if ok.any() else (0.0, 1.0)
    if ok.any():
        scaled = (values[ok] - lo) / (hi - lo) if hi > lo else np.full(int(ok.sum()), 0.5)
        codes[ok] = 1 + np.minimum((scaled * 255).astype(np.int64), 254)
    colors = [NO_VALUE, *[_hex(c) for c in sample_colorscale("Viridis", list(np.linspace(0, 1, 255)))]]
    legend = [{"label": name, "min": lo, "max": hi, "colors": colors[1::32] + [colors[-1]]},
              {"label": "no value", "color": NO_VALUE, "count": int((~ok).sum())}]
    return Layer(name, codes, colors, list(range(256)), legend, continuous=True)


def field_values(ws: Workspace, atlas: Atlas, field: str) -> np.ndarray:
    """Per point: the corpus field's value as text (None where its corpus lacks the field or the value is missing),
    every value as it is (the layer folds the rare ones into "other"; an export keeps them)."""
    values = np.full(len(atlas), None, dtype=object)
    for c in atlas.corpora:
        stream = open_corpus_stream(ws, c["name"])
        if field not in stream.fields:
            continue
        col = [v for b in stream.arrow_batches(columns=[field]) for v in b.column(0).to_pylist()]
        values[int(c["offset"]):int(c["offset"]) + len(col)] = [None if v is None else str(v) for v in col]
    return values


def field_layer(ws: Workspace, atlas: Atlas, field: str) -> Layer:
    """A corpus field (e.g. DC's `domain`) as categories: the most frequent values, the rest "other",
    points of corpora without the field "(none)"."""
    import pandas as pd

    values = field_values(ws, atlas, field)
    series = pd.Series(values)
    top = series.dropna().value_counts().index[:MAX_CATEGORIES - 1].tolist()
    if not top:
        raise UserError(f"no corpus on this map has the field {field!r}")
    labels = ["(none)", *top] + (["other"] if series.dropna().nunique() > len(top) else [])
    index = {v: i + 1 for i, v in enumerate(top)}
    codes = np.array([0 if v is None else index.get(v, len(top) + 1) for v in values], dtype=np.uint8)
    colors = [NO_VALUE, *CATEGORY_COLORS[:len(top)]] + ([OTHER_COLOR] if "other" in labels else [])
    return _categorical(field, codes, labels, colors, list(range(len(labels))))


PREDICTION_MEASURES = {"entities": "predicted entities", "c1": "c1 (confidence of the decoded sentence)"}


def prediction_layer(ws: Workspace, atlas: Atlas, model: str, measure: str = "entities") -> Layer:
    """A fine-tuned NER model's predictions over the map: entities found per sentence (where the model finds the
    entity-rich sentences) or its confidence c1, for every corpus whose predictions with this model are cached
    (Inspect or a "predict" job made them); other points have no value."""
    return score_layer(f"{PREDICTION_MEASURES[measure]} · {Path(model).name}", prediction_values(ws, atlas, model, measure))


def prediction_values(ws: Workspace, atlas: Atlas, model: str, measure: str = "entities") -> np.ndarray:
    """Per point: the measure from the model's cached predictions of its corpus, NaN where none are cached."""
    import json

    from core.review.predictions import prediction_request

    if measure not in PREDICTION_MEASURES:
        raise UserError(f"unknown prediction measure {measure!r}: expected one of {', '.join(PREDICTION_MEASURES)}")
    key = "n_entities" if measure == "entities" else "c1"
    values = np.full(len(atlas), np.nan)
    found = []
    for c in atlas.corpora:
        req = prediction_request(ws, model, c["name"])
        if not req.done:
            continue
        offset, n = int(c["offset"]), int(c["sentences"])
        with open(req.predictions_path, encoding="utf-8") as fh:  # line by line: a DC's predictions are never all held
            for i, line in enumerate(fh):
                if i >= n:
                    raise UserError(f"cached predictions in {req.folder} have more rows than {c['name']!r}: delete "
                                    "that folder and predict again")
                values[offset + i] = float(json.loads(line)[key])
        found.append(c["name"])
    if not found:
        raise UserError(f"no predictions of {model} are cached for {', '.join(c['name'] for c in atlas.corpora)}: "
                        "predict a corpus with this model on Inspect first, or `python -m core ner predict --model "
                        "MODEL CORPUS` (both keep the predictions the Map reads)")
    return values


def predicted_models(ws: Workspace, atlas: Atlas) -> list[str]:
    """NER model folders with cached predictions for at least one corpus on the map (newest first)."""
    from core.review.predictions import list_ner_models, prediction_request

    out = []
    for model in list_ner_models(ws):
        try:
            if any(prediction_request(ws, str(model), c["name"]).done for c in atlas.corpora):
                out.append(str(model))
        except UserError:
            continue
    return out


def colour_layer(ws: Workspace, atlas: Atlas, colour: str, key: str | None = None) -> Layer:
    """The layer the Map's "Colour by" names: "selection" / "selection score" (of saved selection `key`), "corpus",
    "field: NAME", or "predictions: MEASURE" (of NER model `key`); the page and `project` colour through here."""
    if colour in ("selection", "selection score"):
        if not key:
            raise UserError(f"colour by {colour} needs a saved selection")
        return selection_layer(ws, atlas, key) if colour == "selection" else selection_score_layer(ws, atlas, key)
    if colour.startswith("field: "):
        return field_layer(ws, atlas, colour.removeprefix("field: "))
    if colour.startswith("predictions: "):
        if not key:
            raise UserError("colour by predictions needs an NER model")
        return prediction_layer(ws, atlas, key, colour.removeprefix("predictions: "))
    if colour == "corpus":
        return corpus_layer(atlas)
    raise UserError(f"unknown colouring {colour!r}: selection, selection score, corpus, field: NAME or predictions: "
                    f"{' or '.join(PREDICTION_MEASURES)}")


def layer_stamp(ws: Workspace, atlas: Atlas, model: str | None = None) -> str:
    """What a layer of this map reads besides the map itself, as one string for a cache key: the corpora's names and
    contents (a map is found by tokens alone, so a re-import with corrected fields keeps the map and changes a field
    layer), and, for a model's predictions, which corpora's are cached now (another predicted later, or the model
    retrained in place, changes them)."""
    from core.review.predictions import prediction_request

    parts = []
    for c in atlas.corpora:
        name = str(c["name"])
        parts.append(f"{name}={ws.corpus_info(name).hash if ws.has_corpus(name) else c['digest']}")
        if model:
            try:
                req = prediction_request(ws, model, name) if ws.has_corpus(name) else None
            except UserError:
                req = None
            parts.append(f"{req.key}:{req.done}" if req is not None else "-")
    return content_hash("layer-inputs", parts)


def map_fields(ws: Workspace, atlas: Atlas) -> list[str]:
    """Fields some corpus on the map carries (candidate categorical layers)."""
    out: list[str] = []
    for c in atlas.corpora:
        for f in open_corpus_stream(ws, c["name"]).fields:
            if f not in out and f not in ("text", "id"):
                out.append(f)
    return out


def selection_dc(atlas: Atlas, meta: SelectionMeta) -> str:
    """The corpus on the map a selection was made on, matched by content hash (a selection may name its DC by a
    role or a file, and a corpus may have changed since under the same name)."""
    for c in atlas.corpora:
        if meta.dc_hash and c.get("digest") == meta.dc_hash and int(c["sentences"]) == int(meta.dc_size or -1):
            return str(c["name"])
    raise UserError(f"selection {meta.key[:8]} was made on a DC ({meta.dc_name!r}, "
                    f"{int(meta.dc_size or 0):,} sentences) that is not on this map "
                    f"({', '.join(c['name'] for c in atlas.corpora)}), or that corpus changed since: map its TC and DC")


def selection_matches(atlas: Atlas, meta: SelectionMeta) -> bool:
    try:
        selection_dc(atlas, meta)
        return True
    except (UserError, KeyError, TypeError, ValueError):
        return False


def _hex(color: str) -> str:
    """'rgb(r, g, b)' (plotly's sample_colorscale) -> '#rrggbb'."""
    if color.startswith("#"):
        return color
    r, g, b = (int(float(v)) for v in color[color.index("(") + 1:color.index(")")].split(",")[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


# --------------------------------------------------------------------------- regions and search


def points_in_polygon(xy: np.ndarray, polygon: Sequence[Sequence[float]]) -> np.ndarray:
    """Boolean mask of the points inside a polygon (even-odd rule; a box is its four corners).
    Written with numpy (one pass per edge over the points in the polygon's bounding box) because the
    same test runs in the browser on the same vertices: a lasso there and here choose the same points."""
    if any(np.ndim(corner) != 1 or len(corner) != 2 for corner in polygon):  # before numpy: ragged corners, or
        # plain numbers, make no (n, 2) array
        raise UserError(f"a region needs at least 3 corners as (x, y) pairs, got {list(polygon)!r}")
    poly = np.asarray(polygon, dtype=np.float64)
    if poly.ndim != 2 or poly.shape[1] != 2 or len(poly) < 3:
        raise UserError(f"a region needs at least 3 corners as (x, y) pairs, got {len(poly)}")
    xy = np.asarray(xy, dtype=np.float64)
    (x0, y0), (x1, y1) = poly.min(axis=0), poly.max(axis=0)
    cand = np.flatnonzero((xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1))
    px, py = xy[cand, 0], xy[cand, 1]
    inside = np.zeros(len(cand), dtype=bool)
    for (ax, ay), (bx, by) in zip(poly, np.roll(poly, -1, axis=0)):
        crosses = (ay > py) != (by > py)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = (bx - ax) * (py - ay) / (by - ay) + ax
        inside ^= crosses & (px < at)
    mask = np.zeros(len(xy), dtype=bool)
    mask[cand[inside]] = True
    return mask


def search_points(atlas: Atlas, query: str) -> np.ndarray:
    """Mask of the points whose sentence holds every word of `query` (whole words, case-insensitive, literal)."""
    from core.selection.mapview import search_mask

    return search_mask(atlas.search_words(), query)


# --------------------------------------------------------------------------- what the browser gets

TEXT_CAP = 150_000  # above this many points hover shows corpus and row (a click reads the sentence): texts stay on the server


def view_data(atlas: Atlas, layer: Layer, highlight: np.ndarray | None = None, text_cap: int = TEXT_CAP) -> dict[str, Any]:
    """The Map component's data: the layout (x, y float32: 8 bytes a point, sent as Arrow), the layer's
    codes (1 byte a point), the highlight mask, the texts when the map is small enough, and the meta the
    drawing needs (robust bounds, palette, priorities, legend, cluster labels, corpus offsets)."""
    import pandas as pd

    from core.selection.mapview import robust_range

    x0, x1 = robust_range(atlas.xy[:, 0])
    y0, y1 = robust_range(atlas.xy[:, 1])
    data: dict[str, Any] = {
        "xy": pd.DataFrame({"x": atlas.xy[:, 0], "y": atlas.xy[:, 1]}),
        "layer": pd.DataFrame({"c": layer.codes}),
        "hl": pd.DataFrame({"h": np.asarray(highlight, dtype=np.uint8)}) if highlight is not None and highlight.any() else None,
        "text": pd.DataFrame({"text": atlas.texts()}) if len(atlas) <= text_cap else None,
        "meta": {"key": atlas.key, "bounds": [x0, x1, y0, y1], "palette": layer.palette, "priority": layer.priority,
                 "legend": layer.legend, "layer_name": layer.name, "clusters": atlas.clusters,
                 "corpora": [{"name": c["name"], "offset": int(c["offset"]), "sentences": int(c["sentences"])}
                             for c in atlas.corpora],
                 "note": "" if len(atlas) <= text_cap else "hover shows corpus and row; click a point to read it"},
    }
    return data
