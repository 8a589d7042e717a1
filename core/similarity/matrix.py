"""The source x target similarity matrix over workspace corpora, each value cached per measure (keyed by the
corpora's content hashes and only the settings that change that measure), the per-sentence PPL histogram of
DC under a TC model, and the "similarity" job."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.atomic import atomic_write_json, temp_path_for
from core.data.stream import CorpusStream
from core.data.workspace import Workspace, content_hash
from core.errors import UserError
from core.lm.ngram import build_lm
from core.progress import Progress, sub
from core.similarity.matrix_result import SimilarityMatrix
from core.similarity.measures import (
    CACHE_VERSION,
    CorpusSide,
    SimilarityParams,
    Text,
    content_word_method,
    mean_over_samples,
    pair_values,
    sample_subcorpora,
    type_token_ratio,
)

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import SimilarityJobParams

CACHE_KIND = "similarity"


def subsample_note(ws: Workspace, result: SimilarityMatrix) -> str:
    """How the sources were sub-sampled, in words, naming those too small to be (used whole, once: TVC and TTR grow
    with size, so a reader must know which sources were measured at another size)."""
    if not result.subsample:
        return ""
    n, k = result.subsample[0], result.subsample[1]
    whole = [s for s in result.sources if ws.has_corpus(s) and ws.corpus_info(s).tokens <= n]
    text = f"Sources sub-sampled to {n:,} tokens, {k}x, averaged"
    if whole:
        text += f"; {', '.join(whole)} ha{'s' if len(whole) == 1 else 've'} fewer tokens and entered whole, once"
    return text + "."


def similarity_matrix(ws: Workspace, sources: Sequence[str], targets: Sequence[str], params: SimilarityParams,
                      progress: Progress | None = None) -> SimilarityMatrix:
    """Every pairwise measure for every (source, target) of workspace corpora, plus TTR of each
    corpus. Values come from the workspace cache when both corpora and the measure's
    parameters are unchanged; each source's LM and skip-gram model is built once."""
    if not sources or not targets:
        raise UserError("choose at least one source and one target corpus")
    report = progress or (lambda f, m: None)
    infos = {n: ws.corpus_info(n) for n in {*sources, *targets}}
    if empty := sorted(n for n, info in infos.items() if not info.tokens):  # as compare_corpora refuses, before any
        raise UserError(f"corpus {', '.join(map(repr, empty))} holds no tokens: every measure needs two non-empty "  # work
                        "corpora; leave it out")
    hashes = {n: info.hash for n, info in infos.items()}
    measures = params.pairwise
    values: dict[str, list[list[float | None]]] = {}
    for key in _value_keys(measures, params):
        values[key] = [[None] * len(targets) for _ in sources]
    loaded: dict[str, Text] = {}

    def tokens_of(name: str) -> Text:  # streamed: a large DC is never held as token lists
        if name not in loaded:
            loaded[name] = CorpusStream(path=ws.corpus_path(name), name=name, workspace=ws, file_hash=hashes[name])
        return loaded[name]

    cached = computed = 0
    for i, s in enumerate(sources):
        samples: list[CorpusSide] | None = None
        target_sides: dict[str, CorpusSide] = {}
        for j, t in enumerate(targets):
            report((i * len(targets) + j) / (len(sources) * len(targets)), f"{s} → {t}")
            missing = []
            for m in measures:
                hit = _cache_read(ws, _cache_key(hashes[s], hashes[t], params, m))
                if hit is None:
                    missing.append(m)
                    continue
                cached += 1
                for k, v in hit.items():
                    if k in values:
                        values[k][i][j] = v
            if not missing:
                continue
            if samples is None:
                samples = [CorpusSide(x, params) for x in sample_subcorpora(tokens_of(s), params.subsample_tokens,
                                                                         params.subsample_k, params.seed)]
            tgt = target_sides.setdefault(t, CorpusSide(tokens_of(t), params))
            share = 1 / (len(sources) * len(targets) * len(samples))  # of the bar, per sample of this pair
            first = (i * len(targets) + j) * len(samples)
            pair = mean_over_samples([pair_values(src, tgt, missing, sub(report, (first + k) * share, (first + k + 1) * share,
                                                                       f"{s} → {t}, sample {k + 1}/{len(samples)}: "))
                                      for k, src in enumerate(samples)])
            for m in missing:
                mine = {k: v for k, v in pair.items() if k == m or k.startswith(m + "_")}
                _cache_write(ws, _cache_key(hashes[s], hashes[t], params, m), mine)
                computed += 1
                for k, v in mine.items():
                    if k in values:
                        values[k][i][j] = v
    result = SimilarityMatrix(
        sources=list(sources), targets=list(targets), measures=list(measures), values=values,
        params={**asdict(params), "measures": list(params.measures)}, cached=cached, computed=computed, hashes=hashes,
        tokens={n: ws.corpus_info(n).tokens for n in hashes})
    if "ttr" in params.measures:
        result.ttr = {n: _cached_ttr(ws, n, hashes[n], tokens_of) for n in dict.fromkeys([*sources, *targets])}
    if "tvcc" in params.measures:
        result.tvcc_method = content_word_method(params.tvcc_method)[1]
    report(1.0, f"{computed} values computed, {cached} from cache")
    return result


def _value_keys(measures: Sequence[str], params: SimilarityParams) -> list[str]:
    keys = []
    for m in measures:
        keys.append(m)
        if m == "ppl":
            keys.append("ppl_sum")
    if params.subsample_tokens is not None and params.subsample_k > 1:
        keys += [f"{k}_std" for k in list(keys)]
    return keys


def _cache_key(source_hash: str, target_hash: str, params: SimilarityParams, measure: str) -> str:
    return content_hash("pair", source_hash, target_hash, params.cache_params(measure))


def _cache_read(ws: Workspace, key: str) -> dict[str, float] | None:
    path = ws.find_artifact(CACHE_KIND, key)
    if path is None or not (path / "values.json").exists():
        return None
    import json

    return json.loads((path / "values.json").read_text("utf-8"))


def _cache_write(ws: Workspace, key: str, values: dict[str, float]) -> None:
    atomic_write_json(ws.artifact_dir(CACHE_KIND, key) / "values.json", values)


def _cached_ttr(ws: Workspace, name: str, corpus_hash: str, tokens_of: Callable[[str], Text]) -> float:
    key = content_hash("ttr", corpus_hash, CACHE_VERSION)
    hit = _cache_read(ws, key)
    if hit is not None:
        return hit["ttr"]
    ttr = type_token_ratio(tokens_of(name))
    _cache_write(ws, key, {"ttr": ttr})
    return ttr


def ppl_histogram(ws: Workspace, tc: str, dc: str, order: int = 3, bins: int = 40,
                  progress: Progress | None = None) -> dict[str, Any]:
    """Per-sentence perplexity of every DC sentence under a KN LM of TC (the PPL selection
    baseline's score), kept as perplexities.npy in the cache, summarised as a log10 histogram.
    DC is streamed in chunks, so a DC larger than memory as Python strings still works."""
    report = progress or (lambda f, m: None)
    key = content_hash("dc-ppl", ws.corpus_info(tc).hash, ws.corpus_info(dc).hash, order, CACHE_VERSION)
    folder = ws.find_artifact(CACHE_KIND, key)
    path = folder / "perplexities.npy" if folder else None
    if path is None or not path.exists():
        lm = build_lm(ws.load_corpus(tc).tokens, order=order, progress=lambda f, m: report(0.3 * f, f"TC LM: {m}"))
        report(0.3, "scoring DC")
        scores = lm.score_sentences(ws.iter_corpus(dc), backend="numpy")
        path = ws.artifact_dir(CACHE_KIND, key) / "perplexities.npy"
        tmp = temp_path_for(path)
        with open(tmp, "wb") as fh:
            np.save(fh, scores.perplexity)
        tmp.replace(path)
    ppl = np.load(path)
    finite = np.log10(ppl[np.isfinite(ppl)])
    counts, edges = np.histogram(finite, bins=bins) if len(finite) else (np.zeros(0), np.zeros(0))
    report(1.0, "histogram ready")
    q = np.percentile(ppl, [10, 50, 90]) if len(ppl) else [math.nan] * 3
    return {"tc": tc, "dc": dc, "order": order, "sentences": int(len(ppl)), "log10_edges": edges.tolist(),
            "counts": counts.astype(int).tolist(), "p10": float(q[0]), "median": float(q[1]), "p90": float(q[2]),
            "path": str(path)}


def similarity_job(params: SimilarityJobParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "similarity": the measures between every source and target (cached), and optionally the
    per-sentence PPL histogram of a DC under a TC model."""
    ws: Workspace = ctx.workspace
    settings = {k: v for k, v in dataclasses.asdict(params).items() if k not in ("sources", "targets", "histogram")}
    p = SimilarityParams.from_dict(settings)
    end = 0.8 if params.histogram else 1.0
    ctx.log(f"similarity: {len(params.sources)} sources x {len(params.targets)} targets, measures {', '.join(p.measures)}")
    result = similarity_matrix(ws, list(params.sources), list(params.targets), p, progress=ctx.sub(0.0, end, ""))
    ctx.log(f"{result.computed} values computed, {result.cached} cached")
    if params.histogram:
        result.histogram = ppl_histogram(ws, params.histogram["tc"], params.histogram["dc"], order=p.order,
                                         progress=ctx.sub(end, 1.0, "DC PPL: "))
    return result.to_dict()
