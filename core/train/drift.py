"""How far continued MLM moved the encoder: sentence embeddings of the same sentences before and after.

Two figures. The mean cosine between each sentence's base and adapted embedding (1 means unchanged). Linear CKA
(Kornblith et al. 2019) of the two embedding matrices (1 means the same geometry up to rotation and scale).
Issue 26 relates these to the NER F1 change, because an encoder that drifted far from the sentence-embedding
MiniLM may have lost what NER reused. CKA is a few lines of numpy here; no well-kept library ships it on its own.

>>> import numpy as np
>>> x = np.random.default_rng(0).normal(size=(50, 8))
>>> round(linear_cka(x, 3 * x @ np.linalg.qr(np.random.default_rng(1).normal(size=(8, 8)))[0]), 6)
1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.errors import UserError

DRIFT_SAMPLE = 300  # sentences: enough for a stable CKA, seconds to embed twice on CPU


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA of two (n, d) representations of the same n items."""
    x = x - x.mean(axis=0)
    y = y - y.mean(axis=0)
    cross = np.linalg.norm(y.T @ x) ** 2
    norm = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    return float(cross / norm) if norm > 0 else 0.0


def encoder_drift(base: str, model: str, texts: Sequence[str], sample: int = DRIFT_SAMPLE, seed: int = 0) -> dict[str, Any]:
    """Cosine and CKA between `base` and `model` sentence embeddings (mean pooling) of up to `sample` of `texts`."""
    from core.lm.encoder import embed_texts

    if not texts:
        raise UserError("no sentences to measure the encoder's drift on")
    if sample < 2:
        raise UserError(f"the drift sample needs at least 2 sentences, got {sample}")
    picked = sorted(np.random.default_rng(seed).permutation(len(texts))[:sample].tolist())
    chosen = [texts[i] for i in picked]
    a = embed_texts(chosen, base).astype(np.float64)
    b = embed_texts(chosen, model).astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return {"cosine": float(cos.mean()), "cka": linear_cka(a, b), "sentences": len(chosen)}
