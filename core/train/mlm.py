"""MLM continued pretraining (the seed's Stage II) and its baselines.

Corpus modes (`mlm_phases`):
  tc+sc      TC and the selected SC mixed 1:1 (the smaller side is repeated), the seed method
  tapt       TC only (Gururangan et al. 2020)
  dapt       all of DC
  tapt+dapt  DAPT then TAPT, in that order, as in Gururangan et al. 2020

Sentences are packed into fixed-length blocks ([CLS] s1 [SEP] s2 [SEP] ... cut at
`block_size`), so no compute goes to padding; masking is BERT's (15%, 80/10/10) through
transformers' DataCollatorForLanguageModeling. An encoder without an MLM head (the
default MiniLM has none) gets a freshly initialised one, and the log says so.
The output folder (safetensors + tokenizer) loads with core.lm.models.resolve_model: it is "B1".

>>> mix = balanced_mix(["t1", "t2"], ["s1", "s2", "s3", "s4"], seed=0)
>>> sorted(mix)
['s1', 's2', 's3', 's4', 't1', 't1', 't2', 't2']
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from core.data.selection_store import selection_texts
from core.data.stream import open_corpus_stream
from core.errors import ModelError, UserError
from core.lm.models import ModelRef, load_masked_lm, load_tokenizer, resolve_model
from core.recipes.configs import MlmConfig
from core.recipes.modes import mode_reads, phases_of
from core.recipes.presets import DEFAULT_PRESET, RUN_ONLY_SETTINGS, mlm_settings
from core.train import lineage
from core.train.mlm_recipe import chain, head_warmup, l2sp_anchor, param_groups
from core.train.training import (
    Checkpointer,
    Log,
    LoopConfig,
    LoopState,
    Metric,
    Progress,
    TrainLoop,
    adamw,
    atomic_dir,
    device_and_precision,
    epoch_order,
    grad_scaler,
    set_seed,
)

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import MlmParams

INFO_FILE = "mlm_info.json"


def preset_config(name: str = DEFAULT_PRESET, **overrides: Any) -> MlmConfig:
    """The recipe of a preset (core.recipes.presets, the one table) with the overrides that are set."""
    return MlmConfig.from_dict(mlm_settings(name, **overrides))


# --------------------------------------------------------------------------- corpora


def balanced_mix(task_texts: Sequence[str], selected_texts: Sequence[str], seed: int = 1) -> list[str]:
    """TC and SC 1:1 by sentence count: the smaller side is repeated (whole passes, then a
    seeded sample for the remainder) up to the larger side's size."""
    if not task_texts or not selected_texts:
        raise UserError("the TC+SC mix needs both a task corpus and a non-empty selection")
    rng = random.Random(seed)
    small, large = sorted((list(task_texts), list(selected_texts)), key=len)
    reps, rest = divmod(len(large), len(small))
    upsampled = small * reps + rng.sample(small, rest)
    return upsampled + large


def mlm_phases(mode: str, tc: Sequence[str] | None = None, sc: Sequence[str] | None = None,
               dc: Sequence[str] | None = None, seed: int = 1) -> list[tuple[str, list[str]]]:
    """The (name, texts) phases of one continued-pretraining recipe (core.recipes.modes), run in order."""
    phases = phases_of(mode)
    given = {"tc": tc, "sc": sc, "dc": dc}
    missing = sorted({k.upper() for _, reads in phases for k in reads if not given[k]})
    if missing:
        raise UserError(f"MLM mode {mode!r} needs {' and '.join(missing)}")
    return [(name, balanced_mix(tc, sc, seed) if reads == ("tc", "sc") else list(given[reads[0]])) for name, reads in phases]


# --------------------------------------------------------------------------- examples


def _token_ids(tokenizer, texts: Sequence[str], chunk: int = 10_000) -> list[list[int]]:
    ids: list[list[int]] = []
    for i in range(0, len(texts), chunk):
        ids.extend(tokenizer(list(texts[i:i + chunk]), add_special_tokens=False)["input_ids"])
    return ids


def pack_blocks(tokenizer, texts: Sequence[str], block_size: int) -> list[list[int]]:
    """[CLS] s1 [SEP] s2 [SEP] ... cut into blocks of exactly `block_size` (the last may be
    shorter): per-sentence padding would spend most of a batch on [PAD] for short sentences."""
    if block_size < 8:
        raise UserError("block_size must be at least 8 tokens")
    ids = _token_ids(tokenizer, texts)
    sep = tokenizer.sep_token_id
    stream = np.fromiter((t for s in ids if s for t in (*s, sep)), dtype=np.int64)
    body = block_size - 1  # each block gets its own [CLS]; the [SEP]s come from the stream
    cls = tokenizer.cls_token_id
    return [[cls, *stream[i:i + body].tolist()] for i in range(0, len(stream), body)]


def sentence_examples(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """One example per sentence, truncated to `max_length` (the unpacked baseline)."""
    ids = _token_ids(tokenizer, texts)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    return [[cls, *s[: max_length - 2], sep] for s in ids if s]


# --------------------------------------------------------------------------- model


def train_mlm(texts: Sequence[str], model: str | ModelRef, out_dir: str | Path, config: MlmConfig | None = None,
              progress: Progress | None = None, log: Log | None = None, metric: Metric | None = None,
              checkpoint_dir: str | Path | None = None, overwrite: bool = False,
              snapshot_dir: str | Path | None = None) -> dict[str, Any]:
    """Continue pretraining `model` with masked-LM on `texts`; write the model folder to `out_dir`.

    With `snapshot_dir` and `config.snapshot_every`, a loadable model folder is kept every that many steps
    (`snapshot_dir/step-N`): core.train.checkpoint_pick scores them, so a phase that drifted too far is not used.

    With `checkpoint_dir`, a resumable checkpoint (model, optimizer, scheduler, RNG, step)
    is written every `checkpoint_every` steps; calling again continues from it.
    """
    from transformers import DataCollatorForLanguageModeling, get_linear_schedule_with_warmup

    config = config or MlmConfig()
    log = log or (lambda _m: None)
    metric = metric or (lambda **_k: None)
    out_dir = Path(out_dir)
    ref = resolve_model(model) if not isinstance(model, ModelRef) else model
    ckpt = Checkpointer(checkpoint_dir) if checkpoint_dir is not None else None
    state = ckpt.load() if ckpt is not None else None
    if state is None and out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise UserError(f"output folder {out_dir} already exists and is not empty; choose another --out or pass --overwrite")
    if not texts:
        raise UserError("no sentences to pretrain on")

    set_seed(config.seed)
    device, precision = device_and_precision(config.device, config.precision)
    tokenizer = load_tokenizer(ref)
    if tokenizer.mask_token is None:
        raise ModelError(f"model {ref.name!r} has no [MASK] token; masked-LM training needs one")
    mlm, fresh = load_masked_lm(ref)
    mlm.to(device)
    max_len = min(config.block_size, getattr(mlm.config, "max_position_embeddings", config.block_size))
    examples = pack_blocks(tokenizer, texts, max_len) if config.pack else sentence_examples(tokenizer, texts, max_len)
    if not examples:
        raise UserError("the sentences produced no tokens")
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability)
    micro = max(1, math.ceil(config.batch_size / config.grad_accum))
    micro_per_epoch = math.ceil(len(examples) / micro)
    steps_per_epoch = max(1, math.ceil(micro_per_epoch / config.grad_accum))
    total_steps = config.epochs * steps_per_epoch
    if config.max_steps:
        total_steps = min(total_steps, config.max_steps)
    if config.head_warmup_steps >= total_steps:  # the run would save the base encoder unchanged, under an MLM name
        raise UserError(f"head warm-up of {config.head_warmup_steps} steps covers the whole MLM run ({total_steps} steps "
                        f"on {len(examples):,} examples): the encoder would never train; use fewer warm-up steps, "
                        "or more epochs or max_steps")
    optimizer = adamw(param_groups(mlm, config), lr=config.lr)  # per-layer lr and frozen layers (core.train.mlm_recipe)
    pull = l2sp_anchor(mlm, config.l2sp)  # taken before a checkpoint is restored: the anchor is where the phase began
    scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)

    n_tokens = sum(len(e) for e in examples)
    head_note = (f"the encoder has no MLM head: a fresh head was initialised ({len(fresh)} weights: {', '.join(fresh[:4])}"
                 f"{', ...' if len(fresh) > 4 else ''})" if fresh else "the encoder's own MLM head is trained further")

    def forward(idx: list[int]) -> tuple[torch.Tensor, int]:
        batch, picked, units = device_batch(collator([{"input_ids": examples[i]} for i in idx]), device)
        loss = masked_lm_loss(mlm, batch, picked)
        return (loss + pull() if pull is not None else loss), units

    def plan(epoch: int) -> list[list[int]]:
        order = epoch_order(len(examples), config.seed, epoch)
        return [order[i:i + micro] for i in range(0, len(order), micro)]

    losses: list[float] = []  # each metric row's mean loss: whether the masked LM learned anything (mlm_warning)

    def keep(**row: Any) -> None:
        if "loss" in row:
            losses.append(float(row["loss"]))
        if metric is not None:
            metric(**row)

    loop = TrainLoop(
        mlm, optimizer, scheduler, grad_scaler(device, precision),
        LoopConfig(epochs=config.epochs, seed=config.seed, max_steps=total_steps, grad_accum=config.grad_accum,
                   grad_clip=config.grad_clip, checkpoint_every=config.checkpoint_every, log_every=config.log_every, unit="tokens",
                   checkpoint_at_end=False),
        plan=plan, forward=forward, device=device, precision=precision, total_steps=total_steps, checkpoint_dir=checkpoint_dir,
        extra={"config": asdict(config)}, progress=progress, log=log, metric=keep)
    if state is not None:
        loop.restore(state)
        log(f"resumed from checkpoint at step {loop.state.step} (epoch {loop.state.epoch + 1})")
    loop.on_step = chain(head_warmup(mlm, config, loop.state.step, log),  # needs the resumed step: set after restore
                         snapshotter(mlm, tokenizer, snapshot_dir, config.snapshot_every, log))
    log("Running MLM continued pretraining\n"
        f"  model: {ref.name} | {head_note}\n"
        f"  sentences: {len(texts):,} -> {len(examples):,} {'packed blocks' if config.pack else 'examples'} of <= {max_len} tokens "
        f"({n_tokens:,} tokens)\n"
        f"  epochs: {config.epochs} | batch: {config.batch_size} ({config.grad_accum} x {micro}) | steps: {total_steps} "
        f"| lr: {config.lr} | device: {device} ({precision})"
        + (f"\n  recipe: head warm-up {config.head_warmup_steps} steps, layer lr decay {config.layer_lr_decay}, "
           f"frozen lowest layers {config.freeze_layers}" if (config.head_warmup_steps or config.layer_lr_decay != 1.0
                                                               or config.freeze_layers) else ""))
    step = loop.run().step
    real_tokens = loop.units
    seconds = loop.seconds
    info = {"base_model": ref.name, "fresh_head": bool(fresh), "fresh_head_weights": fresh, "steps": step,
            "examples": len(examples), "sentences": len(texts), "tokens": n_tokens, "packed": config.pack, "precision": precision,
            "config": asdict(config), "created_by": "core.train.mlm"}
    with atomic_dir(out_dir) as tmp:
        mlm.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / INFO_FILE).write_text(json.dumps(info, indent=2), "utf-8")
    if ckpt is not None:
        ckpt.discard()  # the finished model (INFO_FILE) is what a rerun checks; the resume state is dead weight now
    if progress is not None:
        progress(1.0, f"done: {step} steps")
    log(f"MLM finished in {seconds:.1f}s: {step} steps; model in {out_dir}")
    return {**{k: v for k, v in info.items() if k != "config"}, "out_dir": str(out_dir), "seconds": seconds,
            "tokens_per_s": real_tokens / seconds if seconds > 0 else None, "device": device,
            **({"first_loss": losses[0], "last_loss": losses[-1]} if len(losses) > 1 else {})}  # one row: no trend


def mlm_warning(phases: Sequence[dict[str, Any]]) -> str | None:
    """What a finished MLM run must say when its masked LM learned nothing: a loss that became NaN, or one that did
    not fall from its first metric row to its last (the job read "done" either way; a run of one row says nothing).

    >>> mlm_warning([{"phase": "tapt", "steps": 400, "first_loss": 9.1, "last_loss": 4.2}]) is None
    True
    >>> mlm_warning([{"phase": "tapt", "steps": 400, "first_loss": 9.1, "last_loss": float("nan")}])
    'phase tapt: the MLM loss became NaN (a learning rate too high, or fp16 overflow): its model is not usable'
    """
    said = []
    for r in phases:
        first, last = r.get("first_loss"), r.get("last_loss")
        if first is None or last is None:
            continue
        if not math.isfinite(last):
            said.append(f"phase {r['phase']}: the MLM loss became NaN (a learning rate too high, or fp16 overflow): its "
                        "model is not usable")
        elif last >= first:
            said.append(f"phase {r['phase']}: the MLM loss did not fall ({first:.3f} at the start, {last:.3f} at the end "
                        f"of {r.get('steps', '?')} steps): the encoder learned little; more steps or another lr")
    return "; ".join(said) or None


def snapshotter(model: Any, tokenizer: Any, snapshot_dir: str | Path | None, every: int, log: Log
                ) -> Callable[[LoopState], None] | None:
    """The loop's on_step hook that writes `snapshot_dir/step-N` (model + tokenizer, atomically) every `every` steps."""
    if snapshot_dir is None or not every:
        return None
    folder = Path(snapshot_dir)

    def on_step(st: LoopState) -> None:
        if st.step % every == 0 and not (folder / f"step-{st.step}").exists():
            with atomic_dir(folder / f"step-{st.step}") as tmp:
                model.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
            log(f"snapshot kept at step {st.step}: {folder / f'step-{st.step}'}")

    return on_step


def device_batch(batch: dict[str, torch.Tensor], device: str) -> tuple[dict[str, torch.Tensor], torch.Tensor, int]:
    """A collated MLM batch on `device`, its masked positions (masked_positions) and its real token count, all worked
    out on the CPU first: on a GPU each of them, read from the device, would wait for the queued work (issue 25)."""
    units = int(batch["attention_mask"].sum())
    picked = masked_positions(batch["labels"])
    batch = dict(batch)
    if units == batch["attention_mask"].numel():  # packed blocks are rarely padded: without a mask, transformers
        del batch["attention_mask"]               # skips its own all-ones check on the device (one more sync)
    moved = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
    return moved, picked.to(device, non_blocking=True), units


def masked_positions(labels: torch.Tensor) -> torch.Tensor:
    """Flat indices (into B*T) of the positions that carry an MLM label."""
    return (labels.reshape(-1) != -100).nonzero().squeeze(1)


def masked_lm_loss(model: Any, batch: dict[str, Any], picked: torch.Tensor | None = None) -> Any:
    """MLM cross-entropy with the prediction head run on the masked positions only.

    The head maps every position to vocabulary logits; for the default MiniLM (hidden 384,
    vocabulary 30,522) that is as many multiply-adds as the whole 6-layer encoder, yet only
    ~15% of positions carry a label. Same loss as `model(**batch).loss`; models whose head
    is not a single `cls` / `lm_head` module fall back to the full forward.

    `picked` (masked_positions of the labels, computed before the batch went to the GPU) spares the device a
    boolean-mask gather, whose output size the host must wait for; without it they are found here.
    """
    import torch.nn.functional as F

    head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
    base = getattr(model, model.base_model_prefix, None)
    if head is None or base is None:
        return model(**batch).loss
    labels = batch["labels"]
    if picked is None:
        picked = masked_positions(labels)
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    hidden = base(**inputs).last_hidden_state  # (B, T, H)
    logits = head(hidden.reshape(-1, hidden.size(-1)).index_select(0, picked))  # (M, V), M = masked positions
    return F.cross_entropy(logits.float(), labels.reshape(-1).index_select(0, picked))


def finished_model(out_dir: str | Path) -> bool:
    return (Path(out_dir) / INFO_FILE).exists() and (Path(out_dir) / "config.json").exists()


def check_same_recipe(target: Path, info: dict[str, Any], config: MlmConfig, sentences: int) -> None:
    """A finished phase is reused only for the recipe that made it: rerunning `mlm --out X` with other
    settings or text must not silently return the old model (it said "already done" and kept 10 steps
    when 200 were asked)."""
    stored = info.get("config") or {}
    wanted = json.loads(json.dumps(asdict(config)))
    diffs = [f"{k} {stored.get(k)!r} -> {v!r}" for k, v in wanted.items()
             if k not in RUN_ONLY_SETTINGS and k in stored and stored[k] != v]
    if info.get("sentences") not in (None, sentences):
        diffs.append(f"sentences {info['sentences']} -> {sentences}")
    if diffs:
        raise UserError(f"{target} already holds an MLM model trained with other settings ({'; '.join(diffs)}): "
                        "choose another --out, or delete that folder to train it again")


def run_phases(phases: Sequence[tuple[str, Sequence[str]]], model: str, out_dir: str | Path, config: MlmConfig,
               work_dir: str | Path, progress: Progress | None = None, log: Log | None = None,
               metric: Metric | None = None) -> dict[str, Any]:
    """Run MLM phases in order, each starting from the previous one's model; the last phase
    writes `out_dir`. A phase whose model already exists (a resumed job) is skipped."""
    work_dir = Path(work_dir)
    results = []
    current = model
    for k, (name, texts) in enumerate(phases):
        last = k == len(phases) - 1
        target = Path(out_dir) if last else work_dir / f"phase-{name}" / "model"
        sub = (lambda f, m, k=k, name=name: progress((k + f) / len(phases), f"{name}: {m}")) if progress else None
        if finished_model(target):
            info = json.loads((target / INFO_FILE).read_text("utf-8"))
            check_same_recipe(target, info, config, len(texts))
            (log or print)(f"phase {name}: already done, model in {target}")
            results.append({"phase": name, "out_dir": str(target), "steps": info["steps"]})
        else:
            phase_metric = (lambda name=name, **v: metric(phase=name, **v)) if metric else None
            results.append({"phase": name, **train_mlm(texts, current, target, config, sub, log, phase_metric,
                                                       checkpoint_dir=work_dir / f"phase-{name}", overwrite=True,
                                                       snapshot_dir=work_dir / f"phase-{name}" / "snapshots")})
        current = str(target)
    return {"out_dir": str(out_dir), "phases": results, "steps": sum(r["steps"] for r in results),
            "fresh_head": any(r.get("fresh_head") for r in results), "warning": mlm_warning(results)}


def mlm_job(params: MlmParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "mlm": plain continued pretraining on `train`, or a recipe `mode` (MODES) over TC, a saved
    selection (SC) and DC; records its lineage."""
    started = time.time()
    ws = ctx.workspace
    config = preset_config(params.preset, **params.config)
    if params.train:
        refs = params.train if isinstance(params.train, list) else [params.train]
        phases = [("train", [t for r in refs for t in ws.resolve_corpus(r).texts()])]
    else:
        reads = mode_reads(params.mode)  # dapt reads no TC: none needed
        tc = ws.resolve_corpus(params.tc).texts() if params.tc and "tc" in reads else None
        sc = list(selection_texts(ws, params.selection)) if params.selection and "sc" in reads else None
        # DC's texts read batch by batch from its Parquet file: the token lists are never all held beside them
        dc = [t for part in open_corpus_stream(ws, params.dc).text_batches() for t in part] \
            if params.dc and "dc" in reads else None
        phases = mlm_phases(params.mode, tc, sc, dc, seed=config.seed)
    result = run_phases(phases, params.model, params.out or ctx.run_dir / "model", config, ctx.run_dir, ctx.progress, ctx.log,
                        ctx.metric)
    lineage.record_mlm(ws, ctx.run_id, params, result, ctx.run_dir, time.time() - started, seed=config.seed)
    return result
