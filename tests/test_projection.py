"""Layout primitives: stratified sampling, deterministic UMAP, epoch progress, the first start's warm-up (the map of a
corpus set is tested in test_atlas.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.data.corpus import Corpus
from core.data.workspace import Workspace
from core.selection import projection
from core.selection.projection import stratified_sample
from tests.conftest import TOY_SENTENCES

SENTENCES = sorted(set(TOY_SENTENCES))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=4), st.integers(2, 3000), st.integers(0, 5))
def test_stratified_sample_respects_cap_and_keeps_every_group(sizes, cap, seed):
    keep = stratified_sample(sizes, cap, seed)
    assert [len(k) <= s for k, s in zip(keep, sizes)] == [True] * len(sizes)
    if sum(sizes) <= cap:
        assert [len(k) for k in keep] == sizes
    else:
        assert sum(len(k) for k in keep) == cap
        floor = cap // (2 * len(sizes))
        assert all(len(k) >= min(s, floor) for k, s in zip(keep, sizes))  # a small TC is never sampled away
    for k, s in zip(keep, sizes):
        assert len(set(k.tolist())) == len(k) and (len(k) == 0 or (k.min() >= 0 and k.max() < s))


@pytest.mark.slow  # ~25 s: numba compiles UMAP's kernels on first use
def test_real_umap_is_deterministic_for_a_seed():
    x = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    a, backend = projection.umap_2d(x, n_neighbors=5, seed=3)
    b, _ = projection.umap_2d(x, n_neighbors=5, seed=3)
    assert backend == "umap-learn" and a.shape == (40, 2)
    np.testing.assert_allclose(a, b)
    tiny, backend = projection.umap_2d(x[:3])
    assert tiny.shape == (3, 2) and backend.startswith("pca")


def test_umap_reports_epochs_and_hides_third_party_warnings(recwarn):
    from core.selection.projection import umap_2d

    seen = []
    x = np.random.default_rng(0).normal(size=(60, 8)).astype(np.float32)
    coords, backend = umap_2d(x, progress=lambda f, m="": seen.append((f, m)))
    assert coords.shape == (60, 2) and backend == "umap-learn"
    assert seen and seen[-1][0] == 1.0 and seen[-1][1] == "UMAP epoch 500/500"
    assert all(0 <= f <= 1 for f, _ in seen)
    assert not [w for w in recwarn if "umap" in str(w.filename) or "numba" in str(w.filename)]


def test_first_start_queues_tc_and_dc_embeddings_once(tmp_path, monkeypatch):
    from core.runner import jobs
    from core.selection.projection import prepare_first_map

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / ".warm").touch()  # no warm-up process from a test
    ws = Workspace(tmp_path / "ws")
    ws.save_corpus(Corpus(tokens=[s.split() for s in SENTENCES[:4]]), "tc", role="tc")
    ws.save_corpus(Corpus(tokens=[f"{s} {i}".split() for i, s in enumerate(SENTENCES * 2)]), "dc", role="dc")
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: submitted.append((kind, params)))
    assert prepare_first_map(ws) == ["tc", "dc"]
    assert submitted == [("embed", {"corpus": "tc", "model": "default"}), ("embed", {"corpus": "dc", "model": "default"})]
    assert prepare_first_map(ws, max_sentences=5) == ["tc"]  # a large DC is left to its user


def test_a_map_waits_for_the_running_background_embedding_of_its_corpora(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from core.runner import jobs
    from core.runner.params import EmbedParams
    from core.selection.projection import await_background_embeddings

    embed = SimpleNamespace(status="running", spec=EmbedParams(corpus="demo-dc"), progress=0.4)
    other = SimpleNamespace(status="running", spec=EmbedParams(corpus="other"), progress=0.1)
    polls = iter([[embed, other], [embed, other], [other]])
    monkeypatch.setattr(jobs, "list_jobs", lambda ws, kind=None: next(polls))
    seen = []
    await_background_embeddings(Workspace(tmp_path / "ws"), ["demo-tc", "demo-dc"], "default",
                                lambda f, m="": seen.append(m), poll=0)
    assert seen == ["waiting for the background embedding of demo-dc (40%)"] * 2
