"""How continued MLM moves the encoder: which layers learn, how fast, and when. These are the recipe variants
issue 26 ablates, because continued MLM on the default MiniLM often lowered NER F1.

- `head_warmup_steps`: for the first N steps only the MLM head learns and the encoder stays frozen. The default
  encoder has no MLM head, and a fresh one's early gradients are noise that would otherwise flow into the encoder.
- `layer_lr_decay`: a layer k levels below the top learns at lr x decay^k, and the embeddings sit one level below
  the lowest layer. Lower layers hold general features NER reuses, so they should move least (ULMFiT, ELECTRA).
- `freeze_layers`: the embeddings and the lowest N layers do not move at all.
- rehearsal (`with_rehearsal`): a share of each MLM corpus is general text (in experiments, random DC sentences,
  DC being the broad corpus), replayed so the encoder keeps what it knew outside TC.
- `l2sp`: L2-SP (Li et al. 2018), a pull of every encoder weight towards where the phase started, strength/2 times
  the squared distance added to the loss: the encoder may move, but each step away costs more (issue 46's knob).

Parameter names are sorted into embeddings, numbered layers and the rest by their names: `...layer.N.` or
`...layers.N.` (BERT, RoBERTa, DistilBERT, MiniLM), `embeddings`, and anything outside the model's base
prefix (the MLM head).

>>> layer_of("bert.encoder.layer.3.attention.self.query.weight", "bert", 6)
4
>>> layer_of("bert.embeddings.word_embeddings.weight", "bert", 6), layer_of("cls.predictions.bias", "bert", 6)
(0, 7)
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from core.errors import UserError
from core.recipes.configs import check_mlm_recipe

_LAYER = re.compile(r"\.layers?\.(\d+)\.")
NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight")


def layer_of(name: str, base_prefix: str, n_layers: int) -> int:
    """0 for the embeddings, k + 1 for transformer layer k, n_layers + 1 for the head and anything above."""
    if base_prefix and not name.startswith(base_prefix + "."):
        return n_layers + 1  # the MLM head (cls., lm_head., vocab_*)
    if m := _LAYER.search(name):
        return int(m.group(1)) + 1
    if "embeddings" in name:
        return 0
    return n_layers + 1  # pooler, final norms: with the top


def l2sp_anchor(model: Any, strength: float) -> Callable[[], Any] | None:
    """The L2-SP term as a function of the model's current weights: strength/2 * sum of squared distances of the
    encoder's weights (not the MLM head's, which may start fresh) from their values now. None when strength is 0.

    >>> import torch
    >>> m = torch.nn.Linear(2, 1); m.config = type("C", (), {"num_hidden_layers": 0})(); m.base_model_prefix = ""
    >>> penalty = l2sp_anchor(m, 2.0)
    >>> with torch.no_grad(): _ = m.weight.add_(1.0)
    >>> float(penalty())  # (2 / 2) * (1 + 1)
    2.0
    """
    if not strength:
        return None
    n_layers = int(getattr(model.config, "num_hidden_layers", 0) or getattr(model.config, "n_layers", 0))
    prefix = getattr(model, "base_model_prefix", "")
    pairs = [(p, p.detach().clone()) for n, p in model.named_parameters() if layer_of(n, prefix, n_layers) <= n_layers
             or not prefix]

    def penalty() -> Any:
        return 0.5 * strength * sum(((p - start) ** 2).sum() for p, start in pairs)

    return penalty


def param_groups(model: Any, config: Any) -> list[dict[str, Any]]:
    """AdamW groups: weight decay except on biases and norms, lr scaled per layer by `layer_lr_decay`, and the
    embeddings plus the lowest `freeze_layers` layers left out (and set not to need gradients)."""
    n_layers = int(getattr(model.config, "num_hidden_layers", 0) or getattr(model.config, "n_layers", 0))
    check_mlm_recipe(config, n_layers)
    prefix = getattr(model, "base_model_prefix", "")
    groups: dict[tuple[int, bool], list[Any]] = {}
    for name, p in model.named_parameters():
        level = layer_of(name, prefix, n_layers)
        if config.freeze_layers and level <= config.freeze_layers:
            p.requires_grad_(False)
            continue
        groups.setdefault((level, name.endswith(NO_DECAY)), []).append(p)
    top = n_layers + 1
    return [{"params": ps, "weight_decay": 0.0 if no_decay else config.weight_decay,
             "lr": config.lr * config.layer_lr_decay ** (top - level), "level": level}
            for (level, no_decay), ps in sorted(groups.items())]


def head_warmup(model: Any, config: Any, start_step: int, log: Callable[[str], None]) -> Callable[[Any], None] | None:
    """Freeze everything below the head now (unless `start_step` is already past the warm-up) and return the loop's
    on_step hook that unfreezes it after `head_warmup_steps` steps; None when there is no warm-up. A BERT head's
    output matrix is the word-embedding matrix (tied weights, listed once, as the embeddings'): it stays frozen with
    them, so the warm-up trains the head's transform and bias; `freeze_layers`, the layer-wise lr and L2-SP treat it as
    the embeddings too."""
    steps = config.head_warmup_steps
    if not steps or start_step >= steps:
        return None
    n_layers = int(getattr(model.config, "num_hidden_layers", 0) or getattr(model.config, "n_layers", 0))
    prefix = getattr(model, "base_model_prefix", "")
    below = [(n, p) for n, p in model.named_parameters() if layer_of(n, prefix, n_layers) <= n_layers and p.requires_grad]
    for _, p in below:
        p.requires_grad_(False)
    log(f"head warm-up: {len(below)} encoder tensors frozen for the first {steps} steps; only the MLM head learns")

    def on_step(state: Any) -> None:
        if state.step == steps:
            for _, p in below:
                p.requires_grad_(True)
            log(f"head warm-up over at step {steps}: the encoder learns from now on")

    return on_step


def chain(*hooks: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """One on_step hook calling each given one in order (None when none is given)."""
    live = [h for h in hooks if h is not None]
    if not live:
        return None

    def on_step(state: Any) -> None:
        for h in live:
            h(state)

    return on_step


def with_rehearsal(phases: list[tuple[str, list[str]]], general: Sequence[str], share: float, seed: int
                   ) -> list[tuple[str, list[str]]]:
    """Each phase's texts plus random `general` sentences making up `share` of the result, shuffled in (seeded).

    >>> with_rehearsal([("tapt", ["t1", "t2", "t3"])], ["g1", "g2", "g3", "g4"], 0.25, seed=0)[0][1].count("t1")
    1
    >>> len(with_rehearsal([("tapt", ["t1", "t2", "t3"])], ["g1", "g2", "g3", "g4"], 0.25, seed=0)[0][1])
    4
    """
    if not 0 <= share < 1:
        raise UserError(f"rehearsal share must be in [0, 1), got {share}")
    if not share:
        return phases
    if not general:
        raise UserError("rehearsal needs general sentences to mix in, and the corpus for them is empty")
    rng = random.Random(seed)
    out = []
    for name, texts in phases:
        k = round(share / (1 - share) * len(texts))
        mixed = list(texts) + [general[rng.randrange(len(general))] for _ in range(k)]
        rng.shuffle(mixed)
        out.append((name, mixed))
    return out
