"""Training presets: one table, one default.

A preset names a recipe for MLM continued pretraining and for BERT-CRF fine-tuning (and so for an
experiment cell, which runs both). The CLI's `--preset` choices, the pages' select boxes, the job
params' default and the recipes `core.train.mlm.preset_config` / `core.train.ner_train.preset_config`
build all read this module, which imports nothing heavy, so validating a job's params never
imports torch.

>>> DEFAULT_PRESET in PRESETS
True
>>> mlm_settings("tiny")["max_steps"]
4
"""

from __future__ import annotations

from typing import Any

from core.errors import UserError

DEFAULT_PRESET = "demo"  # what a job, a CLI command and a page run when no preset is named
PRESETS = ("tiny", "demo", "study", "paper")  # cheapest first
# Smoke tests: minutes of training that check a setup end to end. Their F1 differences are never evidence (4 MLM steps
# at lr 1e-3 can wreck an encoder); an experiment's verdict says so instead of "pretraining harmed".
SMOKE_PRESETS = ("tiny", "demo")
PLUMBING_PRESETS = ("tiny",)  # only check that training runs: a near-zero F1 after them is expected, not a finding
TRAINING_PRESETS = ("demo", "paper")  # what a user is pointed to when a plumbing run scores nothing
PICK_SNAPSHOTS = 4  # MLM snapshots a checkpoint pick keeps when it is asked for without a number (CLI, page, scripts)

# Settings that differ from core.recipes.configs.MlmConfig's defaults (the seed paper's: 5 epochs, batch 64).
MLM: dict[str, dict[str, Any]] = {
    "paper": {},
    # ~3.5 min alone on 2 CPU cores: a fixed 200 steps of 16 x 64-token blocks whatever the corpus size (the demo TC
    # is 10 steps per epoch), at a learning rate high enough for the fresh MLM head of the default MiniLM to learn.
    # Measured on the demo TC (seed 1): masked-word accuracy on TC (its training text) 57%, and `augment` on the demo LC passes the
    # quality gate (33 distinct of 116 replacements, 1% stop words); lr 1e-4 at the same steps reached 21% and was
    # refused as degenerate, 30 steps replaced every entity with "the".
    "demo": {"epochs": 1000, "batch_size": 16, "block_size": 64, "max_steps": 200, "lr": 5e-4, "checkpoint_every": 50,
             "log_every": 10},
    "tiny": {"epochs": 1, "batch_size": 4, "block_size": 32, "max_steps": 4, "lr": 1e-3, "checkpoint_every": 2, "log_every": 1},
    # Experiments (scripts/crossner_study.py): a fixed step budget whatever the corpus (TC+SC, TC or DC get the same
    # compute, as a fair comparison needs), long enough for the fresh head of the default MiniLM to learn (held-out
    # TC masked-word accuracy far above the base encoder's; core.adapt.augment.MaskedLM.accuracy).
    "study": {"epochs": 1000, "max_steps": 400, "batch_size": 16, "block_size": 128, "lr": 1e-4, "checkpoint_every": 50,
              "log_every": 10},
}

# Settings that differ from core.recipes.configs.NerConfig's defaults (the seed paper's: lr 2e-5, up to 200 epochs).
NER: dict[str, dict[str, Any]] = {
    "paper": {},
    # ~1.5 min alone on 2 CPU cores for the demo's 150 LC sentences: fewer epochs, a faster head, a dev subset.
    # Measured on the demo (seed 1): early stop at epoch 14, dev F1 0.922, test F1 0.886.
    "demo": {"epochs": 20, "patience": 5, "lr": 5e-5, "head_lr": 1e-3, "dev_limit": 100, "batch_size": 16},
    # For tests and for checking that a setup works end to end.
    "tiny": {"epochs": 3, "patience": 3, "lr": 1e-3, "head_lr": 1e-2, "batch_size": 8, "dev_limit": 50},
    # Experiments: to convergence on the whole DEV, so F1 differences between pretraining recipes are not
    # early-stopping noise; a faster head than `paper` so ~100 sentences converge in tens of epochs. Gains <= 0.002
    # dev F1 count as flat, so a plateau ends the run instead of resetting patience.
    "study": {"epochs": 60, "patience": 8, "min_delta": 0.002, "lr": 5e-5, "head_lr": 1e-3, "batch_size": 16},
}

# Experiment settings per preset. Checkpoint pick (core.train.checkpoint_pick; issue 26): keep this many MLM snapshots
# per cell and fine-tune NER from the one, or the base encoder, that a short NER fine-tune scores best on DEV, so a
# pretraining phase never silently hands on an encoder that lowers DEV F1. On by default (demo, study): it costs four
# short fine-tunes per MLM cell and one of the base encoder per seed (~20 s each on CrossNER music on 2 CPU cores,
# against ~6-10 min of MLM). Off in
# `paper`, which keeps the seed paper's protocol as it was, and in `tiny`, whose 4 MLM steps are a smoke test.
EXPERIMENT: dict[str, dict[str, Any]] = {
    "paper": {"pick_checkpoint": 0},
    "demo": {"pick_checkpoint": 4},
    "tiny": {"pick_checkpoint": 0},
    "study": {"pick_checkpoint": 4},
}

# What each preset is for and roughly what it costs on 2 CPU cores (the demo figures were measured alone on 2 free
# cores with `python -m core mlm|ner train --preset demo` on the generated demo, seed 1).
NOTES: dict[str, dict[str, str]] = {
    "mlm": {
        "tiny": "4 steps: checks a setup end to end; the training is seconds, loading the model ~10-20 s on 2 cores",
        "demo": "200 steps of 16 x 64-token blocks at lr 5e-4, ~3.5 min: on the demo TC a fresh MLM head reaches 0.57 "
                "held-out masked-word accuracy (30 steps: every entity became \"the\") and `augment` passes its quality gate",
        "study": "400 steps of 16 x 128-token blocks, ~6.5 min alone on 2 free cores with bf16 (~10 min without): "
                 "a fresh MLM head learns (masked-word accuracy on TC well above the base encoder's)",
        "paper": "5 epochs, batch 64: the seed paper's; hours on CPU for a large corpus",
    },
    "ner": {
        "tiny": "3 epochs: checks a setup end to end; under a minute on the demo, 2-4 min per run on CrossNER's "
                "music size on a busy 2-core machine (evaluating the full DEV/TEST dominates)",
        "demo": "<= 20 epochs (patience 5) on a 100-sentence dev subset, ~1.5 min for the demo's 150 LC sentences: "
                "demo test F1 0.89",
        "study": "to convergence (<= 60 epochs, patience 8 at min gain 0.002, full DEV), ~2-4 min for 100 sentences",
        "paper": "lr 2e-5, up to 200 epochs (patience 10): the seed paper's, an hour or more on CPU",
    },
    "experiment": {
        "tiny": "~4 min per cell on CrossNER music size (7 cells in 1,816 s on 2 cores, other work running; "
                "docs/results/crossner-music-tiny.json): embedding, selection and evaluation dominate, not the training",
        "demo": "~5 min per cell on the demo (200 MLM steps + NER; checkpoint pick on: 4 short DEV probes per MLM "
                "cell, the base encoder's once per seed)",
        "study": "~9 min per MLM+NER cell alone on 2 free CPU cores with bf16 (~12-14 min without; more while other jobs "
                 "run), ~1.5 min on an H100; ~2-4 min for `none` (CrossNER music size; see scripts/crossner_study.py); "
                 "checkpoint pick on (4 short DEV probes per MLM cell, the base encoder's once per seed)",
        "paper": "hours per cell; the seed paper's protocol as it was (no checkpoint pick)",
    },
}


# Settings that do not change the trained model: a resumed job may differ in them (another machine, other logging).
# grad_accum splits the same optimizer step into more micro-batches (the runner raises it after running out of GPU
# memory). Here, with no torch import, so comparing two recipes' JSON stays light (core.experiments.plan.recipe_of).
RUN_ONLY_SETTINGS = {"checkpoint_every", "log_every", "device", "precision", "snapshot_every", "grad_accum"}


def model_settings(config: Any) -> dict[str, Any]:
    """The settings of a training config (a dataclass or its dict) that change the model: all but RUN_ONLY_SETTINGS.
    What keys a shared model, a kept cell and a recipe comparison."""
    from dataclasses import asdict

    return {k: v for k, v in (config if isinstance(config, dict) else asdict(config)).items()
            if k not in RUN_ONLY_SETTINGS and not (k in ADDED_SETTINGS and v == ADDED_SETTINGS[k])}


# Settings added after models were keyed by their recipe, with the value that means "off": left out of a key while
# off, so a shared model trained before the setting existed is still found (core.experiments.cells.mlm_key).
ADDED_SETTINGS = {"l2sp": 0.0}


def check_preset(name: str, what: str = "preset") -> str:
    if name not in PRESETS:
        raise UserError(f"unknown {what} {name!r}: expected one of {', '.join(PRESETS)}")
    return name


def _settings(table: dict[str, dict[str, Any]], name: str, what: str, overrides: dict[str, Any]) -> dict[str, Any]:
    check_preset(name, f"{what} preset")
    return {**table[name], **{k: v for k, v in overrides.items() if v is not None}}


def mlm_settings(name: str = DEFAULT_PRESET, **overrides: Any) -> dict[str, Any]:
    """The MLM preset's settings with the overrides that are set (None keeps the preset's value)."""
    return _settings(MLM, name, "MLM", overrides)


def ner_settings(name: str = DEFAULT_PRESET, **overrides: Any) -> dict[str, Any]:
    """The NER preset's settings with the overrides that are set (None keeps the preset's value)."""
    return _settings(NER, name, "NER", overrides)


def ner_epochs(name: str = DEFAULT_PRESET) -> int:
    """The most NER epochs a preset trains: its own setting, else the config's default (what the Runs page says)."""
    from core.recipes.configs import NerConfig

    return NerConfig.from_dict(ner_settings(name)).epochs


def experiment_settings(name: str = DEFAULT_PRESET, **overrides: Any) -> dict[str, Any]:
    """The experiment preset's settings (checkpoint pick) with the overrides that are set (None keeps the preset's)."""
    return _settings(EXPERIMENT, name, "experiment", overrides)


def pick_defaults() -> str:
    """Which presets pick a checkpoint by default, read from EXPERIMENT, for help texts and labels
    ("on (4 snapshots) in demo and study; off in tiny and paper")."""
    on = [name for name in PRESETS if EXPERIMENT[name]["pick_checkpoint"]]
    off = [name for name in PRESETS if not EXPERIMENT[name]["pick_checkpoint"]]
    counts = sorted({EXPERIMENT[name]["pick_checkpoint"] for name in on})
    parts = [f"on ({'/'.join(map(str, counts))} snapshots) in {' and '.join(on)}"] if on else []
    return "; ".join(parts + ([f"off in {' and '.join(off)}"] if off else []))


def preset_help(command: str) -> str:
    """One --help / tooltip line listing every preset of `command` (mlm, ner, experiment) with its cost."""
    notes = NOTES[command]
    return "; ".join(f"{name}: {notes[name]}" for name in PRESETS) + " (times approximate, 2 CPU cores)"


def preset_choices() -> list[str]:
    """The presets in the order a select box shows them: the default first, then cheapest first."""
    return [DEFAULT_PRESET, *(p for p in PRESETS if p != DEFAULT_PRESET)]
