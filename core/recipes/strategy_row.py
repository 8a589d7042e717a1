"""An experiment's selection row as a user names it (`dsir:length=chunk`, `cosine@b1`), parsed and named once: the
experiment job, the study script, the CLI and the Runs page all read rows through here. A recipe-stage module, so
the job's params check a row at submit: its strategy exists (core.recipes.strategy_info.Strategy) and reads
each option given, and an '@b1' that changes nothing (a strategy that reads no encoder, or always B1; which one reads
what: core.recipes.strategy_info) is dropped, so 'dsir@b1' does not pretrain and fine-tune the cells of 'dsir' a second
time under another name."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.errors import UserError
from core.recipes.configs import parse_settings
from core.recipes.selection_options import canonical_options, check_readers
from core.recipes.strategy_info import strategy_models, strategy_name


@dataclass(frozen=True)
class StrategyRow:
    """A selection row of an experiment as a user names it: the strategy, which encoder it reads ('@b1': the TAPT
    model; '@base'), and options as the Selection page and `select --option` take them, each after a ':'
    ('dsir:length=chunk'), since commas already separate rows. Without this a study could not run a strategy with
    anything but its defaults, so DSIR's length=chunk was never trained on.

    >>> StrategyRow.parse("dsir:length=chunk:sampling=topk")
    StrategyRow(name='dsir', model_tag=None, options={'sampling': 'topk', 'length': 'chunk'})
    >>> StrategyRow.parse(" Cosine@B1 : normalize_tc=true ").label
    'cosine@b1:normalize_tc=true'
    >>> StrategyRow.parse("entity_gain:mix=0.7").label
    'entity-gain:mix=0.7'
    >>> StrategyRow.parse("cosine@base").label  # the base encoder is a row's own
    'cosine'
    >>> StrategyRow.parse("dsir@b1").label, StrategyRow.parse("cosine-concat@b1").label  # no encoder read; always B1
    ('dsir', 'cosine-concat')
    >>> StrategyRow.parse("dsir:length=chunk:sampling=topk:buckets=10000").label  # fields' order, defaults left out
    'dsir:sampling=topk:length=chunk'
    >>> StrategyRow.parse("cosine:length=chunk")
    Traceback (most recent call last):
    core.errors.UserError: strategy 'cosine:length=chunk': selection option 'length' is not read by cosine (only by dsir)
    >>> StrategyRow.parse("dsir:lenght=chunk")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: strategy 'dsir:lenght=chunk': unknown selection option(s) 'lenght'; known: sampling, ...
    """

    name: str
    model_tag: str | None
    options: dict[str, Any]

    @classmethod
    def parse(cls, spec: str) -> StrategyRow:
        parts = re.split(r"([:@])", spec.strip())
        if not parts[0].strip():
            raise UserError(f"strategy {spec!r}: expected a strategy name first (e.g. dsir:length=chunk)")
        name, model, items = strategy_name(parts[0]), None, []
        for mark, text in zip(parts[1::2], parts[2::2]):
            if mark == "@":
                if model is not None:
                    raise UserError(f"strategy {spec!r}: one @ at most (@b1 or @base)")
                model = text.strip().lower()
            else:
                items.append(text)
        if model is not None and model not in ("b1", "base"):
            raise UserError(f"strategy {spec!r}: the part after @ must be b1 or base")
        if model == "base" or (model == "b1" and strategy_models(name, "b1") == strategy_models(name, None)):
            model = None  # the base encoder is what a row without @ reads; an @b1 that changes nothing: one name each
        try:
            options = canonical_options(parse_settings(items, "options"), name)
            check_readers(name, options)
        except UserError as exc:
            raise UserError(f"strategy {spec!r}: {exc}") from None
        return cls(name, model, options)

    @property
    def label(self) -> str:
        """The row's name in results: name, @model, then the options that differ from their defaults in the fields'
        order (core.recipes.selection_options.canonical_options; values as JSON writes them), so one computation has
        one name whatever order or spelling it was asked in."""
        shown = (v if isinstance(v, str) else json.dumps(v) for v in self.options.values())
        return self.name + (f"@{self.model_tag}" if self.model_tag else "") + "".join(
            f":{k}={v}" for k, v in zip(self.options, shown))


# The rows an experiment runs without a selection: no pretraining, MLM on TC, on DC, on both (the seed paper's)
BASELINES = ("none", "tapt", "dapt", "tapt+dapt")


def row_labels(specs: Iterable[str], keep: Iterable[str] = ()) -> list[str]:
    """Each row once, as results name it ('dsir' picked and 'DSIR' typed are one row, not two); names in `keep` (the
    baselines, which take no options) are only lower-cased. Blank entries are skipped. The one place rows are
    deduplicated: the experiment's params, the study script and the Runs page all come here.

    >>> row_labels([" none", "TAPT", "DSIR:length=chunk", "dsir:length=chunk:length=chunk", ""], keep=("none", "tapt"))
    ['none', 'tapt', 'dsir:length=chunk']
    """
    kept = set(keep)
    names = (str(s).strip() for s in specs)
    return list(dict.fromkeys(n.lower() if n.lower() in kept else StrategyRow.parse(n).label for n in names if n))
