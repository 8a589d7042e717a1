"""What a finished experiment says, line by line, in the order a reader needs it: TEST leaks, the verdict and what to
do, each pretraining row's verdict, the diagnostics. One list for the Results page, the Runs page and `experiment`,
so a smoke-test preset's rows are "not evidence" everywhere (the Runs page drew them as evidence on its own), and an
older result without a stored verdict gets one computed alike in the app and at the CLI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.experiments.plan import knob_label
from core.experiments.records import ExperimentResult, SummaryEntry, as_result, ran_alike
from core.experiments.summary import diagnostic_lines, experiment_verdict, pretraining_verdicts


@dataclass(frozen=True)
class Said:
    """One line of the readout: `tone` is how a page draws it (st.success / st.info / st.warning / st.caption)."""

    tone: str
    text: str
    strong: str = ""  # a label the page sets in bold before the text ("Verdict"); the CLI writes it lower-case


def readout(result: ExperimentResult | Mapping[str, Any],
            entries: Sequence[SummaryEntry | Mapping[str, Any]] | None = None) -> list[Said]:
    """The readout of `result`; `entries`: its summary as the caller recomputed it (the Results page's, with Holm
    over the cells' TEST counts), else the stored one."""
    result = as_result(result)
    entries = result.summary if entries is None else entries
    out = [Said("warning", f"{name.upper()} of this experiment holds {test['exact']} exact and {test['near']} near "
                           "duplicates of TEST sentences" + (" (dropped before MLM)." if result.protocol else
                                                             ": this run predates the MLM guard and its MLM saw "
                                                             "evaluation text; rerun it."))
           for name, test in result.test_leaks()]
    # read now, from the same entries as the per-row lines below: a verdict stored by older code (before a claim needed
    # 3 seeds) said "helps" beside a row line saying "no clear gain"; the stored one only where no entry is left
    preset = result.preset or (result.verdict.preset if result.verdict else None)  # older files kept it there only
    fresh = experiment_verdict(entries, preset, result.cells, knob_label(result.recipe or {}))
    verdict = fresh if entries or not result.verdict else result.verdict
    out.append(Said("info" if verdict.evidence else "warning", verdict.text, "Verdict"))
    advice = verdict.advice or fresh.advice
    if advice:
        tone = {"helps": "success", "no help": "info"}.get(advice["case"], "warning") if verdict.evidence else "warning"
        out.append(Said(tone, advice["text"], "What to do"))
    if result.dev_in_mlm:
        out.append(Said("warning", "This run allowed DEV text in its MLM corpus (--allow-dev-in-mlm): DEV F1 and the "
                                   "checkpoint pick are optimistic for its pretraining rows, marked '(DEV in MLM)'."))
    if len(ways := ran_alike(result.cells)) > 1:  # a folder extended on another device or CPU precision
        out.append(Said("warning", f"Cells of this experiment ran as {' and '.join(ways)}: a device and its precision move "
                                   "F1 about as much as the recipes compared, so comparisons across them measure the "
                                   "machine too; rerun the odd cells where the others ran."))
    out += [Said(v["tone"], v["text"]) for v in pretraining_verdicts(entries, evidence=verdict.evidence)]
    out += [Said("caption", line) for line in diagnostic_lines(result.cells)]
    if result.skipped:
        out.append(Said("warning", "skipped: " + "; ".join(result.skipped)))
    return out


def readout_lines(result: ExperimentResult | Mapping[str, Any]) -> list[str]:
    """The readout as the CLI prints it: 'verdict: ...', 'what to do: ...', the rest as they are."""
    return [f"{s.strong.lower()}: {s.text}" if s.strong else s.text for s in readout(result)]
