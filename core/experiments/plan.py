"""What an experiment runs, before anything runs: rows, seeds, SC budgets and LC sizes parsed and resolved, and
the folder key of each cell; shared by the experiment job, compare-sources, the CLI and the Runs page.

>>> resolve_sc_budget(None, 8, 100), resolve_sc_budget(0.1, 8, 100), resolve_sc_budget(500, 8, 100)
(8, 10, 100)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.recipes.budget import Budget
from core.recipes.configs import parse_settings
from core.recipes.strategy_row import BASELINES, StrategyRow, row_labels
from core.runner.params import check_seeds

CELL_FILE = "cell.json"
PICK_FILE = "pick.json"  # a cell's checkpoint choice (base encoder or an MLM snapshot) with every probe score


def row_names(text: str) -> list[str]:
    """Comma-separated rows as results name them: baselines as they are, strategies as `check_rows` names them, so a
    study asked for 'DSIR:length=chunk' finds the cells its experiment stored as 'dsir:length=chunk'.

    >>> row_names(" none, TAPT ,DSIR:length=chunk,dsir:length=chunk:length=chunk")  # each row once
    ['none', 'tapt', 'dsir:length=chunk']
    """
    return row_labels(text.split(","), keep=BASELINES)


def check_rows(specs: Sequence[str]) -> list[str]:
    """Selection rows as results name them, each an existing strategy with options it may take (UserError naming the
    row otherwise): what an experiment checks when it starts and the Runs page before it submits one. An '@b1' that
    changes nothing is dropped (core.recipes.strategy_row.StrategyRow).

    >>> check_rows(["DSIR:length=chunk", "cosine@b1", "dsir@b1", "cosine@base"])
    ['dsir:length=chunk', 'cosine@b1', 'dsir', 'cosine']
    >>> check_rows(["dsri"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: unknown strategy 'dsri': expected one of ...
    """
    return row_labels(specs)


def parse_strategy(spec: str) -> tuple[str, str | None]:
    """'cosine@b1' -> ('cosine', 'b1'); 'dsir:length=chunk' -> ('dsir', None): StrategyRow without its options."""
    row = StrategyRow.parse(spec)
    return row.name, row.model_tag


def parse_seeds(text: str, what: str) -> list[int]:
    """'1,2,3' -> [1, 2, 3]. Shared by `experiment --seeds`, `compare-sources --seeds` and the Runs page;
    anything but non-negative integers (numpy refuses negative seeds) is a UserError naming `what`."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not all(t.isdigit() for t in items):
        raise UserError(f"{what}: expected comma-separated integers, got {text!r}")
    if not items:
        raise UserError(f"{what}: give at least one seed")
    seeds = [int(t) for t in items]
    check_seeds(seeds, what)
    return seeds


def experiment_request(seeds: str, budgets: str | None, lc_sizes: str | None, mlm: str | Sequence[str] | None,
                       strategies: str | Sequence[str], baselines: str | Sequence[str], *, names: Mapping[str, str],
                       **settings: Any) -> dict[str, Any]:
    """The experiment job's params from what a user typed (the Runs page's fields, `experiment`'s options; one
    function, so the two never build two recipes for one request): each text parsed by its one rule, an error naming
    the field as the caller shows it (`names`: "seeds", "budgets", "lc_sizes", "mlm" -> label); `settings` go as given
    (the job's params check them at submit).

    >>> experiment_request("1,2", "500, 0.1", None, "lr=5e-5", "dsir", "none,tapt", names={})["budgets"]
    [500, 0.1]
    """
    def label(field: str) -> str:
        return names.get(field, field)

    def items(value: str | Sequence[str]) -> list[str]:
        return [t.strip() for t in (value.split(",") if isinstance(value, str) else value) if str(t).strip()]

    return {"seeds": parse_seeds(seeds, label("seeds")),
            "budgets": [b.value for b in Budget.parse_list(budgets, label("budgets"))] or None if budgets else None,
            "lc_sizes": [b.value for b in Budget.parse_list(lc_sizes, label("lc_sizes"))] or None if lc_sizes else None,
            "mlm_config": parse_settings(mlm or [], label("mlm")) or None,
            "strategies": check_rows(items(strategies)), "baselines": items(baselines), **settings}


def resolve_sc_budget(budget: Budget | int | float | str | None, tc_size: int, dc_size: int) -> int:
    """SC sentences a strategy selects: `budget` as a selection reads it (count or ratio of DC, capped at |DC|);
    None means |TC|, so TC:SC is 1:1."""
    return Budget.parse(tc_size if budget is None else budget).count(dc_size, cap=True)


def sweep_budgets(budget: Any, budgets: Sequence[Any] | None) -> list[Any]:
    """The SC budgets to run: `budgets` (a sweep), else the single `budget` (None: |TC|); that not both are given
    was checked when the params were made (core.runner.params.ExperimentParams)."""
    return list(budgets) if budgets else [budget]


def cell_key(row: str, budget: int | None, lc_size: int | None) -> str:
    """Folder name of a cell (or of an MLM model): row, SC budget in sentences, LC size."""
    return slug(row) + (f".b{budget}" if budget is not None else "") + (f".lc{lc_size}" if lc_size is not None else "")


def slug(row: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in row)


RECIPE_FILE = "recipe.json"
# What every cell of a run folder must share. Rows, seeds, SC budgets and LC sizes may grow between runs of the same
# folder (new cells); a different encoder, preset, MLM/NER setting, checkpoint pick or rehearsal would mix two recipes
# in one table.
RECIPE_FIELDS = ("model", "preset", "mlm_config", "ner_config", "pick_checkpoint", "rehearsal_share", "exclude_leaked",
                 "allow_dev_in_mlm")
# What a cell without pretraining (`none`) depends on: two recipes that agree here share their `none` cells.
NONE_RECIPE_FIELDS = ("model", "preset", "ner_config")


def recipe_of(params: Any, fields: tuple[str, ...] = RECIPE_FIELDS) -> dict[str, Any]:
    """The recipe of an experiment's params (ExperimentParams, or the params dict a result JSON or recipe.json keeps):
    how a cell runs (device, grad_accum raised after an out-of-memory retry, ...) is not part of it."""
    from core.recipes.presets import model_settings

    def get(f: str) -> Any:
        return params.get(f) if isinstance(params, dict) else getattr(params, f, None)

    recipe = {f: get(f) for f in fields}
    for f in ("mlm_config", "ner_config"):
        if f in recipe:
            recipe[f] = model_settings(recipe[f] or {}) or None
    if "model" in recipe:
        recipe["model"] = recipe["model"] or "default"
    if "exclude_leaked" in recipe:  # changes nothing without allow_dev_in_mlm: older records kept it on alone
        recipe["exclude_leaked"] = bool(recipe["exclude_leaked"] and get("allow_dev_in_mlm"))
    return recipe


def model_tag(model: str | None) -> str:
    """An encoder's short name for run folders and table labels: "" for the default; a Hub id or folder by its last
    part, plus a hash of the whole when it is a path, since every model this product trains is a folder named
    `.../mlm/model` and two of them must not share a name."""
    import hashlib

    if not model or model == "default":
        return ""
    name = slug(Path(model).name or model)
    return name + (f"-{hashlib.sha1(model.encode()).hexdigest()[:6]}" if "/" in model or "\\" in model else "")


def recipe_label(params: Any) -> str:
    """A recipe (recipe_of) as one readable label that names every setting that is on, e.g. "study + max_steps=1200 +
    pick4": two recipes get two labels, so a table keyed by label never pools them."""
    r = recipe_of(params)
    parts = [tag] if (tag := model_tag(r["model"])) else []
    parts.append(str(r["preset"] or "?"))
    parts += [f"{k}={v}" for k, v in sorted((r["mlm_config"] or {}).items())]
    parts += [f"ner.{k}={v}" for k, v in sorted((r["ner_config"] or {}).items())]
    if r["rehearsal_share"]:
        parts.append(f"rehearsal={r['rehearsal_share']:g}")
    if r["exclude_leaked"]:
        parts.append("exclude-leaked")
    if r.get("allow_dev_in_mlm"):
        parts.append("DEV-in-MLM")
    if r["pick_checkpoint"]:
        parts.append(f"pick{r['pick_checkpoint']}")
    return " + ".join(parts)


def knob_label(params: Any) -> str:
    """What a recipe variant changes over its default (issue 46's knobs: MLM settings, rehearsal share) as one label,
    "" for a default recipe: "l2sp=0.01", "lr=5e-05 + rehearsal=0.25". A table keeps a variant's cells apart by it."""
    r = recipe_of(params, ("mlm_config", "rehearsal_share"))
    parts = [f"{k}={v}" for k, v in sorted((r["mlm_config"] or {}).items())]
    return " + ".join(parts + ([f"rehearsal={r['rehearsal_share']:g}"] if r["rehearsal_share"] else []))


def recipe_differences(there: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Each setting two recipes (recipe_of) both name and set differently, as "field: X there, Y now". An off setting
    (no pick, no rehearsal, no overrides) equals its absence, so a file from before a field compares equal. The one
    place two recipes are compared: the run folder's check, merging study results, borrowing `none` cells."""
    return [f"{f}: {there[f]!r} there, {now[f]!r} now" for f in there
            if f in now and (there[f] or None) != (now[f] or None)]
