"""The 2-D layout primitives behind the Map (core.selection.atlas builds the map of a corpus set with them):
UMAP (cosine metric) with a fixed random_state, a PCA fallback and preview, a stratified sample that keeps a
small TC visible beside a large DC, and UMAP's compiled code kept warm between processes.
cuML's GPU UMAP is used when it is installed and a GPU is present.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.data.workspace import Workspace
from core.environment import variable
from core.progress import Progress


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
    if cache := variable("NUMBA_CACHE_DIR").text():
        return Path(cache)
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
    from core.data.workspace import CorpusRole
    from core.lm.embed import cached_embeddings
    from core.runner import jobs

    start_warm_up()
    busy = {j.spec.corpus for j in jobs.list_jobs(ws, "embed") if j.active}
    queued = []
    for role in (CorpusRole.TC, CorpusRole.DC):
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


def sample_rows(n: int, size: int, seed: int) -> np.ndarray:
    """Positions of a random sample shown from a large box/lasso selection (the page's resample button)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def await_background_embeddings(ws: Workspace, names: Sequence[str], model: str, progress: Progress,
                                poll: float = 1.0) -> None:
    """Wait while an embedding job of one of these corpora (the first start's background jobs)
    runs: the map then reads its cached vectors instead of computing the same ones beside it."""
    from core.runner import jobs

    while True:
        busy = [j for j in jobs.list_jobs(ws, "embed") if j.status == "running" and j.spec.corpus in names
                and (j.spec.model or "default") == model]
        if not busy:
            return
        progress(0.0, f"waiting for the background embedding of {busy[0].spec.corpus} ({busy[0].progress:.0%})")
        time.sleep(poll)


