"""The map of a corpus set: one 2-D layout per (corpora, encoder), computed once and reused.

Selections, strategies' scores, corpus fields and search results are layers coloured over the same
points (core.selection.layers), so switching what the Map shows runs no job. Up to `fit_points`
sentences (stratified over the corpora, so a small TC is never sampled away) are laid out with UMAP
(cosine); every other sentence is placed by the fitted model's `transform` (umap-learn's documented
way to add points to an existing embedding: it finds each new point's neighbours among the fitted
ones and optimises its position against them), in chunks with progress. A DC of a million
sentences is therefore laid out in minutes on 2 cores and every sentence is on the map.

Saved under artifacts/atlas/KEY (KEY = model fingerprint + each corpus's content hash + layout
parameters): points.parquet (x, y as float32, corpus order then row order), texts.parquet (each
sentence, shortened for hover and search) and meta.json, written last, which marks it complete.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.access import LOCAL, Actor, check_param_paths
from core.data.atomic import atomic_write_json, temp_path_for
from core.data.stream import CorpusStream, open_corpus_stream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.progress import Progress, sub
from core.selection.projection import pca_2d, stratified_sample, umap_2d

if TYPE_CHECKING:
    import pandas as pd

    from core.runner.jobs import JobContext
    from core.runner.params import ProjectParams

ARTIFACT = "atlas"
DEFAULT_FIT_POINTS = 20_000  # UMAP on 20k points takes about a minute on 2 cores; the rest is placed by transform
PLACE_CHUNK = 50_000
PARALLEL_PLACE_MIN = 200_000  # fewer unfitted points are placed in this process (workers cost seconds to start)
TEXT_CHARS = 240  # hover reads this much of a sentence (search its whole words); the Map's tables read the corpus


@dataclass
class Atlas:
    key: str
    folder: Path
    meta: dict[str, Any]
    xy: np.ndarray  # (N, 2) float32, corpus by corpus in meta["corpora"] order, rows in corpus order
    _texts: list[str] | None = field(default=None, repr=False)
    _words: list[str] | None = field(default=None, repr=False)

    @property
    def corpora(self) -> list[dict[str, Any]]:
        return list(self.meta["corpora"])

    # The fields of meta.json that pages and commands read, with what a map written before each field existed means.
    @property
    def model(self) -> str:
        """The encoder whose embeddings were laid out."""
        return str(self.meta["model"]) if "model" in self.meta else "default"

    @property
    def pooling(self) -> str:
        return str(self.meta["pooling"]) if "pooling" in self.meta else "mean"

    @property
    def method(self) -> str:
        """How the layout was made ("umap", or a fallback for few points)."""
        return str(self.meta["method"]) if "method" in self.meta else "?"

    @property
    def seconds(self) -> float:
        return float(self.meta["seconds"]) if "seconds" in self.meta else 0.0

    @property
    def clusters(self) -> list[dict[str, Any]]:
        """Named clusters: [{label, x, y, ...}] (core.selection.atlas.cluster_labels)."""
        return list(self.meta["clusters"]) if "clusters" in self.meta else []

    def __len__(self) -> int:
        return len(self.xy)

    def named(self, names: Sequence[str]) -> Atlas:
        """This map with its corpora called as the caller named them. A map is found by content alone, so one made
        for 'demo-dc' serves 'dc-v1' holding the same sentences; everything that reads a map corpus opens it by name,
        and the first name may since hold other sentences (or none). A copy: the page shares one loaded map."""
        if len(names) != len(self.meta["corpora"]):
            raise UserError(f"{len(names)} names for a map of {len(self.meta['corpora'])} corpora")
        corpora = [{**c, "name": str(n)} for c, n in zip(self.meta["corpora"], names)]
        return Atlas(self.key, self.folder, {**self.meta, "corpora": corpora}, self.xy, self._texts, self._words)

    def span(self, name: str) -> tuple[int, int]:
        """[start, end) of a corpus's points."""
        for c in self.corpora:
            if c["name"] == name:
                return int(c["offset"]), int(c["offset"]) + int(c["sentences"])
        raise UserError(f"corpus {name!r} is not on this map (it shows {', '.join(c['name'] for c in self.corpora)})")

    def corpus_codes(self) -> np.ndarray:
        """Per point, the position of its corpus in meta["corpora"] (uint8)."""
        codes = np.zeros(len(self), dtype=np.uint8)
        for i, c in enumerate(self.corpora):
            codes[int(c["offset"]):int(c["offset"]) + int(c["sentences"])] = i
        return codes

    def locate(self, points: np.ndarray) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(corpus name, rows in that corpus, positions in `points`) for point ids, corpus by corpus."""
        points = np.asarray(points, dtype=np.int64)
        out = []
        for c in self.corpora:
            lo, hi = int(c["offset"]), int(c["offset"]) + int(c["sentences"])
            at = np.flatnonzero((points >= lo) & (points < hi))
            if len(at):
                out.append((str(c["name"]), points[at] - lo, at))
        return out

    def texts(self) -> list[str]:
        """Every point's sentence (shortened to TEXT_CHARS), read on first use."""
        if self._texts is None:
            import pyarrow.parquet as pq

            self._texts = pq.read_table(self.folder / "texts.parquet", columns=["text"]).column("text").to_pylist()
        return self._texts

    def search_words(self) -> list[str]:
        """Every point's whole sentence as search reads it (core.selection.mapview.search_words), read on first use;
        a map saved before the column existed is searched in its shortened text."""
        if self._words is None:
            import pyarrow.parquet as pq

            from core.selection.mapview import search_words

            path = self.folder / "texts.parquet"
            if "words" in pq.read_schema(path).names:
                self._words = pq.read_table(path, columns=["words"]).column("words").to_pylist()
            else:
                self._words = [search_words(t) for t in self.texts()]
        return self._words


# --------------------------------------------------------------------------- finding and building


def atlas_key(digests: Sequence[str], fingerprint: str, pooling: str, fit_points: int, seed: int, n_neighbors: int,
              min_dist: float) -> str:
    return content_hash("atlas", fingerprint, pooling, list(digests), fit_points, seed, n_neighbors, min_dist)


def _streams(ws: Workspace, corpora: Sequence[str]) -> dict[str, CorpusStream]:
    """Each named corpus (name, role or path, resolved as everywhere), streamed; duplicates refused."""
    if not corpora:
        raise UserError("a map needs at least one corpus (for example: tc dc)")
    out: dict[str, CorpusStream] = {}
    for ref in corpora:
        stream = open_corpus_stream(ws, ref)
        name = stream.name or ws.ref(ref).name
        if name in out:
            raise UserError(f"corpus {name!r} is named twice for the map")
        if len(stream) == 0:
            raise UserError(f"corpus {name!r} is empty: nothing to map")
        out[name] = stream
    return out


def _key_for(ws: Workspace, streams: dict[str, CorpusStream], model: str, pooling: str, fit_points: int, seed: int,
             n_neighbors: int, min_dist: float) -> str:
    from core.lm.models import resolve_model

    return atlas_key([s.digest() for s in streams.values()], resolve_model(model).fingerprint(), pooling, fit_points,
                     seed, n_neighbors, min_dist)


def find_atlas(ws: Workspace, corpora: Sequence[str], model: str = "default", *, pooling: str = "mean",
               fit_points: int = DEFAULT_FIT_POINTS, seed: int = 0, n_neighbors: int = 15,
               min_dist: float = 0.1, actor: Actor = LOCAL) -> Atlas | None:
    """The saved map of exactly these corpora (their current contents) and encoder, or None. An encoder typed as a
    folder is checked for `actor` first: looking it up says whether a server path exists."""
    check_param_paths(actor, {"model": model}, ws.root)
    streams = _streams(ws, corpora)
    found = load_atlas(ws, _key_for(ws, streams, model, pooling, fit_points, seed, n_neighbors, min_dist), missing_ok=True)
    return None if found is None else found.named(list(streams))


def build_atlas(ws: Workspace, corpora: Sequence[str], model: str = "default", *, pooling: str = "mean",
                fit_points: int = DEFAULT_FIT_POINTS, seed: int = 0, n_neighbors: int = 15, min_dist: float = 0.1,
                progress: Progress | None = None) -> tuple[Atlas, bool]:
    """(the map, reused?): loads the saved one when these corpora and this encoder were mapped before,
    else embeds every sentence (cached embeddings are reused) and lays the set out once."""
    from core.lm.embed import embed_corpus

    report = progress or (lambda f, m="": None)
    if fit_points < 4:
        raise UserError(f"the UMAP fit sample must be at least 4 points, got {fit_points}")
    streams = _streams(ws, corpora)
    key = _key_for(ws, streams, model, pooling, fit_points, seed, n_neighbors, min_dist)
    found = load_atlas(ws, key, missing_ok=True)
    if found is not None:
        report(1.0, f"map of {len(found):,} sentences reused")
        return found.named(list(streams)), True
    t0 = time.time()
    vectors = []
    for i, (name, stream) in enumerate(streams.items()):
        part = sub(report, 0.4 * i / len(streams), 0.4 * (i + 1) / len(streams))
        vectors.append(embed_corpus(stream, model, pooling=pooling, workspace=ws,
                                    progress=lambda f, m, name=name, part=part: part(f, f"{name}: {m}")))
    coords, info = layout(vectors, fit_points=fit_points, seed=seed, n_neighbors=n_neighbors, min_dist=min_dist,
                          progress=sub(report, 0.4, 0.95))
    report(0.95, "writing the map and labelling its clusters")
    offsets = np.cumsum([0, *[len(s) for s in streams.values()]])
    meta = {"model": model, "pooling": pooling, "seed": seed, "n_neighbors": n_neighbors, "min_dist": min_dist,
            "fit_points": fit_points, **info, "points": int(len(coords)), "seconds": round(time.time() - t0, 1),
            "corpora": [{"name": n, "digest": s.digest(), "sentences": len(s), "offset": int(o)}
                        for (n, s), o in zip(streams.items(), offsets)]}
    atlas = save_atlas(ws, key, coords, meta, _texts_of(streams.values()))
    report(1.0, f"map of {len(atlas):,} sentences ({info['method']})")
    return atlas, False


def layout(vectors: Sequence[np.ndarray], *, fit_points: int = DEFAULT_FIT_POINTS, seed: int = 0, n_neighbors: int = 15,
           min_dist: float = 0.1, chunk: int = PLACE_CHUNK, progress: Progress | None = None,
           workers: int | None = None) -> tuple[np.ndarray, dict]:
    """2-D coordinates of every row of every array (concatenated in order) and how they were made.

    At most `fit_points` rows (stratified over the arrays) are laid out by UMAP; the others are
    placed by the fitted model's transform, `chunk` rows at a time (float16 caches are read a chunk
    at a time, so memory stays at one chunk plus the fit sample)."""
    report = progress or (lambda f, m="": None)
    sizes = [len(v) for v in vectors]
    total = int(sum(sizes))
    if total == 0:
        raise UserError("nothing to map: every corpus is empty")
    keep = stratified_sample(sizes, fit_points, seed)
    fit = np.concatenate([np.asarray(v[k], dtype=np.float32) for v, k in zip(vectors, keep)])
    offsets = np.cumsum([0, *sizes])
    fit_ids = np.concatenate([k + o for k, o in zip(keep, offsets[:-1])])
    coords = np.zeros((total, 2), dtype=np.float32)
    t0 = time.time()
    rest = total - len(fit_ids)
    if rest == 0:
        xy, backend = umap_2d(fit, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed, progress=sub(report, 0, 1))
        coords[fit_ids] = xy
        return coords, {"method": f"{backend} on all {total:,} sentences", "backend": backend, "fitted": total,
                        "placed": 0, "fit_seconds": round(time.time() - t0, 1), "place_seconds": 0.0}
    share = len(fit_ids) / total
    fit_part = max(0.3, min(0.8, share * 4))  # the bar's share for the fit: UMAP fit costs far more per point
    reducer, xy, backend = _fit(fit, n_neighbors, min_dist, seed, sub(report, 0, fit_part))
    coords[fit_ids] = xy
    fit_seconds = time.time() - t0
    fitted = np.zeros(total, dtype=bool)
    fitted[fit_ids] = True
    t1 = time.time()
    parts = [(o + rows, v, rows) for v, o in zip(vectors, offsets[:-1])
             for todo in [np.flatnonzero(~fitted[o:o + len(v)])] for rows in np.array_split(todo, max(1, -(-len(todo) // chunk)))
             if len(rows)]
    n_workers = place_workers(rest, len(parts), workers) if reducer is not None else 1
    done = 0
    for (where, _, rows), placed in zip(parts, _placed_parts(reducer, parts, fit, xy, n_workers)):
        coords[where] = placed
        done += len(rows)
        report(fit_part + (1 - fit_part) * done / rest, f"placed {done:,} of {rest:,} sentences on the fitted map"
               + (f" ({n_workers} processes)" if n_workers > 1 else ""))
    how = "transform" if reducer is not None else "nearest fitted neighbours (cosine)"
    return coords, {"method": f"{backend} fitted on {len(fit_ids):,} of {total:,} sentences, the rest placed by {how}",
                    "backend": backend, "fitted": int(len(fit_ids)), "placed": int(rest), "place_workers": n_workers,
                    "fit_seconds": round(fit_seconds, 1), "place_seconds": round(time.time() - t1, 1)}


def place_workers(rest: int, chunks: int, workers: int | None = None) -> int:
    """Processes that place the unfitted points: `workers` when given, else one per core once there are enough points
    to pay for starting them (each loads umap-learn and the fitted model: a few seconds), never more than chunks.

    >>> place_workers(1_000_000, 20, None) <= 20, place_workers(10_000, 1, None), place_workers(500_000, 10, 3)
    (True, 1, 3)
    """
    if workers is None:
        workers = (os.cpu_count() or 1) if rest >= PARALLEL_PLACE_MIN else 1
    return max(1, min(int(workers), chunks))


def _placed_parts(reducer: Any, parts: list[tuple[np.ndarray, Any, np.ndarray]], fit: np.ndarray, fit_xy: np.ndarray,
                  workers: int) -> Any:
    """Coordinates of each part, in order. umap-learn's transform runs on one core (a fixed random_state turns its
    numba parallelism off, and the map must not change between runs), so a large map's parts go to worker processes,
    each holding one copy of the fitted model; results equal one process's, part for part (each transform call
    starts its random state afresh from the seed)."""
    if workers <= 1:
        for _, v, rows in parts:
            yield _place(reducer, np.asarray(v[rows], dtype=np.float16).astype(np.float32), fit, fit_xy)
        return
    import pickle
    import tempfile
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with tempfile.TemporaryDirectory(prefix="nerselect-place-") as tmp:
        model = Path(tmp) / "reducer.pkl"
        bar, reducer.tqdm_kwds = reducer.tqdm_kwds, {"disable": True}  # the fit's progress sink stays in this process
        try:
            model.write_bytes(pickle.dumps(reducer, protocol=pickle.HIGHEST_PROTOCOL))  # read once per worker, not per part
        finally:
            reducer.tqdm_kwds = bar
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_start_placer,
                                 initargs=(str(model),)) as pool:
            # float16 over the pipe (the cache's own precision): half the bytes of float32
            yield from pool.map(_place_part, (np.asarray(v[rows], dtype=np.float16) for _, v, rows in parts))


_PLACER: dict[str, Any] = {}


def _start_placer(model: str) -> None:
    import pickle

    from core.selection.projection import _use_numba_cache

    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    _use_numba_cache()
    _import_umap_quietly()
    _PLACER["reducer"] = pickle.loads(Path(model).read_bytes())


def _import_umap_quietly() -> None:
    import warnings

    from core.selection.projection import _import_umap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _import_umap()


def _place_part(x: np.ndarray) -> np.ndarray:
    return _place(_PLACER["reducer"], x.astype(np.float32), np.zeros((0, 1), np.float32), np.zeros((0, 2), np.float32))


def _fit(x: np.ndarray, n_neighbors: int, min_dist: float, seed: int, progress: Progress) -> tuple[Any, np.ndarray, str]:
    """(fitted reducer or None, coordinates of x, backend). Tiny samples fall back to PCA (no model to transform with),
    and so do samples of fewer than 4 distinct sentences (a corpus of one repeated line): UMAP laid those out as NaN,
    and labelling the map's clusters then failed."""
    if len(x) < 4 or len(np.unique(np.round(x, 4), axis=0)) < 4:
        xy, backend = umap_2d(x, progress=progress) if len(x) < 4 else (pca_2d(x), "pca (fewer than 4 distinct points)")
        return None, np.nan_to_num(xy).astype(np.float32, copy=False), backend
    import warnings

    from core.selection.projection import _import_umap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        umap = _import_umap()
        from core.selection.projection import _EpochSink

        n_epochs = 500 if len(x) <= 2_000 else 200
        reducer = umap.UMAP(n_components=2, metric="cosine", n_neighbors=max(2, min(n_neighbors, len(x) - 1)),
                            min_dist=min_dist, random_state=seed, init="pca", n_epochs=n_epochs,
                            tqdm_kwds={"disable": False, "file": _EpochSink(progress, n_epochs), "mininterval": 0.5,
                                       "bar_format": "{n}/{total}", "ascii": True})
        xy = reducer.fit_transform(x)
    return reducer, np.asarray(xy, dtype=np.float32), "umap-learn"


def _place(reducer: Any, x: np.ndarray, fit: np.ndarray, fit_xy: np.ndarray) -> np.ndarray:
    """Coordinates of new rows on the fitted map."""
    if reducer is None:  # PCA fallback (fewer than 4 fitted points): the nearest fitted point's position
        fn = fit / np.maximum(np.linalg.norm(fit, axis=1, keepdims=True), 1e-12)
        xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return fit_xy[np.argmax(xn @ fn.T, axis=1)]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(reducer.transform(x), dtype=np.float32)


def _texts_of(streams: Sequence[CorpusStream]) -> Any:
    """(every sentence shortened to TEXT_CHARS, its whole words for search), corpus by corpus, batch by batch (never
    all in memory at once)."""
    from core.selection.mapview import search_words

    for stream in streams:
        for part in stream.text_batches():
            yield [t if len(t) <= TEXT_CHARS else t[:TEXT_CHARS - 1] + "…" for t in part], [search_words(t) for t in part]


# --------------------------------------------------------------------------- persistence


def save_atlas(ws: Workspace, key: str, coords: np.ndarray, meta: dict[str, Any], texts: Any) -> Atlas:
    """points.parquet, texts.parquet, clusters (in meta), then meta.json: its presence marks a finished map."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = ws.artifact_dir(ARTIFACT, key)
    coords = np.asarray(coords, dtype=np.float32)
    tmp = temp_path_for(folder / "points.parquet")
    pq.write_table(pa.table({"x": coords[:, 0], "y": coords[:, 1]}), tmp)
    os.replace(tmp, folder / "points.parquet")
    tmp = temp_path_for(folder / "texts.parquet")
    schema = pa.schema([("text", pa.string()), ("words", pa.string())])
    written = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        for part, words in texts:
            writer.write_table(pa.table({"text": pa.array(part, pa.string()), "words": pa.array(words, pa.string())},
                                        schema=schema))
            written += len(part)
    if written != len(coords):
        raise RuntimeError(f"{written} texts for {len(coords)} points")  # a bug, not a user mistake
    os.replace(tmp, folder / "texts.parquet")
    atlas = Atlas(key, folder, {**meta, "key": key}, coords)
    atlas.meta["clusters"] = cluster_labels(coords, atlas.texts(), seed=int(meta["seed"]) if "seed" in meta else 0)
    atlas.meta["created"] = time.time()
    atomic_write_json(folder / "meta.json", atlas.meta)
    return atlas


def cluster_labels(xy: np.ndarray, texts: Sequence[str], seed: int = 0, k: int | None = None,
                   per_cluster: int = 800, terms: int = 3) -> list[dict[str, Any]]:
    """Labels for the map's regions: k-means on the 2-D layout, then each cluster's most distinctive
    words by class-based TF-IDF (a word's share in the cluster over its share in the whole map, as
    BERTopic labels topics), read from at most `per_cluster` sentences per cluster."""
    n = len(xy)
    if n < 50:
        return []
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.feature_extraction.text import CountVectorizer

    k = k or int(np.clip(round(np.sqrt(n / 200)), 3, 16))
    km = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=4096).fit(np.asarray(xy, dtype=np.float32))
    labels = km.labels_
    rng = np.random.default_rng(seed)
    docs, sizes = [], []
    for c in range(k):
        members = np.flatnonzero(labels == c)
        sizes.append(len(members))
        pick = members if len(members) <= per_cluster else rng.choice(members, per_cluster, replace=False)
        docs.append(" ".join(texts[i] for i in pick))
    try:
        vec = CountVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_]{3,}\b", max_features=30_000)
        counts = vec.fit_transform(docs).toarray().astype(np.float64)
    except ValueError:  # no words at all (numbers only, say): positions without labels would only mislead
        return []
    words = vec.get_feature_names_out()
    tf = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    idf = np.log(1 + counts.sum(axis=1).mean() / np.maximum(counts.sum(axis=0), 1))
    weight = tf * idf
    out = []
    for c in range(k):
        members = labels == c
        if not members.any():
            continue
        top = [str(words[i]) for i in np.argsort(-weight[c])[:terms] if weight[c, i] > 0]
        cx, cy = np.median(xy[members], axis=0)
        out.append({"x": float(cx), "y": float(cy), "size": int(sizes[c]), "terms": top, "label": " · ".join(top)})
    return out


def load_atlas(ws: Workspace, key: str, missing_ok: bool = False) -> Atlas | None:
    import pyarrow.parquet as pq

    folder = ws.find_artifact(ARTIFACT, key)
    if folder is None or not (folder / "meta.json").exists():
        if missing_ok:
            return None
        raise UserError(f"no saved map {key!r} in workspace {ws.root}")
    meta = json.loads((folder / "meta.json").read_text("utf-8"))
    table = pq.read_table(folder / "points.parquet")
    xy = np.column_stack([table.column("x").to_numpy(), table.column("y").to_numpy()]).astype(np.float32, copy=False)
    return Atlas(folder.name, folder, meta, xy)


def list_atlases(ws: Workspace) -> list[dict[str, Any]]:
    """Every finished map's meta (with "key"), newest first."""
    out = []
    for folder in ws.list_artifacts(ARTIFACT):
        try:
            out.append({**json.loads((folder / "meta.json").read_text("utf-8")), "key": folder.name})
        except (OSError, json.JSONDecodeError):
            continue
    return sorted(out, key=lambda m: -float(m.get("created", 0)))


def points_frame(atlas: Atlas) -> pd.DataFrame:
    """x, y, corpus, row and text of every point (the CLI's --out)."""
    import pandas as pd

    names = [c["name"] for c in atlas.corpora]
    codes = atlas.corpus_codes()
    offsets = np.array([int(c["offset"]) for c in atlas.corpora])
    return pd.DataFrame({"x": atlas.xy[:, 0], "y": atlas.xy[:, 1],
                         "corpus": pd.Categorical.from_codes(codes.astype(np.int16), categories=names),
                         "row": np.arange(len(atlas)) - offsets[codes], "text": atlas.texts()})


# --------------------------------------------------------------------------- job


def selection_corpora(ws: Workspace, selection: str) -> list[str]:
    """TC and DC of a saved selection: the corpus set its map shows."""
    from core.data.selection_store import load_selection

    sel = load_selection(ws, selection)
    tc_name, dc_name = sel.meta.tc_name, sel.meta.dc_name
    if not tc_name or not dc_name:
        raise UserError("this selection does not record its TC/DC names; run the selection from the Selection page or a job")
    return [ws.ref(str(tc_name)).param, ws.ref(str(dc_name)).param]  # a role or name as the workspace names it now


def map_corpora(ws: Workspace, corpora: list[str] | tuple[str, ...] = (), selection: str | None = None,
                strict: bool = True) -> list[str]:
    """The corpora a map shows, decided in one place for the Map page, `project` and its job: those named; else the
    selection's TC and DC; else the corpora holding the TC and DC roles. A selection that does not record its corpora
    is an error when asked for (strict), and falls back to the roles where it is only a default (the page)."""
    if corpora:
        return list(corpora)
    if selection:
        try:
            return selection_corpora(ws, selection)
        except UserError:
            if strict:
                raise
    return [n for n in (ws.corpus_for_role("tc"), ws.corpus_for_role("dc")) if n]


def atlas_job(params: ProjectParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "project": the map of `corpora` (or of a selection's TC and DC), built once."""
    from core.selection.projection import await_background_embeddings

    ws: Workspace = ctx.workspace
    corpora = map_corpora(ws, params.corpora or [], params.selection)
    if not corpora:
        raise UserError("a map needs corpora ('corpora'), a saved selection ('selection') or corpora with the TC and DC roles")
    await_background_embeddings(ws, list(_streams(ws, corpora)), params.model, ctx.progress)
    atlas, reused = build_atlas(ws, corpora, params.model, fit_points=params.fit_points, seed=params.seed,
                                progress=ctx.progress)
    ctx.log(f"map {atlas.key}: {len(atlas):,} sentences, {atlas.meta['method']}" + (" (reused)" if reused else ""))
    return {"key": atlas.key, "reused": reused, "points": len(atlas), "method": atlas.meta["method"],
            "corpora": [c["name"] for c in atlas.corpora]}
