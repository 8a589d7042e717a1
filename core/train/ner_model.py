"""The BERT-CRF model: encoder -> dropout -> linear emissions -> CRF (pytorch-crf), on BIOES tags (the seed
paper's scheme) with labels on the first sub-token of each word; the CRF runs over words, not sub-tokens.

Prediction contract (other modules code against it, keep it exact): `load_ner_model(path) -> NerModel`,
`core.train.ner_predict.predict_corpus(model, corpus, ...) -> list[Prediction]`, `Prediction.to_dict()`.

The saved model folder is a plain transformers encoder folder (config.json, model.safetensors, tokenizer:
loadable by core.lm.models.load_encoder, this is "B2") plus `ner_head.safetensors` (emission layer + CRF)
and `ner_config.json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from core.data.corpus import Corpus
from core.data.tags import Span, TagScheme, entity_types
from core.errors import ModelError
from core.lm.models import ModelRef, load_encoder, load_tokenizer, resolve_model
from core.train.crf import CRF, log_likelihood, sequence_confidences, viterbi_decode
from core.train.training import atomic_dir, set_seed

HEAD_FILE = "ner_head.safetensors"


CONFIG_FILE = "ner_config.json"


PREFIXES = ("B", "I", "E", "S")


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
        return -log_likelihood(self.crf, self.word_emissions(batch), tag_ids, batch.word_mask).mean()

    @torch.no_grad()
    def decode(self, batch: Batch) -> tuple[list[list[int]], list[float], list[float]]:
        emissions = self.word_emissions(batch)
        paths = viterbi_decode(self.crf, emissions, batch.word_mask)
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
                   "dropout": self.dropout.p, "max_length": self.max_length, "created_by": "core.train.ner_model", **(extra or {})}
            (tmp / CONFIG_FILE).write_text(json.dumps(cfg, indent=2), "utf-8")
        return Path(out_dir)


def _require_fast(tokenizer, ref: ModelRef) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"model {ref.name!r} has no fast tokenizer (tokenizer.json); NER needs word_ids() to align labels")


def build_ner_model(model: str | ModelRef, labels: Sequence[str], dropout: float = 0.1, max_length: int = 256,
                    seed: int | None = None) -> NerModel:
    """A fresh BERT-CRF on `model`'s encoder. With `seed`, the head's initial weights (and every random draw after,
    dropout included) depend on the seed alone, not on the folder: loading an encoder draws random numbers for any
    weight the folder lacks (an MLM model's folder has no pooler), so without the reseed the same encoder weights
    loaded from a base folder and from an MLM snapshot fine-tuned with different heads, by up to 1.5 test F1 on
    CrossNER literature (issue 46's A/A control)."""
    ref = resolve_model(model) if not isinstance(model, ModelRef) else model
    tokenizer = load_tokenizer(ref)
    _require_fast(tokenizer, ref)
    encoder = load_encoder(ref)
    if seed is not None:
        set_seed(seed)
    return NerModel(encoder, tokenizer, labels, dropout=dropout, max_length=max_length, base_model=ref.name)


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
