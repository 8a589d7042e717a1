"""The selection strategies' knobs, declared once: what the Selection page, the CLI's `--option KEY=VALUE` and an
experiment may set, each with the default its strategy uses when nothing is set.

They were a free dict read with `.get(name, default)` in each strategy, so a typo (`--option bucket=100`) ran the
default silently. Now a name no strategy reads, a value of the wrong type or out of range is refused at submit
(core.runner.params checks SelectParams.options here), naming the option and what was expected.

The saved meta keeps the options as given; the selection key hashes them as one computation is named
(`canonical_options`: a default spelt out is the same selection as nothing set), and `select` still finds a
selection saved under its options as given, from before keys were named.

>>> SelectionOptions.parse({"sampling": "topk", "buckets": 500}).buckets
500
>>> SelectionOptions.parse({"bucket": 500})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.errors.UserError: unknown selection option(s) 'bucket'; known: sampling, buckets, length, smoothing, k, ..., dedupe
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import UserError
from core.recipes.configs import type_hints
from core.recipes.strategy_info import strategy_name

SAMPLINGS = ("gumbel", "topk")
LENGTHS = ("sum", "chunk")  # dsir's weighing of sentences of different lengths (core.lm.dsir.dsir_scores)
SMOOTHINGS = ("add-one", "dc")  # dsir's estimate of TC's n-gram distribution (core.lm.dsir.log_ratios)
# Sentences per forward pass when batch_size is unset: mlm-ppl masks every token of a sentence in turn, so its passes
# are short rows of one sentence's maskings and take more of them; the NER models run 32.
BATCH_SIZES = {"mlm-ppl": 64}
DEFAULT_BATCH = 32


@dataclass(frozen=True)
class SelectionOptions:
    sampling: str = "gumbel"  # dsir: "gumbel" draws by importance weight without replacement (the DSIR paper's), "topk"
    buckets: int = 10_000  # dsir: hashed n-gram buckets of the two bag-of-n-gram models
    length: str = "sum"  # dsir: "sum" over a sentence's n-grams (the paper's formula; favours short sentences), "chunk"
    # weighs each sentence as a chunk of DC's mean length (core.lm.dsir.dsir_scores)
    smoothing: str = "add-one"  # dsir: TC's bucket counts + 1 each ("add-one"), or + DC's distribution with as much
    # mass ("dc"), which a small TC does not drown (core.lm.dsir.log_ratios)
    k: int | None = None  # knn: neighbours kept per TC sentence; None: 2 * ceil(budget / |TC|) + 1
    order: int = 3  # ppl: n-gram order of TC's language model
    normalize_tc: bool = False  # cosine: average TC's unit vectors instead of its raw embeddings (the paper's)
    batch_size: int | None = None  # ner, mlm-ppl, entity-gain: sentences per forward pass; None: batch_for's default
    mix: float = 0.5  # entity-gain: the entity gain's share of the score, the rest is cosine to TC
    type_weights: dict[str, float] | None = None  # entity-gain: entity type shares (an experiment passes LC's);
    # None: B2's own predictions on TC
    pool: float = 3.0  # entity-gain-pool: the pool × budget DC sentences nearest TC are the only ones ranked by gain
    dedupe: bool = False  # every strategy: a sentence whose normalised text repeats one ranked before it is passed
    # over and the budget filled from the next ranked (core.selection.repeats); off, repeats are only counted in a note

    def __post_init__(self) -> None:
        hints = type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not _fits(value, hints[f.name]):
                raise UserError(f"selection option {f.name!r} must be {_expected(hints[f.name])}, got {value!r}")
        if self.sampling not in SAMPLINGS:
            raise UserError(f"selection option 'sampling' must be one of {', '.join(SAMPLINGS)}, got {self.sampling!r}")
        if self.length not in LENGTHS:
            raise UserError(f"selection option 'length' must be one of {', '.join(LENGTHS)}, got {self.length!r}")
        if self.smoothing not in SMOOTHINGS:
            raise UserError(f"selection option 'smoothing' must be one of {', '.join(SMOOTHINGS)}, got {self.smoothing!r}")
        for name in ("buckets", "k", "order", "batch_size"):
            if (value := getattr(self, name)) is not None and value < 1:
                raise UserError(f"selection option {name!r} must be at least 1, got {value}")
        for name, share in (self.type_weights or {}).items():
            if not isinstance(share, (int, float)) or isinstance(share, bool) or share < 0:
                raise UserError(f"selection option 'type_weights' maps entity types to their shares, numbers of 0 or "
                                f"more ({{\"PER\": 0.5, \"LOC\": 0.5}}); got {share!r} for {name!r}")
        if self.pool < 1.0:
            raise UserError(f"selection option 'pool' is the domain pool's size in budgets (the pool x budget DC sentences "
                            f"nearest TC compete), at least 1; got {self.pool}")
        if not 0.0 <= self.mix <= 1.0:
            raise UserError(f"selection option 'mix' is the entity gain's share of the score, between 0 and 1; "
                            f"got {self.mix}")

    def batch_for(self, strategy: str) -> int:
        """Sentences per forward pass for `strategy`: the one set, else the strategy's default (BATCH_SIZES)."""
        return self.batch_size or BATCH_SIZES.get(strategy, DEFAULT_BATCH)

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> SelectionOptions:
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in options or {} if k not in names]
        if unknown:
            raise UserError(f"unknown selection option(s) {', '.join(map(repr, unknown))}; known: {', '.join(names)}")
        return cls(**dict(options or {}))


# Which strategies read each option (None: every one, in `select`); an option given to a strategy that does not read it
# is refused (`check_readers`), so `--option k=5` on dsir is not silently ignored.
READERS: dict[str, tuple[str, ...] | None] = {
    "sampling": ("dsir",), "buckets": ("dsir",), "length": ("dsir",), "smoothing": ("dsir",), "k": ("knn",),
    "order": ("ppl",), "normalize_tc": ("cosine",), "batch_size": ("ner", "mlm-ppl", "entity-gain", "entity-gain-pool"),
    "mix": ("entity-gain",), "type_weights": ("entity-gain", "entity-gain-pool"), "pool": ("entity-gain-pool",),
    "dedupe": None,
}


def check_readers(strategy: str, options: Mapping[str, Any] | None) -> None:
    """UserError for an unknown strategy, or an option `strategy` does not read, naming the strategies that do.

    >>> check_readers("dsir", {"length": "chunk", "dedupe": True})
    >>> check_readers("cosine", {"length": "chunk"})
    Traceback (most recent call last):
    core.errors.UserError: selection option 'length' is not read by cosine (only by dsir)
    >>> check_readers("dsri", {"length": "chunk"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: unknown strategy 'dsri': expected one of ...
    """
    strategy = strategy_name(strategy)
    for name in options or {}:
        readers = READERS.get(name)
        if readers is not None and strategy not in readers:
            raise UserError(f"selection option {name!r} is not read by {strategy} (only by {', '.join(readers)})")


def shares_of(weights: Mapping[str, float]) -> dict[str, float]:
    """Entity-type weights as shares summing to 1: {"PER": 3, "LOC": 1} and {"PER": 0.75, "LOC": 0.25} are one
    setting (entity gain weighs a type by its share; counts given as they are scaled every type at once, against the
    fixed weight of a type they leave out).

    >>> shares_of({"PER": 3, "LOC": 1})
    {'PER': 0.75, 'LOC': 0.25}
    """
    total = float(sum(weights.values()))
    if weights and total <= 0:
        raise UserError("selection option 'type_weights': every share is 0; give at least one type a share above 0")
    return {k: float(v) / total for k, v in weights.items()}


def canonical_options(options: Mapping[str, Any] | None, strategy: str | None = None) -> dict[str, Any]:
    """Options as one computation names them: in the fields' order, a whole number given for a number field as a float
    (type_weights' shares too), and an option set to its default left out, so `mix=1` and `mix=1.0`, or `length=sum`
    and nothing, are one row. With `strategy`, a batch_size equal to its default (BATCH_SIZES) is left out as well.

    >>> canonical_options({"sampling": "topk", "length": "chunk", "mix": 1, "buckets": 10_000})
    {'sampling': 'topk', 'length': 'chunk', 'mix': 1.0}
    >>> canonical_options({"batch_size": 32, "type_weights": {"PER": 3, "LOC": 1}}, "entity-gain")
    {'type_weights': {'PER': 0.75, 'LOC': 0.25}}
    >>> canonical_options({"batch_size": 64}, "mlm-ppl"), canonical_options({"batch_size": 64}, "ner")
    ({}, {'batch_size': 64})
    """
    parsed, default = SelectionOptions.parse(options), SelectionOptions()
    hints = type_hints(SelectionOptions)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(SelectionOptions):
        if f.name not in (options or {}):
            continue
        value = getattr(parsed, f.name)
        if f.name == "type_weights":  # null asks for B2's own shares where an experiment would pass LC's: never left out
            out[f.name] = None if value is None else shares_of(value)
        elif f.name == "batch_size" and strategy is not None and value == default.batch_for(strategy):
            continue
        elif value != getattr(default, f.name):
            out[f.name] = float(value) if float in typing.get_args(hints[f.name]) + (hints[f.name],) and \
                not isinstance(value, bool) else value
    return out


def _fits(value: Any, tp: Any) -> bool:
    if value is None:
        return type(None) in typing.get_args(tp)
    base = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
    base = typing.get_origin(base) or base
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, base)


def _expected(tp: Any) -> str:
    base = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
    base = typing.get_origin(base) or base
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "an object"}[base] \
        + (" or null" if type(None) in typing.get_args(tp) else "")
