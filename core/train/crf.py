"""CRF helpers around `torchcrf.CRF`: BIOES transition constraints, forward-backward
marginals and the two sequence confidences of Tokarchuk et al. (2021).

pytorch-crf gives the log-likelihood (forward algorithm) and Viterbi decoding but no
per-position marginals; c2 needs them, so the forward-backward pass is written here,
in log space (logsumexp) so long sentences do not underflow, vectorised over the batch,
with right-padding masks respected. All tensors are batch-first: emissions (B, L, T),
mask (B, L) bool with mask[:, 0] all True.

>>> crf = CRF(3, batch_first=True)
>>> em = torch.randn(2, 4, 3); mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]).bool()
>>> m = marginals(crf, em, mask)
>>> bool(torch.allclose(m[mask].sum(-1), torch.ones(6)))
True
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torchcrf import CRF

from core.data.tags import split_tag

IMPOSSIBLE = -10_000.0  # exp() of this is 0 in fp32; finite so gradients and logsumexp stay NaN-free

__all__ = ["CRF", "IMPOSSIBLE", "bioes_allowed", "constrain_bioes", "log_likelihood", "log_partition", "marginals",
           "sequence_confidences", "viterbi_decode"]


def bioes_allowed(labels: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean (start, end, transition) masks of the moves a valid BIOES sequence can make."""
    parsed = [split_tag(t) for t in labels]
    n = len(labels)
    start = torch.tensor([p in ("O", "B", "S") for p, _ in parsed])
    end = torch.tensor([p in ("O", "E", "S") for p, _ in parsed])
    trans = torch.zeros(n, n, dtype=torch.bool)
    for i, (pi, ti) in enumerate(parsed):
        for j, (pj, tj) in enumerate(parsed):
            if pi in ("O", "E", "S"):
                ok = pj in ("O", "B", "S")
            else:  # inside a span: only I-/E- of the same type may follow
                ok = pj in ("I", "E") and tj == ti
            trans[i, j] = ok
    return start, end, trans


def constrain_bioes(crf: CRF, labels: Sequence[str]) -> None:
    """Start impossible BIOES moves at IMPOSSIBLE. They stay learnable parameters, but no gold
    path uses them, so training only pushes them lower; with 100 training sentences this
    removes most ill-formed predictions (an E- without a B-) that cost span F1."""
    start, end, trans = bioes_allowed(labels)
    with torch.no_grad():
        crf.start_transitions.masked_fill_(~start, IMPOSSIBLE)
        crf.end_transitions.masked_fill_(~end, IMPOSSIBLE)
        crf.transitions.masked_fill_(~trans, IMPOSSIBLE)


def _forward_alphas(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """alpha[b, t, j] = log-sum of scores of all prefixes ending in tag j at t.  # (B, L, T)"""
    B, L, T = emissions.shape
    alphas = emissions.new_empty(B, L, T)
    alpha = crf.start_transitions + emissions[:, 0]  # (B, T)
    alphas[:, 0] = alpha
    for t in range(1, L):
        nxt = torch.logsumexp(alpha.unsqueeze(2) + crf.transitions, dim=1) + emissions[:, t]  # (B, T)
        alpha = torch.where(mask[:, t].unsqueeze(1), nxt, alpha)  # padding carries the last valid alpha on
        alphas[:, t] = alpha
    return alphas


def _backward_betas(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """beta[b, t, i] = log-sum of scores of all suffixes after tag i at t (incl. end).  # (B, L, T)"""
    B, L, T = emissions.shape
    betas = emissions.new_empty(B, L, T)
    end = crf.end_transitions.expand(B, T)
    beta = end
    betas[:, L - 1] = beta
    for t in range(L - 2, -1, -1):
        nxt = torch.logsumexp(crf.transitions + (emissions[:, t + 1] + beta).unsqueeze(1), dim=2)  # (B, T)
        beta = torch.where(mask[:, t + 1].unsqueeze(1), nxt, end)  # t is the last valid position when t+1 is padding
        betas[:, t] = beta
    return betas


def viterbi_decode(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
    """The best tag path per sequence: pytorch-crf's Viterbi recursion, with the backtrace done on the host from one
    copy of the back-pointers. pytorch-crf's `decode` reads every position back with `.item()`, a GPU sync each: about
    ten thousand per DEV pass of a CrossNER domain, every epoch. Same paths as `crf.decode` (tested)."""
    import numpy as np

    emissions, mask = emissions.float(), mask.bool()
    B, L, T = emissions.shape
    score = crf.start_transitions + emissions[:, 0]  # (B, T)
    pointers = []
    for t in range(1, L):
        # [b, i, j]: best path ending in tag i at t-1, then the move i -> j and tag j's emission at t
        nxt, best_prev = (score.unsqueeze(2) + crf.transitions + emissions[:, t].unsqueeze(1)).max(dim=1)
        score = torch.where(mask[:, t].unsqueeze(1), nxt, score)
        pointers.append(best_prev)
    last = (score + crf.end_transitions).max(dim=1).indices  # (B,)
    back = torch.stack(pointers, 1) if pointers else last.new_zeros(B, 0, T)
    # one copy to the host: the back-pointers, the best last tag and the length of every sequence
    host = torch.cat([back.reshape(B, -1), last[:, None], mask.sum(1)[:, None]], 1).cpu().numpy()
    back, tag, lengths = host[:, :-2].reshape(B, L - 1, T), host[:, -2], host[:, -1]
    paths = np.zeros((B, L), dtype=np.int64)
    rows = np.arange(B)
    paths[rows, np.maximum(lengths - 1, 0)] = tag
    for t in range(L - 2, -1, -1):  # the pointer at t leads from position t + 1 back to t
        inside = t < lengths - 1
        tag = np.where(inside, back[rows, t, tag], tag)
        paths[inside, t] = tag[inside]
    return [paths[b, : lengths[b]].tolist() for b in range(B)]


def log_likelihood(crf: CRF, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log p(tags | emissions) per sequence, pytorch-crf's `forward(..., reduction="none")` without its checks.

    pytorch-crf asserts `mask[0].all()` three times per call (`_validate`, `_compute_score`, `_compute_normalizer`);
    on a GPU each is a host-device sync in every training step, and its `torch.arange` indices are built on the host
    and copied over at every position. This is the same computation, term by term and in the same order (batch-first
    indexing of the same elements), so values and gradients are bitwise equal (tested); the first-word check is
    left to the caller, whose masks come from `encode_words` and always start with a word.  # (B,)"""
    B, L = tags.shape
    rows = torch.arange(B, device=tags.device)
    weight = mask.float()
    # numerator: the score of the gold path (pytorch-crf's _compute_score)
    score = crf.start_transitions[tags[:, 0]]
    score += emissions[rows, 0, tags[:, 0]]
    for t in range(1, L):
        score += crf.transitions[tags[:, t - 1], tags[:, t]] * weight[:, t]
        score += emissions[rows, t, tags[:, t]] * weight[:, t]
    ends = weight.long().sum(dim=1) - 1
    score += crf.end_transitions[tags[rows, ends]]
    # denominator: log Z by the forward algorithm (pytorch-crf's _compute_normalizer)
    alpha = crf.start_transitions + emissions[:, 0]
    for t in range(1, L):
        nxt = torch.logsumexp(alpha.unsqueeze(2) + crf.transitions + emissions[:, t].unsqueeze(1), dim=1)
        alpha = torch.where(mask[:, t].bool().unsqueeze(1), nxt, alpha)
    alpha += crf.end_transitions
    return score - torch.logsumexp(alpha, dim=1)


def log_partition(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log Z per sequence.  # (B,)"""
    alphas = _forward_alphas(crf, emissions.float(), mask.bool())
    return torch.logsumexp(alphas[:, -1] + crf.end_transitions, dim=1)


def marginals(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """P(y_t = j | x) for every position (rows at padded positions are meaningless).  # (B, L, T)"""
    emissions, mask = emissions.float(), mask.bool()
    alphas = _forward_alphas(crf, emissions, mask)
    betas = _backward_betas(crf, emissions, mask)
    log_z = torch.logsumexp(alphas[:, -1] + crf.end_transitions, dim=1)  # (B,)
    return torch.exp(alphas + betas - log_z[:, None, None])


def sequence_confidences(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor,
                         paths: Sequence[Sequence[int]]) -> tuple[list[float], list[float]]:
    """(c1, c2) per sequence for the decoded `paths` (Tokarchuk et al. 2021):
    c1 = exp(score(path) - log Z), the CRF posterior of the whole sequence;
    c2 = min over positions of the marginal probability of the decoded tag."""
    emissions, mask = emissions.float(), mask.bool()
    B, L, _ = emissions.shape
    tags = torch.zeros(B, L, dtype=torch.long, device=emissions.device)
    for b, path in enumerate(paths):
        tags[b, : len(path)] = torch.as_tensor(list(path), dtype=torch.long)
    llh = log_likelihood(crf, emissions, tags, mask)  # score(path) - log Z
    c1 = torch.exp(llh).clamp(max=1.0)
    marg = marginals(crf, emissions, mask)
    picked = marg.gather(2, tags.unsqueeze(2)).squeeze(2).masked_fill(~mask, 1.0)  # (B, L)
    c2 = picked.min(dim=1).values.clamp(max=1.0)
    return c1.tolist(), c2.tolist()
