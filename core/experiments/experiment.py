"""Experiments: strategies x seeds x SC budgets x LC sizes, each cell selection -> MLM -> NER -> test F1.

Rows of the result are baselines and selection strategies (the seed's Table 3):

  none        NER fine-tuning straight from the base encoder
  tapt        MLM on TC, then NER (its MLM model is B1, its NER model is B2)
  dapt        MLM on all of DC, then NER
  tapt+dapt   MLM on DC then on TC, then NER (Gururangan et al. 2020)
  STRATEGY    core.selection.strategies.select(TC, DC, STRATEGY, budget) -> SC; MLM on TC+SC (1:1); NER

Strategies that read a trained model get the seed's own: B1 (the TAPT model) for
`model` when the strategy needs a trained encoder or is written `NAME@b1`; B2 (B1
fine-tuned on LC) for `model2` and `ner_model`. B1/B2 are trained once per seed and
shared with the `tapt` row.

Sweeps (the seed's Fig. 2, Fig. 4, Table 5): `budgets` repeats every strategy row per SC size,
`lc_sizes` repeats every row per LC size (a subset drawn with the cell's seed). Every cell
records `budget` (SC sentences; for baselines the DC sentences in the MLM corpus: 0, or |DC| for
DAPT), `lc_size` (LC sentences used) and `mlm_seconds` (wall time of its MLM phases, 0 without
MLM). Every cell writes `cell.json` when it finishes, in a folder keyed by row, budget and LC
size, so a resumed experiment skips finished cells and continues inside the one it was in; each
NER run goes to the run index with its lineage (core.train.lineage). core.experiments.sweeps turns the cells into
the figures' series.

>>> summarize([{"row": "tapt", "seed": 1, "f1": 0.5}, {"row": "tapt", "seed": 2, "f1": 0.7}])["tapt"]["mean"]
0.6
>>> parse_amounts("500, 0.1", "--budgets")
[500, 0.1]
>>> resolve_amount(0.5, 300, "LC size"), resolve_amount(100, 300, "LC size")
(150, 100)
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.atomic import atomic_write_json
from core.data.corpus import Corpus
from core.data.workspace import resolve_corpus_ref
from core.errors import UserError
from core.experiments.summary import PREDICTIONS_FILE, comparison_rows, interval_summary, interval_text, pretraining_verdicts
from core.progress import sub
from core.selection.strategies import select
from core.train.lineage import Lineage, MlmPhase, from_base, record_run, write_lineage
from core.train.modes import MODE_PHASES

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import ExperimentParams

BASELINES = ("none", "tapt", "dapt", "tapt+dapt")
CELL_FILE = "cell.json"




def parse_strategy(spec: str) -> tuple[str, str | None]:
    """'cosine@b1' -> ('cosine', 'b1'); 'dsir' -> ('dsir', None)."""
    name, _, model = spec.partition("@")
    model = model.strip().lower() or None
    if model not in (None, "b1", "base"):
        raise UserError(f"strategy {spec!r}: the part after @ must be b1 or base")
    return name.strip(), model


def _strategy_models(name: str, model_tag: str | None) -> tuple[bool, bool]:
    """(needs B1, needs B2) for a strategy, from core.selection.strategies's strategy table when it has one."""
    from core.selection.strategies import Strategy

    info = Strategy.parse(name).info
    uses, trained = set(info.models), info.needs_trained_model
    needs_b1 = ("model" in uses and (trained or model_tag == "b1")) or "model2" in uses
    needs_b2 = bool(uses & {"model2", "ner_model"})
    return needs_b1, needs_b2


def parse_seeds(text: str, what: str) -> list[int]:
    """'1,2,3' -> [1, 2, 3]. Shared by `experiment --seeds`, `compare-sources --seeds` and the Runs page;
    anything but non-negative integers (numpy refuses negative seeds) is a UserError naming `what`."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not all(t.isdigit() for t in items):
        raise UserError(f"{what}: expected comma-separated integers, got {text!r}")
    if not items:
        raise UserError(f"{what}: give at least one seed")
    return [int(t) for t in items]


def parse_amounts(text: str | Sequence[Any] | None, what: str) -> list[int | float]:
    """'500,0.1' -> [500, 0.1]: a comma list (or a list) of counts (integers >= 1) or ratios
    (0 < r <= 1; write 1.0 for "all"). Shared by the CLI and the Runs page; a bad item is a
    UserError naming `what` and the item."""
    items = [t.strip() for t in text.split(",")] if isinstance(text, str) else list(text or [])
    out: list[int | float] = []
    for item in items:
        if item in ("", None):
            continue
        try:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                value: int | float = item
            else:
                value = int(item) if str(item).strip().lstrip("+").isdigit() else float(item)
        except (TypeError, ValueError):
            raise UserError(f"{what}: {item!r} is not a number; give counts (e.g. 500) or ratios (e.g. 0.1)") from None
        _check_amount(value, what)
        out.append(value)
    return out


def _check_amount(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise UserError(f"{what}: {value!r} must be a count >= 1 or a ratio in (0, 1]")
    if isinstance(value, float) and value > 1 and value != int(value):
        raise UserError(f"{what}: {value} is neither a count (integer >= 1) nor a ratio (0 < r <= 1)")


def resolve_amount(value: int | float | str, total: int, what: str) -> int:
    """A count or a ratio of `total` -> a count in [1, total]; more than `total` is a UserError
    (a sweep point that silently became "all" would repeat another point)."""
    (value,) = parse_amounts([value], what) if isinstance(value, str) else (value,)
    _check_amount(value, what)
    count = max(1, int(round(value * total))) if isinstance(value, float) and value <= 1 else int(value)
    if count > total:
        raise UserError(f"{what}: {value} is more than the {total:,} sentences there are")
    return count


def resolve_sc_budget(budget: int | float | str | None, tc_size: int, dc_size: int) -> int:
    """SC sentences a strategy selects: `budget` as core.selection.strategies reads it (count or ratio of DC,
    capped at |DC|); None means |TC|, so TC:SC is 1:1."""
    from core.selection.strategies import resolve_budget

    return resolve_budget(tc_size if budget is None else budget, dc_size)[0]


def sweep_budgets(budget: Any, budgets: Sequence[Any] | None) -> list[Any]:
    """The SC budgets to run: `budgets` (a sweep), else the single `budget` (None: |TC|)."""
    if budgets:
        if budget is not None and [budget] != list(budgets):
            raise UserError("give either budget (one SC size) or budgets (a sweep), not both")
        return list(budgets)
    return [budget]


def cell_key(row: str, budget: int | None, lc_size: int | None) -> str:
    """Folder name of a cell (or of an MLM model): row, SC budget in sentences, LC size."""
    return _slug(row) + (f".b{budget}" if budget is not None else "") + (f".lc{lc_size}" if lc_size is not None else "")


def table_cells(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells for Table 3 / Table 4: those at the largest LC size, and a strategy that ran several SC
    budgets split into one row per budget ('dsir · SC 500'). Cells without the fields (results
    from before sweeps) pass unchanged."""
    sizes = [c["lc_size"] for c in cells if c.get("lc_size") is not None]
    top = max(sizes) if sizes else None
    kept = [c for c in cells if c.get("lc_size") in (None, top)]
    budgets: dict[str, set] = {}
    for c in kept:
        budgets.setdefault(c["row"], set()).add(c.get("budget"))
    return [{**c, "row": f"{c['row']} · SC {c['budget']}"} if len(budgets[c["row"]]) > 1 else c for c in kept]


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
    """The seed's Table 3: rows strategies and baselines, columns domains, cells 'mean ± std [95% CI]' of
    test F1 over seeds ('(1 seed)' instead of a spread; no interval for runs without kept predictions).
    `experiments` are experiment results (each with `domain` and `cells`);
    two experiments on one domain are pooled; sweeps enter as `table_cells` gives them."""
    import pandas as pd

    by_domain: dict[str, list[dict[str, Any]]] = {}
    for exp in experiments:
        by_domain.setdefault(exp.get("domain") or "?", []).extend(table_cells(exp.get("cells", [])))
    scale = 100.0 if percent else 1.0
    all_rows: list[str] = []
    columns: dict[str, dict[str, str]] = {}
    for domain, cells in by_domain.items():
        entries = interval_summary(cells)
        all_rows.extend(e["row"] for e in entries if e["row"] not in all_rows)
        columns[domain] = {e["row"]: interval_text(e, scale) for e in entries}
    frame = pd.DataFrame(columns, index=row_order(all_rows))
    frame.index.name = "method"
    return frame.fillna("–")


def per_type_table(experiment: dict[str, Any], percent: bool = True):
    """The seed's Table 4: per entity type (rows) the mean test F1 over seeds of each method (columns)."""
    import pandas as pd

    summary = summarize(table_cells(experiment.get("cells", [])))
    scale = 100.0 if percent else 1.0
    data = {row: {t: round(v * scale, 2) for t, v in summary[row]["per_type"].items()} for row in row_order(list(summary))}
    frame = pd.DataFrame(data)
    frame.index.name = "type"
    return frame.sort_index()


def format_results(result: dict[str, Any]) -> str:
    table = results_table([result])
    lines = [f"test F1 (%) mean ± std over seeds {result.get('seeds')} [95% CI: seeds and test sentences resampled] on "
             f"{result.get('domain')}:",
             table.to_string()]
    for name, leak in (result.get("leakage") or {}).items():
        test = (leak.get("per_against") or {}).get("test")
        if test:
            lines.append(f"warning: {name.upper()} holds {test['exact']} exact and {test['near']} near duplicates of TEST sentences")
    comparisons = comparison_rows(result.get("summary") or [])
    if comparisons:
        import pandas as pd

        lines += ["paired differences (test F1 points; paired two-level bootstrap over seeds and test sentences):",
                  pd.DataFrame(comparisons).to_string(index=False)]
    lines += [v["text"] for v in pretraining_verdicts(result.get("summary") or [])]
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

    def __init__(self, ctx: JobContext, model: str, preset: str, lc: Corpus, dev: Corpus,
                 mlm_config: dict[str, Any] | None = None, ner_config: dict[str, Any] | None = None):
        from core.train import mlm, ner_train

        self.ctx, self.model, self.preset, self.lc, self.dev = ctx, model, preset, lc, dev
        self.mlm_config = mlm.preset_config(preset, **(mlm_config or {}))
        self.ner_config = ner_train.preset_config(preset, **(ner_config or {}))
        self.run_dir = Path(ctx.run_dir)

    def mlm_model(self, phases: list[tuple[str, list[str]]], folder: Path, seed: int, progress) -> str:
        from dataclasses import replace

        from core.train.mlm import finished_model, run_phases

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

        from core.train.ner_model import CONFIG_FILE
        from core.train.ner_train import train_ner

        out = folder / "ner" / "model"
        summary_path = folder / "ner" / "summary.json"
        if not (out / CONFIG_FILE).exists() or not summary_path.exists():
            summary = train_ner(lc if lc is not None else self.lc, self.dev, encoder, out, replace(self.ner_config, seed=seed),
                                progress, self.ctx.log,
                                lambda **v: self.ctx.metric(cell=folder.parent.name, seed=seed, stage="ner", **v),
                                checkpoint_dir=folder / "ner", overwrite=True)
            atomic_write_json(summary_path, summary)
        return str(out), json.loads(summary_path.read_text("utf-8"))


class ExperimentCells(CellTrainer):
    """Runs the cells of one experiment in its run folder.

    Layout: `pretrain/KEY/seed-N/mlm/model` holds each MLM model (KEY: the row, plus the SC budget
    for a strategy, plus the LC size when the selection read B2), so an LC-size sweep pretrains
    once and fine-tunes many times; `cells/KEY/seed-N/` holds each cell's NER model and cell.json,
    KEY = row, SC budget (strategies) and LC size. B1 is the `tapt` MLM model of a seed, B2 the
    `tapt` cell's NER model at the cell's LC size."""

    def __init__(self, params: ExperimentParams, ctx: JobContext, refs: dict[str, Any], tc: Corpus, dc: Corpus, lc: Corpus,
                 dev: Corpus, test: Corpus):
        super().__init__(ctx, params.model, params.preset, lc, dev, params.mlm_config, params.ner_config)
        self.params, self.refs = params, refs
        self.tc, self.dc, self.test = tc, dc, test
        self._lc_subsets: dict[tuple[int, int], Corpus] = {}
        self.exclude: set[int] = set()  # DC rows that duplicate DEV/TEST text, dropped from SC (exclude_leaked)

    # ------------------------------------------------------------------ folders and LC subsets

    def cell_dir(self, row: str, seed: int, budget: int | None = None, lc_size: int | None = None) -> Path:
        return self.run_dir / "cells" / cell_key(row, budget, lc_size if lc_size is not None else len(self.lc)) / f"seed-{seed}"

    def pretrain_dir(self, row: str, seed: int, budget: int | None = None, lc_size: int | None = None) -> Path:
        return self.run_dir / "pretrain" / cell_key(row, budget, lc_size) / f"seed-{seed}"

    def lc_subset(self, size: int, seed: int) -> Corpus:
        """LC itself at full size; else `size` sentences drawn with the cell's seed (nested: a
        smaller subset of a seed is a prefix of the same permutation, so sizes differ only in data)."""
        if size >= len(self.lc):
            return self.lc
        if (size, seed) not in self._lc_subsets:
            order = np.random.default_rng(seed).permutation(len(self.lc))[:size]
            self._lc_subsets[(size, seed)] = self.lc.subset(sorted(int(i) for i in order))
        return self._lc_subsets[(size, seed)]

    def tapt_models(self, seed: int, lc_size: int, progress) -> tuple[str, str]:
        """The TAPT row's models for this seed and LC size (trained here if the row has not run yet)."""
        b1 = self.mlm_model([("tapt", self.tc.texts())], self.pretrain_dir("tapt", seed), seed, sub(progress, 0, 0.5))
        b2, _ = self.ner_model(b1, self.cell_dir("tapt", seed, None, lc_size), seed, sub(progress, 0.5, 1),
                               lc=self.lc_subset(lc_size, seed))
        return b1, b2

    # ------------------------------------------------------------------ one cell

    def run_cell(self, row: str, seed: int, progress, budget: int | float | str | None = None,
                 lc_size: int | None = None) -> dict[str, Any]:
        """One cell: (row, seed, SC budget for a strategy, LC size). `budget` is what was asked for
        (count or ratio of DC, None: |TC|); the cell records the SC sentences actually selected."""
        from core.train.mlm import mlm_phases
        from core.train.ner_model import load_ner_model
        from core.train.ner_predict import evaluate, predict_corpus, write_predictions

        lc_n = len(self.lc) if lc_size is None else int(lc_size)
        strategy = row not in BASELINES
        count = resolve_sc_budget(budget, len(self.tc), len(self.dc)) if strategy else None
        folder = self.cell_dir(row, seed, count, lc_n)
        key = folder.parent.name
        done = folder / CELL_FILE
        if done.exists():
            cached = json.loads(done.read_text("utf-8"))
            if cached.get("key", key) == key:
                return cached
        legacy = self._legacy_cell(row, seed, lc_n)
        if legacy is not None:
            return legacy
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        lc = self.lc_subset(lc_n, seed)
        cell: dict[str, Any] = {"row": row, "seed": seed, "key": key, "lc_size": len(lc), "budget": 0, "mlm_seconds": 0.0,
                                "mlm_sentences": 0}
        tc_texts = self.tc.texts()
        lin = from_base(self.model)
        phases: list[tuple[str, list[str]]] = []
        mlm_folder: Path | None = None
        sc_ref: dict[str, Any] | None = None
        if row == "none":
            encoder = self.model
        elif not strategy:
            dc_texts = self.dc.texts() if "dapt" in row else None
            cell["budget"] = len(self.dc) if "dapt" in row else 0  # DC sentences in the MLM corpus
            phases = mlm_phases(row, tc_texts, None, dc_texts, seed)
            mlm_folder = self.pretrain_dir(row, seed)
            encoder = self.mlm_model(phases, mlm_folder, seed, sub(progress, 0, 0.4))
        else:
            name, model_tag = parse_strategy(row)
            needs_b1, needs_b2 = _strategy_models(name, model_tag)
            kwargs: dict[str, Any] = {"model": self.model, "seed": seed, "workspace": self.ctx.workspace}
            if needs_b1 or needs_b2:
                self.ctx.log(f"{row}: training B1/B2 (TAPT) for seed {seed} first")
                b1, b2 = self.tapt_models(seed, lc_n, sub(progress, 0, 0.3))
                if needs_b1:
                    kwargs["model"] = b1
                    cell["b1_mlm_seconds"] = self.mlm_seconds(self.pretrain_dir("tapt", seed))
                if needs_b2:
                    kwargs.update(model2=b2, ner_model=b2)
            selection = select(self.tc, self.dc, name, count, progress=sub(progress, 0.3, 0.4), **kwargs)
            selected = selection.selected
            sel_key = selection.key
            if self.exclude and (drop := [k for k, i in enumerate(selection.indices) if int(i) in self.exclude]):
                selected = selected.subset([k for k in range(len(selected)) if k not in set(drop)])
                cell["leaked_dropped"] = len(drop)
                self.ctx.log(f"{row} seed {seed}: {len(drop)} selected sentences duplicate DEV/TEST text; dropped before MLM")
            cell.update(selected=len(selected), selection_key=sel_key, budget=len(selected),
                        budget_requested=budget if budget is not None else len(self.tc))
            sc_ref = {"name": f"selection:{sel_key}" if sel_key else f"selection:{name}", "hash": sel_key}
            lin.selection = {"id": sel_key, "strategy": name, "budget": len(selected), "model": model_tag or "base"}
            phases = mlm_phases("tc+sc", tc_texts, selected.texts(), None, seed)
            mlm_folder = self.pretrain_dir(row, seed, count, lc_n if needs_b2 else None)
            encoder = self.mlm_model(phases, mlm_folder, seed, sub(progress, 0.4, 0.6))
        if mlm_folder is not None:
            cell["mlm_seconds"] = self.mlm_seconds(mlm_folder)
            cell["mlm_sentences"] = sum(len(texts) for _, texts in phases)
            lin.mlm_phases += [MlmPhase(p, self._phase_corpora(p, sc_ref), len(texts)) for p, texts in phases]
            write_lineage(encoder, Lineage(**{**lin.__dict__, "seed": seed, "preset": self.preset,
                                              "wall_seconds": cell["mlm_seconds"]}))
            lin = from_base(encoder)
        ner_dir, summary = self.ner_model(encoder, folder, seed, sub(progress, 0.6, 0.95), lc=lc)
        model = load_ner_model(ner_dir)
        predictions = predict_corpus(model, self.test, batch_size=self.ner_config.eval_batch_size)
        scores = evaluate(model, self.test, predictions=predictions)
        cell["predictions"] = str(write_predictions(folder / PREDICTIONS_FILE, predictions, self.test))  # intervals, paired tests
        cell.update(f1=scores["f1"], precision=scores["precision"], recall=scores["recall"], per_type=scores["per_type"],
                    best_dev_f1=summary.get("best_dev_f1"), ner_epochs=summary.get("epochs_run"), encoder=encoder)
        lin.lc = {**self.refs["lc"], "sentences": len(lc), "of": len(self.lc), **({"sample_seed": seed} if len(lc) < len(self.lc) else {})}
        lin.dev, lin.test = self.refs["dev"], self.refs["test"]
        lin.seed, lin.preset, lin.wall_seconds = seed, self.preset, time.time() - t0
        run_id = f"{self.run_dir.name}.{key}.s{seed}"
        record_run(self.ctx.workspace, run_id, "ner", lin, folder, ner_dir, f1=scores["f1"],
                   extra={"experiment": str(self.run_dir), "row": row, "budget": cell["budget"], "lc_size": len(lc)})
        cell["run"] = run_id
        atomic_write_json(done, cell)
        self.ctx.metric(cell=key, seed=seed, test_f1=scores["f1"])
        self.ctx.log(f"{key} seed {seed}: test F1 {scores['f1']:.4f}")
        return cell

    def _legacy_cell(self, row: str, seed: int, lc_n: int) -> dict[str, Any] | None:
        """A cell finished before sweeps existed (`cells/ROW/seed-N/cell.json`, one budget, all of LC), kept
        when this run asks for the same: resuming an older experiment does not train its cells again."""
        folder = self.run_dir / "cells" / _slug(row) / f"seed-{seed}"
        single = len(sweep_budgets(self.params.budget, self.params.budgets)) == 1
        if not (single and lc_n == len(self.lc) and (folder / CELL_FILE).exists()):
            return None
        cell = json.loads((folder / CELL_FILE).read_text("utf-8"))
        if "lc_size" in cell:
            return None
        budget = cell.get("selected") if row not in BASELINES else (len(self.dc) if "dapt" in row else 0)
        return {**cell, "budget": budget, "lc_size": lc_n, "mlm_seconds": self.mlm_seconds(folder)}

    def _phase_corpora(self, phase: str, sc: dict[str, Any] | None) -> list[dict[str, Any]]:
        """{name, hash} of the corpora an MLM phase of this experiment reads."""
        reads = {name: roles for phases in MODE_PHASES.values() for name, roles in phases}.get(phase, ())
        refs = {**self.refs, "sc": sc}
        return [refs[r] for r in reads if refs.get(r)]


def experiment_job(params: ExperimentParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "experiment": rows (baselines and strategies) x seeds x SC budgets (counts or ratios of DC;
    default |TC|) x LC sizes (counts or ratios of LC; default all of LC), each cell MLM then NER then TEST F1.

    Cells run seed by seed, LC size by LC size; baselines once per (seed, LC size), strategies once
    per SC budget. Every cell records budget, lc_size and mlm_seconds."""
    ws = ctx.workspace
    refs = {k: resolve_corpus_ref(getattr(params, k), ws) for k in ("tc", "dc", "lc", "dev", "test")}
    corpora = {k: r.load() for k, r in refs.items()}
    for k in ("lc", "dev", "test"):
        if not corpora[k].labeled:
            raise UserError(f"{k.upper()} {refs[k].name!r} must be a labeled corpus")
    strategies = [s for s in params.strategies if s]
    baselines = [b for b in params.baselines if b]
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise UserError(f"unknown baseline(s) {', '.join(unknown)}: expected {', '.join(BASELINES)}")
    seeds = list(params.seeds)
    rows = baselines + strategies
    if not rows or not seeds:
        raise UserError("nothing to run: give at least one strategy or baseline, and one seed")
    n_tc, n_dc, n_lc = len(corpora["tc"]), len(corpora["dc"]), len(corpora["lc"])
    leakage = pretraining_leakage(corpora, ctx)
    budgets = sweep_budgets(params.budget, params.budgets)
    if strategies:
        for s in strategies:
            parse_strategy(s)
        counts = [resolve_sc_budget(b, n_tc, n_dc) for b in budgets]  # a bad budget fails here, before training
        budgets = [b for i, b in enumerate(budgets) if counts[i] not in counts[:i]]  # 0.1 and 600 of 6,000: one cell
    lc_sizes = sorted({resolve_amount(s, n_lc, "LC size") for s in params.lc_sizes or [n_lc]})
    runner = ExperimentCells(params, ctx, {k: r.to_dict() for k, r in refs.items()}, corpora["tc"], corpora["dc"], corpora["lc"],
                             corpora["dev"], corpora["test"])
    runner.exclude = set(leakage["dc"]["leaked_indices"]) if params.exclude_leaked else set()
    domain = params.domain or ws.settings().get("target_domain") or refs["test"].name or "test"
    ctx.log(f"experiment on {domain}: rows {', '.join(rows)} x seeds {seeds} x SC budgets {budgets} x LC sizes {lc_sizes}; "
            f"|TC| {n_tc}, |DC| {n_dc}, |LC| {n_lc}, |DEV| {len(corpora['dev'])}, |TEST| {len(corpora['test'])}")
    plan = [(seed, n, row, b) for seed in seeds for n in lc_sizes
            for row in rows for b in (budgets if row not in BASELINES else [None])]
    cells = []
    for k, (seed, n, row, b) in enumerate(plan):
        label = row + (f" SC {b if b is not None else '|TC|'}" if row not in BASELINES and len(budgets) > 1 else "") \
            + (f" LC {n}" if len(lc_sizes) > 1 else "")
        sub = ctx.sub(k / len(plan), (k + 1) / len(plan), f"{label} seed {seed}: ")
        cells.append(runner.run_cell(row, seed, sub, budget=b, lc_size=n))
    summary = interval_summary(cells)
    for entry in summary:
        if (vs := entry["vs"].get("tapt")) and vs["delta"] < 0 and vs["p"] < 0.05:
            ctx.log(f"{entry['row']}: significantly below TAPT ({vs['delta'] * 100:+.2f} points, p {vs['p']:.3f})")
    return {"domain": domain, "rows": row_order(rows), "seeds": seeds, "cells": cells,
            "budgets": sorted({c["budget"] for c in cells if c["row"] not in BASELINES}), "lc_sizes": lc_sizes,
            "corpora": {k: {**r.to_dict(), "sentences": len(corpora[k])} for k, r in refs.items()},
            "summary": summary,
            "leakage": {k: {f: v[f] for f in ("exact", "near", "threshold", "per_against")} for k, v in leakage.items()},
            "summary_method": "95% CI: percentile bootstrap of the seed-mean F1, seeds then TEST sentences resampled "
                              "(1000 resamples); vs: the same draws for both rows (paired over sentences and seeds), p by the "
                              "shifted null (Berg-Kirkpatrick et al. 2012)"}


def pretraining_leakage(corpora: dict[str, Corpus], ctx: JobContext) -> dict[str, dict[str, Any]]:
    """TC's and DC's exact and near duplicates of DEV/TEST sentences (core.selection.leakage), checked before any
    training; a pretraining corpus holding TEST text is warned about in the log (the Runs page and the CLI show it)."""
    from core.selection.leakage import texts_leakage

    against = {"dev": corpora["dev"].texts(), "test": corpora["test"].texts()}
    out = {}
    for name in ("tc", "dc"):
        ctx.progress(0.0, f"leakage check: {name.upper()} against DEV/TEST")
        out[name] = report = texts_leakage(corpora[name].texts(), against)
        test = report["per_against"].get("test", {})
        if test:
            ctx.log(f"warning: {name.upper()} holds {test.get('exact', 0)} exact and {test.get('near', 0)} near duplicates of "
                    f"TEST sentences (near: verified word-2-gram Jaccard >= {report['threshold']}): MLM on it may see evaluation "
                    "text (exclude_leaked / --exclude-leaked drops them from SC)")
    return out


def collect_results(ws, include_running: bool = True) -> list[dict[str, Any]]:
    """Experiment results of a workspace for the results tables and sweep figures: finished jobs'
    results, experiments run from the CLI (found through the run index, core.train.lineage), and the
    cells finished so far of running (or failed/cancelled) ones."""
    from core.runner import jobs
    from core.train.lineage import list_runs

    out, seen = [], set()
    for job in jobs.list_jobs(ws, "experiment"):
        seen.add(str(Path(job.run_dir).resolve()))
        if job.status == "done" and job.result:
            out.append({**job.result, "job": job.id})
        elif include_running:
            cells = load_cells(job.run_dir)
            if cells:
                domain = job.params.get("domain") or ws.settings().get("target_domain") or job.params.get("test", "test")
                out.append({"domain": domain, "cells": cells, "job": job.id, "partial": True})
    for entry in list_runs(ws, "ner"):
        folder = entry.get("experiment")
        if not folder or str(Path(folder).resolve()) in seen:
            continue
        seen.add(str(Path(folder).resolve()))
        done = Path(folder) / "result.json"
        try:
            if done.is_file():
                out.append({**json.loads(done.read_text("utf-8")), "job": Path(folder).name})
            elif include_running and (cells := load_cells(folder)):
                params = json.loads((Path(folder) / "params.json").read_text("utf-8")).get("params", {}) \
                    if (Path(folder) / "params.json").is_file() else {}
                out.append({"domain": params.get("domain") or params.get("test", "test"), "cells": cells,
                            "job": Path(folder).name, "partial": True})
        except (OSError, json.JSONDecodeError):
            continue
    return out
