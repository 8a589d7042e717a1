"""Issue 25: the training step does not wait for the device. On a GPU every read of a tensor's value on the host
(`float()`, `.item()`, `.tolist()`, `bool()`, `.cpu()`) waits for the queued work; these tests count such reads with a
TorchFunctionMode on the CPU, where the same calls are made, so a read that creeps back into the step fails here
without a GPU."""

from __future__ import annotations

import collections

import torch
from torch.overrides import TorchFunctionMode

from core.train.crf import CRF, viterbi_decode
from core.train.training import LoopConfig, TrainLoop, grad_scaler

READS = {torch.Tensor.item, torch.Tensor.__float__, torch.Tensor.__int__, torch.Tensor.__bool__, torch.Tensor.tolist,
         torch.Tensor.cpu, torch.Tensor.numpy}


class CountReads(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count: collections.Counter[str] = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in READS:
            self.count[func.__name__] += 1
        return func(*args, **(kwargs or {}))


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
    assert counts[0] == counts[1] <= 6  # pytorch-crf's own decode reads once per position: 8 x 40 here
    with CountReads() as reads:
        crf.decode(torch.randn(8, 40, 5), torch.ones(8, 40, dtype=torch.bool))
    assert reads.count["item"] >= 8 * 40


def test_the_mlm_loss_reads_nothing_back_given_the_masked_positions(tiny_mlm_dir):
    from transformers import DataCollatorForLanguageModeling

    from core.lm.models import load_masked_lm, load_tokenizer
    from core.train.mlm import masked_lm_loss, masked_positions
    from tests.conftest import TOY_SENTENCES

    tok = load_tokenizer(str(tiny_mlm_dir))
    model, _ = load_masked_lm(str(tiny_mlm_dir))
    torch.manual_seed(0)
    # one sentence four times: an unpadded batch, as packed blocks are, whose all-ones mask the MLM step drops
    batch = DataCollatorForLanguageModeling(tok, mlm_probability=0.3)([{"input_ids": tok(TOY_SENTENCES[0])["input_ids"]}] * 4)
    assert bool(batch.pop("attention_mask").all())
    picked = masked_positions(batch["labels"])  # on the CPU, before the batch would go to the device
    with CountReads() as reads:
        masked_lm_loss(model, dict(batch), picked)
    assert sum(reads.count.values()) == 0, reads.count
