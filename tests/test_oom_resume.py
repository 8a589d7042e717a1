"""An out-of-memory retry resumes its job with half the micro-batch and twice the gradient accumulation
(core.runner.devices.smaller_micro_batch). The checkpoint's position counts micro-batches of the old size, so the
loop must not read it against the new plan: every example of the interrupted epoch is trained exactly once."""

from __future__ import annotations

import collections

import pytest
import torch

from core.train.training import LoopConfig, TrainLoop, epoch_order, grad_scaler

N = 64


class _Killed(Exception):
    pass


def _loop(micro: int, accum: int, run_dir, seen: list[int], kill_at: int | None = None) -> TrainLoop:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    data = torch.randn(N, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)

    def forward(idx: list[int]) -> tuple[torch.Tensor, int]:
        seen.extend(idx)
        return model(data[idx]).pow(2).mean(), len(idx)

    def plan(epoch: int) -> list[list[int]]:  # as MLM cuts an epoch: one seeded order in micro-batches
        order = epoch_order(N, 1, epoch)
        return [order[i:i + micro] for i in range(0, N, micro)]

    def progress(fraction: float, message: str) -> None:
        if kill_at is not None and message.startswith(f"step {kill_at}/"):
            raise _Killed()

    return TrainLoop(model, optimizer, scheduler, grad_scaler("cpu", "fp32"),
                     LoopConfig(epochs=2, seed=1, grad_accum=accum, checkpoint_every=2, log_every=100),
                     plan=plan, forward=forward, device="cpu", precision="fp32", total_steps=2 * N // (micro * accum),
                     checkpoint_dir=run_dir, progress=progress)


def _resume(loop: TrainLoop) -> TrainLoop:
    state = loop.load_checkpoint()
    assert state is not None
    loop.restore(state)
    return loop


def test_a_retry_with_half_the_micro_batch_trains_each_example_of_the_epoch_once(tmp_path):
    before: list[int] = []
    with pytest.raises(_Killed):  # 8 examples a step; checkpoint at step 2, killed in step 3
        _loop(8, 1, tmp_path, before, kill_at=3).run()
    done = set(before[:16])  # what the checkpoint at step 2 holds
    after: list[int] = []
    logs: list[str] = []
    loop = _loop(4, 2, tmp_path, after)
    loop.log = logs.append
    state = _resume(loop).run()
    first_epoch = collections.Counter(after[:N - 16])
    assert set(first_epoch) == set(range(N)) - done and max(first_epoch.values()) == 1, "an example trained twice"
    assert sorted(after[N - 16:]) == list(range(N))  # the next epoch is whole again
    assert state.epoch == 2 and any("grad_accum 1 -> 2" in m and "16 examples" in m for m in logs)


def test_a_retry_interrupted_again_keeps_the_examples_it_had_left_out(tmp_path):
    first: list[int] = []
    with pytest.raises(_Killed):
        _loop(8, 1, tmp_path, first, kill_at=3).run()  # 16 done at step 2
    second: list[int] = []
    with pytest.raises(_Killed):  # the retry, killed again after its own step-4 checkpoint (2 more steps of 8)
        _resume(_loop(4, 2, tmp_path, second, kill_at=5)).run()
    third: list[int] = []
    _resume(_loop(4, 2, tmp_path, third)).run()  # the same micro-batch: the position and what was left out both hold
    trained = collections.Counter(second[:16] + third[:N - 32])
    assert set(trained) == set(range(N)) - set(first[:16]) and max(trained.values()) == 1


def test_an_unchanged_micro_batch_resumes_at_its_position(tmp_path):
    first: list[int] = []
    with pytest.raises(_Killed):
        _loop(4, 2, tmp_path, first, kill_at=3).run()
    again: list[int] = []
    _resume(_loop(4, 2, tmp_path, again)).run()
    whole: list[int] = []
    _loop(4, 2, tmp_path / "whole", whole).run()
    assert first[:16] + again == whole  # the same order, nothing repeated or skipped


def test_an_epochs_short_last_group_steps_with_the_mean_of_its_micro_batches():
    """With grad_accum 2 (as after a retry) an epoch of 5 micro-batches ends on a group of one: divided by 2 like the
    full groups, its step was half as large as its gradient."""
    w = torch.nn.Parameter(torch.zeros(()))
    model = torch.nn.Module()
    model.w = w
    optimizer = torch.optim.SGD([w], lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    loop = TrainLoop(model, optimizer, scheduler, grad_scaler("cpu", "fp32"),
                     LoopConfig(epochs=1, seed=1, grad_accum=2, grad_clip=0.0, checkpoint_every=0),
                     plan=lambda epoch: [[i] for i in range(5)], forward=lambda idx: (-w, 1), device="cpu",
                     precision="fp32", total_steps=3)
    assert loop.run().step == 3
    assert float(w.detach()) == pytest.approx(3.0)  # three steps of the mean gradient -1, not 1 + 1 + 0.5
