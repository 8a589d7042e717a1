"""MLM continued pretraining: packing, the 1:1 mix, fresh-head detection, a 2-step run whose
output loads as an encoder (B1), exact resume, and the CLI."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import UserError
from core.train.mlm import (
    balanced_mix,
    mlm_phases,
    pack_blocks,
    preset_config,
    sentence_examples,
    train_mlm,
)
from tests.conftest import TOY_SENTENCES
from tests.ner_data import single_thread_torch  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("single_thread_torch")


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_dir):
    from core.lm.models import load_tokenizer

    return load_tokenizer(str(tiny_bert_dir))


def test_packing_fills_blocks_and_keeps_every_token(tokenizer):
    blocks = pack_blocks(tokenizer, TOY_SENTENCES, block_size=32)
    assert all(len(b) == 32 for b in blocks[:-1]) and 1 < len(blocks[-1]) <= 32
    assert all(b[0] == tokenizer.cls_token_id for b in blocks) and tokenizer.pad_token_id not in sum(blocks, [])
    words = [t for s in tokenizer(TOY_SENTENCES, add_special_tokens=False)["input_ids"] for t in s]
    body = [t for b in blocks for t in b[1:] if t != tokenizer.sep_token_id]
    assert body == words
    assert sum(b.count(tokenizer.sep_token_id) for b in blocks) == len(TOY_SENTENCES)
    per_sentence = sentence_examples(tokenizer, TOY_SENTENCES, 32)
    assert len(per_sentence) == len(TOY_SENTENCES) > len(blocks)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text("ab", min_size=1), min_size=1, max_size=20), st.lists(st.text("cd", min_size=1), min_size=1, max_size=60))
def test_balanced_mix_is_one_to_one(tc, sc):
    mix = balanced_mix(tc, sc, seed=3)
    from_tc = sum(1 for t in mix if t[0] in "ab")
    assert from_tc == len(mix) - from_tc == max(len(tc), len(sc))
    assert set(mix) == set(tc) | set(sc)


def test_phases_and_their_errors():
    assert [name for name, _ in mlm_phases("tapt+dapt", ["t"], None, ["d"])] == ["dapt", "tapt"]
    assert mlm_phases("dapt", None, None, ["d1", "d2"]) == [("dapt", ["d1", "d2"])]
    with pytest.raises(UserError, match="needs SC"):
        mlm_phases("tc+sc", ["t"], [], None)
    with pytest.raises(UserError, match="unknown MLM mode"):
        mlm_phases("bert", ["t"])


def test_two_step_run_adds_fresh_head_and_loads_as_b1(tiny_bert_dir, tmp_path):
    from transformers import AutoModelForMaskedLM

    from core.lm.models import load_encoder, resolve_model

    logs, metrics = [], []
    result = train_mlm(TOY_SENTENCES, str(tiny_bert_dir), tmp_path / "b1", preset_config("tiny", max_steps=2), log=logs.append,
                       metric=lambda **v: metrics.append(v))
    assert result["steps"] == 2 and result["fresh_head"] and result["packed"]
    assert result["precision"] in ("fp32", "bf16")  # what it ran with, as NER reports it (bench_training read fp32 before)
    assert any("no MLM head: a fresh head was initialised" in m for m in logs)
    assert [m["step"] for m in metrics] == [1, 2] and all(m["tokens_per_s"] > 0 and "lr" in m and "loss" in m for m in metrics)
    ref = resolve_model(str(tmp_path / "b1"))
    assert (tmp_path / "b1" / "model.safetensors").exists() and (tmp_path / "b1" / "tokenizer_config.json").exists()
    assert load_encoder(ref).config.hidden_size == 32
    _, info = AutoModelForMaskedLM.from_pretrained(ref.load_path, output_loading_info=True)
    assert not [k for k in info["missing_keys"] if k.startswith("cls.")]  # the trained head was saved
    assert json.loads((tmp_path / "b1" / "mlm_info.json").read_text())["fresh_head"]


def test_existing_head_is_kept(tiny_mlm_dir, tmp_path):
    logs = []
    result = train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), tmp_path / "m", preset_config("tiny", max_steps=1), log=logs.append)
    assert not result["fresh_head"] and any("own MLM head" in m for m in logs)


class _Killed(Exception):
    pass


def test_resume_continues_exactly(tiny_mlm_dir, tmp_path):
    cfg = preset_config("tiny", max_steps=5, checkpoint_every=2, batch_size=2, epochs=3)
    train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), tmp_path / "a", cfg)

    def die_after_step_3(fraction: float, message: str = "") -> None:
        if message.startswith("step 3/"):
            raise _Killed()

    with pytest.raises(_Killed):
        train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), tmp_path / "b", cfg, progress=die_after_step_3, checkpoint_dir=tmp_path / "run")
    assert not (tmp_path / "b").exists()
    logs = []
    second = train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), tmp_path / "b", cfg, checkpoint_dir=tmp_path / "run", log=logs.append)
    assert second["steps"] == 5 and any("resumed from checkpoint at step 2" in m for m in logs)
    assert not (tmp_path / "run" / "checkpoint").exists()  # the finished model is kept, its resume state is not
    from safetensors.torch import load_file

    a, b = load_file(str(tmp_path / "a" / "model.safetensors")), load_file(str(tmp_path / "b" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_grad_accumulation_and_unpacked_mode_run(tiny_mlm_dir, tmp_path):
    result = train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), tmp_path / "m",
                       preset_config("tiny", max_steps=2, batch_size=4, grad_accum=2, pack=False))
    assert result["steps"] == 2 and not result["packed"] and result["examples"] == len(TOY_SENTENCES)
    assert result["first_loss"] > 0 and result["last_loss"] > 0  # what mlm_warning reads: did the masked LM learn


def test_selection_texts_from_artifact(tmp_path):
    from core.data.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    folder = ws.artifact_dir("selection", "abc123")
    (folder / "selected.jsonl").write_text("".join(json.dumps({"text": t, "score": 1.0}) + "\n" for t in TOY_SENTENCES[:3]))
    from core.data.selection_store import selection_texts  # MLM reads a selection through the store, like every caller

    assert list(selection_texts(ws, "abc123")) == TOY_SENTENCES[:3]
    assert list(selection_texts(ws, str(folder))) == TOY_SENTENCES[:3]


def test_cli_mlm(tiny_bert_dir, tmp_path, capsys):
    from core.cli import main

    corpus = tmp_path / "tc.txt"
    corpus.write_text("\n".join(TOY_SENTENCES) + "\n")
    out = tmp_path / "b1"
    assert main(["--workspace", str(tmp_path / "ws"), "mlm", "--train", str(corpus), str(corpus), "--model", str(tiny_bert_dir),
                 "--out", str(out), "--max-steps", "2", "--batch-size", "4", "--epochs", "1", "--quiet"]) == 0
    assert "fresh MLM head" in capsys.readouterr().out and (out / "mlm_info.json").exists()
    assert json.loads((out / "mlm_info.json").read_text())["sentences"] == 2 * len(TOY_SENTENCES)
    assert main(["mlm", "--train", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "x"), "--quiet"]) == 2


def test_masked_positions_loss_equals_the_full_head_loss(tiny_mlm_dir):
    """The training loss runs the MLM head on masked positions only; it must equal transformers' own loss."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    from core.lm.models import load_masked_lm, load_tokenizer
    from core.train.mlm import masked_lm_loss, masked_positions
    from tests.conftest import TOY_SENTENCES

    tok = load_tokenizer(str(tiny_mlm_dir))
    model, fresh = load_masked_lm(str(tiny_mlm_dir))
    assert fresh == []
    model.eval()
    torch.manual_seed(0)
    batch = DataCollatorForLanguageModeling(tok, mlm_probability=0.3)([{"input_ids": tok(s)["input_ids"]} for s in TOY_SENTENCES[:6]])
    with torch.no_grad():
        assert torch.allclose(masked_lm_loss(model, batch), model(**batch).loss, atol=1e-5)
        # the positions found before the batch goes to the device (no boolean gather there) give the same loss
        picked = masked_positions(batch["labels"])
        assert 0 < len(picked) < batch["labels"].numel()
        assert torch.allclose(masked_lm_loss(model, batch, picked), model(**batch).loss, atol=1e-5)


def test_finished_phase_is_reused_only_for_the_same_recipe(tiny_mlm_dir, tmp_path):
    from core.train.mlm import run_phases

    logs: list[str] = []
    phases = [("train", TOY_SENTENCES)]
    first = run_phases(phases, str(tiny_mlm_dir), tmp_path / "m", preset_config("tiny", max_steps=2), tmp_path / "w")
    again = run_phases(phases, str(tiny_mlm_dir), tmp_path / "m", preset_config("tiny", max_steps=2, log_every=7),
                       tmp_path / "w", log=logs.append)
    assert again["steps"] == first["steps"] == 2 and any("already done" in m for m in logs)
    with pytest.raises(UserError, match=r"other settings \(max_steps 2 -> 3\)"):
        run_phases(phases, str(tiny_mlm_dir), tmp_path / "m", preset_config("tiny", max_steps=3), tmp_path / "w")
    with pytest.raises(UserError, match="sentences"):
        run_phases([("train", TOY_SENTENCES[:3])], str(tiny_mlm_dir), tmp_path / "m", preset_config("tiny", max_steps=2),
                   tmp_path / "w")
