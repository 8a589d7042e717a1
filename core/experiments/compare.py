"""Compare pretraining sources (Dai et al. 2019, 2020): does a similarity measure predict the F1
gain of pretraining on a source?

For sources S1..Sn, a target text T and a labeled LC/DEV/TEST: per seed, MLM on each source
(starting from the base model), NER on LC (early stopping on DEV), F1 on TEST; a baseline NER
run per seed without MLM; the measures of each source against T; and Pearson r (and p) of each
measure against the F1 gain over the baseline (`core.similarity.correlation.correlate_with_f1`, the same
function the Similarity page uses).

The run folder holds `measures/SOURCE.json` and `cells/SOURCE/seed-N/` (NER model, cell.json), so an
interrupted comparison resumes where it stopped: finished cells are kept, an interrupted training
resumes from its checkpoint. A cell.json carries its TEST counts and the key of what decided it
(`Comparison.cell_key`), so a cell kept in a result file comes back into another machine's run folder
(`Comparison.restore`) instead of being trained again. The MLM model of a source does not depend on the target, so it lives in
the workspace (`CellTrainer.shared_mlm_model`) and every comparison on that source, seed and recipe
reuses it: five targets cost five sources' pretraining per seed, not twenty-five. Every NER run is written to the run index
with its lineage (core.train.lineage), so `runs show ID` names its source and the source's hash.
"""

from __future__ import annotations

import hashlib
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
from core.experiments.records import Cell, cell_path, load_cell, save_cell
from core.experiments.summary import interval_summary, keep_predictions
from core.progress import sub
from core.runner.jobresult import JobResult
from core.similarity.comparison import ComparisonResult
from core.similarity.correlation import correlate_with_f1
from core.similarity.matrix_result import SimilarityMatrix
from core.similarity.measures import PAIRWISE, SimilarityParams, compare_corpora, corpus_text
from core.train.lineage import CorpusStamp, Lineage, MlmPhase, from_base, record_run, write_lineage
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
    params = SimilarityParams(measures=tuple(measures))
    # each measure's own cache parameters (core.similarity.measures: the cache version, the content-word method TVcC
    # resolves to here): a bumped definition or spaCy installed since makes the values again
    key = {"source": src.hash, "target": tgt.hash, "measures": sorted(measures),
           "params": {m: params.cache_params(m) for m in sorted(measures)}}
    if path.exists():
        stored = json.loads(path.read_text("utf-8"))
        if stored.get("key") == key:
            return stored["values"]
    result = compare_corpora(corpus_text(src), corpus_text(tgt), params, progress=progress)
    values = {m: float(result[m]) for m in measures if m in result}
    atomic_write_json(path, {"key": key, "values": values, "tvcc_method": result.get("tvcc_method")})
    return values


class Comparison:
    """One target's comparison, cell by cell, resumable per cell. The job runs its cells in order; a caller
    comparing several targets runs theirs interleaved instead (`plan` is the same for every target of one recipe), so
    each source's MLM model of a seed is trained once and every target fine-tunes from it while it is at hand: a
    session that ends, or a machine that is gone, loses at most the model being trained."""

    def __init__(self, params: CompareSourcesParams, ctx: JobContext):
        ws, sources, measures, seeds = ctx.workspace, list(params.sources), list(params.measures or PAIRWISE), list(params.seeds)
        preset, model = params.preset, params.model
        if len(sources) < 2:
            raise UserError("compare-sources needs at least two sources (Pearson r needs three for a p-value)")
        bad = [m for m in measures if m not in PAIRWISE]
        if bad or not measures:
            raise UserError(f"--measures: unknown {', '.join(bad) or '(none)'}; choose from {', '.join(PAIRWISE)}")
        if not seeds:
            raise UserError("--seeds: give at least one seed")
        self.refs = [resolve_corpus_ref(s, ws) for s in sources]
        self.names = [r.name for r in self.refs]
        if len(set(self.names)) != len(self.names):
            raise UserError(f"--sources: two references name the same corpus ({', '.join(sources)})")
        self.lc_ref, self.dev_ref, self.test_ref, self.tgt_ref = (
            resolve_corpus_ref(x, ws) for x in (params.lc, params.dev, params.test, params.target))
        lc_c, dev_c, self.test_c = self.lc_ref.load(), self.dev_ref.load(), self.test_ref.load()
        for what, c in (("LC", lc_c), ("DEV", dev_c), ("TEST", self.test_c)):
            if not c.labeled:
                raise UserError(f"{what} {c.name!r} must be a labeled corpus")
        self.ctx, self.measures, self.seeds, self.preset, self.model = ctx, measures, seeds, preset, model
        self.run_dir = Path(ctx.run_dir)
        self.trainer = CellTrainer(ctx, model, preset, lc_c, dev_c)
        self.lc_size = len(lc_c)
        self.allow_dev = bool(params.allow_dev_in_mlm)
        self.mlm_texts, self.guard = self._guard(dev_c.texts(), self.test_c.texts())

    def _guard(self, dev: list[str], test: list[str]) -> tuple[dict[str, tuple[str, list[str]]], dict[str, Any]]:
        """Each source's MLM text after core.experiments.guard's rules: DEV text refused unless allowed, TEST text
        dropped. (source name -> (content key, texts), the record kept in the result). A source that lost sentences
        gets a key of its own, so its shared MLM model is never confused with the whole source's."""
        from core.experiments.guard import guard_chosen_corpus
        from core.selection.leakage import texts_leakage

        texts, record = {}, {}
        for ref in self.refs:
            corpus = ref.load()
            leak = texts_leakage(corpus.texts(), {"dev": dev, "test": test})
            kept, dev_in, dropped = guard_chosen_corpus(corpus, leak, self.allow_dev, True, f"source {ref.name}")
            key = ref.hash if not dropped else hashlib.sha256(f"{ref.hash}-{self.test_ref.hash}".encode()).hexdigest()[:16]
            texts[ref.name] = (key, kept.texts())
            record[ref.name] = {"dev_in_mlm": dev_in, "test_dropped": dropped}
        return texts, {"allow_dev_in_mlm": self.allow_dev, "sources": record}

    def plan(self) -> list[tuple[str, int, CorpusRef | None]]:
        """The cells in the order they run: per seed, the baseline (no pretraining), then each source."""
        return [(row, seed, src) for seed in self.seeds for row, src in [(BASELINE, None), *((r.name, r) for r in self.refs)]]

    def cell_file(self, row: str, seed: int) -> Path:
        """Where a finished cell is kept; a cell whose file exists is not run again."""
        return cell_path(self.run_dir, slug(row), seed)

    def cell_key(self, seed: int, src: CorpusRef | None) -> str:
        """What decides a cell's F1, as a digest: the encoder, the MLM and NER recipes less their run-only settings,
        the LC/DEV/TEST and source contents and the seed. A kept cell comes back into a run folder only under its key."""
        from core.recipes.presets import model_settings

        what = {"model": self.model, "mlm": model_settings(self.trainer.mlm_config) if src is not None else None,
                "ner": model_settings(self.trainer.ner_config), "lc": self.lc_ref.hash, "dev": self.dev_ref.hash,
                "test": self.test_ref.hash, "source": self.mlm_texts[src.name][0] if src is not None else None, "seed": seed}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def restore(self, kept: list[dict[str, Any]], origin: dict[str, Any]) -> int:
        """Put finished cells kept elsewhere (a result file's, from another machine) back into the run folder, so they
        are not trained again: only a cell of this comparison's plan, under the same key (`cell_key`) and with its TEST
        counts inline (without them it would lose its interval). Each says where it came from. Returns how many came back."""
        wanted = {(row, seed): self.cell_key(seed, src) for row, seed, src in self.plan()}
        restored = 0
        for cell in kept:
            row, seed = cell.get("row"), cell.get("seed")
            path = self.cell_file(str(row), int(seed or 0))
            if wanted.get((row, seed)) != cell.get("key") or not cell.get("test_counts") or path.exists():
                continue
            save_cell(path, Cell.from_dict({**cell, "restored_from": cell.get("restored_from") or origin}))
            restored += 1
        return restored

    def measure(self, progress_for) -> dict[str, dict[str, float]]:
        """Each source's measures against the target; `progress_for(i, name)` gives source i's Progress."""
        return {ref.name: _measures(ref, self.tgt_ref, self.measures, self.run_dir, progress_for(i, ref.name))
                for i, ref in enumerate(self.refs)}

    def cell(self, row: str, seed: int, src: CorpusRef | None, progress) -> dict[str, Any]:
        """One NER run on LC (after MLM on `src`, or none for the baseline) and its TEST F1, kept in `cell_file`."""
        done = self.cell_file(row, seed)
        if (kept_cell := load_cell(done)) is not None:
            # only under its key, as `restore` brings cells back: a rerun into this folder with another recipe, LC,
            # DEV, TEST or source would otherwise report the old cell's F1 as its own (a cell from before keys has none)
            if kept_cell.key and kept_cell.key != self.cell_key(seed, src):
                what = "no-pretraining" if row == BASELINE else row
                raise UserError(f"run folder {self.run_dir} holds a finished {what} seed {seed} cell of another recipe or "
                                "other corpora (encoder, MLM/NER settings, LC, DEV, TEST or source): continue it with "
                                "the same settings, or give a new folder (--out)")
            return kept_cell.to_dict()
        folder, trainer, ctx = done.parent, self.trainer, self.ctx
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        encoder, lin, mlm_home = self.model, from_base(self.model), folder
        if src is not None:
            if not finished_model(folder / "mlm" / "model"):  # cells written before MLM models were shared keep theirs
                key, texts = self.mlm_texts[src.name]
                encoder, mlm_home = trainer.shared_mlm_model(src.name, key, texts, seed, sub(progress, 0, 0.5))
            else:
                encoder = str(folder / "mlm" / "model")
            lin.mlm_phases.append(MlmPhase(src.name, [src.to_dict()]))
            mlm_lin = Lineage(**{**lin.__dict__, "seed": seed, "preset": self.preset,
                                 "wall_seconds": trainer.mlm_seconds(mlm_home)})
            write_lineage(encoder, mlm_lin)
            lin = from_base(encoder)
        ner_dir, summary = trainer.ner_model(encoder, folder, seed, sub(progress, 0.5 if src else 0, 0.95))
        ner = load_ner_model(ner_dir)
        predictions = predict_corpus(ner, self.test_c, batch_size=trainer.ner_config.eval_batch_size)
        scores = evaluate(ner, self.test_c, predictions=predictions)
        kept = keep_predictions(folder, predictions, self.test_c)  # intervals and paired tests
        lin.lc, lin.dev, lin.test = (CorpusStamp(**r.to_dict()) for r in (self.lc_ref, self.dev_ref, self.test_ref))
        lin.seed, lin.preset, lin.wall_seconds = seed, self.preset, time.time() - t0
        run_id = f"{self.run_dir.name}.{slug(row)}.s{seed}"
        record_run(ctx.workspace, run_id, "ner", lin, folder, ner_dir, f1=scores["f1"],
                   extra={"compare_sources": str(self.run_dir), "source": src.name if src else None})
        cell = Cell(row=row, seed=seed, key=self.cell_key(seed, src), f1=scores["f1"], run=run_id,
                    best_dev_f1=JobResult.from_dict(summary).best_dev_f1, mlm_seconds=trainer.mlm_seconds(mlm_home),
                    predictions=kept["predictions"], test_counts=kept["test_counts"],
                    extra={"source": src.to_dict() if src else None, **({"mlm_model": encoder} if src is not None else {})})
        save_cell(done, cell)
        ctx.metric(cell=row, seed=seed, test_f1=scores["f1"])
        ctx.log(f"{row} seed {seed}: test F1 {scores['f1']:.4f}")
        return cell.to_dict()

    def result(self, values: dict[str, dict[str, float]], cells: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """The comparison's result from its measures and finished cells (row -> cells of each seed), kept as
        compare.json in the run folder."""
        names, measures = self.names, self.measures
        baseline = [c["f1"] for c in cells[BASELINE]]
        runs = [{"source": None, "f1": f} for f in baseline]
        runs += [{"source": name, "f1": c["f1"]} for name in names for c in cells[name]]
        matrix = SimilarityMatrix(sources=names, targets=[self.tgt_ref.name], measures=measures,
                                  values={m: [[values[n][m] if m in values[n] else None] for n in names] for m in measures})
        corr = correlate_with_f1(runs, matrix, self.tgt_ref.name)
        intervals = {e["row"]: e for e in interval_summary(
            [{**c, "row": "none" if row == BASELINE else row} for row, cs in cells.items() for c in cs], baselines=("none",))}
        out_sources = []
        for ref in self.refs:
            f1s = [c["f1"] for c in cells[ref.name]]
            entry = intervals[ref.name]
            out_sources.append({"name": ref.name, "hash": ref.hash, "f1_mean": statistics.fmean(f1s), "f1_ci": entry["f1_ci"],
                                "seeds": len(f1s), "vs": entry["vs"],
                                "f1_std": statistics.stdev(f1s) if len(f1s) > 1 else 0.0,
                                "runs": [c["run"] for c in cells[ref.name]],
                                "mlm_seconds": statistics.fmean(c.get("mlm_seconds") or 0.0 for c in cells[ref.name]),
                                **{m: values[ref.name].get(m) for m in measures}})
        result = {"target": self.tgt_ref.name, "target_hash": self.tgt_ref.hash, "lc": self.lc_ref.to_dict(),
                  "dev": self.dev_ref.to_dict(), "test": self.test_ref.to_dict(), "seeds": self.seeds, "preset": self.preset,
                  "model": self.model, "measures": measures, "sources": out_sources,
                  "baseline_f1": statistics.fmean(baseline), "baseline_runs": [c["run"] for c in cells[BASELINE]],
                  "baseline_f1_ci": intervals["none"]["f1_ci"],
                  "correlation": {m: {"r": s["r"], "p": s["p"], "n": s["n"], "r_ci": s.get("r_ci"),
                                      **({"reason": s["reason"]} if s["reason"] else {})}
                                  for m, s in corr["measures"].items()},
                  "matrix": matrix, "run_dir": str(self.run_dir), "protocol": self.guard}
        atomic_write_json(self.run_dir / "compare.json", result)
        return result


def compare_sources_job(params: CompareSourcesParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "compare-sources": MLM on each source, NER on LC, and each measure's correlation with the F1 gain."""
    comparison = Comparison(params, ctx)
    ctx.log(f"compare-sources: {', '.join(comparison.names)} -> target {comparison.tgt_ref.name}; "
            f"LC {comparison.lc_ref.name} ({comparison.lc_size}), seeds {comparison.seeds}, preset {comparison.preset}")
    plan = comparison.plan()
    n_steps = len(comparison.refs) + len(plan)
    values = comparison.measure(lambda i, name: ctx.sub(i / n_steps, (i + 1) / n_steps, f"measures {name}: "))
    cells: dict[str, list[dict[str, Any]]] = {}
    for step, (row, seed, src) in enumerate(plan, start=len(comparison.refs)):
        label = "no pretraining" if src is None else row
        cells.setdefault(row, []).append(comparison.cell(row, seed, src, ctx.sub(step / n_steps, (step + 1) / n_steps,
                                                                                 f"{label} seed {seed}: ")))
    result = comparison.result(values, cells)
    ctx.progress(1.0, "done")
    return result


def read_comparison(path: str | Path) -> ComparisonResult:
    """A compare-sources result from a file (a run folder's compare.json, `--json` output, a docs/results JSON), checked
    for what pooling reads; a bad file is a UserError naming it."""
    path = Path(path)
    try:
        result = json.loads(path.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise UserError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a JSON file ({exc})") from exc
    return ComparisonResult.of(result, str(path))


def collect_comparisons(ws) -> list[ComparisonResult]:
    """Results of finished compare-sources runs of a workspace (jobs, and CLI runs through the run index), newest first."""
    from core.runner import jobs
    from core.train.lineage import list_runs

    found: list[tuple[float, ComparisonResult]] = []
    seen: set[str] = set()
    for job in jobs.list_jobs(ws, "compare-sources"):
        if job.status == "done" and job.result:
            seen.add(str(job.run_dir))
            try:
                found.append((job.finished or job.created, ComparisonResult.of(job.result, f"job {job.id}")))
            except UserError:  # a result from an older version without what pooling reads: not listed
                continue
    for entry in list_runs(ws, "ner"):
        folder = entry.compare_sources
        path = Path(folder) / "compare.json" if folder else None
        if path is not None and folder not in seen and path.exists():
            seen.add(folder)
            try:
                found.append((path.stat().st_mtime, read_comparison(path)))
            except UserError:  # a file being rewritten or not a result: not a finished comparison
                continue
    return [result for _, result in sorted(found, key=lambda pair: -pair[0])]


__all__ = ["Comparison", "collect_comparisons", "compare_sources_job", "read_comparison"]
