"""Issue 26: checkpoint selection. The base encoder and an MLM phase's kept snapshots are scored by DEV F1 after a
short NER fine-tune; a pretrained checkpoint is used only when it beats the base."""

from __future__ import annotations

import json

import pytest
import torch

from core.data.corpus import Corpus
from core.train.checkpoint_pick import Candidate, candidates, dev_f1_probe, pick_checkpoint
from tests.conftest import TOY_SENTENCES

PEOPLE, PLACES = ["John", "Mary", "Anna", "Peter", "Laura", "Tom"], ["Paris", "London", "Berlin", "Rome", "Madrid", "Oslo"]


def toy_ner(n: int, offset: int = 0) -> Corpus:
    """'<person> lives in <place> .' with PER and LOC tags: learnable in a few epochs by a working encoder."""
    tokens, tags = [], []
    for i in range(n):
        who, where = PEOPLE[(i + offset) % len(PEOPLE)], PLACES[(i * 5 + offset) % len(PLACES)]
        tokens.append([who, "lives", "in", where, "."])
        tags.append(["B-PER", "O", "O", "B-LOC", "O"])
    return Corpus(tokens=tokens, tags=tags)


def test_the_better_of_two_snapshots_is_picked_and_the_base_when_none_helps():
    cands = [Candidate("base", "b", None), Candidate("step-2", "s2", 2), Candidate("step-4", "s4", 4)]
    better = pick_checkpoint(cands, lambda c: {"b": 0.50, "s2": 0.61, "s4": 0.55}[c.path])
    assert better["chosen"]["label"] == "step-2" and better["helped"] and "+11.00 points" in better["reason"]
    harm = pick_checkpoint(cands, lambda c: {"b": 0.50, "s2": 0.47, "s4": 0.49}[c.path])
    assert harm["chosen"]["label"] == "base" and not harm["helped"]
    assert "did not help" in harm["reason"] and "step-4 0.4900" in harm["reason"] and "-1.00 points" in harm["reason"]
    tie = pick_checkpoint(cands, lambda c: 0.5)
    assert tie["chosen"]["label"] == "base"  # equal scores: no pretraining
    small = pick_checkpoint(cands, lambda c: {"b": 0.50, "s2": 0.505, "s4": 0.49}[c.path], min_gain=0.01)
    assert small["chosen"]["label"] == "base"


def test_mlm_keeps_snapshots_and_the_real_probe_prefers_a_working_checkpoint_to_a_broken_one(tmp_path, tiny_mlm_dir):
    from core.train.mlm import preset_config, train_mlm

    config = preset_config("tiny", max_steps=4, snapshot_every=2, epochs=20, batch_size=2)
    train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), tmp_path / "final", config, snapshot_dir=tmp_path / "snaps")
    assert sorted(p.name for p in (tmp_path / "snaps").iterdir()) == ["step-2", "step-4"]
    found = candidates(str(tiny_mlm_dir), tmp_path / "snaps", tmp_path / "final")
    assert [c.label for c in found] == ["base", "step-2", "step-4"]  # the final model is step 4: not listed twice
    # a broken checkpoint: step-2 with every encoder weight zeroed: its words are all alike, so only the CRF's
    # transitions can learn, the tag order of these one-pattern sentences, never which word is the entity
    from transformers import AutoModelForMaskedLM

    broken = AutoModelForMaskedLM.from_pretrained(tmp_path / "snaps" / "step-2")
    with torch.no_grad():
        for p in broken.parameters():
            p.zero_()
    broken.save_pretrained(tmp_path / "snaps" / "step-2")
    probe = dev_f1_probe(toy_ner(48), toy_ner(12, offset=3), tmp_path / "probe", preset="tiny", epochs=8)
    result = pick_checkpoint(found, probe)
    scores = {s["label"]: s["score"] for s in result["scores"]}
    assert scores["step-2"] < scores["step-4"] and scores["step-4"] > 0.5, scores  # the working one learns the words
    assert result["chosen"]["label"] != "step-2"
    json.dumps(result)  # the CLI prints it as JSON

    from core.cli import main  # the same through the CLI, which runs the "pick-checkpoint" job in-process
    from core.data.corpus import write_corpus

    write_corpus(toy_ner(48), tmp_path / "lc.conll")
    write_corpus(toy_ner(12, offset=3), tmp_path / "dev.conll")
    argv = ["--workspace", str(tmp_path / "ws"), "pick-checkpoint", "--base", str(tiny_mlm_dir), "--snapshots",
            str(tmp_path / "snaps"), "--lc", str(tmp_path / "lc.conll"), "--dev", str(tmp_path / "dev.conll"),
            "--preset", "tiny", "--json", "--run-dir", str(tmp_path / "pick-run")]
    assert main(argv) == 0
    kept = sorted(p.name for p in (tmp_path / "pick-run" / "probe").glob("*.score.json"))
    assert kept == ["base.score.json", "step-2.score.json", "step-4.score.json"]
    (tmp_path / "pick-run" / "log.txt").write_text("")
    assert main(argv) == 0  # a rerun (a resumed job) probes none again: each score was kept
    assert (tmp_path / "pick-run" / "log.txt").read_text().count("scored in an earlier run of this job, kept") == 3


def test_pick_checkpoint_cli_refuses_when_there_is_nothing_to_compare(tmp_path, capsys):
    from core.cli import main
    from core.data.corpus import write_corpus

    write_corpus(toy_ner(4), tmp_path / "lc.conll")
    code = main(["--workspace", str(tmp_path / "ws"), "pick-checkpoint", "--snapshots", str(tmp_path / "no-snapshots"),
                 "--lc", str(tmp_path / "lc.conll"), "--dev", str(tmp_path / "lc.conll")])
    assert code == 2 and "nothing to compare with the base encoder" in capsys.readouterr().err


def test_the_runs_page_offers_the_pick_after_an_mlm_run_with_snapshots_and_shows_its_verdict(tmp_path, monkeypatch):
    """The same job from the browser: an MLM run's panel submits "pick-checkpoint" with its snapshots; a finished pick
    shows its reason and every candidate's DEV F1."""
    from core.data.demo import write_demo_workspace
    from core.runner import jobs, jobstore
    from tests.apptest import open_app

    ws = write_demo_workspace(tmp_path / "ws", dc_size=200)
    mlm = jobs.submit(ws, "mlm", {"mode": "tapt", "tc": "demo-tc"}, start=False)
    (mlm.run_dir / "phase-tapt" / "snapshots" / "step-50").mkdir(parents=True)
    jobstore.update(ws, mlm.id, status="done", progress=1.0, result=json.dumps(
        {"out_dir": str(mlm.run_dir / "model"), "phases": [{"phase": "tapt", "steps": 100}], "steps": 100}))
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda ws, kind, params, start=True, **kw: submitted.append((kind, params)))
    monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)
    at = open_app(ws.root, monkeypatch, "views/runs.py")
    at.selectbox(key="runs_selected").set_value(mlm.id).run()
    at.button(key=f"pick_go_{mlm.id}").click().run()
    assert not at.exception
    kind, params = submitted[-1]
    assert kind == "pick-checkpoint" and params["snapshots"].endswith("phase-tapt/snapshots") and params["dev"] == "demo-dev"
    monkeypatch.undo()
    monkeypatch.setenv("NERSELECT_WORKSPACE", str(ws.root))
    monkeypatch.setattr(jobs, "_start_queued", lambda ws: None)
    pick = jobs.submit(ws, "pick-checkpoint", {"snapshots": params["snapshots"]}, start=False)
    verdict = pick_checkpoint([Candidate("base", "b", None), Candidate("step-50", "s", 50)],
                              lambda c: {"b": 0.6, "s": 0.55}[c.path])
    jobstore.update(ws, pick.id, status="done", progress=1.0, result=json.dumps(verdict))
    at = open_app(ws.root, monkeypatch, "views/runs.py")
    at.selectbox(key="runs_selected").set_value(pick.id).run()
    assert any("pretraining did not help in the short probe" in w.value for w in at.warning)
    table = next(df.value for df in at.dataframe if "DEV F1" in getattr(df.value, "columns", []))
    assert list(table["label"]) == ["base", "step-50"]


def test_checkpoint_pick_is_the_default_of_demo_and_study_and_off_in_paper(tmp_path, monkeypatch):
    """Issue 26: the chosen recipe is the default; `paper` keeps the seed paper's protocol; an explicit value wins.
    The job stores the resolved number, so params.json says what ran."""
    from core.cli import main
    from core.data.workspace import Workspace
    from core.runner import jobs
    from core.runner.kinds import validate

    base = {"tc": "tc", "dc": "dc", "lc": "lc", "dev": "dev", "test": "test"}
    picks = {p: validate("experiment", {**base, "preset": p}).pick_checkpoint for p in ("demo", "study", "paper", "tiny")}
    assert picks == {"demo": 4, "study": 4, "paper": 0, "tiny": 0}
    from core.recipes.presets import pick_defaults  # what help texts and the Runs page say, read from the same table

    assert pick_defaults() == "on (4 snapshots) in demo and study; off in tiny and paper"
    assert validate("experiment", base).pick_checkpoint == 4  # no preset named: the default preset's
    assert validate("experiment", {**base, "preset": "study", "pick_checkpoint": 0}).pick_checkpoint == 0
    assert validate("experiment", {**base, "preset": "paper", "pick_checkpoint": 2}).pick_checkpoint == 2
    ws = Workspace(tmp_path / "ws")
    job = jobs.submit(ws, "experiment", {**base, "preset": "study"}, start=False)
    stored = json.loads((job.run_dir / "params.json").read_text("utf-8"))["params"]
    assert stored["pick_checkpoint"] == 4

    # the CLI: --no-pick-checkpoint turns it off; nothing given keeps the preset's
    import core.commands.training as training

    class Submitted(Exception):
        pass

    seen = []

    def fake_run(args, kind, params, label):
        seen.append(params)
        raise Submitted

    monkeypatch.setattr(training, "_run", fake_run)
    monkeypatch.setattr(training, "_corpus", lambda args, ref: ref)  # no corpora in this workspace: only the flags matter
    for extra in ([], ["--no-pick-checkpoint"], ["--pick-checkpoint"], ["--pick-checkpoint", "6"]):
        with pytest.raises(Submitted):
            main(["--workspace", str(ws.root), "experiment", "--tc", "tc", "--dc", "dc", "--lc", "lc", "--dev", "dev",
                  "--test", "test", "--preset", "study", "--out", str(tmp_path / "run"), *extra])
    assert [p["pick_checkpoint"] for p in seen] == [None, 0, 4, 6]  # None: resolved by ExperimentParams as above


def test_the_probe_fine_tunes_with_the_runs_own_ner_settings(tmp_path, monkeypatch):
    """The experiment's NER overrides (device, precision, an out-of-memory retry's grad_accum) never reached the pick's
    probe, which rebuilt the preset's: a probe out of GPU memory was retried with a grad_accum it did not use."""
    from dataclasses import replace

    from core.train import ner_train
    from core.train.checkpoint_pick import PROBE_EPOCHS, Candidate, dev_f1_probe

    seen = []
    monkeypatch.setattr(ner_train, "train_ner", lambda lc, dev, path, out, config, **k: seen.append(config) or
                        {"best_dev_f1": 0.5})
    own = replace(ner_train.preset_config("study"), grad_accum=4, device="cpu", epochs=50)
    assert dev_f1_probe(None, None, tmp_path, "study", seed=7, config=own)(Candidate("base", str(tmp_path), None)) == 0.5
    assert (seen[0].grad_accum, seen[0].device, seen[0].seed, seen[0].epochs) == (4, "cpu", 7, PROBE_EPOCHS)
    dev_f1_probe(None, None, tmp_path, "study", seed=7)(Candidate("base", str(tmp_path), None))
    assert seen[1] == replace(ner_train.preset_config("study", seed=7), epochs=PROBE_EPOCHS)
