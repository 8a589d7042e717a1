"""Every job kind, one row each: its function, params dataclass, lane, readable label, the inputs that
tell two jobs apart, and what it records. The runner, the job names on the pages and in `jobs list`, the
lanes and the CLI all read this table; a kind is added by adding a row (tests/test_kinds.py checks every
row's function takes its params dataclass).

>>> KINDS["ner"].label, KINDS["ner"].lane
('NER training', 'training')
>>> lane("select")
'interactive'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import UserError
from core.runner import params as p


@dataclass(frozen=True)
class JobKind:
    name: str
    function: str  # "module:function", imported lazily so the app starts fast and validation never imports torch
    params: type  # the params dataclass the function takes
    lane: str  # "interactive" (exploring: never waits behind training) or "training"
    label: str  # how a person reads the kind: "NER training"
    inputs: tuple[str, ...]  # the params that tell two jobs of this kind apart, in reading order
    records: str  # what a finished job leaves behind besides result.json (docs, the Runs page)
    encoder_field: str = "model"  # the param naming the encoder the job loads (its memory key)

    @property
    def config_fields(self) -> tuple[str, ...]:
        """The params fields holding a training config (batch_size, grad_accum), declared on the params dataclass
        (core.runner.params.config_field): its memory key, and what the runner doubles grad_accum in after the
        job ran out of GPU memory (core.runner.devices); () for kinds that do not train."""
        return p.config_fields(self.params)


KINDS: dict[str, JobKind] = {k.name: k for k in (
    JobKind("import", "core.runner.import_job:import_job", p.ImportParams, "interactive", "Import",
            ("upload", "path", "name", "role"), "a workspace corpus (Parquet + stats)"),
    JobKind("similarity", "core.similarity.matrix:similarity_job", p.SimilarityJobParams, "interactive", "Similarity",
            ("sources", "targets", "measures"), "cached measure values per corpus pair"),
    JobKind("embed", "core.lm.embed:embed_job", p.EmbedParams, "interactive", "Embedding",
            ("corpus", "model"), "a float16 embedding cache"),
    JobKind("select", "core.selection.strategies:selection_job", p.SelectParams, "interactive", "Selection",
            ("strategy", "tc", "dc", "budget"), "a saved selection (scores, order, meta)"),
    JobKind("project", "core.selection.atlas:atlas_job", p.ProjectParams, "interactive", "Map",
            ("corpora", "selection", "model"), "the map of a corpus set, computed once"),
    JobKind("predict", "core.train.ner_predict:ner_predict_job", p.PredictParams, "interactive", "Prediction",
            ("model", "corpus"), "predictions (spans, c1, c2) as JSON lines"),
    JobKind("mlm", "core.train.mlm:mlm_job", p.MlmParams, "training", "MLM pretraining",
            ("mode", "tc", "dc", "selection", "model", "preset"), "a model folder with its lineage"),
    JobKind("pick-checkpoint", "core.train.checkpoint_pick:pick_job", p.PickParams, "training", "Checkpoint pick",
            ("snapshots", "base", "dev"), "the chosen checkpoint and every candidate's DEV F1 (result.json)",
            encoder_field="base"),
    JobKind("ner", "core.train.ner_train:ner_train_job", p.NerParams, "training", "NER training",
            ("train", "model", "preset"), "a model folder with its lineage, test predictions"),
    JobKind("experiment", "core.experiments.experiment:experiment_job", p.ExperimentParams, "training", "Experiment",
            ("strategies", "baselines", "seeds", "preset"), "cells (one NER run each, with lineage)"),
    JobKind("compare-sources", "core.experiments.compare:compare_sources_job", p.CompareSourcesParams, "training",
            "Compare sources", ("sources", "target", "seeds", "preset"), "one NER run per source and seed, with lineage"),
    JobKind("selftrain", "core.adapt.selftrain:selftrain_job", p.SelftrainParams, "training", "Self-training",
            ("lc", "unlabeled", "selection", "ratio", "preset"), "a model folder with its lineage"),
    JobKind("augment", "core.adapt.augment:augment_job", p.AugmentParams, "training", "Augmentation",
            ("lc", "model", "sampling"), "an augmented CoNLL corpus"),
    JobKind("sleep", "core.runner.jobs:sleep_job", p.SleepParams, "training", "Sleep",  # tests; checks a new machine's runner
            ("seconds",), "nothing"),
)}


def kind_of(name: str) -> JobKind:
    if name not in KINDS:
        raise UserError(f"unknown job kind {name!r}: expected one of {', '.join(sorted(KINDS))}")
    return KINDS[name]


def lane(kind: str) -> str:
    """'interactive' or 'training': which queue and concurrency count a job kind uses."""
    return kind_of(kind).lane


def validate(kind: str, params: dict[str, Any] | Any) -> Any:
    """The kind's params dataclass from a dict (or the dataclass itself), every default filled in."""
    return p.validate_params(kind_of(kind).params, params, kind)
