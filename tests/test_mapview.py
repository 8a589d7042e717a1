"""Map exploring helpers (core.selection.mapview): robust axes, search, nearest neighbours by cosine."""

from __future__ import annotations

import numpy as np
import pytest

from core.selection import mapview


def test_robust_range_ignores_outliers():
    v = np.concatenate([np.random.default_rng(0).normal(size=2000), [500.0, -400.0]])
    lo, hi = mapview.robust_range(v)
    assert -5 < lo < -2 and 2 < hi < 5
    assert mapview.robust_range(np.array([3.0, 3.0])) == pytest.approx((2.85, 3.15))
    assert mapview.robust_range(np.array([np.nan])) == (0.0, 1.0)


def test_search_mask_is_literal_case_insensitive_and_needs_every_word():
    words = [mapview.search_words(t) for t in ["The Beatles played (live)", "beatles songs", "Jazz in Oslo"]]
    assert mapview.search_mask(words, "BEATLES").tolist() == [True, True, False]
    assert mapview.search_mask(words, "beatles live").tolist() == [True, False, False]
    assert mapview.search_mask(words, "(live").tolist() == [True, False, False]
    assert mapview.search_mask(words, ".*").tolist() == [False, False, False]  # no regex, and no word: nothing
    assert not mapview.search_mask(words, "  ").any()


def test_search_matches_whole_words_anywhere_in_the_sentence():
    """Found in review: search read the hover text, cut at 240 characters, and matched inside words ('art' in
    'party'); the help says "every word of this query"."""
    long = " ".join(["word"] * 60) + " the festival in Krakow would go ahead ."
    words = [mapview.search_words(t) for t in (long, "modern art museum", "the party started late")]
    assert mapview.search_mask(words, "krakow").tolist() == [True, False, False]
    assert mapview.search_mask(words, "art").tolist() == [False, True, False]


def test_nearest_neighbours_cosine_excludes_the_point(tmp_path):
    x = np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0], [0.7, 0.7]], dtype=np.float32)
    vecs = mapview.normalised(x * 5)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-6)
    idx, sims = mapview.nearest_neighbours(vecs, 0, k=3)
    assert idx.tolist() == [1, 4, 2] and sims[0] > sims[1] > sims[2]
    assert 0 not in mapview.nearest_neighbours(vecs, 0, k=10)[0]
    with pytest.raises(Exception, match="not on this map"):
        mapview.nearest_neighbours(vecs, 9)
