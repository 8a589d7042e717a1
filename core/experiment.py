"""Experiments: strategies x seeds, each cell selection -> MLM -> NER -> test F1.

Rows of the result are baselines and selection strategies (the seed's Table 3):

  none        NER fine-tuning straight from the base encoder
  tapt        MLM on TC, then NER (its MLM model is B1, its NER model is B2)
  dapt        MLM on all of DC, then NER
  tapt+dapt   MLM on DC then on TC, then NER (Gururangan et al. 2020)
  STRATEGY    core.select.select(TC, DC, STRATEGY, budget) -> SC; MLM on TC+SC (1:1); NER

Strategies that read a trained model get the seed's own: B1 (the TAPT model) for
`model` when the strategy needs a trained encoder or is written `NAME@b1`; B2 (B1
fine-tuned on LC) for `model2` and `ner_model`. B1/B2 are trained once per seed and
shared with the `tapt` row. Every cell writes `cell.json` when it finishes, so a
resumed experiment skips finished cells and continues inside the one it was in.

>>> summarize([{"row": "tapt", "seed": 1, "f1": 0.5}, {"row": "tapt", "seed": 2, "f1": 0.7}])["tapt"]["mean"]
0.6
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.corpus import Corpus
from core.errors import UserError
from core.jobtypes import DEFAULT_PRESET
from core.workspace import atomic_write_json

BASELINES = ("none", "tapt", "dapt", "tapt+dapt")
CELL_FILE = "cell.json"


def _select_function():
    """core.select.select (imported here: selection pulls in embeddings and n-gram LMs)."""
    from core.select import select

    return select


def parse_strategy(spec: str) -> tuple[str, str | None]:
    """'cosine@b1' -> ('cosine', 'b1'); 'dsir' -> ('dsir', None)."""
    name, _, model = spec.partition("@")
    model = model.strip().lower() or None
    if model not in (None, "b1", "base"):
        raise UserError(f"strategy {spec!r}: the part after @ must be b1 or base")
    return name.strip(), model


def _strategy_models(name: str, model_tag: str | None) -> tuple[bool, bool]:
    """(needs B1, needs B2) for a strategy, from core.select's strategy table when it has one."""
    from core.select import Strategy

    info = Strategy.parse(name).info
    uses, trained = set(info.models), info.needs_trained_model
    needs_b1 = ("model" in uses and (trained or model_tag == "b1")) or "model2" in uses
    needs_b2 = bool(uses & {"model2", "ner_model"})
    return needs_b1, needs_b2


def summarize(cells: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per row: mean and (sample) std of test F1 over seeds, and mean per-type F1."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        rows.setdefault(c["row"], []).append(c)
    out = {}
    for row, cs in rows.items():
        f1s = [c["f1"] for c in cs]
        types: dict[str, list[float]] = {}
        for c in cs:
            for t, s in (c.get("per_type") or {}).items():
                types.setdefault(t, []).append(s["f1"])
        out[row] = {"mean": statistics.fmean(f1s), "std": statistics.stdev(f1s) if len(f1s) > 1 else 0.0, "n": len(f1s),
                    "seeds": [c["seed"] for c in cs], "per_type": {t: statistics.fmean(v) for t, v in sorted(types.items())}}
    return out


def row_order(rows: Sequence[str]) -> list[str]:
    """Baselines first in the paper's order, then strategies as given."""
    return [r for r in BASELINES if r in rows] + [r for r in rows if r not in BASELINES]


def results_table(experiments: Sequence[dict[str, Any]], percent: bool = True):
    """The seed's Table 3: rows strategies and baselines, columns domains, cells 'mean ± std' of
    test F1 over seeds. `experiments` are experiment results (each with `domain` and `cells`);
    two experiments on one domain are pooled."""
    import pandas as pd

    by_domain: dict[str, list[dict[str, Any]]] = {}
    for exp in experiments:
        by_domain.setdefault(exp.get("domain") or "?", []).extend(exp.get("cells", []))
    scale = 100.0 if percent else 1.0
    all_rows: list[str] = []
    columns: dict[str, dict[str, str]] = {}
    for domain, cells in by_domain.items():
        summary = summarize(cells)
        all_rows.extend(r for r in summary if r not in all_rows)
        columns[domain] = {r: f"{s['mean'] * scale:.2f} ± {s['std'] * scale:.2f}" + (f" (n={s['n']})" if s["n"] < 2 else "")
                           for r, s in summary.items()}
    frame = pd.DataFrame(columns, index=row_order(all_rows))
    frame.index.name = "method"
    return frame.fillna("–")


def per_type_table(experiment: dict[str, Any], percent: bool = True):
    """The seed's Table 4: per entity type (rows) the mean test F1 over seeds of each method (columns)."""
    import pandas as pd

    summary = summarize(experiment.get("cells", []))
    scale = 100.0 if percent else 1.0
    data = {row: {t: round(v * scale, 2) for t, v in summary[row]["per_type"].items()} for row in row_order(list(summary))}
    frame = pd.DataFrame(data)
    frame.index.name = "type"
    return frame.sort_index()


def format_results(result: dict[str, Any]) -> str:
    table = results_table([result])
    lines = [f"test F1 (%) mean ± std over seeds {result.get('seeds')} on {result.get('domain')}:", table.to_string()]
    if result.get("skipped"):
        lines.append("skipped: " + "; ".join(result["skipped"]))
    return "\n".join(lines)


def load_cells(run_dir: str | Path) -> list[dict[str, Any]]:
    """Finished cells of an experiment run folder (also while it is still running)."""
    cells = []
    for path in sorted(Path(run_dir).glob(f"cells/*/seed-*/{CELL_FILE}")):
        try:
            cells.append(json.loads(path.read_text("utf-8")))
        except (OSError, json.JSONDecodeError):
            continue
    return cells


def _slug(row: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in row)


class CellTrainer:
    """MLM then NER for one cell folder, resumable (a finished model is reused, an interrupted
    one resumes from its checkpoint); shared by experiments and compare-sources."""

    def __init__(self, ctx, model: str, preset: str, lc: Corpus, dev: Corpus, mlm_config: dict[str, Any] | None = None,
                 ner_config: dict[str, Any] | None = None):
        from core import mlm, ner

        self.ctx, self.model, self.preset, self.lc, self.dev = ctx, model, preset, lc, dev
        self.mlm_config = mlm.preset_config(preset, **(mlm_config or {}))
        self.ner_config = ner.preset_config(preset, **(ner_config or {}))
        self.run_dir = Path(ctx.run_dir)

    def mlm_model(self, phases: list[tuple[str, list[str]]], folder: Path, seed: int, progress) -> str:
        from dataclasses import replace

        from core.mlm import finished_model, run_phases

        out = folder / "mlm" / "model"
        if not finished_model(out):
            t0 = time.time()
            run_phases(phases, self.model, out, replace(self.mlm_config, seed=seed), folder / "mlm", progress, self.ctx.log,
                       lambda **v: self.ctx.metric(cell=folder.parent.name, seed=seed, stage="mlm", **v))
            atomic_write_json(folder / "mlm" / "seconds.json", {"seconds": time.time() - t0})
        return str(out)

    def mlm_seconds(self, folder: Path) -> float:
        path = folder / "mlm" / "seconds.json"
        return float(json.loads(path.read_text("utf-8"))["seconds"]) if path.exists() else 0.0

    def ner_model(self, encoder: str, folder: Path, seed: int, progress, lc: Corpus | None = None) -> tuple[str, dict[str, Any]]:
        from dataclasses import replace

        from core.ner import CONFIG_FILE, train_ner

        out = folder / "ner" / "model"
        summary_path = folder / "ner" / "summary.json"
        if not (out / CONFIG_FILE).exists() or not summary_path.exists():
            summary = train_ner(lc if lc is not None else self.lc, self.dev, encoder, out, replace(self.ner_config, seed=seed),
                                progress, self.ctx.log,
                                lambda **v: self.ctx.metric(cell=folder.parent.name, seed=seed, stage="ner", **v),
                                checkpoint_dir=folder / "ner", overwrite=True)
            atomic_write_json(summary_path, summary)
        return str(out), json.loads(summary_path.read_text("utf-8"))


class _Runner(CellTrainer):
    """Runs the cells of one experiment in its run folder, reusing B1/B2 per seed."""

    def __init__(self, params: dict[str, Any], ctx, tc: Corpus, dc: Corpus, lc: Corpus, dev: Corpus, test: Corpus):
        super().__init__(ctx, params.get("model", "default"), params.get("preset") or DEFAULT_PRESET, lc, dev,
                         params.get("mlm_config"), params.get("ner_config"))
        self.params = params
        self.tc, self.dc, self.test = tc, dc, test

    def cell_dir(self, row: str, seed: int) -> Path:
        return self.run_dir / "cells" / _slug(row) / f"seed-{seed}"

    def b1_b2(self, seed: int, progress) -> tuple[str, str]:
        """The TAPT row's models for this seed (trained here if the row has not run yet)."""
        folder = self.cell_dir("tapt", seed)
        b1 = self.mlm_model([("tapt", self.tc.texts())], folder, seed, _part(progress, 0, 0.5))
        b2, _ = self.ner_model(b1, folder, seed, _part(progress, 0.5, 1))
        return b1, b2

    def run_cell(self, row: str, seed: int, progress) -> dict[str, Any]:
        from core.mlm import mlm_phases
        from core.ner import evaluate, load_ner_model

        folder = self.cell_dir(row, seed)
        if (folder / CELL_FILE).exists():
            return json.loads((folder / CELL_FILE).read_text("utf-8"))
        folder.mkdir(parents=True, exist_ok=True)
        cell: dict[str, Any] = {"row": row, "seed": seed}
        tc_texts = self.tc.texts()
        if row == "none":
            encoder = self.model
        elif row in BASELINES:
            dc_texts = self.dc.texts() if "dapt" in row else None
            encoder = self.mlm_model(mlm_phases(row, tc_texts, None, dc_texts, seed), folder, seed, _part(progress, 0, 0.4))
        else:
            name, model_tag = parse_strategy(row)
            needs_b1, needs_b2 = _strategy_models(name, model_tag)
            kwargs: dict[str, Any] = {"model": self.model, "seed": seed, "workspace": self.ctx.workspace}
            if needs_b1 or needs_b2:
                self.ctx.log(f"{row}: training B1/B2 (TAPT) for seed {seed} first")
                b1, b2 = self.b1_b2(seed, _part(progress, 0, 0.3))
                if needs_b1:
                    kwargs["model"] = b1
                if needs_b2:
                    kwargs.update(model2=b2, ner_model=b2)
            budget = self.params.get("budget") or len(self.tc)
            selection = _select_function()(self.tc, self.dc, name, budget, progress=_part(progress, 0.3, 0.4), **kwargs)
            selected = selection.selected if hasattr(selection, "selected") else selection
            cell.update(selected=len(selected), selection_key=getattr(selection, "key", None))
            phases = mlm_phases("tc+sc", tc_texts, selected.texts(), None, seed)
            encoder = self.mlm_model(phases, folder, seed, _part(progress, 0.4, 0.6))
        ner_dir, summary = self.ner_model(encoder, folder, seed, _part(progress, 0.6, 0.95))
        scores = evaluate(load_ner_model(ner_dir), self.test, batch_size=self.ner_config.eval_batch_size)
        cell.update(f1=scores["f1"], precision=scores["precision"], recall=scores["recall"], per_type=scores["per_type"],
                    best_dev_f1=summary.get("best_dev_f1"), ner_epochs=summary.get("epochs_run"), encoder=encoder)
        atomic_write_json(folder / CELL_FILE, cell)
        self.ctx.metric(cell=row, seed=seed, test_f1=scores["f1"])
        self.ctx.log(f"{row} seed {seed}: test F1 {scores['f1']:.4f}")
        return cell


def _part(progress, start: float, end: float):
    """core.progress.sub, keeping None as None (callers treat None as 'no reporting')."""
    from core.progress import sub

    return None if progress is None else sub(progress, start, end)


def experiment_job(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Job kind "experiment": params tc, dc, lc, dev, test (corpus refs), strategies, baselines, seeds,
    budget (count or ratio of DC; default |TC|), model, preset, mlm_config, ner_config, domain."""
    ws = ctx.workspace
    corpora = {k: ws.resolve_corpus(params.get(k, k)) for k in ("tc", "dc", "lc", "dev", "test")}
    for k in ("lc", "dev", "test"):
        if not corpora[k].labeled:
            raise UserError(f"{k.upper()} must be a labeled corpus")
    strategies = [s for s in params.get("strategies", []) if s]
    baselines = [b for b in params.get("baselines", list(BASELINES)) if b]
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise UserError(f"unknown baseline(s) {', '.join(unknown)}: expected {', '.join(BASELINES)}")
    if strategies:
        _select_function()  # fail before any training when selection is missing
        for s in strategies:
            parse_strategy(s)
    seeds = [int(s) for s in params.get("seeds", [1])]
    rows = baselines + strategies
    if not rows or not seeds:
        raise UserError("nothing to run: give at least one strategy or baseline, and one seed")
    runner = _Runner(params, ctx, corpora["tc"], corpora["dc"], corpora["lc"], corpora["dev"], corpora["test"])
    domain = params.get("domain") or ws.settings().get("target_domain") or corpora["test"].name or "test"
    ctx.log(f"experiment on {domain}: rows {', '.join(rows)} x seeds {seeds}; |TC| {len(corpora['tc'])}, |DC| {len(corpora['dc'])}, "
            f"|LC| {len(corpora['lc'])}, |DEV| {len(corpora['dev'])}, |TEST| {len(corpora['test'])}")
    cells = []
    total = len(rows) * len(seeds)
    for k, (seed, row) in enumerate((s, r) for s in seeds for r in rows):
        sub = ctx.sub(k / total, (k + 1) / total, f"{row} seed {seed}: ")
        cells.append(runner.run_cell(row, seed, sub))
    summary = summarize(cells)
    return {"domain": domain, "rows": row_order(rows), "seeds": seeds, "cells": cells,
            "summary": {r: {k: v for k, v in s.items() if k != "per_type"} for r, s in summary.items()}}




def collect_results(ws, include_running: bool = True) -> list[dict[str, Any]]:
    """Experiment results of a workspace for the results tables: finished jobs' results, and
    the cells finished so far of running (or failed/cancelled) ones."""
    from core import jobs

    out = []
    for job in jobs.list_jobs(ws, "experiment"):
        if job.status == "done" and job.result:
            out.append({**job.result, "job": job.id})
        elif include_running:
            cells = load_cells(job.run_dir)
            if cells:
                domain = job.params.get("domain") or ws.settings().get("target_domain") or job.params.get("test", "test")
                out.append({"domain": domain, "cells": cells, "job": job.id, "partial": True})
    return out


__all__ = ["BASELINES", "collect_results", "experiment_job", "format_results", "load_cells", "parse_strategy", "per_type_table",
           "results_table", "row_order", "summarize"]
