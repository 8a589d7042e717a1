"""The params of every job kind: one dataclass each, the one place a job setting and its default are declared.

A job function takes its kind's dataclass (`fn(params: NerParams, ctx: JobContext)`); the CLI's options take
their defaults from the same dataclass (`field_default`), the pages fill it in, and a submitted job stores it
with every default filled in, so a run's params.json says exactly what it ran with. Validation says which
field is unknown, missing or ill-typed, before anything runs. This module imports nothing heavy: validating
params never imports torch.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from core.errors import UserError
from core.recipes.configs import type_hints
from core.recipes.duration import parse_duration
from core.recipes.modes import mode_reads
from core.recipes.presets import DEFAULT_PRESET, PRESETS, experiment_settings
from core.recipes.selection_options import SelectionOptions, check_readers
from core.recipes.strategy_row import BASELINES, row_labels

SCHEMA_VERSION = 2

# A count or a ratio (core.recipes.budget.Budget). Text ("500", "0.1") is parsed when the job is submitted, by
# the one rule set, and stored as the number; the message names the field.
Amount = int | float


def amount_field(default: Any = dataclasses.MISSING, many: bool = False) -> Any:
    meta = {"amount": True, "many": many}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def config_field(trainer: str, default: Any = dataclasses.MISSING) -> Any:
    """A field holding overrides of a training recipe (core.recipes.configs.CONFIGS[trainer]) on top of the job's
    preset: checked at submit (names, types, ranges), and what core.runner.devices reads the memory key from."""
    meta = {"config": trainer}
    if default is dataclasses.MISSING:
        return field(default_factory=dict, metadata=meta)
    return field(default=default, metadata=meta)


def checked_field(check: Callable[[Any], Any], default: Any = None) -> Any:
    """A field whose value `check` parses at submit (a UserError says what is wrong), e.g. the selection options."""
    return field(default=default, metadata={"check": check})


def bounded(default: Any, at_least: float | None = None, above: float | None = None,
            at_most: float | None = None) -> Any:
    """A number field with the range its job accepts, refused at submit with the field's name (a fit sample of 0
    points or a top_k of 0 used to fail seconds into the job, or deep inside a library). None passes: unset."""
    return field(default=default, metadata={"range": (at_least, above, at_most)})


def choice(default: str, options: tuple[str, ...]) -> Any:
    """A text field with the values its job accepts, refused at submit with the field's name and the choices (a
    misspelt sampling mode, confidence measure or pooling failed minutes into the job, after a model had loaded)."""
    return field(default=default, metadata={"choices": options})


# the choices of the adaptation and embedding settings, named once (core.adapt and core.lm read them from here)
SAMPLINGS = ("entity", "context", "random-context", "mixed")  # which LC tokens augmentation may mask
ORDERS = ("independent", "conditional")  # every mask on the original sentence, or after earlier replacements
CRITERIA = ("top", "joint")  # the most probable candidate, or probability x edit distance
CONFIDENCE_MEASURES = ("c1", "c2")  # a NER prediction's confidence: CRF posterior, or the least sure tag's marginal
POOLINGS = ("mean", "model")  # a sentence embedding: mean of token vectors, or the model's own pooling


def check_threshold(value: Any) -> None:
    """Self-training's confidence threshold: 'auto' (the CER-optimal one on DEV) or a number in [0, 1]."""
    if value == "auto":
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise UserError(f"threshold must be 'auto' or a number in [0, 1], got {value!r}")


AUTO = "auto"  # parallel: as many cells at once as the cards' free memory fits (core.experiments.parallel)


def parse_parallel(value: int | str | None) -> int | str:
    """'auto' or a count >= 1 (the CLI's --parallel, the Runs page, ExperimentParams.parallel).

    >>> parse_parallel("auto"), parse_parallel("3"), parse_parallel(None)
    ('auto', 3, 1)
    """
    if value is None or value == "":
        return 1
    if str(value).strip().lower() == AUTO:
        return AUTO
    try:
        n = int(str(value).strip())
    except ValueError:
        n = 0
    if n < 1:
        raise UserError(f"parallel: give 'auto' or a number of cells at once (1 or more), got {value!r}")
    return n



def range_error(value: Any, limits: tuple[float | None, float | None, float | None]) -> str | None:
    """What is wrong with `value` for a bounded field's (at_least, above, at_most), or None."""
    at_least, above, at_most = limits
    if isinstance(value, (list, tuple)):  # a list field (seeds): each item in the range
        return next((f"item {wrong}" for v in value if (wrong := range_error(v, limits))), None)
    if value is None or isinstance(value, (str, bool)):
        return None
    for bad, words in ((at_least is not None and value < at_least, f"at least {at_least}"),
                       (above is not None and value <= above, f"above {above}"),
                       (at_most is not None and value > at_most, f"at most {at_most}")):
        if bad:
            return f"must be {words}, got {value!r}"
    return None


MAX_SEED = 2**32 - 1  # what every generator takes (numpy's legacy seed stops here; torch overflowed at 2**63)


def check_seeds(seeds: Sequence[int], what: str = "") -> None:
    """Seeds as every generator takes them, each once (two cells of one row and seed: the job ran them all, then its
    summary refused the pair); `what` names the field for a typed list (parse_seeds)."""
    prefix = f"{what}: " if what else ""
    if too_big := [s for s in seeds if s > MAX_SEED]:
        raise UserError(f"{prefix}seed {too_big[0]} is above {MAX_SEED:,}, the largest every random generator takes")
    if twice := sorted({s for s in seeds if list(seeds).count(s) > 1}):
        raise UserError(f"{prefix}seed {', '.join(map(str, twice))} is given twice: each seed once")


def seeds_field(default: list[int] | None = None) -> Any:
    """A list of seeds: each in [0, MAX_SEED] (numpy's generators refuse a negative one, deep inside a strategy, after
    the baselines had trained) and each once, refused at submit with the field's name."""
    return field(default_factory=lambda: list(default or [1]),
                 metadata={"range": (0, None, MAX_SEED), "check": check_seeds})


def config_fields(cls: type) -> tuple[str, ...]:
    """The fields of a params dataclass that hold a training config."""
    return tuple(f.name for f in dataclasses.fields(cls) if "config" in f.metadata)


@dataclass
class ImportParams:
    path: str
    role: str | None = None
    name: str | None = None
    format: str = "auto"
    overwrite: bool = False
    # the browser's file name when `path` is an upload's copy under the workspace's uploads/ (core.data.uploads):
    # messages and the corpus's source name it, and the copy goes once the import ends
    upload: str | None = None


# The similarity measures' names and settings, named here so a job is refused at submit (core.similarity.measures
# describes each measure under these keys; a test holds the two equal)
SIMILARITY_MEASURES = ("tvc", "tvcc", "ppl", "jsd", "wvv", "ttr")
TVCC_METHODS = ("auto", "spacy", "approx")
MAX_NGRAM_ORDER = 6


def measure_list(measures: list[str] | tuple[str, ...] | str) -> tuple[str, ...]:
    """'tvc, JSD' or ['tvc', 'jsd'] -> ('tvc', 'jsd')."""
    items = measures.split(",") if isinstance(measures, str) else measures
    return tuple(str(m).strip().lower() for m in items if str(m).strip())


def check_similarity_settings(measures: tuple[str, ...], order: int, jsd_order: int, wvv_words: str,
                              tvcc_method: str) -> None:
    """The measure settings a job and core.similarity.measures.SimilarityParams accept (UserError naming the field)."""
    unknown = [m for m in measures if m not in SIMILARITY_MEASURES]
    if unknown or not measures:
        raise UserError(f"unknown measure(s) {', '.join(unknown) or '(none given)'}: choose from "
                        f"{', '.join(SIMILARITY_MEASURES)}")
    for name, value in (("order", order), ("jsd_order", jsd_order)):
        if not 1 <= value <= MAX_NGRAM_ORDER:
            raise UserError(f"{name}: n-gram order must be between 1 and {MAX_NGRAM_ORDER}, got {value}")
    if wvv_words not in ("shared", "source"):
        raise UserError(f"wvv_words must be 'shared' or 'source', got {wvv_words!r}")
    if tvcc_method not in TVCC_METHODS:
        raise UserError(f"tvcc method must be one of {', '.join(TVCC_METHODS)}, got {tvcc_method!r}")


@dataclass
class SimilarityJobParams:
    """The job's corpora and the measure settings; core.similarity.measures.SimilarityParams is the validated,
    hashable form of the settings and takes its defaults from here."""

    sources: list[str]
    targets: list[str]
    measures: list[str] | str = field(default_factory=lambda: ["tvc", "tvcc", "ppl", "jsd", "wvv", "ttr"])
    order: int = bounded(3, at_least=1)  # n-gram order of the PPL model
    jsd_order: int = bounded(3, at_least=1)  # 1..jsd_order-grams pooled for JSD
    subsample_tokens: int | None = bounded(None, at_least=1)  # sub-corpora of this many source tokens (size control) ...
    subsample_k: int = bounded(1, at_least=1)  # ... this many of them, measures averaged
    seed: int = bounded(0, at_least=0)
    tvcc_method: str = "auto"  # content words: auto, spacy, approx
    wvv_dim: int = bounded(100, at_least=1)  # skip-gram dimensions for WVV
    wvv_window: int = bounded(5, at_least=1)
    wvv_epochs: int = bounded(5, at_least=1)
    wvv_min_count: int = bounded(1, at_least=1)
    wvv_words: str = "shared"  # WVV over source words shared with the target, or all source words ("source")
    histogram: dict[str, Any] | None = None  # {"tc", "dc"}: also DC's per-sentence PPL histogram under a TC model

    def __post_init__(self) -> None:  # refused at submit, not after the corpora are read
        if isinstance(self.measures, (str, list)) and all(isinstance(m, str) for m in self.measures):
            check_similarity_settings(measure_list(self.measures), self.order, self.jsd_order, self.wvv_words,
                                      self.tvcc_method)


@dataclass
class EmbedParams:
    corpus: str
    model: str = "default"
    pooling: str = choice("mean", POOLINGS)
    device: str = "auto"
    precision: str = "auto"
    chunk_size: int | None = bounded(None, at_least=1)
    ray: str | None = None


@dataclass
class SelectParams:
    tc: str
    dc: str
    strategy: str
    budget: Amount = amount_field()
    model: str | None = "default"
    model2: str | None = None
    ner_model: str | None = None
    target_domain: str | None = None
    seed: int = bounded(0, at_least=0)
    options: dict[str, Any] | None = checked_field(SelectionOptions.parse)  # core.recipes.selection_options
    ray: str | None = None

    def __post_init__(self) -> None:  # an unknown strategy, or an option it does not read, is refused at submit
        try:
            check_readers(self.strategy, self.options)
        except UserError as exc:
            raise UserError(f"select params: {exc}") from None


@dataclass
class ProjectParams:
    """The map of a corpus set (or of a selection's TC and DC): UMAP fitted on at most `fit_points`
    sentences, the rest placed on the fitted map (core.selection.atlas)."""
    selection: str | None = None
    corpora: list[str] | None = None
    model: str = "default"
    fit_points: int = bounded(20_000, at_least=4)  # UMAP needs a few neighbours
    seed: int = bounded(0, at_least=0)


@dataclass
class MlmParams:
    train: list[str] | str | None = None  # plain continued pretraining on these corpora, or ...
    mode: str = "tc+sc"  # ... one of core.recipes.modes.MODES over tc / selection / dc
    tc: str | None = "tc"
    selection: str | None = None
    dc: str | None = None
    model: str = "default"
    preset: str = DEFAULT_PRESET
    config: dict[str, Any] = config_field("mlm")
    out: str | None = None

    def __post_init__(self) -> None:  # a mode whose corpora are not given fails at submit, not in the job
        if self.train:
            return
        reads = mode_reads(self.mode)
        missing = [what for what, needed, given in (("tc", "tc", self.tc), ("selection", "sc", self.selection),
                                                     ("dc", "dc", self.dc)) if needed in reads and not given]
        if missing:
            raise UserError(f"mlm params: mode {self.mode!r} reads {', '.join(missing)}: give "
                            + " and ".join(missing) + " (or train: corpora for plain continued pretraining)")


@dataclass
class PickParams:
    """Checkpoint selection (core.train.checkpoint_pick): the base encoder and an MLM run's snapshots by DEV F1."""

    snapshots: str | None = None  # an MLM run's RUN_DIR/phase-NAME/snapshots
    final: str | None = None  # the MLM run's final model folder
    base: str = "default"  # the encoder the MLM run started from
    lc: str = "lc"
    dev: str = "dev"
    preset: str = DEFAULT_PRESET  # the probe's NER recipe (epochs capped)
    epochs: int = bounded(8, at_least=1)  # at most this many NER epochs per candidate (the probe is a short fine-tune)
    min_gain: float = 0.0
    seed: int = bounded(1, at_least=0)


@dataclass
class NerParams:
    train: str = "lc"
    dev: str | None = None
    test: str | None = None
    model: str = "default"
    preset: str = DEFAULT_PRESET
    config: dict[str, Any] = config_field("ner")
    out: str | None = None  # None: the run's own folder
    overwrite: bool = False  # an `out` folder that holds files is replaced only when asked (check_out_folder)


@dataclass
class PredictParams:
    model: str
    corpus: str
    batch_size: int = bounded(32, at_least=1)
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
    seeds: list[int] = seeds_field()
    budget: Amount | None = amount_field(None)  # one SC size (count or ratio of DC; None: |TC|) ...
    budgets: list[Amount] | None = amount_field(None, many=True)  # ... or a sweep of them (Fig. 2); not both
    # LC sub-samples (counts or ratios of LC; None: all), drawn with the seed (Fig. 4)
    lc_sizes: list[Amount] | None = amount_field(None, many=True)
    model: str = "default"
    preset: str = DEFAULT_PRESET
    mlm_config: dict[str, Any] | None = config_field("mlm", None)
    ner_config: dict[str, Any] | None = config_field("ner", None)
    domain: str | None = None
    # DC sentences duplicating TEST, and DEV, are always dropped before any MLM (core.experiments.guard); this also drops
    # DC's DEV duplicates where allow_dev_in_mlm keeps DEV text in TC
    exclude_leaked: bool = False
    # DEV text in TC refuses the run (DEV drives early stopping and the pick); True runs it anyway, recorded with the result
    allow_dev_in_mlm: bool = False
    # keep this many MLM snapshots per cell and fine-tune NER from the one (or the base encoder) a short DEV-F1 probe
    # scores best (core.train.checkpoint_pick), so a pretraining phase never silently hands on a worse encoder; 0: off;
    # None: the preset's (core.recipes.presets.EXPERIMENT, pick_defaults), filled in when the job is submitted
    pick_checkpoint: int | None = None
    # a share of every MLM corpus replayed from DC (random sentences: general text for the encoder to keep; issue 26)
    rehearsal_share: float = 0.0
    # cells at once (core.experiments.parallel): a count, or "auto" (as many as the cards' free memory fits; 1 on CPU);
    # how a run is spread, not what it computes: not part of the recipe
    parallel: int | str = 1
    # run the cells as Ray tasks on this cluster ("local", "local:N", or an address; the workspace on a shared disk)
    ray: str | None = None
    # seconds from the run's start (each start: a resumed run gets it again): no cell starts whose expected clock would
    # end past it, and the run stops with its finished cells kept (core.experiments.cell_clock); not part of the recipe
    time_limit: float | str | None = None  # '2h', '90m', or seconds; seconds once checked

    def __post_init__(self) -> None:  # out-of-range settings are refused when the job is submitted, not minutes in
        # one name per row: 'Cosine@B1' and 'cosine@b1' are the same cells; a bad option is refused here
        self.strategies = row_labels(self.strategies)
        self.parallel = parse_parallel(self.parallel)
        if unknown := [b for b in self.baselines if str(b).strip() and str(b).strip().lower() not in BASELINES]:
            raise UserError(f"experiment params: unknown baseline(s) {', '.join(map(repr, unknown))}: expected "
                            f"{', '.join(BASELINES)}")
        self.baselines = row_labels(self.baselines, keep=BASELINES)
        if not self.seeds:
            raise UserError("experiment params: seeds is empty: give at least one seed")
        if not self.strategies and not self.baselines:  # it ran nothing and failed at the end
            raise UserError("experiment params: no row to run: give strategies, baselines or both")
        if self.pick_checkpoint is None and self.preset in PRESETS:  # an unknown preset is refused by its own check
            self.pick_checkpoint = experiment_settings(self.preset)["pick_checkpoint"]
        if self.pick_checkpoint is not None and self.pick_checkpoint < 0:
            raise UserError(f"experiment params: pick_checkpoint is the number of MLM snapshots to keep per cell "
                            f"(0: no pick), got {self.pick_checkpoint}")
        if self.budget is not None and self.budgets and [self.budget] != list(self.budgets):
            raise UserError("experiment params: give either budget (one SC size) or budgets (a sweep), not both")
        # one request, one set of params, whichever form sent it (the Runs page sends budgets=[x], the CLI budget=x;
        # exclude_leaked changes nothing without allow_dev_in_mlm): else two runs alike were two recipes and tasks
        if self.budgets and len(self.budgets) == 1:
            self.budget, self.budgets = self.budgets[0], None
        self.exclude_leaked = bool(self.exclude_leaked and self.allow_dev_in_mlm)
        if not 0 <= self.rehearsal_share < 1:
            raise UserError(f"experiment params: rehearsal_share must be in [0, 1), got {self.rehearsal_share}")
        if str(self.parallel).strip().lower() != "auto" and not (str(self.parallel).strip().isdigit() and int(self.parallel) >= 1):
            raise UserError(f"experiment params: parallel is 'auto' or a number of cells at once (1 or more), got {self.parallel!r}")
        self.time_limit = parse_duration(self.time_limit, "experiment params: time_limit")
        if self.time_limit is not None and self.ray:
            raise UserError("experiment params: a time limit cannot be kept with Ray, which is handed every cell at once; "
                            "use parallel workers (parallel) or no time limit")


@dataclass
class SelftrainParams:
    model: str
    lc: str
    dev: str
    unlabeled: str | None = None
    selection: str | None = None
    test: str | None = None
    measure: str = choice("c1", CONFIDENCE_MEASURES)
    threshold: float | str = field(default="auto", metadata={"check": check_threshold})
    ratio: float = bounded(1.0, above=0)  # k = ratio x |LC|
    preset: str = DEFAULT_PRESET
    seed: int = bounded(1, at_least=0)
    config: dict[str, Any] | None = config_field("ner", None)
    out: str | None = None


@dataclass
class AugmentSettings:
    """How MLM augmentation (core.adapt.augment, Tokarchuk et al. 2021 Section 4) rewrites LC: the one
    declaration of these settings, read by `augment_corpus`, the job and the CLI."""

    sampling: str = choice("entity", SAMPLINGS)  # which tokens may be masked: entity, context, random-context, mixed
    order: str = choice("independent", ORDERS)  # independent: every mask on the original; conditional: after earlier ones
    criterion: str = choice("top", CRITERIA)  # top: most probable candidate; joint: probability x edit distance
    min_token_prob: float = bounded(0.0, at_least=0, at_most=1)  # a candidate below this MLM probability is never used
    min_confidence: float = bounded(0.0, at_least=0, at_most=1)  # generated sentences below it dropped (needs a NER model)
    measure: str = choice("c1", CONFIDENCE_MEASURES)  # which NER confidence min_confidence applies to
    random_rate: float = bounded(0.15, above=0, at_most=1)  # share of O tokens masked by "random-context" (BERT's masking rate)
    mixed_max_rate: float = bounded(0.3, above=0, at_most=1)  # "mixed" masks between 1 and this share of the tokens
    top_k: int = bounded(5, at_least=1)  # candidates per mask, as in the paper
    per_sentence: int = bounded(1, at_least=1)  # generated variants per LC sentence
    seed: int = bounded(0, at_least=0)
    batch_size: int = bounded(32, at_least=1)


@dataclass(kw_only=True)
class AugmentParams(AugmentSettings):
    model: str  # the masked LM (an MLM run's model folder)
    lc: str | None = "lc"
    ner_model: str | None = None  # for min_confidence
    device: str = "auto"
    out: str | None = None  # default: RUN/augmented.conll
    check_tc: str | None = "tc"  # corpus for the MLM accuracy check (TC: B1's training text, a floor; None: skip it)
    allow_degenerate: bool = False  # write the output even when the quality gate finds the MLM degenerate


@dataclass
class CompareSourcesParams:
    sources: list[str]
    lc: str = "lc"
    dev: str = "dev"
    test: str = "test"
    target: str = "tc"
    measures: list[str] = field(default_factory=lambda: ["tvc", "tvcc", "ppl", "jsd", "wvv"])
    seeds: list[int] = seeds_field()
    preset: str = DEFAULT_PRESET
    model: str = "default"
    out: str | None = None
    # a source holding DEV text is refused (DEV drives early stopping); True runs it anyway, recorded with the result
    allow_dev_in_mlm: bool = False


@dataclass
class SleepParams:
    steps: int = bounded(10, at_least=0)
    seconds: float = bounded(0.1, at_least=0)


# --------------------------------------------------------------------------- validation


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is tuple:
        return f"a list of {len(typing.get_args(tp))} ({', '.join(_type_name(a) for a in typing.get_args(tp))})"
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
    if origin is tuple:
        items = typing.get_args(tp)
        return isinstance(value, (list, tuple)) and len(value) == len(items) and all(map(_check, value, items))
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, tp)


def validate_params(cls: type, params: dict[str, Any] | Any, kind: str = "") -> Any:
    """`cls` (a params dataclass) from a dict; a UserError names an unknown, missing or ill-typed field
    and what was expected."""
    kind = kind or cls.__name__
    if isinstance(params, cls):
        params = dataclasses.asdict(params)
    if not isinstance(params, dict):
        raise UserError(f"{kind} params: expected an object of fields, got {type(params).__name__}")
    hints = type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in params if k not in fields]
    if unknown:
        raise UserError(f"{kind} params: unknown field(s) {', '.join(map(repr, unknown))}; "
                        f"expected some of {', '.join(fields)}")
    missing = [n for n, f in fields.items() if n not in params and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise UserError(f"{kind} params: missing required field(s) {', '.join(map(repr, missing))}")
    params = {**params, **_parsed_amounts(fields, params, kind)}
    for name, value in params.items():
        if not _check(value, hints[name]):
            raise UserError(f"{kind} params: field {name!r} must be {_type_name(hints[name])}, got {value!r}")
    if "preset" in params and params["preset"] not in PRESETS:
        raise UserError(f"{kind} params: field 'preset' must be one of {', '.join(PRESETS)}, got {params['preset']!r}")
    preset = params["preset"] if "preset" in params else DEFAULT_PRESET
    for name, value in params.items():
        if "range" in fields[name].metadata and (wrong := range_error(value, fields[name].metadata["range"])):
            raise UserError(f"{kind} params: field {name!r} {wrong}")
        if (options := fields[name].metadata.get("choices")) and value not in options:
            raise UserError(f"{kind} params: field {name!r} must be one of {', '.join(options)}, got {value!r}")
        if "check" in fields[name].metadata and value is not None:
            try:
                fields[name].metadata["check"](value)
            except UserError as exc:
                raise UserError(f"{kind} params: field {name!r}: {exc}") from None
        if "config" in fields[name].metadata and value:
            check_config(fields[name].metadata["config"], value, preset, f"{kind} params: field {name!r}")
    return cls(**{k: list(v) if isinstance(v, tuple) else v for k, v in params.items()})


def check_config(trainer: str, overrides: dict[str, Any], preset: str, what: str) -> None:
    """A config dict as the job will read it (the preset's settings with these on top): an unknown setting, a value
    of the wrong type or out of range is refused here, at submit, not minutes into the job."""
    from core.recipes.configs import CONFIGS, check_settings
    from core.recipes.presets import mlm_settings, ner_settings

    cls = CONFIGS[trainer]
    try:
        check_settings(cls, overrides, trainer.upper())
        hints = type_hints(cls)
        for key, value in overrides.items():
            if value is not None and not _check(value, hints[key]):
                raise UserError(f"{key} must be {_type_name(hints[key])}, got {value!r}")
        settings = (mlm_settings if trainer == "mlm" else ner_settings)(preset, **overrides)
        cls.from_dict(settings)
    except UserError as exc:
        raise UserError(f"{what}: {exc}") from None


def _parsed_amounts(fields: dict[str, dataclasses.Field], params: dict[str, Any], kind: str) -> dict[str, Any]:
    """The count-or-ratio fields parsed by core.recipes.budget.Budget (text to numbers, bad values refused)."""
    from core.recipes.budget import Budget

    out: dict[str, Any] = {}
    for name, value in params.items():
        f = fields[name]
        if "amount" not in f.metadata or value is None:
            continue
        what = f"{kind} params: field {name!r}"
        if f.metadata["many"]:
            items = value.split(",") if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)):
                raise UserError(f"{what} must be a list of counts or ratios, got {value!r}")
            out[name] = [b.value for b in Budget.parse_list(list(items), what)] or None
        else:
            out[name] = Budget.parse(value, what).value
    return out


def field_default(cls: type, name: str) -> Any:
    """The default of one field of a params dataclass: what a CLI option defaults to, so the CLI and a job
    launched without that option run the same thing."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
            raise KeyError(f"{cls.__name__}.{name} has no default")
    raise KeyError(f"{cls.__name__} has no field {name!r}")


MODEL_FIELDS = ("model", "model2", "ner_model")  # params naming a model: "default", a Hugging Face id, or a folder


def check_out_folder(kind: str, params: Any) -> None:
    """An output folder given by path that already holds files is refused unless `overwrite` says to replace it: a
    job would otherwise put its model over another run's, whose lineage and F1 would then describe the new one."""
    out = getattr(params, "out", None)
    if out and hasattr(params, "overwrite") and not params.overwrite:
        folder = Path(out).expanduser()
        if folder.is_dir() and any(folder.iterdir()):
            raise UserError(f"{kind} params: output folder {str(folder)!r} already exists and is not empty: choose "
                            "another out, or set overwrite (--overwrite) to replace it")


def check_model_folders(kind: str, params: Any) -> None:
    """A model given as a folder path (absolute, ./, ../ or ~) that does not exist is refused when the job is
    submitted, naming the field, instead of failing seconds into the job. Hugging Face ids ("org/name") pass."""
    for name in MODEL_FIELDS:
        value = getattr(params, name, None)
        if isinstance(value, str) and value.startswith(("/", "./", "../", "~")):
            folder = Path(value).expanduser()
            if not folder.is_dir():
                raise UserError(f"{kind} params: {name} {value!r} is not a folder on this machine (a model folder, "
                                "'default', or a Hugging Face id)")
