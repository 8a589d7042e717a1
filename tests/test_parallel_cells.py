"""Cells at once (issue 45): slots from the cards' free memory, cells on two simulated cards that provably overlap,
an out-of-memory cell run again on one slot fewer, the same cells and folders as one at a time, a resume, Ray."""

from __future__ import annotations

import json

import pytest

from core.data.workspace import Workspace
from core.errors import UserError
from core.experiments.experiment import cell_tasks, load_cells
from core.experiments.parallel import Slot, plan_slots
from core.runner import jobs
from core.runner.devices import Gpu
from core.runner.params import parse_parallel
from tests.test_experiment import corpora  # noqa: F401 - fixture


def test_slots_follow_free_memory_cells_and_cores():
    cards = [Gpu(0, "a", 80000, 60000), Gpu(1, "b", 80000, 20000)]
    slots = plan_slots("auto", cards, 9000, n_cells=20, cpus=16)
    assert [s.gpu for s in slots].count(0) == 6 and [s.gpu for s in slots].count(1) == 2  # 60000 // 9000, 20000 // 9000
    assert all(s.threads == 2 for s in slots)  # 16 cores over 8 workers
    assert len(plan_slots("auto", cards, 9000, n_cells=3, cpus=16)) == 3  # never more slots than cells
    assert len(plan_slots("auto", cards, 9000, n_cells=20, cpus=4)) == 4  # nor than cores
    assert plan_slots("auto", [], 9000, 20, 2) == [Slot(0, None, 2)]  # no card: one cell at a time
    assert plan_slots("auto", [Gpu(0, "a", 8000, 1000)], 9000, 20, 2) == [Slot(0, 0, 2)]  # a full card still runs one
    assert [s.gpu for s in plan_slots(3, cards, 9000, 20, 2)] == [0, 0, 0]  # a count: each on the card with most room
    assert [s.gpu for s in plan_slots(2, [], 9000, 20, 2)] == [None, None] and plan_slots(2, [], 9000, 20, 2)[0].threads == 1
    for bad in ("0", "-1", "many", 0):
        with pytest.raises(UserError, match="parallel"):
            parse_parallel(bad)


def test_a_strategy_reading_b1_waits_for_its_seeds_tapt_cell():
    tasks = cell_tasks(["none", "random", "tapt", "ner"], [1, 2], [None], [10])
    by = {(t.row, t.seed): i for i, t in enumerate(tasks)}
    assert tasks[by["ner", 1]].after == by["tapt", 1] and tasks[by["ner", 2]].after == by["tapt", 2]
    assert tasks[by["random", 1]].after is None and tasks[by["tapt", 1]].after is None
    no_tapt = cell_tasks(["ner", "ner@b1", "random"], [1], [None], [10])
    assert no_tapt[0].after is None and no_tapt[1].after == 0 and no_tapt[2].after is None  # the first trains B1/B2


def test_the_parallel_bar_weighs_each_cell_by_its_share_of_the_clock(tmp_path):
    """Two cells, one three times as long: with the short one done and the long one half way, the bar stands at
    (1 + 1.5) / 4, not at the (1 + 0.5) / 2 of counting cells alike."""
    from types import SimpleNamespace

    from core.experiments.parallel import SLOTS_DIR, CellTask, _Board, _report

    tasks = [CellTask("none", 1, None, 100, "none", weight=1.0), CellTask("tapt", 1, None, 100, "tapt", weight=3.0)]
    board = _Board(tasks)
    board.results[0] = {"row": "none"}
    board.running = {1: 0}
    (tmp_path / SLOTS_DIR).mkdir()
    (tmp_path / SLOTS_DIR / "slot-0.json").write_text(json.dumps({"fraction": 0.5, "weight": 3.0, "message": "tapt"}))
    seen = []
    _report(SimpleNamespace(run_dir=str(tmp_path), progress=lambda f, m: seen.append((f, m))), board, 1)
    assert seen[0][0] == pytest.approx(2.5 / 4) and seen[0][1].startswith("1 of 2 cells done, 1 running")


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_cells_overlap_on_two_simulated_cards_and_equal_one_at_a_time(tmp_path, corpora, tiny_bert_dir,  # noqa: F811
                                                                      monkeypatch):
    import core.experiments.experiment as experiment
    from tests.parallel_cells import BarrierCells

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    monkeypatch.setenv("NERSELECT_GPU_BUDGET", "0:16000,1:16000")
    monkeypatch.setenv("NERSELECT_JOB_GPU_MIB", "8000")
    (tmp_path / "barrier").mkdir()
    monkeypatch.setenv("NERSELECT_TEST_BARRIER", str(tmp_path / "barrier"))
    monkeypatch.setenv("NERSELECT_TEST_OOM_ONCE", "none.2")
    params = {**corpora, "strategies": ["random"], "baselines": ["none"], "seeds": [1, 2], "model": str(tiny_bert_dir),
              "preset": "tiny", "domain": "toy", "budget": 8}
    ws = Workspace(tmp_path / "ws")
    serial = jobs.run_inline(ws, "experiment", params, run_dir=tmp_path / "serial")

    monkeypatch.setattr(experiment, "ExperimentCells", BarrierCells)
    run_dir = tmp_path / "parallel"
    result = jobs.run_inline(ws, "experiment", {**params, "parallel": 2}, run_dir=run_dir)
    cells = result["cells"]
    assert [(c["row"], c["seed"]) for c in cells] == [(c["row"], c["seed"]) for c in serial["cells"]]
    # the barrier let no cell train until two had started, so the first two (one per card) ran at once
    assert {c["slot"]["gpu"] for c in cells} == {0, 1}
    first = sorted(cells, key=lambda c: c["started"])[:2]
    assert first[1]["started"] < first[0]["finished"]
    assert all(c["device"] == "cpu" and c["finished"] > c["started"] for c in cells)  # simulated cards: torch ran on CPU
    log = (run_dir / "log.txt").read_text()
    assert "2 at once" in log and "ran out of memory in none seed 2" in log and "1 at once from now" in log
    # the same cells, folders and scores as one at a time (same seeds, one torch thread each)
    assert [c["f1"] for c in cells] == [c["f1"] for c in serial["cells"]]
    assert sorted(p.relative_to(run_dir).as_posix() for p in run_dir.glob("cells/*/seed-*/cell.json")) == \
        sorted(p.relative_to(tmp_path / "serial").as_posix() for p in (tmp_path / "serial").glob("cells/*/seed-*/cell.json"))
    assert len(load_cells(run_dir)) == 4 and json.loads((run_dir / "result.json").read_text())["cells"][0]["started"]

    (run_dir / "log.txt").write_text("")
    again = jobs.run_inline(ws, "experiment", {**params, "parallel": 2}, run_dir=run_dir)  # resumed: nothing left to run
    assert [c["f1"] for c in again["cells"]] == [c["f1"] for c in cells] and "at once" not in (run_dir / "log.txt").read_text()


@pytest.mark.slow  # starting Ray and its workers (torch imported in each) takes 60-120 s on 2 busy cores
def test_ray_local_runs_the_same_cells(tmp_path, corpora, tiny_bert_dir, monkeypatch):  # noqa: F811
    pytest.importorskip("ray")
    from core.lm.distributed import shutdown

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    params = {**corpora, "strategies": ["ner"], "baselines": ["none", "tapt"], "seeds": [1], "model": str(tiny_bert_dir),
              "preset": "tiny", "domain": "toy", "budget": 8}
    ws = Workspace(tmp_path / "ws")
    serial = jobs.run_inline(ws, "experiment", params, run_dir=tmp_path / "serial")
    try:
        on_ray = jobs.run_inline(ws, "experiment", {**params, "ray": "local:2"}, run_dir=tmp_path / "ray")
    finally:
        shutdown()
    assert [(c["row"], c["f1"]) for c in on_ray["cells"]] == [(c["row"], c["f1"]) for c in serial["cells"]]
    assert "as Ray tasks on local:2" in (tmp_path / "ray" / "log.txt").read_text()
    assert len(load_cells(tmp_path / "ray")) == 3
