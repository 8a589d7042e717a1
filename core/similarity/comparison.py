"""A compare-sources result as one typed record (`compare.json`, a job's result): read and checked here, so pooling,
the Results page and `compare-pool` read fields. In similarity, below the experiments that write it, because pooling
(core.similarity.correlation) reads it.

>>> r = ComparisonResult.of({"target": "t", "baseline_f1": 0.5, "measures": ["tvc"], "seeds": [1],
...                          "sources": [{"name": "s", "f1_mean": 0.75, "tvc": 0.3}]}, "example")
>>> r.sources[0].values, r.sources[0].gain(r.baseline_f1)
({'tvc': 0.3}, (0.25, None, None))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.data.atomic import split_fields
from core.errors import UserError


@dataclass
class SourceResult:
    """One source of a comparison: its NER F1 over seeds after MLM on it, the paired test against no pretraining
    (`vs`, as an experiment's summary keeps it) and its similarity to the target per measure (`values`)."""

    name: str
    f1_mean: float
    hash: str | None = None
    f1_ci: list[float] | None = None
    f1_std: float | None = None
    seeds: int = 0
    vs: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    mlm_seconds: float = 0.0
    values: dict[str, float | None] = field(default_factory=dict)  # measure -> value (source vs target)
    other: dict[str, Any] = field(default_factory=dict)

    def gain(self, baseline_f1: float) -> tuple[float, list[float] | None, float | None]:
        """(F1 gain over no pretraining, its paired 95% CI, p): the paired test when kept, else the plain difference."""
        test = self.vs["none"] if "none" in self.vs else {}
        return (test["delta"] if "delta" in test else self.f1_mean - baseline_f1,
                test["ci"] if "ci" in test else None, test["p"] if "p" in test else None)


@dataclass
class ComparisonResult:
    target: str
    baseline_f1: float
    sources: list[SourceResult]
    measures: list[str]
    target_hash: str | None = None
    seeds: list[int] = field(default_factory=list)
    preset: str | None = None
    model: str | None = None
    run_dir: str | None = None
    other: dict[str, Any] = field(default_factory=dict)  # baseline runs and CI, LC/DEV/TEST, correlation, matrix, ...

    @classmethod
    def of(cls, data: ComparisonResult | Any, where: str) -> ComparisonResult:
        """The record, or a UserError naming `where` when `data` lacks what pooling reads (target, a numeric baseline
        F1, lists of measures and of sources, each with a name and an F1)."""
        if isinstance(data, ComparisonResult):
            return data
        missing = [k for k in ("target", "baseline_f1", "sources", "measures") if not isinstance(data, Mapping) or k not in data]
        if missing:
            raise UserError(f"{where}: not a compare-sources result (no {', '.join(missing)})")
        if not isinstance(data["baseline_f1"], (int, float)) or not isinstance(data["measures"], list) \
                or not isinstance(data["sources"], list):
            raise UserError(f"{where}: expected a number as baseline_f1 and lists as measures and sources")
        measures = [str(m) for m in data["measures"]]
        sources = []
        for i, s in enumerate(data["sources"]):
            if not isinstance(s, Mapping) or "name" not in s or not isinstance(s.get("f1_mean"), (int, float)):
                raise UserError(f"{where}: source {i + 1} has no name or F1 (expected name and f1_mean)")
            sources.append(_source(s, measures))
        known, other = split_fields(cls, data, own=("other", "sources", "measures"), drop_none=True)
        return cls(**known, sources=sources, measures=measures, other=other)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("other", "sources")}
        sources = [{**{f.name: getattr(s, f.name) for f in dataclasses.fields(s) if f.name not in ("other", "values")},
                    **s.values, **s.other} for s in self.sources]
        return {**self.other, **out, "sources": sources}

    @property
    def recipe(self) -> tuple[Any, ...]:
        """What two comparisons must share to be pooled: preset, encoder and seeds."""
        return self.preset, self.model, tuple(self.seeds)

    @property
    def label(self) -> str:
        """How a page names it: target, sources, seeds, preset and its run folder."""
        folder = Path(self.run_dir).name if self.run_dir else "?"
        return f"{self.target} · {len(self.sources)} sources · {len(self.seeds)} seeds · preset {self.preset} · {folder}"


def _source(data: Mapping[str, Any], measures: list[str]) -> SourceResult:
    known, other = split_fields(SourceResult, data, own=("other", "values", *measures), drop_none=True)
    return SourceResult(**known, values={m: data[m] if m in data else None for m in measures}, other=other)
