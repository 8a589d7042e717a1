"""Typed job kinds: for each kind, its function, a params dataclass and a result dataclass.

`core.runner.jobs.JOB_KINDS` is built from `KINDS`. Params are validated when a job is submitted (or
run inline by the CLI): an unknown or ill-typed field is a UserError naming the field, before
anything runs; the stored params are the dataclass with every default filled in, so a run's
params.json says exactly what it ran with (one default per field, here, instead of one per
`params.get(...)` in each job function). Job functions keep their `fn(params: dict, ctx)`
signature: they receive that filled-in dict.

Rows are stored with `SCHEMA_VERSION`; rows from before it (plain params dicts) still load,
validated leniently, and a row that no longer validates says why (`Job.params_error`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Union  # noqa: F401 - Union: get_origin comparisons

from core.errors import UserError

SCHEMA_VERSION = 2
DEFAULT_PRESET = "demo"  # the one default preset of jobs, CLI commands and pages ("paper" is chosen explicitly)
# The training presets, cheapest first: the one list CLI choices, --help and page selectboxes read. Each name is a
# recipe in both core.train.mlm.PRESETS and core.train.ner.PRESETS (tests/test_presets.py checks the three agree); kept here as
# plain names so validating a job's params never imports torch.
PRESETS = ("tiny", "demo", "study", "paper")
# What each preset is for and roughly what it costs on 2 CPU cores (approximate; the demo figures were measured alone
# on 2 free cores with `python -m core mlm|ner train --preset demo` on the generated demo, seed 1).
PRESET_NOTES: dict[str, dict[str, str]] = {
    "mlm": {
        "tiny": "4 steps, seconds: checks a setup end to end",
        "demo": "200 steps of 16 x 64-token blocks at lr 5e-4, ~3.5 min: on the demo TC a fresh MLM head reaches 0.57 "
                "held-out masked-word accuracy (30 steps: every entity became \"the\") and `augment` passes its quality gate",
        "study": "400 steps of 16 x 128-token blocks, ~6.5 min alone on 2 free cores with bf16 (~10 min without): "
                 "a fresh MLM head learns (held-out TC masked-word accuracy well above the base encoder's)",
        "paper": "5 epochs, batch 64: the seed paper's; hours on CPU for a large corpus",
    },
    "ner": {
        "tiny": "3 epochs, seconds: checks a setup end to end",
        "demo": "<= 20 epochs (patience 5) on a 100-sentence dev subset, ~1.5 min for the demo's 150 LC sentences: "
                "demo test F1 0.89",
        "study": "to convergence (<= 60 epochs, patience 8 at min gain 0.002, full DEV), ~2-4 min for 100 sentences",
        "paper": "lr 2e-5, up to 200 epochs (patience 10): the seed paper's, an hour or more on CPU",
    },
}
PRESET_NOTES["experiment"] = {
    "tiny": "seconds per cell",
    "demo": "~5 min per cell on the demo (200 MLM steps + NER)",
    "study": "~9 min per MLM+NER cell alone on 2 free CPU cores with bf16 (~12-14 min without; more while other jobs "
             "run), ~1.5 min on an H100; ~2-4 min for `none` (CrossNER music size; see scripts/crossner_study.py)",
    "paper": "hours per cell",
}


def preset_help(command: str) -> str:
    """One --help / tooltip line listing every preset of `command` (mlm, ner, experiment) with its cost."""
    notes = PRESET_NOTES[command]
    return "; ".join(f"{name}: {notes[name]}" for name in PRESETS) + " (times approximate, 2 CPU cores)"

Budget = int | float | str | None  # a count, a ratio of DC, or the same as text ("500", "0.1")


# --------------------------------------------------------------------------- params


@dataclass
class ImportParams:
    path: str
    role: str | None = None
    name: str | None = None
    format: str = "auto"
    overwrite: bool = False


@dataclass
class SimilarityJobParams:
    sources: list[str]
    targets: list[str]
    measures: list[str] | str = field(default_factory=lambda: ["tvc", "tvcc", "ppl", "jsd", "wvv", "ttr"])
    order: int = 3
    jsd_order: int = 3
    subsample_tokens: int | None = None
    subsample_k: int = 1
    seed: int = 0
    tvcc_method: str = "auto"
    wvv_dim: int = 100
    wvv_window: int = 5
    wvv_epochs: int = 5
    wvv_min_count: int = 1
    wvv_words: str = "shared"
    histogram: dict[str, Any] | None = None


@dataclass
class EmbedParams:
    corpus: str
    model: str = "default"
    pooling: str = "mean"
    device: str = "auto"
    precision: str = "auto"
    chunk_size: int | None = None
    ray: str | None = None


@dataclass
class SelectParams:
    tc: str
    dc: str
    strategy: str
    budget: Budget
    model: str | None = "default"
    model2: str | None = None
    ner_model: str | None = None
    target_domain: str | None = None
    seed: int = 0
    options: dict[str, Any] | None = None
    ray: str | None = None


@dataclass
class ProjectParams:
    selection: str | None = None
    corpora: list[str] | None = None
    model: str = "default"
    max_points: int | None = None
    seed: int = 0


@dataclass
class MlmParams:
    train: list[str] | str | None = None  # plain continued pretraining on these corpora, or ...
    mode: str = "tc+sc"  # ... one of core.train.mlm.MODES over tc / selection / dc
    tc: str | None = "tc"
    selection: str | None = None
    dc: str | None = None
    model: str = "default"
    preset: str = DEFAULT_PRESET
    config: dict[str, Any] = field(default_factory=dict)
    out: str | None = None


@dataclass
class NerParams:
    train: str = "lc"
    dev: str | None = None
    test: str | None = None
    model: str = "default"
    preset: str = DEFAULT_PRESET
    config: dict[str, Any] = field(default_factory=dict)
    out: str | None = None


@dataclass
class PredictParams:
    model: str
    corpus: str
    batch_size: int = 32
    out: str | None = None


@dataclass
class ExperimentParams:
    tc: str = "tc"
    dc: str = "dc"
    lc: str = "lc"
    dev: str = "dev"
    test: str = "test"
    strategies: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=lambda: ["none", "tapt", "dapt", "tapt+dapt"])
    seeds: list[int] = field(default_factory=lambda: [1])
    budget: Budget = None  # one SC size (count or ratio of DC; None: |TC|) ...
    budgets: list[int | float | str] | None = None  # ... or a sweep of them (Fig. 2); not both
    lc_sizes: list[int | float | str] | None = None  # LC sub-samples (counts or ratios of LC; None: all), drawn with the seed (Fig. 4)
    model: str = "default"
    preset: str = DEFAULT_PRESET
    mlm_config: dict[str, Any] | None = None
    ner_config: dict[str, Any] | None = None
    domain: str | None = None


@dataclass
class SelftrainParams:
    model: str
    lc: str
    dev: str
    unlabeled: str | None = None
    selection: str | None = None
    test: str | None = None
    measure: str = "c1"
    threshold: float | str = "auto"
    ratio: float = 1.0
    preset: str = DEFAULT_PRESET
    seed: int = 1
    config: dict[str, Any] | None = None
    out: str | None = None


@dataclass
class AugmentParams:
    model: str
    lc: str | None = "lc"
    sampling: str = "entity"
    order: str = "independent"
    criterion: str = "top"
    min_token_prob: float = 0.0
    min_confidence: float = 0.0
    measure: str = "c1"
    random_rate: float = 0.15
    mixed_max_rate: float = 0.3
    top_k: int = 5
    per_sentence: int = 1
    seed: int = 0
    batch_size: int = 32
    ner_model: str | None = None
    device: str = "auto"
    out: str | None = None
    check_tc: str | None = "tc"  # held-out corpus for the MLM accuracy check (None: skip it)
    allow_degenerate: bool = False  # write the output even when the quality gate finds the MLM degenerate


@dataclass
class CompareSourcesParams:
    sources: list[str]
    lc: str = "lc"
    dev: str = "dev"
    test: str = "test"
    target: str = "tc"
    measures: list[str] = field(default_factory=lambda: ["tvc", "tvcc", "ppl", "jsd", "wvv"])
    seeds: list[int] = field(default_factory=lambda: [1])
    preset: str = DEFAULT_PRESET
    model: str = "default"
    out: str | None = None


@dataclass
class SleepParams:
    steps: int = 10
    seconds: float = 0.1


# --------------------------------------------------------------------------- results (the fields callers read; others are kept)


@dataclass
class ImportResult:
    name: str = ""
    sentences: int = 0
    tokens: int = 0
    hash: str = ""


@dataclass
class SimilarityResult:
    sources: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    measures: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class EmbedResult:
    sentences: int | None = None
    dim: int | None = None


@dataclass
class SelectResult:
    key: str | None = None
    strategy: str | None = None
    selected: int | None = None
    dc_size: int | None = None


@dataclass
class ProjectResult:
    points: int | None = None


@dataclass
class MlmResult:
    out_dir: str = ""
    steps: int = 0
    phases: list[dict[str, Any]] = field(default_factory=list)
    fresh_head: bool = False


@dataclass
class NerResult:
    out_dir: str = ""
    steps: int = 0
    epochs_run: int = 0
    best_dev_f1: float | None = None
    test: dict[str, Any] | None = None


@dataclass
class PredictResult:
    sentences: int = 0
    entities: int = 0
    path: str = ""


@dataclass
class ExperimentResult:
    domain: str | None = None
    rows: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)  # each: row, seed, f1, budget, lc_size, mlm_seconds, run, ...
    summary: dict[str, Any] = field(default_factory=dict)
    budgets: list[int] = field(default_factory=list)  # SC sentences of the strategy rows (a sweep: Fig. 2)
    lc_sizes: list[int] = field(default_factory=list)  # LC sentences per cell (a sweep: Fig. 4)


@dataclass
class CompareSourcesResult:
    sources: list[dict[str, Any]] = field(default_factory=list)
    baseline_f1: float | None = None
    correlation: dict[str, Any] = field(default_factory=dict)
    target: str | None = None


@dataclass
class GenericResult:
    pass


@dataclass(frozen=True)
class JobKind:
    """One kind of job: where its function lives ("module:function", imported lazily so the app
    starts fast), what it takes and what it returns."""

    name: str
    function: str
    params: type
    result: type


KINDS: dict[str, JobKind] = {k.name: k for k in (
    JobKind("import", "core.data.workspace:import_job", ImportParams, ImportResult),
    JobKind("similarity", "core.lm.similarity:similarity_job", SimilarityJobParams, SimilarityResult),
    JobKind("embed", "core.lm.embed:embed_job", EmbedParams, EmbedResult),
    JobKind("select", "core.selection.select:selection_job", SelectParams, SelectResult),
    JobKind("project", "core.selection.projection:projection_job", ProjectParams, ProjectResult),
    JobKind("mlm", "core.train.mlm:mlm_job", MlmParams, MlmResult),
    JobKind("ner", "core.train.ner:ner_train_job", NerParams, NerResult),
    JobKind("predict", "core.train.ner:ner_predict_job", PredictParams, PredictResult),
    JobKind("experiment", "core.experiments.experiment:experiment_job", ExperimentParams, ExperimentResult),
    JobKind("compare-sources", "core.experiments.compare:compare_sources_job", CompareSourcesParams, CompareSourcesResult),
    JobKind("selftrain", "core.adapt.augment:selftrain_job", SelftrainParams, GenericResult),
    JobKind("augment", "core.adapt.augment:augment_job", AugmentParams, GenericResult),
    JobKind("sleep", "core.runner.jobs:sleep_job", SleepParams, GenericResult),  # for tests and for checking the runner on a new machine
)}


# --------------------------------------------------------------------------- validation


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        return {list: "a list", dict: "an object"}.get(origin, str(origin))
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false"}.get(tp, getattr(tp, "__name__", str(tp)))


def _check(value: Any, tp: Any) -> bool:
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return any(_check(value, a) for a in typing.get_args(tp))
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return isinstance(value, (list, tuple)) and all(_check(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, tp)


def validate_params(kind: str, params: dict[str, Any] | Any) -> Any:
    """The params dataclass of `kind` from a dict; a UserError names an unknown, missing or
    ill-typed field and what was expected."""
    if kind not in KINDS:
        raise UserError(f"unknown job kind {kind!r}: expected one of {', '.join(sorted(KINDS))}")
    cls = KINDS[kind].params
    if isinstance(params, cls):
        return params
    if not isinstance(params, dict):
        raise UserError(f"{kind} params: expected an object of fields, got {type(params).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in params if k not in fields]
    if unknown:
        raise UserError(f"{kind} params: unknown field(s) {', '.join(map(repr, unknown))}; "
                        f"expected some of {', '.join(fields)}")
    missing = [n for n, f in fields.items() if n not in params and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise UserError(f"{kind} params: missing required field(s) {', '.join(map(repr, missing))}")
    for name, value in params.items():
        if not _check(value, hints[name]):
            raise UserError(f"{kind} params: field {name!r} must be {_type_name(hints[name])}, got {value!r}")
    if "preset" in params and params["preset"] not in PRESETS:
        raise UserError(f"{kind} params: field 'preset' must be one of {', '.join(PRESETS)}, got {params['preset']!r}")
    return cls(**{k: list(v) if isinstance(v, tuple) else v for k, v in params.items()})


def params_dict(kind: str, params: dict[str, Any] | Any) -> dict[str, Any]:
    """Validated params with every default filled in: what is stored and what the job function gets."""
    return dataclasses.asdict(validate_params(kind, params))


def result_of(kind: str, result: dict[str, Any] | None) -> Any:
    """A job's result as its kind's dataclass (typed access to the fields callers read); fields
    the dataclass does not declare stay in the stored JSON and in `Job.result`."""
    cls = KINDS[kind].result if kind in KINDS else GenericResult
    if not result:
        return cls()
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in result.items() if k in names})


__all__ = ["DEFAULT_PRESET", "KINDS", "PRESETS", "PRESET_NOTES", "SCHEMA_VERSION", "JobKind", "params_dict", "preset_help", "result_of",
           "validate_params"]
