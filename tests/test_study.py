"""The study preset in one place, the CrossNER study protocol (core.experiments.study), the fused AdamW."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from core.cli import build_parser
from core.data.corpus import Corpus, write_corpus
from core.experiments.study import DOMAINS, crossner_protocol, dev_halves
from core.recipes import presets
from core.train import mlm, ner_train
from core.train.training import adamw
from tests.conftest import load_script

ROOT = Path(__file__).resolve().parent.parent


def test_preset_names_agree_everywhere():
    assert set(presets.PRESETS) == set(presets.NER) == set(presets.MLM)
    assert "study" in presets.PRESETS
    for command in ("mlm", "ner", "experiment"):
        assert set(presets.NOTES[command]) == set(presets.PRESETS)
    assert ner_train.preset_config("study").patience and mlm.preset_config("study").max_steps


@pytest.mark.parametrize("argv", [["mlm", "--help"], ["ner", "train", "--help"], ["experiment", "--help"]])
def test_help_states_the_study_preset_and_its_time(argv, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    text = " ".join(capsys.readouterr().out.split())
    assert "{tiny,demo,study,paper}" in text
    assert "study:" in text and "min" in text.split("study:", 1)[1].split(";")[0]


def test_unknown_preset_is_refused_by_the_cli(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["experiment", "--tc", "a", "--dc", "b", "--lc", "c", "--dev", "d", "--test", "e",
                                   "--out", "f", "--preset", "huge"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_dev_halves_are_a_fixed_partition():
    a, b = dev_halves(11, seed=0)
    assert sorted(a + b) == list(range(11)) and len(a) == 6 and not set(a) & set(b)
    assert dev_halves(11, seed=0) == (a, b) and dev_halves(11, seed=1) != (a, b)


def _fake_crossner(root: Path) -> None:
    for d in DOMAINS:
        for split, n in (("train", 4), ("dev", 6), ("test", 5)):
            tokens = [[d, split, str(i), "word"] for i in range(n)]
            tags = [["B-x", "O", "O", "O"] for _ in tokens]
            (root / d).mkdir(parents=True, exist_ok=True)
            write_corpus(Corpus(tokens, tags), root / d / f"{split}.txt", "conll")
    # a DC sentence equal to a target TEST sentence must not reach DC
    dup = Corpus([["music", "test", "0", "word"]], [["O"] * 4])
    write_corpus(Corpus.concat([Corpus([[ "ai", "train", str(i), "word"] for i in range(4)], [["O"] * 4] * 4), dup]),
                 root / "ai" / "train.txt", "conll")


def test_crossner_protocol_roles_are_disjoint(tmp_path):
    _fake_crossner(tmp_path)
    s = crossner_protocol(tmp_path, "music")
    assert s.sizes() == {"tc": 4, "dc": 3 + 4 * 15, "lc": 4, "dev": 3, "test": 5}
    assert s.lc.labeled and s.dev.labeled and s.test.labeled and not s.tc.labeled and not s.dc.labeled
    tc, dc, test, dev = (set(c.texts()) for c in (s.tc, s.dc, s.test, s.dev))
    assert not tc & dc and not test & (tc | dc) and not dev & (tc | dc)  # issue 42: no DEV text in an MLM corpus
    assert set(s.lc.texts()) == tc
    assert s.dc.fields["domain"].count("music") == 3  # dev half B
    assert {d for d in s.dc.fields["domain"]} == set(DOMAINS)


def test_crossner_protocol_names_a_missing_folder(tmp_path):
    from core.errors import UserError

    with pytest.raises(UserError, match="CrossNER files missing"):
        crossner_protocol(tmp_path, "music")
    with pytest.raises(UserError, match="unknown CrossNER domain"):
        crossner_protocol(tmp_path, "cooking")


def test_fused_adamw_matches_foreach(monkeypatch):
    def run(kind: str) -> list[torch.Tensor]:
        monkeypatch.setenv("NERSELECT_ADAMW", kind)
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(64, 32)), torch.nn.Parameter(torch.randn(32))]
        opt = adamw([{"params": params[:1], "lr": 1e-2}, {"params": params[1:], "lr": 1e-3}], weight_decay=0.01)
        assert bool(opt.defaults.get("fused")) == (kind == "fused")
        g = torch.Generator().manual_seed(1)
        for _ in range(5):
            for p in params:
                p.grad = torch.randn(p.shape, generator=g)
            opt.step()
        return [p.detach().clone() for p in params]

    for a, b in zip(run("fused"), run("foreach")):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def _part(tmp_path, seed: int, f1s: dict[str, float], name: str | None = None, **params):
    cells = [{"row": row, "seed": seed, "f1": f1, "per_type": {"band": {"f1": f1}}} for row, f1 in f1s.items()]
    part = {"domain": "music", "commit": f"c{seed}", "dirty_files": [], "command": f"python x --seeds {seed}",
            "finished": True, "error": None, "params": {"preset": "study", "seeds": [seed], **params}, "seconds_this_run": 1.0,
            "run_dir": f"/ws{seed}", "protocol": {"split_seed": 7},
            "domain_precision": {"cosine": {"domain_precision": 0.5 + 0.1 * seed, "selection_key": f"k{seed}"}},
            "rows": {}, "per_type_f1": {}, "cells": cells}
    path = tmp_path / (name or f"part{seed}.json")
    path.write_text(json.dumps(part))
    return path


def test_study_parts_merge_into_one_summary(tmp_path):
    study = load_script("crossner_study")
    parts = [_part(tmp_path, 1, {"none": 0.5, "cosine": 0.6}), _part(tmp_path, 2, {"none": 0.7, "cosine": 0.8})]
    merged = study.merge_results(parts, tmp_path / "all.json")
    assert merged["rows"]["none"]["mean"] == pytest.approx(0.6) and merged["rows"]["none"]["n"] == 2
    assert merged["rows"]["cosine"]["std"] == pytest.approx(0.1414, abs=1e-3)
    assert merged["per_type_f1"]["cosine"]["band"] == pytest.approx(0.7)
    assert merged["domain_precision"]["cosine"]["domain_precision"] == pytest.approx(0.65)
    assert merged["params"]["seeds"] == [1, 2] and merged["commit"] == ["c1", "c2"]
    assert json.loads((tmp_path / "all.json").read_text())["rows"] == merged["rows"]
    again = _part(tmp_path, 1, {"none": 0.9}, name="again.json")
    with pytest.raises(SystemExit, match="row none seed 1"):
        study.merge_results([*parts, again], tmp_path / "bad.json")
    # parts of two recipes are two studies, whatever their seeds: pick off here (a file from before the field) and
    # pick 0 there are one recipe; another pick, MLM setting or encoder is refused, naming it
    same = _part(tmp_path, 3, {"none": 0.6}, name="same.json", pick_checkpoint=0, model="default")
    assert study.merge_results([*parts, same], tmp_path / "ok.json")["params"]["seeds"] == [1, 2, 3]
    # found in review: parts at another SC budget (--budget) were pooled into one row
    for other, named in (({"pick_checkpoint": 4}, "pick_checkpoint: None there, 4 now"),
                         ({"mlm_config": {"max_steps": 1200}}, "mlm_config"), ({"model": "bert-base-cased"}, "model"),
                         ({"budget": "2000"}, "SC budget: None there, '2000' now")):
        with pytest.raises(SystemExit, match=named):
            study.merge_results([*parts, _part(tmp_path, 3, {"none": 0.6}, name="other.json", **other)], tmp_path / "bad.json")


def test_merged_parts_keep_their_intervals_once_the_run_folders_are_gone(tmp_path):
    """A part written on another machine (a GPU's, whose workspace is gone) still gives intervals and paired tests:
    its cells carry their per-sentence counts, and the merge's are those the prediction files gave."""
    from core.experiments.summary import interval_summary

    study = load_script("crossner_study")
    rng = np.random.default_rng(0)
    gold = [[{"start": i % 3, "end": i % 3 + 1, "type": "PER"}] for i in range(40)]

    def cell(row: str, seed: int, hits: float) -> dict:
        path = tmp_path / "runs" / row / f"seed-{seed}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"gold_spans": g, "spans": g if rng.random() < hits else []} for g in gold]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return {"row": row, "seed": seed, "f1": 0.0, "per_type": {}, "predictions": str(path)}

    parts = []
    for seed in (1, 2):
        cells = [cell("none", seed, 0.5), cell("tapt", seed, 0.9)]
        path = _part(tmp_path, seed, {}, name=f"p{seed}.json")
        data = json.loads(path.read_text())
        data["cells"] = cells
        path.write_text(json.dumps(data))
        parts.append(path)
    with_files = study.merge_results(parts, tmp_path / "with.json")["summary"]
    assert with_files[0]["f1_ci"] and with_files[1]["vs"]
    shutil.rmtree(tmp_path / "runs")
    assert interval_summary(json.loads(Path(parts[0]).read_text())["cells"])[0]["f1_ci"] is None  # files gone, no counts
    kept = json.loads((tmp_path / "with.json").read_text())
    assert all(c["test_counts"] for c in kept["cells"])
    assert interval_summary(kept["cells"]) == with_files
    (tmp_path / "a.json").write_text(json.dumps({**kept, "cells": [c for c in kept["cells"] if c["seed"] == 1]}))
    (tmp_path / "b.json").write_text(json.dumps({**kept, "cells": [c for c in kept["cells"] if c["seed"] == 2]}))
    assert study.merge_results([tmp_path / "a.json", tmp_path / "b.json"], tmp_path / "again.json")["summary"] == with_files


def test_a_fresh_run_folder_gets_back_the_finished_cells_of_the_result_json(tmp_path):
    """The same command on a fresh machine continues: cells with their counts come back as finished, with the base
    encoder's pick score of their seed; one without counts, another study's, and a TAPT cell whose seed still has
    NER-selected to run (it reads TAPT's own model) do not."""
    from core.errors import UserError

    study = load_script("crossner_study")
    counts = {"tp": "1 0", "fp": "0 1", "fn": "0 0"}
    params = {"domain": "music", "preset": "study", "model": "default", "pick_checkpoint": 4}
    protocol = {"split_seed": 0, "sizes": {"tc": 300, "test": 2}}
    pick = {"chosen": {"step": 300}, "scores": {"base": 0.61, "step-300": 0.64}, "probe_lc": 100}
    cells = [{"row": r, "seed": s, "key": f"{r}.lc100", "f1": 0.5, "test_counts": counts, **({"pick": pick} if r != "none" else {})}
             for r, s in (("none", 1), ("tapt", 1), ("ner", 1), ("none", 2), ("tapt", 2), ("tapt", 3))]
    cells.append({"row": "cosine", "seed": 1, "key": "cosine.b300.lc100", "f1": 0.5})  # made before cells kept counts
    cells.append({"row": "ner", "seed": 3, "key": "ner.lc100", "f1": 0.5})  # no counts: reruns, so TAPT 3 must too
    previous = tmp_path / "result.json"
    previous.write_text(json.dumps({"domain": "music", "commit": "abc", "params": params, "protocol": protocol, "cells": cells}))
    run_dir = tmp_path / "run"
    got = study.restore_cells(previous, run_dir, params, protocol, ["none", "tapt", "cosine", "ner"], [1, 2, 3])
    assert got["cells"] == 4 and got["commit"] == "abc"
    back = sorted(p.parent.parent.name + "/" + p.parent.name for p in run_dir.glob("cells/*/seed-*/cell.json"))
    assert back == ["ner.lc100/seed-1", "none.lc100/seed-1", "none.lc100/seed-2", "tapt.lc100/seed-1"]
    cell = json.loads((run_dir / "cells/none.lc100/seed-1/cell.json").read_text())
    assert cell["test_counts"] == counts and cell["restored_from"] == {"file": str(previous), "commit": "abc"}
    assert json.loads((run_dir / "probe/base.seed-1.lc100/score.json").read_text())["dev_f1"] == 0.61
    assert not (run_dir / "probe/base.seed-3.lc100").exists()
    assert study._origins([cell, {"row": "x"}]) == [{"file": str(previous), "commit": "abc", "cells": 1}]
    assert study.restore_cells(previous, run_dir, params, protocol, ["none", "tapt", "cosine", "ner"], [1, 2, 3]) is None
    assert study.restore_cells(previous, run_dir, params, protocol, ["none", "tapt"], [1, 2])["cells"] == 2  # TAPT 2, 3
    for other, proto in (({**params, "domain": "ai"}, protocol), ({**params, "pick_checkpoint": 0}, protocol),
                         (params, {**protocol, "sizes": {"tc": 301, "test": 2}}), (params, {**protocol, "name": "v2"})):
        assert study.restore_cells(previous, tmp_path / "other", other, proto, ["none"], [1]) is None
    assert not (tmp_path / "other").exists()
    assert study.restore_cells(tmp_path / "missing.json", run_dir, params, protocol, ["none"], [1]) is None
    # a restored row's selection lives in the earlier workspace: its domain precision is the earlier run's
    from core.data.workspace import Workspace

    earlier = {"ner": {"domain_precision": 0.4, "selection_key": "abc123"}}
    restored_cells = [{"row": "ner", "seed": 1, "selection_key": "abc123"}, {"row": "cosine", "seed": 1, "selection_key": "def456"}]
    precision = study.selection_precision(Workspace(tmp_path / "ws"), restored_cells, "music", earlier)
    assert (precision["ner"]["domain_precision"], precision["ner"]["selection_keys"]) == (0.4, ["abc123"])
    assert "error" in precision["cosine"]
    for text in ("{", "[]", json.dumps({"cells": "x", "params": {}})):
        previous.write_text(text)
        with pytest.raises(UserError, match="not a study result JSON"):
            study.restore_cells(previous, run_dir, params, protocol, ["none"], [1])


def test_rerun_old_head_leaves_out_the_cells_whose_head_was_drawn_apart_from_nones(tmp_path):
    """Issue 46's A/A control: before the fix, a cell fine-tuned from an MLM folder drew its NER head after a pooler,
    apart from none's of the same seed. --rerun-old-head runs those of the asked rows again (so they pair with the
    variants run since); none, a cell whose pick kept the base, one made with the seeded head, and rows not asked for
    come back as before."""
    study = load_script("crossner_study")
    counts = {"tp": "1 0", "fp": "0 1", "fn": "0 0"}
    params = {"domain": "music", "preset": "study", "model": "default", "pick_checkpoint": 4}
    protocol = {"split_seed": 0, "sizes": {"tc": 300, "test": 2}}
    old, new = {"device": "cuda", "dtype": "bf16"}, {"device": "cuda", "dtype": "bf16", "head_seed": "after-encoder"}

    def cell(row, seed, numerics, chosen="step-300"):
        return {"row": row, "seed": seed, "key": f"{row}.lc100", "f1": 0.5, "test_counts": counts, "numerics": numerics,
                "pick": {"chosen": chosen, "scores": {"base": 0.6}, "probe_lc": 100}}

    cells = [cell("none", 1, old, "base"), cell("tapt", 1, old), cell("dsir", 1, old, "base"), cell("random", 1, new),
             cell("cosine", 1, old), cell("tapt", 2, old)]
    previous = tmp_path / "result.json"
    previous.write_text(json.dumps({"domain": "music", "params": params, "protocol": protocol, "cells": cells}))
    rows = ["none", "tapt", "dsir", "random"]
    got = study.restore_cells(previous, tmp_path / "run", params, protocol, rows, [1], rerun_old_head=True)
    back = sorted(p.parent.parent.name + "/" + p.parent.name for p in (tmp_path / "run").glob("cells/*/seed-*/cell.json"))
    assert got["cells"] == 5 and "tapt.lc100/seed-1" not in back and "cosine.lc100/seed-1" in back
    assert "tapt.lc100/seed-2" in back  # a seed not asked for
    plain = study.restore_cells(previous, tmp_path / "run2", params, protocol, rows, [1])
    assert plain["cells"] == 6


def test_a_rerun_sets_aside_the_cells_finished_here_and_status_keeps_their_stored_copies(tmp_path):
    """On the machine where the default cells ran, --rerun-old-head found them finished in the run folder (and their NER
    models trained), so nothing ran again: they now move to RUN/replaced/, kept. A --status meanwhile counts them as to
    go but keeps their stored copies in the JSON, so a rerun that stops early leaves the study no smaller."""
    from core.experiments.experiment import load_cells
    from core.experiments.records import Cell, cell_path, save_cell

    study = load_script("crossner_study")
    old, new = {"device": "cpu", "dtype": "fp32"}, {"device": "cpu", "dtype": "fp32", "head_seed": "after-encoder"}
    run_dir = tmp_path / "run"

    def cell(row, seed, numerics, chosen="step-300"):
        made = {"row": row, "seed": seed, "key": f"{row}.lc100", "f1": 0.5, "numerics": numerics,
                "pick": {"chosen": chosen, "scores": {"base": 0.6}, "probe_lc": 100}}
        save_cell(cell_path(run_dir, made["key"], seed), Cell.from_dict(made))
        return made

    cells = [cell("none", 1, old, "base"), cell("tapt", 1, old), cell("tapt", 2, new), cell("dsir", 1, old)]
    (run_dir / "cells/tapt.lc100/seed-1/ner/model").mkdir(parents=True)
    moved = study.set_aside_reruns(run_dir, ["none", "tapt"], [1, 2], old_head=True)
    assert [p.relative_to(run_dir).parts[0] for p in moved] == ["replaced"] and moved[0].name == "seed-1"
    assert (moved[0] / "ner/model").is_dir() and (moved[0] / "cell.json").is_file()
    assert sorted((c["row"], c["seed"]) for c in load_cells(run_dir)) == [("dsir", 1), ("none", 1), ("tapt", 2)]
    assert study.set_aside_reruns(run_dir, ["none", "tapt"], [1, 2], old_head=True) == []  # nothing left to move
    assert study.set_aside_reruns(run_dir, ["dsir"], [1]) == []  # no flag: nothing runs again

    missing, again = study.still_to_run(cells, ["none", "tapt", "dsir"], [1, 2], old_head=True)
    assert missing == [("dsir", 2), ("none", 2)] and again == [("dsir", 1), ("tapt", 1)]
    assert study.still_to_run(cells, ["none", "tapt"], [1, 2]) == ([("none", 2)], [])


def test_a_rows_domain_precision_is_the_mean_over_its_seeds_selections(monkeypatch, tmp_path):
    """Random and DSIR draw another selection per seed; the JSON once kept the first cell's figure alone (ai's random:
    0.03 at seed 1, 0.01 at seed 2). Now the mean over the row's distinct selections, with how many, and a merge of
    per-seed JSONs weighs each part by the selections it averages."""
    import types

    import core.data.selection_store as store

    share = {"r1": 0.03, "r2": 0.01, "r3": 0.05, "c": 0.8}
    monkeypatch.setattr(store, "load_selection", lambda ws, key: types.SimpleNamespace(
        domain_precision=lambda domain: {"domain_precision": share[key], "random_domain_precision": 0.04}))
    study = load_script("crossner_study")
    cells = [{"row": "random", "seed": s, "selection_key": f"r{s}", "selected": 99} for s in (1, 2, 3)]
    cells += [{"row": "cosine", "seed": s, "selection_key": "c", "selected": 99} for s in (1, 2, 3)]  # one selection
    got = study.selection_precision(None, cells, "ai")
    assert round(got["random"]["domain_precision"], 4) == 0.03 and got["random"]["parts"] == 3
    assert got["random"]["selection_keys"] == ["r1", "r2", "r3"] and "selection_key" not in got["random"]
    assert got["cosine"]["domain_precision"] == 0.8 and got["cosine"]["parts"] == 1 and got["cosine"]["of"] == 1
    assert got["random"]["of"] == 3
    del share["r3"]  # a seed's selection is elsewhere (its cell restored from an earlier run): said, not hidden
    partial = study.selection_precision(None, cells, "ai")["random"]
    assert (partial["parts"], partial["of"]) == (2, 3)
    merged = study._mean_precision([got["random"], {"domain_precision": 0.07, "selection_key": "r4"}])
    assert round(merged["domain_precision"], 4) == 0.04 and merged["parts"] == 4
    # a study continued on another machine: seeds 1-3's selections are not here, seed 4's is; the stored mean of
    # the three is kept and seed 4's joins it (it used to replace it: ai's ner read 1 selection of 4)
    stored = {"random": {k: v for k, v in got["random"].items() if k != "groups"}}  # as JSONs before groups stored it
    share.update(r4=0.07)
    for key in ("r1", "r2"):
        del share[key]
    more = cells + [{"row": "random", "seed": 4, "selection_key": "r4", "selected": 99}]
    joined = study.selection_precision(None, more, "ai", stored)["random"]
    assert round(joined["domain_precision"], 4) == 0.04 and (joined["parts"], joined["of"]) == (4, 4)
    assert joined["selection_keys"] == ["r1", "r2", "r3", "r4"]
    again = study.selection_precision(None, more, "ai", {"random": joined})["random"]  # written and read again
    assert round(again["domain_precision"], 4) == 0.04 and again["parts"] == 4
    # an older entry's mean of several selections, one of which is measured here again, cannot be split: it is left
    # out, and "of" says the mean covers fewer selections than the row has; one that lists its groups is split
    share.update(r2=0.01)
    partial = study.selection_precision(None, more, "ai", stored)["random"]
    assert (partial["parts"], partial["of"]) == (2, 4) and round(partial["domain_precision"], 4) == 0.04
    split = study.selection_precision(None, more, "ai", {"random": got["random"]})["random"]
    assert (split["parts"], split["of"]) == (4, 4) and round(split["domain_precision"], 4) == 0.04


def test_a_run_that_asks_for_some_rows_keeps_the_study_jsons_other_rows(tmp_path):
    """The ablation's default pass asks for tapt, dsir and random only, and a deadline may stop a run before a TAPT cell
    that had to run again finished: the JSON it writes still holds every stored cell (a re-run one replaces its copy),
    and its command names every row; another study's JSON lends nothing."""
    study = load_script("crossner_study")
    params = {"domain": "music", "preset": "study", "model": "default", "pick_checkpoint": 4}
    protocol = {"name": "v2", "split_seed": 0, "sizes": {"tc": 300}}
    cells = [{"row": r, "seed": 1, "key": f"{r}.lc100", "f1": 0.5} for r in ("none", "tapt", "ner")]
    previous = tmp_path / "result.json"
    previous.write_text(json.dumps({"domain": "music", "params": params, "protocol": protocol, "cells": cells}))
    stored = study.same_study(previous, params, protocol)
    kept = study.with_stored([{"row": "tapt", "seed": 1, "key": "tapt.lc100", "f1": 0.7}], stored)
    assert sorted((c["row"], c["f1"]) for c in kept) == [("ner", 0.5), ("none", 0.5), ("tapt", 0.7)]
    assert study.with_stored([], stored) == cells  # stopped before anything finished: nothing lost
    assert study.same_study(previous, {**params, "pick_checkpoint": 0}, protocol, say=False) is None
    assert study.with_stored(kept[:1], None) == kept[:1]
    argv = ["crossner_study.py", "--domain", "music", "--rows", "tapt", "--status"]
    assert study.with_rows(argv, ["none", "tapt", "ner"]) == ["crossner_study.py", "--domain", "music", "--rows", "none,tapt,ner"]


def test_status_calls_a_study_complete_when_every_row_and_seed_has_its_cell():
    study = load_script("crossner_study")
    cells = [{"row": r, "seed": s} for r in ("none", "tapt") for s in (1, 2)]
    assert study.missing_cells(["none", "tapt"], [1, 2], cells) == []
    assert study.missing_cells(["none", "tapt", "random"], [1, 2], cells) == [("random", 1), ("random", 2)]
    assert study.missing_cells(["none"], [1, 2, 3], cells) == [("none", 3)]
    # a --status on a fresh machine: the stored cells count as finished
    assert study.missing_cells(["none", "tapt"], [1, 2], study.with_stored([], {"cells": cells})) == []


def test_the_guard_record_survives_a_status_on_a_fresh_machine(tmp_path):
    """What the MLM guard dropped comes from the result, else the run folder, else the stored JSON: a --status written
    before any cell ran here once lost it."""
    from core.experiments.guard import GUARD_FILE

    study = load_script("crossner_study")
    stored = {"protocol": {"name": "v2", "split_seed": 0, "sizes": {"tc": 9}, "description": "x", "dev_in_mlm": 0,
                           "dropped_from_mlm": {"dc": {"dev": 2}}}}
    assert study.guard_record(None, tmp_path, stored) == {"dev_in_mlm": 0, "dropped_from_mlm": {"dc": {"dev": 2}}}
    assert study.guard_record(None, tmp_path) == {}
    (tmp_path / GUARD_FILE).write_text(json.dumps({"dev_in_mlm": 0, "dropped_from_mlm": {}}))
    assert study.guard_record(None, tmp_path, stored) == {"dev_in_mlm": 0, "dropped_from_mlm": {}}
    assert study.guard_record({"protocol": {"dev_in_mlm": 1}}, tmp_path, stored) == {"dev_in_mlm": 1}


def test_every_recipe_setting_names_the_study_run_folder():
    """Two recipes never share a run folder or JSON: the encoder, MLM overrides, rehearsal and checkpoint pick each
    name the variant; the default recipe keeps the names older results were written under."""
    import argparse

    from core.errors import UserError

    study = load_script("crossner_study")

    def variant(**kw):
        args = {"preset": "study", "model": "default", "mlm_steps": None, "mlm": [], "rehearsal_share": 0.0,
                "pick_checkpoint": None, **kw}
        return study.recipe_variant(argparse.Namespace(**args))

    assert variant() == ({"pick_checkpoint": 4}, "study-pick4")  # study's default since issue 26
    assert variant(pick_checkpoint=0)[1] == "study" and variant(preset="paper")[1] == "paper"
    recipe, name = variant(model="bert-base-cased", mlm=["lr=5e-5"], mlm_steps=100, rehearsal_share=0.2)
    assert name == "bert-base-cased-study-mlm100-lr5e-5-rehearsal0.2-pick4"
    # a folder by its name and a hash of its path: every trained model is a folder named .../mlm/model
    a, b = variant(model="/ws/runs/x/mlm/model")[1], variant(model="/ws/runs/y/mlm/model")[1]
    assert a.startswith("model-") and a.endswith("-study-pick4") and a != b
    assert recipe["mlm_config"] == {"max_steps": 100, "lr": 5e-5} and recipe["rehearsal_share"] == 0.2
    with pytest.raises(UserError, match="--mlm 'lr': expected KEY=VALUE"):
        variant(mlm=["lr"])
    with pytest.raises(UserError, match="--mlm"):
        variant(mlm=["no_such_setting=1"])


def test_the_ablation_grid_runs_the_default_then_one_knob_at_a_time_and_refuses_a_bad_knob_first():
    """Issue 46.1: `crossner_study.py --grid KEY=V1,V2 ...` is the whole ablation as one resumable command."""
    import argparse
    import doctest

    from core.errors import UserError

    study = load_script("crossner_study")
    assert doctest.testmod(study, verbose=False).failed == 0  # grid_commands' and time_left's examples
    args = argparse.Namespace(domain="literature,music", grid=["l2sp=0.01,0.1", "rehearsal_share=0.25", "head_warmup_steps=100"],
                              mlm=[], rehearsal_share=0.0, preset="study", model="default", mlm_steps=None, pick_checkpoint=None,
                              rows="tapt,dsir,random")
    runs = [c[2:] for c in study.grid_commands(args, ["--grid", "x", "--seeds", "1,2,3", "--domain", "y"])]
    assert len(runs) == 2 * 5  # per domain: the default recipe and four variants
    assert runs[0] == ["--seeds", "1,2,3", "--domain", "literature"]
    assert runs[3] == ["--seeds", "1,2,3", "--domain", "literature", "--rehearsal-share", "0.25"]
    assert runs[4][-2:] == ["--mlm", "head_warmup_steps=100"] and runs[5][3] == "music"
    timed = study.grid_commands(args, ["--time-limit", "2h", "--grid", "x", "--time-limit=90m", "--seeds", "1"])
    assert all("--time-limit" not in " ".join(c) for c in timed)  # main hands each variant what is left of the limit
    for bad in ("nonsense=1", "l2sp=-1", "lr"):
        with pytest.raises(UserError):
            study.grid_commands(argparse.Namespace(**{**vars(args), "grid": [bad]}), [])
    for bad, said in (("lr=bad", "lr must be a number, got 'bad'"), ("head_warmup_steps=2.5", "must be an integer"),
                      ("rehearsal_share=bad", "rehearsal_share must be a number")):
        with pytest.raises(UserError, match=said):  # the type check of a job's submit (core.runner.params), not a
            study.grid_commands(argparse.Namespace(**{**vars(args), "grid": [bad]}), [])  # TypeError's words
    # none does not pretrain: the default pass runs it and the knob variants borrow it, so a grid over none alone is
    # refused, and a CPU grid's variants find their CPU default by name (crossner_study.default_result_path)
    with pytest.raises(UserError, match="none does not pretrain"):
        study.grid_commands(argparse.Namespace(**{**vars(args), "rows": "none"}), ["--rows", "none"])
    with pytest.raises(UserError, match="overwrite one another"):  # one --out for every variant's JSON
        study.grid_commands(argparse.Namespace(**{**vars(args), "out": "x.json"}), ["--out", "x.json"])
    with pytest.raises(UserError, match="give them alone"):  # --merge needs --out, which a grid refuses: no circle
        study.grid_commands(argparse.Namespace(**{**vars(args), "merge": ["a.json"]}), ["--merge", "a.json"])
    cpu = study.build_parser().parse_args(["--domain", "music", "--cpu-precision", "fp32", "--mlm", "lr=5e-5"])
    assert study.default_result_path(cpu).name == "crossner-v2-music-study-pick4-cpu-fp32.json"
    assert study.recipe_variant(cpu)[1] == "study-lr5e-5-pick4-cpu-fp32"


def test_refresh_rederives_a_results_verdict_from_its_cells_and_leaves_one_without_counts(tmp_path):
    """After the rule that reads the tests changed (a claim needs three seeds), a stored verdict would say more than
    the cells: --refresh re-derives it; a file whose cells kept no TEST counts is left untouched and says so."""
    import json

    from tests.test_statistics import _cells

    study = load_script("crossner_study")
    cells = _cells("none", [0.5]) + _cells("dsir", [0.8], rng_seed=1)  # a clear gain on one seed
    stale = {"domain": "science", "params": {"preset": "study"}, "cells": cells,
             "verdict": {"text": "pretraining helps against none: yes (dsir)"}}
    path = tmp_path / "crossner-v2-science-study-pick4.json"
    path.write_text(json.dumps(stale), "utf-8")
    old = tmp_path / "crossner-ai-pick.json"
    old.write_text(json.dumps({**stale, "cells": [{k: v for k, v in c.items() if k != "test_counts"} for c in cells]}))
    before = old.read_text()
    lines = study.refresh_results([path, old])
    data = json.loads(path.read_text("utf-8"))
    assert data["verdict"]["pretraining_helps"] == "cannot say" and "verdict now:" in lines[0]
    assert data["summary"] and all("vs" in e for e in data["summary"] if e["row"] == "dsir")
    assert old.read_text() == before and "left as it is" in lines[1]
    assert "what to do now:" in lines[0]  # the stale file had no advice: a change of either sentence is said
    assert study.refresh_results([path]) == [f"{path}: verdict unchanged"]


@pytest.mark.parametrize("plan", sorted((Path(__file__).resolve().parents[1] / "scripts" / "plans").glob("*.plan")),
                         ids=lambda p: p.name)
def test_every_device_plan_reads_as_device_study_reads_it(plan):
    """A plan is read on a lent GPU, whose minutes are few: each lane (DOMAINS ROWS [STUDY ARGUMENTS], as
    scripts/device_study.sh splits it; scripts/study_plans.read_plan) names known domains and rows, no domain twice,
    and arguments the study accepts, every knob value included (grid_commands refuses a bad one); and what is left
    of it counts from the study's own JSON naming."""
    from core.experiments.plan import BASELINES, parse_strategy
    from core.experiments.study import DOMAINS
    from core.recipes.strategy_info import strategy_models

    plans = load_script("study_plans")
    lanes = plans.read_plan(plan)
    assert lanes, f"{plan.name}: no lanes"
    seen: list[str] = []
    for lane in lanes:
        assert set(lane.domains) <= set(DOMAINS) and len(set(lane.domains)) == len(lane.domains), plan.name
        assert not set(lane.domains) & set(seen), plan.name
        seen += lane.domains
        for row in lane.rows.split(","):
            assert row in BASELINES or strategy_models(*parse_strategy(row))  # an unknown strategy raises
        studies = plans.lane_studies(lane)  # parses each command; a bad knob or value raises UserError
        assert len(studies) >= len(lane.domains)
    [left] = plans.plans_left([plan])
    # a knob's studies leave out none; a plan may name its own --seeds
    asked = [len(s.rows.split(",")) * len(s.seeds.split(",")) for lane in lanes for s in plans.lane_studies(lane)]
    assert left["asked"] == sum(asked) and all(s["asked"] == n for s, n in zip(left["studies"], asked))


def test_what_is_left_of_a_plan_counts_from_the_result_jsons(tmp_path):
    """A --grid lane asks for its default recipe's cells and each knob value's; a stored default cell whose head was
    drawn apart counts as to go under --rerun-old-head; a short lane is refused naming the file and line."""
    from core.errors import UserError

    plans = load_script("study_plans")
    study = load_script("crossner_study")
    plan = tmp_path / "p.plan"
    plan.write_text("# comment\n\nmusic  tapt,random  --rerun-old-head --grid l2sp=0.1  # a lane\n")
    [lane] = plans.read_plan(plan)
    assert lane.domains == ["music"] and lane.rows == "tapt,random" and lane.args[0] == "--rerun-old-head"
    old = {"device": "cuda", "dtype": "bf16"}
    cells = [{"row": r, "seed": s, "numerics": old, "pick": {"chosen": "step-300"}} for r in ("tapt", "random") for s in (1, 2, 3)]
    cells[0]["numerics"] = {**old, "head_seed": "after-encoder"}  # tapt seed 1 already rerun
    study.result_path("music", "study-pick4", tmp_path).write_text(json.dumps({"params": {}, "cells": cells}))
    study.result_path("music", "study-l2sp0.1-pick4", tmp_path).write_text(json.dumps({"params": {}, "cells": cells[:2]}))
    [left] = plans.plans_left([plan], tmp_path)
    by_variant = {s["variant"]: (s["asked"], s["missing"], s["again"]) for s in left["studies"]}
    assert by_variant == {"study-pick4": (6, 0, 5), "study-l2sp0.1-pick4": (6, 4, 1)}
    assert "**What is left**: 10 cells to run over 1 plan " in "\n".join(plans.markdown([left]))
    study.result_path("music", "study-pick4", tmp_path).write_text("{")
    with pytest.raises(UserError, match="crossner-v2-music-study-pick4.json: not a study result JSON"):
        plans.plans_left([plan], tmp_path)
    plan.write_text("music\n")
    with pytest.raises(UserError, match=r"p.plan, line 1: 'music': expected DOMAINS ROWS"):
        plans.read_plan(plan)


def test_a_pinned_cpu_precision_is_used_and_its_other_precision_cells_run_again(monkeypatch):
    """The CPU's bf16 probe answers per machine and per load, and cells of two precisions never pair: a study pins it
    (--cpu-precision sets $NERSELECT_CPU_PRECISION), and its stored CPU cells of the other precision run again."""
    from core.errors import UserError
    from core.train.training import resolve_precision

    monkeypatch.setenv("NERSELECT_CPU_PRECISION", "fp32")
    assert resolve_precision("cpu", "auto") == "fp32" and resolve_precision("cpu", "bf16") == "bf16"
    monkeypatch.setenv("NERSELECT_CPU_PRECISION", "bf16")
    assert resolve_precision("cpu", "auto") == "bf16" and resolve_precision("cpu", "fp32") == "fp32"
    monkeypatch.setenv("NERSELECT_CPU_PRECISION", "fp16")
    with pytest.raises(UserError, match="expected fp32 or bf16"):
        resolve_precision("cpu", "auto")

    study = load_script("crossner_study")
    new = {"device": "cpu", "dtype": "fp32", "head_seed": "after-encoder"}
    bf16 = {"row": "tapt", "seed": 2, "numerics": {**new, "dtype": "bf16"}}
    assert study.runs_again(bf16, ["tapt"], [2], cpu_precision="fp32")
    assert not study.runs_again(bf16, ["tapt"], [2], cpu_precision="bf16")
    assert not study.runs_again(bf16, ["tapt"], [2])  # nothing pinned: kept
    assert not study.runs_again(bf16, ["dsir"], [2], cpu_precision="fp32")  # a row not asked for
    gpu = {"row": "tapt", "seed": 2, "numerics": {**new, "device": "cuda", "dtype": "bf16"}}
    assert not study.runs_again(gpu, ["tapt"], [2], cpu_precision="fp32")  # the pin is the CPU's only


def test_a_grid_status_totals_its_cells_to_go_and_times_them_by_its_finished_cells(tmp_path):
    """`--grid ... --status` ends with the whole grid: a knob variant not begun asks for its rows' every seed (none it
    borrows), and the time is the grid's own finished cells' median clock, none apart from the pretraining rows."""
    study = load_script("crossner_study")
    argv = ["--domain", "music", "--rows", "none,tapt", "--seeds", "1,2", "--grid", "lr=5e-5"]
    commands = study.grid_commands(study.build_parser().parse_args(argv), argv)
    default = study.build_parser().parse_args(commands[0][2:])
    cells = [{"row": "none", "seed": 1, "started": 0, "finished": 120}, {"row": "tapt", "seed": 1, "started": 120, "finished": 720}]
    path = study.result_path("music", study.recipe_variant(default)[1], tmp_path)
    path.write_text(json.dumps({"params": {}, "cells": cells}))
    assert study.grid_left(commands, tmp_path) == ("grid: 4 cells to go over its 2 studies; about 32 min (median "
                                                   "pretraining cell 10 min, none 2 min, from 2 finished cells)")
    left = study.cells_left(default, tmp_path)
    assert (left.missing, left.again) == ([("none", 2), ("tapt", 2)], [])


def test_the_commit_record_names_changed_code_but_not_the_results_a_grid_rewrites(tmp_path, monkeypatch):
    """A grid rewrites its earlier variants' JSONs before the next variant runs: those outputs are not a modified
    tree, a changed script is."""
    import subprocess

    study = load_script("crossner_study")
    for name, text in (("run.py", "x = 1\n"), ("docs/results/a.json", "{}\n")):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(git + args, check=True)
    monkeypatch.delenv("NERSELECT_COMMIT", raising=False)
    monkeypatch.setattr(study, "ROOT", tmp_path)
    (tmp_path / "docs/results/a.json").write_text('{"more": 1}\n')
    assert study.git_commit()["dirty_files"] == []
    (tmp_path / "run.py").write_text("x = 2\n")
    assert study.git_commit()["dirty_files"] == ["run.py"]


def test_another_sc_budget_is_another_study():
    """Found in review: `--budget 2000` wrote into the default budget's folder and JSON, pooling two budgets' cells."""
    study = load_script("crossner_study")
    args = study.build_parser().parse_args(["--domain", "music"])
    default = study.recipe_variant(args)[1]
    args = study.build_parser().parse_args(["--domain", "music", "--budget", "2000"])
    assert study.recipe_variant(args)[1] == default + "-b2000"


def test_exclude_leaked_without_allow_dev_is_the_default_recipe_in_old_records_too():
    """Found in review: params now drop exclude_leaked without allow_dev_in_mlm, and a folder recorded before with it
    on was refused on resume (exclude_leaked: True there, False now)."""
    from core.experiments.plan import recipe_differences, recipe_of

    old = {"preset": "tiny", "exclude_leaked": True, "allow_dev_in_mlm": False}
    assert recipe_differences(recipe_of(old), recipe_of({"preset": "tiny"})) == []
    assert recipe_of({**old, "allow_dev_in_mlm": True})["exclude_leaked"] is True
    study = load_script("crossner_study")
    assert study.budget_value(" 2000") == study.budget_value(2000) == 2000 and study.budget_value("0.10") == 0.1
