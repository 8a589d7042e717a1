"""An experiment's time limit (core.experiments.cell_clock): no cell starts that would end past it, timed by its row's
finished cells on this kind of device; the run stops with its finished cells kept, from the CLI (exit 3, the same
command continues), as a job (cancelled with the reason, Resume continues) and on parallel workers."""

from __future__ import annotations

import json

import pytest

from core.data.workspace import Workspace
from core.errors import TIME_LIMIT_EXIT, UserError
from core.experiments.cell_clock import TimeLimit
from core.experiments.experiment import load_cells
from core.experiments.parallel import CellTask, _Board
from core.experiments.records import Cell, cell_path, same_task_cells, save_cell
from core.recipes.duration import parse_duration
from core.runner import jobs
from core.runner.params import ExperimentParams
from tests.test_experiment import corpora  # noqa: F401 - fixture


def test_durations_parse_and_bad_ones_are_refused():
    assert [parse_duration(v) for v in ("2h", "1h30m", "90m", "45s", "5400", " 1.5h ", 600)] == \
        [7200.0, 5400.0, 5400.0, 45.0, 5400.0, 5400.0, 600.0]
    assert parse_duration(None) is None and parse_duration("") is None
    for bad in ("soon", "90x", "1h30", "-5m", "0", "h"):
        with pytest.raises(UserError, match="time limit: expected a duration"):
            parse_duration(bad)
    assert ExperimentParams(time_limit="90m").time_limit == 5400.0
    with pytest.raises(UserError, match="time_limit"):
        ExperimentParams(time_limit="tomorrow")
    with pytest.raises(UserError, match="Ray"):
        ExperimentParams(time_limit="1h", ray="local")


def test_a_cell_fits_by_its_rows_clock_on_this_kind_of_device():
    finished = [{"row": "none", "started": 0, "finished": 100, "device": "cpu"},
                {"row": "tapt", "started": 100, "finished": 700, "device": "cpu"},
                {"row": "dsir", "started": 0, "finished": 60, "device": "cuda:0"}]  # a GPU's clock times no CPU cell
    limit = TimeLimit(1000, start=0, device="cpu")
    assert limit.fits("none", finished, "none seed 2", now=800)  # 800 + 100 <= 1000
    assert not limit.fits("tapt", finished, "tapt seed 2", now=800)  # 800 + 600 > 1000
    assert not limit.fits("dsir", finished, "dsir seed 2", now=800)  # no CPU dsir yet: a pretraining cell's 600 s
    assert limit.fits("cosine", [], "cosine seed 1", now=999)  # nothing to time it by: it starts, never stopped on a guess
    assert limit.skipped == ["tapt seed 2", "dsir seed 2"]
    assert TimeLimit(None).fits("tapt", finished, now=10**9) and TimeLimit(1000, start=0, device="cuda").fits(
        "dsir", finished, now=900)
    message = str(limit.reached(3))
    assert "3 cells finished" in message and "2 not started" in message and "tapt seed 2, dsir seed 2" in message


def test_a_row_its_own_cells_cannot_time_borrows_the_same_tasks_clocks():
    """A knob variant's first cell, timed by its default recipe's cells: no own clock, so the lent 600 s TAPT clock
    stops it at 800 s of 1,000; once it has its own (300 s), that one counts and a lent clock is never mixed in."""
    lent = [{"row": "tapt", "started": 0, "finished": 600, "device": "cpu"},
            {"row": "none", "started": 0, "finished": 100, "device": "cpu"},
            {"row": "dsir", "started": 0, "finished": 30, "device": "cuda:0"}]
    limit = TimeLimit(1000, start=0, device="cpu", lent=lent)
    assert not limit.fits("tapt", [], "tapt seed 1", now=800)
    assert not limit.fits("dsir", [], "dsir seed 1", now=800)  # the lent pretraining clock; the GPU's 30 s times no CPU cell
    assert limit.fits("none", [], "none seed 1", now=800)
    own = [{"row": "tapt", "started": 0, "finished": 150, "device": "cpu"}]
    assert limit.fits("tapt", own, "tapt seed 2", now=800) and limit.fits("dsir", own, "dsir seed 2", now=800)
    assert limit.skipped == ["tapt seed 1", "dsir seed 1"]
    assert TimeLimit(1000, start=0, device="cuda", lent=lent[:2]).fits("tapt", [], now=999)  # nothing of its kind


def test_the_same_tasks_folders_lend_their_cells_and_others_do_not(tmp_path):
    task = {"tc": "t", "dc": "d", "lc": "l", "dev": "v", "test": "x", "model": "default", "preset": "study"}
    folders = {"default": task, "variant": {**task, "mlm_config": {"lr": 5e-5}}, "other-dc": {**task, "dc": "d2"},
               "here": task}
    for name, params in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "params.json").write_text(json.dumps({"kind": "experiment", "params": params}))
        save_cell(cell_path(tmp_path / name, "tapt.lc100", 1), Cell(row="tapt", seed=1, f1=0.5, key="tapt.lc100"))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "params.json").write_text("{not json")
    cells, names = same_task_cells(tmp_path / "here", ExperimentParams(**task))
    assert names == ["default", "variant"] and len(cells) == 2  # not itself, not another DC, not the unreadable one


def test_parallel_workers_start_no_cell_past_the_limit_nor_one_waiting_for_it():
    """A slot asks for work at 850 s of a 1,000 s limit: the none cell (100 s) fits, TAPT (600 s) does not, and the
    ner cell that waits for that TAPT could never start: both are left out and the board runs dry instead of waiting."""
    tasks = [CellTask("tapt", 2, None, 100, "tapt"), CellTask("ner", 2, None, 100, "ner", after=0),
             CellTask("none", 2, None, 100, "none")]
    finished = [{"row": "none", "started": 0, "finished": 100, "device": "cpu"},
                {"row": "tapt", "started": 100, "finished": 700, "device": "cpu"}]
    import time

    now = time.time()
    board = _Board(tasks, TimeLimit(1000, start=now - 850, device="cpu"), finished)
    assert board.take(0) == 2
    assert board.take(1) is None and board.pending == []
    assert board.limit.skipped == ["tapt seed 2", "ner seed 2"]
    assert _Board(tasks).take(0) == 0  # without a limit: plan order


def _cli(corpora, model, out, seeds, *extra):  # noqa: F811
    from core.cli import main

    return main(["--workspace", str(out.parent / "ws"), "experiment", "--tc", corpora["tc"], "--dc", corpora["dc"], "--lc",
                 corpora["lc"], "--dev", corpora["dev"], "--test", corpora["test"], "--baselines", "none", "--seeds", seeds,
                 "--model", str(model), "--preset", "tiny", "--out", str(out), "--quiet", *extra])


def test_the_cli_stops_at_its_time_limit_and_the_same_command_continues(tmp_path, corpora, tiny_bert_dir, capsys,  # noqa: F811
                                                                         monkeypatch):
    """Seed 1's none cell finished in an earlier run; under a limit shorter than that cell's clock, seed 2's cannot
    start: the run stops at once with exit 3, keeps seed 1, and without the limit the same command runs seed 2."""
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    out = tmp_path / "exp"
    assert _cli(corpora, tiny_bert_dir, out, "1") == 0
    capsys.readouterr()
    assert _cli(corpora, tiny_bert_dir, out, "1,2", "--time-limit", "0.001") == TIME_LIMIT_EXIT
    err = capsys.readouterr().err
    assert "stopped at its time limit" in err and "1 cell finished" in err and "none seed 2" in err
    assert "Traceback" not in err
    assert [(c["row"], c["seed"]) for c in load_cells(out)] == [("none", 1)]
    assert _cli(corpora, tiny_bert_dir, out, "1,2", "--time-limit", "soon") == 2  # refused before anything runs
    assert _cli(corpora, tiny_bert_dir, out, "1,2") == 0
    assert sorted((c["row"], c["seed"]) for c in load_cells(out)) == [("none", 1), ("none", 2)]


def test_a_job_stopped_at_its_limit_is_cancelled_with_the_reason_and_keeps_its_cells(tmp_path, corpora,  # noqa: F811
                                                                                    tiny_bert_dir, monkeypatch):
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = Workspace(tmp_path / "ws")
    params = {**corpora, "baselines": ["none"], "strategies": [], "seeds": [1, 2], "model": str(tiny_bert_dir),
              "preset": "tiny", "domain": "toy", "time_limit": "0.001"}
    job = jobs.wait(ws, jobs.submit(ws, "experiment", params).id, timeout=300)
    assert job.status == "cancelled" and "stopped at its time limit" in job.message and "none seed 2" in job.message
    assert [(c["row"], c["seed"]) for c in load_cells(job.run_dir)] == [("none", 1)]  # the first cell: nothing to time it by
    # another experiment on the same task: its first cell is timed by the first one's clock, so it does not start
    again = jobs.wait(ws, jobs.submit(ws, "experiment", {**params, "seeds": [3]}).id, timeout=300)
    assert again.status == "cancelled" and "none seed 3" in again.message and load_cells(again.run_dir) == []
