"""NER prediction and its evaluation: Viterbi spans with confidences c1 (sequence posterior) and c2 (minimum
marginal) per sentence, prediction files of any size (a DC streamed chunk by chunk), seqeval span F1, and the
"predict" job."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.corpus import Corpus
from core.data.stream import CorpusStream
from core.data.tags import Span, TagScheme, spans_from_tags, tags_from_spans
from core.errors import CorpusError, UserError
from core.lm.models import pick_device
from core.train.ner_model import NerModel, Prediction, load_ner_model
from core.train.training import (
    Progress,
    apply_cpu_threads,
)

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import PredictParams


def predict_corpus(model: NerModel, corpus: Corpus, batch_size: int = 32, device: str = "auto",
                   progress: Progress | None = None) -> list[Prediction]:
    """Viterbi tags, spans and (c1, c2) for every sentence, in corpus order. Sentences are
    batched by length (less padding), empty sentences get no spans and confidence 1."""
    dev = pick_device(device)
    if dev == "cpu":
        apply_cpu_threads()
    model.to(dev)
    was_training = model.training
    model.eval()
    n = len(corpus)
    out: list[Prediction | None] = [None] * n
    order = sorted((i for i in range(n) if corpus.tokens[i]), key=lambda i: len(corpus.tokens[i]))
    for i in range(n):
        if not corpus.tokens[i]:
            out[i] = Prediction([], [], [], 1.0, 1.0)
    done = n - len(order)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        sents = [corpus.tokens[i] for i in idx]
        batch = model.encode(sents).to(dev)
        paths, c1, c2 = model.decode(batch)
        for k, i in enumerate(idx):
            words = sents[k]
            bioes = [model.labels[t] for t in paths[k]] + ["O"] * (len(words) - len(paths[k]))  # truncated tail: O
            spans = spans_from_tags(bioes, TagScheme.BIOES)
            out[i] = Prediction(list(words), tags_from_spans(spans, len(words), TagScheme.BIO), spans, float(c1[k]), float(c2[k]))
        done += len(idx)
        if progress is not None:
            progress(done / max(n, 1), f"{done:,}/{n:,} sentences")
    if was_training:
        model.train()
    return [p for p in out if p is not None]


PREDICT_CHUNK = 20_000  # sentences read, predicted and written at a time by predict_to_file


def predict_to_file(model: NerModel, corpus: Any, path: str | Path, batch_size: int = 32, device: str = "auto",
                    progress: Progress | None = None, chunk: int = PREDICT_CHUNK) -> dict[str, Any]:
    """`predict_corpus` over a corpus of any size (a `core.data.stream.CorpusStream`, e.g. DC read in
    record batches, or a `Corpus`), written as `write_predictions` JSON lines chunk by chunk:
    memory is one chunk of sentences and predictions, never the corpus. The file appears
    atomically when complete. Returns {sentences, entities, mean_c1, path}."""
    import os

    from core.data.atomic import temp_path_for
    from core.data.stream import CorpusStream

    stream = CorpusStream.of(corpus)
    n, done, entities, c1_sum = len(stream), 0, 0, 0.0
    path = Path(path)
    tmp = temp_path_for(path)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for part in stream.batches(chunk):
                sub = None if progress is None else (
                    lambda f, m, d=done, k=len(part): progress((d + f * k) / max(n, 1), f"{d + int(f * k):,}/{n:,} sentences"))
                preds = predict_corpus(model, part, batch_size, device, sub)
                for line in _prediction_lines(preds, part if part.labeled else None):
                    fh.write(line + "\n")
                done += len(part)
                entities += sum(len(p.spans) for p in preds)
                c1_sum += sum(p.c1 for p in preds)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {"sentences": done, "entities": entities, "mean_c1": c1_sum / max(done, 1), "path": str(path)}


def scores_from_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Span-level micro P/R/F1 and per type with seqeval (strict mode, IOBES), as in the
    seed's Tables 3 and 4. Both inputs are BIOES tag sequences."""
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOBES

    report = classification_report([list(t) for t in gold], [list(t) for t in pred], mode="strict", scheme=IOBES,
                                   output_dict=True, zero_division=0)
    micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 0})
    per_type = {k: {"precision": float(v["precision"]), "recall": float(v["recall"]), "f1": float(v["f1-score"]),
                    "support": int(v["support"])}
                for k, v in report.items() if not k.endswith(" avg")}
    return {"f1": float(micro["f1-score"]), "precision": float(micro["precision"]), "recall": float(micro["recall"]),
            "support": int(micro["support"]), "per_type": per_type}


def evaluate(model: NerModel, test: Corpus, batch_size: int = 64, device: str = "auto",
             progress: Progress | None = None, predictions: list[Prediction] | None = None) -> dict[str, Any]:
    """`f1`, `precision`, `recall`, `per_type` ({type: {precision, recall, f1, support}}) on a labeled corpus."""
    if test.tags is None:
        raise UserError(f"corpus {test.name or ''!r} has no tags; evaluation needs a labeled corpus")
    preds = predictions if predictions is not None else predict_corpus(model, test, batch_size, device, progress)
    gold = test.with_scheme(TagScheme.BIOES).tags
    pred = [tags_from_spans(p.spans, len(p.tokens), TagScheme.BIOES) for p in preds]
    result = scores_from_tags(gold, pred)
    result["sentences"] = len(test)
    return result


def write_predictions(path: str | Path, predictions: Sequence[Prediction], gold: Corpus | None = None) -> Path:
    """JSON lines: one prediction per sentence (+ gold spans when the corpus is labeled), atomically."""
    from core.data.atomic import atomic_write_text

    lines = list(_prediction_lines(predictions, gold))
    return atomic_write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def _prediction_lines(predictions: Sequence[Prediction], gold: Corpus | None = None) -> Iterator[str]:
    """One JSON line per prediction (+ gold spans): the format of write_predictions and predict_to_file."""
    for i, p in enumerate(predictions):
        d = p.to_dict()
        if gold is not None and gold.tags is not None:
            d["gold_spans"] = [s.to_dict() for s in spans_from_tags(gold.tags[i], gold.scheme)]
        yield json.dumps(d, ensure_ascii=False)


def read_predictions(path: str | Path, limit: int | None = None, only_errors: bool = False) -> list[dict[str, Any]]:
    """Rows of a predictions file with spans as `Span`s (`spans`, and `gold` when present) and
    `errors`, the number of predicted and gold spans without an exact match."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:  # a damaged file (a run stopped while writing it, an edit) names its line, never a traceback
                d = json.loads(line)
                pred = [Span.from_dict(s) for s in d["spans"]]
                gold = [Span.from_dict(s) for s in d["gold_spans"]] if "gold_spans" in d else None
                float(d["c1"]), float(d["c2"]), list(d["tokens"])
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise CorpusError(path, number, f"not a prediction row (JSON with tokens, spans, c1, c2): {exc}") from None
            errors = len(set(pred) ^ set(gold)) if gold is not None else 0
            if only_errors and not errors:
                continue
            rows.append({**d, "spans": pred, "gold": gold, "errors": errors})
            if limit is not None and len(rows) >= limit:
                break
    return rows


def ner_predict_job(params: PredictParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "predict": spans, c1 and c2 per sentence of a corpus (default out: run_dir/predictions.jsonl).
    An unlabeled workspace corpus (DC) is read and written chunk by chunk (predict_to_file)."""
    out = params.out or ctx.run_dir / "predictions.jsonl"
    stream = CorpusStream.from_workspace(ctx.workspace, params.corpus)
    if stream is not None and not ctx.workspace.corpus_info(stream.name).labeled:
        model = load_ner_model(params.model)
        result = predict_to_file(model, stream, out, batch_size=params.batch_size, progress=ctx.sub(0, 0.95))
        ctx.log(f"predicted {result['sentences']} sentences into {result['path']}")
        return _said_empty(result, params.model)
    corpus = ctx.workspace.resolve_corpus(params.corpus)
    model = load_ner_model(params.model)
    preds = predict_corpus(model, corpus, batch_size=params.batch_size, progress=ctx.sub(0, 0.95))
    out = write_predictions(out, preds, corpus if corpus.labeled else None)
    result: dict[str, Any] = {"sentences": len(preds), "entities": sum(len(p.spans) for p in preds), "path": str(out),
                              "mean_c1": sum(p.c1 for p in preds) / max(len(preds), 1)}
    if corpus.labeled:
        result["scores"] = evaluate(model, corpus, predictions=preds)
    ctx.log(f"predicted {len(preds)} sentences into {out}")
    return _said_empty(result, params.model)


def _said_empty(result: dict[str, Any], model: str) -> dict[str, Any]:
    """A prediction with no entity anywhere is useless to inspect or to colour a map by: said, not "finished"."""
    if result["sentences"] and not result["entities"]:
        result["warning"] = (f"{model} predicted no entity in {result['sentences']:,} sentences: check that it is a "
                             "trained NER model (its TEST F1 on the Runs page) and that the corpus is of its language")
    return result


TEST_PREDICTIONS = "test_predictions.jsonl"  # kept beside every NER run's results (jobs, experiment and compare cells)


def runs_with_test_predictions(ws: Any) -> list[dict[str, Any]]:
    """NER runs whose TEST predictions were kept, newest first, as {id, kind, f1, path}: read from the run index
    (core.train.lineage), so NER jobs, CLI runs, experiment and compare-sources cells and self-training all count."""
    from core.train.lineage import list_runs

    out = []
    for entry in list_runs(ws):
        path = Path(entry.run_dir) / TEST_PREDICTIONS if entry.run_dir else None
        if entry.kind in ("ner", "selftrain") and path is not None and path.is_file():
            out.append({"id": entry.id, "kind": entry.kind, "f1": entry.f1, "path": path})
    return out
