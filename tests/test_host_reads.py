"""Issue 25: the training step does not wait for the device. On a GPU every read of a tensor's value on the host
(`float()`, `.item()`, `.tolist()`, `bool()`, `.cpu()`) waits for the queued work, and so does an op whose output size
depends on the data (`nonzero`, a boolean-mask gather). These tests count such calls with a TorchFunctionMode on the
CPU, where the same calls are made, so one that creeps back into the step fails here without a GPU. The mode sees the
calls made from Python only: a read inside a torch function's C++ is invisible to it."""

from __future__ import annotations

import collections

import torch
from torch.overrides import TorchFunctionMode

from core.train.crf import CRF, log_likelihood, viterbi_decode
from core.train.training import LoopConfig, TrainLoop, grad_scaler

READS = {torch.Tensor.item, torch.Tensor.__float__, torch.Tensor.__int__, torch.Tensor.__bool__, torch.Tensor.tolist,
         torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.nonzero, torch.nonzero, torch.Tensor.masked_select,
         torch.masked_select, torch.Tensor.__contains__}


def _bool_index(args: tuple) -> bool:
    index = args[1] if len(args) > 1 else None
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, torch.Tensor) and p.dtype == torch.bool for p in parts)


class CountReads(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count: collections.Counter[str] = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in READS or (func is torch.Tensor.__getitem__ and _bool_index(args)):
            self.count[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))


def test_the_counter_sees_a_boolean_gather_and_nonzero():
    x = torch.randn(3, 4)
    with CountReads() as reads:
        x[x > 0]
        (x > 0).nonzero()
    assert sum(reads.count.values()) == 2


def _loop(steps: int, log_every: int) -> tuple[TrainLoop, list[tuple[float, str]]]:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    data = torch.randn(64, 4)
    target = data.sum(1, keepdim=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    shown: list[tuple[float, str]] = []

    def forward(idx: list[int]) -> tuple[torch.Tensor, int]:
        x = data[idx]
        return torch.nn.functional.mse_loss(model(x), target[idx]), len(idx)

    loop = TrainLoop(model, optimizer, scheduler, grad_scaler("cpu", "fp32"),
                     LoopConfig(epochs=100, seed=1, max_steps=steps, log_every=log_every, checkpoint_every=0),
                     plan=lambda epoch: [list(range(i, i + 4)) for i in range(0, 64, 4)], forward=forward, device="cpu",
                     precision="fp32", total_steps=steps, progress=lambda f, m: shown.append((f, m)))
    return loop, shown


def test_the_training_loop_reads_the_loss_once_per_metric_row_not_per_step():
    loop, shown = _loop(steps=40, log_every=10)
    rows: list[float] = []
    loop.metric = lambda **v: rows.append(v["loss"])
    with CountReads() as reads:
        loop.run()
    assert len(rows) == 4 + 2  # every 10 steps, and each of the two epoch ends (16 micro-batches an epoch)
    # one read per metric row, one for the first step's progress message; nothing per micro-batch
    assert sum(reads.count.values()) <= len(rows) + 1, reads.count
    assert len(shown) == 40 and all("loss" in m for _, m in shown)
    assert shown[-1][1].endswith(f"loss {rows[-1]:.3f}")  # the bar shows the last row's mean loss


def test_viterbi_decode_reads_back_a_fixed_number_of_times_whatever_the_length():
    torch.manual_seed(0)
    crf = CRF(5, batch_first=True)
    counts = []
    for length in (4, 40):
        em, mask = torch.randn(8, length, 5), torch.ones(8, length, dtype=torch.bool)
        with CountReads() as reads:
            viterbi_decode(crf, em, mask)
        counts.append(sum(reads.count.values()))
    assert counts[0] == counts[1] <= 2  # one .cpu() and its .numpy()
    # pytorch-crf's own decode reads once per position: 8 x 40 here
    with CountReads() as reads:
        crf.decode(torch.randn(8, 40, 5), torch.ones(8, 40, dtype=torch.bool))
    assert reads.count["item"] >= 8 * 40


def test_the_crf_loss_reads_nothing_back():
    """pytorch-crf's forward checks `mask[0].all()` three times per call, each a sync on a GPU; the product's loss
    computes the same log-likelihood without them."""
    torch.manual_seed(0)
    crf = CRF(5, batch_first=True)
    em, tags, mask = torch.randn(8, 30, 5), torch.randint(0, 5, (8, 30)), torch.ones(8, 30, dtype=torch.bool)
    with CountReads() as reads:
        log_likelihood(crf, em, tags, mask).mean().backward()
    assert sum(reads.count.values()) == 0, reads.count
    with CountReads() as reads:
        crf(em, tags, mask, reduction="mean")
    assert reads.count["__bool__"] >= 3


def test_the_mlm_step_reads_nothing_back_once_its_batch_is_on_the_device(tiny_mlm_dir):
    """device_batch works out the token count, the masked positions and whether a mask is needed on the CPU; the loss
    on the device then reads nothing back (the old boolean gather `hidden[labels != -100]` counted here)."""
    from transformers import DataCollatorForLanguageModeling

    from core.lm.models import load_masked_lm, load_tokenizer
    from core.train.mlm import device_batch, masked_lm_loss
    from tests.conftest import TOY_SENTENCES

    tok = load_tokenizer(str(tiny_mlm_dir))
    model, _ = load_masked_lm(str(tiny_mlm_dir))
    model.eval()  # no dropout: the loss is compared with transformers' own
    collate = DataCollatorForLanguageModeling(tok, mlm_probability=0.3)
    torch.manual_seed(0)
    padded = collate([{"input_ids": tok(s)["input_ids"]} for s in TOY_SENTENCES[:4]])
    unpadded = collate([{"input_ids": tok(TOY_SENTENCES[0])["input_ids"]}] * 4)  # as packed blocks are
    for raw, needs_mask in ((padded, True), (unpadded, False)):
        batch, picked, units = device_batch(raw, "cpu")
        assert units == int(raw["attention_mask"].sum()) and ("attention_mask" in batch) == needs_mask
        with torch.no_grad():
            expected = model(**raw).loss
        with CountReads() as reads:
            loss = masked_lm_loss(model, batch, picked)
        assert torch.allclose(loss.detach(), expected, atol=1e-5)
        if not needs_mask:  # with a padded batch transformers itself checks the mask (its read, not ours)
            assert sum(reads.count.values()) == 0, reads.count
    with CountReads() as reads:
        masked_lm_loss(model, {k: v for k, v in unpadded.items() if k != "attention_mask"})  # positions not given
    assert reads.count["nonzero"] == 1
