"""Issue 42: every result number in README comes from the JSON. `scripts/report.py --check` passes on the checkout,
and names a number that was changed by hand inside a generated block or typed outside one."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, load_script

report = load_script("report")


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_readme_matches_the_result_jsons(capsys):
    assert report.main(["--check"]) == 0, capsys.readouterr().out


def test_a_changed_or_loose_number_is_named(tmp_path, capsys):
    text = (ROOT / "README.md").read_text("utf-8")
    start = text.index("<!-- report:study-v1 -->")
    cut = text.index("52.44", start)  # ai none's F1 in the generated table
    bad = text[:cut] + "53.44" + text[cut + 5:]
    end = text.index("## Running it for a while")
    bad = bad[:end] + "TAPT gains 2.38 points.\n\n" + bad[end:]
    copy = tmp_path / "README.md"
    copy.write_text(bad, "utf-8")
    assert report.main(["--check", "--readme", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "block study-v1: differs from the JSON" in out and "53.44 (README)" in out and "52.44 (JSON)" in out
    assert "number typed by hand outside a generated block" in out and ": 2.38" in out
    assert report.main(["--readme", str(copy)]) == 0 and "53.44" not in copy.read_text("utf-8").split("## Running")[0][start:]


def test_sources_say_where_each_domains_cells_ran():
    """Rows of one domain compare among themselves only when they ran alike: the Sources line says how, per domain."""
    import doctest

    assert doctest.testmod(report, verbose=False).failed == 0
    seeded = {"head_seed": "after-encoder"}
    gpu = {"domain": "music", "cells": [{"numerics": {"device": "cuda", "dtype": "bf16", **seeded}}] * 2,
           "encoder_note": "weights rounded to float16"}
    mixed = {"domain": "ai", "cells": [{"numerics": {"device": "cpu", "dtype": "fp32", **seeded}},
                                       {"numerics": {"device": "cuda", "dtype": "bf16"}}]}
    assert report.ran_on(gpu) == "ran on cuda (bf16), encoder weights fp16-rounded for the device"
    assert report.ran_on(mixed) == ("ran on cpu (fp32) and cuda (bf16), 1 cell from before the NER head was seeded "
                                    "after the encoder load")
    assert report.ran_on({"cells": []}) == "ran on an unrecorded device"


def test_the_ablation_table_is_made_from_every_study_json_and_plan_here():
    """report.py writes and checks docs/results/ablation.{json,md} over every study JSON (not the source comparisons or
    coverage, which are other studies) and every issue-46 plan: a result added since the table was made is not left
    out, and the committed table is that one."""
    argv = report.ablation_arguments()
    results = argv[:argv.index("--out")]
    assert results and all(r.startswith("docs/results/crossner-") for r in results)
    assert not any("compare" in r or "coverage" in r for r in results)
    assert "docs/results/crossner-v2-ai-study-pick4-cpu-fp32.json" in results
    plans = sorted(f"scripts/plans/{p.name}" for p in (ROOT / "scripts" / "plans").glob("issue46-*.plan"))
    assert argv[argv.index("--plans") + 1:] == plans
    made = report.generated_files()
    assert set(made) == {report.RESULTS / "ablation.md", report.RESULTS / "ablation.json"}
    assert all(path.read_text("utf-8") == text for path, text in made.items())


def test_the_compare_table_stars_a_pair_only_with_three_seeds_or_more(tmp_path, monkeypatch):
    """README's rule, no star below 3 seeds, held in every table but the compare one, which starred on p alone."""
    import json

    data = json.loads((ROOT / "docs/results/crossner-compare-pooled-study.json").read_text("utf-8"))
    data["points"][0]["gain_p"] = 1e-6  # a pair far below 0.05 after Holm over the 25
    monkeypatch.setattr(report, "ROOT", tmp_path)  # the table names its source relative to the project
    for seeds, starred in (([1, 2], False), ([1, 2, 3], True)):
        path = tmp_path / f"compare-{len(seeds)}.json"
        path.write_text(json.dumps({**data, "seeds": seeds}), "utf-8")
        table = report.compare_block(path).split("\n\n")[0]
        assert ("] *" in table) == starred, table  # a star follows the interval (bold cells start with "**")
        assert ("a claim needs 3 seeds" in report.compare_block(path)) != starred
