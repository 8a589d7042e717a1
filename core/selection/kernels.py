"""Chunked cosine kernels over (possibly memory-mapped float16) embeddings: memory stays at one chunk of
rows times the queries, whatever the size of DC."""

from __future__ import annotations

import numpy as np


def normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _chunk_rows(n_queries: int, budget_floats: int = 1 << 24) -> int:
    # the (Q, rows) similarity block stays ~64 MB and the float32 copy of the rows ~100 MB at 384 dims
    return max(1024, min(1 << 16, budget_floats // max(1, n_queries)))


def cosine_to_vector(emb: np.ndarray, vector: np.ndarray, chunk_rows: int = 1 << 16) -> np.ndarray:
    """Cosine of every row of `emb` (float16 memmap ok) to one vector, chunk by chunk."""
    v = normalize_rows(vector).ravel()
    out = np.empty(len(emb), dtype=np.float32)
    for start in range(0, len(emb), chunk_rows):
        out[start:start + chunk_rows] = normalize_rows(emb[start:start + chunk_rows]) @ v
    return out


def topk_cosine(emb: np.ndarray, queries: np.ndarray, k: int, chunk_rows: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each query its k most similar rows of `emb`, by chunked matrix products.

    Returns (indices (Q, k), similarities (Q, k), best similarity per row (N,)); rows of
    each query sorted by similarity, then index. Memory: one (Q, chunk) block plus (Q, k).
    """
    q = normalize_rows(queries)  # (Q, D)
    n = len(emb)
    k = min(k, n)
    chunk_rows = chunk_rows or _chunk_rows(len(q))
    best_idx = np.zeros((len(q), 0), dtype=np.int64)
    best_sim = np.zeros((len(q), 0), dtype=np.float32)
    row_max = np.empty(n, dtype=np.float32)
    for start in range(0, n, chunk_rows):
        block = normalize_rows(emb[start:start + chunk_rows])  # (C, D)
        sims = q @ block.T  # (Q, C)
        row_max[start:start + len(block)] = sims.max(axis=0)
        cand_sim = np.concatenate([best_sim, sims], axis=1)
        cand_idx = np.concatenate([best_idx, np.broadcast_to(np.arange(start, start + len(block)), sims.shape)], axis=1)
        if cand_sim.shape[1] > k:
            part = best_k_in_order(cand_sim, k)
            cand_sim = np.take_along_axis(cand_sim, part, 1)
            cand_idx = np.take_along_axis(cand_idx, part, 1)
        best_sim, best_idx = cand_sim, cand_idx
    order = np.lexsort((best_idx, -best_sim), axis=1)
    return np.take_along_axis(best_idx, order, 1), np.take_along_axis(best_sim, order, 1), row_max


def best_k_in_order(sims: np.ndarray, k: int) -> np.ndarray:
    """Column positions of each row's k largest values, sorted by value, ties by position (earliest first).

    The kept best come first in `topk_cosine`'s candidates and later rows follow in index order, so position order is
    index order and the k kept never depend on the chunk size (argpartition alone keeps arbitrary members of a tie,
    i.e. duplicate DC rows). Written by hand because a full stable argsort over each chunk is O(C log C) and made
    top-k slower than loading everything (bench/bench_select.py --part topk): partition finds the k-th value in O(C),
    every column above it is kept, ties at it by position, and only the k kept get sorted. NaN ranks last.
    """
    q, c = sims.shape
    k = min(k, c)
    if k == 0:
        return np.zeros((q, 0), dtype=np.int64)
    if np.isnan(sims).any():
        sims = np.where(np.isnan(sims), -np.inf, sims)
    kth = np.partition(sims, c - k, axis=1)[:, c - k, None]  # each row's k-th largest
    keep = sims >= kth
    if int(keep.sum()) != q * k:  # more than one column ties at the k-th value somewhere: the earliest ones
        tie = sims == kth
        need = k - (sims > kth).sum(axis=1, keepdims=True)
        keep = (sims > kth) | (tie & (np.cumsum(tie, axis=1) <= need))
    cols = np.nonzero(keep)[1].reshape(q, k)  # row-major: each row's kept columns in position order
    order = np.argsort(-np.take_along_axis(sims, cols, 1), axis=1, kind="stable")
    return np.take_along_axis(cols, order, 1)
