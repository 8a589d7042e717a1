"""One SC budget value, parsed once where input enters (CLI, page, job params) with one rule set.

A budget is a count of sentences (an integer >= 1; 500.0 reads as 500) or a ratio of a total
(0 < r <= 1; write 1.0 for "all"). What differs between callers is only what happens when a count
is more than there is: a selection takes all of DC and says so (`cap=True`), a sweep point refuses
(a point that silently became "all" would repeat another point).

>>> Budget.parse("500"), Budget.parse(0.1), Budget.parse("1.0")
(Budget(500), Budget(0.1), Budget(1.0))
>>> Budget.parse(0.1).count(300), Budget.parse(500).count(300, cap=True)
(30, 300)
>>> Budget.parse_list("500, 0.1", "--budgets")
[Budget(500), Budget(0.1)]
>>> Budget.parse("0")
Traceback (most recent call last):
core.errors.UserError: budget: '0' must be a count >= 1 or a ratio in (0, 1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import UserError


@dataclass(frozen=True)
class Budget:
    """A count (int) or a ratio of a total (float in (0, 1])."""

    value: int | float

    def __repr__(self) -> str:
        return f"Budget({self.value!r})"

    def __str__(self) -> str:
        return str(self.value)

    @property
    def is_ratio(self) -> bool:
        return isinstance(self.value, float)

    @classmethod
    def parse(cls, raw: Any, what: str = "budget") -> Budget:
        """A Budget from a number or its text; anything else is a UserError naming `what` and the value."""
        if isinstance(raw, Budget):
            return raw
        value: Any = raw
        if isinstance(raw, str):
            text = raw.strip()
            try:
                value = int(text) if text.lstrip("+").isdigit() else float(text)
            except ValueError:
                raise UserError(f"{what}: {text!r} is not a number; give a count (e.g. 500) "
                                "or a ratio (e.g. 0.1)") from None
        elif isinstance(raw, np.integer):
            value = int(raw)
        elif isinstance(raw, np.floating):
            value = float(raw)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise UserError(f"{what}: {raw!r} must be a count >= 1 or a ratio in (0, 1]")
        if isinstance(value, float) and value > 1:
            if value != int(value):
                raise UserError(f"{what}: {value} is neither a count (integer >= 1) nor a ratio (0 < r <= 1)")
            value = int(value)
        return cls(value)

    @classmethod
    def of_kind(cls, value: Any, ratio: bool, what: str = "budget") -> Budget:
        """A budget typed in a field that says what it is (the Selection page's "ratio of DC" or "count"): 2 typed as a
        ratio is refused, not read as two sentences (a bare number's rule, `parse`), and 0.5 as a count likewise."""
        budget = cls.parse(value, what)
        if ratio and not budget.is_ratio:
            raise UserError(f"{what}: a ratio of DC is above 0 and at most 1, got {value!r}; for a number of sentences "
                            "choose 'count'")
        if not ratio and budget.is_ratio:
            raise UserError(f"{what}: a count is a whole number of sentences, got {value!r}; for a share of DC choose "
                            "'ratio of DC'")
        return budget

    @classmethod
    def parse_list(cls, text: str | Sequence[Any] | None, what: str) -> list[Budget]:
        """'500,0.1' (or a list) -> budgets; empty items are skipped."""
        items = [t.strip() for t in text.split(",")] if isinstance(text, str) else list(text or [])
        return [cls.parse(item, what) for item in items if item not in ("", None)]

    def count(self, total: int, *, cap: bool = False, what: str = "budget") -> int:
        """The sentences this budget stands for out of `total`: at least 1; more than `total` is all of it
        with `cap`, else a UserError."""
        # half up, not Python's half to even (0.5 of 5 sentences is 3, 0.25 of 10 is 3): the rule a reader expects
        # (rounded to 9 places first: 0.145 x 100 is 14.4999... in floating point, and half up makes it 15)
        n = max(1, math.floor(round(self.value * total, 9) + 0.5)) if self.is_ratio else int(self.value)
        if n > total:
            if cap:
                return total
            raise UserError(f"{what}: {self.value} is more than the {total:,} sentences there are")
        return n

    def note(self, total: int) -> list[str]:
        """What a capped count should tell its user."""
        n = self.count(total, cap=True)
        if not self.is_ratio and int(self.value) > n:
            return [f"budget {int(self.value):,} exceeds the DC size {total:,}: selecting all of DC"]
        if self.is_ratio and self.value * total < 0.5:
            return [f"budget {self.value:g} of {total:,} sentences rounds to none: selecting 1 sentence"]
        return []

    def to_json(self) -> int | float:
        return self.value
