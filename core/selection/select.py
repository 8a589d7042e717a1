"""Data selection: pick SC from the domain corpus DC for continued pretraining on TC.

Every strategy of the selective-pretraining paper behind one call, `select(...)`:

- cosine         cosine to the mean TC embedding (pretrained encoder, or B1 after MLM on TC)
- cosine-concat  the same on [B1 ; B2] embeddings (B2 = B1 fine-tuned for NER)
- ner            NER-Selected: most entities predicted by a fine-tuned NER model
- ppl            lowest perplexity under a Kneser-Ney LM of TC
- mlm-ppl        lowest masked-LM pseudo-perplexity under B1
- random, all    baselines
- dsir           importance resampling on hashed 1-2-grams (Xie et al. 2023)
- knn            union of each TC sentence's nearest DC sentences (kNN-TAPT, Gururangan et al. 2020)

Each strategy yields a score per DC sentence and a full ranking (ties by score, then
DC index); the first `budget` of the ranking are selected. Results are saved in the
workspace (artifact kind "selection") keyed by a content hash of inputs and parameters.

>>> sel = select(tc, dc, "cosine", 0.1, workspace=ws)  # doctest: +SKIP
>>> sel.summary()["selected"]  # doctest: +SKIP
"""

from __future__ import annotations

import io
import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from core.data.corpus import Corpus
from core.data.stream import PARALLEL_MIN, CorpusStream, map_row_groups, selected_records
from core.data.workspace import Workspace, atomic_write_json, content_hash, resolve_corpus_ref, temp_path_for
from core.errors import UserError

Progress = Callable[[float, str], None]
ARTIFACT = "selection"
EXPORT_FORMATS = ("txt", "jsonl", "csv")
NER_BATCH = 10_000  # DC sentences predicted per pass of the NER strategy
MLM_BATCH = 10_000  # DC sentences per pseudo-perplexity call


class Strategy(str, Enum):
    COSINE = "cosine"
    COSINE_CONCAT = "cosine-concat"
    KNN = "knn"
    NER = "ner"
    PPL = "ppl"
    MLM_PPL = "mlm-ppl"
    DSIR = "dsir"
    RANDOM = "random"
    ALL = "all"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: str | Strategy) -> Strategy:
        if isinstance(name, Strategy):
            return name
        norm = str(name).strip().lower().replace("_", "-")
        try:
            return cls(norm)
        except ValueError:
            raise UserError(f"unknown strategy {name!r}: expected one of {', '.join(s.value for s in cls)}") from None

    @property
    def info(self) -> StrategyInfo:
        return STRATEGIES[self]


@dataclass(frozen=True)
class StrategyInfo:
    label: str
    description: str
    score_name: str
    higher_is_better: bool
    models: tuple[str, ...] = ()  # which of model / model2 / ner_model it reads
    needs_trained_model: bool = False  # unusable with the default encoder alone


STRATEGIES: dict[Strategy, StrategyInfo] = {
    Strategy.COSINE: StrategyInfo("Cosine to mean TC embedding", "Cosine similarity of each DC sentence to the mean TC embedding "
                                  "(pretrained encoder, or B1 = encoder after MLM on TC).", "cosine", True, ("model",)),
    Strategy.COSINE_CONCAT: StrategyInfo("Cosine on [B1 ; B2]", "Cosine to the mean TC embedding on concatenated embeddings of "
                                         "B1 (model) and B2 (model2, B1 fine-tuned for NER).", "cosine", True, ("model", "model2"), True),
    Strategy.KNN: StrategyInfo("kNN of TC sentences", "For each TC sentence its nearest DC sentences, unioned until the budget "
                               "(kNN-TAPT). Score: highest cosine to any TC sentence.", "max cosine", True, ("model",)),
    Strategy.NER: StrategyInfo("NER-Selected", "Sentences with the most entities predicted by a fine-tuned NER model (B2); "
                               "ties by CRF sequence confidence c1.", "entities", True, ("ner_model",), True),
    Strategy.PPL: StrategyInfo("N-gram perplexity", "Lowest perplexity under a Kneser-Ney 3-gram LM of TC.", "perplexity", False),
    Strategy.MLM_PPL: StrategyInfo("MLM pseudo-perplexity", "Lowest masked-LM pseudo-perplexity under B1 (each token masked in turn).",
                                   "pseudo-perplexity", False, ("model",), True),
    Strategy.DSIR: StrategyInfo("DSIR", "Importance resampling on hashed 1-2-gram features (Xie et al. 2023): log p_TC/p_DC per "
                                "sentence, Gumbel-top-k sampled.", "log importance weight", True),
    Strategy.RANDOM: StrategyInfo("Random", "A uniform random sample of DC (seeded).", "random key", True),
    Strategy.ALL: StrategyInfo("All of DC", "Every DC sentence (budget ignored).", "none", True),
}


# --------------------------------------------------------------------------- budget and ranking


def resolve_budget(budget: int | float | str, dc_size: int) -> tuple[int, list[str]]:
    """A count (integer >= 1) or a ratio of DC (0 < b <= 1) -> (count, notes)."""
    if isinstance(budget, bool):
        raise UserError(f"budget must be a number, got {budget!r}")
    if isinstance(budget, str):
        text = budget.strip()
        try:
            budget = int(text) if text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise UserError(f"budget {text!r} is not a number: give a count (e.g. 5000) or a ratio of DC (e.g. 0.1)") from None
    if not isinstance(budget, (int, float, np.integer, np.floating)) or not math.isfinite(budget):
        raise UserError(f"budget must be a finite number, got {budget!r}")
    if budget <= 0:
        raise UserError(f"budget must be positive: a count >= 1 or a ratio in (0, 1], got {budget}")
    notes: list[str] = []
    if isinstance(budget, (float, np.floating)) and budget <= 1:
        count = max(1, int(round(float(budget) * dc_size)))
    elif float(budget) != int(budget):
        raise UserError(f"budget {budget} is neither a count (integer >= 1) nor a ratio of DC (0 < b <= 1)")
    else:
        count = int(budget)
    if count > dc_size:
        notes.append(f"budget {count:,} exceeds the DC size {dc_size:,}: selecting all of DC")
        count = dc_size
    return count, notes


def rank_order(scores: np.ndarray, higher_is_better: bool = True, secondary: np.ndarray | None = None) -> np.ndarray:
    """Full ranking of DC indices: by score, then by `secondary` (same direction), then by index."""
    scores = np.asarray(scores, dtype=np.float64)
    sign = -1.0 if higher_is_better else 1.0
    if secondary is None:
        # A stable sort keeps index order among ties: the lexsort below without its index key,
        # and half the temporary memory (10M sentences: one float64 key, one int64 result).
        return np.argsort(np.nan_to_num(sign * scores, nan=np.inf), kind="stable")
    keys = [np.arange(len(scores))]
    if secondary is not None:
        keys.append(sign * np.nan_to_num(np.asarray(secondary, dtype=np.float64), nan=-np.inf * sign))
    # NaN scores (e.g. an empty sentence under an LM) go last, whatever the direction
    keys.append(np.nan_to_num(sign * scores, nan=np.inf))
    return np.lexsort(keys)


# --------------------------------------------------------------------------- chunked similarity (float16 memmaps)


def _normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _chunk_rows(n_queries: int, budget_floats: int = 1 << 24) -> int:
    # the (Q, rows) similarity block stays ~64 MB and the float32 copy of the rows ~100 MB at 384 dims
    return max(1024, min(1 << 16, budget_floats // max(1, n_queries)))


def cosine_to_vector(emb: np.ndarray, vector: np.ndarray, chunk_rows: int = 1 << 16) -> np.ndarray:
    """Cosine of every row of `emb` (float16 memmap ok) to one vector, chunk by chunk."""
    v = _normalize(vector).ravel()
    out = np.empty(len(emb), dtype=np.float32)
    for start in range(0, len(emb), chunk_rows):
        out[start:start + chunk_rows] = _normalize(emb[start:start + chunk_rows]) @ v
    return out


def topk_cosine(emb: np.ndarray, queries: np.ndarray, k: int, chunk_rows: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each query its k most similar rows of `emb`, by chunked matrix products.

    Returns (indices (Q, k), similarities (Q, k), best similarity per row (N,)); rows of
    each query sorted by similarity, then index. Memory: one (Q, chunk) block plus (Q, k).
    """
    q = _normalize(queries)  # (Q, D)
    n = len(emb)
    k = min(k, n)
    chunk_rows = chunk_rows or _chunk_rows(len(q))
    best_idx = np.zeros((len(q), 0), dtype=np.int64)
    best_sim = np.zeros((len(q), 0), dtype=np.float32)
    row_max = np.empty(n, dtype=np.float32)
    for start in range(0, n, chunk_rows):
        block = _normalize(emb[start:start + chunk_rows])  # (C, D)
        sims = q @ block.T  # (Q, C)
        row_max[start:start + len(block)] = sims.max(axis=0)
        cand_sim = np.concatenate([best_sim, sims], axis=1)
        cand_idx = np.concatenate([best_idx, np.broadcast_to(np.arange(start, start + len(block)), sims.shape)], axis=1)
        if cand_sim.shape[1] > k:
            part = np.argpartition(-cand_sim, k - 1, axis=1)[:, :k]
            cand_sim = np.take_along_axis(cand_sim, part, 1)
            cand_idx = np.take_along_axis(cand_idx, part, 1)
        best_sim, best_idx = cand_sim, cand_idx
    order = np.lexsort((best_idx, -best_sim), axis=1)
    return np.take_along_axis(best_idx, order, 1), np.take_along_axis(best_sim, order, 1), row_max


# --------------------------------------------------------------------------- the strategies


@dataclass
class _Inputs:
    tc: Corpus
    dc: CorpusStream  # read in record batches, never whole
    budget: int
    model: str
    model2: str | None
    ner_model: str | None
    seed: int
    workspace: Workspace | None
    options: Mapping[str, Any]
    progress: Progress
    ray: str | None = None  # a Ray address ("local" starts one): embedding and LM scoring run as Ray Data passes

    def sub(self, start: float, end: float, prefix: str = "") -> Progress:
        from core.runner.progress import sub

        return sub(self.progress, start, end, prefix)


@dataclass
class _Ranking:
    scores: np.ndarray  # (N,) the strategy's score per DC sentence
    order: np.ndarray  # (N,) DC indices, best first
    extra: dict[str, Any] = field(default_factory=dict)


def _embed_pair(x: _Inputs, model: str, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    from core.lm.embed import embed_corpus

    mid = start + (end - start) * 0.1
    tc_emb = embed_corpus(x.tc, model, workspace=x.workspace, progress=x.sub(start, mid, "TC: "))
    dc_emb = embed_corpus(x.dc, model, workspace=x.workspace, progress=x.sub(mid, end, "DC: "), ray=x.ray)
    return tc_emb, dc_emb


def _by_cosine(x: _Inputs) -> _Ranking:
    tc_emb, dc_emb = _embed_pair(x, x.model, 0.0, 0.9)
    mean = _normalize(tc_emb).mean(0) if x.options.get("normalize_tc") else np.asarray(tc_emb, dtype=np.float32).mean(0)
    scores = cosine_to_vector(dc_emb, mean)
    return _Ranking(scores, rank_order(scores))


def _by_cosine_concat(x: _Inputs) -> _Ranking:
    if not x.model2:
        raise UserError("strategy 'cosine-concat' needs two models: model (B1, after MLM on TC) and model2 (B2, B1 fine-tuned for NER)")
    tc1, dc1 = _embed_pair(x, x.model, 0.0, 0.45)
    tc2, dc2 = _embed_pair(x, x.model2, 0.45, 0.9)
    # Each half is L2-normalised before concatenation so neither encoder dominates by scale.
    tc = np.concatenate([_normalize(tc1), _normalize(tc2)], axis=1)
    mean = tc.mean(0)
    scores = np.empty(len(x.dc), dtype=np.float32)
    step = 1 << 16
    for s in range(0, len(x.dc), step):
        block = np.concatenate([_normalize(dc1[s:s + step]), _normalize(dc2[s:s + step])], axis=1)
        scores[s:s + step] = _normalize(block) @ _normalize(mean)
    return _Ranking(scores, rank_order(scores))


def _by_knn(x: _Inputs) -> _Ranking:
    tc_emb, dc_emb = _embed_pair(x, x.model, 0.0, 0.9)
    n_tc = max(1, len(tc_emb))
    # Neighbours per TC sentence: enough that the union reaches the budget despite overlaps.
    k = min(len(dc_emb), int(x.options.get("k") or 2 * math.ceil(x.budget / n_tc) + 1))
    nn_idx, _, row_max = topk_cosine(dc_emb, tc_emb, k)
    # A DC sentence's kNN level = its best rank in any TC sentence's neighbour list; levels
    # 1, 2, ... are unioned in turn (ties by similarity, then index); sentences in no list
    # follow by their best similarity.
    level = np.full(len(dc_emb), k + 1, dtype=np.int64)
    for r in range(nn_idx.shape[1]):
        np.minimum.at(level, nn_idx[:, r], r + 1)
    order = np.lexsort((np.arange(len(level)), -row_max.astype(np.float64), level))
    return _Ranking(row_max, order, {"k": k})


def _by_ner(x: _Inputs) -> _Ranking:
    if not x.ner_model:
        raise UserError("strategy 'ner' needs a fine-tuned NER model (B2): train one on LC and pass its folder "
                        "(--ner-model DIR, or the NER model field)")
    try:
        from core.train.ner import load_ner_model, predict_corpus
    except ImportError as exc:
        raise UserError(f"strategy 'ner' needs a NER model, but NER support (core.train.ner) is not available: {exc}") from None
    from core.lm.models import resolve_model

    if resolve_model(x.ner_model).ner_config() is None:
        raise UserError(f"{x.ner_model} is not a fine-tuned NER model folder (no ner_config.json); strategy 'ner' needs a NER model")
    model = load_ner_model(x.ner_model)
    x.progress(0.05, "NER model loaded")
    n_spans = np.empty(len(x.dc), dtype=np.float32)
    c1 = np.empty(len(x.dc), dtype=np.float64)
    done, n = 0, len(x.dc)
    for part in x.dc.batches(NER_BATCH):  # predictions of one batch at a time: memory flat in DC's size
        lo = done / n
        hi = (done + len(part)) / n
        preds = predict_corpus(model, part, batch_size=int(x.options.get("batch_size", 32)),
                               progress=x.sub(0.05 + 0.9 * lo, 0.05 + 0.9 * hi, "NER: "))
        n_spans[done:done + len(part)] = [len(p.spans) for p in preds]
        c1[done:done + len(part)] = [p.c1 for p in preds]
        done += len(part)
    return _Ranking(n_spans, rank_order(n_spans, True, secondary=c1), {"c1": c1})


def _by_ngram_ppl(x: _Inputs) -> _Ranking:
    try:
        from core.lm.ngram import build_lm
    except ImportError as exc:
        raise UserError(f"strategy 'ppl' needs the Kneser-Ney n-gram LM (core.lm.ngram), which is not available: {exc}") from None
    lm = build_lm(x.tc.tokens, order=int(x.options.get("order", 3)), progress=x.sub(0.0, 0.3, "LM: "))
    x.progress(0.3, "scoring DC")
    if x.ray:
        from core.lm.distributed import ray_lm_perplexities

        ppl = ray_lm_perplexities(lm, x.dc, x.ray, progress=x.sub(0.3, 1.0, "DC: "))
    else:
        ppl = streamed_perplexities(lm, x.dc, progress=x.sub(0.3, 1.0, "DC: "))
    return _Ranking(ppl, rank_order(ppl, higher_is_better=False))


def _lm_perplexities(tokens: list[list[str]], lm: Any) -> np.ndarray:
    return np.asarray(lm.sentence_perplexities(tokens), dtype=np.float64)


def streamed_perplexities(lm: Any, dc: CorpusStream | Corpus, progress: Progress | None = None) -> np.ndarray:
    """Per-sentence perplexity of every DC sentence, one record batch at a time (8 bytes/sentence)."""
    dc = CorpusStream.of(dc)
    if dc.streamed and len(dc) > PARALLEL_MIN:  # every core, each worker reading its own row groups
        return np.concatenate(map_row_groups(dc, _lm_perplexities, (lm,), progress=progress)).astype(np.float64)
    out = np.empty(len(dc), dtype=np.float64)
    done = 0
    for toks in dc.token_batches():
        out[done:done + len(toks)] = lm.sentence_perplexities(toks)
        done += len(toks)
        if progress is not None:
            progress(done / max(1, len(dc)), f"{done:,}/{len(dc):,} sentences scored")
    return out


def _by_mlm_ppl(x: _Inputs) -> _Ranking:
    ppl = np.empty(len(x.dc), dtype=np.float64)
    done, n = 0, len(x.dc)
    for texts in x.dc.text_batches(MLM_BATCH):
        ppl[done:done + len(texts)] = pseudo_perplexities(texts, x.model, batch_size=int(x.options.get("batch_size", 64)),
                                                          progress=x.sub(done / n, (done + len(texts)) / n))
        done += len(texts)
    return _Ranking(ppl, rank_order(ppl, higher_is_better=False))


def load_mlm(model: str):
    """(tokenizer, AutoModelForMaskedLM) or a UserError when the MLM head would be freshly
    initialised (e.g. the default encoder): scores from a random head mean nothing."""
    from core.lm.models import load_masked_lm, load_tokenizer, resolve_model

    ref = resolve_model(model)
    mlm, fresh = load_masked_lm(ref)
    if fresh:
        raise UserError(f"strategy 'mlm-ppl' needs an MLM-trained model (B1): {ref.name!r} has no trained masked-LM head "
                        f"({len(fresh)} head weights would be newly initialised, e.g. {fresh[0]}); run MLM training on TC "
                        "and pass its output folder")
    return load_tokenizer(ref), mlm.eval()


_MLMS: dict[str, Any] = {}


def _cached_mlm(model: str):
    """load_mlm once per process: mlm-ppl calls pseudo_perplexities once per DC batch."""
    from core.lm.models import resolve_model

    key = resolve_model(model).fingerprint()
    if key not in _MLMS:
        _MLMS.clear()
        _MLMS[key] = load_mlm(model)
    return _MLMS[key]


def pseudo_perplexities(texts: Sequence[str], model: str, batch_size: int = 64, device: str = "auto",
                        max_length: int = 128, progress: Progress | None = None) -> np.ndarray:
    """Masked-LM pseudo-perplexity per sentence (Salazar et al. 2020): mask each subword in
    turn, exp of the mean negative log-likelihood of the true subwords. Masked copies of
    equal-length sentences share batches, and the vocabulary projection runs only at the
    masked position (where the model exposes its head), which halves the cost for BERT-size vocabularies."""
    import torch

    from core.lm.models import pick_device

    tokenizer, mlm = _cached_mlm(model)
    dev = pick_device(device)
    mlm.to(dev)
    enc = tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)
    items = [(s, p) for s, mask in enumerate(enc["special_tokens_mask"]) for p, special in enumerate(mask) if not special]
    items.sort(key=lambda sp: (len(enc["input_ids"][sp[0]]), sp[0], sp[1]))  # equal lengths together: no padding
    nll = np.zeros(len(texts), dtype=np.float64)
    count = np.zeros(len(texts), dtype=np.int64)
    head = getattr(mlm, "cls", None) or getattr(mlm, "lm_head", None)
    base = getattr(mlm, mlm.base_model_prefix, None)
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            batch = items[start:start + batch_size]
            width = max(len(enc["input_ids"][s]) for s, _ in batch)
            ids = torch.full((len(batch), width), tokenizer.pad_token_id or 0, dtype=torch.long)
            attn = torch.zeros((len(batch), width), dtype=torch.long)
            for r, (s, _) in enumerate(batch):
                row = enc["input_ids"][s]
                ids[r, :len(row)] = torch.tensor(row)
                attn[r, :len(row)] = 1
            pos = torch.tensor([p for _, p in batch])
            rows = torch.arange(len(batch))
            true = ids[rows, pos].clone()
            ids[rows, pos] = tokenizer.mask_token_id
            ids, attn = ids.to(dev), attn.to(dev)
            if head is not None and base is not None:
                hidden = base(input_ids=ids, attention_mask=attn).last_hidden_state  # (B, T, H)
                logits = head(hidden[rows.to(dev), pos.to(dev)])  # (B, V)
            else:
                logits = mlm(input_ids=ids, attention_mask=attn).logits[rows.to(dev), pos.to(dev)]  # (B, V)
            logp = torch.log_softmax(logits.float(), dim=-1).gather(1, true.to(dev).unsqueeze(1)).squeeze(1).cpu().numpy()
            for (s, _), lp in zip(batch, logp):
                nll[s] -= lp
                count[s] += 1
            if progress is not None:
                progress(min(1.0, (start + len(batch)) / max(1, len(items))), f"{start + len(batch):,}/{len(items):,} masked tokens")
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, np.exp(nll / np.maximum(count, 1)), np.nan)


def _by_dsir(x: _Inputs) -> _Ranking:
    from core.lm.dsir import dsir_log_weights, gumbel_top_order

    logw = dsir_log_weights(x.tc, x.dc, buckets=int(x.options.get("buckets", 10_000)), progress=x.progress)
    if x.options.get("sampling", "gumbel") == "topk":
        return _Ranking(logw, rank_order(logw), {"sampling": "topk"})
    return _Ranking(logw, gumbel_top_order(logw, x.seed), {"sampling": "gumbel"})


def _by_random(x: _Inputs) -> _Ranking:
    keys = np.random.default_rng(x.seed).random(len(x.dc))  # needs DC's size only: nothing is read
    return _Ranking(keys, rank_order(keys))


def _all(x: _Inputs) -> _Ranking:
    return _Ranking(np.zeros(len(x.dc), dtype=np.float32), np.arange(len(x.dc)))


_SCORERS: dict[Strategy, Callable[[_Inputs], _Ranking]] = {
    Strategy.COSINE: _by_cosine, Strategy.COSINE_CONCAT: _by_cosine_concat, Strategy.KNN: _by_knn, Strategy.NER: _by_ner,
    Strategy.PPL: _by_ngram_ppl, Strategy.MLM_PPL: _by_mlm_ppl, Strategy.DSIR: _by_dsir, Strategy.RANDOM: _by_random,
    Strategy.ALL: _all,
}


# --------------------------------------------------------------------------- the result


@dataclass
class Selection:
    """Selected DC sentences (best first) with the full score array and ranking over DC."""

    strategy: str
    indices: np.ndarray  # (k,) DC indices of the selected sentences, rank order
    scores: np.ndarray  # (N,) score of every DC sentence
    order: np.ndarray  # (N,) every DC index, best first
    meta: dict[str, Any]
    key: str | None = None
    folder: Path | None = None
    source: CorpusStream | None = None  # DC, to read the selected rows from when they are needed
    selected_corpus: Corpus | None = field(default=None, repr=False)

    @property
    def selected(self) -> Corpus:
        """The selected sentences with every field DC carried, read on first use (from DC, or
        from the saved selected.jsonl): a 1M-sentence selection is not held unless asked for."""
        if self.selected_corpus is None:
            if self.source is not None:
                self.selected_corpus = self.source.take(self.indices)
            elif self._rows_path() is not None:
                rows = list(self._file_records())
                fixed = {"text", "tokens", "score", "rank", "dc_index"}
                fields = {k: [r.get(k) for r in rows] for k in (rows[0] if rows else {}) if k not in fixed}
                self.selected_corpus = Corpus(tokens=[r["tokens"] for r in rows], fields=fields,
                                              name=self.meta.get("dc_name", ""))
            else:
                raise UserError(f"selection {self.key} has neither its DC nor a saved selected.jsonl")
        return self.selected_corpus

    def _rows_path(self) -> Path | None:
        path = self.folder / "selected.jsonl" if self.folder is not None else None
        return path if path is not None and path.exists() else None

    def _file_records(self) -> Iterator[dict[str, Any]]:
        with open(self._rows_path(), encoding="utf-8") as fh:  # type: ignore[arg-type]
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    @property
    def dc_size(self) -> int:
        return int(self.meta["dc_size"])

    @property
    def budget(self) -> int:
        return len(self.indices)

    @property
    def notes(self) -> list[str]:
        return list(self.meta.get("notes", []))

    def records(self) -> Iterator[dict[str, Any]]:
        """JSON-ready rows in rank order, streamed: from selected.jsonl when saved, else from DC."""
        if self.selected_corpus is None and self._rows_path() is not None:
            yield from self._file_records()
            return
        if self.selected_corpus is None and self.source is not None and self.source.streamed:
            yield from selected_records(self.source, self.indices, self.scores)
            return
        for rank, i in enumerate(self.indices):
            rec = self.selected.record(rank)
            rec.pop("tags", None)
            yield {"text": rec.pop("text"), "tokens": rec.pop("tokens"), "score": _jsonable(self.scores[i]), "rank": rank + 1,
                   "dc_index": int(i), **rec}

    def write_export(self, path: str | Path, fmt: str | None = None) -> Path:
        """The export written row by row (atomically): memory stays flat for any selection size."""
        path = Path(path)
        fmt = fmt or {".txt": "txt", ".csv": "csv"}.get(path.suffix.lower(), "jsonl")
        if fmt not in EXPORT_FORMATS:
            raise UserError(f"unknown export format {fmt!r}: expected one of {', '.join(EXPORT_FORMATS)}")
        tmp = temp_path_for(path)
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                _write_records(fh, self.records(), fmt)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    def to_frame(self, limit: int | None = None):
        import pandas as pd

        rows = []
        for rec in self.records():
            rec.pop("tokens")
            rows.append(rec)
            if limit is not None and len(rows) >= limit:
                break
        return pd.DataFrame(rows)

    def export_bytes(self, fmt: str) -> bytes:
        """The selection as txt (one sentence per line), JSONL (all fields) or CSV."""
        if fmt not in EXPORT_FORMATS:
            raise UserError(f"unknown export format {fmt!r}: expected one of {', '.join(EXPORT_FORMATS)}")
        buf = io.StringIO(newline="")
        _write_records(buf, self.records(), fmt)
        return buf.getvalue().encode("utf-8")

    def domain_precision(self, target_domain: str | None = None) -> dict[str, Any] | None:
        """Share of selected sentences from the target domain, next to random's expectation
        (the domain's share of DC). None when DC carries no `domain` field or no target is known."""
        counts: dict[str, int] = self.meta.get("dc_domain_counts") or {}
        target = target_domain or self.meta.get("target_domain")
        if not counts or target is None:
            return None
        selected_counts = self.meta.get("selected_domain_counts")
        if selected_counts is not None:  # counted while selecting: no need to read the selected rows
            hits = int(selected_counts.get(str(target), 0))
        elif "domain" in self.selected.fields:
            hits = sum(1 for d in self.selected.fields["domain"] if str(d) == str(target))
        else:
            return None
        return {"target_domain": target, "domain_precision": hits / max(1, len(self.indices)),
                "random_domain_precision": counts.get(str(target), 0) / max(1, self.dc_size)}

    def summary(self, target_domain: str | None = None) -> dict[str, Any]:
        out = {"strategy": self.strategy, "selected": len(self.indices), "dc_size": self.dc_size,
               "seconds": self.meta.get("seconds"), "key": self.key, "score_name": self.meta.get("score_name"),
               "notes": self.notes}
        dp = self.domain_precision(target_domain)
        if dp is not None:
            out.update(dp)
        return out


def _jsonable(v: Any) -> Any:
    v = float(v)
    return v if math.isfinite(v) else None


def _write_records(fh: Any, records: Iterator[dict[str, Any]], fmt: str) -> None:
    """txt (one sentence per line), JSONL (every field) or CSV (every field but tokens), row by row."""
    if fmt == "txt":
        for r in records:
            fh.write(" ".join(r["tokens"]) + "\n")
    elif fmt == "jsonl":
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        import csv

        writer = None
        for r in records:
            r = {k: v for k, v in r.items() if k != "tokens"}
            if writer is None:
                writer = csv.DictWriter(fh, fieldnames=list(r), extrasaction="ignore", lineterminator="\n")
                writer.writeheader()
            writer.writerow({k: "" if v is None else v for k, v in r.items()})


# --------------------------------------------------------------------------- select()


def select(tc: Corpus | CorpusStream, dc: Corpus | CorpusStream, strategy: str | Strategy, budget: int | float | str, *,
           model: str = "default", model2: str | None = None, ner_model: str | None = None, target_domain: str | None = None,
           seed: int = 0, workspace: Workspace | None = None, progress: Progress | None = None,
           options: Mapping[str, Any] | None = None, names: Mapping[str, str] | None = None,
           ray: str | None = None) -> Selection:
    """Rank DC for TC with `strategy` and keep the first `budget` sentences.

    `budget`: a count (integer >= 1) or a ratio of DC (0 < b <= 1). `options` holds
    strategy knobs (dsir: sampling "gumbel"|"topk", buckets; knn: k;
    ppl: order; cosine: normalize_tc, averaging unit vectors instead of raw embeddings as the
    paper does; ner / mlm-ppl: batch_size).
    DC may be a `CorpusStream` (`CorpusStream.from_workspace(ws, "dc")`): every strategy then
    reads it in record batches, and memory stays at a batch plus the (N,) score and order arrays.
    `ray`: a Ray address ("local" starts a local cluster) for the embedding and LM-scoring
    passes; same result as without (the selection key does not include it).
    With a workspace the result is saved (and reused) as artifact "selection".
    `names` ({"tc": ..., "dc": ...}) records workspace corpus names in the metadata.
    """
    t0 = time.time()
    strat = Strategy.parse(strategy)
    info = strat.info
    if isinstance(tc, CorpusStream):
        tc = tc.to_corpus()  # TC is small: the LM and the mean embedding need it whole
    stream = CorpusStream.of(dc)
    n = len(stream)
    if n == 0:
        raise UserError("the domain corpus DC is empty")
    if len(tc) == 0 and strat not in (Strategy.RANDOM, Strategy.ALL):
        raise UserError("the task corpus TC is empty")
    count, notes = resolve_budget(budget, n)
    if strat == Strategy.ALL:
        if count < n:
            notes.append(f"strategy 'all' ignores the budget ({count:,}): all {n:,} DC sentences selected")
        count = n
    options = dict(options or {})
    report = progress or (lambda f, m="": None)
    target = resolve_target_domain(tc, target_domain)

    from core.lm.embed import corpus_digest

    tc_hash, dc_hash = corpus_digest(tc), stream.digest()
    key = content_hash("selection", tc_hash, dc_hash, strat.value, count, _model_ids(strat, model, model2, ner_model),
                       seed if strat in (Strategy.RANDOM, Strategy.DSIR) else None, options)
    if workspace is not None:
        cached = _load_if_complete(workspace, key, stream)
        if cached is not None:
            cached.meta["seconds"] = time.time() - t0
            if target is not None:
                cached.meta["target_domain"] = target
            report(1.0, "loaded from the workspace")
            return cached

    x = _Inputs(tc=tc, dc=stream, budget=count, model=model, model2=model2, ner_model=ner_model, seed=seed,
                workspace=workspace, options=options, progress=report, ray=ray)
    ranking = _SCORERS[strat](x)
    order = np.asarray(ranking.order, dtype=np.int64)
    indices = order[:count]
    dc_domains = stream.field_counts("domain")
    selected_domains = stream.field_counts("domain", indices) if dc_domains is not None else None
    meta = {"strategy": strat.value, "budget_requested": budget if not isinstance(budget, np.generic) else budget.item(),
            "budget": count, "dc_size": n, "tc_size": len(tc), "model": model if "model" in info.models else None,
            "model2": model2 if "model2" in info.models else None,
            "ner_model": ner_model if "ner_model" in info.models else None, "seed": seed, "options": options,
            "tc_hash": tc_hash, "dc_hash": dc_hash, "tc_name": (names or {}).get("tc", tc.name),
            "dc_name": (names or {}).get("dc", stream.name), "score_name": info.score_name,
            "higher_is_better": info.higher_is_better, "notes": notes, "target_domain": target,
            "dc_domain_counts": dict(dc_domains) if dc_domains is not None else None,
            "selected_domain_counts": dict(selected_domains) if selected_domains is not None else None,
            "extra": {k: v for k, v in ranking.extra.items() if not isinstance(v, np.ndarray)},
            "created": time.time()}
    sel = Selection(strategy=strat.value, indices=indices, scores=np.asarray(ranking.scores), order=order, meta=meta, key=key,
                    source=stream)
    meta["seconds"] = time.time() - t0
    if workspace is not None:
        report(0.99, f"writing {count:,} selected sentences")
        save_selection(workspace, sel)
    report(1.0, f"selected {count:,} of {n:,}")
    return sel


def open_dc(ws: Workspace, ref: str | Path) -> CorpusStream:
    """DC as a stream: a workspace corpus (by name or role) is read from its Parquet file in
    record batches; a file path is read into memory (import it to stream it)."""
    stream = CorpusStream.from_workspace(ws, str(ref))
    return stream if stream is not None else CorpusStream(ws.resolve_corpus(ref))


def _model_ids(strat: Strategy, model: str, model2: str | None, ner_model: str | None) -> dict[str, str]:
    from core.lm.models import resolve_model

    given = {"model": model, "model2": model2, "ner_model": ner_model}
    return {name: resolve_model(given[name]).fingerprint() for name in strat.info.models if given[name]}


def resolve_target_domain(tc: Corpus, target_domain: str | None) -> str | None:
    """The user's target domain, else TC's majority `domain` when TC carries the field."""
    if target_domain:
        return str(target_domain)
    values = tc.fields.get("domain")
    if not values:
        return None
    return str(Counter(str(v) for v in values).most_common(1)[0][0])


# --------------------------------------------------------------------------- persistence


def save_selection(ws: Workspace, sel: Selection) -> Path:
    """selected.jsonl + scores.npy + order.npy + meta.json under artifacts/selection/KEY; meta.json last
    (its presence marks a complete artifact). The selected rows are written one by one, read
    from DC in a single pass when DC is streamed."""
    folder = ws.artifact_dir(ARTIFACT, sel.key or content_hash(sel.meta))
    for name, arr in (("scores.npy", sel.scores), ("order.npy", sel.order)):
        tmp = temp_path_for(folder / name)
        with open(tmp, "wb") as fh:
            np.save(fh, np.asarray(arr, dtype=np.float32 if name == "scores.npy" else np.int64))
        os.replace(tmp, folder / name)
    sel.write_export(folder / "selected.jsonl", "jsonl")
    atomic_write_json(folder / "meta.json", {**sel.meta, "key": folder.name})
    sel.folder, sel.key = folder, folder.name
    return folder


def load_selection(ws: Workspace, key: str) -> Selection:
    """A saved selection; scores and order memory-mapped, the selected rows read from
    selected.jsonl only when asked for (`records()` streams them, `.selected` loads them)."""
    folder = ws.find_artifact(ARTIFACT, key)
    if folder is None or not (folder / "meta.json").exists():
        raise UserError(f"no saved selection {key!r} in workspace {ws.root}")
    meta = json.loads((folder / "meta.json").read_text("utf-8"))
    order = np.load(folder / "order.npy", mmap_mode="r")
    return Selection(strategy=meta["strategy"], indices=np.asarray(order[:int(meta["budget"])], dtype=np.int64),
                     scores=np.load(folder / "scores.npy", mmap_mode="r"), order=order, meta=meta, key=folder.name,
                     folder=folder)


def _load_if_complete(ws: Workspace, key: str, dc: CorpusStream) -> Selection | None:
    folder = ws.find_artifact(ARTIFACT, key)
    if folder is None or not (folder / "meta.json").exists():
        return None
    sel = load_selection(ws, key)
    if not dc.streamed:
        sel.source = dc  # carried fields with their original types, read from DC on first use
    sel.meta["notes"] = [*sel.notes, "loaded from the workspace (same inputs and parameters)"]
    return sel


def list_selections(ws: Workspace) -> list[dict[str, Any]]:
    """Metadata of every saved selection, newest last: the one listing of the selection store
    (the Inspect page, the Runs page and MLM training read it through here)."""
    out = []
    for folder in ws.list_artifacts(ARTIFACT):
        meta_path = folder / "meta.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text("utf-8"))
            except (OSError, json.JSONDecodeError):
                continue  # a half-written or foreign folder is not a selection
            out.append({**meta, "key": folder.name, "folder": str(folder)})
    return out


def find_selection(ws: Workspace, ref: str | Path) -> Path | None:
    """The folder of a saved selection named by key (or a unique key prefix), or by its folder path."""
    def usable(folder: Path) -> bool:  # meta.json marks a complete selection; selected.jsonl alone is readable too
        return (folder / "meta.json").exists() or (folder / "selected.jsonl").exists()

    path = Path(str(ref))
    if path.is_dir() and usable(path):
        return path
    exact = ws.find_artifact(ARTIFACT, str(ref)) if "/" not in str(ref) else None
    if exact is not None and usable(exact):
        return exact
    text = str(ref)
    if len(text) < 6 or any(c not in "0123456789abcdef" for c in text):
        return None  # only a key prefix of 6+ hex digits, so a corpus name never matches by accident
    matches = [Path(m["folder"]) for m in list_selections(ws) if str(m["key"]).startswith(text)]
    return matches[0] if len(matches) == 1 else None


def selection_folder(ws: Workspace, ref: str | Path) -> Path:
    """`find_selection`, or a UserError saying how a selection can be named."""
    folder = find_selection(ws, ref)
    if folder is None:
        raise UserError(f"no saved selection {str(ref)!r} in workspace {ws.root} (a key, a key prefix of 6+ hex digits, "
                        "or a selection folder)")
    return folder


def selection_texts(ws: Workspace, ref: str | Path) -> Iterator[str]:
    """The selected sentences' texts in rank order, streamed from selected.jsonl (MLM training
    reads a selection through here)."""
    folder = selection_folder(ws, ref)
    with open(folder / "selected.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield rec["text"] if rec.get("text") is not None else " ".join(rec.get("tokens") or [])


def selection_label(meta: Mapping[str, Any]) -> str:
    model = f" · {Path(str(meta['model'])).name}" if meta.get("model") and meta.get("model") != "default" else ""
    return f"{meta['strategy']}{model} · {meta['budget']:,}/{meta['dc_size']:,} · {meta.get('dc_name') or '?'} [{meta['key'][:8]}]"


# --------------------------------------------------------------------------- comparing selections


def overlap_matrix(selections: Sequence[Selection], labels: Sequence[str] | None = None):
    """Pairwise Jaccard overlap of selected DC indices (NaN between selections of different DCs)."""
    import pandas as pd

    labels = list(labels or [f"{s.strategy} [{(s.key or '')[:6]}]" for s in selections])
    sets = [set(s.indices.tolist()) for s in selections]
    m = np.full((len(sets), len(sets)), np.nan)
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            if selections[i].meta.get("dc_hash") == selections[j].meta.get("dc_hash"):
                m[i, j] = len(a & b) / max(1, len(a | b))
    return pd.DataFrame(m, index=labels, columns=labels)


def ranking_table(sel: Selection, dc: Corpus | None = None, head: int = 20, tail: int = 20, workspace: Workspace | None = None):
    """Top and bottom of the full ranking. The bottom's texts need DC: pass it, or a workspace
    holding the selection's DC by name (only the shown rows are read, as Arrow, not the whole corpus)."""
    import pandas as pd

    n = len(sel.order)
    picks = list(range(min(head, n))) + list(range(max(min(head, n), n - tail), n))
    idx = [int(sel.order[r]) for r in picks]
    rows_corpus = None
    if dc is not None:
        rows_corpus = dc.subset(idx)
    elif workspace is not None:
        rows_corpus = _dc_rows(workspace, sel, idx)
    keys = None
    if (sel.meta.get("extra") or {}).get("sampling") == "gumbel":  # the order sorts on score + Gumbel noise: show it
        from core.lm.dsir import gumbel_keys

        keys = gumbel_keys(sel.scores, int(sel.meta.get("seed") or 0))
    rows = []
    for j, (r, i) in enumerate(zip(picks, idx)):
        row = {"rank": r + 1, "dc_index": i, "score": _jsonable(sel.scores[i]), "selected": r < sel.budget,
               "text": " ".join(rows_corpus.tokens[j]) if rows_corpus is not None else ""}
        if keys is not None:
            row["sampled_key"] = float(keys[i])
        if rows_corpus is not None:
            row.update({k: v[j] for k, v in rows_corpus.fields.items() if k != "id"})
        rows.append(row)
    return pd.DataFrame(rows)


def _dc_rows(ws: Workspace, sel: Selection, idx: list[int]) -> Corpus | None:
    name = sel.meta.get("dc_name")
    try:  # the one resolver: a name, or a role ("dc") the CLI accepted
        ref = resolve_corpus_ref(name, ws) if name else None
    except UserError:
        ref = None
    if ref is None or ref.kind == "path" or ws.corpus_info(ref.name).sentences != sel.dc_size:
        return None
    return CorpusStream.from_workspace(ws, ref.name).take(idx)  # only the row groups holding these rows


def score_histogram(sel: Selection, bins: int = 60):
    """Counts of scores per bin, split into selected and filtered: a few hundred rows for the
    browser instead of one per DC sentence."""
    import pandas as pd

    scores = np.asarray(sel.scores, dtype=np.float64)
    finite = np.isfinite(scores)
    if not finite.any():
        return pd.DataFrame(columns=["score", "count", "part"])
    edges = np.histogram_bin_edges(scores[finite], bins=bins)
    mask = np.zeros(len(scores), dtype=bool)
    mask[sel.indices] = True
    frames = []
    for part, m in (("selected", mask), ("filtered", ~mask)):
        counts, _ = np.histogram(scores[m & finite], bins=edges)
        frames.append(pd.DataFrame({"score": (edges[:-1] + edges[1:]) / 2, "count": counts, "part": part}))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- job


def selection_job(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Job kind "select": params {"tc": name, "dc": name, "strategy", "budget", "model", "model2",
    "ner_model", "target_domain", "seed", "options"}; corpora named by workspace name (or path)."""
    ws: Workspace = ctx.workspace
    for role in ("tc", "dc", "strategy", "budget"):
        if params.get(role) in (None, ""):
            raise UserError(f"selection needs '{role}'")
    tc = ws.resolve_corpus(params["tc"])
    dc = open_dc(ws, params["dc"])
    target = params.get("target_domain") or resolve_target_domain(tc, None) or ws.settings().get("target_domain")
    ray = params.get("ray") or ws.settings().get("ray_address") or None
    ctx.log(f"select {params['strategy']} budget {params['budget']}: TC {params['tc']} ({len(tc)}), DC {params['dc']} ({len(dc)})"
            + (f" on Ray {ray}" if ray else ""))
    sel = select(tc, dc, params["strategy"], params["budget"], model=params.get("model") or "default",
                 model2=params.get("model2") or None, ner_model=params.get("ner_model") or None, target_domain=target,
                 seed=int(params.get("seed", 0)), workspace=ws, progress=ctx.progress, options=params.get("options"),
                 names={"tc": str(params["tc"]), "dc": str(params["dc"])}, ray=ray)
    summary = sel.summary()
    for note in sel.notes:
        ctx.log(note)
    ctx.metric(**{k: v for k, v in summary.items() if isinstance(v, (int, float))})
    return summary
