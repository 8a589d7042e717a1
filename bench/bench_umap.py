"""UMAP time for the Map page at 10k / 50k points (cosine, fixed random_state, as core.selection.projection
runs it), against PCA to 2-D as the named baseline (same vectors, same run).

The vectors are real sentence embeddings when a workspace path with cached embeddings is
given, else Gaussian blobs of 384 dims (UMAP's cost depends on N far more than on content).
The first UMAP call in a process also pays numba's JIT compilation: it is timed separately.
Usage: python bench/bench_umap.py [--sizes 10000 50000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import print_table, write_json


def blobs(n: int, dim: int = 384, centers: int = 10, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(centers, dim)) * 2
    return (means[rng.integers(0, centers, n)] + rng.normal(size=(n, dim))).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    args = ap.parse_args()
    from sklearn.decomposition import PCA

    from core.selection.projection import umap_2d

    t0 = time.perf_counter()
    umap_2d(blobs(200), seed=0)
    warmup = time.perf_counter() - t0
    print(f"first UMAP call (200 points, includes numba JIT): {warmup:.1f}s", flush=True)
    rows = []
    for n in args.sizes:
        x = blobs(n)
        t0 = time.perf_counter()
        PCA(n_components=2, random_state=0).fit_transform(x)
        t_pca = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, backend = umap_2d(x, seed=0)
        t_umap = time.perf_counter() - t0
        rows.append({"points": n, "backend": backend, "umap_s": t_umap, "pca_s (baseline)": t_pca, "umap/pca": t_umap / t_pca})
        print(rows[-1], flush=True)
    print_table(rows, "UMAP (cosine, random_state fixed) vs PCA, 384-dim vectors")
    write_json("umap", {"jit_warmup_s": warmup, "rows": rows})


if __name__ == "__main__":
    main()
