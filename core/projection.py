"""A 2-D map of sentences: UMAP (cosine metric) of sentence embeddings, for TC + selected +
filtered DC, or for any set of corpora.

Above a point cap the groups are sampled with stratification (each group keeps a floor
of points, the rest is shared in proportion to group size), so a 1M-sentence DC still
maps in minutes and TC stays visible; the page says when this happened. Projections
are cached in the workspace (artifact kind "projection") by a content hash of the
sampled rows, the model and the UMAP parameters; random_state is fixed, so a rerun
gives the same map. cuML's GPU UMAP is used when it is installed and a GPU is present.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.corpus import Corpus
from core.errors import UserError
from core.workspace import Workspace, atomic_write_json, content_hash, temp_path_for

Progress = Callable[[float, str], None]
ARTIFACT = "projection"
DEFAULT_MAX_POINTS = 50_000
GROUP_ORDER = ("TC", "selected", "filtered")


@dataclass
class Group:
    """Rows of one corpus shown as one colour: TC, the selected or the filtered part of DC, a file."""

    name: str
    corpus: Corpus  # the whole corpus the rows index into (embeddings are cached per whole corpus)
    rows: np.ndarray  # row indices into `corpus`
    score: np.ndarray | None = None  # per-row score aligned with `rows` (selection score)


@dataclass
class Projection:
    points: Any  # pandas DataFrame: x, y, group, score, row, text, carried fields
    meta: dict[str, Any]
    key: str | None = None
    vectors: np.ndarray | None = None  # embeddings of the points, row-aligned: the Map's nearest neighbours

    @property
    def sampled(self) -> bool:
        return bool(self.meta.get("sampled"))


def selection_groups(tc: Corpus, dc: Corpus, sel: Any) -> list[Group]:
    """TC, selected DC and filtered DC from a `core.select.Selection`."""
    scores = np.asarray(sel.scores, dtype=np.float32)
    selected = np.asarray(sel.indices, dtype=np.int64)
    filtered = np.setdiff1d(np.arange(len(dc)), selected)
    return [Group("TC", tc, np.arange(len(tc))), Group("selected", dc, selected, scores[selected]),
            Group("filtered", dc, filtered, scores[filtered])]


def stratified_sample(sizes: Sequence[int], cap: int, seed: int = 0) -> list[np.ndarray]:
    """Positions to keep per group, at most `cap` in all: a floor of cap / (2 * groups) per
    group (so a small TC is never sampled away), the rest in proportion to the remaining sizes."""
    sizes = [int(s) for s in sizes]
    if sum(sizes) <= cap:
        return [np.arange(s) for s in sizes]
    rng = np.random.default_rng(seed)
    floor = [min(s, cap // (2 * max(1, len(sizes)))) for s in sizes]
    rest = np.array([s - f for s, f in zip(sizes, floor)], dtype=np.float64)
    share = (cap - sum(floor)) * rest / max(1.0, rest.sum())
    take = np.array(floor) + np.floor(share).astype(int)
    for i in np.argsort(-(share - np.floor(share)), kind="stable"):  # largest remainders get the leftover points
        if take.sum() >= cap:
            break
        take[i] += take[i] < sizes[i]
    return [np.sort(rng.choice(s, size=t, replace=False)) for s, t in zip(sizes, take)]


def umap_2d(x: np.ndarray, n_neighbors: int = 15, min_dist: float = 0.1, seed: int = 0) -> tuple[np.ndarray, str]:
    """(N, 2) coordinates and the backend used. Tiny inputs (UMAP needs a neighbourhood) fall back to PCA."""
    x = np.asarray(x, dtype=np.float32)
    if len(x) < 4:
        from sklearn.decomposition import PCA

        padded = np.pad(x, ((0, 0), (0, max(0, 2 - x.shape[1]))))
        coords = PCA(n_components=2).fit_transform(padded) if len(x) > 1 else np.zeros((len(x), 2))
        return np.asarray(coords, dtype=np.float32), "pca (too few points for UMAP)"
    n_neighbors = max(2, min(n_neighbors, len(x) - 1))
    if _gpu_available():
        try:
            from cuml.manifold import UMAP as CuUMAP  # noqa: N811 - cuML's class name

            # cuML has no cosine metric in older releases: on L2-normalised rows euclidean orders neighbours the same way
            xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
            coords = CuUMAP(n_components=2, n_neighbors=n_neighbors, min_dist=min_dist, random_state=seed).fit_transform(xn)
            return np.asarray(coords, dtype=np.float32), "cuml"
        except ImportError:
            pass
    import warnings

    import umap

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*n_jobs value.*")  # a fixed random_state forces one thread: intended
        reducer = umap.UMAP(n_components=2, metric="cosine", n_neighbors=n_neighbors, min_dist=min_dist, random_state=seed)
        coords = reducer.fit_transform(x)
    return np.asarray(coords, dtype=np.float32), "umap-learn"


def _gpu_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def project(groups: Sequence[Group], model: str = "default", *, pooling: str = "mean", workspace: Workspace | None = None,
            max_points: int = DEFAULT_MAX_POINTS, seed: int = 0, n_neighbors: int = 15, min_dist: float = 0.1,
            progress: Progress | None = None, extra_meta: dict[str, Any] | None = None) -> Projection:
    """Embed the (sampled) rows of every group and lay them out with UMAP (cosine)."""
    import pandas as pd

    from core.embed import corpus_digest

    if max_points < 2:
        raise UserError(f"the point cap must be at least 2, got {max_points}")
    report = progress or (lambda f, m="": None)
    total = sum(len(g.rows) for g in groups)
    if total == 0:
        raise UserError("nothing to project: every group is empty")
    keep = stratified_sample([len(g.rows) for g in groups], max_points, seed)
    digests: dict[int, str] = {}
    for g in groups:
        if id(g.corpus) not in digests:
            digests[id(g.corpus)] = corpus_digest(g.corpus)
    from core.models import resolve_model

    key = content_hash("projection", resolve_model(model).fingerprint(), pooling, seed, n_neighbors, min_dist, max_points,
                       [(g.name, digests[id(g.corpus)], content_hash(g.rows[k].tobytes())) for g, k in zip(groups, keep)])
    if workspace is not None:
        cached = load_projection(workspace, key, missing_ok=True)
        if cached is not None:
            report(1.0, "projection loaded from the workspace")
            return cached
    t0 = time.time()
    vectors = _group_vectors(groups, keep, model, pooling, workspace, digests, lambda f, m: report(0.6 * f, m))
    report(0.6, f"UMAP of {sum(len(k) for k in keep):,} points")
    coords, backend = umap_2d(np.concatenate(vectors), n_neighbors=n_neighbors, min_dist=min_dist, seed=seed)
    frames = []
    for g, k in zip(groups, keep):
        rows = g.rows[k]
        frame = {"group": g.name, "row": rows, "score": g.score[k] if g.score is not None else np.nan,
                 "text": [" ".join(g.corpus.tokens[i]) for i in rows]}
        for fname, values in g.corpus.fields.items():
            frame[fname] = [values[i] for i in rows]
        frames.append(pd.DataFrame(frame))
    points = pd.concat(frames, ignore_index=True)
    points.insert(0, "y", coords[:, 1])
    points.insert(0, "x", coords[:, 0])
    sampled = sum(len(k) for k in keep) < total
    note = (f"showing a stratified sample of {len(points):,} of {total:,} sentences (cap {max_points:,})" if sampled else "")
    meta = {"model": model, "pooling": pooling, "seed": seed, "n_neighbors": n_neighbors, "min_dist": min_dist,
            "max_points": max_points, "total": total, "points": len(points), "sampled": sampled, "note": note,
            "backend": backend, "seconds": time.time() - t0,
            "groups": {g.name: {"total": len(g.rows), "shown": len(k)} for g, k in zip(groups, keep)}, **(extra_meta or {})}
    proj = Projection(points, meta, key, vectors=np.concatenate(vectors))
    if workspace is not None:
        save_projection(workspace, proj)
    report(1.0, f"{len(points):,} points mapped with {backend}")
    return proj


def _group_vectors(groups: Sequence[Group], keep: Sequence[np.ndarray], model: str, pooling: str, workspace: Workspace | None,
                   digests: dict[int, str], progress: Progress) -> list[np.ndarray]:
    """Embeddings of the kept rows. Per source corpus: reuse the cached full embeddings when the
    workspace has them (selection computed them), embed the whole corpus when every row is
    shown anyway (so the cache is shared with selection), else embed only the sampled rows."""
    from core.embed import cached_embeddings, embed_corpus

    wanted: dict[int, list[np.ndarray]] = {}
    corpora: dict[int, Corpus] = {}
    for g, k in zip(groups, keep):
        wanted.setdefault(id(g.corpus), []).append(g.rows[k])
        corpora[id(g.corpus)] = g.corpus
    lookup: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # corpus id -> (sorted rows, their vectors)
    for n, (cid, parts) in enumerate(wanted.items()):
        corpus = corpora[cid]
        rows = np.unique(np.concatenate(parts))
        sub = lambda f, m, n=n: progress((n + f) / len(wanted), m)  # noqa: E731
        full = cached_embeddings(corpus, model, workspace, pooling, digests[cid]) if workspace is not None else None
        if full is None and len(rows) == len(corpus):
            full = embed_corpus(corpus, model, pooling=pooling, workspace=workspace, progress=sub)  # type: ignore[arg-type]
        if full is not None:
            lookup[cid] = (rows, np.asarray(full[rows], dtype=np.float32))
        else:
            vecs = embed_corpus(corpus.subset(rows.tolist()), model, pooling=pooling, workspace=workspace, progress=sub)  # type: ignore[arg-type]
            lookup[cid] = (rows, np.asarray(vecs, dtype=np.float32))
    out = []
    for g, k in zip(groups, keep):
        rows, vecs = lookup[id(g.corpus)]
        out.append(vecs[np.searchsorted(rows, g.rows[k])])
    return out


# --------------------------------------------------------------------------- persistence


def save_projection(ws: Workspace, proj: Projection) -> Path:
    folder = ws.artifact_dir(ARTIFACT, proj.key or content_hash(proj.meta))
    tmp = temp_path_for(folder / "points.parquet")
    proj.points.to_parquet(tmp, index=False)
    os.replace(tmp, folder / "points.parquet")
    if proj.vectors is not None:  # before meta.json, which marks the projection complete
        from core.mapview import save_point_vectors

        save_point_vectors(folder, proj.vectors)
    atomic_write_json(folder / "meta.json", {**proj.meta, "key": folder.name, "created": time.time()})
    proj.key = folder.name
    return folder


def load_projection(ws: Workspace, key: str, missing_ok: bool = False) -> Projection | None:
    import pandas as pd

    folder = ws.find_artifact(ARTIFACT, key)
    if folder is None or not (folder / "meta.json").exists():
        if missing_ok:
            return None
        raise UserError(f"no saved projection {key!r} in workspace {ws.root}")
    meta = json.loads((folder / "meta.json").read_text("utf-8"))
    return Projection(pd.read_parquet(folder / "points.parquet"), meta, folder.name)


def list_projections(ws: Workspace) -> list[dict[str, Any]]:
    out = []
    for folder in ws.list_artifacts(ARTIFACT):
        if (folder / "meta.json").exists():
            out.append({**json.loads((folder / "meta.json").read_text("utf-8")), "key": folder.name})
    return out


def sample_rows(n: int, size: int, seed: int) -> np.ndarray:
    """Positions of a random sample shown from a large box/lasso selection (the page's resample button)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


# --------------------------------------------------------------------------- job


def projection_job(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Job kind "project": params {"selection": KEY} (TC + selected + filtered DC of a saved
    selection) or {"corpora": [names or paths]}; plus "model", "max_points", "seed"."""
    from core.select import load_selection

    ws: Workspace = ctx.workspace
    common = {"model": params.get("model") or "default", "max_points": int(params.get("max_points") or DEFAULT_MAX_POINTS),
              "seed": int(params.get("seed", 0)), "workspace": ws, "progress": ctx.progress}
    if params.get("selection"):
        sel = load_selection(ws, params["selection"])
        tc_name, dc_name = sel.meta.get("tc_name"), sel.meta.get("dc_name")
        if not tc_name or not dc_name:
            raise UserError("this selection does not record its TC/DC names; run the selection from the Selection page or a job")
        tc, dc = ws.resolve_corpus(tc_name), ws.resolve_corpus(dc_name)
        if len(dc) != sel.dc_size:
            raise UserError(f"DC {dc_name!r} has {len(dc):,} sentences but the selection was made on {sel.dc_size:,}; it changed since")
        proj = project(selection_groups(tc, dc, sel), extra_meta={"selection": sel.key, "strategy": sel.strategy}, **common)
    elif params.get("corpora"):
        proj = project(file_groups({str(n): ws.resolve_corpus(n) for n in params["corpora"]}), **common)
    else:
        raise UserError("projection needs a saved selection ('selection') or a list of corpora ('corpora')")
    ctx.log(f"projection {proj.key}: {proj.meta['points']} points ({proj.meta['backend']}) {proj.meta['note']}")
    return {"key": proj.key, "points": proj.meta["points"], "total": proj.meta["total"], "sampled": proj.sampled,
            "note": proj.meta["note"], "backend": proj.meta["backend"]}


def file_groups(corpora: dict[str, Corpus]) -> list[Group]:
    """One group per corpus (the CLI's `project FILE...`)."""
    return [Group(name, c, np.arange(len(c))) for name, c in corpora.items()]
