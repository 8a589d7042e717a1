"""scripts/gpu_proof.py, the prepared device call of issue 25: what it concludes from the bench and how it handles a
part that does not finish (the device itself is tested only on a lent machine; `--dry` runs the whole script on CPU)."""

from __future__ import annotations

import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from tests.conftest import load_script

gpu_proof = load_script("gpu_proof")


def test_max_overlap_counts_jobs_running_together() -> None:
    assert gpu_proof.max_overlap([]) == 0
    assert gpu_proof.max_overlap([(0, 5), (5, 9)]) == 1  # one ends as the next starts: never together
    assert gpu_proof.max_overlap([(0, 10), (1, 9), (2, 3), (8, 12)]) == 3


def test_the_docstring_examples_hold() -> None:
    import doctest

    assert doctest.testmod(gpu_proof).failed == 0


@pytest.mark.parametrize("peak_16, peak_32, context", [(900, 1700, 500), (2500, 2900, 700), (400, 3600, 600)])
def test_the_held_room_overflows_at_256_and_128_and_fits_at_64(peak_16: int, peak_32: int, context: int) -> None:
    """With a peak linear in the micro-batch, the job must fail twice and then fit: the retry is shown, not assumed."""
    r = gpu_proof.oom_room(peak_16, peak_32, context)

    def need(micro: int) -> float:
        return context + r["weights_mib"] + micro * r["per_sentence_mib"]

    assert need(256) > r["room_mib"] and need(128) > r["room_mib"] and need(64) < r["room_mib"]


def test_calibration_finds_the_peaks_the_runner_recorded(tmp_path: Path) -> None:
    """The runner records a job's peak under its stored params (defaults filled in, e.g. model 'default'), so the
    lookup must use those, not the submitted dict (which has no model and would never match)."""
    from core.data.demo import write_demo_workspace
    from core.runner import devices, jobs

    ws = write_demo_workspace(tmp_path / "ws")
    calib = [jobs.submit(ws, "mlm", {"train": ["dc"], "preset": "demo", "config": {"batch_size": b, "block_size": 256}},
                         start=False) for b in (16, 32)]
    for job, peak in zip(calib, (1000, 1800)):
        devices.record_peak(ws.runs_dir, job.kind, job.spec, peak)  # what record_job_peak does in the job process
    assert gpu_proof.calibration_peaks(ws, calib) == [1000, 1800]
    assert gpu_proof.calibration_peaks(ws, calib[:1] + [jobs.submit(ws, "mlm", {"train": ["dc"]}, start=False)]) == [1000, 0]


def _bench(ratio_ner: float, ratio_mlm: float) -> dict:
    rows = []
    for task, ratio, quality in (("NER", ratio_ner, "TEST F1 60.00"), ("MLM", ratio_mlm, "DEV MLM loss 2.100")):
        rows.append({"task": task, "impl": "baseline-bf16", "x bf16 loop": 1.0, "quality": quality})
        rows.append({"task": task, "impl": "new", "x bf16 loop": ratio, "quality": quality})
    return {"throughput": rows, "cell_summary": {"new": {"wall_mean": 90.0, "f1_mean": 0.6}},
            "cells": [{"impl": "new", "seed": 1, "wall_s": 90.0, "test_f1": 0.6, "raw": "not kept"}]}


def test_training_verdict_compares_the_product_with_the_bf16_loop() -> None:
    verdict = gpu_proof._summarise_training(_bench(1.45, 1.1))["verdict"]
    assert verdict["NER"]["meets_1_3x"] and verdict["NER"]["x_bf16_loop"] == 1.45
    assert not verdict["MLM"]["meets_1_3x"]
    assert verdict["MLM"]["quality_product"] == "DEV MLM loss 2.100"
    summary = gpu_proof._summarise_training(_bench(1.45, 1.1))
    assert summary["cell"]["new"]["wall_mean"] == 90.0 and summary["cells"][0]["test_f1"] == 0.6
    assert "raw" not in summary["cells"][0]


def test_training_verdict_is_empty_without_a_bf16_loop() -> None:
    bench = _bench(2.0, 2.0)
    bench["throughput"] = [r for r in bench["throughput"] if r["impl"] != "baseline-bf16"]
    assert gpu_proof._summarise_training(bench)["verdict"] == {}


def test_a_part_that_runs_out_of_time_is_stopped_and_reported(tmp_path: Path) -> None:
    args = Namespace(steps=3, profile_steps=2, points=20_000, dry=True, work=tmp_path / "work")
    result = gpu_proof.run_part("map", args, tmp_path, timeout=1)  # cannot even import torch in a second
    assert result["status"].startswith("timed out")
    assert (tmp_path / "gpu-proof-map.log").exists() and not (tmp_path / "gpu-proof-map.json").exists()


def test_unknown_parts_are_refused(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, gpu_proof.__file__, "--out", str(tmp_path), "--parts", "training,gpu"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "unknown gpu" in proc.stderr


@pytest.mark.slow
def test_dry_run_completes_every_part(tmp_path: Path) -> None:
    """The whole script on CPU at toy sizes (about 9 min on 2 cores). The dry run's 30-minute budget is lifted: on a
    loaded machine the parts finish late, and this test waits for them, never on the clock."""
    import json

    subprocess.run([sys.executable, gpu_proof.__file__, "--dry", "--budget-s", "86400", "--out", str(tmp_path),
                    "--work", str(tmp_path / "work")], check=True)
    result = json.loads((tmp_path / "gpu-proof.json").read_text("utf-8"))
    assert {p: r["status"] for p, r in result["parts"].items()} == {p: "done" for p in gpu_proof.PARTS}
    sharing = result["parts"]["sharing"]
    assert sharing["max_overlap"] == 3 and all(j["status"] == "done" for j in sharing["jobs"])
    assert {j["device"].split(" (")[0] for j in sharing["jobs"]} == {"GPU 0", "GPU 1"}
    study = result["parts"]["study"]
    assert study["cells"] == 4 and study["at_once"] == 2 and study["devices"] == ["cpu"]


def test_device_env_python_is_a_wrapper_that_keeps_the_venv(tmp_path: Path) -> None:
    """Issue 45: /tmp/bin/python was a link to python3, and Python started through a link outside its venv loses
    the venv (gpu_proof.py failed on pyarrow). The script's own line, pointed at a folder here, must keep it."""
    line = next(ln for ln in (gpu_proof.ROOT / "scripts" / "device_env.sh").read_text().splitlines() if "/tmp/bin/python" in ln
                and ln.startswith("mkdir"))
    venv_bin = Path(sys.executable).parent
    env = {"PATH": f"{venv_bin}:/usr/bin:/bin"}
    subprocess.run(["bash", "-c", line.replace("/tmp/bin", str(tmp_path / "bin"))], check=True, env=env)
    out = subprocess.run([str(tmp_path / "bin" / "python"), "-c", "import sys; print(sys.prefix)"], capture_output=True,
                         text=True, check=True, env=env).stdout.strip()
    assert out == sys.prefix
