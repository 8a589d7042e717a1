"""compare-sources (Dai et al. 2019/2020) end to end on tiny models: the JSON the issue names,
resumption, and lineage that names each NER run's pretraining source and its hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.data.workspace import Workspace
from core.errors import UserError
from tests.conftest import TOY_SENTENCES, load_script, unlike
from tests.ner_data import single_thread_torch, write_toy_conll  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")


def test_compare_sources_json_and_lineage(tmp_path, tiny_bert_dir, capsys, monkeypatch):
    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    ws = tmp_path / "ws"
    for i, text in enumerate([[unlike(s) for s in TOY_SENTENCES[:8]], [unlike(s, 1) for s in TOY_SENTENCES],
                              [unlike(s, 2) for s in TOY_SENTENCES[4:]]]):
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
        assert "p_holm" in s["vs"]["none"]  # adjusted over the comparison's tests
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
    for i, text in enumerate([[unlike(s) for s in TOY_SENTENCES[:8]], [unlike(s, 2) for s in TOY_SENTENCES[4:]]]):
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


def _comparison(target: str, gains: dict[str, float], tvc: dict[str, float], base: float = 0.5, preset: str = "study",
                model: str = "default") -> dict:
    return {"target": target, "target_hash": f"h-{target}", "baseline_f1": base, "preset": preset, "model": model,
            "measures": ["tvc", "jsd"], "seeds": [1, 2],
            "sources": [{"name": s, "hash": f"h-{s}", "f1_mean": base + g, "runs": ["a", "b"], "tvc": tvc[s], "jsd": 1 - tvc[s],
                         "vs": {"none": {"delta": g, "ci": [g - 0.01, g + 0.01], "p": 0.04}}} for s, g in gains.items()]}


def test_pooled_pairs_separate_source_fit_from_target_gain_and_the_in_domain_pair():
    """Within each target the gain rises with TVC (0.1 per 0.1), but the targets' gains are offset against their TVC
    level, so r over all pairs is negative while r within targets is exactly +1; JSD = 1 - TVC mirrors it."""
    from core.similarity.correlation import pair_rows, pool_comparisons, pooled_rows

    a = _comparison("a", {"a": 0.03, "x": 0.02, "y": 0.01}, {"a": 0.9, "x": 0.8, "y": 0.7})
    b = _comparison("b", {"b": 0.13, "x": 0.12, "y": 0.11}, {"b": 0.3, "x": 0.2, "y": 0.1})
    pooled = pool_comparisons([a, b])
    assert pooled["pairs"] == 6 and pooled["targets"] == ["a", "b"]
    assert [p["in_domain"] for p in pooled["points"]] == [True, False, False, True, False, False]
    tvc, jsd = pooled["measures"]["tvc"], pooled["measures"]["jsd"]
    assert tvc["r"] < -0.8 and tvc["r_within"] == pytest.approx(1.0) and jsd["r_within"] == pytest.approx(-1.0)
    assert tvc["as_expected"] is False and jsd["as_expected"] is False  # over all pairs the signs run the wrong way
    assert tvc["r"] == pytest.approx(-0.90996, abs=1e-4) and tvc["r_off_diagonal"] == pytest.approx(-0.96514, abs=1e-4)
    assert tvc["rho"] < 0 and tvc["n"] == 6 and tvc["r_ci_method"] == "bootstrap over pairs"  # 2 targets: pairs resampled
    assert pair_rows(pooled)[0]["gain"] == "+3.00" and pair_rows(pooled)[0]["95% CI"] == "[+2.00, +4.00]"
    assert [r["sign"] for r in pooled_rows(pooled)] == ["opposite of expected"] * 2


def test_pooling_refuses_two_recipes_a_target_twice_and_bad_files(tmp_path, capsys):
    from core.errors import UserError
    from core.experiments.compare import read_comparison
    from core.similarity.comparison import ComparisonResult
    from core.similarity.correlation import default_pool, pool_comparisons

    a = _comparison("a", {"a": 0.03, "x": 0.02, "y": 0.01}, {"a": 0.9, "x": 0.8, "y": 0.7})
    with pytest.raises(UserError, match="different recipes"):
        pool_comparisons([a, _comparison("b", {"x": 0.1, "y": 0.2, "b": 0.3}, {"x": 0.1, "y": 0.2, "b": 0.3}, preset="demo")])
    with pytest.raises(UserError, match="target a appears in more than one"):
        pool_comparisons([a, a])
    with pytest.raises(UserError, match="no compare-sources results"):
        pool_comparisons([])
    newer = _comparison("a", {"a": 0.05, "x": 0.02, "y": 0.01}, {"a": 0.9, "x": 0.8, "y": 0.7})
    demo = _comparison("b", {"b": 0.1}, {"b": 0.3}, preset="demo")
    typed = [ComparisonResult.of(c, "test") for c in (newer, demo, a)]
    assert default_pool(typed) == typed[:1]  # the recipe with most targets, the newest run per target
    bad = tmp_path / "bad.json"
    for text, says in (("{", "not a JSON file"), (json.dumps({"target": "a"}), "no baseline_f1, sources, measures"),
                       (json.dumps({**a, "sources": [{"name": "x"}]}), "source 1 has no name or F1")):
        bad.write_text(text)
        with pytest.raises(UserError, match=says):
            read_comparison(bad)
    files = []
    for c in (a, _comparison("b", {"b": 0.13, "x": 0.12, "y": 0.11}, {"b": 0.3, "x": 0.2, "y": 0.1})):
        files.append(tmp_path / f"{c['target']}.json")
        files[-1].write_text(json.dumps(c))
    assert main(["compare-pool", *map(str, files), "--out", str(tmp_path / "pooled.json")]) == 0
    out = capsys.readouterr().out
    assert "6 (source, target) pairs over 2 targets" in out and "opposite of expected" in out
    assert json.loads((tmp_path / "pooled.json").read_text())["pairs"] == 6
    assert main(["compare-pool", str(bad)]) == 2 and "source 1 has no name or F1" in capsys.readouterr().err
    assert main(["compare-pool", "--workspace", str(tmp_path / "empty")]) == 2


def test_the_interval_of_r_over_pairs_resamples_targets_and_sources_together():
    """Three targets whose gain level rises with their TVC level and nothing else: 9 pairs make r look sure when
    resampled as independent points, while drawing targets (and sources) again shows how little 3 targets say."""
    from core.similarity.correlation import crossed_r_interval, pool_comparisons, r_interval

    level = {"a": 0.0, "b": 0.05, "c": 0.10}
    results = [_comparison(t, {s: level[t] + 0.002 * k for k, s in enumerate("xyz")},
                           {s: 0.3 + 4 * level[t] + 0.01 * (k % 2) for k, s in enumerate("xyz")}) for t in "abc"]
    pooled = pool_comparisons(results)
    tvc = pooled["measures"]["tvc"]
    assert tvc["r_ci_method"].startswith("bootstrap over targets and sources") and tvc["r"] > 0.9
    pairs_ci = r_interval([(p["tvc"], p["gain"]) for p in pooled["points"]])
    lo, hi = tvc["r_ci"]
    assert lo <= tvc["r"] <= hi and hi - lo > 2 * (pairs_ci[1] - pairs_ci[0])
    assert crossed_r_interval([p for p in pooled["points"] if p["target"] != "c"], "tvc") is None  # 2 targets
    assert tvc["r_within"] is not None and abs(tvc["r_within"]) < 0.9  # within a target, TVC barely moves with gain
    assert tvc["r_within_ci"][0] <= tvc["r_within"] <= tvc["r_within_ci"][1]


def test_the_interval_of_r_within_targets_centres_each_drawn_target():
    """Three targets whose gain rises exactly with TVC inside each target, with offset levels that make r over all pairs
    negative: r within targets is +1 in every draw of targets and sources, while the interval of r over pairs is not."""
    from core.similarity.correlation import crossed_r_interval, pool_comparisons, pooled_rows

    shift = {"a": 0.0, "b": 0.1, "c": 0.2}
    results = [_comparison(t, {s: shift[t] + 0.01 * k for k, s in enumerate("xyz")},
                           {s: 0.9 - 3 * shift[t] + 0.1 * k for k, s in enumerate("xyz")}) for t in "abc"]
    tvc = pool_comparisons(results)["measures"]["tvc"]
    assert tvc["r"] < 0 and tvc["r_within"] == pytest.approx(1.0)
    assert tvc["r_within_ci"] == pytest.approx([1.0, 1.0]) and tvc["r_ci"][0] < 0
    assert crossed_r_interval(pool_comparisons(results)["points"], "tvc")[0] < 0  # without centring: not +1
    assert pooled_rows(pool_comparisons(results))[0]["within: 95% CI"] == "[+1.00, +1.00]"


def test_finished_cells_come_back_into_a_fresh_workspace_under_their_key_only(tmp_path, tiny_bert_dir, monkeypatch):
    """A cell kept elsewhere (a result file on another machine) is not trained again in a fresh workspace when the
    recipe, LC/DEV/TEST, source and seed are the same; a changed source's cells run again."""
    from core.experiments.cells import CellTrainer
    from core.experiments.compare import Comparison
    from core.runner import jobs

    labeled = write_toy_conll(tmp_path / "lc.conll")

    def workspace(name: str, src1: list[str]) -> Workspace:
        ws = Workspace(tmp_path / name)
        for i, text in enumerate([[unlike(s) for s in TOY_SENTENCES[:8]], [unlike(s, 2) for s in src1]]):
            path = tmp_path / f"{name}-src{i}.txt"
            path.write_text("\n".join(text) + "\n")
            ws.import_corpus(path, name=f"src{i}")
        return ws

    params = {"sources": ["src0", "src1"], "lc": labeled, "dev": labeled, "test": labeled, "target": "src0",
              "measures": ["tvc"], "seeds": [1], "preset": "tiny", "model": str(tiny_bert_dir)}
    first = jobs.run_inline(workspace("ws1", TOY_SENTENCES[4:]), "compare-sources", params, run_dir=tmp_path / "cs1")
    kept = [json.loads(p.read_text()) for p in sorted((tmp_path / "cs1").glob("cells/*/seed-*/cell.json"))]
    assert len(kept) == 3 and all(c["key"] and c["test_counts"] for c in kept)

    fresh = workspace("ws2", TOY_SENTENCES[4:])
    typed, ctx = jobs.inline_context(fresh, "compare-sources", params, run_dir=tmp_path / "cs2")
    comparison = Comparison(typed, ctx)
    no_counts = [{**c, "test_counts": None} for c in kept]
    assert comparison.restore(no_counts, {"file": "kept.json"}) == 0  # without counts it would lose its interval
    assert comparison.restore(kept, {"file": "kept.json"}) == 3
    assert comparison.restore(kept, {"file": "kept.json"}) == 0  # already there

    def no_training(*args, **kwargs):
        raise AssertionError("a restored cell was trained again")

    with monkeypatch.context() as m:
        m.setattr(CellTrainer, "ner_model", no_training)
        m.setattr(CellTrainer, "shared_mlm_model", no_training)
        again = jobs.run_inline(fresh, "compare-sources", params, run_dir=tmp_path / "cs2")
    assert again["baseline_f1_ci"] == first["baseline_f1_ci"]
    assert [(s["f1_mean"], s["f1_ci"], s["vs"]) for s in again["sources"]] == \
        [(s["f1_mean"], s["f1_ci"], s["vs"]) for s in first["sources"]]
    cell = json.loads((tmp_path / "cs2/cells/src1/seed-1/cell.json").read_text())
    assert cell["restored_from"] == {"file": "kept.json"}

    changed = workspace("ws3", [s.upper() for s in TOY_SENTENCES[4:]])  # src1 has other text: its MLM model differs
    typed, ctx = jobs.inline_context(changed, "compare-sources", params, run_dir=tmp_path / "cs3")
    assert Comparison(typed, ctx).restore(kept, {"file": "kept.json"}) == 2
    assert not (tmp_path / "cs3/cells/src1").exists()
    typed, ctx = jobs.inline_context(fresh, "compare-sources", {**params, "preset": "demo"}, run_dir=tmp_path / "cs4")
    assert Comparison(typed, ctx).restore(kept, {"file": "kept.json"}) == 0  # another recipe
    with pytest.raises(UserError, match="holds a finished no-pretraining seed 1 cell of another recipe or other corpora"):
        jobs.run_inline(fresh, "compare-sources", {**params, "preset": "demo"}, run_dir=tmp_path / "cs2")  # cs2's cells


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_the_crossner_comparison_interleaves_targets_and_continues_on_a_fresh_machine(tmp_path, tiny_bert_dir,
                                                                                          monkeypatch, capsys):
    """Several targets run position by position (each source's MLM model once, every target's fine-tune on it at
    once), each cell kept in the parts file as it finishes; with the workspace gone, the same command trains
    nothing and writes the same results."""
    from core.experiments.cells import CellTrainer
    from tests.test_study import _fake_crossner

    script = load_script("crossner_compare_sources")
    _fake_crossner(tmp_path / "crossner")
    monkeypatch.setattr(script, "ROOT", tmp_path / "repo")
    monkeypatch.setattr(script, "CROSSNER", tmp_path / "crossner")

    err: list[str] = []

    def run(*extra: str, workspace: str = "ws1") -> str:
        monkeypatch.setattr("sys.argv", ["x", "--target", "ai,music", "--seeds", "1", "--preset", "tiny", "--measures", "tvc",
                                         "--model", str(tiny_bert_dir), "--workspace", str(tmp_path / workspace), *extra])
        capsys.readouterr()
        assert script.main() == 0
        captured = capsys.readouterr()
        err[:] = [captured.err]
        return captured.out

    run()
    assert "cell 1/12 ai <- no pretraining seed 1: test F1 " in err[0]  # each finished cell, numbered, on the terminal
    assert "cell 12/12 music <- science-traindev seed 1: test F1 " in err[0]
    results = tmp_path / "repo" / "docs" / "results"
    [parts] = (results / "parts").glob("crossner-compare-*.json")
    cells = json.loads(parts.read_text())["cells"]
    order = [(c["target"], c["row"]) for c in cells]
    sources = [f"{d}-traindev" for d in ("ai", "literature", "music", "politics", "science")]
    assert order == [(t, row) for row in ["_baseline", *sources] for t in ("ai", "music")]
    first = {f.name: json.loads(f.read_text()) for t in ("ai", "music") for f in results.glob(f"crossner-compare-{t}-*.json")}
    assert len(first) == 2 and all(r["seeds"] == [1] and len(r["sources"]) == 5 for r in first.values())
    pooled = json.loads(next(results.glob("crossner-compare-pooled-*.json")).read_text())
    assert pooled["pairs"] == 10

    for f in first:
        (results / f).unlink()
    whole = parts.read_text()
    parts.write_text(json.dumps({**json.loads(whole), "cells": cells[:-2]}))  # as if the session ended two cells early
    status = run("--status", workspace="ws2")  # the kept cells come back first
    assert "ai: 5 of 6 cells finished (5 kept" in status and "music: 5 of 6" in status
    assert f"2 cells to go; continue with: python scripts/crossner_compare_sources.py --target ai,music --seeds 1 " \
           f"--preset tiny --model {tiny_bert_dir}" in status
    parts.write_text(whole)
    monkeypatch.setattr(CellTrainer, "ner_model", lambda *a, **k: pytest.fail("a kept cell was trained again"))
    monkeypatch.setattr(CellTrainer, "shared_mlm_model", lambda *a, **k: pytest.fail("a kept model was trained again"))
    out = run(workspace="ws3")
    assert "6 finished cells restored" in out and ": test F1 " not in err[0]
    for name, result in first.items():
        again = json.loads((results / name).read_text())
        assert [(s["name"], s["f1_mean"], s["f1_ci"]) for s in again["sources"]] == \
            [(s["name"], s["f1_mean"], s["f1_ci"]) for s in result["sources"]]
    status = run("--status", "--again", workspace="ws4")
    assert "ai: 6 of 6 cells finished" in status and "all cells finished" in status
    assert "kept docs" not in status and "kept docs" in run("--status", workspace="ws4")  # finished targets are kept
