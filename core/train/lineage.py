"""Lineage: what produced a model or a run, recorded where it is made and read back by `runs show`.

Every MLM or NER model folder gets a `lineage.json` beside its weights: the base model, each MLM
phase with the corpora it read (name + content hash), the selection behind an SC (strategy,
budget, model, its id), the LC/DEV/TEST hashes, seed, preset and wall time. A model trained
from a folder that has a lineage inherits it (base model, phases, selection), so an NER run on an
MLM run's folder names the MLM corpora as its `pretraining_corpora`.

The training jobs record it themselves when they finish (`record_mlm`, `record_ner`); the job runner knows
nothing of training. Each finished run is also written to the workspace's run index (`lineage/RUN.json`: id, kind,
folders, test F1, lineage): the Similarity page's F1 panel, `runs list` and `runs show` read it,
whichever way the run was made (a job, the CLI, an experiment or compare-sources cell).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.access import LOCAL, Actor, check_param_paths
from core.data.atomic import atomic_write_json, split_fields
from core.data.selection_store import selection_meta
from core.data.workspace import Workspace, resolve_corpus_ref
from core.errors import UserError
from core.recipes.modes import phases_of
from core.recipes.presets import DEFAULT_PRESET
from core.runner.jobresult import JobResult

if TYPE_CHECKING:
    from core.runner.params import MlmParams

LINEAGE_FILE = "lineage.json"
INDEX_DIR = "lineage"


@dataclass(frozen=True)
class CorpusStamp:
    """The LC, DEV or TEST a model was trained or scored on: its name and content hash (None when the reference no
    longer resolves), and for an LC subset drawn by an experiment how many of how many sentences, with which seed."""

    name: str | None
    hash: str | None
    sentences: int | None = None
    of: int | None = None
    sample_seed: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusStamp:
        known, _ = split_fields(cls, {"name": None, "hash": None, **data})
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k in ("name", "hash")}

    @property
    def size(self) -> int | str | None:
        """Its sentences, or '50 of 100 (drawn with seed 1)' for a drawn subset."""
        if self.sentences is not None and self.of and self.sentences < self.of:
            return f"{self.sentences} of {self.of} (drawn with seed {self.sample_seed})"
        return self.sentences

    def label(self, role: str) -> str:
        """'LC ai-lc (50 of 100)': how the F1 panel tells runs on different data apart."""
        part = f" ({self.sentences} of {self.of})" if self.of and (self.sentences or 0) < self.of else ""
        return f"{role} {self.name}{part}"


@dataclass(frozen=True)
class SelectionStamp:
    """The saved selection behind a model's SC (the selection store's meta); a selection since deleted keeps its id."""

    id: str
    strategy: str | None = None
    budget: int | None = None
    model: str | None = None
    dc: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SelectionStamp:
        known, _ = split_fields(cls, data)
        return cls(**known)

    @property
    def label(self) -> str:
        return " · ".join(str(x) for x in (self.strategy, f"{self.budget} sentences", f"model {self.model}", self.id) if x)


@dataclass
class MlmPhase:
    name: str  # tapt, dapt, tc+sc, train, or a compare-sources source
    corpora: list[dict[str, Any]]  # [{name, hash}]
    sentences: int | None = None


@dataclass
class Lineage:
    base_model: str = "default"
    mlm_phases: list[MlmPhase] = field(default_factory=list)
    selection: SelectionStamp | None = None
    lc: CorpusStamp | None = None
    dev: CorpusStamp | None = None
    test: CorpusStamp | None = None
    seed: int | None = None
    preset: str | None = None
    wall_seconds: float | None = None
    parent: str | None = None  # the model folder this one was trained from, when it had a lineage
    created: float = field(default_factory=time.time)

    @property
    def pretraining_corpora(self) -> list[dict[str, Any]]:
        """Every corpus any MLM phase read, in order, each once."""
        seen, out = set(), []
        for phase in self.mlm_phases:
            for c in phase.corpora:
                key = (c["name"], c["hash"])
                if key not in seen:
                    seen.add(key)
                    out.append({"name": c["name"], "hash": c["hash"]})
        return out

    @property
    def pretraining_source(self) -> dict[str, Any] | None:
        """The source corpus the model was pretrained on, as Dai et al. compare them: the last MLM phase's corpora
        ({name, hash}, names joined by '+'); None without MLM."""
        corpora = self.mlm_phases[-1].corpora if self.mlm_phases else []
        if not corpora:
            return None
        hashes = [c.get("hash") for c in corpora]  # one unrecorded: no hash at all (not "None", which matches nothing)
        return {"name": "+".join(str(c["name"]) for c in corpora),
                "hash": "+".join(str(h) for h in hashes) if all(hashes) else None}

    def to_dict(self) -> dict[str, Any]:
        stamps = {k: getattr(self, k).to_dict() for k in ("lc", "dev", "test") if getattr(self, k) is not None}
        return {**asdict(self), **stamps, "pretraining_corpora": self.pretraining_corpora}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Lineage:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["mlm_phases"] = [MlmPhase(**p) for p in known["mlm_phases"] or []] if "mlm_phases" in known else []
        for k, stamp in (("lc", CorpusStamp), ("dev", CorpusStamp), ("test", CorpusStamp), ("selection", SelectionStamp)):
            if k in known:
                known[k] = stamp.from_dict(known[k]) if isinstance(known[k], dict) else None
        for phase in known["mlm_phases"]:  # every corpus stamp has both keys, read by name from here on
            phase.corpora = [{"name": None, "hash": None, **c} for c in phase.corpora or []]
        return cls(**known)


@dataclass
class RunEntry:
    """One finished run as the run index keeps it (`lineage/RUN.json`), or a job or model folder `get_run` found
    outside it. Read once here; the pages, `runs list/show`, the F1 panel and the model pickers read fields."""

    id: str
    kind: str | None
    lineage: Lineage | None = None
    run_dir: str | None = None
    model_dir: str | None = None
    f1: float | None = None  # TEST F1 of an NER run
    created: float = 0.0
    status: str | None = None  # a job's, when the run was found as a job
    experiment: str | None = None  # the experiment folder this cell's run belongs to
    compare_sources: str | None = None  # the compare-sources folder this run belongs to
    extra: dict[str, Any] = field(default_factory=dict)  # row, budget, source, ...: what the recorder added

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunEntry:
        known, extra = split_fields(cls, d, own=("extra", "lineage", "created"))
        lin = d.get("lineage")
        return cls(**known, created=float(d.get("created") or 0.0),
                   lineage=Lineage.from_dict(lin) if isinstance(lin, dict) else None, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "lineage")}
        optional = ("status", "experiment", "compare_sources")  # only where the run has one
        return {**{k: v for k, v in out.items() if v is not None or k not in optional}, **self.extra,
                "lineage": self.lineage.to_dict() if self.lineage else None}

    @property
    def pretraining_source(self) -> dict[str, Any] | None:
        return self.lineage.pretraining_source if self.lineage else None


def corpus_hash(ws: Workspace, ref: str | None) -> dict[str, Any] | None:
    """{name, hash} of a corpus reference; a reference that no longer resolves keeps its text and hash None."""
    stamp = corpus_stamp(ws, ref)
    return None if stamp is None else {"name": stamp.name, "hash": stamp.hash}


def corpus_stamp(ws: Workspace, ref: str | None) -> CorpusStamp | None:
    if not ref:
        return None
    try:
        return CorpusStamp(**resolve_corpus_ref(ref, ws).to_dict())
    except UserError:
        return CorpusStamp(str(ref), None)


def read_lineage(model_dir: str | Path | None) -> Lineage | None:
    if not model_dir:
        return None
    path = Path(model_dir) / LINEAGE_FILE
    if not path.is_file():
        return None
    try:
        return Lineage.from_dict(json.loads(path.read_text("utf-8")))
    except (OSError, json.JSONDecodeError, TypeError) as exc:
        raise UserError(f"{path}: unreadable lineage ({exc})") from None


def from_base(model: str) -> Lineage:
    """A new lineage starting at `model`: a folder with a lineage passes on its base model, MLM phases
    and selection; anything else (default, an HF id, a folder without one) is the base model itself."""
    parent = read_lineage(model) if Path(str(model)).is_dir() else None
    if parent is None:
        return Lineage(base_model=str(model))
    return Lineage(base_model=parent.base_model, mlm_phases=list(parent.mlm_phases), selection=parent.selection,
                   parent=str(Path(model).resolve()))


def write_lineage(folder: str | Path, lineage: Lineage) -> Path:
    return atomic_write_json(Path(folder) / LINEAGE_FILE, lineage.to_dict())


def _index_path(ws: Workspace, run_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    return ws.root / INDEX_DIR / f"{safe}.json"


def record_run(ws: Workspace, run_id: str, kind: str, lineage: Lineage, run_dir: str | Path | None = None,
               model_dir: str | Path | None = None, f1: float | None = None, extra: dict[str, Any] | None = None) -> RunEntry:
    """Write lineage.json beside the model (and into the run folder) and the run's index entry."""
    for folder in {str(p) for p in (model_dir, run_dir) if p}:
        if Path(folder).is_dir():
            write_lineage(folder, lineage)
    entry = RunEntry.from_dict({"id": run_id, "kind": kind, "run_dir": str(run_dir) if run_dir else None,
                                "model_dir": str(model_dir) if model_dir else None, "f1": f1, "created": time.time(),
                                **(extra or {}), "lineage": lineage.to_dict()})
    atomic_write_json(_index_path(ws, run_id), entry.to_dict())
    return entry


def list_runs(ws: Workspace, kind: str | None = None) -> list[RunEntry]:
    """Index entries, newest first."""
    folder = ws.root / INDEX_DIR
    out = []
    for path in folder.glob("*.json") if folder.is_dir() else []:
        try:
            entry = RunEntry.from_dict(json.loads(path.read_text("utf-8")))
        except (OSError, TypeError, json.JSONDecodeError):
            continue
        if kind is None or entry.kind == kind:
            out.append(entry)
    return sorted(out, key=lambda e: e.created, reverse=True)


def get_run(ws: Workspace, run_id: str) -> RunEntry:
    """A run by its id (or a unique prefix), by job id, or by a folder holding lineage.json."""
    path = _index_path(ws, run_id)
    if path.is_file():
        return RunEntry.from_dict(json.loads(path.read_text("utf-8")))
    matches = [e for e in list_runs(ws) if e.id.startswith(run_id)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UserError(f"run id {run_id!r} is ambiguous: {', '.join(e.id for e in matches[:5])} ...")
    from core.runner import jobstore

    try:
        job = jobstore.get_job(ws, run_id)
    except UserError:
        job = None
    if job is not None:
        return RunEntry(id=job.id, kind=job.kind, run_dir=str(job.run_dir), status=job.status,
                        model_dir=job.outcome.out_dir, lineage=read_lineage(job.run_dir))
    lin = read_lineage(run_id)
    if lin is not None:
        return RunEntry(id=str(run_id), kind=None, run_dir=str(run_id), model_dir=str(run_id), lineage=lin)
    raise UserError(f"no run {run_id!r} in workspace {ws.root}: tried the run index ({ws.root / INDEX_DIR}), "
                    "job ids, and a folder with lineage.json")


# --------------------------------------------------------------------------- recorded by the training jobs


def selection_info(ws: Workspace, ref: str | None) -> SelectionStamp | None:
    """A saved selection as a model's lineage records it (the selection store's meta); one that is gone keeps its id."""
    if not ref:
        return None
    try:
        meta = selection_meta(ws, ref)
    except UserError:
        return SelectionStamp(str(ref))
    return SelectionStamp(meta.key, meta.strategy, meta.budget, meta.model, meta.dc_name)


def mlm_phases_of(ws: Workspace, params: MlmParams) -> list[MlmPhase]:
    """The phases core.train.mlm.mlm_job runs for these params (core.recipes.modes), with the corpora each reads."""
    if params.train:
        refs = params.train if isinstance(params.train, list) else [params.train]
        return [MlmPhase("train", [c for c in (corpus_hash(ws, r) for r in refs) if c])]
    corpora = {"tc": corpus_hash(ws, params.tc), "dc": corpus_hash(ws, params.dc),
               "sc": {"name": f"selection:{params.selection}", "hash": str(params.selection)} if params.selection else None}
    return [MlmPhase(name, [corpora[r] for r in reads if corpora[r]]) for name, reads in phases_of(params.mode)]


def record_mlm(ws: Workspace, run_id: str, params: MlmParams, result: dict[str, Any], run_dir: Path,
               seconds: float, seed: int) -> RunEntry:
    """The lineage of a finished MLM job: beside its model, in its run folder and in the run index; `seed` is the
    one its resolved MlmConfig trained with."""
    lin = from_base(params.model)
    lin.mlm_phases += mlm_phases_of(ws, params)
    lin.selection = selection_info(ws, params.selection) or lin.selection
    lin.seed, lin.preset, lin.wall_seconds = seed, params.preset, seconds
    return record_run(ws, run_id, "mlm", lin, run_dir, JobResult.from_dict(result).out_dir)


def record_ner(ws: Workspace, run_id: str, *, model: str, train: str | None, dev: str | None, test: str | None,
               seed: int | None, preset: str | None, result: dict[str, Any], run_dir: Path, seconds: float,
               kind: str = "ner") -> RunEntry:
    """The lineage of a finished NER model (a "ner" job, or a self-trained one, `kind`): its base `model`,
    LC/DEV/TEST hashes, seed, preset and test F1."""
    lin = from_base(model)
    lin.lc, lin.dev, lin.test = (corpus_stamp(ws, r) for r in (train, dev, test))
    lin.seed, lin.preset, lin.wall_seconds = seed, preset, seconds
    outcome = JobResult.from_dict(result)
    return record_run(ws, run_id, kind, lin, run_dir, outcome.out_dir, f1=outcome.test_f1)


def model_preset(model_dir: str | Path, ws: Workspace | None = None, actor: Actor = LOCAL) -> str | None:
    """The training preset a NER model folder was made with: its lineage says, else its ner_config.json, else
    the params.json of the run that wrote it (RUN/model). None when unknown (a folder from elsewhere).
    Self-training compares against this model, so it must know its recipe. A folder typed by a signed-in `actor` is
    checked first (against `ws`), as every job setting is."""
    if actor != LOCAL:
        check_param_paths(actor, {"model": str(model_dir)}, ws.root if ws is not None else ".")
    folder = Path(model_dir)
    lin = read_lineage(folder) if folder.is_dir() else None
    if lin is not None and lin.preset:
        return lin.preset
    try:
        cfg = json.loads((folder / "ner_config.json").read_text("utf-8"))
        if cfg.get("preset"):
            return str(cfg["preset"])
        run = json.loads((folder.parent / "params.json").read_text("utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if run.get("kind") in ("ner", "selftrain", "experiment"):
        return str((run.get("params") or {}).get("preset") or DEFAULT_PRESET)
    return None


def describe_run(entry: RunEntry) -> dict[str, Any]:
    """A run (an index entry, as `get_run` returns it) in three tables, for the Runs page and the text
    of `runs show`: `facts` [(field, value)], `phases` [{phase, corpus, hash, sentences}] (every MLM
    phase of the model's history, in order) and `data` [{role, corpus, hash, sentences}] (LC/DEV/TEST)."""
    lin = entry.lineage or Lineage(base_model="-")
    f1, wall = entry.f1, lin.wall_seconds
    facts = [("run", entry.id), ("kind", entry.kind or "-"),
             ("test F1", f"{f1:.4f}" if isinstance(f1, (int, float)) else "-"), ("base model", lin.base_model),
             ("seed", "-" if lin.seed is None else str(lin.seed)), ("preset", lin.preset or "-"),
             ("wall time", f"{wall:.1f} s" if isinstance(wall, (int, float)) else "-")]
    if lin.selection:
        facts.append(("selection", lin.selection.label))
    if lin.parent:
        facts.append(("trained from", lin.parent))
    facts += [(name, folder) for name, folder in (("model folder", entry.model_dir), ("run folder", entry.run_dir)) if folder]
    phases = [{"phase": p.name, "corpus": c["name"], "hash": c["hash"], "sentences": p.sentences}
              for p in lin.mlm_phases for c in (p.corpora or [{"name": None, "hash": None}])]
    data = []
    for role, ref in (("LC", lin.lc), ("DEV", lin.dev), ("TEST", lin.test)):
        if ref:
            data.append({"role": role, "corpus": ref.name, "hash": ref.hash, "sentences": ref.size})
    return {"facts": facts, "phases": phases, "data": data}
