"""Compare pretraining sources (Dai et al. 2019, 2020): does a similarity measure predict the F1
gain of pretraining on a source?

For sources S1..Sn, a target text T and a labeled LC/DEV/TEST: per seed, MLM on each source
(starting from the base model), NER on LC (early stopping on DEV), F1 on TEST; a baseline NER
run per seed without MLM; the measures of each source against T; and Pearson r (and p) of each
measure against the F1 gain over the baseline (`core.similarity.measures.correlate_with_f1`, the same
function the Similarity page uses).

The run folder holds `measures/SOURCE.json` and `cells/SOURCE/seed-N/` (NER model, cell.json), so an
interrupted comparison resumes where it stopped: finished cells are kept, an interrupted training
resumes from its checkpoint. The MLM model of a source does not depend on the target, so it lives in
the workspace (`CellTrainer.shared_mlm_model`) and every comparison on that source, seed and recipe
reuses it: five targets cost five sources' pretraining per seed, not twenty-five. Every NER run is written to the run index
with its lineage (core.train.lineage), so `runs show ID` names its source and the source's hash.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.atomic import atomic_write_json
from core.data.workspace import CorpusRef, resolve_corpus_ref
from core.errors import UserError
from core.experiments.cells import CellTrainer
from core.experiments.plan import slug
from core.experiments.summary import interval_summary, keep_predictions
from core.progress import sub
from core.similarity.correlation import correlate_with_f1
from core.similarity.measures import PAIRWISE, SimilarityParams, compare_corpora, corpus_text
from core.train.lineage import Lineage, MlmPhase, from_base, record_run, write_lineage
from core.train.mlm import finished_model
from core.train.ner_model import load_ner_model
from core.train.ner_predict import evaluate, predict_corpus

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import CompareSourcesParams

BASELINE = "_baseline"


def _measures(src: CorpusRef, tgt: CorpusRef, measures: list[str], folder: Path, progress) -> dict[str, float]:
    """The measures of one source against the target, kept in the run folder by both hashes."""
    path = folder / "measures" / f"{slug(src.name)}.json"
    key = {"source": src.hash, "target": tgt.hash, "measures": sorted(measures)}
    if path.exists():
        stored = json.loads(path.read_text("utf-8"))
        if stored.get("key") == key:
            return stored["values"]
    result = compare_corpora(corpus_text(src), corpus_text(tgt), SimilarityParams(measures=tuple(measures)), progress=progress)
    values = {m: float(result[m]) for m in measures if m in result}
    atomic_write_json(path, {"key": key, "values": values, "tvcc_method": result.get("tvcc_method")})
    return values


def compare_sources(ws, sources: list[str], lc: str, dev: str, test: str, target: str, measures: list[str],
                    seeds: list[int], preset: str, model: str, ctx) -> dict[str, Any]:
    if len(sources) < 2:
        raise UserError("compare-sources needs at least two sources (Pearson r needs three for a p-value)")
    bad = [m for m in measures if m not in PAIRWISE]
    if bad or not measures:
        raise UserError(f"--measures: unknown {', '.join(bad) or '(none)'}; choose from {', '.join(PAIRWISE)}")
    if not seeds:
        raise UserError("--seeds: give at least one seed")
    refs = [resolve_corpus_ref(s, ws) for s in sources]
    names = [r.name for r in refs]
    if len(set(names)) != len(names):
        raise UserError(f"--sources: two references name the same corpus ({', '.join(sources)})")
    lc_ref, dev_ref, test_ref, tgt_ref = (resolve_corpus_ref(x, ws) for x in (lc, dev, test, target))
    lc_c, dev_c, test_c = lc_ref.load(), dev_ref.load(), test_ref.load()
    for what, c in (("LC", lc_c), ("DEV", dev_c), ("TEST", test_c)):
        if not c.labeled:
            raise UserError(f"{what} {c.name!r} must be a labeled corpus")
    run_dir = Path(ctx.run_dir)
    trainer = CellTrainer(ctx, model, preset, lc_c, dev_c)
    ctx.log(f"compare-sources: {', '.join(names)} -> target {tgt_ref.name}; LC {lc_ref.name} ({len(lc_c)}), "
            f"seeds {seeds}, preset {preset}")
    n_steps = len(refs) * (1 + len(seeds)) + len(seeds)
    step = 0
    values: dict[str, dict[str, float]] = {}
    for ref in refs:
        values[ref.name] = _measures(ref, tgt_ref, measures, run_dir, ctx.sub(step / n_steps, (step + 1) / n_steps,
                                                                            f"measures {ref.name}: "))
        step += 1

    def cell(row: str, seed: int, src: CorpusRef | None, progress) -> dict[str, Any]:
        folder = run_dir / "cells" / slug(row) / f"seed-{seed}"
        done = folder / "cell.json"
        if done.exists():
            return json.loads(done.read_text("utf-8"))
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        encoder, lin, mlm_home = model, from_base(model), folder
        if src is not None:
            if not finished_model(folder / "mlm" / "model"):  # cells written before MLM models were shared keep theirs
                encoder, mlm_home = trainer.shared_mlm_model(src.name, src.hash, src.load().texts(), seed,
                                                             sub(progress, 0, 0.5))
            else:
                encoder = str(folder / "mlm" / "model")
            lin.mlm_phases.append(MlmPhase(src.name, [src.to_dict()]))
            mlm_lin = Lineage(**{**lin.__dict__, "seed": seed, "preset": preset, "wall_seconds": trainer.mlm_seconds(mlm_home)})
            write_lineage(encoder, mlm_lin)
            lin = from_base(encoder)
        ner_dir, summary = trainer.ner_model(encoder, folder, seed, sub(progress, 0.5 if src else 0, 0.95))
        ner = load_ner_model(ner_dir)
        predictions = predict_corpus(ner, test_c, batch_size=trainer.ner_config.eval_batch_size)
        scores = evaluate(ner, test_c, predictions=predictions)
        kept = keep_predictions(folder, predictions, test_c)  # intervals and paired tests
        lin.lc, lin.dev, lin.test = lc_ref.to_dict(), dev_ref.to_dict(), test_ref.to_dict()
        lin.seed, lin.preset, lin.wall_seconds = seed, preset, time.time() - t0
        run_id = f"{run_dir.name}.{slug(row)}.s{seed}"
        record_run(ctx.workspace, run_id, "ner", lin, folder, ner_dir, f1=scores["f1"],
                   extra={"compare_sources": str(run_dir), "source": src.name if src else None})
        result = {"row": row, "seed": seed, "source": src.to_dict() if src else None, "f1": scores["f1"], "run": run_id,
                  "best_dev_f1": summary.get("best_dev_f1"), "mlm_seconds": trainer.mlm_seconds(mlm_home), **kept,
                  **({"mlm_model": encoder} if src is not None else {})}
        atomic_write_json(done, result)
        ctx.metric(cell=row, seed=seed, test_f1=scores["f1"])
        ctx.log(f"{row} seed {seed}: test F1 {scores['f1']:.4f}")
        return result

    cells: dict[str, list[dict[str, Any]]] = {}
    for seed in seeds:
        for row, src in [(BASELINE, None), *((r.name, r) for r in refs)]:
            cells.setdefault(row, []).append(cell(row, seed, src, ctx.sub(step / n_steps, (step + 1) / n_steps,
                                                                          f"{'no pretraining' if src is None else row} seed {seed}: ")))
            step += 1
    baseline = [c["f1"] for c in cells[BASELINE]]
    runs = [{"source": None, "f1": f} for f in baseline]
    runs += [{"source": name, "f1": c["f1"]} for name in names for c in cells[name]]
    matrix = {"sources": names, "targets": [tgt_ref.name], "measures": list(measures),
              "values": {m: [[values[n].get(m)] for n in names] for m in measures}}
    corr = correlate_with_f1(runs, matrix, tgt_ref.name)
    intervals = {e["row"]: e for e in interval_summary(
        [{**c, "row": "none" if row == BASELINE else row} for row, cs in cells.items() for c in cs], baselines=("none",))}
    out_sources = []
    for ref in refs:
        f1s = [c["f1"] for c in cells[ref.name]]
        entry = intervals[ref.name]
        out_sources.append({"name": ref.name, "hash": ref.hash, "f1_mean": statistics.fmean(f1s), "f1_ci": entry["f1_ci"],
                            "seeds": len(f1s), "vs": entry["vs"],
                            "f1_std": statistics.stdev(f1s) if len(f1s) > 1 else 0.0, "runs": [c["run"] for c in cells[ref.name]],
                            "mlm_seconds": statistics.fmean(c.get("mlm_seconds") or 0.0 for c in cells[ref.name]),
                            **{m: values[ref.name].get(m) for m in measures}})
    result = {"target": tgt_ref.name, "target_hash": tgt_ref.hash, "lc": lc_ref.to_dict(), "dev": dev_ref.to_dict(),
              "test": test_ref.to_dict(), "seeds": seeds, "preset": preset, "model": model, "measures": list(measures),
              "sources": out_sources, "baseline_f1": statistics.fmean(baseline), "baseline_runs": [c["run"] for c in cells[BASELINE]],
              "baseline_f1_ci": intervals["none"]["f1_ci"],
              "correlation": {m: {"r": s["r"], "p": s["p"], "n": s["n"], "r_ci": s.get("r_ci"),
                                  **({"reason": s["reason"]} if s["reason"] else {})}
                              for m, s in corr["measures"].items()},
              "matrix": matrix, "run_dir": str(run_dir)}
    atomic_write_json(run_dir / "compare.json", result)
    ctx.progress(1.0, "done")
    return result


def compare_sources_job(params: CompareSourcesParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "compare-sources": MLM on each source, NER on LC, and each measure's correlation with the F1 gain."""
    return compare_sources(ctx.workspace, list(params.sources), params.lc, params.dev, params.test, params.target,
                           list(params.measures or PAIRWISE), list(params.seeds), params.preset, params.model, ctx)


def read_comparison(path: str | Path) -> dict[str, Any]:
    """A compare-sources result from a file (a run folder's compare.json, `--json` output, a docs/results JSON), checked
    for what pooling reads; a bad file is a UserError naming it."""
    path = Path(path)
    try:
        result = json.loads(path.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise UserError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a JSON file ({exc})") from exc
    return check_comparison(result, str(path))


def check_comparison(result: Any, where: str) -> dict[str, Any]:
    """`result` if it has what pooling reads (target, a numeric baseline F1, a list of measures, sources with a name and
    F1), else a UserError naming `where`."""
    missing = [k for k in ("target", "baseline_f1", "sources", "measures") if not isinstance(result, dict) or k not in result]
    if missing:
        raise UserError(f"{where}: not a compare-sources result (no {', '.join(missing)})")
    if not isinstance(result["baseline_f1"], (int, float)) or not isinstance(result["measures"], list) \
            or not isinstance(result["sources"], list):
        raise UserError(f"{where}: expected a number as baseline_f1 and lists as measures and sources")
    for i, s in enumerate(result["sources"]):
        if not isinstance(s, dict) or "name" not in s or not isinstance(s.get("f1_mean"), (int, float)):
            raise UserError(f"{where}: source {i + 1} has no name or F1 (expected name and f1_mean)")
    return result


def comparison_label(result: dict[str, Any]) -> str:
    """How a page names one compare-sources result: target, sources, seeds, preset and its run folder."""
    folder = Path(result["run_dir"]).name if result.get("run_dir") else "?"
    return (f"{result['target']} · {len(result['sources'])} sources · {len(result.get('seeds') or [])} seeds · "
            f"preset {result.get('preset')} · {folder}")


def collect_comparisons(ws) -> list[dict[str, Any]]:
    """Results of finished compare-sources runs of a workspace (jobs, and CLI runs through the run index), newest first."""
    from core.runner import jobs
    from core.train.lineage import list_runs

    found: list[tuple[float, dict[str, Any]]] = []
    seen: set[str] = set()
    for job in jobs.list_jobs(ws, "compare-sources"):
        if job.status == "done" and job.result:
            seen.add(str(job.run_dir))
            try:
                found.append((job.finished or job.created, check_comparison(job.result, f"job {job.id}")))
            except UserError:  # a result from an older version without what pooling reads: not listed
                continue
    for entry in list_runs(ws, "ner"):
        folder = entry.get("compare_sources")
        path = Path(folder) / "compare.json" if folder else None
        if path is not None and folder not in seen and path.exists():
            seen.add(folder)
            try:
                found.append((path.stat().st_mtime, read_comparison(path)))
            except UserError:  # a file being rewritten or not a result: not a finished comparison
                continue
    return [result for _, result in sorted(found, key=lambda pair: -pair[0])]


__all__ = ["check_comparison", "collect_comparisons", "comparison_label", "compare_sources", "compare_sources_job", "read_comparison"]
