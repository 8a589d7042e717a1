"""BERT-CRF fine-tuning: the recipe (NerConfig, from a preset), length-bucketed batches, early stopping on
DEV F1, resumable checkpoints, and the "ner" job, which also scores TEST and records the run's lineage.

>>> cfg = preset_config("demo", epochs=2)
>>> cfg.epochs, cfg.head_lr, cfg.lr
(2, 0.001, 5e-05)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from core.data.corpus import Corpus
from core.data.tags import TagScheme, cut_tags, spans_from_tags, tags_from_spans
from core.errors import UserError
from core.lm.models import ModelRef
from core.recipes.configs import NerConfig
from core.recipes.presets import DEFAULT_PRESET, ner_settings
from core.runner.jobresult import JobResult
from core.train import lineage
from core.train.crf import constrain_bioes, viterbi_decode
from core.train.ner_model import Batch, NerModel, build_ner_model, label_set, load_ner_model
from core.train.ner_predict import evaluate, predict_corpus, scores_from_tags, write_predictions
from core.train.quality import weak_f1_reason
from core.train.training import (
    Checkpointer,
    Log,
    LoopConfig,
    Metric,
    Progress,
    TrainLoop,
    adamw,
    device_and_precision,
    epoch_order,
    grad_scaler,
    set_seed,
)

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import NerParams


def preset_config(name: str = DEFAULT_PRESET, **overrides: Any) -> NerConfig:
    """The recipe of a preset (core.recipes.presets, the one table) with the overrides that are set."""
    return NerConfig.from_dict(ner_settings(name, **overrides))


# --------------------------------------------------------------------------- prediction contract


# --------------------------------------------------------------------------- encoding


# --------------------------------------------------------------------------- model


# --------------------------------------------------------------------------- prediction


# --------------------------------------------------------------------------- evaluation


# --------------------------------------------------------------------------- training


def _check_labeled(corpus: Corpus, what: str) -> Corpus:
    if corpus is None or corpus.tags is None:
        raise UserError(f"the {what} corpus has no tags; NER training needs labeled CoNLL/JSONL data")
    if not len(corpus):
        raise UserError(f"the {what} corpus is empty")
    return corpus.with_scheme(TagScheme.BIOES)


class EncodedCorpus:
    """A labeled corpus tokenized once (sub-token ids, first sub-token of each word, tag ids), so
    a training step only pads a batch instead of re-running the tokenizer every epoch."""

    def __init__(self, model: NerModel, corpus: Corpus, chunk: int = 256):
        self.ids: list[list[int]] = []
        self.firsts: list[list[int]] = []
        for start in range(0, len(corpus), chunk):
            batch = model.encode(corpus.tokens[start:start + chunk])
            lengths = batch.attention_mask.sum(1).tolist()
            for b, (n_sub, n_words) in enumerate(zip(lengths, batch.n_words)):
                self.ids.append(batch.input_ids[b, :n_sub].tolist())
                self.firsts.append(batch.word_index[b, :n_words].tolist())
        index = model.label_index
        self.tags = [[index.get(t, 0) for t in cut_tags(seq, len(f))]
                     for seq, f in zip(corpus.tags or [[] for _ in self.ids], self.firsts)]
        self.pad_id = model.tokenizer.pad_token_id or 0

    def __len__(self) -> int:
        return len(self.ids)

    def lengths(self) -> list[int]:
        return [len(x) for x in self.ids]

    def collate(self, idx: Sequence[int]) -> tuple[Batch, torch.Tensor]:
        """Pad the chosen sentences to the longest of them (sub-tokens and words)."""
        seq = max(len(self.ids[i]) for i in idx)
        width = max(1, max(len(self.firsts[i]) for i in idx))
        input_ids = torch.full((len(idx), seq), self.pad_id, dtype=torch.long)
        attention = torch.zeros(len(idx), seq, dtype=torch.long)
        word_index = torch.zeros(len(idx), width, dtype=torch.long)
        word_mask = torch.zeros(len(idx), width, dtype=torch.bool)
        tags = torch.zeros(len(idx), width, dtype=torch.long)
        for b, i in enumerate(idx):
            n, w = len(self.ids[i]), len(self.firsts[i])
            input_ids[b, :n] = torch.tensor(self.ids[i])
            attention[b, :n] = 1
            if w:
                word_index[b, :w] = torch.tensor(self.firsts[i])
                word_mask[b, :w] = True
                tags[b, :w] = torch.tensor(self.tags[i])
        return Batch(input_ids, attention, word_index, word_mask, [len(self.firsts[i]) for i in idx]), tags


def bucketed_batches(lengths: Sequence[int], batch_size: int, seed: int, epoch: int, bucket: int) -> list[list[int]]:
    """One epoch's batches, a pure function of (seed, epoch): the shuffled order is cut into
    chunks of `bucket` batches, each chunk sorted by length and cut into batches (so a batch
    pads to similar lengths), and the batches are shuffled again. bucket <= 1: plain shuffle.

    >>> sorted(len(b) for b in bucketed_batches([5, 1, 9, 3, 7], 2, seed=1, epoch=0, bucket=4))
    [1, 2, 2]
    """
    order = epoch_order(len(lengths), seed, epoch)
    if bucket <= 1:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    span = batch_size * bucket
    batches = []
    for start in range(0, len(order), span):
        chunk = sorted(order[start:start + span], key=lambda i: lengths[i])
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    g = torch.Generator().manual_seed(seed * 100_003 + epoch + 7)
    return [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]


@torch.no_grad()
def _fast_scores(model: NerModel, data: EncodedCorpus, gold: Sequence[Sequence[str]], batch_size: int, device: str) -> dict[str, Any]:
    """Dev F1 for early stopping: Viterbi only (the CRF marginals behind c1/c2 are not needed),
    on pre-encoded, length-sorted batches; the same tags and scores as `evaluate`."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(data)), key=lambda i: len(data.ids[i]))
    pred: list[list[str] | None] = [None] * len(data)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch, _ = data.collate(idx)
        paths = viterbi_decode(model.crf, model.word_emissions(batch.to(device)), batch.word_mask.to(device))
        for k, i in enumerate(idx):
            n = len(gold[i])
            bioes = [model.labels[t] for t in paths[k]] + ["O"] * (n - len(paths[k]))
            pred[i] = tags_from_spans(spans_from_tags(bioes, TagScheme.BIOES), n, TagScheme.BIOES)
    if was_training:
        model.train()
    return scores_from_tags(gold, pred)


def train_ner(train: Corpus, dev: Corpus | None, model: str | ModelRef, out_dir: str | Path, config: NerConfig | None = None,
              progress: Progress | None = None, log: Log | None = None, metric: Metric | None = None,
              checkpoint_dir: str | Path | None = None, overwrite: bool = False) -> dict[str, Any]:
    """Fine-tune encoder + CRF on `train`, keep the best model on `dev` F1 in `out_dir`.

    Runs on the shared `core.train.training.TrainLoop`: with `checkpoint_dir`, a resumable checkpoint
    is written every `checkpoint_every` steps; calling again with the same folder continues from
    it (same shuffled order, same RNG, same early-stopping counters). Returns a summary dict.
    """
    config = config or NerConfig()
    log = log or (lambda _m: None)
    metric = metric or (lambda **_k: None)
    out_dir = Path(out_dir)
    train_b = _check_labeled(train, "training")
    dev_b = _check_labeled(dev, "dev") if dev is not None else None
    if dev_b is not None and config.dev_limit:
        dev_b = dev_b.subset(range(min(config.dev_limit, len(dev_b))))
    keep = [i for i, t in enumerate(train_b.tokens) if t]
    train_b = train_b.subset(keep)
    if not keep:
        raise UserError("the training corpus has only empty sentences")
    ckpt = Checkpointer(checkpoint_dir) if checkpoint_dir is not None else None
    state = ckpt.load() if ckpt is not None else None
    if state is None and out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise UserError(f"output folder {out_dir} already exists and is not empty; choose another --out or pass --overwrite")

    set_seed(config.seed)
    device, precision = device_and_precision(config.device, config.precision)
    labels = state["labels"] if state else label_set(train_b, dev_b)
    ner = build_ner_model(model, labels, dropout=config.dropout, max_length=config.max_length, seed=config.seed)
    if config.constrain_bioes:
        constrain_bioes(ner.crf, labels)
    ner.to(device)
    head = [p for n, p in ner.named_parameters() if not n.startswith("encoder.")]
    groups = [{"params": list(ner.encoder.parameters()), "lr": config.lr},
              {"params": head, "lr": config.head_lr or config.lr}]
    optimizer = adamw(groups, lr=config.lr, betas=tuple(config.betas), weight_decay=config.weight_decay)
    n = len(train_b)
    if config.grad_accum < 1:
        raise UserError(f"grad_accum must be at least 1, got {config.grad_accum}")
    micro = max(1, math.ceil(config.batch_size / config.grad_accum))
    steps_per_epoch = math.ceil(math.ceil(n / micro) / config.grad_accum)
    total_steps = config.epochs * steps_per_epoch
    if config.max_steps:
        total_steps = min(total_steps, config.max_steps)
    warmup = int(config.warmup_ratio * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)

    train_data = EncodedCorpus(ner, train_b)
    lengths = train_data.lengths()
    dev_data = EncodedCorpus(ner, dev_b) if dev_b is not None else None
    best: dict[str, Any] = {}

    def forward(idx: list[int]) -> tuple[torch.Tensor, int]:
        batch, tags = train_data.collate(idx)
        return ner.loss(batch.to(device), tags.to(device)), len(idx)

    def remember_best(score: float, epoch: int) -> None:
        best.update(state={k: v.detach().clone() for k, v in ner.state_dict().items()}, extra={"best_dev_f1": score, "epoch": epoch},
                    dirty=True)
        log(f"  new best dev F1 {score:.4f} (epoch {epoch})")

    def flush_best() -> None:
        if best.get("dirty"):
            ner.save(out_dir, best["extra"], state=best["state"])
            best["dirty"] = False

    loop = TrainLoop(
        ner, optimizer, scheduler, grad_scaler(device, precision),
        LoopConfig(epochs=config.epochs, seed=config.seed, max_steps=config.max_steps, grad_clip=config.grad_clip,
                   checkpoint_every=config.checkpoint_every, log_every=config.log_every, eval_every=config.eval_every,
                   patience=config.patience if dev_b is not None else None, min_delta=config.min_delta, unit="sentences",
                   grad_accum=config.grad_accum),
        plan=lambda epoch: bucketed_batches(lengths, micro, config.seed, epoch, config.bucket),
        forward=forward, device=device, precision=precision, total_steps=total_steps, checkpoint_dir=checkpoint_dir,
        evaluate=(lambda: _fast_scores(ner, dev_data, dev_b.tags, config.eval_batch_size, device)) if dev_data is not None else None,
        on_best=remember_best, flush_best=flush_best, extra={"labels": labels, "config": asdict(config)},
        progress=progress, log=log, metric=metric,
        progress_message=lambda st, loss: f"epoch {st.epoch + 1}, step {st.step}, loss {loss:.3f}"
        + (f", best dev F1 {st.best:.3f}" if st.best >= 0 else ""))
    if state is not None:
        loop.restore(state)
        st = loop.state
        log(f"resumed from checkpoint at step {st.step} (epoch {st.epoch + 1}, batch {st.position}); best dev F1 so far {st.best:.4f}")

    log("Running NER training\n"
        f"  model: {ner.base_model} | labels: {len(labels)} (BIOES) | device: {device} ({precision})\n"
        f"  train sentences: {n} | dev sentences: {len(dev_b) if dev_b is not None else 0} (every {config.eval_every} epoch(s))\n"
        f"  epochs: up to {config.epochs} (patience {config.patience}, min gain {config.min_delta}) | batch: {config.batch_size} "
        + (f"({config.grad_accum} x {micro}) " if config.grad_accum > 1 else "")
        + f"(length buckets of {config.bucket}) | steps/epoch: {steps_per_epoch}\n"
        f"  lr: encoder {config.lr}, head {config.head_lr or config.lr} | weight decay {config.weight_decay}")
    st = loop.run()
    if dev_b is None or st.best_epoch < 0:
        ner.save(out_dir, {"epoch": st.epoch})
    seconds = loop.seconds
    if progress is not None:
        progress(1.0, f"done: best dev F1 {st.best:.4f}" if dev_b is not None else "done")
    best = f", best dev F1 {st.best:.4f} at epoch {st.best_epoch}" if dev_b is not None else " (no DEV: the last epoch's model)"
    log(f"NER training finished in {seconds:.1f}s: {st.step} steps{best}; model in {out_dir}")
    return {"out_dir": str(out_dir), "best_dev_f1": st.best if dev_b is not None else None, "best_epoch": st.best_epoch,
            "epochs_run": st.epoch, "steps": st.step, "train_sentences": n, "labels": labels, "seconds": seconds,
            "sentences_per_s": loop.units / seconds if seconds > 0 else None, "device": device, "precision": precision}


# --------------------------------------------------------------------------- jobs


def ner_train_job(params: NerParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "ner": BERT-CRF on `train`, early stopping on `dev`, F1 and predictions on `test`; records its lineage."""
    started = time.time()
    ws = ctx.workspace
    train = ws.resolve_corpus(params.train)
    dev = ws.resolve_corpus(params.dev) if params.dev else None
    test = ws.resolve_corpus(params.test) if params.test else None
    out = Path(params.out or ctx.run_dir / "model")
    config = preset_config(params.preset, **params.config)
    result = train_ner(train, dev, params.model, out, config, progress=ctx.sub(0, 0.9 if test else 1.0),
                       log=ctx.log, metric=ctx.metric, checkpoint_dir=ctx.run_dir, overwrite=True)
    if test is not None:
        model = load_ner_model(out)
        preds = predict_corpus(model, test, batch_size=config.eval_batch_size, device=config.device, progress=ctx.sub(0.9, 1.0, "test: "))
        scores = evaluate(model, test, predictions=preds)
        write_predictions(ctx.run_dir / "test_predictions.jsonl", preds, test)
        ctx.metric(step=result["steps"], test_f1=scores["f1"])
        ctx.log(f"test F1 {scores['f1']:.4f} (P {scores['precision']:.4f} R {scores['recall']:.4f}) on {len(test)} sentences")
        result["test"] = scores
    outcome = JobResult.from_dict(result)
    f1 = outcome.test_f1 if outcome.test else outcome.best_dev_f1
    if warning := weak_f1_reason(f1, train, test or dev, steps=outcome.steps, preset=params.preset):
        ctx.log(f"warning: {warning}")  # the job panel and the terminal show it; Runs shows result["warning"]
        result["warning"] = warning
    lineage.record_ner(ws, ctx.run_id, model=params.model, train=params.train, dev=params.dev, test=params.test,
                       seed=config.seed, preset=params.preset, result=result, run_dir=ctx.run_dir, seconds=time.time() - started)
    Checkpointer(ctx.run_dir).discard()  # only now: a retry after a failure above resumes a finished run, not retrains
    return result


