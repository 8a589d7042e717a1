"""Self-training for low-resource NER (Tokarchuk et al. 2021, Section 3) with CRF confidences.

A NER model trained on LC labels unlabeled sentences; a confidence measure (c1 = posterior of the Viterbi
sequence, c2 = smallest marginal of a decoded tag) and a threshold chosen by the confidence error rate on DEV
keep the trustworthy ones; k = ratio x |LC| of them are sampled and a fresh model is trained from the base
encoder on LC + pseudo-labels.

Confidence error rate (our definition, after the paper's Figure 2): a DEV sentence is *correct* when the
predicted tag sequence equals the gold one exactly. For a threshold t the confidence measure "claims"
correctness when conf >= t, so its errors are confident-but-wrong plus unconfident-but-right sentences::

    CER(t) = (#{wrong, conf >= t} + #{correct, conf < t}) / N

t = 0 gives the model's sentence error rate, t above every confidence gives its sentence accuracy; the
CER-optimal t lies between. Ties go to the lowest t (more pseudo-labels)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.atomic import json_default, plain_json
from core.data.corpus import Corpus, write_corpus
from core.data.selection_store import selected_indices, selection_dc, selection_meta
from core.data.tags import spans_from_tags
from core.errors import UserError
from core.progress import Progress, sub
from core.recipes.presets import DEFAULT_PRESET
from core.runner.jobresult import JobResult
from core.runner.params import CONFIDENCE_MEASURES, check_threshold
from core.train import lineage
from core.train.ner_model import load_ner_model
from core.train.ner_predict import evaluate, predict_corpus
from core.train.ner_train import preset_config, train_ner
from core.train.quality import weak_f1_reason
from core.train.training import Checkpointer

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import SelftrainParams




RATIOS = (0.5, 1.0, 2.0)  # k = ratio x |LC| in the paper's experiments


def confidence_error_rate(confidences: Sequence[float], correct: Sequence[bool], threshold: float) -> float:
    """CER(t) as defined in the module docstring."""
    if len(confidences) != len(correct):
        raise ValueError(f"{len(confidences)} confidences for {len(correct)} correctness flags")
    if not confidences:
        raise UserError("the confidence error rate needs at least one DEV sentence")
    errors = sum(1 for c, ok in zip(confidences, correct) if (c >= threshold) != bool(ok))
    return errors / len(confidences)


def threshold_grid(steps: int = 100) -> list[float]:
    return [round(i / steps, 6) for i in range(steps + 1)]


def cer_curve(confidences: Sequence[float], correct: Sequence[bool], grid: Sequence[float] | None = None) -> list[dict[str, float]]:
    """CER over a threshold grid, with the share of sentences kept at each threshold."""
    grid = list(grid) if grid is not None else threshold_grid()
    n = len(confidences)
    return [{"threshold": t, "cer": confidence_error_rate(confidences, correct, t),
             "kept": sum(1 for c in confidences if c >= t) / max(n, 1)} for t in grid]


def optimal_threshold(curve: Sequence[dict[str, float]]) -> float:
    best = min(p["cer"] for p in curve)
    return min(p["threshold"] for p in curve if p["cer"] == best)


def cer_inputs_from_rows(rows: Sequence[dict[str, Any]], measure: str) -> tuple[list[float], list[bool]]:
    """Confidences and exact-match correctness from cached prediction rows of a labeled corpus
    (core.train.ner_predict.write_predictions: `spans`, `gold_spans`, `c1`, `c2`)."""
    if measure not in CONFIDENCE_MEASURES:
        raise UserError(f"unknown confidence measure {measure!r}: expected c1 or c2")
    if rows and "gold_spans" not in rows[0]:
        raise UserError("the CER needs a labeled corpus (DEV): these predictions have no gold spans")

    def key(spans: Sequence[dict[str, Any]]) -> set[tuple[int, int, str]]:
        return {(int(d["start"]), int(d["end"]), str(d["type"])) for d in spans}

    return [float(r[measure]) for r in rows], [key(r["spans"]) == key(r["gold_spans"]) for r in rows]


def cer_figure(curve: Sequence[dict[str, float]], optimal: float, chosen: float | None = None, measure: str = "c1"):
    """CER and kept share against the threshold, as in Tokarchuk et al. Figure 2 (plotly)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_scatter(x=[p["threshold"] for p in curve], y=[p["cer"] for p in curve], name="CER (DEV)", mode="lines")
    fig.add_scatter(x=[p["threshold"] for p in curve], y=[p["kept"] for p in curve], name="share kept", mode="lines",
                    line={"dash": "dot"})
    fig.add_vline(x=optimal, line_color="green", annotation_text=f"CER-optimal {optimal:.2f}")
    if chosen is not None and chosen != optimal:
        fig.add_vline(x=chosen, line_color="orange", line_dash="dash", annotation_text=f"chosen {chosen:.2f}",
                      annotation_position="bottom right")
    fig.update_layout(xaxis_title=f"threshold on {measure}", yaxis_title="rate", height=360,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h"})
    return fig


def pseudo_label_sample(predictions: Sequence[Any], measure: str, threshold: float, k: int, seed: int = 0) -> list[int]:
    """Indices of k predictions drawn uniformly among those with confidence >= threshold
    (all of them when fewer are confident)."""
    if measure not in CONFIDENCE_MEASURES:
        raise UserError(f"unknown confidence measure {measure!r}: expected c1 or c2")
    confident = [i for i, p in enumerate(predictions) if getattr(p, measure) >= threshold]
    if len(confident) <= k:
        return confident
    return sorted(random.Random(seed).sample(confident, k))


def dev_confidences(model: Any, dev: Corpus, measure: str, progress: Progress | None = None) -> tuple[list[float], list[bool]]:
    """Confidence and exact-sequence correctness of every DEV sentence (BIO compared as spans,
    so a BIOES-trained model and a BIO file agree)."""
    preds = predict_corpus(model, dev.unlabeled(), progress=progress)
    correct = [set(p.spans) == set(spans_from_tags(g)) for p, g in zip(preds, dev.tags)]
    return [float(getattr(p, measure)) for p in preds], correct


def _base_recipe(model_dir: str | Path, preset: str, overrides: dict[str, Any] | None, seed: int) -> tuple[str, Any]:
    """The base encoder the NER model was fine-tuned from (its ner_config.json) and the
    training settings, so retraining "from scratch" repeats the LC recipe on more data."""
    path = Path(model_dir) / "ner_config.json"
    if not path.exists():
        raise UserError(f"{model_dir} is not a NER model folder (no ner_config.json); train a NER model first")
    saved = json.loads(path.read_text("utf-8"))
    settings = {"dropout": saved.get("dropout"), "max_length": saved.get("max_length"), "seed": seed, **(overrides or {})}
    return str(saved.get("base_model") or "default"), preset_config(preset, **settings)


def self_train(model_dir: str | Path, lc: Corpus, unlabeled: Corpus, dev: Corpus, test: Corpus | None, out_dir: str | Path,
               measure: str = "c1", threshold: float | str = "auto", ratio: float = 1.0, seed: int = 1,
               preset: str = DEFAULT_PRESET, config: dict[str, Any] | None = None, progress: Progress | None = None,
               log: Callable[[str], None] | None = None, metric: Callable[..., None] | None = None,
               checkpoint_dir: str | Path | None = None) -> dict[str, Any]:
    """`checkpoint_dir`: where the retraining keeps its resumable state (a job's run folder), so a resumed job
    continues it instead of refusing its own half-written model folder.

    The whole Section 3 recipe; returns thresholds, the CER curve, counts and test F1 of the
    LC model (baseline) and of the self-trained one."""
    if measure not in CONFIDENCE_MEASURES:
        raise UserError(f"unknown confidence measure {measure!r}: expected c1 or c2")
    if ratio <= 0:
        raise UserError(f"ratio must be positive (k = ratio x |LC|), got {ratio}")
    for name, corpus in (("LC", lc), ("DEV", dev)) + ((("TEST", test),) if test is not None else ()):
        if not corpus.labeled:
            raise UserError(f"{name} must be labeled")
    report = progress or (lambda f, m: None)
    say = log or (lambda m: None)

    def part(a: float, b: float, prefix: str) -> Progress:
        return sub(report, a, b, prefix)

    model = load_ner_model(str(model_dir))
    confs, correct = dev_confidences(model, dev, measure, part(0.0, 0.1, "DEV: "))
    curve = cer_curve(confs, correct)
    best = optimal_threshold(curve)
    chosen = best if threshold in (None, "auto") else float(threshold)
    check_threshold(chosen)  # the range the job's params check
    say(f"CER-optimal {measure} threshold on DEV: {best:.3f} (CER {min(p['cer'] for p in curve):.3f}); using {chosen:.3f}")
    preds = predict_corpus(model, unlabeled.unlabeled(), progress=part(0.1, 0.3, f"pseudo-labelling {len(unlabeled):,} sentences: "))
    k = max(1, round(ratio * len(lc)))
    picked = pseudo_label_sample(preds, measure, chosen, k, seed)
    n_confident = sum(1 for p in preds if getattr(p, measure) >= chosen)
    say(f"{n_confident} of {len(preds)} unlabeled sentences reach {measure} >= {chosen:.3f}; sampled {len(picked)} (k = {k})")
    if not picked:
        raise UserError(f"no unlabeled sentence reaches {measure} >= {chosen:.3f}: lower the threshold")
    # predictions come in BIO; beside a BIOES (or IOB1) LC they are written in LC's scheme, or the training data would
    # mix schemes and the CRF would see every BIO span as a forbidden transition
    pseudo = Corpus(tokens=[list(preds[i].tokens) for i in picked], tags=[list(preds[i].tags) for i in picked],
                    name="pseudo").with_scheme(lc.scheme)
    train = Corpus.concat([Corpus(tokens=lc.tokens, tags=lc.tags, name="lc"), pseudo], name="lc+pseudo")
    base, recipe = _base_recipe(model_dir, preset, config, seed)
    out_dir = Path(out_dir)
    write_corpus(pseudo, out_dir.parent / f"{out_dir.name}-pseudo.conll", fmt="conll")
    trained = train_ner(train, dev, base, str(out_dir), recipe, log=log, metric=metric, checkpoint_dir=checkpoint_dir,
                        progress=part(0.3, 0.95, f"retraining on {len(lc)} LC + {len(picked)} pseudo-labeled: "))
    result: dict[str, Any] = {
        "measure": measure, "threshold": chosen, "optimal_threshold": best, "cer_curve": curve,
        "dev_sentence_accuracy": sum(correct) / max(len(correct), 1), "unlabeled": len(preds), "confident": n_confident,
        "k": k, "pseudo_labeled": len(picked), "train_sentences": len(train), "model_dir": str(out_dir), "base_model": base,
    }
    if test is not None:
        report(0.95, "evaluating on TEST")
        baseline = evaluate(model, test)
        retrained = evaluate(load_ner_model(str(out_dir)), test)
        result.update(baseline_f1=float(baseline["f1"]), selftrain_f1=float(retrained["f1"]),
                      baseline=plain_json(baseline), selftrain=plain_json(retrained))
        say(f"TEST F1: LC model {baseline['f1']:.4f}, self-trained {retrained['f1']:.4f}")
        warnings = [w for w in (weak_f1_reason(float(baseline["f1"]), lc, test, preset=None, what="LC model"),
                                weak_f1_reason(float(retrained["f1"]), train, test, preset=preset,
                                               steps=JobResult.from_dict(trained).steps, what="self-trained model")) if w]
        if warnings:
            result["warning"] = " ".join(warnings)
            say(f"warning: {result['warning']}")
    report(1.0, "done")
    return result


def selftrain_job(params: SelftrainParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "selftrain": pseudo-label `unlabeled` (or the sentences a saved selection picked from its DC) with
    the LC model, retrain on LC + the confident ones (NER recipe: preset + config, as for job kind "ner");
    records the retrained model's lineage."""
    started = time.time()
    ws = ctx.workspace
    if not params.unlabeled and not params.selection:
        raise UserError("self-training needs unlabeled sentences: a corpus (unlabeled) or a saved selection")
    if params.selection:  # the sentences a saved selection picked from its DC, through the selection store
        meta = selection_meta(ws, params.selection)
        unlabeled = ws.resolve_corpus(selection_dc(ws, meta)).subset(sorted(selected_indices(ws, params.selection)))
    else:
        unlabeled = ws.resolve_corpus(params.unlabeled)
    test = ws.resolve_corpus(params.test) if params.test else None
    out = Path(params.out or ctx.run_dir / "model")
    result = self_train(params.model, ws.resolve_corpus(params.lc), unlabeled, ws.resolve_corpus(params.dev), test, out,
                        measure=params.measure, threshold=params.threshold, ratio=params.ratio, seed=params.seed,
                        preset=params.preset, config=params.config, progress=ctx.progress, log=ctx.log, metric=ctx.metric,
                        checkpoint_dir=ctx.run_dir)
    ctx.log(json.dumps({k: v for k, v in result.items() if k not in ("cer_curve", "baseline", "selftrain")}, default=json_default))
    f1 = JobResult.from_dict(result).selftrain_f1  # None without TEST
    lineage.record_ner(ws, ctx.run_id, model=result["base_model"], train=params.lc, dev=params.dev, test=params.test,
                       seed=params.seed, preset=params.preset, result={"out_dir": str(out), "test": {"f1": f1}},
                       run_dir=ctx.run_dir, seconds=time.time() - started, kind="selftrain")
    Checkpointer(ctx.run_dir).discard()  # only now: a retry after a failure above resumes the finished retraining
    return result
