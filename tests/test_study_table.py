"""scripts/study_table.py: the README's study table from result JSONs, intervals and paired tests included."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import load_script

study_table = load_script("study_table")


def test_table_shows_intervals_paired_tests_and_marks_significance(tmp_path):
    entry = {"row": "dsir", "f1_mean": 0.61, "f1_ci": [0.58, 0.63], "seeds": 3, "ci_method": "bootstrap",
             "vs": {"tapt": {"delta": 0.012, "ci": [0.002, 0.02], "p": 0.01, "seeds": 3},
                    "none": {"delta": 0.02, "ci": [-0.01, 0.05], "p": 0.2, "seeds": 3}}}
    one = {"row": "none", "f1_mean": 0.59, "f1_ci": [0.57, 0.61], "seeds": 1, "vs": {}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"domain": "music", "summary": [entry, one], "cells": [{"seed": 1}, {"seed": 2}]}))
    lines = study_table.table([path]).splitlines()
    assert lines[2].startswith("| none | 59.00 [57.00, 61.00] (1 seed) | – | – |")  # baseline rows first
    # a summary from before Holm: adjusted here over its two stored p, the star read from the adjusted one
    assert lines[3] == ("| dsir | 61.00 [58.00, 63.00] | +1.20 [+0.20, +2.00], p 0.010 (Holm 0.020) * | "
                        "+2.00 [-1.00, +5.00], p 0.200 (Holm 0.200) |")
    assert study_table.main([str(tmp_path / "missing.json")]) == 2
    entry["vs"]["random"] = {"delta": -0.004, "ci": [-0.02, 0.01], "p": 0.6, "seeds": 3}  # with the random control
    path.write_text(json.dumps({"domain": "music", "summary": [entry, one], "cells": [{"seed": 1}]}))
    lines = study_table.table([path]).splitlines()
    assert lines[0].endswith("| music: vs random |") and lines[3].endswith("| -0.40 [-2.00, +1.00], p 0.600 (Holm 0.600) |")
    assert "p 0.010 (Holm 0.030) *" in lines[3]  # three comparisons now
    assert lines[2].endswith("| – | – | – |")  # none is no selection: nothing against random


def test_the_long_layout_has_one_line_per_domain_and_row(tmp_path):
    def result(domain: str, delta: float) -> Path:
        entries = [{"row": "none", "f1_mean": 0.5, "f1_ci": [0.48, 0.52], "seeds": 3, "vs": {}},
                   {"row": "tapt", "f1_mean": 0.5 + delta, "f1_ci": [0.49, 0.53], "seeds": 3,
                    "vs": {"none": {"delta": delta, "ci": [delta - 0.01, delta + 0.01], "p": 0.01, "seeds": 3}}}]
        path = tmp_path / f"{domain}.json"
        path.write_text(json.dumps({"domain": domain, "summary": entries, "cells": [{"seed": 1}]}))
        return path

    lines = study_table.table([result("ai", 0.02), result("music", -0.01)], long=True).splitlines()
    assert lines[0] == "| domain | row | test F1 [95% CI] | vs tapt | vs none |"
    assert [line.split(" | ")[:2] for line in lines[2:6]] == [["| ai", "none"], ["| ai", "tapt"], ["| music", "none"],
                                                              ["| music", "tapt"]]
    assert lines[5].endswith("| – | -1.00 [-2.00, +0.00], p 0.010 (Holm 0.010) * |")
