"""Issue 26's MLM recipe variants: a head warm-up that leaves the encoder untouched, per-layer learning rates,
frozen lower layers, and clear errors for settings out of range."""

from __future__ import annotations

import pytest
import torch

from core.errors import UserError
from core.lm.models import load_masked_lm, resolve_model
from core.train.mlm import preset_config, train_mlm
from core.train.mlm_recipe import param_groups
from tests.conftest import TOY_SENTENCES


def _weights(folder) -> dict[str, torch.Tensor]:
    model, _ = load_masked_lm(resolve_model(str(folder)))
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def _train(tiny_mlm_dir, out, snapshot_dir=None, **settings):
    config = preset_config("tiny", epochs=100, lr=1e-2, **settings)
    return train_mlm(TOY_SENTENCES, str(tiny_mlm_dir), out, config, snapshot_dir=snapshot_dir)


def _moved(before, after, part: str) -> bool:
    return any(not torch.equal(before[n], after[n]) for n in before if part in n)


def test_head_warmup_keeps_the_encoder_frozen_until_it_ends(tiny_mlm_dir, tmp_path):
    base = _weights(tiny_mlm_dir)
    _train(tiny_mlm_dir, tmp_path / "after", tmp_path / "snapshots", max_steps=4, head_warmup_steps=3, snapshot_every=3)
    warm = _weights(tmp_path / "snapshots" / "step-3")  # the weights after the warm-up's last step
    assert not _moved(base, warm, "encoder.layer.") and _moved(base, warm, "cls.predictions.transform")
    assert _moved(base, _weights(tmp_path / "after"), "encoder.layer.")  # unfrozen after step 3


def test_a_head_warmup_as_long_as_the_run_is_refused(tiny_mlm_dir, tmp_path):
    """The encoder would never train, and the run would save the base encoder under an MLM name (issue 46: 400 steps
    of warm-up on a 400-step CrossNER study run gave the base encoder back)."""
    with pytest.raises(UserError, match="covers the whole MLM run .3 steps.* never train"):
        _train(tiny_mlm_dir, tmp_path / "all", max_steps=3, head_warmup_steps=3)
    assert not (tmp_path / "all").exists()


def test_frozen_layers_do_not_move_and_the_ones_above_do(tiny_mlm_dir, tmp_path):
    base = _weights(tiny_mlm_dir)
    _train(tiny_mlm_dir, tmp_path / "frozen", max_steps=2, freeze_layers=1)
    after = _weights(tmp_path / "frozen")
    assert not _moved(base, after, "embeddings") and not _moved(base, after, "encoder.layer.0.")
    assert _moved(base, after, "encoder.layer.1.")


def test_l2sp_pulls_the_encoder_towards_where_it_started(tiny_mlm_dir, tmp_path):
    """Issue 46's new knob: with a strong L2-SP pull the encoder ends nearer its starting weights than without."""
    base = _weights(tiny_mlm_dir)

    def distance(folder) -> float:
        after = _weights(folder)
        return float(sum(((after[n] - base[n]) ** 2).sum() for n in base if "encoder.layer." in n))

    _train(tiny_mlm_dir, tmp_path / "free", max_steps=6)
    _train(tiny_mlm_dir, tmp_path / "pulled", max_steps=6, l2sp=50.0)
    assert 0 < distance(tmp_path / "pulled") < 0.5 * distance(tmp_path / "free")
    with pytest.raises(UserError, match="l2sp"):
        _train(tiny_mlm_dir, tmp_path / "bad", max_steps=1, l2sp=-1.0)


def test_layer_lr_decay_gives_lower_layers_smaller_steps(tiny_mlm_dir):
    model, _ = load_masked_lm(resolve_model(str(tiny_mlm_dir)))
    layers = model.config.num_hidden_layers
    groups = param_groups(model, preset_config("tiny", lr=1e-3, layer_lr_decay=0.5))
    lr = {g["level"]: g["lr"] for g in groups}
    assert lr[layers + 1] == pytest.approx(1e-3) and lr[0] == pytest.approx(1e-3 * 0.5 ** (layers + 1))
    assert all(lr[k] < lr[k + 1] for k in range(layers + 1))
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))  # every tensor in exactly one group
    with pytest.raises(UserError, match="layer_lr_decay"):
        param_groups(model, preset_config("tiny", layer_lr_decay=1.5))
    with pytest.raises(UserError, match="freeze_layers"):
        param_groups(model, preset_config("tiny", freeze_layers=layers + 1))
    with pytest.raises(UserError, match="freezing all of them, the encoder would never train"):
        param_groups(model, preset_config("tiny", freeze_layers=layers))  # only the MLM head, which NER never reads
    with pytest.raises(UserError, match="lr must be > 0"):
        preset_config("tiny", lr=0.0)


def test_drift_is_one_for_the_same_encoder_and_below_one_after_mlm(tiny_mlm_dir, tmp_path, capsys):
    import json

    from core.cli import main
    from core.train.drift import encoder_drift

    same = encoder_drift(str(tiny_mlm_dir), str(tiny_mlm_dir), TOY_SENTENCES)
    assert same["cosine"] == pytest.approx(1.0, abs=1e-5) and same["cka"] == pytest.approx(1.0, abs=1e-5)
    _train(tiny_mlm_dir, tmp_path / "moved", max_steps=4)
    corpus = tmp_path / "tc.txt"
    corpus.write_text("\n".join(TOY_SENTENCES) + "\n")
    assert main(["--workspace", str(tmp_path / "ws"), "drift", "--base", str(tiny_mlm_dir), "--model", str(tmp_path / "moved"),
                 "--corpus", str(corpus), "--json"]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert moved["cosine"] < 0.999 and 0 < moved["cka"] < 1 and moved["sentences"] == len(TOY_SENTENCES)
    with pytest.raises(UserError, match="no sentences"):
        encoder_drift(str(tiny_mlm_dir), str(tiny_mlm_dir), [])
