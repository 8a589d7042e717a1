"""scripts/study_table.py: the README's study table from result JSONs, intervals and paired tests included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import study_table


def test_table_shows_intervals_paired_tests_and_marks_significance(tmp_path):
    entry = {"row": "dsir", "f1_mean": 0.61, "f1_ci": [0.58, 0.63], "seeds": 3, "ci_method": "bootstrap",
             "vs": {"tapt": {"delta": 0.012, "ci": [0.002, 0.02], "p": 0.03}, "none": {"delta": 0.02, "ci": [-0.01, 0.05], "p": 0.2}}}
    one = {"row": "none", "f1_mean": 0.59, "f1_ci": [0.57, 0.61], "seeds": 1, "vs": {}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"domain": "music", "summary": [entry, one], "cells": [{"seed": 1}, {"seed": 2}]}))
    lines = study_table.table([path]).splitlines()
    assert lines[2].startswith("| none | 59.00 [57.00, 61.00] (1 seed) | – | – |")  # baseline rows first
    assert lines[3] == "| dsir | 61.00 [58.00, 63.00] | +1.20 [+0.20, +2.00], p 0.03 * | +2.00 [-1.00, +5.00], p 0.20 |"
    assert study_table.main([str(tmp_path / "missing.json")]) == 2
    entry["vs"]["random"] = {"delta": -0.004, "ci": [-0.02, 0.01], "p": 0.6}  # a study with the random control
    path.write_text(json.dumps({"domain": "music", "summary": [entry, one], "cells": [{"seed": 1}]}))
    lines = study_table.table([path]).splitlines()
    assert lines[0].endswith("| music: vs random |") and lines[3].endswith("| -0.40 [-2.00, +1.00], p 0.60 |")
    assert lines[2].endswith("| – | – | – |")  # none is no selection: nothing against random
