"""BERT-CRF named entity recognition: model, training, prediction with confidences, evaluation.

The model is encoder -> dropout -> linear emissions -> CRF (pytorch-crf), trained on
BIOES tags (the seed paper's scheme) with labels on the first sub-token of each word;
the CRF runs over words, not sub-tokens, so its transitions are word-to-word.

Prediction contract (other modules code against it, keep it exact):
`load_ner_model(path) -> NerModel`, `predict_corpus(model, corpus, batch_size=32,
device="auto", progress=None) -> list[Prediction]`, `Prediction.to_dict()`.

The saved model folder is a plain transformers encoder folder (config.json,
model.safetensors, tokenizer: loadable by core.lm.models.load_encoder, this is "B2")
plus `ner_head.safetensors` (emission layer + CRF) and `ner_config.json`.

>>> cfg = preset_config("demo", epochs=2)
>>> cfg.epochs, cfg.head_lr, cfg.lr
(2, 0.001, 5e-05)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from core.data.corpus import Corpus
from core.data.tags import Span, TagScheme, entity_types, spans_from_tags, tags_from_spans
from core.errors import ModelError, UserError
from core.lm.models import ModelRef, load_encoder, load_tokenizer, pick_device, resolve_model
from core.train.crf import CRF, constrain_bioes, sequence_confidences
from core.train.training import (
    Checkpointer,
    Log,
    LoopConfig,
    Metric,
    Progress,
    TrainLoop,
    adamw,
    apply_cpu_threads,
    atomic_dir,
    check_settings,
    device_and_precision,
    epoch_order,
    grad_scaler,
    preset_settings,
    set_seed,
)

HEAD_FILE = "ner_head.safetensors"
CONFIG_FILE = "ner_config.json"
PREFIXES = ("B", "I", "E", "S")


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
    batch_size: int = 16
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
    checkpoint_every: int = 100  # steps between resumable checkpoints (also at each epoch end)
    log_every: int = 10  # steps between metric lines
    constrain_bioes: bool = True  # start impossible BIOES transitions at -1e4 (see core.train.crf.constrain_bioes)
    device: str = "auto"
    precision: str = "auto"  # bf16/fp16 autocast on GPU, fp32 on CPU

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NerConfig:
        check_settings(cls, d, "NER")
        d = dict(d)
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)


PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    # ~1.5 min alone on 2 CPU cores for the demo's 150 LC sentences: fewer epochs, a faster head, a dev subset.
    # Measured on the demo (seed 1): early stop at epoch 14, dev F1 0.922, test F1 0.886.
    "demo": {"epochs": 20, "patience": 5, "lr": 5e-5, "head_lr": 1e-3, "dev_limit": 100, "batch_size": 16},
    # Seconds: for tests and checking that a setup works end to end.
    "tiny": {"epochs": 3, "patience": 3, "lr": 1e-3, "head_lr": 1e-2, "batch_size": 8, "dev_limit": 50},
    # Experiments on CPU (scripts/crossner_study.py): to convergence on the whole DEV, so F1 differences between
    # pretraining recipes are not early-stopping noise; a faster head than `paper` so ~100 sentences converge in
    # tens of epochs. Gains <= 0.002 dev F1 count as flat, so a plateau ends the run instead of resetting patience.
    "study": {"epochs": 60, "patience": 8, "min_delta": 0.002, "lr": 5e-5, "head_lr": 1e-3, "batch_size": 16},
}


def preset_config(name: str = "paper", **overrides: Any) -> NerConfig:
    return NerConfig.from_dict(preset_settings(PRESETS, name, "NER", overrides))


# --------------------------------------------------------------------------- prediction contract


@dataclass
class Prediction:
    tokens: list[str]
    tags: list[str]  # BIO
    spans: list[Span]
    c1: float  # CRF posterior of the decoded sequence
    c2: float  # min over positions of the decoded tag's marginal

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "tags": self.tags, "spans": [s.to_dict() for s in self.spans],
                "c1": self.c1, "c2": self.c2, "n_entities": len(self.spans)}


def label_set(*corpora: Corpus) -> list[str]:
    """O plus B/I/E/S of every entity type in the corpora (all four, so any span length can be decoded)."""
    types: set[str] = set()
    for c in corpora:
        if c is not None and c.tags is not None:
            types.update(entity_types(c.tags))
    return ["O"] + [f"{p}-{t}" for t in sorted(types) for p in PREFIXES]


# --------------------------------------------------------------------------- encoding


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, S)
    attention_mask: torch.Tensor  # (B, S)
    word_index: torch.Tensor  # (B, W) position of each word's first sub-token (0 for padding)
    word_mask: torch.Tensor  # (B, W) bool
    n_words: list[int]  # words covered per sentence (the rest were truncated away)

    def to(self, device: str) -> Batch:
        return replace(self, input_ids=self.input_ids.to(device), attention_mask=self.attention_mask.to(device),
                       word_index=self.word_index.to(device), word_mask=self.word_mask.to(device))


def encode_words(tokenizer, sentences: Sequence[Sequence[str]], max_length: int) -> Batch:
    """Tokenize pre-split sentences and find each word's first sub-token via the fast
    tokenizer's word_ids. A word that yields no sub-token (e.g. a zero-width space the
    normalizer strips) is retried as the unknown token, so every covered word gets a label."""
    sentences = [list(s) for s in sentences]
    enc = tokenizer(sentences, is_split_into_words=True, truncation=True, max_length=max_length, padding=True,
                    return_tensors="pt")
    firsts: list[list[int]] = []
    retry = False
    for b, words in enumerate(sentences):
        first: dict[int, int] = {}
        for pos, w in enumerate(enc.word_ids(b)):
            if w is not None and w not in first:
                first[w] = pos
        truncated = int(enc["attention_mask"][b].sum()) >= max_length
        covered = (max(first) + 1 if first else 0) if truncated else len(words)
        missing = [w for w in range(covered) if w not in first]
        if missing:
            retry = True
            for w in missing:
                words[w] = tokenizer.unk_token
        firsts.append([first[w] for w in range(covered)] if not missing else [])
    if retry:
        return encode_words(tokenizer, sentences, max_length)
    width = max((len(f) for f in firsts), default=0) or 1
    word_index = torch.zeros(len(sentences), width, dtype=torch.long)
    word_mask = torch.zeros(len(sentences), width, dtype=torch.bool)
    for b, f in enumerate(firsts):
        word_index[b, : len(f)] = torch.tensor(f, dtype=torch.long)
        word_mask[b, : len(f)] = True
    return Batch(enc["input_ids"], enc["attention_mask"], word_index, word_mask, [len(f) for f in firsts])


# --------------------------------------------------------------------------- model


class NerModel(nn.Module):
    """Encoder + dropout + linear emissions + CRF over words."""

    def __init__(self, encoder: nn.Module, tokenizer, labels: Sequence[str], dropout: float = 0.1,
                 max_length: int = 256, base_model: str = ""):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.label_index = {t: i for i, t in enumerate(self.labels)}
        self.base_model = base_model
        self.max_length = min(max_length, getattr(encoder.config, "max_position_embeddings", max_length))
        self.dropout = nn.Dropout(dropout)
        self.emissions = nn.Linear(encoder.config.hidden_size, len(self.labels))
        self.crf = CRF(len(self.labels), batch_first=True)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def encode(self, sentences: Sequence[Sequence[str]]) -> Batch:
        return encode_words(self.tokenizer, sentences, self.max_length)

    def word_emissions(self, batch: Batch) -> torch.Tensor:
        hidden = self.encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state  # (B, S, H)
        index = batch.word_index.unsqueeze(-1).expand(-1, -1, hidden.size(-1))  # (B, W, H)
        words = hidden.gather(1, index)  # (B, W, H): first sub-token of each word
        return self.emissions(self.dropout(words)).float()  # (B, W, T); the CRF always runs in fp32

    def loss(self, batch: Batch, tag_ids: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of the gold tag sequences."""
        return -self.crf(self.word_emissions(batch), tag_ids, batch.word_mask, reduction="mean")

    @torch.no_grad()
    def decode(self, batch: Batch) -> tuple[list[list[int]], list[float], list[float]]:
        emissions = self.word_emissions(batch)
        paths = self.crf.decode(emissions, batch.word_mask)
        c1, c2 = sequence_confidences(self.crf, emissions, batch.word_mask, paths)
        return paths, c1, c2

    def head_state(self) -> dict[str, torch.Tensor]:
        return {f"emissions.{k}": v for k, v in self.emissions.state_dict().items()} | {
            f"crf.{k}": v for k, v in self.crf.state_dict().items()}

    def save(self, out_dir: str | Path, extra: dict[str, Any] | None = None, state: dict[str, torch.Tensor] | None = None) -> Path:
        """Write the model folder atomically (temp folder, then rename): a reader or a kill
        never sees half a model. `state` (a `state_dict()` copy, e.g. the best epoch's kept in
        memory by train_ner) is written instead of the current weights."""
        from safetensors.torch import save_file

        if state is None:
            encoder_state, head = None, self.head_state()
        else:
            encoder_state = {k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.")}
            head = {k: v for k, v in state.items() if k.startswith(("emissions.", "crf."))}
        with atomic_dir(out_dir) as tmp:
            self.encoder.save_pretrained(tmp, state_dict=encoder_state)
            self.tokenizer.save_pretrained(tmp)
            save_file({k: v.detach().cpu().contiguous() for k, v in head.items()}, str(tmp / HEAD_FILE))
            cfg = {"labels": self.labels, "scheme": TagScheme.BIOES.value, "base_model": self.base_model,
                   "dropout": self.dropout.p, "max_length": self.max_length, "created_by": "core.train.ner", **(extra or {})}
            (tmp / CONFIG_FILE).write_text(json.dumps(cfg, indent=2), "utf-8")
        return Path(out_dir)


def _require_fast(tokenizer, ref: ModelRef) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"model {ref.name!r} has no fast tokenizer (tokenizer.json); NER needs word_ids() to align labels")


def build_ner_model(model: str | ModelRef, labels: Sequence[str], dropout: float = 0.1, max_length: int = 256) -> NerModel:
    ref = resolve_model(model) if not isinstance(model, ModelRef) else model
    tokenizer = load_tokenizer(ref)
    _require_fast(tokenizer, ref)
    return NerModel(load_encoder(ref), tokenizer, labels, dropout=dropout, max_length=max_length, base_model=ref.name)


def load_ner_model(path: str | Path) -> NerModel:
    """A fine-tuned model folder written by `train_ner` (or NerModel.save)."""
    from safetensors.torch import load_file

    ref = resolve_model(str(path))
    cfg = ref.ner_config()
    if cfg is None or not (Path(ref.load_path) / HEAD_FILE).exists():
        raise ModelError(f"{path} is not a fine-tuned NER model folder (no {CONFIG_FILE} / {HEAD_FILE}); train one with `ner train`")
    tokenizer = load_tokenizer(ref)
    _require_fast(tokenizer, ref)
    model = NerModel(load_encoder(ref), tokenizer, cfg["labels"], dropout=cfg.get("dropout", 0.1),
                     max_length=cfg.get("max_length", 256), base_model=cfg.get("base_model", ""))
    head = load_file(str(Path(ref.load_path) / HEAD_FILE))
    model.emissions.load_state_dict({k.split(".", 1)[1]: v for k, v in head.items() if k.startswith("emissions.")})
    model.crf.load_state_dict({k.split(".", 1)[1]: v for k, v in head.items() if k.startswith("crf.")})
    model.eval()
    return model


# --------------------------------------------------------------------------- prediction


def predict_corpus(model: NerModel, corpus: Corpus, batch_size: int = 32, device: str = "auto",
                   progress: Progress | None = None) -> list[Prediction]:
    """Viterbi tags, spans and (c1, c2) for every sentence, in corpus order. Sentences are
    batched by length (less padding), empty sentences get no spans and confidence 1."""
    dev = pick_device(device)
    if dev == "cpu":
        apply_cpu_threads()
    model.to(dev)
    was_training = model.training
    model.eval()
    n = len(corpus)
    out: list[Prediction | None] = [None] * n
    order = sorted((i for i in range(n) if corpus.tokens[i]), key=lambda i: len(corpus.tokens[i]))
    for i in range(n):
        if not corpus.tokens[i]:
            out[i] = Prediction([], [], [], 1.0, 1.0)
    done = n - len(order)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        sents = [corpus.tokens[i] for i in idx]
        batch = model.encode(sents).to(dev)
        paths, c1, c2 = model.decode(batch)
        for k, i in enumerate(idx):
            words = sents[k]
            bioes = [model.labels[t] for t in paths[k]] + ["O"] * (len(words) - len(paths[k]))  # truncated tail: O
            spans = spans_from_tags(bioes, TagScheme.BIOES)
            out[i] = Prediction(list(words), tags_from_spans(spans, len(words), TagScheme.BIO), spans, float(c1[k]), float(c2[k]))
        done += len(idx)
        if progress is not None:
            progress(done / max(n, 1), f"{done:,}/{n:,} sentences")
    if was_training:
        model.train()
    return [p for p in out if p is not None]


PREDICT_CHUNK = 20_000  # sentences read, predicted and written at a time by predict_to_file


def predict_to_file(model: NerModel, corpus: Any, path: str | Path, batch_size: int = 32, device: str = "auto",
                    progress: Progress | None = None, chunk: int = PREDICT_CHUNK) -> dict[str, Any]:
    """`predict_corpus` over a corpus of any size (a `core.data.stream.CorpusStream`, e.g. DC read in
    record batches, or a `Corpus`), written as `write_predictions` JSON lines chunk by chunk:
    memory is one chunk of sentences and predictions, never the corpus. The file appears
    atomically when complete. Returns {sentences, entities, mean_c1, path}."""
    import os

    from core.data.atomic import temp_path_for
    from core.data.stream import CorpusStream

    stream = CorpusStream.of(corpus)
    n, done, entities, c1_sum = len(stream), 0, 0, 0.0
    path = Path(path)
    tmp = temp_path_for(path)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for part in stream.batches(chunk):
                sub = None if progress is None else (
                    lambda f, m, d=done, k=len(part): progress((d + f * k) / max(n, 1), f"{d + int(f * k):,}/{n:,} sentences"))
                preds = predict_corpus(model, part, batch_size, device, sub)
                for line in _prediction_lines(preds, part if part.labeled else None):
                    fh.write(line + "\n")
                done += len(part)
                entities += sum(len(p.spans) for p in preds)
                c1_sum += sum(p.c1 for p in preds)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {"sentences": done, "entities": entities, "mean_c1": c1_sum / max(done, 1), "path": str(path)}


# --------------------------------------------------------------------------- evaluation


def scores_from_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Span-level micro P/R/F1 and per type with seqeval (strict mode, IOBES), as in the
    seed's Tables 3 and 4. Both inputs are BIOES tag sequences."""
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOBES

    report = classification_report([list(t) for t in gold], [list(t) for t in pred], mode="strict", scheme=IOBES,
                                   output_dict=True, zero_division=0)
    micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 0})
    per_type = {k: {"precision": float(v["precision"]), "recall": float(v["recall"]), "f1": float(v["f1-score"]),
                    "support": int(v["support"])}
                for k, v in report.items() if not k.endswith(" avg")}
    return {"f1": float(micro["f1-score"]), "precision": float(micro["precision"]), "recall": float(micro["recall"]),
            "support": int(micro["support"]), "per_type": per_type}


def evaluate(model: NerModel, test: Corpus, batch_size: int = 64, device: str = "auto",
             progress: Progress | None = None, predictions: list[Prediction] | None = None) -> dict[str, Any]:
    """`f1`, `precision`, `recall`, `per_type` ({type: {precision, recall, f1, support}}) on a labeled corpus."""
    if test.tags is None:
        raise UserError(f"corpus {test.name or ''!r} has no tags; evaluation needs a labeled corpus")
    preds = predictions if predictions is not None else predict_corpus(model, test, batch_size, device, progress)
    gold = test.with_scheme(TagScheme.BIOES).tags
    pred = [tags_from_spans(p.spans, len(p.tokens), TagScheme.BIOES) for p in preds]
    result = scores_from_tags(gold, pred)
    result["sentences"] = len(test)
    return result


# --------------------------------------------------------------------------- training


def _check_labeled(corpus: Corpus, what: str) -> Corpus:
    if corpus is None or corpus.tags is None:
        raise UserError(f"the {what} corpus has no tags; NER training needs labeled CoNLL/JSONL data")
    if not len(corpus):
        raise UserError(f"the {what} corpus is empty")
    return corpus.with_scheme(TagScheme.BIOES)


def _tag_ids(model: NerModel, tags: Sequence[Sequence[str]], width: int) -> torch.Tensor:
    ids = torch.zeros(len(tags), width, dtype=torch.long)
    for b, seq in enumerate(tags):
        seq = seq[:width]
        ids[b, : len(seq)] = torch.tensor([model.label_index.get(t, 0) for t in seq], dtype=torch.long)
    return ids


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
        self.tags = [[index.get(t, 0) for t in seq[: len(f)]] for seq, f in zip(corpus.tags or [[] for _ in self.ids], self.firsts)]
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
        paths = model.crf.decode(model.word_emissions(batch.to(device)), batch.word_mask.to(device))
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
    ner = build_ner_model(model, labels, dropout=config.dropout, max_length=config.max_length)
    if config.constrain_bioes:
        constrain_bioes(ner.crf, labels)
    ner.to(device)
    head = [p for n, p in ner.named_parameters() if not n.startswith("encoder.")]
    groups = [{"params": list(ner.encoder.parameters()), "lr": config.lr},
              {"params": head, "lr": config.head_lr or config.lr}]
    optimizer = adamw(groups, lr=config.lr, betas=tuple(config.betas), weight_decay=config.weight_decay)
    n = len(train_b)
    steps_per_epoch = math.ceil(n / config.batch_size)
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
                   patience=config.patience if dev_b is not None else None, min_delta=config.min_delta, unit="sentences"),
        plan=lambda epoch: bucketed_batches(lengths, config.batch_size, config.seed, epoch, config.bucket),
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
        f"(length buckets of {config.bucket}) | steps/epoch: {steps_per_epoch}\n"
        f"  lr: encoder {config.lr}, head {config.head_lr or config.lr} | weight decay {config.weight_decay}")
    st = loop.run()
    if dev_b is None or st.best_epoch < 0:
        ner.save(out_dir, {"epoch": st.epoch})
    seconds = loop.seconds
    if progress is not None:
        progress(1.0, f"done: best dev F1 {st.best:.4f}" if dev_b is not None else "done")
    log(f"NER training finished in {seconds:.1f}s: {st.step} steps, best dev F1 {st.best:.4f} at epoch {st.best_epoch}; model in {out_dir}")
    return {"out_dir": str(out_dir), "best_dev_f1": st.best if dev_b is not None else None, "best_epoch": st.best_epoch,
            "epochs_run": st.epoch, "steps": st.step, "train_sentences": n, "labels": labels, "seconds": seconds,
            "sentences_per_s": loop.units / seconds if seconds > 0 else None, "device": device, "precision": precision}


# --------------------------------------------------------------------------- jobs


def _config_from_params(params: dict[str, Any]) -> NerConfig:
    return preset_config(params.get("preset", "demo"), **(params.get("config") or {}))


def write_predictions(path: str | Path, predictions: Sequence[Prediction], gold: Corpus | None = None) -> Path:
    """JSON lines: one prediction per sentence (+ gold spans when the corpus is labeled), atomically."""
    from core.data.workspace import atomic_write_text

    lines = list(_prediction_lines(predictions, gold))
    return atomic_write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def _prediction_lines(predictions: Sequence[Prediction], gold: Corpus | None = None) -> Iterator[str]:
    """One JSON line per prediction (+ gold spans): the format of write_predictions and predict_to_file."""
    for i, p in enumerate(predictions):
        d = p.to_dict()
        if gold is not None and gold.tags is not None:
            d["gold_spans"] = [s.to_dict() for s in spans_from_tags(gold.tags[i], gold.scheme)]
        yield json.dumps(d, ensure_ascii=False)


def read_predictions(path: str | Path, limit: int | None = None, only_errors: bool = False) -> list[dict[str, Any]]:
    """Rows of a predictions file with spans as `Span`s (`spans`, and `gold` when present) and
    `errors`, the number of predicted and gold spans without an exact match."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            pred = [Span(**s) for s in d["spans"]]
            gold = [Span(**s) for s in d["gold_spans"]] if "gold_spans" in d else None
            errors = len(set(pred) ^ set(gold)) if gold is not None else 0
            if only_errors and not errors:
                continue
            rows.append({**d, "spans": pred, "gold": gold, "errors": errors})
            if limit is not None and len(rows) >= limit:
                break
    return rows


def ner_train_job(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Job kind "ner": params train, dev, test (corpus names/roles/paths), model, preset, config, out."""
    ws = ctx.workspace
    train = ws.resolve_corpus(params.get("train", "lc"))
    dev = ws.resolve_corpus(params["dev"]) if params.get("dev") else None
    test = ws.resolve_corpus(params["test"]) if params.get("test") else None
    out = Path(params.get("out") or ctx.run_dir / "model")
    config = _config_from_params(params)
    result = train_ner(train, dev, params.get("model", "default"), out, config, progress=ctx.sub(0, 0.9 if test else 1.0),
                       log=ctx.log, metric=ctx.metric, checkpoint_dir=ctx.run_dir, overwrite=True)
    if test is not None:
        model = load_ner_model(out)
        preds = predict_corpus(model, test, batch_size=config.eval_batch_size, device=config.device, progress=ctx.sub(0.9, 1.0, "test: "))
        scores = evaluate(model, test, predictions=preds)
        write_predictions(ctx.run_dir / "test_predictions.jsonl", preds, test)
        ctx.metric(step=result["steps"], test_f1=scores["f1"])
        ctx.log(f"test F1 {scores['f1']:.4f} (P {scores['precision']:.4f} R {scores['recall']:.4f}) on {len(test)} sentences")
        result["test"] = scores
    from core.adapt.quality import weak_f1_reason

    f1 = (result.get("test") or {}).get("f1", result.get("best_dev_f1"))
    if warning := weak_f1_reason(f1, train, test or dev, steps=result.get("steps"), preset=params.get("preset")):
        ctx.log(f"warning: {warning}")  # the job panel and the terminal show it; Runs shows result["warning"]
        result["warning"] = warning
    return result


def ner_predict_job(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Job kind "predict": params model (folder), corpus, batch_size, out (default run_dir/predictions.jsonl).
    An unlabeled workspace corpus (DC) is read and written chunk by chunk (predict_to_file)."""
    from core.data.stream import CorpusStream

    stream = CorpusStream.from_workspace(ctx.workspace, params["corpus"])
    if stream is not None and not ctx.workspace.corpus_info(stream.name).labeled:
        model = load_ner_model(params["model"])
        result = predict_to_file(model, stream, params.get("out") or ctx.run_dir / "predictions.jsonl",
                                 batch_size=int(params.get("batch_size", 32)), progress=ctx.sub(0, 0.95))
        ctx.log(f"predicted {result['sentences']} sentences into {result['path']}")
        return result
    corpus = ctx.workspace.resolve_corpus(params["corpus"])
    model = load_ner_model(params["model"])
    preds = predict_corpus(model, corpus, batch_size=int(params.get("batch_size", 32)), progress=ctx.sub(0, 0.95))
    out = write_predictions(params.get("out") or ctx.run_dir / "predictions.jsonl", preds, corpus if corpus.labeled else None)
    result: dict[str, Any] = {"sentences": len(preds), "entities": sum(len(p.spans) for p in preds), "path": str(out),
                              "mean_c1": sum(p.c1 for p in preds) / max(len(preds), 1)}
    if corpus.labeled:
        result["scores"] = evaluate(model, corpus, predictions=preds)
    ctx.log(f"predicted {len(preds)} sentences into {out}")
    return result


__all__ = ["NerConfig", "NerModel", "PRESETS", "Prediction", "build_ner_model", "evaluate", "label_set", "load_ner_model",
           "ner_predict_job", "ner_train_job", "predict_corpus", "predict_to_file", "preset_config", "read_predictions",
           "scores_from_tags", "train_ner",
           "write_predictions"]
