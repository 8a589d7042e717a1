"""Why a DC sentence was chosen: its rank and percentile under every saved selection of the same DC (one scale:
percentiles, 100 = ranked first), its nearest TC sentences by cosine, the n-grams that weigh most in its DSIR
log-weight (log p_TC - log p_DC of each hashed 1-2-gram, Xie et al. 2023), and the entity words of a labeled
corpus it holds that TC lacks (what MLM on it could teach beyond TAPT; core.selection.coverage's words).

`python -m core select explain SELECTION INDEX --json` and the Selection page's "Why this sentence" both call
`explain_sentence`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.data import selection_store as store
from core.data.stream import CorpusStream, open_corpus_stream
from core.data.workspace import Workspace
from core.errors import UserError
from core.lm.dsir import DEFAULT_BUCKETS, hashed_ngrams, log_ratios
from core.selection.coverage import entity_mentions, word_set

DSIR_COUNTS = "dsir-counts"  # artifact kind: a DC's hashed n-gram counts (explain), by DC content and bucket count


def ranks_under_saved_selections(ws: Workspace, dc_hash: str, dc_index: int) -> list[dict[str, Any]]:
    """The sentence's rank in every saved selection over the same DC (by content hash), best first."""
    out = []
    for meta in store.list_selections(ws):
        if meta.dc_hash != dc_hash:
            continue
        sel = store.load_selection(ws, meta.key)
        n = len(sel.order)
        rank = int(np.flatnonzero(np.asarray(sel.order) == dc_index)[0]) + 1
        out.append({"selection": meta.key, "label": meta.label, "strategy": meta.strategy, "rank": rank, "of": n,
                    "percentile": round(100.0 * (n - rank) / max(n - 1, 1), 2), "selected": rank <= sel.budget,
                    "score": float(sel.scores[dc_index])})
    return sorted(out, key=lambda r: -r["percentile"])


def dsir_ngrams(tc_tokens: list[list[str]], dc: CorpusStream, sentence: list[str], top: int = 10,
                buckets: int = DEFAULT_BUCKETS, ws: Workspace | None = None, smoothing: str = "add-one") -> dict[str, Any]:
    """The sentence's DSIR log-weight (the summed one) and its n-grams by contribution (log p_TC - log p_DC of their
    bucket, times count), under the selection's smoothing (core.lm.dsir.log_ratios)."""
    from sklearn.utils import murmurhash3_32

    tc_counts = np.asarray(hashed_ngrams(tc_tokens, buckets).sum(axis=0)).ravel()
    diff = log_ratios(tc_counts, dc_bucket_counts(dc, buckets, ws), smoothing)
    words = [t.lower() for t in sentence]
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    # the bucket of an n-gram exactly as sklearn's HashingVectorizer (core.lm.dsir) hashes it
    weights: dict[str, float] = {}
    for g in grams:
        weights[g] = weights.get(g, 0.0) + float(diff[abs(murmurhash3_32(g, seed=0)) % buckets])
    ranked = sorted(weights.items(), key=lambda kv: -abs(kv[1]))
    return {"log_weight": float(sum(weights.values())), "ngrams": [{"ngram": g, "weight": round(w, 4)} for g, w in ranked[:top]]}


def dc_bucket_counts(dc: CorpusStream, buckets: int, ws: Workspace | None) -> np.ndarray:
    """DC's hashed 1-2-gram counts, kept per DC content and bucket count in the workspace: hashing every DC sentence
    took most of "Why this sentence" on a large DC (issue 43.12), and the counts never change for one DC."""
    from core.data.atomic import atomic_write_json, temp_path_for

    folder = ws.artifact_dir(DSIR_COUNTS, f"{dc.digest()}-{buckets}") if ws is not None else None
    if folder is not None and (folder / "meta.json").exists():
        return np.load(folder / "counts.npy")
    counts = np.zeros(buckets, dtype=np.float64)
    for toks in dc.token_batches():
        counts += np.asarray(hashed_ngrams(toks, buckets).sum(axis=0)).ravel()
    if folder is not None:
        tmp = temp_path_for(folder / "counts.npy")
        with open(tmp, "wb") as fh:
            np.save(fh, counts)
        tmp.replace(folder / "counts.npy")
        atomic_write_json(folder / "meta.json", {"dc_digest": dc.digest(), "buckets": buckets, "sentences": len(dc)})
    return counts


def nearest_tc(ws: Workspace, tc_name: str, text: str, model: str, k: int = 5) -> list[dict[str, Any]]:
    """TC's sentences nearest the text by cosine, TC's embeddings from the workspace cache (computed once: embedding
    all of TC on every click made "Why this sentence" take half a minute); only the one sentence is embedded here."""
    from core.lm.embed import embed_corpus
    from core.lm.encoder import embed_texts

    stream = open_corpus_stream(ws, tc_name)
    tc = np.asarray(embed_corpus(stream, model, workspace=ws), dtype=np.float32)
    q = embed_texts([text], model)[0]
    sims = tc @ q / np.maximum(np.linalg.norm(tc, axis=1) * np.linalg.norm(q), 1e-12)
    best = np.argsort(-sims, kind="stable")[:k]
    texts = stream.take([int(i) for i in best]).texts()
    return [{"tc_index": int(i), "cosine": round(float(sims[i]), 4), "text": t} for i, t in zip(best, texts)]


def entity_words_added(labeled_ref: str, ws: Workspace, tc_tokens: list[list[str]], sentence: list[str]) -> dict[str, Any]:
    corpus = ws.resolve_corpus(labeled_ref)
    if not corpus.labeled:
        raise UserError(f"{labeled_ref}: not a labeled corpus; entity words come from a labeled DEV/TEST")
    entity_words = {w for m in entity_mentions(corpus) for w in m.words}
    tc_words, _ = word_set(tc_tokens)
    here = {t.casefold() for t in sentence}
    return {"labeled": labeled_ref, "words": sorted(w for w in here & entity_words if w not in tc_words)}


def explain_sentence(ws: Workspace, selection: str, dc_index: int, labeled: str | None = "test", neighbours: int = 5,
                     top_ngrams: int = 10, model: str | None = None) -> dict[str, Any]:
    """Everything above for DC row `dc_index` of a saved selection's DC; nearest TC sentences by the selection's
    encoder (or `model`, else the default one)."""
    meta = store.selection_meta(ws, selection)
    dc_name, tc_name = meta.dc_name, meta.tc_name
    if not dc_name or not tc_name:
        raise UserError(f"selection {meta.key[:8]} does not name a workspace TC and DC: its sentences cannot be explained here")
    dc_name = store.selection_dc(ws, meta)
    dc = open_corpus_stream(ws, dc_name)
    if not 0 <= dc_index < len(dc):
        raise UserError(f"index {dc_index} is outside DC {dc_name!r} (0 to {len(dc) - 1})")
    tc = ws.resolve_corpus(tc_name)
    sentence = dc.take([dc_index]).tokens[0]
    text = " ".join(sentence)
    model = model or meta.model or "default"
    out: dict[str, Any] = {"selection": meta.key, "dc": dc_name, "dc_index": dc_index, "text": text,
                           "ranks": ranks_under_saved_selections(ws, meta.dc_hash or "", dc_index),
                           "nearest_tc": nearest_tc(ws, tc_name, text, model, neighbours), "encoder": model,
                           # the selection's own bucket count: its scores came from it (the default gave other weights)
                           "dsir": dsir_ngrams(tc.tokens, dc, sentence, top_ngrams,
                                               buckets=int((meta.options or {}).get("buckets") or DEFAULT_BUCKETS), ws=ws,
                                               smoothing=str((meta.options or {}).get("smoothing") or "add-one"))}
    if labeled:
        out["entity_words_added"] = entity_words_added(labeled, ws, tc.tokens, sentence)
    return out
