"""A finished experiment cell as one typed record, saved and loaded here only (`cell.json`).

A cell used to be a dict built by many updates, and its "budget" meant three things: the DC sentences fed to
MLM for DAPT, the SC sentences a strategy kept after the leak drop, and (in its folder key) the count asked
for before that drop. Now:

- `budget` is the SC sentences a strategy row pretrained on (after the leak drop); None for a baseline row;
- `budget_requested` is what was asked for (a count or a ratio of DC; None: |TC|), and `key` is named by the
  count it resolved to before the drop, so a rerun of the same request finds the same folder;
- `mlm_sentences` is every sentence of the MLM corpus (for DAPT: its DC sentences).

A cell.json written before this (a baseline with "budget" 0 or |DC|) loads with the meaning above; fields a
newer or older writer added are kept in `extra` and written back as they were.

>>> old = {"row": "dapt", "seed": 1, "key": "dapt.lc100", "lc_size": 100, "budget": 4614, "mlm_sentences": 4614,
...        "f1": 0.53, "precision": 0.52, "recall": 0.55, "per_type": {}, "probe": "kept"}
>>> cell = Cell.from_dict(old)
>>> cell.budget, cell.mlm_sentences, cell.extra
(None, 4614, {'probe': 'kept'})
>>> Cell.from_dict(cell.to_dict()) == cell
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.data.atomic import atomic_write_json, split_fields
from core.errors import UserError
from core.experiments.guard import GuardReport
from core.experiments.plan import BASELINES, CELL_FILE, RECIPE_FIELDS, RECIPE_FILE, recipe_differences, recipe_of
from core.experiments.statistics import ALPHA, MIN_CLAIM_SEEDS


@dataclass
class Cell:
    row: str
    seed: int
    f1: float
    key: str = ""  # the cell's folder key ("" for a cell typed into a table by hand, e.g. in a test)
    lc_size: int | None = None
    precision: float | None = None
    recall: float | None = None
    per_type: dict[str, Any] = field(default_factory=dict)
    budget: int | None = None  # SC sentences pretrained on (strategy rows, after the leak drop); None: a baseline
    budget_requested: int | float | str | None = None  # what was asked for (count or ratio of DC; None: |TC|)
    selection_key: str | None = None
    mlm_sentences: int = 0  # every sentence of the MLM corpus (DAPT: its DC sentences); 0 without pretraining
    mlm_seconds: float = 0.0
    b1_mlm_seconds: float | None = None  # the TAPT model a strategy read (B1), when it needed one
    drift: dict[str, Any] | None = None  # the end of the MLM run's; pick["drift"]: the encoder NER fine-tuned
    pick: dict[str, Any] | None = None  # the checkpoint pick's record (core.experiments.cells.pick_record)
    predictions: str | None = None
    test_counts: Any = None  # per-sentence TEST counts inline: intervals survive the run folder
    best_dev_f1: float | None = None
    ner_epochs: int | None = None
    encoder: str | None = None
    numerics: dict[str, Any] | None = None
    started: float | None = None
    finished: float | None = None
    device: str | None = None
    run: str | None = None
    restored_from: dict[str, Any] | None = None  # a cell put back from a result file: which, at what commit
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        known, extra = split_fields(cls, data, own=("extra", "selected"))
        extra.update(data.get("extra") or {})
        if str(known.get("row")) in BASELINES:  # before this record: 0 (none, TAPT) or |DC| (DAPT) for a baseline
            known["budget"] = None
        elif known.get("budget") is None and data.get("selected") is not None:
            known["budget"] = data["selected"]
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every field (None ones left out, but for `budget` and `lc_size`, which every reader groups
        on), `extra` merged back in as it came."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**{k: v for k, v in out.items() if v is not None or k in ("budget", "lc_size")}, **self.extra}


def ran_alike(cells: Iterable[Cell | Mapping[str, Any]]) -> tuple[str, ...]:
    """How the recorded cells ran ("cuda (bf16)", "cpu (fp32)"): two runs' F1 compare only when these match, since a
    device and its precision move F1 by about as much as the recipes under test (a CPU `none` against a GPU variant
    would measure the machine).

    >>> ran_alike([{"row": "none", "seed": 1, "f1": 0.5, "numerics": {"device": "cuda", "dtype": "bf16"}},
    ...            {"row": "tapt", "seed": 1, "f1": 0.5}])
    ('cuda (bf16)',)
    """
    ways = ((c.numerics if isinstance(c, Cell) else c.get("numerics")) for c in cells)  # a partial record too
    # by kind: cuda:0 and cuda:1 of one machine are one device here
    return tuple(sorted({f"{str(n['device']).split(':')[0]} ({n['dtype']})" for n in ways if n}))


def head_drawn_apart(cell: Cell | Mapping[str, Any]) -> bool:
    """Whether the cell's NER head was drawn, before the fix of issue 46's A/A control, after loading an MLM folder
    (which drew a pooler first): its head and dropout masks then differ from `none`'s of the same seed. Loading the base
    encoder drew nothing, so `none` and cells whose checkpoint pick kept the base are the same either way.

    >>> head_drawn_apart({"row": "tapt", "numerics": {"device": "cuda"}, "pick": {"chosen": "step-300"}})
    True
    >>> head_drawn_apart({"row": "tapt", "numerics": {"device": "cuda"}, "pick": {"chosen": "base"}})
    False
    >>> head_drawn_apart({"row": "tapt", "numerics": {"device": "cuda", "head_seed": "after-encoder"}})
    False
    >>> head_drawn_apart({"row": "dsir", "pick": {"chosen": "step-400"}})  # from before cells recorded numerics
    True
    """
    get = (lambda k: getattr(cell, k, None)) if isinstance(cell, Cell) else cell.get
    if (get("numerics") or {}).get("head_seed") or get("row") == "none":  # no record at all: older still than the fix
        return False
    pick = get("pick")
    return not (isinstance(pick, Mapping) and pick.get("chosen") == "base")


def as_cells(cells: Iterable[Cell | Mapping[str, Any]]) -> list[Cell]:
    """Cells as records however they came (a result JSON's dicts, a run folder's records): read once, here, so the
    summaries, tables and figures read fields, not keys."""
    return [c if isinstance(c, Cell) else Cell.from_dict(dict(c)) for c in cells]


@dataclass
class PairTest:
    """One row against one baseline (a `vs` entry of a summary): the paired difference of test F1, its 95% interval,
    p and, over a whole experiment, the Holm-adjusted p (core.experiments.summary.interval_summary adds it)."""

    delta: float
    ci: list[float]
    p: float
    seeds: int = 0  # seeds both rows ran
    p_holm: float | None = None
    holm_family: int = 1  # how many comparisons the Holm adjustment ran over
    other: dict[str, Any] = field(default_factory=dict)

    @property
    def adjusted(self) -> float:
        """The p a verdict or a star reads: Holm-adjusted where the comparison has one, else the raw p."""
        return float(self.p if self.p_holm is None else self.p_holm)

    @property
    def too_few_seeds(self) -> bool:
        """Paired over fewer seeds than a claim needs (MIN_CLAIM_SEEDS). 0 is an older record that did not count them:
        unknown is too few, since a one-seed bootstrap (sentences only) would otherwise pass as a claim."""
        return self.seeds < MIN_CLAIM_SEEDS

    @property
    def significant(self) -> bool:
        """What every star, verdict and decision reads: Holm-adjusted p below ALPHA, over enough seeds to claim it."""
        return self.adjusted < ALPHA and not self.too_few_seeds

    @classmethod
    def of(cls, data: PairTest | Mapping[str, Any]) -> PairTest:
        if isinstance(data, PairTest):
            return data
        known, other = split_fields(cls, data, own=("other",), drop_none=True)
        return cls(**known, other=other)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "other"}
        return {**{k: v for k, v in out.items() if v is not None}, **self.other}


@dataclass
class SummaryEntry:
    """One row of an experiment's summary (per SC budget and LC size in sweeps): seed-mean test F1 with its spread and
    interval, and its paired tests against the baselines (`vs`). The result JSON keeps the dict form (`to_dict`)."""

    row: str
    f1_mean: float = math.nan
    f1_std: float | None = None
    f1_ci: list[float] | None = None
    seeds: int = 0
    vs: dict[str, PairTest] = field(default_factory=dict)
    label: str | None = None  # the row's longer name, when it has one
    dev_in_mlm: bool = False  # the run allowed DEV text in this row's MLM corpora
    budget: int | None = None
    lc_size: int | None = None
    note: str | None = None  # why it has no interval
    other: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, data: SummaryEntry | Mapping[str, Any]) -> SummaryEntry:
        if isinstance(data, SummaryEntry):
            return data
        known, other = split_fields(cls, data, own=("other", "vs"), drop_none=True)
        return cls(**known, vs={b: PairTest.of(t) for b, t in (data.get("vs") or {}).items()}, other=other)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("other", "vs")}
        kept = {k: v for k, v in out.items() if v is not None and (k != "dev_in_mlm" or v)}
        return {**kept, "vs": {b: t.to_dict() for b, t in self.vs.items()}, **self.other}

    @property
    def holm_ready(self) -> bool:
        """Every comparison carries its Holm-adjusted p (made by this code, not a result from before Holm)."""
        return all(t.p_holm is not None for t in self.vs.values())


def as_entries(entries: Iterable[SummaryEntry | Mapping[str, Any]]) -> list[SummaryEntry]:
    return [SummaryEntry.of(e) for e in entries]


@dataclass
class Verdict:
    """The experiment's answer (core.experiments.summary.experiment_verdict), read from Holm-adjusted p only, as the
    result JSON keeps it and the Results page and the CLI say it."""

    text: str  # one sentence
    evidence: bool = True  # False for a smoke-test preset: the figures only show that the setup runs
    preset: str | None = None
    pretraining_helps: str = "not tested"  # "yes", "no, it harms", "mixed", "cannot say", "not tested"
    selection_beats_random: str = "not tested"
    comparisons: int = 0  # the Holm family's size
    advice: dict[str, Any] | None = None  # what to do: {case, text, ...} (core.experiments.summary.user_advice)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        known, extra = split_fields(cls, data, own=("extra",), drop_none=True)
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        return {**self.extra, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}}


@dataclass
class ExperimentResult:
    """An experiment's result as a page, the CLI and the tables read it: a finished job's result.json, one found
    through the run index, or the cells so far of a running one (`partial`). Read once from its JSON here;
    fields this record does not name (command, commit, study, ...) stay in `extra`."""

    domain: str
    cells: list[Cell]
    job: str = ""  # the job (or run folder) it came from
    partial: bool = False  # the cells finished so far of a run still going (or stopped)
    rows: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    summary: list[SummaryEntry] = field(default_factory=list)  # as stored (core.experiments.summary.interval_summary)
    protocol: GuardReport | None = None  # what the MLM guard did (core.experiments.guard); None: a run before it
    verdict: Verdict | None = None
    leakage: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    preset: str | None = None
    recipe: dict[str, Any] | None = None  # plan.recipe_of(params): how its cells trained; what variants are grouped by
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], job: str = "", partial: bool = False) -> ExperimentResult:
        known, extra = split_fields(cls, data, own=("extra", "cells", "domain", "preset"), drop_none=True)
        known["summary"] = as_entries(known["summary"] if "summary" in known else [])
        if "verdict" in known:
            known["verdict"] = Verdict.from_dict(known["verdict"]) if isinstance(known["verdict"], Mapping) else None
        if "protocol" in known:
            known["protocol"] = GuardReport.from_protocol(known["protocol"]) if known["protocol"] else None
        stored = data.get("params")  # a result from before "preset" was written beside it: the params it kept
        preset = data.get("preset") or (stored["preset"] if isinstance(stored, Mapping) and "preset" in stored else None)
        return cls(domain=str(data.get("domain") or "?"), cells=as_cells(data.get("cells") or []),
                   preset=preset, **{"job": job, "partial": partial, **known}, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("extra", "cells", "summary", "protocol", "verdict")}
        return {**self.extra, **out, "cells": [c.to_dict() for c in self.cells], "summary": [e.to_dict() for e in self.summary],
                "protocol": self.protocol.protocol if self.protocol else None,
                "verdict": self.verdict.to_dict() if self.verdict else None}

    @property
    def dev_in_mlm(self) -> bool:
        """The run allowed DEV text in its MLM corpora (--allow-dev-in-mlm): its DEV figures are optimistic."""
        return bool(self.protocol and self.protocol.dev_kept)

    def test_leaks(self) -> list[tuple[str, dict[str, Any]]]:
        """(corpus, its exact/near duplicate counts of TEST) for each MLM corpus that held TEST sentences."""
        return [(name, test) for name, leak in self.leakage.items() if (test := (leak.get("per_against") or {}).get("test"))]


def as_result(result: ExperimentResult | Mapping[str, Any]) -> ExperimentResult:
    return result if isinstance(result, ExperimentResult) else ExperimentResult.from_dict(result)


def cell_path(run_dir: str | Path, key: str, seed: int) -> Path:
    return Path(run_dir) / "cells" / key / f"seed-{seed}" / CELL_FILE


def save_cell(path: str | Path, cell: Cell) -> None:
    atomic_write_json(Path(path), cell.to_dict())


def load_cell(path: str | Path) -> Cell | None:
    """The cell kept at `path`, or None when there is none (or it is being written)."""
    try:
        return Cell.from_dict(json.loads(Path(path).read_text("utf-8")))
    except (OSError, json.JSONDecodeError):
        return None


def load_cells(run_dir: str | Path) -> list[Cell]:
    """Finished cells of an experiment run folder (also while it is still running)."""
    cells = (load_cell(p) for p in sorted(Path(run_dir).glob(f"cells/*/seed-*/{CELL_FILE}")))
    return [c for c in cells if c is not None]


# what makes two experiments' cells take about as long: the same corpora, encoder, preset and sizes (their recipes
# may differ: that is what a knob variant is)
SAME_TASK_FIELDS = ("tc", "dc", "lc", "dev", "test", "model", "preset", "budget", "budgets", "lc_sizes")


def same_task_cells(run_dir: str | Path, params: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The finished cells of the other experiment folders beside `run_dir` that ran the same task (SAME_TASK_FIELDS),
    and those folders' names: clocks a time limit borrows until the experiment's own cells can time a row
    (core.experiments.cell_clock). A folder whose params cannot be read is passed over: a clock is never worth a
    failed run."""
    here = Path(run_dir).resolve()
    want = {k: getattr(params, k, None) for k in SAME_TASK_FIELDS}
    cells: list[dict[str, Any]] = []
    names: list[str] = []
    for stored in sorted(here.parent.glob("*/params.json")):
        folder = stored.parent
        if folder.resolve() == here:
            continue
        try:
            record = json.loads(stored.read_text("utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        other = record.get("params") if isinstance(record, dict) and record.get("kind") == "experiment" else None
        if isinstance(other, dict) and other.get("budgets") and len(other["budgets"]) == 1 and other.get("budget") is None:
            other = {**other, "budget": other["budgets"][0], "budgets": None}  # stored before one budget became budget
        if not isinstance(other, dict) or any(_listed(other.get(k)) != _listed(v) for k, v in want.items()):
            continue
        if found := [c.to_dict() for c in load_cells(folder)]:
            cells += found
            names.append(folder.name)
    return cells, names


def _listed(value: Any) -> Any:
    """A params value as JSON holds it (a tuple reads back as a list)."""
    return list(value) if isinstance(value, tuple) else value


INPUTS_FILE = "inputs.json"  # the corpora a run folder's cells read, by content hash (beside recipe.json)


def _started(folder: Path) -> bool:
    """Whether a run folder holds work of its own: anything a cell wrote (a finished cell, a checkpoint, a finished
    MLM model or its snapshots, a NER model): a run stopped after its MLM took a new recipe and reused that model."""
    return bool(load_cells(folder)) or any(any((folder / part).rglob("*")) for part in ("pretrain", "cells"))


def corpus_fingerprint(corpus: Any) -> str:
    """The sentences and tags of a corpus as one hash: what a run folder's cells read, however the corpus was named
    (a workspace corpus and the file it came from hash differently as files)."""
    h = hashlib.sha256()
    for i, tokens in enumerate(corpus.tokens):
        h.update("\x1f".join(tokens).encode("utf-8"))
        if corpus.tags is not None:
            h.update(b"\x1e" + "\x1f".join(corpus.tags[i]).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def check_inputs(run_dir: str | Path, corpora: Mapping[str, tuple[str, str]]) -> None:
    """Refuse to continue a run folder whose cells read other corpora (another --test, or a DC re-imported with other
    sentences): its finished cells would be reported as the new corpora's F1. `corpora`: role -> (name,
    corpus_fingerprint). A folder from before the record takes this run's."""
    folder = Path(run_dir)
    path = folder / INPUTS_FILE
    now = {k: {"name": name, "hash": digest} for k, (name, digest) in corpora.items()}
    if path.is_file() and _started(folder):
        stored = json.loads(path.read_text("utf-8"))
        diff = [f"{k.upper()} {now[k]['name']!r} holds other sentences or tags than {v.get('name')!r} did there"
                for k, v in stored.items() if k in now and v.get("hash") != now[k]["hash"]]
        if diff:
            raise UserError(f"run folder {folder} holds cells of other corpora ({'; '.join(diff)}): continue it with the "
                            "same corpora, or give a new folder (--out) for these")
        return
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, now)


def check_recipe(run_dir: str | Path, params: Any, lc_sentences: int | None = None, new_cells: bool = True) -> None:
    """Refuse to continue a run folder with another recipe than the one its finished cells ran with, naming each
    differing setting; a first run records its recipe. A folder from before recipe.json is checked on checkpoint
    pick alone, read from its finished cells (a cell that picked has a `pick` record). An LC-size sweep whose finished
    smaller cells chose their checkpoint on all of LC (before the probe used each cell's own sample, which their pick
    record says in `probe_lc`) is refused too: its new cells would choose the other way (`new_cells` False: none will
    run, so that sweep stays readable). A folder whose recipe.json names no finished cell (a run stopped before its
    first cell, with nothing of a cell written yet) takes the recipe of this run."""
    folder = Path(run_dir)
    recipe = recipe_of(params)
    finished = load_cells(folder)
    if new_cells and lc_sentences and (old := [c for c in finished if c.pick and "probe_lc" not in c.pick
                                 and (c.lc_size or lc_sentences) < lc_sentences]):
        raise UserError(f"run folder {folder} holds {len(old)} LC-sweep cells whose checkpoint pick probed on all of LC, "
                        "not on the cell's own LC sample as pick does now: continue this sweep in a new folder")
    stored_path = folder / RECIPE_FILE
    if stored_path.is_file() and (finished or _started(folder)):  # a checkpoint is work of the stored recipe too
        raw = json.loads(stored_path.read_text("utf-8"))
        # only the fields the file names: a field added to the recipe later does not refuse older folders
        diff = recipe_differences(recipe_of(raw, tuple(f for f in RECIPE_FIELDS if f in raw)), recipe)
        if diff:
            raise UserError(f"run folder {folder} holds cells of another recipe ({'; '.join(diff)}): continue it with "
                            "the same settings, or give a new folder (--out) for this recipe")
        return
    mlm_cells = [c for c in finished if c.row != "none"]
    picked = {bool(c.pick) for c in mlm_cells}
    if picked and picked != {bool(recipe["pick_checkpoint"])}:
        was = "with" if True in picked else "without"
        raise UserError(f"run folder {folder} holds cells made {was} checkpoint pick, and this run has pick_checkpoint "
                        f"{recipe['pick_checkpoint']} (the default of preset {recipe['preset']!r} since issue 26): continue "
                        f"it with {'--pick-checkpoint' if was == 'with' else '--no-pick-checkpoint'} (Runs page: Checkpoint "
                        f"pick {'on' if was == 'with' else 'off'}), or give a new folder")
    atomic_write_json(stored_path, recipe)
