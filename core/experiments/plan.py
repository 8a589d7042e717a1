"""What an experiment runs, before anything runs: rows, seeds, SC budgets and LC sizes parsed and resolved, and
the folder key of each cell; shared by the experiment job, compare-sources, the CLI and the Runs page.

>>> resolve_sc_budget(None, 8, 100), resolve_sc_budget(0.1, 8, 100), resolve_sc_budget(500, 8, 100)
(8, 10, 100)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.recipes.budget import Budget

BASELINES = ("none", "tapt", "dapt", "tapt+dapt")
CELL_FILE = "cell.json"
PICK_FILE = "pick.json"  # a cell's checkpoint choice (base encoder or an MLM snapshot) with every probe score




@dataclass(frozen=True)
class StrategyRow:
    """A selection row of an experiment as a user names it: the strategy, which encoder it reads ('@b1': the TAPT
    model; '@base'), and options as the Selection page and `select --option` take them, each after a ':'
    ('dsir:length=chunk'), since commas already separate rows. Without this a study could not run a strategy with
    anything but its defaults, so DSIR's length=chunk was never trained on.

    >>> StrategyRow.parse("dsir:length=chunk:sampling=topk")
    StrategyRow(name='dsir', model_tag=None, options={'length': 'chunk', 'sampling': 'topk'})
    >>> StrategyRow.parse(" Cosine@B1 : normalize_tc=true ").label
    'cosine@b1:normalize_tc=true'
    >>> StrategyRow.parse("entity_gain:mix=0.7").label
    'entity-gain:mix=0.7'
    >>> StrategyRow.parse("dsir:lenght=chunk")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: strategy 'dsir:lenght=chunk': unknown selection option(s) 'lenght'; known: sampling, ...
    """

    name: str
    model_tag: str | None
    options: dict[str, Any]

    @classmethod
    def parse(cls, spec: str) -> StrategyRow:
        from core.recipes.configs import parse_settings
        from core.recipes.selection_options import SelectionOptions
        from core.selection.strategies import Strategy

        parts = re.split(r"([:@])", spec.strip())
        name, model, items = parts[0].strip().lower(), None, []
        for mark, text in zip(parts[1::2], parts[2::2]):
            if mark == "@":
                if model is not None:
                    raise UserError(f"strategy {spec!r}: one @ at most (@b1 or @base)")
                model = text.strip().lower()
            else:
                items.append(text)
        if model is not None and model not in ("b1", "base"):
            raise UserError(f"strategy {spec!r}: the part after @ must be b1 or base")
        if not name:
            raise UserError(f"strategy {spec!r}: expected a strategy name first (e.g. dsir:length=chunk)")
        name = Strategy.parse(name).value
        options = parse_settings(items, f"strategy {spec!r}")
        try:
            SelectionOptions.parse(options)
        except UserError as exc:
            raise UserError(f"strategy {spec!r}: {exc}") from None
        return cls(name, model, options)

    @property
    def label(self) -> str:
        """The row's name in results: name, @model, then the options in the order given (values as JSON writes them)."""
        shown = (v if isinstance(v, str) else json.dumps(v) for v in self.options.values())
        return self.name + (f"@{self.model_tag}" if self.model_tag else "") + "".join(
            f":{k}={v}" for k, v in zip(self.options, shown))


def row_names(text: str) -> list[str]:
    """Comma-separated rows as results name them: baselines as they are, strategies by StrategyRow's label, so a
    study asked for 'DSIR:length=chunk' finds the cells its experiment stored as 'dsir:length=chunk'.

    >>> row_names(" none, tapt ,DSIR:length=chunk,")
    ['none', 'tapt', 'dsir:length=chunk']
    """
    names = [r.strip() for r in text.split(",") if r.strip()]
    return [r if r.lower() in BASELINES else StrategyRow.parse(r).label for r in names]


def parse_strategy(spec: str) -> tuple[str, str | None]:
    """'cosine@b1' -> ('cosine', 'b1'); 'dsir:length=chunk' -> ('dsir', None): StrategyRow without its options."""
    row = StrategyRow.parse(spec)
    return row.name, row.model_tag


def strategy_models(name: str, model_tag: str | None) -> tuple[bool, bool]:
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
