"""The CrossNER study (issue 11): does pretraining on selected sentences beat TAPT and no pretraining?

For one target domain, builds the study corpora (core.experiments.study, protocol v2: TC = train, LC = train,
DEV = dev half A, DC = dev half B + the four other domains, TEST = test; no DEV or TEST text in an MLM corpus), imports them into a study
workspace with the product's own import (Workspace.import_corpus, as `python -m core import`), runs
the product's own `experiment` (jobs.run_inline, as `python -m core experiment`) over the rows and
seeds, and writes docs/results/crossner-v2-<domain>-<variant>.json (`--out` names it yourself; the results of the
first protocol, crossner-<domain>-*.json, stay as they were and say "protocol v1"): the git commit, the protocol's sizes, mean ± std
of TEST F1 per row, each selection's domain precision (share of selected DC sentences from the
target, next to random's expectation), per-type F1 per row and every cell.

Resumable: the experiment keeps its run folder (WORKSPACE/runs/study-<domain>-<variant>: the preset, then
any MLM override, rehearsal and checkpoint pick, e.g. study-music-study-pick4 under the default; a CPU run with
--cpu-precision fp32 ends in -cpu-fp32, beside the GPU run of the same recipe); a finished
cell is skipped and an interrupted one resumes from its checkpoints, so rerunning the same command
after a session ends continues where it stopped. On a fresh machine (the run folder gone) the finished cells
of the --out JSON come back into the run folder first (they carry their TEST counts), so the same command
continues there too. The JSON is rewritten after every run, partial results marked as such; `--status`
writes it from the finished cells of a running study.

    python scripts/crossner_study.py --domain music                         # 3 seeds, preset study
    python scripts/crossner_study.py --domain music --preset tiny --seeds 1  # smoke run

Seeds (or domains) can run as separate processes, each with its own --workspace and --out (on a GPU
machine they share the card), then be pooled into one result with the same summary:

    python scripts/crossner_study.py --merge A.json B.json C.json --out docs/results/crossner-music.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CROSSNER = Path(os.environ.get("NERSELECT_CROSSNER", ROOT.parent / "shared" / "data" / "crossner"))
# none / tapt / dapt: the baselines; cosine, dsir, ner (NER-Selected): the seed's strategies and DSIR;
# random: the control that tells selection from "more DC text of any kind" at the same budget.
ROWS = ("none", "tapt", "dapt", "cosine", "dsir", "ner", "random")


def git_commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout

    # A GPU machine gets a copy of the working tree whose .git can be older than the tree (seen on the H200: HEAD was
    # the session's first commit, the tree a later one): there the caller names the commit, and that name wins.
    if named := os.environ.get("NERSELECT_COMMIT"):
        return {"commit": named, "dirty_files": "unknown: commit named by NERSELECT_COMMIT (a device copy)"}
    commit = git("rev-parse", "HEAD").strip()
    if not commit:
        return {"commit": "unknown", "dirty_files": "unknown: not a git checkout"}
    # porcelain lines are "XY path": not stripped as a whole, or the first line's leading space goes. The results
    # folder is left out: a grid rewrites its earlier variants' JSONs before it runs the next, and those outputs do
    # not change what runs, so listing them would mark every later variant as run from a modified tree.
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs/results")
    dirty = [line[3:] for line in status.splitlines() if line.strip()]
    return {"commit": commit, "dirty_files": dirty}


def missing_cells(rows: list[str], seeds: list[int], cells: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(row, seed) pairs asked for that have no finished cell yet: none left means the study is complete, so a JSON
    that --status writes then is as final as the run's own."""
    return sorted({(r, s) for r in rows for s in seeds} - {(c["row"], c["seed"]) for c in cells})


def with_rows(argv: list[str], rows: list[str]) -> list[str]:
    """The command line as run, less --status and --rerun-old-head, with --rows naming every row the result JSON holds:
    the command a result records continues (or reproduces) all of it, also after a run that asked for some rows only.
    --rerun-old-head asked for some rows' cells again; kept with every row named, it would train again the old-head
    cells of rows nobody asked for (a fresh run draws the seeded head anyway).

    >>> with_rows(["s.py", "--domain", "ai", "--rows", "tapt", "--status"], ["none", "tapt"])
    ['s.py', '--domain', 'ai', '--rows', 'none,tapt']
    >>> with_rows(["s.py", "--rows=tapt", "--rerun-old-head", "--cpu-precision", "fp32"], ["none", "tapt"])
    ['s.py', '--rows=none,tapt', '--cpu-precision', 'fp32']
    >>> with_rows([str(ROOT / "scripts/crossner_study.py"), "--domain", "ai"], ["tapt"])[0]  # a --grid variant's
    'scripts/crossner_study.py'

    A time limit belonged to that call (a session's, a GPU call's), not to the study: it is left out too.

    >>> with_rows(["s.py", "--time-limit", "460", "--rows", "tapt", "--time-limit=2h"], ["tapt"])
    ['s.py', '--rows', 'tapt']
    """
    kept, skip = [], False
    for a in argv:
        if skip or a in ("--status", "--rerun-old-head", "--time-limit") or a.startswith("--time-limit="):
            skip = a == "--time-limit"
            continue
        kept.append(as_typed(a))
    return replace_rows(kept, rows)


def as_typed(arg: str) -> str:
    """A path inside the project as a user types it from the project's root: a --grid runs its variants by absolute
    path, which a result JSON would otherwise record (a folder of the machine that ran it, not a command to rerun)."""
    path = Path(arg)
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else arg


def replace_rows(argv: list[str], rows: list[str]) -> list[str]:
    """The command line with --rows (either form) naming `rows`, added when it named none."""
    out: list[str] = []
    for a in argv:
        if out and out[-1] == "--rows":
            a = ",".join(rows)
        elif a.startswith("--rows="):
            a = "--rows=" + ",".join(rows)
        out.append(a)
    return out if any(a == "--rows" or a.startswith("--rows=") for a in argv) else [*out, "--rows", ",".join(rows)]


def read_result(path: Path, what_to_do: str = "") -> dict[str, Any] | None:
    """A study's result JSON, None when there is none; UserError (ending in `what_to_do`) when the file is not one.
    The one reading of a stored result that a study resumes from or counts its cells by."""
    from core.errors import UserError

    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a study result JSON ({exc}){what_to_do}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or not isinstance(data.get("params"), dict):
        raise UserError(f"{path}: not a study result JSON (expected params and a list of cells){what_to_do}")
    return data


def budget_value(budget: Any) -> Any:
    """A study's --budget as the number it means ('0.10', ' 2000' and 2000 alike); None for the default (|TC|)."""
    from core.recipes.budget import Budget

    return None if budget in (None, "") else Budget.parse(budget, "--budget").value


def same_study(previous: Path, params: dict[str, Any], protocol: dict[str, Any], say: bool = True) -> dict[str, Any] | None:
    """The result JSON at `previous` when it is one of this study (domain, protocol, recipe), else None; a file that
    is not a result JSON is a UserError."""
    from core.experiments.plan import recipe_differences, recipe_of

    data = read_result(previous, "; give another --out or move it away")
    if data is None:
        return None

    def protocol_of(p: dict[str, Any]) -> dict[str, Any]:  # a result from before protocols had names is v1
        return {k: p.get(k, "v1" if k == "name" else None) for k in ("name", "split_seed", "sizes")}

    if data.get("domain") != params["domain"] or protocol_of(data.get("protocol") or {}) != protocol_of(protocol) \
            or recipe_differences(recipe_of(data["params"]), recipe_of(params)) \
            or budget_value(data["params"].get("budget")) != budget_value(params.get("budget")):
        if say:
            print(f"{previous} is another study (domain, protocol, recipe or SC budget): no cells restored from it",
                  file=sys.stderr)
        return None
    return data


def with_stored(cells: list[dict[str, Any]], stored: dict[str, Any] | None) -> list[dict[str, Any]]:
    """This run's finished cells, then the stored result's cells this run does not have: a command that asks for some
    rows (the ablation's default pass, --rows tapt) or stops early never drops the others from the study's JSON. A cell
    run here replaces its stored copy (same row, seed, SC budget and LC size).

    >>> new = [{"row": "tapt", "seed": 1, "f1": 0.6}]
    >>> [(c["row"], c["f1"]) for c in with_stored(new, {"cells": [{"row": "none", "seed": 1, "f1": 0.5},
    ...                                                           {"row": "tapt", "seed": 1, "f1": 0.4}]})]
    [('tapt', 0.6), ('none', 0.5)]
    """
    def key(c: dict[str, Any]) -> tuple[Any, ...]:
        return c["row"], c["seed"], c.get("budget"), c.get("lc_size")

    have = {key(c) for c in cells}
    return [*cells, *(c for c in (stored or {}).get("cells") or [] if key(c) not in have)]


def holes(cells: list[dict[str, Any]], rows: list[str]) -> list[tuple[str, int]]:
    """(row, seed) pairs of `rows` x every seed the cells hold that have no cell: what keeps a study unfinished.

    >>> holes([{"row": "none", "seed": 1}, {"row": "none", "seed": 2}, {"row": "tapt", "seed": 1}], ["none", "tapt"])
    [('tapt', 2)]
    """
    have = {(c["row"], c["seed"]) for c in cells}
    seeds = sorted({c["seed"] for c in cells})
    return [(r, s) for r in rows for s in seeds if (r, s) not in have]


def other_device(cells: list[dict[str, Any]], device: str) -> str | None:
    """The device ('cuda' or 'cpu') stored cells ran on when it is not this machine's `device`: their file is another
    machine's study, and cells of two devices never pair (core.experiments.records.ran_alike).

    >>> other_device([{"numerics": {"device": "cuda:0"}}], "cpu"), other_device([{"numerics": {"device": "cpu"}}], "cpu")
    ('cuda', None)
    """
    kinds = {str((c.get("numerics") or {}).get("device", "")).split(":")[0] for c in cells} - {""}
    return next(iter(sorted(kinds - {device})), None)


def this_device() -> str:
    """Where this machine's cells train: 'cuda' or 'cpu'."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def runs_again(cell: dict[str, Any], rows: list[str], seeds: list[int], old_head: bool = False,
               cpu_precision: str | None = None) -> bool:
    """Whether this stored cell of the asked rows and seeds runs again: with --rerun-old-head when its NER head was
    drawn apart from none's (core.experiments.records.head_drawn_apart); with --cpu-precision when it ran on a CPU in
    the other precision, or where it ran is not recorded (it would pair with none of the cells run now, or with an
    unknown machine: records.ran_alike; a cell restored from an older JSON carried no record)."""
    from core.experiments.records import head_drawn_apart

    if cell.get("row") not in rows or cell.get("seed") not in seeds:
        return False
    numbers = cell.get("numerics") or {}
    other = bool(cpu_precision) and (not numbers or numbers.get("device") == "cpu" and numbers.get("dtype") != cpu_precision)
    return (old_head and head_drawn_apart(cell)) or other


def still_to_run(cells: list[dict[str, Any]], rows: list[str], seeds: list[int], old_head: bool = False,
                 cpu_precision: str | None = None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """What --status reports as left: the (row, seed) pairs with no finished cell, and those whose stored cell runs
    again (runs_again). A cell to run again stays in the JSON until its new copy lands (with_stored replaces it), so a
    rerun that stops early, or a --status written before it ends, never leaves the study with fewer cells than it had.

    >>> old = {"row": "tapt", "seed": 1, "numerics": {"device": "cpu", "dtype": "bf16"}}
    >>> fine = {"row": "none", "seed": 1, "numerics": {"device": "cpu", "dtype": "fp32"}}
    >>> still_to_run([fine, old], ["none", "tapt"], [1, 2], cpu_precision="fp32")
    ([('none', 2), ('tapt', 2)], [('tapt', 1)])
    >>> still_to_run([{"row": "none", "seed": 1}], ["none"], [1], cpu_precision="fp32")  # where it ran: unknown
    ([], [('none', 1)])
    """
    again = sorted({(c["row"], c["seed"]) for c in cells if runs_again(c, rows, seeds, old_head, cpu_precision)})
    return missing_cells(rows, seeds, cells), again


MIN_OWN_CLOCKS = 3  # a study's own pretraining cells that time it alone; fewer are pooled with its default's


def time_left(cells: list[dict[str, Any]], todo: list[tuple[str, int]], fallback: list[dict[str, Any]] | None = None
              ) -> str:
    """About how long the cells to go take, so that a user can plan a session ("33 to go" alone does not say 8 hours):
    each at the median clock of the finished cells of its row (a row with none yet: of the pretraining rows; `none`
    only fine-tunes, several times faster), divided by how many cells ran at once (the clocks' summed span over the
    time any of them ran: 1 for a CPU study, about 8 for a GPU lane). `fallback` lends clocks while `cells` holds
    fewer than MIN_OWN_CLOCKS pretraining cells (a knob variant begun or not, a study that ran `none` first): its
    default recipe's, which ran the same rows on the same machine kind, so one slow first cell does not set the
    estimate alone. A row no clock can stand for is counted out and said ("at least"); '' when nothing can be
    estimated.

    >>> done = [{"row": "none", "started": 0, "finished": 120}, {"row": "tapt", "started": 120, "finished": 720},
    ...         {"row": "dsir", "started": 720, "finished": 1620}]
    >>> time_left(done, [("none", 2), ("tapt", 2), ("dsir", 2)])
    'about 27 min (median pretraining cell 12 min, none 2 min, from 3 finished cells)'
    >>> time_left(done[:1], [("none", 2), ("tapt", 2)])  # only none has finished: tapt cannot be timed
    'at least 2 min (1 cell of a row with no finished cell yet not counted; from 1 finished cell)'
    >>> default = [{"row": "tapt", "started": 0, "finished": 600}, {"row": "tapt", "started": 600, "finished": 1200}]
    >>> time_left(done[1:2], [("tapt", 2), ("tapt", 3)], default)  # one own cell of 10 min joins the default's two
    'about 20 min (median pretraining cell 10 min, from 3 finished cells)'
    >>> side_by_side = [{"row": "tapt", "started": 0, "finished": 600}, {"row": "dsir", "started": 0, "finished": 600}]
    >>> time_left(side_by_side, [("tapt", 2), ("dsir", 2)])
    'about 10 min (median pretraining cell 10 min, from 2 finished cells, 2.0 at once as they ran)'
    """
    import statistics

    from core.experiments.cell_clock import clocked, expected_clock, pretraining_clock, row_clocks

    own = clocked(cells)
    borrowed = clocked(fallback) if fallback and sum(c.get("row") != "none" for c in own) < MIN_OWN_CLOCKS else []
    pool = own + borrowed
    if not pool:
        return ""
    by_row = row_clocks(pool)  # the same clocks as a time limit's (core.experiments.cell_clock)
    typical = pretraining_clock(by_row)
    each = [expected_clock(row, by_row) for row, _ in todo]
    uncounted = sum(t is None for t in each)
    # cells that ran side by side (--parallel): the time any of them ran, against their summed clocks; a borrowed
    # default ran at another time, so each source's cells overlap only among themselves
    def covered(source: list[dict[str, Any]]) -> float:
        total, reach = 0.0, float("-inf")
        for begin, end in sorted((c["started"], c["finished"]) for c in source):
            total += max(0.0, end - max(begin, reach))
            reach = max(reach, end)
        return total

    ran = covered(own) + covered(borrowed)
    at_once = max(1.0, sum(c["finished"] - c["started"] for c in pool) / ran) if ran else 1.0
    seconds = sum(t for t in each if t is not None) / at_once
    if not seconds:
        return ""
    total = f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"
    basis = ([f"median pretraining cell {typical / 60:.0f} min"] if typical else []) + \
        ([f"none {statistics.median(by_row['none']) / 60:.0f} min"] if typical and "none" in by_row else []) + \
        [f"from {len(pool)} finished cell{'s' if len(pool) > 1 else ''}"] + \
        ([f"{at_once:.1f} at once as they ran"] if at_once >= 1.2 else [])
    if uncounted:
        return (f"at least {total} ({uncounted} cell{'s' if uncounted > 1 else ''} of a row with no finished cell yet "
                f"not counted; {', '.join(basis)})")
    return f"about {total} ({', '.join(basis)})"


class Left(NamedTuple):
    """A study command against its result JSON (cells_left)."""

    path: Path  # the JSON, named by the study's own naming (result_path)
    variant: str  # what names its run folder and JSON (recipe_variant)
    cells: list[dict[str, Any]]  # the JSON's stored cells
    missing: list[tuple[str, int]]  # (row, seed) with no stored copy
    again: list[tuple[str, int]]  # stored, but the command would run them again (runs_again)


def cells_left(args: argparse.Namespace, results: Path = ROOT / "docs" / "results") -> Left:
    """A study command against its result JSON: what a grid's --status totals, and what scripts/study_plans.py counts
    a plan's cells with."""
    from core.experiments.plan import row_names

    _, variant = recipe_variant(args)
    path = result_path(args.domain, variant, results)
    cells = (read_result(path) or {}).get("cells") or []
    rows = row_names(args.rows)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    return Left(path, variant, cells, *still_to_run(cells, rows, seeds, args.rerun_old_head, args.cpu_precision))


def grid_left(commands: list[list[str]], results: Path = ROOT / "docs" / "results") -> str:
    """A grid's --status ends with the whole grid: cells to go over its studies and about how long, timed by the
    clocks of every finished cell of the grid's studies (time_left: row by row, at the concurrency they ran with)."""
    parser = build_parser()
    clocks: list[dict[str, Any]] = []
    todo: list[tuple[str, int]] = []
    for command in commands:
        left = cells_left(parser.parse_args(command[2:]), results)
        clocks += left.cells
        todo += left.missing + left.again
    if not todo:
        return f"grid: every cell of its {len(commands)} studies has finished"
    eta = time_left(clocks, todo)
    return f"grid: {len(todo)} cells to go over its {len(commands)} studies" + (f"; {eta}" if eta else "")


def clock_of(path: Path) -> list[dict[str, Any]]:
    """The cells of a stored result, for their clocks alone: a knob variant not begun times its cells by its default
    recipe's, which ran the same rows on the same machine kind. [] when there is none or it cannot be read: an
    estimate never stops --status."""
    from core.errors import UserError

    try:
        return (read_result(path) or {}).get("cells") or []
    except UserError:
        return []


def set_aside_reruns(run_dir: Path, rows: list[str], seeds: list[int], old_head: bool = False,
                     cpu_precision: str | None = None) -> list[Path]:
    """Move the cells finished in this run folder that run again (runs_again) to RUN_DIR/replaced/STAMP/, kept, not
    deleted: left in place, the experiment would take each as finished and its NER model as trained, so on the machine
    where they ran --rerun-old-head and --cpu-precision would change nothing. Their MLM models stay: neither flag
    touches pretraining. Returns where they went."""
    import shutil

    from core.experiments.experiment import load_cells

    moved: list[Path] = []
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for cell in load_cells(run_dir):
        if not runs_again(cell, rows, seeds, old_head, cpu_precision):
            continue
        folder = run_dir / "cells" / cell["key"] / f"seed-{cell['seed']}"
        target = run_dir / "replaced" / stamp / cell["key"] / folder.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), str(target))
        moved.append(target)
    return moved


def restore_cells(previous: Path, run_dir: Path, params: dict[str, Any], protocol: dict[str, Any], rows: list[str],
                  seeds: list[int], rerun_old_head: bool = False, cpu_precision: str | None = None) -> dict[str, Any] | None:
    """Put the finished cells of an earlier run of this study (its result JSON, --out) back into a run folder that lacks
    them, so the same command continues on a fresh machine, or after a GPU machine's workspace is gone, instead of
    starting over. Only a cell of this domain, protocol and recipe that carries its TEST counts (`test_counts`) comes
    back: one without would lose its interval. A seed's TAPT cell stays out while a row of that seed still to run reads
    B1/B2 (NER-selected): that row fine-tunes B2 from the TAPT cell's own model, which must be trained here, as in one
    run. The base encoder's checkpoint-pick score of a seed comes back with its cells, so cells run here are picked
    against the same score. Each restored cell says where it came from (`restored_from`). With `rerun_old_head`, a
    cell of the asked rows whose NER head was drawn apart from none's (records.head_drawn_apart) stays out, so it runs
    again with the seeded head and its pairs with variants run since share the head's draw; with `cpu_precision`, so
    does a cell that ran on a CPU in the other precision (runs_again). Returns what came back, or
    None when nothing did; a file that is not a result JSON is a UserError."""
    from core.data.atomic import atomic_write_json
    from core.errors import UserError
    from core.experiments.plan import BASELINES, parse_strategy
    from core.experiments.records import Cell, cell_path, save_cell
    from core.recipes.strategy_info import strategy_models

    data = same_study(previous, params, protocol)
    if data is None:
        return None

    def reads_tapt(row: str) -> bool:
        try:
            return row not in BASELINES and any(strategy_models(*parse_strategy(row)))
        except UserError:  # an unknown row: the experiment refuses it, naming it, before anything runs
            return False

    usable = [c for c in data["cells"] if isinstance(c, dict) and c.get("test_counts") and c.get("key")
              and not runs_again(c, rows, seeds, rerun_old_head, cpu_precision)]
    done = {(c["row"], c["seed"]) for c in usable}
    tapt_needed = {seed for seed in seeds for row in rows if (row, seed) not in done and reads_tapt(row)}
    origin = {"file": str(previous), "commit": data.get("commit")}
    restored = 0
    for cell in usable:
        if cell["row"] == "tapt" and cell["seed"] in tapt_needed:
            continue
        path = cell_path(run_dir, cell["key"], cell["seed"])
        if path.exists():
            continue
        save_cell(path, Cell.from_dict({**cell, "restored_from": cell.get("restored_from") or origin}))
        restored += 1
        pick = cell.get("pick") or {}
        base = (pick.get("scores") or {}).get("base")
        score = run_dir / "probe" / f"base.seed-{cell['seed']}.lc{pick.get('probe_lc')}" / "score.json"
        if base is not None and pick.get("probe_lc") and not score.exists():
            atomic_write_json(score, {"dev_f1": base, "candidate": "base", "path": params.get("model"), "restored_from": origin})
    return {**origin, "cells": restored, "domain_precision": data.get("domain_precision") or {}} if restored else None


def guard_record(result: dict[str, Any] | None, run_dir: Path, stored: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the experiment's MLM guard did (core.experiments.guard): from the result, else the run folder's record,
    else the stored JSON's (a --status on a fresh machine, before any cell ran here, must not drop it)."""
    from core.experiments.guard import GUARD_FILE

    if result and result.get("protocol"):
        return result["protocol"]
    path = run_dir / GUARD_FILE
    if path.is_file():
        return json.loads(path.read_text("utf-8"))
    kept = (stored or {}).get("protocol") or {}
    return {k: v for k, v in kept.items() if k not in ("name", "split_seed", "sizes", "dc_in_domain", "description")}


def import_study(ws, study) -> dict[str, str]:
    """Write each role's corpus to WORKSPACE/study-files/ and import it with its role (idempotent:
    the same content under the same name is not imported twice). Returns role -> corpus name."""
    from core.data.corpus import write_corpus

    folder = ws.root / "study-files"
    folder.mkdir(parents=True, exist_ok=True)
    names = {}
    for role, corpus in study.by_role().items():
        name = f"{study.domain}-{role}"  # --status relies on this naming
        path = write_corpus(corpus, folder / f"{name}.jsonl", "jsonl")  # JSONL keeps the `domain` field
        info = ws.import_corpus(path, role=role, name=name, overwrite=True)
        names[role] = info.name
    ws.update_settings(target_domain=study.domain)
    return names


def selection_precision(ws, cells: list[dict[str, Any]], domain: str, earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per selection row: the domain precision of its saved selections, averaged over the distinct selections (one
    per seed for a seeded strategy such as random or DSIR: one seed's draw alone is luck), beside random's expectation.

    A selection this workspace holds is measured here; one it does not (a cell restored from an earlier run, on
    another machine) keeps the figure the earlier run stored (`earlier`, this JSON's previous `domain_precision`),
    so a study continued elsewhere adds its seeds' selections to the mean instead of replacing it (ai's fourth seed
    had left ner, entity-gain and random with one selection of four). An earlier figure is kept per group of
    selections it averaged (`groups`): a group none of whose selections is measured here again, all still in the cells."""
    from core.data.selection_store import load_selection

    wanted: dict[str, set[str]] = {}
    for cell in cells:
        if cell.get("selection_key"):
            wanted.setdefault(cell["row"], set()).add(cell["selection_key"])
    found: dict[str, dict[str, dict[str, Any]]] = {}
    errors: dict[str, str] = {}
    for cell in cells:
        key = cell.get("selection_key")
        if not key or key in found.get(cell["row"], {}):
            continue
        try:
            dp = load_selection(ws, key).domain_precision(domain)
        except Exception as exc:
            errors.setdefault(cell["row"], str(exc))
            continue
        found.setdefault(cell["row"], {})[key] = {**(dp or {}), "selected": cell.get("selected"), "selection_key": key}
    out: dict[str, Any] = {}
    for row, keys in wanted.items():  # each of a row's selections was either measured here or failed to load
        here = list(found.get(row, {}).values())
        prior = (earlier or {}).get(row) or {}
        kept = [g for g in _groups(prior) if set(g["keys"]) <= keys and not set(g["keys"]) & set(found.get(row, {}))]
        fields = {k: v for k, v in prior.items() if k != "groups"}  # each kept group is a part of its own
        parts = here + [{**fields, "domain_precision": g["domain_precision"], "parts": len(g["keys"]),
                         "selection_keys": g["keys"]} for g in kept]
        if any("domain_precision" in p for p in parts):
            # "of": the row's distinct selections in the cells; fewer covered means the mean covers only some seeds
            out[row] = {**_mean_precision(parts), "of": len(keys)}
        else:
            out[row] = prior or {"error": errors.get(row, "no selection found")}
    return out


def _groups(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The groups of selections whose mean an entry holds, each with the keys it averages: a single selection, an
    older entry's whole mean, or the groups it lists."""
    if entry.get("groups"):
        return [{"keys": sorted(g["keys"]), "domain_precision": g["domain_precision"]} for g in entry["groups"]]
    keys = entry.get("selection_keys") or ([entry["selection_key"]] if entry.get("selection_key") else [])
    return [{"keys": sorted(keys), "domain_precision": entry["domain_precision"]}] if keys and "domain_precision" in entry else []


def merge_results(paths: list[Path], out: Path) -> dict[str, Any]:
    """Pool result JSONs of one domain and recipe (e.g. one per seed) into one: cells concatenated
    (a (row, seed) present twice is an error), rows and per-type F1 recomputed, each row's domain
    precision averaged over the parts that saved a selection for it."""
    from core.experiments.experiment import summarize
    from core.experiments.plan import recipe_differences, recipe_of
    from core.experiments.records import ran_alike
    from core.experiments.summary import portable_cells

    parts = [json.loads(Path(p).read_text("utf-8")) for p in paths]
    for path, part in zip(paths[1:], parts[1:]):  # one domain and one recipe (encoder, preset, MLM settings, pick, ...)
        diff = recipe_differences(recipe_of(parts[0]["params"]), recipe_of(part["params"]))
        if part["domain"] != parts[0]["domain"]:
            diff.insert(0, f"domain: {parts[0]['domain']!r} there, {part['domain']!r} now")
        first, this = (parts[0].get("protocol") or {}), (part.get("protocol") or {})
        for k in ("name", "split_seed", "sizes"):  # v1 and v2 parts hold other sentences in LC, DEV and TEST
            if first.get(k) != this.get(k):
                diff.append(f"protocol {k}: {first.get(k)!r} there, {this.get(k)!r} now")
        alike = set(ran_alike([*(parts[0].get("cells") or []), *(part.get("cells") or [])])) - {""}
        if len(alike) > 1:  # cells of two devices or precisions never pair (core.experiments.records.ran_alike)
            diff.append(f"devices: the parts ran on {' and '.join(sorted(alike))}")
        if budget_value(parts[0]["params"].get("budget")) != budget_value(part["params"].get("budget")):
            diff.append(f"SC budget: {parts[0]['params'].get('budget')!r} there, {part['params'].get('budget')!r} now")
        if diff:
            raise SystemExit(f"error: {path} is another study than {paths[0]} ({'; '.join(diff)}): "
                             "merge only parts of one domain and recipe")
    cells: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for path, part in zip(paths, parts):
        for cell in part["cells"]:
            key = (cell["row"], cell["seed"], cell.get("budget"), cell.get("lc_size"))
            if key in seen:
                raise SystemExit(f"error: {path}: row {cell['row']} seed {cell['seed']} is already in an earlier part")
            seen.add(key)
            cells.append(cell)
    cells = portable_cells(cells)
    sources: list[dict[str, Any]] = []  # the runs behind the merge: a part that is itself a merge lists its own
    for path, part in zip(paths, parts):
        sources += part.get("merged_from") or [
            {"file": str(path), "commit": part["commit"], "dirty_files": part["dirty_files"], "command": part["command"],
             "seeds": part["params"]["seeds"], "seconds_this_run": part.get("seconds_this_run"), "run_dir": part.get("run_dir")}]
    precision: dict[str, Any] = {}
    for part in parts:
        for row, dp in part.get("domain_precision", {}).items():
            precision.setdefault(row, []).append(dp)
    summary = summarize(cells)
    merged = {**parts[0], "finished": all(p["finished"] for p in parts), "error": [p["error"] for p in parts if p["error"]] or None,
              "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "merged_from": sources,
              "commit": sorted({s["commit"] for s in sources}), "command": [s["command"] for s in sources],
              "params": {**parts[0]["params"], "seeds": sorted({c["seed"] for c in cells})},
              "rows": {r: {"mean": v["mean"], "std": v["std"], "n": v["n"], "seeds": v["seeds"]} for r, v in summary.items()},
              "domain_precision": {row: _mean_precision(dps) for row, dps in precision.items()},
              "per_type_f1": {r: v["per_type"] for r, v in summary.items()}, "cells": cells,
              **derived_fields(cells, parts[0]["params"], [p.get("protocol") for p in parts])}
    merged.pop("run_dir", None)
    merged.pop("seconds_this_run", None)
    write_json(out, merged)
    return merged


def write_json(path: Path, data: dict[str, Any]) -> None:
    """A result JSON, written whole or not at all (core.data.atomic), in the layout every result file has."""
    from core.data.atomic import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=2, default=float) + "\n")


def derived_fields(cells: list[dict[str, Any]], params: dict[str, Any],
                   protocols: list[dict[str, Any] | None] = ()) -> dict[str, Any]:
    """What a result JSON derives from its cells, params and guard records (`protocols`: the run's, or each merged
    part's) alone: the 95% CIs and paired tests (from the kept TEST counts), rows marked where DEV text was allowed in an
    MLM corpus, and the verdict read from them (a knob variant's advice names its default recipe). One place, so a
    merge, a refresh and a run all say the same (a merge or refresh dropped the DEV mark before)."""
    from core.experiments.guard import GuardReport
    from core.experiments.plan import knob_label
    from core.experiments.summary import experiment_verdict, interval_summary

    dev_in_mlm = any(GuardReport.from_protocol(p).dev_kept for p in protocols if p)
    intervals = interval_summary(cells, dev_in_mlm=dev_in_mlm) if cells else []
    verdict = experiment_verdict(intervals, params.get("preset"), cells, knob_label(params))
    return {"summary": intervals, "verdict": verdict.to_dict()}


def refresh_results(paths: list[Path]) -> list[str]:
    """Rewrite the derived fields of result JSONs from their cells, after the rules that read them changed (e.g. the
    seeds a claim needs); a file whose cells kept no TEST counts cannot be re-derived and is left as it is."""
    lines = []
    for path in paths:
        data = json.loads(path.read_text("utf-8"))
        cells = data.get("cells") or []
        if not cells or not all(c.get("test_counts") for c in cells):
            lines.append(f"{path}: left as it is (its cells kept no TEST counts)")
            continue
        before = data.get("verdict") or {}
        data.update(derived_fields(cells, data["params"], [data.get("protocol")]))
        data["refreshed"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_json(path, data)
        def sentences(verdict: dict[str, Any]) -> dict[str, Any]:  # the verdict's two sentences
            return {"verdict": verdict.get("text"), "what to do": (verdict.get("advice") or {}).get("text")}

        now, was = sentences(data["verdict"]), sentences(before)
        said = [f"{k} now: {now[k]} (was: {was[k]})" for k in now if now[k] != was[k]]
        lines.append(f"{path}: " + ("; ".join(said) or "verdict unchanged"))
    return lines


def _origins(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where restored cells came from: each earlier result file and commit, with how many of the cells."""
    counts: dict[tuple[str, str], int] = {}
    for c in cells:
        if o := c.get("restored_from"):
            key = (o.get("file"), json.dumps(o.get("commit")))
            counts[key] = counts.get(key, 0) + 1
    return [{"file": f, "commit": json.loads(commit), "cells": n} for (f, commit), n in counts.items()]


def _mean_precision(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean domain precision of several selections of one row, each weighed by the selections it already averages
    (`parts`), so merging per-seed JSONs and averaging a run's seeds agree.

    >>> m = _mean_precision([{"domain_precision": 0.2, "selection_key": "a"},
    ...                      {"domain_precision": 0.5, "parts": 2, "selection_keys": ["b", "c"]}])
    >>> round(m["domain_precision"], 3), m["parts"], m["selection_keys"]
    (0.4, 3, ['a', 'b', 'c'])
    """
    ok = [p for p in parts if "domain_precision" in p]
    if not ok:
        return parts[0]
    weights = [int(p.get("parts") or 1) for p in ok]
    keys = sorted({k for p in ok for k in (p.get("selection_keys") or [p.get("selection_key")]) if k})
    first = {k: v for k, v in ok[0].items() if k != "selection_key"}
    return {**first, "domain_precision": sum(w * p["domain_precision"] for w, p in zip(weights, ok)) / sum(weights),
            "parts": sum(weights), "selection_keys": keys, "groups": [g for p in ok for g in _groups(p)]}


def grid_commands(args: argparse.Namespace, argv: list[str]) -> list[list[str]]:
    """The ablation as one study command per (domain, variant): the default recipe, then each knob's values one at a
    time, every other setting as given. A bad knob or value stops here (UserError), before any work.

    >>> ns = argparse.Namespace(domain="music,literature", grid=["l2sp=0.01,0.1"], mlm=[], rehearsal_share=0.0, rows="none,tapt",
    ...                         preset="study", model="default", mlm_steps=None, pick_checkpoint=None)
    >>> runs = [c[2:] for c in grid_commands(ns, ["--domain", "music,literature", "--grid", "l2sp=0.01,0.1", "--seeds", "1"])]
    >>> len(runs), runs[0], runs[2]
    (6, ['--seeds', '1', '--domain', 'music'], ['--seeds', '1', '--rows', 'tapt', '--domain', 'music', '--mlm', 'l2sp=0.1'])
    >>> [c[2] for c in grid_commands(ns, ["--rows=none,tapt", "--grid", "l2sp=0.01,0.1"])]  # none runs once a domain
    ['--rows=none,tapt', '--rows=tapt', '--rows=tapt', '--rows=none,tapt', '--rows=tapt', '--rows=tapt']
    >>> grid_commands(argparse.Namespace(**{**vars(ns), "rows": None}), [])[1][2:4]  # asked for no rows: all but none
    ['--rows', 'tapt,dapt,cosine,dsir,ner,random']
    """
    from core.errors import UserError

    if getattr(args, "merge", None) or getattr(args, "refresh", None):
        raise UserError("--grid runs studies; --merge and --refresh work on result JSONs: give them alone")
    if getattr(args, "out", None):  # each variant writes its own JSON, named by its recipe: one --out for all would
        raise UserError("--grid with --out: each variant writes its own result JSON, named by its recipe, and one "
                        "--out would make them overwrite one another; leave --out out (they go to docs/results/)")
    keep, skip = [], False
    for a in argv:  # every argument but --grid and --domain (and their values) passes through
        if skip:
            skip = False
            continue
        if a in ("--grid", "--domain", "--time-limit"):  # the grid's time limit is handed on as what is left of it
            skip = True
            continue
        if not a.startswith(("--grid=", "--domain=", "--time-limit=")):
            keep.append(a)
    variants: list[list[str]] = [[]]
    for item in args.grid:
        key, sep, values = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not values.strip():
            raise UserError(f"--grid {item!r}: expected KEY=V1,V2 (e.g. l2sp=0.01,0.1)")
        for value in (v.strip() for v in values.split(",") if v.strip()):
            if key == "rehearsal_share":
                try:
                    float(value)
                except ValueError:
                    raise UserError(f"--grid {item!r}: rehearsal_share must be a number, got {value!r}") from None
            extra = (["--rehearsal-share", value] if key == "rehearsal_share" else ["--mlm", f"{key}={value}"])
            probe = argparse.Namespace(**{**vars(args), "mlm": [*args.mlm, *([extra[1]] if extra[0] == "--mlm" else [])],
                                          "rehearsal_share": float(value) if key == "rehearsal_share" else args.rehearsal_share})
            recipe_variant(probe)  # an unknown setting or a bad value is refused now
            variants.append(extra)
    from core.experiments.plan import row_names

    rows = row_names(str(getattr(args, "rows", None) or ",".join(ROWS)))
    if len(variants) > 1 and set(rows) == {"none"}:
        raise UserError("--grid with --rows none alone: a knob changes the MLM, and none does not pretrain; "
                        "give the pretraining rows too (e.g. --rows none,tapt,dsir,random)")
    domains = [d.strip() for d in args.domain.split(",") if d.strip()]
    # `none` does not pretrain: the default pass runs it, every knob variant borrows it (asked or by default)
    shared = replace_rows(keep, [r for r in rows if r != "none"]) if "none" in rows else keep
    return [[sys.executable, str(Path(__file__).resolve()), *(shared if v else keep), "--domain", d, *v]
            for d in domains for v in variants]


def recipe_variant(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The recipe settings of the study's params beyond the preset (encoder, MLM overrides, rehearsal, checkpoint pick)
    and the variant that names its run folder and JSON: every setting that changes how cells train is in the name,
    so two recipes never share a folder. A bad setting raises UserError here, before any work."""
    from core.experiments.plan import model_tag
    from core.recipes.configs import parse_settings
    from core.recipes.presets import experiment_settings
    from core.runner.params import check_config

    recipe: dict[str, Any] = {}
    variant = args.preset
    if tag := model_tag(args.model):  # another encoder: its own run folder and JSON, named after it
        variant = f"{tag}-{variant}"
    if args.mlm_steps:  # the "is MLM too short?" question: same cells with a longer MLM, in their own run folder
        recipe["mlm_config"] = {"max_steps": args.mlm_steps}
        variant += f"-mlm{args.mlm_steps}"
    if args.mlm:  # one parse: a key typed twice with two values is refused, as at `experiment --mlm`
        recipe.setdefault("mlm_config", {}).update(parse_settings(args.mlm, "--mlm"))
    for item in args.mlm:  # recipe variants (issue 26's ablation): each setting names the run folder, as typed
        key, _, value = item.partition("=")
        variant += f"-{key.strip()}{value.strip()}"
    if recipe.get("mlm_config"):  # an unknown setting, a value of the wrong type or out of range stops here, as at a
        check_config("mlm", recipe["mlm_config"], args.preset, "--mlm")  # job's submit
    if args.rehearsal_share:
        recipe["rehearsal_share"] = args.rehearsal_share
        variant += f"-rehearsal{args.rehearsal_share:g}"
    # checkpoint pick (issue 26) names the run folder whenever it is on, as it did when it was opt-in, so a folder's
    # name says how its cells ran: study-music-study holds the runs without pick, study-music-study-pick4 those with
    pick = args.pick_checkpoint if args.pick_checkpoint is not None else experiment_settings(args.preset)["pick_checkpoint"]
    recipe["pick_checkpoint"] = pick
    if pick:
        variant += f"-pick{pick}"
    if (budget := budget_value(getattr(args, "budget", None))) is not None:  # another SC size is another study: its own
        variant += f"-b{budget:g}"  # folder and JSON (it pooled with the default budget's cells; --status said none left)
    if precision := getattr(args, "cpu_precision", None):
        # A CPU run pinned to a precision is its own run beside the GPU one of the same recipe: cells of two devices
        # or precisions never pair (core.experiments.records.ran_alike), so they never share a folder or a JSON, and
        # a CPU knob variant finds its CPU default by the same name (default_result_path).
        variant += f"-cpu-{precision}"
    return recipe, variant


def result_path(domain: str, variant: str, results: Path = ROOT / "docs" / "results") -> Path:
    """Where a study's result JSON goes without --out (scripts/study_plans.py counts a plan's cells from it)."""
    from core.experiments.study import PROTOCOL

    return results / f"crossner-{PROTOCOL}-{domain}-{variant}.json"


def build_parser() -> argparse.ArgumentParser:
    """The study's arguments; tests read every plan under scripts/plans/ with it, so a GPU call never starts on a typo."""
    from core.recipes.presets import pick_defaults  # light: no torch before the arguments are read

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)  # --row is no --rows
    parser.add_argument("--domain", default="music", help="target CrossNER domain (ai, literature, music, politics, science)")
    parser.add_argument("--workspace", help="study workspace (default: workspace/study-<domain>-v2 in the checkout, git-ignored)")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--preset", default="study", help="training preset of every cell (core.recipes.presets.PRESETS)")
    parser.add_argument("--rows", default=",".join(ROWS), help="baselines (none, tapt, dapt, tapt+dapt) and selection strategies, "
                                                            "with options as NAME:KEY=VALUE (dsir:length=chunk)")
    parser.add_argument("--budget", help="SC size (count or ratio of DC); default |TC|, TC:SC 1:1 as in the seed paper")
    parser.add_argument("--model", default="default", help="encoder: default (the embedded MiniLM), a Hugging Face id or a "
                        "local folder; another than the default names the run folder and JSON (study-music-<name>-study-pick4)")
    parser.add_argument("--mlm-steps", type=int, help="MLM step cap of every cell instead of the preset's (own run folder and JSON)")
    parser.add_argument("--mlm", action="append", default=[], metavar="KEY=VALUE",
                        help="an MLM recipe setting of every cell (core.recipes.configs.MlmConfig), e.g. head_warmup_steps=100, "
                             "layer_lr_decay=0.8, freeze_layers=2, lr=5e-5; repeatable; own run folder and JSON")
    parser.add_argument("--rehearsal-share", type=float, default=0.0, dest="rehearsal_share",
                        help="share of every MLM corpus made of random DC sentences (general-text replay; own run folder)")
    from core.recipes.presets import PICK_SNAPSHOTS

    parser.add_argument("--pick-checkpoint", type=int, nargs="?", const=PICK_SNAPSHOTS, default=None, dest="pick_checkpoint",
                        metavar="N", help=f"keep N MLM snapshots per cell ({PICK_SNAPSHOTS} when given without N) and "
                                          "fine-tune from the best by a short "
                             "DEV-F1 probe, or from the base encoder when none beats it; default: the preset's ("
                             f"{pick_defaults()})")
    parser.add_argument("--no-pick-checkpoint", action="store_const", const=0, dest="pick_checkpoint",
                        help="fine-tune from the last MLM model (the study as run before checkpoint pick was the default)")
    parser.add_argument("--out", help="result JSON (default docs/results/crossner-v2-<domain>-<variant>.json, the run "
                        "folder's variant, e.g. crossner-music-study-pick4.json)")
    parser.add_argument("--rerun-old-head", action="store_true", dest="rerun_old_head",
                        help="run again the stored cells of --rows whose NER head was drawn after an MLM folder's load, "
                             "before issue 46's A/A control fixed it (apart from none's of the same seed), so they pair "
                             "with variants run since; a cell run again replaces its copy in the JSON")
    parser.add_argument("--cpu-precision", choices=("fp32", "bf16"), dest="cpu_precision",
                        help="pin a CPU's training precision (default: bf16 where the CPU has it and a timing probe says "
                             "it pays, which another CPU, or this one under load, may answer otherwise); stored CPU cells "
                             "of the other precision run again, since cells of two precisions never pair; the run "
                             "folder and JSON end in -cpu-PRECISION, apart from the GPU run of the same recipe")
    parser.add_argument("--status", action="store_true", help="write the JSON from the cells finished so far; run nothing")
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="pool these result JSONs (one domain and recipe) into --out")
    parser.add_argument("--refresh", nargs="+", metavar="JSON", help="rewrite these result JSONs' intervals, tests and "
                        "verdict from their cells (after a rule that reads them changed); run nothing")
    parser.add_argument("--parallel", default="1", metavar="N|auto",
                        help="cells at once (`experiment --parallel`): a number, or auto from the GPUs' free memory (default: 1)")
    parser.add_argument("--ray", metavar="ADDRESS", help="run the cells as Ray tasks (`experiment --ray`; default: no Ray)")
    parser.add_argument("--time-limit", dest="time_limit", metavar="DURATION",
                        help="start no cell that would end past this long from now (`experiment --time-limit`: 2h, 90m, "
                             "seconds; with --grid, for the whole grid): a session or a GPU call that ends then loses no "
                             "cell half run; the run stops with exit 3 and the same command continues (default: no limit)")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help="the knob ablation (issue 46), one knob at a time: the default recipe, then one variant per value "
                             "of each knob (an MLM setting such as lr, warmup_ratio, head_warmup_steps, layer_lr_decay, "
                             "freeze_layers, l2sp, mlm_probability, epochs; or rehearsal_share), each in its own run folder and "
                             "JSON, so the command resumes; repeatable; --domain may then list several domains")
    return parser


def default_result_path(args: argparse.Namespace) -> Path:
    """The result JSON of this study's default recipe: the same domain, encoder, preset and checkpoint pick, no knob."""
    _, variant = recipe_variant(argparse.Namespace(**{**vars(args), "mlm": [], "mlm_steps": None, "rehearsal_share": 0}))
    return result_path(args.domain, variant)


def knob_lines(payload: dict[str, Any], default: dict[str, Any] | None, name: str = "the default recipe") -> str:
    """A knob variant's rows against its domain's default recipe (issue 46's comparison, core.experiments.decision):
    without it the variant's own verdict can only say "not tested", since the variant shares the default's none.
    Holm runs over this variant's rows here; the ablation table's runs over every knob and domain at once, so its p
    can only be larger."""
    from core.experiments.decision import RunOfRecipe, knob_tests, unpaired_variants
    from core.experiments.statistics import MIN_CLAIM_SEEDS
    from core.experiments.summary import p_value

    variant = RunOfRecipe.of(payload)
    if not variant.knob:
        return ""
    if default is None:
        return f"{variant.knob} against {name}: no result of it yet, so not compared"
    if not variant.cells:
        return f"{variant.knob} against {name}: no finished cell of this variant yet"
    runs = [RunOfRecipe.of(default), variant]
    if unpaired := unpaired_variants(runs):
        return f"{variant.knob} against {name}: not compared ({unpaired[0]}: cells of two devices or precisions never pair)"
    tests = knob_tests(runs)
    if not tests:
        return f"{variant.knob} against {name}: no row of it ran beside this variant's on a common seed"
    lines = [f"{variant.knob} against {name}, whose none it shares (so the verdict above cannot test against none; "
             f"this is its comparison): variant - default, test F1 points, Holm over the "
             f"{sum(t.p_holm is not None for t in tests)} of these with {MIN_CLAIM_SEEDS} seeds or more"]
    for t in tests:
        holm = f"no claim under {MIN_CLAIM_SEEDS} seeds" if t.p_holm is None else f"Holm {p_value(t.p_holm)}"
        apart = f"  NER heads drawn apart at {t.heads_apart} (--rerun-old-head)" if t.heads_apart else ""
        lines.append(f"  {t.row:8s} {100 * t.delta:+.2f} [{100 * t.ci[0]:+.2f}, {100 * t.ci[1]:+.2f}]  p {p_value(t.p)}  {holm}"
                     f"  seeds {t.seeds}{apart}")
    return "\n".join(lines)


def study_lines(payload: dict[str, Any]) -> str:
    """A study's rows and its verdict, as its result JSON holds them: what --status prints, and what a run that added
    rows prints after its own (a run of one row alone would say "not tested", though the study has `none`).

    >>> print(study_lines({"rows": {"none": {"mean": 0.5, "std": 0.01, "seeds": [1, 2]}},
    ...                    "verdict": {"text": "pretraining helps against none: not tested",
    ...                                "advice": {"text": "no pretraining row was compared with none"}}}))
    none     50.00 ± 1.00  seeds [1, 2]
    verdict: pretraining helps against none: not tested
    what to do: no pretraining row was compared with none
    """
    lines = [f"{row:8s} {100 * v['mean']:.2f} ± {100 * v['std']:.2f}  seeds {v['seeds']}" for row, v in payload["rows"].items()]
    verdict = payload.get("verdict") or {}
    lines += [f"verdict: {verdict['text']}"] if verdict.get("text") else []
    advice = (verdict.get("advice") or {}).get("text")
    lines += [f"what to do: {advice}"] if advice else []
    return "\n".join(lines)


def main() -> int:
    from core.errors import TIME_LIMIT_EXIT, TimeLimitReached, UserError
    from core.recipes.duration import parse_duration

    args = build_parser().parse_args()
    try:
        args.time_limit = parse_duration(args.time_limit, "--time-limit")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.grid:
        deadline = time.time() + args.time_limit if args.time_limit else None
        try:
            commands = grid_commands(args, sys.argv[1:])
        except UserError as exc:  # a bad knob or value, or --out: nothing has run
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for k, command in enumerate(commands, 1):
            if deadline is not None and not args.status:
                if (left := deadline - time.time()) < 1:
                    print(f"stopped at the time limit before variant {k} of {len(commands)}; rerun the same command to "
                          "continue", file=sys.stderr)
                    return TIME_LIMIT_EXIT
                command = [*command, "--time-limit", f"{left:.0f}"]
            print(f"== ablation variant {k} of {len(commands)}: {' '.join(command[2:])}", flush=True)
            done = subprocess.run(command, cwd=ROOT)
            if done.returncode == TIME_LIMIT_EXIT:
                print(f"variant {k} of {len(commands)} stopped at the time limit; rerun the same command to continue",
                      file=sys.stderr)
                return TIME_LIMIT_EXIT
            if done.returncode != 0:
                print(f"error: variant {k} failed (exit {done.returncode}); rerun the same command to continue", file=sys.stderr)
                return done.returncode
        if args.status:
            print("\n" + grid_left(commands))
        return 0
    if args.refresh:
        print("\n".join(refresh_results([Path(p) for p in args.refresh])))
        return 0
    if args.merge:
        if not args.out:
            raise SystemExit("error: --merge needs --out")
        merged = merge_results([Path(p) for p in args.merge], Path(args.out))
        for row, v in merged["rows"].items():
            print(f"{row:8s} {100 * v['mean']:.2f} ± {100 * v['std']:.2f}  (n={v['n']})")
        print(f"wrote {args.out}")
        return 0
    if args.cpu_precision:  # read by core.train.training.resolve_precision, here and in every cell's worker
        import torch

        if torch.cuda.is_available() and not args.status:  # its cells would run on the GPU under a CPU run's name
            raise SystemExit("error: --cpu-precision names a CPU run (its folder and JSON end in -cpu-"
                             f"{args.cpu_precision}), and this machine has a GPU: run without it, or hide the GPU "
                             "(CUDA_VISIBLE_DEVICES=)")
        os.environ["NERSELECT_CPU_PRECISION"] = args.cpu_precision
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from core.cliutil import tqdm_progress
    from core.data.workspace import Workspace
    from core.errors import UserError
    from core.experiments.experiment import format_results, load_cells, per_type_table, row_order, summarize
    from core.experiments.plan import BASELINES, row_names
    from core.experiments.study import PROTOCOL, PROTOCOLS, SPLIT_SEED, crossner_protocol
    from core.experiments.summary import portable_cells
    from core.recipes.presets import PRESETS
    from core.runner import jobs

    if args.preset not in PRESETS:
        raise SystemExit(f"error: --preset must be one of {', '.join(PRESETS)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        study = crossner_protocol(CROSSNER, args.domain)
        rows = row_names(args.rows)
    except (ValueError, UserError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ws = Workspace(args.workspace or ROOT / "workspace" / f"study-{args.domain}-{PROTOCOL}")
    # --status reads a study that may be running: it must not write into its workspace
    names = {r: f"{study.domain}-{r}" for r in study.by_role()} if args.status else import_study(ws, study)
    print(f"study workspace {ws.root}: " + ", ".join(f"{r.upper()} {names[r]} ({n})" for r, n in study.sizes().items()))
    params = {**{r: names[r] for r in ("tc", "dc", "lc", "dev", "test")},
              "baselines": [r for r in rows if r in BASELINES], "strategies": [r for r in rows if r not in BASELINES],
              "seeds": seeds, "budget": args.budget, "model": args.model, "preset": args.preset, "domain": args.domain,
              "parallel": args.parallel, "ray": args.ray, "time_limit": args.time_limit}
    try:
        recipe, variant = recipe_variant(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    params.update(recipe)
    run_dir = ws.runs_dir / f"study-{args.domain}-{variant}"
    out = Path(args.out) if args.out else result_path(args.domain, variant)

    def write(result: dict[str, Any] | None, started: float, error: str | None = None,
              complete: bool = False) -> dict[str, Any]:
        # counts inline (merges later); the stored JSON's other rows kept (with_stored)
        cells = portable_cells(with_stored(result["cells"] if result else load_cells(run_dir), stored))
        held = row_order(list(dict.fromkeys([*rows, *(c["row"] for c in cells)])))  # every row the JSON holds
        summary = summarize(cells) if cells else {}
        guarded = guard_record(result, run_dir, stored)
        derived = derived_fields(cells, params, [guarded])  # 95% CIs, paired tests (cells keep TEST predictions), verdict
        payload = {
            "study": "CrossNER selective pretraining (issue 11)", "domain": args.domain, **git_commit(),
            # the device carry rounds the default encoder's weights to fp16 (scripts/device_bundle.sh): said in the JSON
            **({"encoder_note": note} if (note := os.environ.get("NERSELECT_ENCODER_NOTE")) else {}),
            # the command that continues the whole study: not --status, and every row the JSON holds
            "command": " ".join([Path(sys.executable).name, *with_rows(sys.argv, held)]),
            # finished: every row the JSON holds has a cell for every seed it holds (a --rows tapt call that completes
            # its own rows does not finish rows an earlier, timed-out call left short)
            "finished": (result is not None or complete) and not holes(cells, held), "error": error,
            "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds_this_run": round(time.time() - started, 1),
            "protocol": {"name": PROTOCOL, "split_seed": SPLIT_SEED, "sizes": study.sizes(),
                         "dc_in_domain": sum(d == args.domain for d in study.dc.fields["domain"]),
                         "description": PROTOCOLS[PROTOCOL], **guarded},
            "verdict": derived["verdict"],
            "params": {**{k: v for k, v in params.items() if k != "time_limit"},  # the call's, not the study's
                       "baselines": [r for r in held if r in BASELINES],
                       "strategies": [r for r in held if r not in BASELINES],
                       "seeds": sorted({*seeds, *(c["seed"] for c in cells)})}, "run_dir": str(run_dir),
            **({"restored_from": origins} if (origins := _origins(cells)) else {}),
            "rows": {r: {"mean": s["mean"], "std": s["std"], "n": s["n"], "seeds": s["seeds"]} for r, s in summary.items()},
            "domain_precision": selection_precision(ws, cells, args.domain, earlier_precision),
            "per_type_f1": {r: s["per_type"] for r, s in summary.items()},
            "summary": derived["summary"],
            "cells": cells,
        }
        write_json(out, payload)
        return payload

    def print_knob_lines(payload: dict[str, Any]) -> None:
        """After the result is written: a default that cannot be read is said, never a reason to fail the run."""
        default = default_result_path(args)
        if default == out:
            return
        try:
            text = knob_lines(payload, read_result(default), default.name)
        except (UserError, ValueError, KeyError, TypeError) as exc:
            text = f"not compared with {default.name}: it could not be read ({type(exc).__name__}: {exc})"
        if text:
            print("\n" + text)

    started = time.time()
    try:
        protocol = {"name": PROTOCOL, "split_seed": SPLIT_SEED, "sizes": study.sizes()}
        stored = same_study(out, params, protocol, say=False)  # read only: --status may run beside the study
        if stored is None and args.out and out.exists() and not args.status:  # silently replaced, its cells were lost
            raise UserError(f"{out} holds another study's result (domain, protocol or recipe): give another --out")
        if not args.status and (ran := other_device((stored or {}).get("cells") or [], this_device())):
            raise UserError(f"{out} holds cells run on {ran}, and this machine runs on {this_device()}: its cells would "
                            "be paired with them; on a CPU give --cpu-precision fp32 or bf16 (a study file of its own), "
                            "or --out another file")
        restored = None if args.status else restore_cells(out, run_dir, params, protocol, rows, seeds, args.rerun_old_head,
                                                          args.cpu_precision)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    earlier_precision = (stored or {}).get("domain_precision") or {}
    if restored:
        print(f"restored {restored['cells']} finished cells from {out} (commit {restored['commit']}): they are not run again")
    if args.status:
        cells = with_stored(load_cells(run_dir), stored)  # finished here or stored in the JSON: both count
        missing, again = still_to_run(cells, rows, seeds, args.rerun_old_head, args.cpu_precision)
        left = len(missing) + len(again)
        if cells:
            payload = write(None, started, complete=not left, error=None if not left else
                            f"partial: written by --status while the study was unfinished ({left} row/seed cells to go"
                            + (f"; {len(again)} of them stored, standing until they run again)" if again else ")"))
            print(study_lines(payload))
            print_knob_lines(payload)
            print(f"{len(cells)} finished cell{'s' if len(cells) > 1 else ''}; wrote {out}")
        else:  # a variant not begun: an empty JSON would be a result that says nothing, counted as one by the tables
            print(f"no finished cell yet: {out.name} not written")
        if left:  # the JSON keeps the finished cells' counts: the same command continues, here or on a fresh machine
            todo = [f"{r} seed {s}" for r, s in missing] + [f"{r} seed {s} (again)" for r, s in again]
            print(f"{left} to go ({', '.join(todo)}); continue with: python "
                  + " ".join(as_typed(a) for a in sys.argv if a != "--status"))
            if eta := time_left(cells, missing + again, clock_of(default_result_path(args))):
                print(f"time left: {eta}")
        return 0
    if moved := set_aside_reruns(run_dir, rows, seeds, args.rerun_old_head, args.cpu_precision):
        print(f"{len(moved)} finished cells of this folder run again: moved to {moved[0].parent.parent}")
    try:
        with tqdm_progress(f"study {args.domain}") as bar:
            result = jobs.run_inline(ws, "experiment", params, run_dir=run_dir, progress=bar)
    except UserError as exc:  # a refused setting (another recipe in this run folder, a bad value): nothing ran,
        print(f"error: {exc}", file=sys.stderr)  # so the result JSON, perhaps another recipe's, stays as it is
        return 2
    except TimeLimitReached as exc:  # on purpose: the JSON gets the finished cells, marked partial
        write(None, started, error=f"partial: {exc}")
        print(f"{exc}\nfinished cells kept in {run_dir} and in {out}", file=sys.stderr)
        return TIME_LIMIT_EXIT
    except BaseException as exc:
        write(None, started, error=f"{type(exc).__name__}: {exc}")
        print(f"stopped ({type(exc).__name__}); finished cells kept in {run_dir}: rerun the same command to continue", file=sys.stderr)
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or a time box's SIGINT: the message above says all, no traceback
            return 130
        raise
    payload = write(result, started)
    print(format_results(result))
    if set(payload["rows"]) - set(rows):  # this run added rows to a study: its answer is the whole study's
        print(f"\nthe whole study in {out} ({len(payload['cells'])} cells, with the rows stored before this run):\n"
              + study_lines(payload))
    print_knob_lines(payload)
    print("\nper-type TEST F1 (%), mean over seeds:\n" + per_type_table(result).to_string())
    for row, dp in selection_precision(ws, result["cells"], args.domain).items():
        if "domain_precision" in dp:
            print(f"domain precision {row}: {dp['domain_precision']:.3f} (random {dp['random_domain_precision']:.3f})")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
