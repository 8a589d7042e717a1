"""Tiny random BERTs for fast tests, with a WordPiece vocabulary trained on the test
corpus itself (tokenizers), so every code path that loads a model folder is exercised
in seconds without any download."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def build_tiny_bert(out_dir: str | Path, sentences: Iterable[str], hidden: int = 32, layers: int = 2,
                    heads: int = 2, with_mlm_head: bool = False, seed: int = 0, vocab_size: int = 400,
                    positions: int = 128) -> Path:
    """Save a randomly initialised BERT (BertModel, or BertForMaskedLM) and its fast tokenizer."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, min_frequency=1)
    tok.train_from_iterator(list(sentences), trainer)
    vocab = tok.get_vocab()
    with open(out / "vocab.txt", "w", encoding="utf-8") as fh:
        for token, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
            fh.write(token + "\n")
    fast = BertTokenizerFast(vocab=dict(vocab), do_lower_case=False)  # transformers 5 takes `vocab`, not `vocab_file`
    fast.save_pretrained(out)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=hidden * 2, max_position_embeddings=positions, pad_token_id=0)
    torch.manual_seed(seed)
    model = BertForMaskedLM(config) if with_mlm_head else BertModel(config)
    model.save_pretrained(out)
    return out


def build_rigged_ner(out_dir: str | Path, base_dir: str | Path, entity_type: str = "LOC") -> Path:
    """An NER model (tiny encoder, BIOES labels of one type) that predicts `S-TYPE` for every word: suggestions a test
    knows in advance, without training (emissions zero but for a large bias on S-TYPE, transitions zero)."""
    import torch

    from core.train.ner_model import build_ner_model

    labels = ["O", f"B-{entity_type}", f"I-{entity_type}", f"E-{entity_type}", f"S-{entity_type}"]
    model = build_ner_model(str(base_dir), labels)
    with torch.no_grad():
        model.emissions.weight.zero_()
        model.emissions.bias.zero_()
        model.emissions.bias[labels.index(f"S-{entity_type}")] = 50.0
        for name in ("transitions", "start_transitions", "end_transitions"):
            getattr(model.crf, name).zero_()
    return model.save(out_dir)
