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

Parsing and folder keys live in core.experiments.plan, the cells themselves in core.experiments.cells.

>>> summarize([{"row": "tapt", "seed": 1, "f1": 0.5}, {"row": "tapt", "seed": 2, "f1": 0.7}])["tapt"]["mean"]
0.6
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.atomic import atomic_write_json
from core.data.corpus import Corpus
from core.data.workspace import resolve_corpus_ref
from core.errors import UserError
from core.experiments import records
from core.experiments.cell_clock import TimeLimit
from core.experiments.cell_phases import cumulative
from core.experiments.cells import ExperimentCells
from core.experiments.guard import GUARD_FILE, guard_mlm_corpora, guard_text
from core.experiments.parallel import CellTask
from core.experiments.plan import (
    BASELINES,
    RECIPE_FILE,
    check_rows,
    knob_label,
    parse_strategy,
    recipe_label,
    recipe_of,
    resolve_sc_budget,
    sweep_budgets,
)
from core.experiments.readout import readout_lines
from core.experiments.records import (
    Cell,
    ExperimentResult,
    as_cells,
    as_entries,
    as_result,
    check_inputs,
    check_recipe,
)
from core.experiments.statistics import N_RESAMPLES
from core.experiments.summary import (
    comparison_rows,
    experiment_verdict,
    interval_summary,
    interval_text,
    p_value,
)
from core.recipes.budget import Budget
from core.recipes.duration import format_duration
from core.recipes.strategy_info import strategy_models
from core.runner.params import parse_parallel
from core.selection.leakage import LeakageReport

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import ExperimentParams

def table_cells(cells: Iterable[Cell | Mapping[str, Any]]) -> list[Cell]:
    """Cells for Table 3 / Table 4: those at the largest LC size, and a strategy that ran several SC
    budgets split into one row per budget ('dsir · SC 500'). Cells without the fields (results
    from before sweeps) pass unchanged."""
    cells = as_cells(cells)
    sizes = [c.lc_size for c in cells if c.lc_size is not None]
    top = max(sizes) if sizes else None
    kept = [c for c in cells if c.lc_size in (None, top)]
    budgets: dict[str, set] = {}
    for c in kept:
        budgets.setdefault(c.row, set()).add(c.budget)
    return [replace(c, row=f"{c.row} · SC {c.budget}") if len(budgets[c.row]) > 1 else c for c in kept]


def summarize(cells: Iterable[Cell | Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per row: mean and (sample) std of test F1 over seeds, and mean per-type F1."""
    rows: dict[str, list[Cell]] = {}
    for c in as_cells(cells):
        rows.setdefault(c.row, []).append(c)
    out = {}
    for row, cs in rows.items():
        f1s = [c.f1 for c in cs]
        types: dict[str, list[float]] = {}
        for c in cs:
            for t, s in c.per_type.items():
                types.setdefault(t, []).append(s["f1"])
        out[row] = {"mean": statistics.fmean(f1s), "std": statistics.stdev(f1s) if len(f1s) > 1 else 0.0, "n": len(f1s),
                    "seeds": [c.seed for c in cs], "per_type": {t: statistics.fmean(v) for t, v in sorted(types.items())}}
    return out


def row_order(rows: Sequence[str]) -> list[str]:
    """Baselines first in the paper's order, then strategies as given."""
    return [r for r in BASELINES if r in rows] + [r for r in rows if r not in BASELINES]


def results_table(experiments: Iterable[ExperimentResult | Mapping[str, Any]], percent: bool = True):
    """The seed's Table 3: rows strategies and baselines, columns domains, cells 'mean ± std [95% CI]' of
    test F1 over seeds ('(1 seed)' instead of a spread; no interval for runs without kept predictions).
    `experiments` are experiment results (each with `domain` and `cells`);
    two experiments of one recipe on one domain are pooled, a cell (row, seed, budget, LC size) run twice counting
    once: the first listed's, the newest as collect_results lists them (pooled, the two made "row none seed 1
    appears twice" and the page failed); an experiment scored on another TEST file is a column of its own; a recipe
    variant (other MLM settings or rehearsal, plan.knob_label) is a column of its own, "music (lr=5e-05)", never pooled
    with its default's cells; sweeps enter as `table_cells` gives them."""
    import pandas as pd

    by_domain: dict[str, list[Cell]] = {}
    dev_in_mlm: set[str] = set()  # domains with a run that allowed DEV text in its MLM corpora: marked on their rows
    tests: dict[str, str | None] = {}  # column -> the TEST file's hash its cells were scored on
    have: dict[str, set[tuple]] = {}
    results = [as_result(e) for e in experiments]
    # the recipe beside the knob (encoder, preset, pick, ...): a tiny smoke run of another encoder pooled as a third
    # seed of the study's column; named in the column only where a domain ran more than one
    bases = {id(e): recipe_label({**e.recipe, "mlm_config": None, "rehearsal_share": 0}) if e.recipe else "recipe unrecorded"
             for e in results}
    per_domain: dict[str, set[str]] = {}
    for e in results:
        per_domain.setdefault(e.domain, set()).add(bases[id(e)])
    for exp in results:
        column = exp.domain + (f" [{bases[id(exp)]}]" if len(per_domain[exp.domain]) > 1 else "") + (
            f" ({knob})" if exp.recipe and (knob := knob_label(exp.recipe)) else "")
        test = ((exp.extra.get("corpora") or {}).get("test") or {}).get("hash")
        if test and tests.get(column) and tests[column] != test:
            column += f" (TEST {test[:8]})"
        if test and not tests.get(column):  # a column opened by a result with no TEST hash (a partial run) takes the
            tests[column] = test  # first real one: a third result on another TEST then gets its own column
        tests.setdefault(column, test)
        for c in table_cells(exp.cells):
            if (c.row, c.seed, c.budget, c.lc_size) not in have.setdefault(column, set()):
                have[column].add((c.row, c.seed, c.budget, c.lc_size))
                by_domain.setdefault(column, []).append(c)
        if exp.dev_in_mlm:
            dev_in_mlm.add(column)
    scale = 100.0 if percent else 1.0
    all_rows: list[str] = []
    columns: dict[str, dict[str, str]] = {}
    for domain, cells in by_domain.items():
        entries = interval_summary(cells, dev_in_mlm=domain in dev_in_mlm)
        all_rows.extend(e["row"] for e in entries if e["row"] not in all_rows)
        columns[domain] = {e["row"]: interval_text(e, scale) for e in entries}
    frame = pd.DataFrame(columns, index=row_order(all_rows))
    frame.index.name = "method"
    return frame.fillna("–")


def per_type_table(experiment: ExperimentResult | Mapping[str, Any], percent: bool = True):
    """The seed's Table 4: per entity type (rows) the mean test F1 over seeds of each method (columns)."""
    import pandas as pd

    summary = summarize(table_cells(as_result(experiment).cells))
    scale = 100.0 if percent else 1.0
    data = {row: {t: round(v * scale, 2) for t, v in summary[row]["per_type"].items()} for row in row_order(list(summary))}
    frame = pd.DataFrame(data)
    frame.index.name = "type"
    return frame.sort_index()


def format_results(result: ExperimentResult | Mapping[str, Any]) -> str:
    result = as_result(result)
    table = results_table([result])
    lines = [f"test F1 (%) mean ± std over seeds {result.seeds} [95% CI: seeds and test sentences resampled] on "
             f"{result.domain}:",
             table.to_string()]
    lines += guard_text(result.protocol) if result.protocol else []
    comparisons = comparison_rows(result.summary)
    if comparisons:
        import pandas as pd

        lines += ["paired differences (test F1 points; paired two-level bootstrap over seeds and test sentences):",
                  pd.DataFrame(comparisons).to_string(index=False)]
    return "\n".join(lines + readout_lines(result))


def load_cells(run_dir: str | Path) -> list[dict[str, Any]]:
    """Finished cells of an experiment run folder (also while it is still running), as the result JSON holds them."""
    return [c.to_dict() for c in records.load_cells(run_dir)]


def experiment_job(params: ExperimentParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "experiment": rows (baselines and strategies) x seeds x SC budgets (counts or ratios of DC;
    default |TC|) x LC sizes (counts or ratios of LC; default all of LC), each cell MLM then NER then TEST F1.

    Cells run seed by seed, LC size by LC size; baselines once per (seed, LC size), strategies once
    per SC budget. Every cell records budget, lc_size and mlm_seconds."""
    started = time.time()  # the time limit counts from here: loading the corpora and the leakage pass take minutes
    ws = ctx.workspace
    strategies = check_rows(params.strategies)  # an unknown strategy is refused here, before any corpus is read
    baselines = list(params.baselines)  # known, each once (ExperimentParams)
    refs = {k: resolve_corpus_ref(getattr(params, k), ws) for k in ("tc", "dc", "lc", "dev", "test")}
    corpora = {k: r.load() for k, r in refs.items()}
    for k in ("lc", "dev", "test"):
        if not corpora[k].labeled:
            raise UserError(f"{k.upper()} {refs[k].name!r} must be a labeled corpus")
    seeds = list(params.seeds)
    rows = baselines + strategies
    if not rows or not seeds:
        raise UserError("nothing to run: give at least one strategy or baseline, and one seed")
    # LC is not touched by the leakage guard: its sizes are checked before that pass over all of DC (minutes on a big DC)
    lc_sizes = sorted({Budget.parse(s, "LC size").count(len(corpora["lc"]), what="LC size")
                       for s in params.lc_sizes or [len(corpora["lc"])]})
    leakage = pretraining_leakage(corpora, ctx)
    corpora["tc"], corpora["dc"], guard = guard_mlm_corpora(
        corpora["tc"], corpora["dc"], leakage, params.allow_dev_in_mlm or False, any(r != "none" for r in rows), refs["tc"].name,
        drop_dev_from_dc=params.exclude_leaked)
    Path(ctx.run_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_json(Path(ctx.run_dir) / GUARD_FILE, guard.protocol)
    for line in guard_text(guard):
        ctx.log(line)
    n_tc, n_dc, n_lc = len(corpora["tc"]), len(corpora["dc"]), len(corpora["lc"])
    budgets = sweep_budgets(params.budget, params.budgets)
    if strategies:
        counts = [resolve_sc_budget(b, n_tc, n_dc) for b in budgets]  # a bad budget fails here, before training
        budgets = [b for i, b in enumerate(budgets) if counts[i] not in counts[:i]]  # 0.1 and 600 of 6,000: one cell
    runner = ExperimentCells(params, ctx, {k: r.to_dict() for k, r in refs.items()}, corpora["tc"], corpora["dc"], corpora["lc"],
                             corpora["dev"], corpora["test"])
    domain = params.domain or ws.settings().target_domain or refs["test"].name or "test"
    ctx.log(f"experiment on {domain}: rows {', '.join(rows)} x seeds {seeds} x SC budgets {budgets} x LC sizes {lc_sizes}; "
            f"|TC| {n_tc}, |DC| {n_dc}, |LC| {n_lc}, |DEV| {len(corpora['dev'])}, |TEST| {len(corpora['test'])}")
    tasks = cell_tasks(rows, seeds, budgets, lc_sizes)
    parallel = parse_parallel(params.parallel)
    lent, lenders = records.same_task_cells(ctx.run_dir, params) if params.time_limit else ([], [])
    limit = TimeLimit(params.time_limit, start=started, device=runner.device, lent=lent)
    if params.time_limit:
        ctx.log(f"time limit {format_duration(params.time_limit)}: no cell starts that would end past it"
                + (f" (a row none of its own cells can time yet is timed by {len(lent)} cells of "
                   f"{', '.join(lenders[:3])}{' and more' if len(lenders) > 3 else ''}: the same task)" if lent else ""))
    # before any finished cell is read back: a rerun with another recipe would otherwise report the old cells under
    # the new recipe whenever nothing is left to train (the check in run_cell only runs for a cell that trains)
    done = {i: runner.finished_cell(t.row, t.seed, t.budget, t.lc_size) for i, t in enumerate(tasks)}  # read once
    check_recipe(ctx.run_dir, params, len(runner.lc), any(c is None for c in done.values()))
    check_inputs(ctx.run_dir, runner.inputs())
    if kept := sum(c is not None for c in done.values()):
        ctx.log(f"{kept} of {len(tasks)} cells finished in an earlier run of this folder: kept, not trained again")
    if params.ray or parallel != 1:
        cells = run_at_once(tasks, done, runner, params, ctx, {k: r.to_dict() for k, r in refs.items()}, corpora, limit)
    else:
        cells = []  # each cell's slice of the bar by its expected clock (a none cell is a fraction of a pretraining one)
        left_out: set[int] = set()  # a cell that reads B1/B2 waits for its seed's TAPT cell: left out with it
        for i, (t, (start, end)) in enumerate(zip(tasks, cumulative([runner.cell_weight(t.row) for t in tasks]))):
            if (finished := done[i]) is not None:
                cells.append(finished)  # an earlier run's: never trained again
                continue
            if t.after in left_out or not limit.fits(t.row, cells, f"{t.label} seed {t.seed}"):
                if t.after in left_out:
                    limit.skipped.append(f"{t.label} seed {t.seed}")
                left_out.add(i)
                continue
            sub = ctx.sub(start, end, f"cell {i + 1}/{len(tasks)} {t.label} seed {t.seed}: ")
            cells.append(runner.run_cell(t.row, t.seed, sub, budget=t.budget, lc_size=t.lc_size))
    if limit.skipped:
        raise limit.reached(len(cells))
    summary = interval_summary(cells, dev_in_mlm=guard.dev_kept > 0)
    for entry in as_entries(summary):
        if "tapt" in entry.vs and (vs := entry.vs["tapt"]).delta < 0 and vs.significant:  # 3+ seeds, as every claim
            ctx.log(f"{entry.row}: significantly below TAPT ({vs.delta * 100:+.2f} points, Holm-adjusted p {p_value(vs.adjusted)})")
    return {"domain": domain, "rows": row_order(rows), "seeds": seeds, "cells": cells, "preset": params.preset,
            "recipe": recipe_of(params),
            "budgets": sorted({c["budget"] for c in cells if c["row"] not in BASELINES}), "lc_sizes": lc_sizes,
            "corpora": {k: {**r.to_dict(), "sentences": len(corpora[k])} for k, r in refs.items()},
            "summary": summary, "protocol": guard.protocol,
            "verdict": experiment_verdict(summary, params.preset, cells, knob_label(params)).to_dict(),
            "leakage": {k: v.stored() for k, v in leakage.items()},
            "summary_method": "95% CI: percentile bootstrap of the seed-mean F1, seeds then TEST sentences resampled "
                              f"({N_RESAMPLES:,} resamples), widened to the seed-level t interval with 2+ seeds; vs: the "
                              "same draws for both rows (paired over sentences and seeds), p the larger of the shifted "
                              "null's (Berg-Kirkpatrick et al. 2012) and a seed-level t-test's, the interval the hull of "
                              "both; Holm over the experiment's comparisons, a claim on 3+ seeds"}


def cell_tasks(rows: Sequence[str], seeds: Sequence[int], budgets: Sequence[Any], lc_sizes: Sequence[int]) -> list[CellTask]:
    """The cells in the order one at a time runs them (seed by seed, LC size by LC size, rows as given); a strategy
    that reads B1/B2 comes after its seed's TAPT cell (or the first cell of the seed that trains them), which
    cells at once wait for."""
    plan = [(seed, n, row, b) for seed in seeds for n in lc_sizes for row in rows
            for b in (budgets if row not in BASELINES else [None])]
    tasks: list[CellTask] = []
    first_b1: dict[tuple[int, int], int] = {}
    for seed, n, row, b in plan:
        label = row + (f" SC {b if b is not None else '|TC|'}" if row not in BASELINES and len(budgets) > 1 else "") \
            + (f" LC {n}" if len(lc_sizes) > 1 else "")
        trains_b1 = row == "tapt" or (row not in BASELINES and any(strategy_models(*parse_strategy(row))))
        after = first_b1.get((seed, n)) if trains_b1 else None
        if trains_b1 and (seed, n) not in first_b1:
            first_b1[(seed, n)] = len(tasks)
        tasks.append(CellTask(row, seed, b, n, label, after))
    return tasks


def run_at_once(tasks: list[CellTask], done: dict[int, dict[str, Any] | None], runner: ExperimentCells,
                params: ExperimentParams, ctx: JobContext, refs: dict[str, Any], corpora: dict[str, Corpus],
                limit: TimeLimit | None = None) -> list[dict[str, Any]]:
    """The cells still to run on worker processes (`parallel`) or Ray (`ray`), with `done` the finished ones by task
    index (None: still to run, as experiment_job read them before its recipe check); the same
    cells in the same folders as one at a time (core.experiments.parallel). With a `limit`, a cell that would end
    past it is not started (local workers; Ray takes the whole plan at once, so there it is refused up front)."""
    from core.experiments.parallel import WorkerSpec, cell_need, plan_slots, run_local, run_ray, visible_cards

    todo = [i for i, c in done.items() if c is None]
    if todo:
        position = {i: k for k, i in enumerate(todo)}
        left = [replace(tasks[i], after=position.get(tasks[i].after) if tasks[i].after is not None else None,
                        weight=runner.cell_weight(tasks[i].row)) for i in todo]
        spec = WorkerSpec(str(ctx.workspace.root), str(ctx.run_dir), params, refs, corpora, job_id=ctx.job_id,
                          cells_class=f"{type(runner).__module__}:{type(runner).__qualname__}")  # workers build the same
        need = cell_need(ctx, params)
        if params.ray:
            ran = run_ray(left, spec, params.ray, need, ctx)
        else:
            slots = plan_slots(parse_parallel(params.parallel), visible_cards(), need, len(left), os.cpu_count() or 1)
            finished = [c for c in done.values() if c is not None]
            ran = run_local(left, spec, slots, ctx, limit, finished)
        for i, cell in zip(todo, ran):
            done[i] = cell
    return [c for c in (done[i] for i in range(len(tasks))) if c is not None]


def pretraining_leakage(corpora: dict[str, Corpus], ctx: JobContext) -> dict[str, LeakageReport]:
    """TC's and DC's exact and near duplicates of DEV/TEST sentences (core.selection.leakage), checked before any
    training; a pretraining corpus holding TEST text is warned about in the log (the Runs page and the CLI show it)."""
    from core.selection.leakage import texts_leakage

    against = {"dev": corpora["dev"].texts(), "test": corpora["test"].texts()}
    out = {}
    for name in ("tc", "dc"):  # minutes on a big DC: its sentences checked are counted as they go
        out[name] = report = texts_leakage(corpora[name].texts(), against,
                                           progress=lambda f, m, name=name: ctx.progress(0.0, f"leakage check, "
                                                                                              f"{name.upper()}: {m}"))
        if test := report.counts("test"):
            ctx.log(f"warning: {name.upper()} holds {test['exact']} exact and {test['near']} near duplicates of "
                    f"TEST sentences (near: verified word-2-gram Jaccard >= {report.threshold}): they are dropped before "
                    "any MLM (core.experiments.guard)")
    return out


def collect_results(ws, include_running: bool = True) -> list[ExperimentResult]:
    """Experiment results of a workspace for the results tables and sweep figures: finished jobs'
    results, experiments run from the CLI (found through the run index, core.train.lineage), and the
    cells finished so far of running (or failed/cancelled) ones."""
    from core.runner import jobs
    from core.runner.kinds import validate
    from core.train.lineage import list_runs

    out, seen = [], set()
    for job in jobs.list_jobs(ws, "experiment"):
        seen.add(str(Path(job.run_dir).resolve()))
        if job.status == "done" and job.result:
            out.append(_with_recipe(ExperimentResult.from_dict(job.result, job=job.id), job.run_dir))
        elif include_running and (cells := records.load_cells(job.run_dir)):
            spec = None if job.params_error else job.spec
            out.append(_with_recipe(ExperimentResult(domain=_domain_of(ws, spec), cells=cells, job=job.id, partial=True),
                                    job.run_dir))
    for entry in list_runs(ws, "ner"):
        folder = entry.experiment
        if not folder or str(Path(folder).resolve()) in seen:
            continue
        seen.add(str(Path(folder).resolve()))
        done = Path(folder) / "result.json"
        try:
            if done.is_file():
                out.append(_with_recipe(ExperimentResult.from_dict(json.loads(done.read_text("utf-8")),
                                                                   job=Path(folder).name), folder))
            elif include_running and (cells := records.load_cells(folder)):
                stored = Path(folder) / "params.json"
                spec = validate("experiment", json.loads(stored.read_text("utf-8"))["params"]) if stored.is_file() else None
                out.append(_with_recipe(ExperimentResult(domain=_domain_of(ws, spec), cells=cells, job=Path(folder).name,
                                                         partial=True), folder))
        except (OSError, KeyError, UserError, json.JSONDecodeError):
            continue
    return out


def _with_recipe(result: ExperimentResult, run_dir: str | Path | None) -> ExperimentResult:
    """The result with its recipe: its own (results since the field), else the one its run folder recorded when its
    first cell ran (records.check_recipe), else none (a folder from before recipe.json)."""
    if result.recipe is None and run_dir and (path := Path(run_dir) / RECIPE_FILE).is_file():
        try:
            result.recipe = recipe_of(json.loads(path.read_text("utf-8")))
        except (OSError, json.JSONDecodeError, AttributeError):
            pass  # an unreadable record: the result still shows, it only cannot be grouped with its variants
    return result


def _domain_of(ws, spec: ExperimentParams | None) -> str:
    """The domain a running experiment's result will name (as experiment_job decides it): its --domain, else the
    workspace's target domain, else its TEST corpus."""
    return (spec and spec.domain) or ws.settings().target_domain or (spec and spec.test) or "test"
