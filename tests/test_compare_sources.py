"""compare-sources (Dai et al. 2019/2020) end to end on tiny models: the JSON the issue names,
resumption, and lineage that names each NER run's pretraining source and its hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.data.workspace import Workspace
from tests.conftest import TOY_SENTENCES
from tests.ner_data import single_thread_torch, write_toy_conll  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")


def test_compare_sources_json_and_lineage(tmp_path, tiny_bert_dir, capsys, monkeypatch):
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = tmp_path / "ws"
    for i, text in enumerate([TOY_SENTENCES[:8], [s.replace(".", "!") for s in TOY_SENTENCES], TOY_SENTENCES[4:]]):
        path = tmp_path / f"src{i}.txt"
        path.write_text("\n".join(text) + "\n")
        assert main(["--workspace", str(ws), "import", str(path), "--name", f"src{i}"]) == 0
    labeled = write_toy_conll(tmp_path / "lc.conll")
    argv = ["--workspace", str(ws), "compare-sources", "--sources", "src0,src1,src2", "--lc", labeled, "--dev", labeled,
            "--test", labeled, "--target", "src0", "--measures", "tvc,jsd", "--seeds", "1", "--preset", "tiny",
            "--model", str(tiny_bert_dir), "--out", str(tmp_path / "cs"), "--json"]
    capsys.readouterr()
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in result["sources"]] == ["src0", "src1", "src2"]
    assert 0 <= result["baseline_f1"] <= 1
    for s in result["sources"]:
        assert 0 <= s["f1_mean"] <= 1 and len(s["runs"]) == 1 and s["tvc"] is not None and s["jsd"] is not None
        lo, hi = s["f1_ci"]  # bootstrap over TEST sentences, from the kept predictions
        assert 0 <= lo <= hi <= 1 and set(s["vs"]) == {"none"} and 0 < s["vs"]["none"]["p"] <= 1
        assert s["vs"]["none"]["seeds_needed"] is None  # one seed: no spread to say it from
    assert result["sources"][0]["tvc"] == pytest.approx(1.0)  # the target against itself covers all of it
    assert set(result["correlation"]) == {"tvc", "jsd"} and all(c["n"] == 3 for c in result["correlation"].values())

    run = result["sources"][1]["runs"][0]
    assert main(["--workspace", str(ws), "runs", "show", run, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    corpora = shown["lineage"]["pretraining_corpora"]
    src1 = Workspace(ws).corpus_info("src1")
    assert [c["name"] for c in corpora] == ["src1"] and corpora[0]["hash"] == src1.hash

    assert main(argv) == 0  # a rerun resumes: every cell is kept, the result is the same
    again = json.loads(capsys.readouterr().out)
    assert [s["f1_mean"] for s in again["sources"]] == [s["f1_mean"] for s in result["sources"]]


def test_a_second_target_reuses_each_sources_mlm_model(tmp_path, tiny_bert_dir, capsys, monkeypatch):
    """Pretraining on a source does not depend on the target: comparing for a second target in the same workspace
    fine-tunes on the first comparison's MLM models instead of training them again."""
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = tmp_path / "ws"
    for i, text in enumerate([TOY_SENTENCES[:8], TOY_SENTENCES[4:]]):
        path = tmp_path / f"src{i}.txt"
        path.write_text("\n".join(text) + "\n")
        assert main(["--workspace", str(ws), "import", str(path), "--name", f"src{i}"]) == 0
    labeled = write_toy_conll(tmp_path / "lc.conll")

    def compare(target: str) -> list[dict]:
        out = tmp_path / f"cs-{target}"
        assert main(["--workspace", str(ws), "compare-sources", "--sources", "src0,src1", "--lc", labeled, "--dev",
                     labeled, "--test", labeled, "--target", target, "--measures", "tvc", "--seeds", "1", "--preset",
                     "tiny", "--model", str(tiny_bert_dir), "--out", str(out), "--json"]) == 0
        capsys.readouterr()
        return [json.loads((out / "cells" / src / "seed-1" / "cell.json").read_text()) for src in ("src0", "src1")]

    first = compare("src0")
    def stamps(models) -> dict[str, int]:  # the weights and the training time, written only by a training
        return {str(f): f.stat().st_mtime_ns for m in models for f in [*Path(m).glob("*.safetensors"),
                                                                        Path(m).parent / "seconds.json"]}

    trained = stamps(c["mlm_model"] for c in first)
    assert len(trained) == 4 and all("/artifacts/mlm/" in c["mlm_model"] for c in first)
    second = compare("src1")
    assert [c["mlm_model"] for c in second] == [c["mlm_model"] for c in first]
    assert stamps(c["mlm_model"] for c in second) == trained  # not trained again
    assert all(not (tmp_path / f"cs-src1/cells/{s}/seed-1/mlm").exists() for s in ("src0", "src1"))


def test_the_shared_mlm_key_names_what_decides_the_model_and_nothing_else():
    from dataclasses import replace

    from core.experiments.cells import mlm_key
    from core.train.mlm import preset_config

    study = preset_config("study")
    key = mlm_key("default", "abc", study, 1)
    assert key.startswith("seed-1.")
    # run-only settings (logging, checkpoints, device, an OOM retry's grad_accum) leave the model as it is
    assert mlm_key("default", "abc", replace(study, log_every=1, grad_accum=4, device="cuda", seed=9), 1) == key
    changed = [mlm_key("other", "abc", study, 1), mlm_key("default", "abd", study, 1), mlm_key("default", "abc", study, 2),
               mlm_key("default", "abc", replace(study, lr=2e-4), 1), mlm_key("default", "abc", preset_config("demo"), 1)]
    assert len({key, *changed}) == 6
