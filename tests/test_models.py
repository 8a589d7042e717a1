import pytest

from core.errors import ModelError
from core.lm.models import load_encoder, load_tokenizer, resolve_model


def test_default_is_the_packaged_minilm():
    ref = resolve_model("default")
    assert ref.is_default and ref.is_local and (ref.location / "model.safetensors").exists()
    assert ref.has_sentence_transformers_config()
    model = load_encoder(ref)
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6


def test_local_folder_goes_through_the_same_path(tiny_bert_dir):
    ref = resolve_model(str(tiny_bert_dir))
    assert ref.is_local and not ref.is_default
    tok = load_tokenizer(ref)
    assert "[UNK]" not in tok.tokenize("John Smith plays the guitar")
    assert load_encoder(ref).config.hidden_size == 32
    fp = ref.fingerprint()
    assert fp == resolve_model(str(tiny_bert_dir)).fingerprint() and fp != resolve_model("default").fingerprint()


def test_missing_folder_and_file_are_clear_errors(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model(str(tmp_path / "nope"))
    f = tmp_path / "weights.bin"
    f.write_bytes(b"x")
    with pytest.raises(ModelError, match="is a file"):
        resolve_model(str(f))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path / "empty"))


def test_hub_id_without_network_is_a_model_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ref = resolve_model("bert-base-cased")
    assert not ref.is_local and ref.fingerprint() == "hub:bert-base-cased"
    with pytest.raises(ModelError, match="Hugging Face hub"):
        load_tokenizer(ref)


def test_a_folder_saved_in_half_precision_loads_in_float32(tmp_path):
    """Hub models are often saved in fp16; transformers 5 keeps that dtype unless told, and an fp16
    encoder beside a fresh fp32 NER head failed on the CPU ("mat1 and mat2 must have the same dtype")."""
    import torch

    from core.lm.models import load_masked_lm
    from core.train.ner_train import NerConfig, train_ner
    from tests.conftest import TOY_SENTENCES
    from tests.ner_data import toy_ner_corpus
    from tests.tiny_models import build_tiny_bert

    folder = build_tiny_bert(tmp_path / "half", TOY_SENTENCES, with_mlm_head=True)
    from transformers import BertForMaskedLM

    BertForMaskedLM.from_pretrained(folder).to(torch.float16).save_pretrained(folder)
    assert {p.dtype for p in load_encoder(str(folder)).parameters()} == {torch.float32}
    assert {p.dtype for p in load_masked_lm(str(folder))[0].parameters()} == {torch.float32}
    result = train_ner(toy_ner_corpus(), None, str(folder), tmp_path / "ner", NerConfig(epochs=1, device="cpu"))
    assert result["steps"] > 0
