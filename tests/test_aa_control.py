"""scripts/aa_control.py: the unchanged-encoder cells against none of the same seed."""

from __future__ import annotations

from tests.conftest import load_script


def test_only_cells_whose_encoder_did_not_move_are_compared_with_none_of_their_seed():
    aa = load_script("aa_control")
    default = {"cells": [{"row": "none", "seed": 1, "f1": 0.50}, {"row": "none", "seed": 2, "f1": 0.60},
                         {"row": "tapt", "seed": 1, "f1": 0.70}]}
    still = {"cosine": 1.0, "cka": 1.0}
    variant = {"cells": [{"row": "tapt", "seed": 1, "f1": 0.52, "drift": still, "pick": {"chosen": "step-100"}},
                         {"row": "tapt", "seed": 2, "f1": 0.60, "drift": still, "pick": {"chosen": "base"}},
                         {"row": "dsir", "seed": 1, "f1": 0.90, "drift": {"cosine": 0.8, "cka": 0.9}},
                         {"row": "dsir", "seed": 3, "f1": 0.90, "drift": still}]}
    rows = aa.unchanged_against_none(variant, default)
    assert [(r["row"], r["seed"], r["chosen"]) for r in rows] == [("tapt", 1, "step-100"), ("tapt", 2, "base")]
    assert abs(rows[0]["minus_none"] - 0.02) < 1e-12 and rows[1]["minus_none"] == 0


def test_two_studies_run_on_different_machines_are_refused(tmp_path, capsys):
    """Found in review: a device difference (GPU bf16 against CPU fp32) read as "the NER head did not depend on the
    seed alone"."""
    import json

    import pytest

    aa = load_script("aa_control")
    gpu, cpu = {"device": "cuda", "dtype": "bf16"}, {"device": "cpu", "dtype": "fp32"}
    (tmp_path / "v.json").write_text(json.dumps({"cells": [{"row": "tapt", "seed": 1, "f1": 0.5, "numerics": gpu}]}))
    (tmp_path / "d.json").write_text(json.dumps({"cells": [{"row": "none", "seed": 1, "f1": 0.5, "numerics": cpu}]}))
    with pytest.raises(SystemExit, match="ran differently"):
        aa.main([str(tmp_path / "v.json"), str(tmp_path / "d.json")])
