"""What a finished job returned, as one typed record read the same way by Runs, the CLI, lineage and the scheduler.

A job function returns a dict (it goes to result.json and the jobs table as JSON). The fields that more than one
place reads are declared here once, with the kinds that fill them; everything else a kind returns (a selection's
counts, an experiment's table) stays in `extra` and is written back as it came.

>>> r = JobResult.from_dict({"out_dir": "/m", "steps": 40, "test": {"f1": 0.61, "precision": 0.6}, "probe": 1})
>>> r.test_f1, r.extra, JobResult.from_dict(r.to_dict()) == r
(0.61, {'probe': 1}, True)
>>> JobResult.from_dict(None).test_f1 is None
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.data.atomic import split_fields


@dataclass
class JobResult:
    out_dir: str | None = None  # mlm, ner, pick-checkpoint, selftrain: the model folder it wrote or chose
    steps: int | None = None  # mlm, ner: optimizer steps taken
    epochs_run: int | None = None  # ner
    best_dev_f1: float | None = None  # ner, pick-checkpoint: DEV F1 of the kept model
    best_epoch: int | None = None  # ner
    test: dict[str, Any] | None = None  # ner: seqeval scores on TEST (f1, precision, recall, per type)
    warning: str | None = None  # a quality gate's message: a near-0 F1, a masked LM that learned nothing
    fresh_head: bool = False  # mlm: the encoder had no trained MLM head, so one was initialised
    phases: list[dict[str, Any]] = field(default_factory=list)  # mlm: each recipe phase's folder and steps
    summary: list[dict[str, Any]] = field(default_factory=list)  # experiment: per-row means and tests
    cells: list[dict[str, Any]] = field(default_factory=list)  # experiment: one NER run each
    generated: int | None = None  # augment: sentences written
    key: str | None = None  # select: the saved selection's key
    selftrain_f1: float | None = None  # selftrain: TEST F1 of the self-trained model
    device: str | None = None  # ner: where it trained ("cpu", "cuda:0")
    precision: str | None = None  # ner: the autocast dtype (bf16 where the CPU or card has it, else fp32)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> JobResult:
        known, extra = split_fields(cls, data or {}, own=("extra",), drop_none=True)
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**{k: v for k, v in out.items() if v not in (None, [], False)}, **self.extra}

    @property
    def test_f1(self) -> float | None:
        return None if not self.test else self.test.get("f1")

    def said(self) -> str:
        """The figures a finished job is read by, for its last progress message and its page (the jobs table said
        only "done", the F1 of a NER run was in its log alone).

        >>> JobResult(best_dev_f1=0.6123, best_epoch=9, test={"f1": 0.587}).said()
        'best dev F1 0.612 (epoch 9), test F1 0.587'
        >>> JobResult(extra={"selected": 600, "dc_size": 6000}).said(), JobResult(steps=400).said()
        ('selected 600 of 6,000', '400 steps')
        """
        parts = []
        if self.best_dev_f1 is not None and self.best_dev_f1 >= 0:
            parts.append(f"best dev F1 {self.best_dev_f1:.3f}" + (f" (epoch {self.best_epoch})" if self.best_epoch else ""))
        if self.test_f1 is not None:
            parts.append(f"test F1 {self.test_f1:.3f}")
        if self.selftrain_f1 is not None:
            parts.append(f"self-trained test F1 {self.selftrain_f1:.3f}")
        if self.steps and not parts:
            parts.append(f"{self.steps:,} steps")
        if self.generated is not None:
            parts.append(f"{self.generated:,} sentences generated")
        x = self.extra
        if isinstance(x.get("selected"), int) and isinstance(x.get("dc_size"), int):
            parts.append(f"selected {x['selected']:,} of {x['dc_size']:,}")
        if isinstance(x.get("sentences"), int) and isinstance(x.get("tokens"), int):
            named = f"{x['name']!r}: " if isinstance(x.get("name"), str) else ""  # import: which corpus it made
            parts.append(f"{named}{x['sentences']:,} sentences, {x['tokens']:,} tokens")
        return ", ".join(parts)
