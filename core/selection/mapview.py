"""What the Map page computes around a map (core.selection.atlas): axis ranges that outliers cannot stretch,
a text search over the points, and the k nearest neighbours of a clicked point by cosine of its sentence
embedding, read from the corpora's cached embeddings (the map was built from them; nothing is re-embedded).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from core.data.workspace import Workspace
from core.errors import UserError

if TYPE_CHECKING:
    from core.selection.atlas import Atlas


def normalised(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def atlas_neighbours(ws: Workspace, atlas: Atlas, point: int, k: int = 10, block: int = 100_000
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(point ids, cosine similarities) of the k sentences on the map closest to `point`, itself excluded,
    best first; the cached embeddings are read a block at a time (a 1M-sentence DC is not loaded)."""
    from core.data.stream import open_corpus_stream
    from core.lm.embed import embed_corpus

    if not 0 <= point < len(atlas):
        raise UserError(f"point {point} is not on this map ({len(atlas):,} points)")
    caches = [(int(c["offset"]), embed_corpus(open_corpus_stream(ws, c["name"]), atlas.model,
                                              pooling=atlas.pooling, workspace=ws))
              for c in atlas.corpora]
    (name, rows, _), = atlas.locate(np.array([point]))
    own = next(v for (_, v), c in zip(caches, atlas.corpora) if c["name"] == name)
    q = normalised(own[int(rows[0])])
    sims = np.empty(len(atlas), dtype=np.float32)
    for offset, vecs in caches:
        for s in range(0, len(vecs), block):
            sims[offset + s:offset + s + min(block, len(vecs) - s)] = normalised(vecs[s:s + block]) @ q
    return top_k(sims, point, k)


def nearest_neighbours(vectors: np.ndarray, point: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(positions, cosine similarities) of the k rows closest to `point`, itself excluded, best first;
    `vectors` are L2-normalised rows."""
    if not 0 <= point < len(vectors):
        raise UserError(f"point {point} is not on this map ({len(vectors)} points)")
    return top_k(np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors[point], dtype=np.float32), point, k)


def top_k(sims: np.ndarray, point: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of `sims` other than `point`, best first (ties by position)."""
    sims = np.array(sims, dtype=np.float32)
    sims[point] = -np.inf
    k = min(k, len(sims) - 1)
    if k <= 0:
        return np.array([], dtype=np.int64), np.array([], dtype=np.float32)
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.lexsort((top, -sims[top]))]
    return top.astype(np.int64), sims[top]


_WORD = re.compile(r"\w+")


def search_words(text: str) -> str:
    """' w1 w2 ... ': a whole sentence's words lowercased, each between spaces, what search matches whole (the map's
    hover text is cut at TEXT_CHARS, and a word matched inside another, 'art' in 'party', is no match)."""
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def search_mask(words: Sequence[str], query: str) -> np.ndarray:
    """Boolean mask of the points whose sentence holds every word of `query` (whole words, case-insensitive, literal:
    what a user types is no regex; punctuation around a word does not count). `words` holds `search_words` of each
    sentence."""
    wanted = [f" {w} " for w in _WORD.findall(query.lower())]
    if not wanted:
        return np.zeros(len(words), dtype=bool)
    return np.array([all(w in t for w in wanted) for t in words], dtype=bool)


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
