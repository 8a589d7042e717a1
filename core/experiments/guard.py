"""DEV and TEST text kept out of every MLM corpus of an experiment, checked before anything trains.

DEV drives NER early stopping and the checkpoint pick: an encoder pretrained on DEV sentences scores higher on
DEV without being better, so the pick prefers it and the DEV curve flatters it (CrossNER's first protocol put DEV
half A into TC; TAPT's DEV gain then exceeded its TEST gain by a point). TEST text in pretraining leaks the answer.

- DEV text in TC (an MLM corpus the user chose) is refused, with counts and an example, unless the run says
  `allow_dev_in_mlm` (recorded in the run folder and beside every row it feeds).
- TEST text in TC is dropped from TC before anything reads it (how many is listed in the result).
- DC is a pool the MLM corpora are drawn from (SC, DAPT's DC, rehearsal): its sentences that duplicate TEST, and
  DEV unless allowed, are dropped from it before selection, so no MLM corpus can receive them.
Duplicates are exact or near (core.selection.leakage: normalised text, verified word-2-gram Jaccard).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.data.corpus import Corpus
from core.errors import UserError
from core.selection.leakage import LeakageReport

GUARD_FILE = "mlm_guard.json"  # in the run folder: what was dropped, what was allowed


@dataclass
class GuardReport:
    """What the guard did; `protocol` goes into the result JSON as is."""

    allow_dev_in_mlm: bool
    dev_in_tc: int  # TC sentences duplicating DEV (0 unless allowed: otherwise refused)
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)  # corpus -> {"dev": n, "test": n}
    dev_in_dc: int = 0  # DC sentences duplicating DEV kept for selection and DAPT (allowed, not excluded)

    @property
    def dev_kept(self) -> int:
        """DEV duplicates any MLM corpus of the run may hold: its rows' DEV figures are optimistic when above 0."""
        return self.dev_in_tc + self.dev_in_dc

    @property
    def protocol(self) -> dict[str, Any]:
        return {"dev_in_mlm": self.dev_in_tc, "dev_in_dc": self.dev_in_dc, "allow_dev_in_mlm": self.allow_dev_in_mlm,
                "dropped_from_mlm": self.dropped}

    @classmethod
    def from_protocol(cls, data: Mapping[str, Any]) -> GuardReport:
        """A result JSON's `protocol` read back (core.experiments.records.ExperimentResult)."""
        stored = {"allow_dev_in_mlm": False, "dev_in_mlm": 0, "dev_in_dc": 0, "dropped_from_mlm": {}, **data}
        return cls(bool(stored["allow_dev_in_mlm"]), int(stored["dev_in_mlm"] or 0), dict(stored["dropped_from_mlm"] or {}),
                   int(stored["dev_in_dc"] or 0))


def _example(report: LeakageReport, against: str) -> str:
    found = report.example(against)
    return f" (e.g. {found['text'][:80]!r}, {found['similarity']:.2f} similar)" if found else ""


def guard_mlm_corpora(tc: Corpus, dc: Corpus, leakage: dict[str, LeakageReport], allow_dev_in_mlm: bool,
                      pretrains: bool, tc_name: str = "TC", drop_dev_from_dc: bool = False) -> tuple[Corpus, Corpus, GuardReport]:
    """(TC, DC, report) with evaluation text removed as the module says; UserError for DEV text in TC when any row
    pretrains and the run does not allow it. `leakage`: core.selection.leakage reports of TC and DC against
    {"dev", "test"}, with `indices_per_against`. `drop_dev_from_dc` (a run's exclude_leaked) drops DC's DEV
    duplicates even where DEV text is allowed."""
    tc, dev_in_tc, tc_test = guard_chosen_corpus(tc, leakage["tc"], allow_dev_in_mlm, pretrains, tc_name)
    report = GuardReport(allow_dev_in_mlm=allow_dev_in_mlm, dev_in_tc=dev_in_tc)
    if tc_test:
        report.dropped["tc"] = {"dev": 0, "test": tc_test}
    dc_leak = leakage["dc"]
    keep_dev = allow_dev_in_mlm and not drop_dev_from_dc
    dc_drop = dc_leak.rows("test") | (set() if keep_dev else dc_leak.rows("dev"))
    if dc_drop:
        dc = _without(dc, dc_drop)
        report.dropped["dc"] = {"dev": 0 if keep_dev else len(dc_leak.rows("dev")), "test": len(dc_leak.rows("test"))}
    if keep_dev and pretrains:  # kept for selection and DAPT: every row that pretrains on DC may hold DEV text
        report.dev_in_dc = len(dc_leak.rows("dev") - dc_leak.rows("test"))
    return tc, dc, report


def guard_chosen_corpus(corpus: Corpus, leak: LeakageReport, allow_dev_in_mlm: bool, pretrains: bool,
                        name: str) -> tuple[Corpus, int, int]:
    """An MLM corpus the user chose (TC, a compare-sources source): (it without its TEST duplicates, its DEV duplicates
    kept, TEST duplicates dropped); UserError for DEV text when it pretrains and the run does not allow it."""
    dev_rows = set(leak.rows("dev")) - set(leak.rows("test"))  # a TEST duplicate too is dropped with those: no DEV in MLM
    if dev_rows and pretrains and not allow_dev_in_mlm:
        per = leak.per_against["dev"]
        raise UserError(f"DEV text in the MLM corpus {name}: {per['exact']} exact and {per['near']} near duplicates of "
                        f"DEV sentences{_example(leak, 'dev')}. DEV drives early stopping and the checkpoint pick, so "
                        "pretraining on it flatters DEV F1 and the pick. Use a TC without DEV text (e.g. TC = train), or "
                        "allow it explicitly (--allow-dev-in-mlm; recorded with the results)")
    test_rows = leak.rows("test")
    return (_without(corpus, test_rows) if test_rows else corpus), (len(dev_rows) if pretrains else 0), len(test_rows)


def _without(corpus: Corpus, rows: set[int]) -> Corpus:
    kept = corpus.subset([i for i in range(len(corpus)) if i not in rows])
    kept.name = corpus.name
    return kept


def guard_text(report: GuardReport) -> list[str]:
    """What the log and the CLI say about the guard."""
    lines = []
    if report.allow_dev_in_mlm and report.dev_in_tc:
        lines.append(f"warning: DEV text in TC allowed ({report.dev_in_tc} sentences): DEV F1 and the checkpoint pick are "
                     "optimistic for every pretraining row; TEST F1 is the figure to read")
    if report.allow_dev_in_mlm and report.dev_in_dc:
        lines.append(f"warning: DEV text in DC kept ({report.dev_in_dc} sentences; exclude_leaked drops them): a selection "
                     "or DAPT row may pretrain on DEV text, so its DEV F1 and checkpoint pick are optimistic")
    for name, counts in report.dropped.items():
        what = " and ".join(f"{n} duplicating {k.upper()}" for k, n in counts.items() if n)
        if what:
            lines.append(f"{name.upper()}: {what} dropped before any MLM")
    return lines
