"""Pseudo-perplexity of sentences under a masked LM (Salazar et al. 2020): each token masked in turn, the
mean negative log-likelihood of the true tokens; the mlm-ppl selection strategy ranks DC by it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.errors import UserError
from core.progress import Progress

_MLMS: dict[str, Any] = {}  # one masked LM kept loaded: a selection job scores DC in several calls


def load_mlm(model: str):
    """(tokenizer, AutoModelForMaskedLM) or a UserError when the MLM head would be freshly
    initialised (e.g. the default encoder): scores from a random head mean nothing."""
    from core.lm.models import load_masked_lm, load_tokenizer, resolve_model

    ref = resolve_model(model)
    mlm, fresh = load_masked_lm(ref)
    if fresh:
        raise UserError(f"strategy 'mlm-ppl' needs an MLM-trained model (B1): {ref.name!r} has no trained masked-LM head "
                        f"({len(fresh)} head weights would be newly initialised, e.g. {fresh[0]}); run MLM training on TC "
                        "and pass its output folder")
    return load_tokenizer(ref), mlm.eval()


def _cached_mlm(model: str):
    """load_mlm once per process: mlm-ppl calls pseudo_perplexities once per DC batch."""
    from core.lm.models import resolve_model

    key = resolve_model(model).fingerprint()
    if key not in _MLMS:
        _MLMS.clear()
        _MLMS[key] = load_mlm(model)
    return _MLMS[key]


def pseudo_perplexities(texts: Sequence[str], model: str, batch_size: int = 64, device: str = "auto",
                        max_length: int | None = None, progress: Progress | None = None) -> np.ndarray:
    """Masked-LM pseudo-perplexity per sentence (Salazar et al. 2020): mask each subword in
    turn, exp of the mean negative log-likelihood of the true subwords. `max_length` None: as far as the model reads
    (its position embeddings, at most 512 subwords), so a long sentence's later subwords count too (a cut at 128
    scored a sentence and the same with 200 words appended alike). Masked copies of
    equal-length sentences share batches, and the vocabulary projection runs only at the
    masked position (where the model exposes its head), which halves the cost for BERT-size vocabularies."""
    import torch

    from core.lm.models import pick_device

    tokenizer, mlm = _cached_mlm(model)
    dev = pick_device(device)
    mlm.to(dev)
    if max_length is None:
        max_length = min(512, int(getattr(mlm.config, "max_position_embeddings", 512) or 512))
    enc = tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)
    items = [(s, p) for s, mask in enumerate(enc["special_tokens_mask"]) for p, special in enumerate(mask) if not special]
    items.sort(key=lambda sp: (len(enc["input_ids"][sp[0]]), sp[0], sp[1]))  # equal lengths together: no padding
    nll = np.zeros(len(texts), dtype=np.float64)
    count = np.zeros(len(texts), dtype=np.int64)
    head = getattr(mlm, "cls", None) or getattr(mlm, "lm_head", None)
    base = getattr(mlm, mlm.base_model_prefix, None)
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            batch = items[start:start + batch_size]
            width = max(len(enc["input_ids"][s]) for s, _ in batch)
            ids = torch.full((len(batch), width), tokenizer.pad_token_id or 0, dtype=torch.long)
            attn = torch.zeros((len(batch), width), dtype=torch.long)
            for r, (s, _) in enumerate(batch):
                row = enc["input_ids"][s]
                ids[r, :len(row)] = torch.tensor(row)
                attn[r, :len(row)] = 1
            pos = torch.tensor([p for _, p in batch])
            rows = torch.arange(len(batch))
            true = ids[rows, pos].clone()
            ids[rows, pos] = tokenizer.mask_token_id
            ids, attn = ids.to(dev), attn.to(dev)
            if head is not None and base is not None:
                hidden = base(input_ids=ids, attention_mask=attn).last_hidden_state  # (B, T, H)
                logits = head(hidden[rows.to(dev), pos.to(dev)])  # (B, V)
            else:
                logits = mlm(input_ids=ids, attention_mask=attn).logits[rows.to(dev), pos.to(dev)]  # (B, V)
            logp = torch.log_softmax(logits.float(), dim=-1).gather(1, true.to(dev).unsqueeze(1)).squeeze(1).cpu().numpy()
            for (s, _), lp in zip(batch, logp):
                nll[s] -= lp
                count[s] += 1
            if progress is not None:
                progress(min(1.0, (start + len(batch)) / max(1, len(items))), f"{start + len(batch):,}/{len(items):,} masked tokens")
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, np.exp(nll / np.maximum(count, 1)), np.nan)
