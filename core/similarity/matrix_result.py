"""The "similarity" job's answer as one typed record: the Similarity page, the F1 correlation and compare-sources
read its fields, the job stores `to_dict()` (fields this record does not name stay in `extra`).

>>> m = SimilarityMatrix(sources=["dc"], targets=["tc"], measures=["tvc"], values={"tvc": [[0.4]]})
>>> m.value("tvc", "dc", "tc"), SimilarityMatrix.from_dict(m.to_dict()) == m
(0.4, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.data.atomic import split_fields


@dataclass
class SimilarityMatrix:
    sources: list[str]
    targets: list[str]
    measures: list[str]  # the pairwise measures computed
    values: dict[str, list[list[float | None]]]  # measure (and ppl_sum, <m>_std) -> [source][target]
    params: dict[str, Any] = field(default_factory=dict)  # the SimilarityParams that made it
    cached: int = 0  # values read from the workspace cache
    computed: int = 0  # values computed now
    hashes: dict[str, str] = field(default_factory=dict)  # corpus -> content hash
    tokens: dict[str, int] = field(default_factory=dict)  # corpus -> tokens
    ttr: dict[str, float] | None = None  # corpus -> type-token ratio, when asked for
    tvcc_method: str | None = None  # how TVcC found content words, when asked for
    histogram: dict[str, Any] | None = None  # DC's per-sentence PPL under a TC model (core.similarity.matrix.ppl_histogram)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimilarityMatrix:
        known, extra = split_fields(cls, data, own=("extra",), drop_none=True)
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**{k: v for k, v in out.items() if v is not None}, **self.extra}

    def value(self, measure: str, source: str, target: str) -> float | None:
        return self.values[measure][self.sources.index(source)][self.targets.index(target)]

    @property
    def subsample(self) -> tuple[int, int] | None:
        """(tokens per sub-corpus, how many) when the sources were sub-sampled to one size, else None."""
        tokens = self.params["subsample_tokens"] if "subsample_tokens" in self.params else None
        return (int(tokens), int(self.params["subsample_k"])) if tokens else None
