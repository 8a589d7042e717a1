"""core.progress: the sub-step splitter, and the CLI bar that prints job log lines and no bar before an error."""

from __future__ import annotations

import pytest

from core.progress import cli_progress, silent, sub


def test_sub_maps_a_part_onto_its_slice_and_prefixes_messages():
    seen = []
    part = sub(lambda f, m="": seen.append((round(f, 3), m)), 0.2, 0.6, "DC: ")
    part(0.0, "start")
    part(0.5, "")
    part(2.0, "over")  # clamped
    assert seen == [(0.2, "DC: start"), (0.4, "DC"), (0.6, "DC: over")]
    assert sub(None, 0, 1) is silent
    nested = sub(sub(lambda f, m="": seen.append((round(f, 3), m)), 0.5, 1.0, "a: "), 0.0, 0.5, "b: ")
    nested(1.0, "x")
    assert seen[-1] == (0.75, "a: b: x")


def test_job_log_lines_reach_the_terminal_and_an_error_leaves_no_bar(tmp_path, capsys):
    from core.data.workspace import Workspace
    from core.runner.jobs import JobContext

    with cli_progress("ner train") as bar:
        ctx = JobContext(Workspace(tmp_path / "ws"), tmp_path / "run", None, on_progress=bar)
        ctx.progress(0.5, "epoch 1, step 3")
        ctx.log("epoch 1: dev F1 0.5000 best")
    err = capsys.readouterr().err
    assert "epoch 1: dev F1 0.5000 best" in err
    assert "epoch 1: dev F1 0.5000 best" in (tmp_path / "run" / "log.txt").read_text()
    with pytest.raises(ValueError), cli_progress("import") as bar:
        raise ValueError("empty file")
    assert "%|" not in capsys.readouterr().err


def test_a_resumed_run_estimates_its_time_left_from_its_own_progress():
    """A study resumed with half its cells kept reports 50% at once; the estimate must not count that half as done in
    the first second. The elapsed clock counts from the command's start (found in review: it restarted at the first
    report, hiding the minutes spent loading before it). Times are set, not waited on: the bar started 300 s ago,
    its first report past zero came 100 s ago at 50%, now 51%: 49% left at 1% per 100 s is 4,900 s."""
    with cli_progress("study") as bar:
        bar(0.0, "leakage check")
        bar(0.5, "tapt seed 3: step 1")
        tq = bar._get()
        now = tq._time()
        tq.start_t, bar._base = now - 300, (500, now - 100)
        bar(0.51, "tapt seed 3: step 40")
        shown = tq.format_meter(**tq.format_dict)
        assert "05:00<1:21:" in shown and "tapt seed 3: step 40" in shown, shown
