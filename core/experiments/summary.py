"""An experiment's rows with their uncertainty: F1 mean over seeds, a bootstrap interval over test sentences
(seeds and test sentences both resampled) and, against `tapt` and `none`, the paired difference with its interval and p-value
(core.experiments.statistics). Cells keep their per-sentence TEST predictions (`predictions`, and their span counts
inline as `test_counts`), so these are recomputed from the runs themselves, also from a result file whose run folder is
gone; a cell without either (older runs) gets no interval, never a fake one.

Entries follow the experiment JSON's `summary` list: one per row, and per SC budget and LC size in sweeps.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import UserError
from core.experiments.plan import BASELINES
from core.experiments.records import (
    Cell,
    ExperimentResult,
    PairTest,
    SummaryEntry,
    Verdict,
    as_cells,
    as_entries,
    as_result,
)
from core.experiments.statistics import (
    ALPHA,
    MIN_CLAIM_SEEDS,
    N_RESAMPLES,
    counts_from_predictions,
    decode_counts,
    encode_counts,
    holm,
    summary_entry,
)
from core.train.quality import NEAR_ZERO_F1

PREDICTIONS_FILE = "test_predictions.jsonl"
BASELINE_ROWS = ("tapt", "none")
# The same budget of DC sentences drawn at random: a selection strategy is compared with it too, since beating TAPT
# or no pretraining may come from "more DC text of any kind" rather than from choosing well.
CONTROL_ROW = "random"


def is_selection(row: str) -> bool:
    """A selection strategy's row: neither a baseline (none, TAPT, DAPT) nor the random control."""
    return row not in (*BASELINES, CONTROL_ROW)
NO_PREDICTIONS = "no per-sentence TEST predictions kept for these runs (made before they were): no interval; rerun them"


@lru_cache(maxsize=256)
def _counts(path: str, mtime_ns: int) -> np.ndarray:
    del mtime_ns  # part of the cache key: a rewritten file is read again
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return counts_from_predictions(rows, path)


def cell_counts(cell: Cell) -> np.ndarray | None:
    """(n, 3) span counts of a cell's TEST predictions (kept in the cell itself, else read from its predictions file),
    or None when the cell kept neither."""
    if cell.test_counts:
        return decode_counts(cell.test_counts, f"cell {cell.row} seed {cell.seed}: test_counts")
    path = cell.predictions
    if not path or not Path(path).is_file():
        return None
    return _counts(str(path), Path(path).stat().st_mtime_ns)


def keep_predictions(folder: Path, predictions: Sequence[Any], test: Any) -> dict[str, Any]:
    """Write a finished cell's TEST predictions to its folder and return the cell's fields for them: the file's path
    and its per-sentence counts inline (`test_counts`), so intervals and paired tests survive the run folder."""
    from core.train.ner_predict import write_predictions

    path = write_predictions(folder / PREDICTIONS_FILE, predictions, test)
    return {"predictions": str(path), "test_counts": encode_counts(_counts(str(path), path.stat().st_mtime_ns))}


def portable_cells(cells: Iterable[Cell | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Cells as a result file keeps them: each with its `test_counts` inline (read from its predictions file when a
    cell was finished before cells kept them), so the file still gives intervals once the run folder is gone."""
    out = []
    for cell in as_cells(cells):
        if not cell.test_counts and (counts := cell_counts(cell)) is not None:
            cell = dataclasses.replace(cell, test_counts=encode_counts(counts))
        out.append(cell.to_dict())
    return out


def _label(cell: Cell, split_budgets: set[str], lc_sizes: list[int]) -> str:
    label = f"{cell.row} · SC {cell.budget}" if cell.row in split_budgets else cell.row
    return label + (f" · LC {cell.lc_size}" if len(lc_sizes) > 1 else "")


def interval_summary(cells: Iterable[Cell | Mapping[str, Any]], baselines: Sequence[str] = BASELINE_ROWS, n_boot: int = N_RESAMPLES,
                     seed: int = 0, dev_in_mlm: bool = False) -> list[dict[str, Any]]:
    """One entry per row (per SC budget when a strategy ran several, per LC size when there were several), each
    compared with the `baselines` present and, for a selection strategy, with the random control (CONTROL_ROW) of its
    own SC budget; every comparison carries `p_holm`, Holm-adjusted over all comparisons of these cells (apply_holm).
    `dev_in_mlm`: the run allowed DEV text in its MLM corpora, marked on every pretraining row."""
    out = apply_holm(_entries(as_cells(cells), baselines, n_boot, seed))
    if dev_in_mlm:
        for e in out:
            if not e["row"].startswith("none"):
                e["dev_in_mlm"] = True
    return out


def report_summary(result: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """A study result's summary as the reports (README, study tables) read it, and how it was obtained: recomputed
    from the cells' kept TEST counts (so a rule changed since, such as Holm's family, holds for old files too), else
    the stored summary with Holm applied over its comparisons (a copy: the file is never changed). Rows are marked
    where the run kept DEV text in an MLM corpus (core.experiments.guard). A page reads `result_summary`, which keeps
    a stored Holm-ready summary: 10,000 resamples per view would be too slow there."""
    import copy

    from core.experiments.guard import GuardReport

    cells = result.get("cells") or []
    if cells and all(c.get("test_counts") for c in cells):
        dev = bool(GuardReport.from_protocol(result.get("protocol") or {}).dev_kept)
        return interval_summary(cells, dev_in_mlm=dev), "recomputed from the cells' TEST counts, 10,000 resamples"
    return apply_holm(copy.deepcopy(list(result.get("summary") or []))), \
        "stored summary (cells kept no TEST counts), 1,000 resamples"


def _lc_suffix(label: str) -> str:
    return label[label.index(" · LC "):] if " · LC " in label else ""


def apply_holm(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Holm over an experiment's comparisons, in place, one test per unordered pair of rows: "none vs tapt" is "tapt
    vs none" mirrored (the same paired draws, the same p), so it shows on both rows with one adjusted p but counts once
    (else each mirrored pair would make every other comparison harder to pass). An entry's `_against` (from _entries)
    names the row each of its tests ran against; a stored summary has none, and a baseline's label is its name plus
    the entry's LC size."""
    pairs: dict[frozenset[str], list[dict[str, Any]]] = {}
    for e in entries:
        against = e.pop("_against", None) or {}
        for base, t in (e.get("vs") or {}).items():
            partner = against.get(base) or base + _lc_suffix(e["row"])
            pairs.setdefault(frozenset((e["row"], partner)), []).append(t)
    for tests, adjusted in zip(pairs.values(), holm([ts[0]["p"] for ts in pairs.values()])):
        for t in tests:
            t["p_holm"], t["holm_family"] = adjusted, len(pairs)
    return entries


def _check_cells(label: str, cs: Sequence[Cell], read_f1: bool) -> None:
    """Refuse what would be pooled or averaged silently: a seed twice in one row (one of the two would vanish from the
    counts), an F1 that is no number where the row is read from its cells' F1 (no counts kept)."""
    seen: set[int] = set()
    for c in cs:
        if c.seed in seen:
            raise UserError(f"row {c.row} seed {c.seed} appears twice ({label}): two cells of one row and seed cannot "
                            "both count; keep one (merging result files refuses this too)")
        seen.add(c.seed)
        if read_f1 and not (isinstance(c.f1, (int, float)) and math.isfinite(c.f1)):
            raise UserError(f"row {c.row} seed {c.seed}: F1 is {c.f1!r}, not a number, and the cell kept no TEST counts "
                            "to recompute it from: rerun the cell or drop it")


def _entries(cells: Sequence[Cell], baselines: Sequence[str], n_boot: int, seed: int) -> list[dict[str, Any]]:
    lc_sizes = sorted({c.lc_size for c in cells if c.lc_size is not None})
    budgets: dict[str, set] = {}
    for c in cells:
        budgets.setdefault(c.row, set()).add(c.budget)
    split = {r for r, b in budgets.items() if len(b) > 1}
    out = []
    for size in lc_sizes or [None]:
        group = [c for c in cells if c.lc_size == size]
        by_label: dict[str, list[Cell]] = {}
        for c in group:
            by_label.setdefault(_label(c, split, lc_sizes), []).append(c)
        counts = {label: {c.seed: cell_counts(c) for c in cs} for label, cs in by_label.items()}
        complete = {label: runs for label, runs in counts.items() if all(v is not None for v in runs.values())}
        suffix = f" · LC {size}" if len(lc_sizes) > 1 else ""
        # the random control of each SC budget: a selection is held against the draw of its own budget only
        controls = {c.budget: _label(c, split, lc_sizes) for c in group if c.row == CONTROL_ROW}
        for label, cs in by_label.items():
            _check_cells(label, cs, label not in complete)
            against = {b: b + suffix for b in baselines if b + suffix != label}
            untested = {}
            if is_selection(cs[0].row) and controls:
                if cs[0].budget in controls:
                    against[CONTROL_ROW] = controls[cs[0].budget]
                else:
                    untested[CONTROL_ROW] = f"no {CONTROL_ROW} row at SC {cs[0].budget}"
            if label in complete:
                runs = {**complete, **{b: complete[n] for b, n in against.items() if n in complete}}
                entry = summary_entry(label, runs, baselines=[b for b, n in against.items() if n in complete],
                                      n_boot=n_boot, seed=seed)
            else:
                f1s = [c.f1 for c in cs]
                entry = {"row": label, "f1_mean": statistics.fmean(f1s), "f1_std": statistics.stdev(f1s) if len(f1s) > 1 else None,
                         "f1_ci": None, "seeds": len(f1s), "vs": {}, "note": NO_PREDICTIONS}
            entry.update(row=label, budget=cs[0].budget, lc_size=size, _against=against)
            for base, name in against.items():  # a baseline that ran but could not be paired: said, never dropped
                if name in by_label and base not in entry["vs"] and base not in untested:
                    untested[base] = ("this row's cells kept no TEST counts" if label not in complete else
                                      f"{name}'s cells kept no TEST counts" if name not in complete else
                                      f"no seed in common with {name}")
            if untested:
                entry["untested"] = untested
            out.append(entry)
    return out


def result_summary(result: ExperimentResult | Mapping[str, Any]) -> list[SummaryEntry]:
    """An experiment result's entries: the stored summary when it carries Holm-adjusted p (made by this code), else
    recomputed from its cells (a partial result, or one from before Holm)."""
    result = as_result(result)
    if result.summary and all(e.holm_ready for e in result.summary):
        return result.summary
    return as_entries(interval_summary(result.cells, dev_in_mlm=result.dev_in_mlm))


def interval_text(entry: SummaryEntry | Mapping[str, Any], scale: float = 100.0) -> str:
    """'61.00 ± 1.23 [59.10, 62.80]'; '61.00 [59.10, 62.80] (1 seed)'; without predictions no interval."""
    entry = SummaryEntry.of(entry)
    text = f"{entry.f1_mean * scale:.2f}"
    if entry.f1_std is not None:
        text += f" ± {entry.f1_std * scale:.2f}"
    if entry.f1_ci:
        lo, hi = entry.f1_ci
        text += f" [{lo * scale:.2f}, {hi * scale:.2f}]"
    if entry.seeds < 2:
        text += " (1 seed)"
    if entry.dev_in_mlm:
        text += " (DEV in MLM)"
    return text


def adjusted_p(t: PairTest | Mapping[str, Any]) -> float:
    """The p a verdict or a star reads: Holm-adjusted where the comparison has one, else the raw p (a single test)."""
    return PairTest.of(t).adjusted


def p_value(p: float) -> str:
    """A p as every table and sentence prints it: 3 decimals, but never one that lands on the 0.05 threshold from the
    other side (0.04996 printed "0.050" beside a star, and 0.0500 beside none): near it 4 decimals, a p below the
    threshold cut down, so what is printed is on the side the claim was read on.

    >>> p_value(0.01234), p_value(0.04996), p_value(0.0500), p_value(0.0512), p_value(1.0)
    ('0.012', '0.0499', '0.0500', '0.0512', '1.000')
    """
    if 0.045 <= p < 0.055:
        return f"{math.floor(p * 1e4) / 1e4:.4f}" if p < ALPHA else f"{p:.4f}"
    return f"{p:.3f}"


def p_text(t: PairTest | Mapping[str, Any]) -> str:
    """'p 0.012 (Holm 0.048)' with a star from the adjusted p only."""
    t = PairTest.of(t)
    holm_part = f" (Holm {p_value(t.p_holm)})" if t.p_holm is not None else ""
    return f"p {p_value(t.p)}{holm_part}{claim_mark(t)}"


def claim_mark(t: PairTest | Mapping[str, Any]) -> str:
    """What every table puts after a p: " *" for a claim; for a p below ALPHA on too few seeds (or seeds an older
    record did not count), why it is none (core.experiments.statistics.MIN_CLAIM_SEEDS); else nothing."""
    t = PairTest.of(t)
    if t.significant:
        return " *"
    if t.adjusted < ALPHA:
        seeds = f"{t.seeds} seed{'s' if t.seeds != 1 else ''}" if t.seeds else "seeds not recorded"
        return f" ({seeds}: a claim needs {MIN_CLAIM_SEEDS})"
    return ""


def comparison_rows(entries: Iterable[SummaryEntry | Mapping[str, Any]], scale: float = 100.0) -> list[dict[str, Any]]:
    """One table row per (row, baseline) pair: the difference, its interval, p, Holm-adjusted p and whether that is
    below 0.05."""
    rows = []
    for e in as_entries(entries):
        for base, t in e.vs.items():
            rows.append({"row": e.row, "vs": base, "delta": round(t.delta * scale, 2),
                         "95% CI": f"[{t.ci[0] * scale:.2f}, {t.ci[1] * scale:.2f}]", "p": float(p_value(t.p)),
                         "p (Holm)": float(p_value(t.adjusted)), f"significant (Holm p < 0.05, {MIN_CLAIM_SEEDS}+ seeds)": t.significant,
                         "seeds": t.seeds or None})
    return rows


def pretraining_verdicts(entries: Iterable[SummaryEntry | Mapping[str, Any]], scale: float = 100.0,
                         evidence: bool = True) -> list[dict[str, Any]]:
    """For every pretraining row (TAPT, DAPT, a selection): did it beat no pretraining, by how much and how
    sure. "harmed" / "helped" when the Holm-adjusted p is below 0.05 and the difference is below / above 0; else
    "did not help" (point estimate below none) or "no clear gain". A default recipe that can lower F1 must say so.
    Then, for every selection held against the random control, whether choosing beat drawing at random. A smoke-test
    preset's rows (`evidence` False) are said to be no evidence, whatever the figures."""
    entries = as_entries(entries)
    verdicts = _against_none(entries, scale) + _against_control(entries, scale)
    for v in verdicts:  # how a page shows it: st.warning / st.success / st.info
        if not evidence:
            v.update(bad=False, text=f"smoke test, not evidence: {v['text']}")
        v["tone"] = ("warning" if v["bad"] else "success" if v["verdict"] in ("helped", "beat") and evidence
                     else "info")  # a smoke test's "helped" is no success
    return verdicts


def _paired(entries: Sequence[SummaryEntry], base: str,
            scale: float) -> list[tuple[SummaryEntry, dict[str, Any], tuple[float, float, float]]]:
    """(entry, verdict record without its words, unrounded (difference, CI low, CI high)) for every row tested against
    `base`; the verdicts judge and print the unrounded figures."""
    out = []
    for e in entries:
        t = e.vs.get(base)
        if e.row == base or t is None:
            continue
        d, lo, hi = t.delta * scale, t.ci[0] * scale, t.ci[1] * scale
        out.append((e, {"row": e.row, "against": base, "delta": round(d, 2), "ci": [round(lo, 2), round(hi, 2)],
                        "p": t.p, "p_holm": t.adjusted, "seeds": t.seeds or e.seeds, "significant": t.significant},
                    (d, lo, hi)))
    return out


def _figures(v: dict[str, Any], d: float, lo: float, hi: float) -> str:
    few = v["p_holm"] < ALPHA and not v["significant"]  # below ALPHA, but over too few seeds to claim it
    return (f"{d:+.2f} test F1 points [{lo:+.2f}, {hi:+.2f}], p = {p_value(v['p'])}, Holm-adjusted {p_value(v['p_holm'])}, "
            f"{v['seeds']} seed{'s' if v['seeds'] != 1 else ''}" + (f" (a claim needs {MIN_CLAIM_SEEDS})" if few else ""))


def _significant(v: dict[str, Any]) -> bool:
    return v["significant"]


def _against_control(entries: Sequence[SummaryEntry], scale: float) -> list[dict[str, Any]]:
    """"beat" / "fell below" the random control when the Holm-adjusted p is below 0.05, else "no clear difference":
    then the selection's gain, if any, came from more DC text, not from what it chose. A selection whose SC budget
    had no random draw is said to be untested, not left out."""
    out = [{"row": e.row, "against": CONTROL_ROW, "verdict": "not tested", "bad": False,
            "text": f"{e.row} against the random control: not tested: {why}"}
           for e in entries if (why := (e.other.get("untested") or {}).get(CONTROL_ROW))]
    for e, v, (d, lo, hi) in _paired(entries, CONTROL_ROW, scale):
        verdict = ("beat" if d > 0 else "fell below") if _significant(v) else "no clear difference"
        words = "was not clearly better than" if verdict == "no clear difference" else verdict
        out.append({**v, "verdict": verdict, "bad": verdict == "fell below",
                    "text": f"{e.row}: the selection {words} the random control (the same number of DC sentences "
                            f"drawn at random): {_figures(v, d, lo, hi)}"})
    return out


def _against_none(entries: Sequence[SummaryEntry], scale: float) -> list[dict[str, Any]]:
    out = []
    for e, v, (d, lo, hi) in _paired(entries, "none", scale):
        verdict = ("helped" if d > 0 else "harmed") if _significant(v) else "did not help" if d < 0 else "no clear gain"
        label = e.row + (f" ({e.label})" if e.label and e.label != e.row else "")
        out.append({**v, "verdict": verdict, "bad": verdict in ("harmed", "did not help"),
                    "text": f"{label}: pretraining {verdict} against no pretraining: {_figures(v, d, lo, hi)}"})
    return out


def experiment_verdict(entries: Iterable[SummaryEntry | Mapping[str, Any]], preset: str | None,
                       cells: Iterable[Cell | Mapping[str, Any]] | None = None, knob: str = "") -> Verdict:
    """The experiment's answer in one object and one sentence, read from Holm-adjusted p only: does pretraining help
    against none, does a selection beat the random control. `evidence` is False for a smoke-test preset; `knob` is a
    recipe variant's label (plan.knob_label), whose advice points at its default recipe (user_advice)."""
    from core.recipes.presets import SMOKE_PRESETS

    entries = as_entries(entries)
    verdicts = pretraining_verdicts(entries)
    vs_none = [v for v in verdicts if v["against"] == "none"]
    vs_random = [v for v in verdicts if v["against"] == CONTROL_ROW and v["verdict"] != "not tested"]
    helped = [v["row"] for v in vs_none if v["verdict"] == "helped"]
    harmed = [v["row"] for v in vs_none if v["verdict"] == "harmed"]
    beat = [v["row"] for v in vs_random if v["verdict"] == "beat"]
    below = [v["row"] for v in vs_random if v["verdict"] == "fell below"]
    pretraining = ("mixed" if helped and harmed else "yes" if helped else "no, it harms" if harmed
                   else "cannot say" if vs_none else "not tested")
    selection = ("mixed" if beat and below else "yes" if beat else "no, below random" if below
                 else "cannot say" if vs_random else "not tested")
    family = max([t.holm_family for e in entries for t in e.vs.values()] or [0])
    text = (f"pretraining helps against none: {pretraining}"
            + (f" ({', '.join(helped or harmed)})" if helped or harmed else "")
            + f"; selection beats random: {selection}" + (f" ({', '.join(beat or below)})" if beat or below else "")
            + f" (Holm-adjusted p < {ALPHA} over {family} comparisons)")
    evidence = preset not in SMOKE_PRESETS
    if not evidence:
        text = f"smoke test (preset {preset}): not evidence, the figures only show that the setup runs; would read: {text}"
    advice = user_advice(entries, cells or [], family, knob)
    if not evidence:
        advice = {**advice, "text": f"smoke test, not evidence; would read: {advice['text']}"}
    return Verdict(text=text, evidence=evidence, preset=preset, pretraining_helps=pretraining,
                   selection_beats_random=selection, comparisons=family, advice=advice)


def near_zero_rows(entries: Sequence[SummaryEntry]) -> list[str]:
    """Rows whose seed-mean test F1 is below NEAR_ZERO_F1 (core.train.quality): models that learned (almost)
    nothing, whose differences are all near zero with tight intervals and would read as "no recipe helps"."""
    return list(dict.fromkeys(e.row for e in entries if math.isfinite(e.f1_mean) and e.f1_mean < NEAR_ZERO_F1))


MIN_GAIN = 0.01  # a gain over no pretraining below one F1 point does not pay for pretraining: "no recipe helps" below it


def user_advice(entries: Iterable[SummaryEntry | Mapping[str, Any]], cells: Iterable[Cell | Mapping[str, Any]],
                family: int = 1, knob: str = "") -> dict[str, Any]:
    """What the user should do, read from Holm-adjusted p and intervals, never from a point estimate alone: "helps"
    (the best row that beats none significantly, with its gain and interval, and whether a selection also beat the
    random draw), "no help" (every row ran MIN_CLAIM_SEEDS seeds and its gain over none is below MIN_GAIN on its
    interval at alpha / family, Bonferroni over the Holm family as each such claim is one of its tests, or is
    significantly negative: fine-tune without pretraining), else "cannot say" with the seeds it would take
    (core.experiments.statistics.seeds_to_settle) or why more seeds would not settle it. A knob variant (`knob`,
    issue 46) runs no none of its own: it is read against its default recipe, not told to add the row. Models that
    predict almost nothing (near_zero_rows) make every difference near 0 with a tight interval, which would read as
    "no help": a near-zero none makes the advice "cannot say", a near-zero other row is left out and named."""
    entries = as_entries(entries)
    weak = near_zero_rows(entries)
    if any(r.startswith("none") for r in weak):  # the baseline learned nothing: no comparison with it means anything
        return {"case": "cannot say", "rows": weak, "more_seeds": None,
                "text": f"cannot say: the NER models of {', '.join(weak)} predict almost nothing (test F1 below "
                        f"{NEAR_ZERO_F1 * 100:g} points), so no comparison with no pretraining means anything; fix the "
                        "fine-tune first (more epochs or a larger preset, a larger LC, or check LC's tag column with "
                        "python -m core stats)"}
    advice = _advice([e for e in entries if e.row not in weak], cells, family, knob)
    if weak:  # a row whose fine-tune failed is left out of the advice, and said
        advice = {**advice, "left_out": weak,
                  "text": f"{advice['text']} ({', '.join(weak)} left out: its NER models predict almost nothing, test "
                          f"F1 below {NEAR_ZERO_F1 * 100:g} points; its fine-tune failed)"}
    return advice


def _advice(entries: list[SummaryEntry], cells: Iterable[Cell | Mapping[str, Any]], family: int,
            knob: str) -> dict[str, Any]:
    from core.experiments.statistics import bonferroni_upper, seeds_to_settle

    tests = [(e, e.vs["none"]) for e in entries if "none" in e.vs and not e.row.startswith("none")]
    # rows that ran beside a none and could not be paired with it (no counts, no seed in common): no "no help" over them
    unpaired = [f"{e.row}: {(e.other.get('untested') or {})['none']}" for e in entries
                if not e.row.startswith("none") and "none" not in e.vs and "none" in (e.other.get("untested") or {})]
    if not tests and knob:
        return {"case": "not tested", "text": f"a knob variant ({knob}) borrows none from its default recipe: read its "
                                              "rows against that default (the Results page's recipe variants, python -m "
                                              "core compare-recipes, or scripts/crossner_study.py --status)"}
    if not tests and unpaired:
        return {"case": "cannot say", "more_seeds": None,
                "text": f"cannot say: no pretraining row could be compared with none ({'; '.join(unpaired)})"}
    if not tests and any(e.row.startswith("none") for e in entries):
        return {"case": "not tested", "text": "no pretraining row is left to compare with none"}
    if not tests:
        return {"case": "not tested", "text": "no pretraining row was compared with none: add the none row to the run"}
    helped = [(e, t) for e, t in tests if t.delta > 0 and t.significant]
    if helped:
        return _helps(*max(helped, key=lambda et: et[1].delta))
    m = max([family, *(t.holm_family for _, t in tests)])
    open_rows = [(e, t) for e, t in tests if t.too_few_seeds or not (
        (t.significant and t.delta < 0) or bonferroni_upper(t.delta, t.ci, m, seed_t=t.other.get("seed_t")) < MIN_GAIN)]
    if not open_rows and unpaired:  # the rows that were tested do not help; the others were never read
        return {"case": "cannot say", "more_seeds": None,
                "text": f"cannot say: no row tested against none helps, and {'; '.join(unpaired)} (not compared)"}
    if not open_rows:
        return {"case": "no help", "text": f"no recipe tried helps on this task (every gain over none is below "
                                           f"{MIN_GAIN * 100:g} F1 point with 95% confidence, Bonferroni over {m} "
                                           f"comparisons, on {MIN_CLAIM_SEEDS}+ seeds): fine-tune without pretraining"}
    e, t = max(open_rows, key=lambda et: et[1].delta)
    figures = f"best: {e.row} {t.delta * 100:+.2f} [{t.ci[0] * 100:+.2f}, {t.ci[1] * 100:+.2f}]"
    fewest = min(t2.seeds or e2.seeds for e2, t2 in open_rows)
    if fewest < MIN_CLAIM_SEEDS:  # no claim either way below it
        more = MIN_CLAIM_SEEDS - fewest
        return {"case": "cannot say", "row": e.row, "seeds": fewest, "more_seeds": more,
                "text": f"cannot say with {fewest} seed{'s' * (fewest != 1)} whether pretraining helps ({figures}): run "
                        f"{more} more (a claim either way needs {MIN_CLAIM_SEEDS})"}
    seeds = t.seeds or e.seeds
    runs = _paired_runs(as_cells(cells), e)
    settle = seeds_to_settle(*runs, family=m) if runs else None
    if settle and settle["needed"]:
        more = settle["needed"] - settle["seeds"]
        return {"case": "cannot say", "row": e.row, "seeds": seeds, "more_seeds": more,
                "text": f"cannot say with {seeds} seed{'s' * (seeds != 1)} whether pretraining helps ({figures}): run {more} more"}
    why = settle["reason"] if settle else "run more seeds"
    return {"case": "cannot say", "row": e.row, "seeds": seeds, "more_seeds": None,
            "text": f"cannot say with {seeds} seed{'s' * (seeds != 1)} whether pretraining helps ({figures}): {why}"}


def _helps(e: SummaryEntry, t: PairTest) -> dict[str, Any]:
    """The "helps" advice for the row `e`: which row, by how much over none, and for a selection whether choosing beat
    the random draw of the same size (Holm-adjusted, 3+ seeds); else the gain may be more DC text of any kind."""
    text = (f"{e.row} helps over no pretraining here: {t.delta * 100:+.2f} test F1 points [{t.ci[0] * 100:+.2f}, "
            f"{t.ci[1] * 100:+.2f}] over none (Holm-adjusted p {p_value(t.adjusted)})")
    beats = None
    if is_selection(e.row):
        control = e.vs.get(CONTROL_ROW)
        beats = bool(control and control.significant and control.delta > 0)
        if beats:
            text += (f"; the selection also beat a random draw of the same size ({control.delta * 100:+.2f} points, "
                     f"Holm-adjusted p {p_value(control.adjusted)})")
        else:
            why = (f"Holm-adjusted p {p_value(control.adjusted)}{claim_mark(control)}" if control else
                   (e.other.get("untested") or {}).get(CONTROL_ROW, f"no {CONTROL_ROW} row ran"))
            text += f"; not shown better than a random draw of the same size ({why}): the gain may come from more DC text"
    return {"case": "helps", "row": e.row, "delta": t.delta, "ci": t.ci, "beats_random": beats, "text": text}


def _paired_runs(cells: Sequence[Cell], entry: SummaryEntry) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """The entry's per-sentence counts and none's, on the seeds both ran at the entry's SC budget and LC size, in seed
    order; None when they share no seed or a cell kept no counts."""
    def mine(c: Cell, row: str) -> bool:
        return c.row == row and entry.lc_size in (None, c.lc_size)

    own = {c.seed: c for c in cells if mine(c, entry.row.split(" · ")[0]) and entry.budget in (None, c.budget)}
    none = {c.seed: c for c in cells if mine(c, "none")}
    seeds = sorted(set(own) & set(none))
    a, b = [cell_counts(own[s]) for s in seeds], [cell_counts(none[s]) for s in seeds]
    if not seeds or any(x is None for x in a + b) or len({len(x) for x in a + b}) != 1:
        return None
    return a, b


def _by_row(cells: Sequence[Cell], key: str) -> dict[str, list[dict[str, Any]]]:
    """The cells' `key` records (pick, drift) grouped by row, in the cells' order; cells without one left out."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        if record := getattr(c, key):
            rows.setdefault(c.row, []).append(record)
    return rows


def pick_lines(cells: Sequence[Cell]) -> list[str]:
    """One line per row that picked checkpoints: in how many seeds the base encoder was kept, and which steps won."""
    out = []
    for row, picks in _by_row(cells, "pick").items():
        kept = sum(not p["helped"] for p in picks)
        won = ", ".join(p["chosen"] for p in picks if p["helped"])
        out.append(f"{row}: checkpoint pick kept the base encoder in {kept} of {len(picks)} cells (no snapshot beat it on "
                   f"DEV F1)" + (f"; pretrained checkpoints used: {won}" if won else ""))
    return out


def dev_deltas(cells: Iterable[Cell | Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per pretraining row: each cell's converged DEV F1 minus `none`'s of the same seed and LC size."""
    cells = as_cells(cells)
    base = {(c.seed, c.lc_size): c.best_dev_f1 for c in cells if c.row == "none" and c.best_dev_f1 is not None}
    rows: dict[str, list[float]] = {}
    for c in cells:
        key = (c.seed, c.lc_size)
        if c.row != "none" and c.best_dev_f1 is not None and key in base:
            rows.setdefault(c.row, []).append(c.best_dev_f1 - base[key])
    return rows


def dev_lines(cells: Sequence[Cell], scale: float = 100.0) -> list[str]:
    """Per pretraining row: its converged DEV F1 against `none`'s of the same seed and LC size. Checkpoint pick
    guards DEV F1 after a short probe; this says whether the guard held after the full fine-tune, without TEST."""
    out = []
    for row, ds in dev_deltas(cells).items():
        below = sum(d < 0 for d in ds)
        out.append(f"{row}: DEV F1 after the full fine-tune {scale * statistics.fmean(ds):+.2f} points against none "
                   f"(mean of {len(ds)} cell{'s' if len(ds) != 1 else ''}, each against none of its seed; below none in {below})")
    return out


def diagnostic_lines(cells: Iterable[Cell | Mapping[str, Any]]) -> list[str]:
    """What the log, `experiment`, the Runs page and the Results page say under the verdicts: checkpoint pick,
    DEV F1 against none, encoder drift."""
    cells = as_cells(cells)
    return pick_lines(cells) + dev_lines(cells) + drift_lines(cells)


def drift_lines(cells: Sequence[Cell]) -> list[str]:
    """Per pretraining row: how far MLM moved the encoder on TC (mean over its cells), beside its F1 change."""
    return [f"{row}: encoder drift on TC after MLM, mean of {len(ds)} cell{'s' if len(ds) != 1 else ''}: sentence cosine "
            f"{statistics.fmean(d['cosine'] for d in ds):.3f}, CKA {statistics.fmean(d['cka'] for d in ds):.3f} (1 = unchanged)"
            for row, ds in _by_row(cells, "drift").items()]
