"""The training recipes as plain dataclasses: NerConfig (BERT-CRF fine-tuning) and MlmConfig (continued pretraining).

They live apart from the trainers so that a job's config dict is checked when the job is submitted (unknown keys,
types, ranges: core.runner.params) without importing torch; the trainers import them from here.

>>> NerConfig.from_dict({"epochs": 2}).epochs
2
>>> MlmConfig.from_dict({"lrr": 1e-4})  # doctest: +ELLIPSIS
Traceback (most recent call last):
core.errors.UserError: unknown MLM setting(s): lrr; known: batch_size, block_size, ...
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.errors import UserError

# A dataclass's resolved field types, once per class: every job listing validates each stored row, and resolving the
# string annotations (`from __future__ import annotations`) was most of that time (85% of 0.8 s for 300 rows).
type_hints = functools.cache(typing.get_type_hints)


def parse_settings(items: Iterable[str] | str, option: str) -> dict[str, Any]:
    """KEY=VALUE items typed by a user (a CLI option given several times, or one comma-separated text as a page
    takes it) as a settings dict: a value reads as JSON where it parses (5e-5, 100, true), else it stays text; a key
    given twice with two values is refused (the last one silently won). The names and ranges are checked where the
    config is made (MlmConfig.from_dict, at submit).

    >>> parse_settings(["lr=5e-5", " head_warmup_steps = 100", "device=cpu"], "--mlm")
    {'lr': 5e-05, 'head_warmup_steps': 100, 'device': 'cpu'}
    >>> parse_settings("lr=5e-5, l2sp=.1,", "MLM settings")
    {'lr': 5e-05, 'l2sp': 0.1}
    >>> parse_settings(["lr=NaN"], "--mlm")
    Traceback (most recent call last):
    core.errors.UserError: --mlm 'lr=NaN': lr must be a finite number
    >>> parse_settings(["lr"], "--mlm")
    Traceback (most recent call last):
    core.errors.UserError: --mlm 'lr': expected KEY=VALUE (e.g. lr=5e-5)
    >>> parse_settings("lr=1e-5, lr=2e-5", "MLM settings")
    Traceback (most recent call last):
    core.errors.UserError: MLM settings: lr is given twice (1e-05 and 2e-05): give it once
    """
    out: dict[str, Any] = {}
    for item in (i for i in items.split(",") if i.strip()) if isinstance(items, str) else items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UserError(f"{option} {item.strip()!r}: expected KEY=VALUE (e.g. lr=5e-5)")
        value = _value(value.strip())
        if key.strip() in out and (type(out[key.strip()]) is not type(value) or out[key.strip()] != value):  # 1 == True
            raise UserError(f"{option}: {key.strip()} is given twice ({out[key.strip()]} and {value}): give it once")
        out[key.strip()] = value
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"{option} {item.strip()!r}: {key.strip()} must be a finite number")
    return out


def _value(text: str) -> Any:
    """A typed value: JSON where it parses (5e-5, 100, true, [0.9, 0.99]), else a number Python reads (.1, 1_000),
    else the text itself (cpu)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def check_settings(cls: type, d: dict[str, Any], what: str) -> None:
    """Unknown keys in a stored or typed-in config are an error naming them (a typo must not be ignored)."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - known
    if unknown:
        raise UserError(f"unknown {what} setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")


@dataclass
class NerConfig:
    """Fine-tuning hyper-parameters; defaults are the seed paper's (AdamW, lr 2e-5, weight
    decay 1e-8, up to 200 epochs with early stopping on dev F1)."""

    lr: float = 2e-5  # encoder learning rate (paper)
    head_lr: float | None = None  # emission layer + CRF; None = lr. Demo presets use 1e-3: a fresh CRF barely moves at 2e-5
    weight_decay: float = 1e-8  # paper
    betas: tuple[float, float] = (0.9, 0.999)  # paper
    epochs: int = 200  # upper bound; early stopping usually ends far sooner
    patience: int = 10  # epochs without a dev-F1 gain before stopping
    batch_size: int = 16  # sentences per optimizer step, split into grad_accum micro-batches
    grad_accum: int = 1  # micro-batches per optimizer step (the runner doubles it after running out of GPU memory)
    dropout: float = 0.1
    seed: int = 1
    max_length: int = 256  # sub-tokens per sentence; words past it are predicted O
    warmup_ratio: float = 0.0  # linear warmup over this share of the steps, constant after
    grad_clip: float = 1.0
    eval_batch_size: int = 64
    dev_limit: int | None = None  # evaluate on the first N dev sentences only (CPU demo runs)
    eval_every: int = 1  # epochs between dev evaluations (patience still counts epochs)
    min_delta: float = 0.0  # a dev-F1 gain at most this large counts as flat for early stopping (the better model is still kept)
    bucket: int = 4  # batches per length-sorted chunk (less padding); 0 or 1: plain shuffled batches
    max_steps: int | None = None  # stop after this many optimizer steps (tests, smoke runs)
    checkpoint_every: int = 100  # steps between resumable checkpoints (an epoch end saves once this many passed since)
    log_every: int = 10  # steps between metric lines
    constrain_bioes: bool = True  # start impossible BIOES transitions at -1e4 (see core.train.crf.constrain_bioes)
    device: str = "auto"
    precision: str = "auto"  # bf16/fp16 autocast on GPU, fp32 on CPU

    def __post_init__(self) -> None:  # refused where the config is made (submit), not after a run of 0 steps "succeeds"
        check_counts(self, "eval_batch_size")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NerConfig:
        check_settings(cls, d, "NER")
        d = dict(d)
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)


@dataclass
class MlmConfig:
    """Continued-pretraining hyper-parameters; epochs and batch size are the paper's."""

    epochs: int = 5  # paper
    batch_size: int = 64  # examples per optimizer step (paper); split into grad_accum micro-batches
    grad_accum: int = 1  # micro-batches per optimizer step (fit a large batch in little memory)
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.06  # linear warmup, then linear decay to 0
    block_size: int = 128  # tokens per packed example
    pack: bool = True  # False: one sentence per example, padded per batch (the benchmark's baseline)
    mlm_probability: float = 0.15  # BERT
    max_steps: int | None = None  # cap on optimizer steps (demo runs, tests)
    seed: int = 1
    grad_clip: float = 1.0
    checkpoint_every: int = 50  # optimizer steps between resumable checkpoints
    snapshot_every: int = 0  # steps between kept model snapshots (snapshot_dir/step-N) for checkpoint selection; 0: none
    # recipe variants (core.train.mlm_recipe; issue 26): how the encoder is allowed to move
    head_warmup_steps: int = 0  # the first N steps train only the MLM head, the encoder frozen (a fresh head learns first)
    layer_lr_decay: float = 1.0  # lr x decay^(levels below the head): lower layers move less; 1.0: one lr for all
    freeze_layers: int = 0  # the embeddings and the lowest N transformer layers stay as they are
    l2sp: float = 0.0  # L2-SP: strength of the pull of the encoder's weights towards where the phase started; 0: none
    log_every: int = 5
    device: str = "auto"
    precision: str = "auto"  # bf16/fp16 autocast on GPU, fp32 on CPU

    def __post_init__(self) -> None:  # a bad recipe value is refused where the config is made (submit), not minutes in
        check_counts(self)
        check_mlm_recipe(self, None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MlmConfig:
        check_settings(cls, d, "MLM")
        return cls(**d)


CONFIGS: dict[str, type] = {"ner": NerConfig, "mlm": MlmConfig}  # what a job's config field holds (core.runner.params)


def check_counts(config: Any, *more: str) -> None:
    """Epochs, batch size, gradient accumulation (and `more` count fields) at least 1, max_steps at least 1 when set:
    0 epochs or a batch of 0 trained nothing (or one sentence at a time) and reported a model written."""
    for name in ("epochs", "batch_size", "grad_accum", *more):
        if not getattr(config, name) >= 1:
            raise UserError(f"{name} must be at least 1, got {getattr(config, name)}")
    if config.max_steps is not None and not config.max_steps >= 1:
        raise UserError(f"max_steps must be at least 1 when set (unset: no cap), got {config.max_steps}")


def check_mlm_recipe(config: Any, n_layers: int | None) -> None:
    """The recipe settings in range; `n_layers` None (the encoder not loaded yet) checks freeze_layers >= 0 only."""
    if not 0 < config.layer_lr_decay <= 1:
        raise UserError(f"layer_lr_decay must be in (0, 1], got {config.layer_lr_decay}")
    if config.freeze_layers < 0 or (n_layers is not None and config.freeze_layers >= n_layers):
        # all of them frozen (with the embeddings) would leave only the MLM head to learn, which NER never reads
        raise UserError(f"freeze_layers must be between 0 and one less than the encoder's {n_layers or 'number of'} "
                        f"layers (freezing all of them, the encoder would never train), got {config.freeze_layers}")
    if not config.lr > 0:  # "not >" so that NaN is refused too
        raise UserError(f"lr must be > 0 (at 0 the encoder would never train), got {config.lr}")
    if config.head_warmup_steps < 0:
        raise UserError(f"head_warmup_steps must be >= 0, got {config.head_warmup_steps}")
    if not getattr(config, "l2sp", 0.0) >= 0:
        raise UserError(f"l2sp must be >= 0 (the pull towards the starting weights), got {config.l2sp}")
    if not 0 < config.mlm_probability < 1:
        raise UserError(f"mlm_probability must be in (0, 1): the share of tokens masked, got {config.mlm_probability}")
    if not 0 <= config.warmup_ratio < 1:
        raise UserError(f"warmup_ratio must be in [0, 1): the share of steps that warm the lr up, got {config.warmup_ratio}")
