"""What the Map page computes around a projection: axis ranges that outliers cannot stretch,
a text search over the points, the k nearest neighbours of a clicked point (cosine, on the
points' own embeddings, saved next to the projection), and the draw order of the groups.

The embeddings are stored as float16 `vectors.npy` beside `points.parquet` (row-aligned), so a
click reads one small file instead of re-embedding or re-opening the corpora.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.data.atomic import temp_path_for
from core.data.workspace import Workspace
from core.errors import UserError

VECTORS = "vectors.npy"
DRAW_ORDER = ("filtered", "selected", "TC")  # later groups are drawn on top: TC stays visible over selected DC


def save_point_vectors(folder: Path, vectors: np.ndarray) -> Path:
    """Write the points' embeddings (float16, L2-normalised) atomically into a projection folder."""
    x = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = (x / np.where(norms > 0, norms, 1.0)).astype(np.float16)
    path = Path(folder) / VECTORS
    tmp = temp_path_for(path)
    with open(tmp, "wb") as fh:
        np.save(fh, x)
    tmp.replace(path)
    return path


def load_point_vectors(ws: Workspace, key: str) -> np.ndarray | None:
    """The projection's point embeddings, or None for a projection saved before they were kept."""
    folder = ws.find_artifact("projection", key)
    if folder is None or not (folder / VECTORS).exists():
        return None
    return np.load(folder / VECTORS, mmap_mode="r")


def nearest_neighbours(vectors: np.ndarray, point: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(positions, cosine similarities) of the k points closest to `point`, itself excluded,
    best first. `vectors` are L2-normalised rows (as saved by save_point_vectors)."""
    n = len(vectors)
    if not 0 <= point < n:
        raise UserError(f"point {point} is not on this map ({n} points)")
    sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors[point], dtype=np.float32)
    sims[point] = -np.inf
    k = min(k, n - 1)
    if k <= 0:
        return np.array([], dtype=np.int64), np.array([], dtype=np.float32)
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.lexsort((top, -sims[top]))]
    return top.astype(np.int64), sims[top]


def nearest_on_map(x: np.ndarray, y: np.ndarray, point: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Fallback for projections without saved embeddings: the k closest points in the 2-D layout
    (positions, distances), closest first. The page says which one it used."""
    d = np.hypot(np.asarray(x) - x[point], np.asarray(y) - y[point])
    d[point] = np.inf
    k = min(k, len(d) - 1)
    top = np.argsort(d, kind="stable")[:k]
    return top.astype(np.int64), d[top]


def search_mask(texts: Sequence[str], query: str) -> np.ndarray:
    """Boolean mask of the points whose sentence contains every word of `query` (case-insensitive,
    literal: no regex surprises from what a user types)."""
    words = [w.lower() for w in query.split() if w.strip()]
    if not words:
        return np.zeros(len(texts), dtype=bool)
    return np.array([all(w in t.lower() for w in words) for t in texts], dtype=bool)


def robust_range(values: np.ndarray, lo_q: float = 0.005, hi_q: float = 0.995, pad: float = 0.05) -> tuple[float, float]:
    """An axis range from quantiles plus a margin, so a few outliers do not squeeze every cluster
    into a corner (the outliers then sit just outside the view; zoom out to see them)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (0.0, 1.0)
    lo, hi = np.quantile(v, [lo_q, hi_q])
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    return float(lo - pad * span), float(hi + pad * span)


def draw_order(groups: Sequence[str], tc_on_top: bool = True) -> list[str]:
    """Group names in the order they are drawn (last on top)."""
    present = list(dict.fromkeys(groups))
    order = [g for g in DRAW_ORDER if g in present] + [g for g in present if g not in DRAW_ORDER]
    if not tc_on_top and "TC" in order:
        order.remove("TC")
        order.insert(0, "TC")
    return order


def numeric_columns(df, exclude: Sequence[str] = ("x", "y", "row", "_pid")) -> list[str]:
    """Columns a map can be coloured by on a continuous scale (score and numeric fields)."""
    import pandas as pd

    return [c for c in df.columns if c not in exclude and pd.api.types.is_numeric_dtype(df[c])
            and not pd.api.types.is_bool_dtype(df[c]) and df[c].notna().any()]
