"""scripts/ablation_table.py: issue 26's variant x domain table, with `none` borrowed from another run of the domain."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import load_script

ablation_table = load_script("ablation_table")

N_TEST = 60


def _predictions(path: Path, hit_rate: float, seed: int) -> str:
    """A predictions file: one gold PER span per sentence, found with probability `hit_rate`."""
    rng = np.random.default_rng(seed)
    gold = {"start": 0, "end": 1, "type": "PER"}
    with path.open("w", encoding="utf-8") as fh:
        for _ in range(N_TEST):
            fh.write(json.dumps({"gold_spans": [gold], "spans": [gold] if rng.random() < hit_rate else []}) + "\n")
    return str(path)


def _result(tmp_path: Path, name: str, rates: dict[str, float], params: dict, seeds=(1, 2, 3)) -> Path:
    cells = []
    for row, rate in rates.items():
        for seed in seeds:
            cell = {"row": row, "seed": seed, "lc_size": 100, "budget": 0 if row in ("none", "tapt") else 290,
                    "predictions": _predictions(tmp_path / f"{name}-{row}-{seed}.jsonl", rate, seed * 7 + len(row)), "f1": 0.0}
            if row != "none":
                cell["pick"] = {"helped": row != "dsir", "chosen": "base" if row == "dsir" else "step-400",
                                "gain_over_base": 0.0 if row == "dsir" else 0.04}
                cell["drift"] = {"cka": 0.7, "cosine": 0.9}
            cells.append(cell)
    from core.experiments.summary import interval_summary

    for c in cells:  # the F1 the cell would have stored
        c["f1"] = next(e["f1_mean"] for e in interval_summary([c], n_boot=10))
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"study": "CrossNER selective pretraining (issue 11)", "domain": "music",
                                "params": {"preset": "study", **params}, "finished": True,
                                "command": f"python scripts/crossner_study.py --domain music # {name}", "cells": cells}))
    return path


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_variants_are_labelled_none_is_borrowed_and_the_criterion_is_counted(tmp_path, capsys):
    base = _result(tmp_path, "study", {"none": 0.5, "tapt": 0.8, "dsir": 0.9}, {})
    # a variant that ran only the pretraining rows: its none comes from the study of the same domain and seeds
    variant = _result(tmp_path, "warm", {"tapt": 0.3, "dsir": 0.9}, {"mlm_config": {"head_warmup_steps": 100},
                                                                     "pick_checkpoint": 4})
    table = ablation_table.build([base, variant], "cmd")
    study, warm = sorted(table["entries"], key=lambda e: e["variant"])
    assert study["variant"] == "study" and warm["variant"] == "study + head_warmup_steps=100 + pick4"
    assert study["none_from"] is None and warm["none_from"] == str(base)
    assert warm["rows"]["none"]["f1_mean"] == study["rows"]["none"]["f1_mean"]  # the same cells, borrowed
    # another encoder trains `none` differently: its variant is labelled by it and borrows nothing from the study
    bert = _result(tmp_path, "bert", {"tapt": 0.8}, {"model": "bert-base-cased"})
    with_bert = ablation_table.build([base, bert], "cmd")
    alone = next(e for e in with_bert["entries"] if e["file"] == str(bert))
    assert alone["variant"] == "bert-base-cased + study" and alone["none_from"] is None and "none" not in alone["rows"]
    assert with_bert["criterion"]["bert-base-cased + study"]["cannot_say"] == ["music"]  # not counted as a failure
    assert with_bert["criterion"]["study"]["cannot_say"] == []
    # every setting that is on names the variant, so two recipes are never pooled as one row; off equals absent
    from core.experiments.plan import recipe_label

    assert recipe_label({"preset": "study", "ner_config": {"epochs": 5, "device": "cpu"}, "exclude_leaked": True,
                         "allow_dev_in_mlm": True, "pick_checkpoint": 0, "rehearsal_share": 0.0}) == \
        "study + ner.epochs=5 + exclude-leaked + DEV-in-MLM"
    # exclude_leaked alone changes nothing (it drops DC's DEV duplicates only where DEV text is allowed): no label
    assert recipe_label({"preset": "study", "exclude_leaked": True}) == "study"
    assert recipe_label({"preset": "study", "model": "default", "mlm_config": {}}) == "study"
    assert warm["rows"]["tapt"]["vs"]["none"]["delta"] < 0 < study["rows"]["tapt"]["vs"]["none"]["delta"]
    assert study["best_selection"] == "dsir" and study["tapt_ge_none"] and study["best_ge_tapt"]
    assert not warm["tapt_ge_none"] and warm["best_ge_tapt"]
    assert warm["rows"]["dsir"]["pick_kept_base"] == 3 and warm["rows"]["tapt"]["pick_kept_base"] == 0
    assert abs(warm["rows"]["tapt"]["drift_cka"] - 0.7) < 1e-9
    assert abs(warm["rows"]["tapt"]["probe_gain"] - 0.04) < 1e-9 and warm["rows"]["dsir"]["probe_gain"] == 0.0
    assert table["criterion"]["study"]["both"] == 1 and table["criterion"][warm["variant"]]["both"] == 0
    text = ablation_table.markdown(table)
    assert " †" in text and "dsir 3/3" in text and "+4.00 / +0.00" in text and "--domain music # warm" in text

    out = tmp_path / "out" / "ablation.json"
    assert ablation_table.main([str(base), str(variant), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["entries"] and out.with_suffix(".md").read_text().startswith("| variant |")
    assert ablation_table.main([str(tmp_path / "missing.json")]) == 2
    other = tmp_path / "compare.json"  # another script's result among the files a glob passes: skipped, said so
    other.write_text(json.dumps({"cells": [{"row": "x"}]}))
    assert ablation_table.build([other, base], "cmd")["criterion"].keys() == {"study"}
    assert "skipped compare.json" in capsys.readouterr().err


def test_a_row_without_counts_keeps_its_own_stored_interval_beside_a_borrowed_none(tmp_path):
    """An older variant run whose predictions are gone (no counts inline) cannot be paired with the none it borrows:
    its rows keep the intervals its own file stored, and say nothing against none rather than something made up."""
    base = _result(tmp_path, "study", {"none": 0.5, "tapt": 0.8}, {})
    variant = _result(tmp_path, "old", {"tapt": 0.7, "dsir": 0.9}, {"pick_checkpoint": 4})
    data = json.loads(variant.read_text())
    for c in data["cells"]:
        Path(c.pop("predictions")).unlink()
    data["summary"] = [{"row": "tapt", "f1_mean": 0.7, "f1_ci": [0.6, 0.8], "vs": {}},
                       {"row": "dsir", "f1_mean": 0.9, "f1_ci": [0.85, 0.95],
                        "vs": {"tapt": {"delta": 0.2, "ci": [0.1, 0.3], "p": 0.01}}}]
    variant.write_text(json.dumps(data))
    old = next(e for e in ablation_table.build([base, variant], "cmd")["entries"] if e["file"] == str(variant))
    assert old["none_from"] == str(base) and old["rows"]["none"]["f1_ci"] is not None
    assert old["rows"]["dsir"]["f1_ci"] == [0.85, 0.95] and old["rows"]["dsir"]["vs"] == data["summary"][1]["vs"]
    assert "none" not in old["rows"]["tapt"]["vs"]


def test_protocols_are_kept_apart_and_the_decision_rule_is_applied_to_v2_knobs(tmp_path):
    """Issue 46: a v1 result (DEV text in TC) and a v2 one of the same recipe are two variants, never one row; the
    table applies the decision rule (core.experiments.decision) to the v2 knob variants and shows Holm p."""
    v1 = _result(tmp_path, "v1", {"none": 0.5, "tapt": 0.6}, {})
    default = _result(tmp_path, "v2", {"none": 0.5, "tapt": 0.6}, {})
    knob = _result(tmp_path, "v2-l2sp", {"tapt": 0.95}, {"mlm_config": {"l2sp": 0.1}})
    for path in (default, knob):
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "protocol": {"name": "v2"}}))
    table = ablation_table.build([v1, default, knob], "cmd")
    assert sorted(e["variant"] for e in table["entries"]) == ["study", "study + l2sp=0.1 [v2]", "study [v2]"]
    # the v2 knob's none comes from the v2 default (same DEV and TEST), never from the v1 run listed first
    assert next(e for e in table["entries"] if "l2sp" in e["variant"])["none_from"] == str(default)
    made = table["decision"]
    (test,) = made["tests"]  # tapt only: none does not pretrain, and the v1 default is not the v2 knob's default
    assert test["knob"] == "l2sp=0.1" and test["row"] == "tapt" and test["delta"] > 0 and test["p_holm"] < 0.05
    (outcome,) = made["knobs"]
    assert outcome["outcome"] == "open" and outcome["better"] == ["music"]  # 1 of the 3 domains the rule needs
    text = ablation_table.markdown(table)
    assert "Decision rule (issue 46), protocol v2" in text and "| l2sp=0.1 | music | tapt | 3 |" in text
    assert [r["row"] for r in made["new_rows"]] == ["entity-gain", "entity-gain-pool"]
    assert all("has not run beside random" in r["sentence"] for r in made["new_rows"])
    assert "`entity-gain-pool` ranks by the same entity gain" in text and "The entity-aware strategy" in text


def test_a_pair_with_heads_drawn_apart_is_marked_and_explained():
    t = {"seeds": [1, 2, 3], "delta": 0.01, "ci": [-0.01, 0.03], "p": 0.2, "p_holm": 0.6, "heads_apart": 2}
    assert ablation_table._test_cells(t).startswith("3 ‡2 | +1.00 |")
    assert ablation_table._test_cells({**t, "heads_apart": 0}).startswith("3 | ")
    assert "--rerun-old-head" in " ".join(ablation_table._heads_note([t]))
    assert ablation_table._heads_note([{**t, "heads_apart": 0}]) == []


def _ran_on(path: Path, device: str, dtype: str) -> Path:
    data = json.loads(path.read_text())
    for c in data["cells"]:
        c["numerics"] = {"device": device, "dtype": dtype}
    path.write_text(json.dumps({**data, "protocol": {"name": "v2"}}))
    return path


def test_a_cpu_rerun_of_a_gpu_default_is_its_own_labelled_run_and_pairs_with_cpu_variants(tmp_path):
    """Without a GPU a domain's default reruns on the CPU beside its GPU run: both stay in the table, each labelled
    with how it ran (never one superseding the other), a CPU knob borrows none from the CPU run and is tested
    against it alone."""
    gpu = _ran_on(_result(tmp_path, "gpu", {"none": 0.5, "tapt": 0.6}, {"pick_checkpoint": 4}), "cuda", "bf16")
    cpu = _ran_on(_result(tmp_path, "cpu", {"none": 0.5, "tapt": 0.6}, {"pick_checkpoint": 4}), "cpu", "fp32")
    knob = _ran_on(_result(tmp_path, "cpu-lr", {"tapt": 0.95}, {"pick_checkpoint": 4, "mlm_config": {"lr": 5e-5}}),
                   "cpu", "fp32")
    table = ablation_table.build([gpu, cpu, knob], "cmd")
    assert table["superseded"] == []
    labels = {e["file"]: e["label"] for e in table["entries"]}
    assert labels == {str(gpu): "music on cuda (bf16)", str(cpu): "music on cpu (fp32)", str(knob): "music"}
    assert next(e for e in table["entries"] if e["file"] == str(knob))["none_from"] == str(cpu)
    made = table["decision"]
    assert made["unpaired"] == [] and [(t["knob"], t["row"]) for t in made["tests"]] == [("lr=5e-05", "tapt")]
    assert "| study + pick4 [v2] | music on cpu (fp32) |" in ablation_table.markdown(table)
    counted = table["criterion"]["study + pick4 [v2]"]
    assert counted["domains"] == ["music on cpu (fp32)", "music on cuda (bf16)"]
    assert counted["tapt_ge_none"] == 1  # one domain, run two ways: counted once


def test_a_partial_run_is_counted_on_its_paired_difference():
    """Found in review: literature's partial CPU run showed none 54.00 (3 seeds) beside TAPT 53.78 (2 seeds) and a paired
    TAPT - none of +0.04 (seeds 1 and 2); the tallies compared the two means, over different seeds, and counted TAPT
    below none. They now read the paired difference where there is one."""
    none = {"f1_mean": 0.5400, "seeds": [1, 2, 3], "vs": {}}
    tapt = {"f1_mean": 0.5378, "seeds": [1, 2], "vs": {"none": {"delta": 0.0004}}}
    assert ablation_table._not_worse(tapt, none, "none")
    assert not ablation_table._not_worse({**tapt, "vs": {"none": {"delta": -0.002}}}, none, "none")
    assert not ablation_table._not_worse({**tapt, "vs": {}}, none, "none")  # no paired test: the means decide


def test_a_raw_p_is_never_starred_and_a_stored_summary_gets_holm(tmp_path):
    """Found in review: ablation.md starred raw p of stored summaries (ai TAPT 'p 0.006 raw *') that README, from the
    same file, read as Holm 0.072 with no star."""
    raw = {"delta": 0.02, "ci": [0.01, 0.03], "p": 0.006, "seeds": [1, 2, 3]}
    assert ablation_table._vs({"vs": {"none": raw}}, "none").endswith("p 0.006 raw")
    tests = [{"delta": 0.02, "ci": [0.01, 0.03], "p": p, "seeds": 3} for p in (0.006, 0.03, 0.04)]
    summary = [{"row": r, "f1_mean": 0.5, "f1_ci": None, "seeds": 3, "vs": {"none": t}}
               for r, t in zip(("tapt", "dsir", "cosine"), tests)]
    stored = {"_file": "x.json", "params": {"preset": "study"}, "domain": "music", "cells": [], "summary": summary}
    entry = ablation_table.domain_entry(stored, [])
    assert [round(entry["rows"][r]["vs"]["none"]["p_holm"], 3) for r in ("tapt", "dsir", "cosine")] == [0.018, 0.06, 0.06]
