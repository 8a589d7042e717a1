"""Experiment cells for tests of cells at once (tests/test_parallel_cells.py), imported by spawned worker processes.

BarrierCells holds every cell until NERSELECT_TEST_BARRIER_N cells have started, so a test proves cells ran at
once by reaching the end (one at a time, the first cell would wait forever: the test's timeout fails it), never by
timing; NERSELECT_TEST_OOM_ONCE names a row whose first try raises CUDA's out-of-memory error.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from core.experiments.cells import ExperimentCells


class BarrierCells(ExperimentCells):
    def run_cell(self, row, seed, progress, budget=None, lc_size=None):
        folder = Path(os.environ["NERSELECT_TEST_BARRIER"])
        (folder / f"{row}.{seed}").touch()
        wanted = int(os.environ.get("NERSELECT_TEST_BARRIER_N", "2"))
        deadline = time.monotonic() + 600  # a state wait with a far bound: a failure, not a hang, if cells never overlap
        while len(list(folder.iterdir())) < wanted:
            if time.monotonic() > deadline:
                raise RuntimeError("the other cell never started: cells did not run at once")
            time.sleep(0.05)
        oom = os.environ.get("NERSELECT_TEST_OOM_ONCE")
        marker = folder.parent / "oom-raised"
        if oom == f"{row}.{seed}" and not marker.exists():
            marker.touch()
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB (simulated by the test)")
        return super().run_cell(row, seed, progress, budget=budget, lc_size=lc_size)
