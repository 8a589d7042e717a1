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
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.atomic import atomic_write_json, temp_path_for
from core.data.corpus import Corpus
from core.data.stream import CorpusStream, open_corpus_stream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.progress import Progress, sub
from core.selection.store import load_selection

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import ProjectParams

ARTIFACT = "projection"
DEFAULT_MAX_POINTS = 50_000
GROUP_ORDER = ("TC", "selected", "filtered")
PREVIEW_MIN_POINTS = 1_000  # below this UMAP takes seconds and a preview would only flicker


@dataclass
class Group:
    """Rows of one corpus shown as one colour: TC, the selected or the filtered part of DC, a file."""

    name: str
    # the whole corpus the rows index into (embeddings are cached per whole corpus); a streamed
    # workspace corpus is read only at the sampled rows, so a 10M-sentence DC is never loaded
    corpus: Corpus | CorpusStream
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


def selection_groups(tc: Corpus | CorpusStream, dc: Corpus | CorpusStream, sel: Any) -> list[Group]:
    """TC, selected DC and filtered DC from a `core.selection.strategies.Selection`."""
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


def umap_2d(x: np.ndarray, n_neighbors: int = 15, min_dist: float = 0.1, seed: int = 0,
            progress: Progress | None = None) -> tuple[np.ndarray, str]:
    """(N, 2) coordinates and the backend used. Tiny inputs (UMAP needs a neighbourhood) fall back to PCA.

    UMAP starts from the PCA layout (`init="pca"`): the default spectral start can spend minutes
    in an eigensolver that then fails ("Spectral initialisation failed") on clustered sentence
    embeddings. `progress` gets the layout epochs as they complete (the bar moves)."""
    x = np.asarray(x, dtype=np.float32)
    if len(x) < 4:
        return pca_2d(x), "pca (too few points for UMAP)"
    n_neighbors = max(2, min(n_neighbors, len(x) - 1))
    if _gpu_available():
        try:
            from cuml.manifold import UMAP as CuUMAP

            # cuML has no cosine metric in older releases: on L2-normalised rows euclidean orders neighbours the same way
            xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
            coords = CuUMAP(n_components=2, n_neighbors=n_neighbors, min_dist=min_dist, random_state=seed).fit_transform(xn)
            return np.asarray(coords, dtype=np.float32), "cuml"
        except ImportError:
            pass
    import warnings

    with warnings.catch_warnings():
        # Third-party warnings (numba, umap's n_jobs/random_state note, sklearn) are not the user's business:
        # what matters reaches them through `progress` and the projection's meta.
        warnings.simplefilter("ignore")
        umap = _import_umap()
        # umap's default is 500 epochs up to 10k points; 200 (its default above) gives the same picture
        # at this scale in 40% of the layout time, which is most of a first map on 2 cores.
        n_epochs = 500 if len(x) <= 2_000 else 200
        kwds: dict[str, Any] = {}
        if progress is not None:
            kwds["tqdm_kwds"] = {"disable": False, "file": _EpochSink(progress, n_epochs), "mininterval": 0.5,
                                 "bar_format": "{n}/{total}", "ascii": True}
        reducer = umap.UMAP(n_components=2, metric="cosine", n_neighbors=n_neighbors, min_dist=min_dist,
                            random_state=seed, init="pca", n_epochs=n_epochs, **kwds)
        coords = reducer.fit_transform(x)
    return np.asarray(coords, dtype=np.float32), "umap-learn"


def _import_umap() -> Any:
    """umap, with numba's on-disk cache turned on for its jitted functions. umap-learn compiles
    them without `cache=True`, so every fresh job process paid about a minute of compilation on
    2 cores; with caching, NUMBA_CACHE_DIR (set by scripts/app.sh, filled by scripts/setup.sh)
    keeps the machine code between processes. Functions already compiled at import are left as is."""
    _use_numba_cache()
    import umap
    from numba.core.registry import CPUDispatcher

    for mod_name in [m for m in list(sys.modules) if m.startswith(("umap.", "pynndescent."))]:
        module = sys.modules.get(mod_name)
        for obj in list(vars(module).values()) if module else ():
            if isinstance(obj, CPUDispatcher) and not obj.overloads and getattr(obj, "_cache", None) is not None \
                    and type(obj._cache).__name__ == "NullCache":
                try:
                    obj.enable_caching()
                except Exception:
                    pass
    return umap


def pca_2d(x: np.ndarray) -> np.ndarray:
    """A 2-D PCA layout (a second or less): the preview shown while UMAP runs, and the tiny-input fallback."""
    x = np.asarray(x, dtype=np.float32)
    if len(x) < 2:
        return np.zeros((len(x), 2), dtype=np.float32)
    from sklearn.decomposition import PCA

    padded = np.pad(x, ((0, 0), (0, max(0, 2 - x.shape[1]))))
    return np.asarray(PCA(n_components=2, random_state=0).fit_transform(padded), dtype=np.float32)


class _EpochSink:
    """A file-like target for umap's epoch bar (tqdm writes "n/total"): turns it into progress
    calls. umap has no callback for its epochs; its tqdm_kwds are the documented way in."""

    def __init__(self, progress: Progress, total: int):
        self.progress, self.total = progress, total

    def write(self, text: str) -> int:
        for part in reversed(text.replace("\r", "\n").split("\n")):
            n, _, total = part.strip().partition("/")
            if n.isdigit() and total.isdigit():
                self.progress(int(n) / max(1, int(total)), f"UMAP epoch {n}/{total}")
                break
        return len(text)

    def flush(self) -> None:
        pass


def numba_cache_dir() -> Path:
    """Where numba keeps UMAP's compiled code between processes: $NUMBA_CACHE_DIR, else
    `numba-cache` inside the virtual environment (scripts/setup.sh fills it), else the user's cache."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    if sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK):
        return Path(sys.prefix) / "numba-cache"
    return Path.home() / ".cache" / "nerselect" / "numba"


def _use_numba_cache() -> None:
    """Point numba at numba_cache_dir() (read once, when numba is first imported)."""
    if "numba" not in sys.modules:
        os.environ.setdefault("NUMBA_CACHE_DIR", str(numba_cache_dir()))


def start_warm_up() -> bool:
    """Compile UMAP in a detached low-priority process unless the cache is already warm (app start,
    so the first map does not pay the compilation). True when one was started."""
    import shutil
    import subprocess

    cache = numba_cache_dir()
    if (cache / ".warm").exists():
        return False
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    code = "from core.selection.projection import warm_up, numba_cache_dir; warm_up(); (numba_cache_dir() / '.warm').touch()"
    command = [sys.executable, "-c", code]
    if shutil.which("nice"):
        command = ["nice", "-n", "10", *command]
    subprocess.Popen(command, cwd=Path(__file__).resolve().parents[2], env=env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return True


def prepare_first_map(ws: Workspace, model: str = "default", max_sentences: int = 100_000) -> list[str]:
    """On an app start: warm UMAP's compiled code and queue the embeddings of TC and DC (the demo's
    6,400 sentences) as background jobs, so a first map needs only UMAP. Skips corpora already
    embedded or being embedded, and DCs above `max_sentences` (their users choose when to embed).
    Returns the corpora queued."""
    from core.data.workspace import Role
    from core.lm.embed import cached_embeddings
    from core.runner import jobs

    start_warm_up()
    busy = {j.params.get("corpus") for j in jobs.list_jobs(ws, "embed") if j.active}
    queued = []
    for role in (Role.TC, Role.DC):
        name = ws.roles().get(role)
        if not name or name in busy or ws.corpus_info(name).sentences > max_sentences:
            continue
        if cached_embeddings(ws.load_corpus(name), model, ws) is None:
            jobs.submit(ws, "embed", {"corpus": name, "model": model})
            queued.append(name)
    return queued


def warm_up(progress: Progress | None = None) -> float:
    """Run UMAP once on a few hundred random points so numba compiles (and, with NUMBA_CACHE_DIR
    set, caches) its functions before a user waits on a map. Returns the seconds it took."""
    t0 = time.time()
    rng = np.random.default_rng(0)
    umap_2d(rng.normal(size=(300, 16)).astype(np.float32), progress=progress)
    return time.time() - t0


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

    from core.lm.embed import corpus_digest

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
            digests[id(g.corpus)] = g.corpus.digest() if isinstance(g.corpus, CorpusStream) else corpus_digest(g.corpus)
    from core.lm.models import resolve_model

    key = content_hash("projection", resolve_model(model).fingerprint(), pooling, seed, n_neighbors, min_dist, max_points,
                       [(g.name, digests[id(g.corpus)], content_hash(g.rows[k].tobytes())) for g, k in zip(groups, keep)])
    if workspace is not None:
        cached = load_projection(workspace, key, missing_ok=True)
        if cached is not None and not cached.meta.get("preview"):
            report(1.0, "projection loaded from the workspace")
            return cached
    t0 = time.time()
    vectors = np.concatenate(_group_vectors(groups, keep, model, pooling, workspace, digests, sub(report, 0, 0.6)))
    n_points = len(vectors)
    sampled = n_points < total
    note = (f"showing a stratified sample of {n_points:,} of {total:,} sentences (cap {max_points:,})" if sampled else "")
    meta = {"model": model, "pooling": pooling, "seed": seed, "n_neighbors": n_neighbors, "min_dist": min_dist,
            "max_points": max_points, "total": total, "points": n_points, "sampled": sampled, "note": note,
            "groups": {g.name: {"total": len(g.rows), "shown": len(k)} for g, k in zip(groups, keep)}, **(extra_meta or {})}
    previewed = workspace is not None and n_points >= PREVIEW_MIN_POINTS
    if previewed:
        # A PCA layout saved at once under the same key: the Map page draws it while UMAP runs; the
        # finished UMAP replaces it (and a preview never counts as a cached projection).
        preview = Projection(_points_frame(groups, keep, pca_2d(vectors)),
                             {**meta, "backend": "PCA preview (UMAP still running)", "preview": True,
                              "seconds": time.time() - t0}, key, vectors=vectors)
        save_projection(workspace, preview)
    report(0.6, f"UMAP of {n_points:,} points" + (" (a PCA preview is on the Map meanwhile)" if previewed else ""))
    coords, backend = umap_2d(vectors, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed, progress=sub(report, 0.6, 0.99))
    points = _points_frame(groups, keep, coords)
    meta.update(backend=backend, seconds=time.time() - t0)
    proj = Projection(points, meta, key, vectors=vectors)
    if workspace is not None:
        save_projection(workspace, proj)
    report(1.0, f"{len(points):,} points mapped with {backend}")
    return proj


def _points_frame(groups: Sequence[Group], keep: Sequence[np.ndarray], coords: np.ndarray) -> Any:
    """The points table: x, y, group, row, score, text and every carried field, in group order."""
    import pandas as pd

    frames = []
    for g, k in zip(groups, keep):
        rows = g.rows[k]
        shown = _rows_of(g.corpus, rows)
        frame = {"group": g.name, "row": rows, "score": g.score[k] if g.score is not None else np.nan,
                 "text": [" ".join(t) for t in shown.tokens]}
        for fname, values in shown.fields.items():
            frame[fname] = list(values)
        frames.append(pd.DataFrame(frame))
    points = pd.concat(frames, ignore_index=True)
    points.insert(0, "y", coords[:, 1])
    points.insert(0, "x", coords[:, 0])
    return points


def _rows_of(corpus: Corpus | CorpusStream, rows: np.ndarray) -> Corpus:
    """The sentences at `rows` (with their fields): a stream reads only the row groups holding them."""
    return corpus.take(rows) if isinstance(corpus, CorpusStream) else corpus.subset(np.asarray(rows).tolist())


def _group_vectors(groups: Sequence[Group], keep: Sequence[np.ndarray], model: str, pooling: str, workspace: Workspace | None,
                   digests: dict[int, str], progress: Progress) -> list[np.ndarray]:
    """Embeddings of the kept rows. Per source corpus: reuse the cached full embeddings when the
    workspace has them (selection computed them), embed the whole corpus when every row is
    shown anyway (so the cache is shared with selection), else embed only the sampled rows."""
    from core.lm.embed import cached_embeddings, embed_corpus

    wanted: dict[int, list[np.ndarray]] = {}
    corpora: dict[int, Corpus | CorpusStream] = {}
    for g, k in zip(groups, keep):
        wanted.setdefault(id(g.corpus), []).append(g.rows[k])
        corpora[id(g.corpus)] = g.corpus
    lookup: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # corpus id -> (sorted rows, their vectors)
    for n, (cid, parts) in enumerate(wanted.items()):
        corpus = corpora[cid]
        rows = np.unique(np.concatenate(parts))
        sub = lambda f, m, n=n: progress((n + f) / len(wanted), m)
        full = cached_embeddings(corpus, model, workspace, pooling, digests[cid]) if workspace is not None else None
        if full is None and len(rows) == len(corpus):
            full = embed_corpus(corpus, model, pooling=pooling, workspace=workspace, progress=sub)  # type: ignore[arg-type]
        if full is not None:
            lookup[cid] = (rows, np.asarray(full[rows], dtype=np.float32))
        else:
            vecs = embed_corpus(_rows_of(corpus, rows), model, pooling=pooling, workspace=workspace, progress=sub)  # type: ignore[arg-type]
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
        from core.selection.mapview import save_point_vectors

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


def projection_job(params: ProjectParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "project": TC + selected + filtered DC of a saved selection (`selection`), or `corpora`."""
    ws: Workspace = ctx.workspace
    common = {"model": params.model, "max_points": params.max_points or DEFAULT_MAX_POINTS, "seed": params.seed,
              "workspace": ws, "progress": ctx.progress}
    if params.selection:
        sel = load_selection(ws, params.selection)
        tc_name, dc_name = sel.meta.get("tc_name"), sel.meta.get("dc_name")
        if not tc_name or not dc_name:
            raise UserError("this selection does not record its TC/DC names; run the selection from the Selection page or a job")
        await_background_embeddings(ws, [tc_name, dc_name], params.model, ctx.progress)
        tc, dc = ws.resolve_corpus(tc_name), open_corpus_stream(ws, dc_name)  # DC streamed: only the sampled rows are read
        if len(dc) != sel.dc_size:
            raise UserError(f"DC {dc_name!r} has {len(dc):,} sentences but the selection was made on {sel.dc_size:,}; it changed since")
        proj = project(selection_groups(tc, dc, sel), extra_meta={"selection": sel.key, "strategy": sel.strategy}, **common)
    elif params.corpora:
        proj = project(file_groups({str(n): open_corpus_stream(ws, n) for n in params.corpora}), **common)
    else:
        raise UserError("projection needs a saved selection ('selection') or a list of corpora ('corpora')")
    ctx.log(f"projection {proj.key}: {proj.meta['points']} points ({proj.meta['backend']}) {proj.meta['note']}")
    return {"key": proj.key, "points": proj.meta["points"], "total": proj.meta["total"], "sampled": proj.sampled,
            "note": proj.meta["note"], "backend": proj.meta["backend"]}


def await_background_embeddings(ws: Workspace, names: Sequence[str], model: str, progress: Progress,
                                poll: float = 1.0) -> None:
    """Wait while an embedding job of one of these corpora (the first start's background jobs)
    runs: the map then reads its cached vectors instead of computing the same ones beside it."""
    from core.runner import jobs

    while True:
        busy = [j for j in jobs.list_jobs(ws, "embed") if j.status == "running" and j.params.get("corpus") in names
                and (j.params.get("model") or "default") == model]
        if not busy:
            return
        progress(0.0, f"waiting for the background embedding of {busy[0].params['corpus']} ({busy[0].progress:.0%})")
        time.sleep(poll)


def file_groups(corpora: dict[str, Corpus | CorpusStream]) -> list[Group]:
    """One group per corpus (the CLI's `project FILE...`)."""
    return [Group(name, c, np.arange(len(c))) for name, c in corpora.items()]
