"""One preset default, one declaration of each job setting: the CLI, a job and a page launched without a
preset run the same recipe, and every CLI option that sets a job param defaults to that param's default."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from core.cli import build_parser
from core.recipes.presets import DEFAULT_PRESET, preset_choices
from core.runner.kinds import validate
from core.runner.params import (
    AugmentParams,
    CompareSourcesParams,
    ExperimentParams,
    MlmParams,
    NerParams,
    PredictParams,
    SelftrainParams,
    field_default,
)
from core.train import mlm, ner_train

# (the command's words, the params dataclass its options fill, options whose CLI meaning differs on purpose)
COMMANDS = [
    (["mlm"], MlmParams, {"train"}),
    (["ner", "train"], NerParams, {"train"}),
    (["ner", "predict"], PredictParams, {"corpus"}),
    (["experiment"], ExperimentParams, {"strategies"}),
    (["compare-sources"], CompareSourcesParams, {"sources"}),
    (["selftrain"], SelftrainParams, set()),
    (["augment"], AugmentParams, {"lc", "model"}),
]


def _subparser(words: list[str]) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in words:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def _cli_value(value):
    return ",".join(map(str, value)) if isinstance(value, list) else value


def test_no_preset_means_the_same_recipe_everywhere():
    cli_mlm = _subparser(["mlm"]).parse_args(["--train", "tc", "--out", "x"])
    cli_ner = _subparser(["ner", "train"]).parse_args(["--train", "lc", "--out", "x"])
    job_mlm, job_ner = validate("mlm", {"train": "tc"}), validate("ner", {})  # no selection: tc+sc would be refused
    page = preset_choices()[0]
    assert cli_mlm.preset == cli_ner.preset == job_mlm.preset == job_ner.preset == page == DEFAULT_PRESET
    assert mlm.preset_config(cli_mlm.preset) == mlm.preset_config(job_mlm.preset) == mlm.preset_config()
    assert ner_train.preset_config(cli_ner.preset) == ner_train.preset_config(job_ner.preset) == ner_train.preset_config()


@pytest.mark.parametrize(("words", "params", "differs"), COMMANDS, ids=[" ".join(c[0]) for c in COMMANDS])
def test_cli_options_default_to_the_job_params(words, params, differs):
    fields = {f.name for f in dataclasses.fields(params)}
    checked = 0
    for action in _subparser(words)._actions:
        if action.dest not in fields or action.dest in differs or action.default in (None, argparse.SUPPRESS):
            continue
        try:
            expected = field_default(params, action.dest)
        except KeyError:
            continue  # a required param: no default to agree with
        assert action.default == _cli_value(expected), f"{' '.join(words)} --{action.dest}"
        checked += 1
    assert checked, f"no option of {' '.join(words)} maps to {params.__name__}"


def test_the_runs_page_says_each_presets_epochs_as_training_reads_them():
    """Issue 44: the Runs page's help said 100 epochs for a preset without its own setting; NerConfig trains 200."""
    from core.recipes import presets
    from core.recipes.configs import NerConfig

    assert presets.ner_epochs("paper") == NerConfig.from_dict({}).epochs == 200
    assert presets.ner_epochs("tiny") == presets.NER["tiny"]["epochs"]
