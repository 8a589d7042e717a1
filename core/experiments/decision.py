"""Issue 46's decision rule, written before the knob ablation ran (README, "Reading an experiment, changing the
default"): a knob's setting becomes the default only if, against the current default recipe under the same protocol,
its TAPT or a selection row is better with a Holm-adjusted p < 0.05 on at least 3 of the 5 CrossNER domains and
significantly worse on no domain.

A knob variant is a result whose recipe differs from the default's only in the MLM settings or the rehearsal share
(core.experiments.plan.recipe_of); `none` is left out of the comparisons, since it does not pretrain. The rule reads
the rows it names only (rule_row: TAPT and the selection rows; not DAPT, whose DC is not chosen, nor the random
control, which tests the selection): each of these that both ran is tested variant minus default on the seeds both
ran and the same TEST sentences (the paired two-level bootstrap of core.experiments.statistics), and Holm's
correction runs over every comparison of the ablation at once.
A variant is paired only with a default whose cells ran alike (records.ran_alike: device and precision); one without
such a default is listed as unpaired, not tested against another machine's numbers.
A knob that ran on fewer domains than the rule needs is "open" until the rest run, unless it can no longer qualify.
A domain whose run stopped part-way (a result not finished, or a comparison with fewer seeds than a claim needs) is
still to come, not a domain where the knob failed: it counts as left unless it is already decided there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.experiments.plan import BASELINES, knob_label, recipe_of
from core.experiments.records import Cell, as_cells, head_drawn_apart, ran_alike
from core.experiments.statistics import ALPHA, MIN_CLAIM_SEEDS, N_RESAMPLES, holm, paired_test
from core.experiments.study import DOMAINS
from core.experiments.summary import cell_counts, is_selection
from core.recipes.strategy_info import ENTITY_AWARE

KNOB_FIELDS = ("mlm_config", "rehearsal_share")  # what a knob variant changes; the rest of its recipe is the default's
NEEDED_DOMAINS = 3  # better on at least this many of the five domains ...
QUALIFIES, STAYS_OUT, OPEN = "becomes the default", "stays out", "open"


@dataclass(frozen=True)
class RunOfRecipe:
    """One study result as the rule reads it: its domain, its experiment params (the recipe) and its cells."""

    domain: str
    params: Mapping[str, Any]
    cells: list[Cell]
    finished: bool = True  # False: the study stopped part-way (its JSON's "finished"), more cells are to come
    within: Any = None  # what a variant pairs within beside its base recipe; None: its domain (CrossNER's studies)

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> RunOfRecipe:
        return cls(str(result["domain"]), result["params"], as_cells(result["cells"]), bool(result.get("finished", True)))

    @property
    def knob(self) -> str:
        """'' for the default recipe, else its knob settings ("l2sp=0.01", "rehearsal=0.25")."""
        return knob_label(self.params)

    @property
    def base(self) -> tuple[tuple[str, str], ...]:
        """The recipe with its knobs at the default: results that share it are compared with each other. An off
        setting equals its absence (as plan.recipe_differences reads it): a record from before a field still pairs."""
        r = recipe_of(self.params)
        return tuple(sorted((k, repr(v or None)) for k, v in r.items() if k not in KNOB_FIELDS))

    @property
    def group(self) -> tuple[Any, ...]:
        """A variant and a default are compared when their groups are equal (and their cells ran alike)."""
        return self.base, self.domain if self.within is None else self.within

    @property
    def ran(self) -> tuple[str, ...]:
        return ran_alike(self.cells)


@dataclass
class KnobTest:
    knob: str
    domain: str
    row: str
    seeds: list[int]
    delta: float  # variant minus default, F1 (0-1)
    ci: list[float]
    p: float
    p_holm: float | None = 1.0  # None: fewer seeds than a claim needs, so outside the Holm family
    heads_apart: int = 0  # paired seeds whose two NER heads were drawn differently (records.head_drawn_apart)

    def claims(self, alpha: float = ALPHA) -> bool:
        """Better or worse for the rule: Holm-adjusted p below alpha over at least MIN_CLAIM_SEEDS paired seeds."""
        return self.p_holm is not None and self.p_holm < alpha and len(self.seeds) >= MIN_CLAIM_SEEDS


@dataclass
class KnobOutcome:
    knob: str
    domains: list[str]  # where it ran beside the default
    better: list[str]  # a pretraining row better with Holm-adjusted p < ALPHA
    worse: list[str]  # a pretraining row worse with Holm-adjusted p < ALPHA
    outcome: str  # QUALIFIES, STAYS_OUT or OPEN
    reason: str
    partial: list[str] = field(default_factory=list)  # ran part-way: more cells to come (counted as left)


@dataclass
class Decision:
    tests: list[KnobTest] = field(default_factory=list)
    knobs: list[KnobOutcome] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)  # a variant whose default ran elsewhere (device, precision)

    @property
    def new_default(self) -> list[str]:
        return [k.knob for k in self.knobs if k.outcome == QUALIFIES]

    def sentence(self) -> str:
        """The outcome in one line, for README and the table."""
        if not self.knobs:
            return "no knob variant has run beside the default recipe yet: the default stays as it is"
        if winners := self.new_default:
            return f"{', '.join(winners)} qualifies under the rule: rerun the five-domain study with it as the default"
        still = [k.knob for k in self.knobs if k.outcome == OPEN]
        return ("no setting qualifies so far; " + (f"open until more domains run: {', '.join(still)}" if still
                                                   else "the default stays as it is"))


def _runs(cells: Sequence[Cell], row: str, seeds: Sequence[int]) -> list[Any] | None:
    by_seed = {c.seed: c for c in cells if c.row == row}
    runs = [cell_counts(by_seed[s]) for s in seeds]
    return None if any(r is None for r in runs) else runs


def _paired(label: str, domain: str, row: str, mine: Sequence[Cell], theirs: Sequence[Cell], rival: str, n_boot: int,
            seed: int = 0) -> KnobTest | None:
    """`row` of `mine` minus `rival` of `theirs` on the seeds both ran and the same TEST sentences; None when they share
    no seed or a cell kept no predictions."""
    seeds = sorted({c.seed for c in mine if c.row == row} & {c.seed for c in theirs if c.row == rival})
    a, b = _runs(mine, row, seeds), _runs(theirs, rival, seeds)
    if not seeds or a is None or b is None:
        return None
    t = paired_test(a, b, n_boot=n_boot, seed=seed)
    # A pair shares its NER head's draw when both sides drew it the same way (issue 46's A/A control): otherwise the
    # difference carries the head's luck too, unbiased but wider.
    drawn = [{c.seed: head_drawn_apart(c) for c in cells if c.row == r} for cells, r in ((mine, row), (theirs, rival))]
    apart = sum(drawn[0][s] != drawn[1][s] for s in seeds)
    return KnobTest(label, domain, row, seeds, t["delta"], t["ci"], t["p"], heads_apart=apart)


def _with_holm(tests: list[KnobTest | None]) -> list[KnobTest]:
    """The comparisons that ran, each with its Holm-adjusted p over those that could count (MIN_CLAIM_SEEDS paired
    seeds or more); a partial one (a variant with one seed so far) is shown without a Holm p and does not enlarge the
    family, which would make every finished comparison harder to pass."""
    ran = [t for t in tests if t is not None]
    family = [t for t in ran if len(t.seeds) >= MIN_CLAIM_SEEDS]
    for t in ran:
        t.p_holm = None
    for t, adjusted in zip(family, holm([t.p for t in family])):
        t.p_holm = adjusted
    return ran


def unpaired_variants(results: Iterable[RunOfRecipe]) -> list[str]:
    """Variants with a default of their group (RunOfRecipe.group: base recipe and domain) that ran on another device or
    precision: said, not compared."""
    results = list(results)
    ran: dict[Any, list[tuple[str, ...]]] = {}  # a domain may hold a GPU and a CPU default side by side
    for r in results:
        if not r.knob:
            ran.setdefault(r.group, []).append(r.ran)
    return [f"{r.knob} on {r.domain}: ran on {ways_text(r.ran)}, its default on "
            f"{' or '.join(ways_text(w) for w in ran[r.group])}" for r in results
            if r.knob and r.group in ran and r.ran not in ran[r.group]]


def ways_text(ran: tuple[str, ...] | list[str]) -> str:
    """How a run's cells ran, in words: "cpu (fp32)", "cpu (fp32) and cuda (bf16)", "an unrecorded device"."""
    return " and ".join(ran) or "an unrecorded device"


def rule_row(row: str) -> bool:
    """A row the decision rule reads: "its TAPT or a selection row" (README), so not DAPT nor the random control."""
    return row == "tapt" or is_selection(row)


def knob_tests(results: Iterable[RunOfRecipe], n_boot: int = N_RESAMPLES, seed: int = 0,
               failed: list[str] | None = None, rows: Callable[[str], bool] | None = None) -> list[KnobTest]:
    """Every (knob, domain, pretraining row) comparison with the default of the same group (RunOfRecipe.group: base
    recipe and domain) that ran alike, with Holm-adjusted p over all of them; `rows` keeps only the rows it accepts
    (the rule's: rule_row), so the Holm family is the comparisons read. A pair that cannot be paired (other TEST
    sentences) raises, unless `failed` collects its message instead."""
    from core.errors import UserError

    results = list(results)
    defaults = {(r.group, r.ran): r for r in results if not r.knob}
    tests: list[KnobTest | None] = []
    for r in results:
        if not r.knob or (default := defaults.get((r.group, r.ran))) is None:
            continue
        for row in sorted(row for row in {c.row for c in r.cells} - {"none"} if rows is None or rows(row)):
            try:
                tests.append(_paired(r.knob, r.domain, row, r.cells, default.cells, row, n_boot, seed))
            except UserError as exc:
                if failed is None:
                    raise
                failed.append(f"{r.knob} on {r.domain}, {row}: {exc}")
    return _with_holm(tests)


def _outcome(tests: Sequence[KnobTest], domains: Sequence[str], needed: int, alpha: float, stopped: Iterable[str] = ()
             ) -> tuple[list[str], list[str], list[str], str, str, list[str]]:
    """One candidate's comparisons read by the rule, one rule for knobs and rows: where it ran, where it was better,
    where worse, the outcome, why, and where it ran part-way. A part-way domain (`stopped`: its result unfinished; or
    a comparison there short of MIN_CLAIM_SEEDS) counts as left, so that a stopped run never closes a knob's chances."""
    ran = sorted({t.domain for t in tests})
    better = sorted({t.domain for t in tests if t.claims(alpha) and t.delta > 0})
    worse = sorted({t.domain for t in tests if t.claims(alpha) and t.delta < 0})
    partial = sorted(({t.domain for t in tests if len(t.seeds) < MIN_CLAIM_SEEDS} | set(stopped)) & set(ran))
    left = len(set(domains) - set(ran)) + len(set(partial) - set(better))
    done = len(ran) - len(set(partial) - set(better))  # a partial domain already better there is decided
    so_far = f" ({', '.join(partial)} partial)" if partial else ""
    if worse:
        return ran, better, worse, STAYS_OUT, f"significantly worse on {', '.join(worse)}", partial
    if len(better) >= needed:
        return (ran, better, worse, QUALIFIES, f"better on {len(better)} domains ({', '.join(better)}), worse on no domain",
                partial)
    if len(better) + left < needed:
        return ran, better, worse, STAYS_OUT, (f"better on {len(better)} of the {done} domains it ran, and {left} "
                                               f"left: it cannot reach {needed}"), partial
    return ran, better, worse, OPEN, (f"better on {len(better)} of {done} domains so far{so_far}; needs {needed}, {left} "
                                      f"to run or finish"), partial


def decide(results: Iterable[RunOfRecipe], domains: Sequence[str] = DOMAINS, needed: int = NEEDED_DOMAINS,
           alpha: float = ALPHA, n_boot: int = N_RESAMPLES) -> Decision:
    """The rule applied to every knob variant among `results`, over the rows it names (rule_row)."""
    results = list(results)
    tests = knob_tests(results, n_boot=n_boot, rows=rule_row)
    outcomes = [KnobOutcome(knob, *_outcome([t for t in tests if t.knob == knob], domains, needed, alpha,
                                            {r.domain for r in results if r.knob == knob and not r.finished}))
                for knob in sorted({t.knob for t in tests})]
    return Decision(tests, outcomes, unpaired_variants(results))


RIVALS = ("random", "cosine", "dsir", "ner")  # what a new selection strategy is held against; random decides
NEW_ROWS = tuple(s.value for s in ENTITY_AWARE)  # issue 46's entity-aware strategies, each decided on its own


@dataclass
class RowOutcome:
    """A new selection row (issue 46's entity-aware strategy) under the same rule as a knob: kept as a strategy worth
    offering only if it beats the random draw of the same budget (Holm-adjusted p < 0.05, 3+ seeds) on at least 3 of
    the 5 domains and is significantly worse than it on no domain. The other rivals are shown, not decisive: a
    selection that cannot beat a random draw has not shown that it selects."""

    row: str
    domains: list[str]
    better: list[str]
    worse: list[str]
    outcome: str
    reason: str
    partial: list[str] = field(default_factory=list)  # ran part-way: more cells to come (counted as left)
    tests: list[KnobTest] = field(default_factory=list)  # knob: the rival ("random", "cosine", ...)

    def sentence(self) -> str:
        if not self.domains:
            return f"{self.row} has not run beside random in any default-recipe study yet"
        verdict = {QUALIFIES: "kept: the table supports it", STAYS_OUT: "not supported by the table",
                   OPEN: "not supported so far"}[self.outcome]
        return f"{self.row}: {verdict}; against random, {self.reason}"


def decide_row(results: Iterable[RunOfRecipe], row: str = "entity-gain", rivals: Sequence[str] = RIVALS,
               domains: Sequence[str] = DOMAINS, needed: int = NEEDED_DOMAINS, alpha: float = ALPHA,
               n_boot: int = N_RESAMPLES) -> RowOutcome:
    """`row` against each rival in every default-recipe study that ran both, paired on their common seeds and TEST
    sentences, Holm over all of these comparisons; the outcome reads the comparisons with random."""
    tests = _with_holm([_paired(rival, r.domain, row, r.cells, r.cells, rival, n_boot)
                        for r in results if not r.knob for rival in rivals])
    control = [t for t in tests if t.knob == rivals[0]]
    # No `stopped` here: a default study left unfinished by another row's cells says nothing of this row's; a row
    # short of seeds is part-way by its own comparisons.
    return RowOutcome(row, *_outcome(control, domains, needed, alpha), tests=tests)


@dataclass
class VariantComparison:
    """A workspace's recipe variants, each against the default recipe of its task (the Results page and `python -m
    core compare-recipes`): the same paired tests as the ablation's, without the five-domain rule, which is CrossNER's."""

    tests: list[KnobTest] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)  # not compared: another device or precision, or no common TEST
    without_default: list[str] = field(default_factory=list)  # a variant with no run of its default recipe to test against
    without_recipe: list[str] = field(default_factory=list)  # results whose recipe is unknown (a folder from before it)

    def rows(self) -> list[dict[str, Any]]:
        """One plain row per test, in points, for a table."""
        return [{"variant": t.knob, "domain": t.domain, "row": t.row, "seeds": len(t.seeds),
                 "difference": round(100 * t.delta, 2), "ci_low": round(100 * t.ci[0], 2),
                 "ci_high": round(100 * t.ci[1], 2), "p": round(t.p, 4),
                 "p_holm": None if t.p_holm is None else round(t.p_holm, 4),
                 "verdict": ("better" if t.delta > 0 else "worse") if t.claims() else
                            ("too few seeds" if t.p_holm is None else "no difference shown")} for t in self.tests]


def variant_comparisons(results: Iterable[Any], n_boot: int = N_RESAMPLES) -> VariantComparison:
    """Every experiment result with a recipe (records.ExperimentResult) that differs from another's only in its MLM
    settings or rehearsal share, tested row by row against that default recipe's run of the same task (the same five
    corpora, by their hashes where the results recorded them), device and precision, at the same SC budget and LC
    size (a sweep's points are compared point by point, "music · SC 500 · LC 100"). Several runs of one recipe on one
    task: the one with most cells speaks for it. A pair that cannot be paired (other TEST sentences) is named, not
    fatal."""
    best: dict[tuple[Any, ...], RunOfRecipe] = {}
    unknown = []
    for r in results:
        if not r.recipe or not r.cells:
            unknown += [f"{r.domain} · {r.job or 'a result'}"] if r.cells else []
            continue
        task = json.dumps({k: {f: v for f, v in ref.items() if f != "sentences"} if isinstance(ref, Mapping) else ref
                           for k, ref in sorted((r.extra.get("corpora") or {}).items())}, sort_keys=True, default=str)
        points = {(c.budget if c.row not in BASELINES else None, c.lc_size) for c in r.cells}
        budgets, lc_sizes = {b for b, _ in points if b}, {n for _, n in points}
        for point in points:
            cells = [c for c in r.cells if (c.budget if c.row not in BASELINES else None, c.lc_size) == point]
            # the point is always part of the key; the label names it only where this run swept it
            shown = r.domain + (f" · SC {point[0]}" if point[0] and len(budgets) > 1 else "") + \
                (f" · LC {point[1]}" if len(lc_sizes) > 1 else "")
            run = RunOfRecipe(shown, r.recipe, cells, not r.partial, within=(task, r.domain, *point))
            key = (run.knob, run.group, run.ran)
            if key not in best or len(run.cells) > len(best[key].cells):
                best[key] = run
    runs = list(best.values())
    failed: list[str] = []
    tests = knob_tests(runs, n_boot, failed=failed)
    with_default = {run.group for run in runs if not run.knob}
    without = sorted({f"{run.knob} on {run.domain}" for run in runs if run.knob and run.group not in with_default})
    return VariantComparison(tests, unpaired_variants(runs) + failed, without, unknown)
