"""Embeddings: mean pooling against a per-sentence reference, parity with sentence-transformers,
chunked caching and resume after a crash, the bf16 verdict cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.data.corpus import Corpus
from core.data.workspace import Workspace
from core.errors import UserError
from core.lm import encoder
from core.lm.embed import embed_corpus
from core.lm.encoder import SentenceEncoder, embed_texts
from core.lm.precision import cosine_agreement
from tests.conftest import TOY_SENTENCES

SENTENCES = sorted(set(TOY_SENTENCES))


def _reference_mean(model_dir, texts):
    """One sentence at a time, no padding: the plain definition of mean pooling."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    out = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt", truncation=True, max_length=128)
            out.append(model(**enc).last_hidden_state[0].mean(0).numpy())
    return np.stack(out)


def test_mean_pooling_matches_unpadded_reference_in_input_order(tiny_bert_dir):
    texts = SENTENCES + ["Short .", "A much longer sentence about the band and the album recorded in London in 2021 ."]
    got = embed_texts(texts, str(tiny_bert_dir), precision="fp32", batch_size=3)  # several length-sorted batches
    ref = _reference_mean(tiny_bert_dir, texts)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_default_encoder_mean_pooling_agrees_with_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    from core.lm.models import default_model_dir

    texts = SENTENCES[:6]
    ours = embed_texts(texts, "default", precision="fp32")
    st = SentenceTransformer(str(default_model_dir()), device="cpu").encode(texts)  # mean pooling + normalize
    assert ours.shape == (6, 384)
    assert cosine_agreement(ours, st) > 0.99999
    model_pooled = embed_texts(texts, "default", pooling="model", precision="fp32")
    np.testing.assert_allclose(model_pooled, st, atol=1e-5)


def test_model_pooling_needs_a_sentence_transformers_folder(tiny_bert_dir):
    with pytest.raises(UserError, match="sentence-transformers"):
        SentenceEncoder(str(tiny_bert_dir), pooling="model")
    with pytest.raises(UserError, match="pooling"):
        SentenceEncoder(str(tiny_bert_dir), pooling="max")  # type: ignore[arg-type]


def test_fp16_on_cpu_is_refused(tiny_bert_dir):
    with pytest.raises(UserError, match="GPU"):
        SentenceEncoder(str(tiny_bert_dir), precision="fp16", device="cpu")


def _counting_encode(monkeypatch, fail_on_call: int | None = None) -> list[int]:
    calls: list[int] = []
    original = SentenceEncoder.encode

    def encode(self, texts, batch_size=None, progress=None):
        calls.append(len(texts))
        if fail_on_call is not None and len(calls) == fail_on_call:
            raise RuntimeError("simulated crash")
        return original(self, texts, batch_size, progress)

    monkeypatch.setattr(SentenceEncoder, "encode", encode)
    return calls


def test_crash_mid_embedding_resumes_without_recomputing_finished_chunks(tiny_bert_dir, tmp_path, monkeypatch):
    corpus = Corpus(tokens=[f"{s} number {i}".split() for i, s in enumerate((SENTENCES * 4)[:30])])  # chunks of 8, 8, 8, 6
    ws = Workspace(tmp_path / "ws")
    calls = _counting_encode(monkeypatch, fail_on_call=3)
    with pytest.raises(RuntimeError, match="simulated crash"):
        embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, chunk_size=8, precision="fp32")
    folder = next((ws.root / "artifacts" / "embeddings").iterdir())
    assert json.loads((folder / "manifest.json").read_text())["done"] == [0, 1]
    assert not (folder / "meta.json").exists()

    monkeypatch.undo()
    calls = _counting_encode(monkeypatch)
    vecs = embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, chunk_size=8, precision="fp32")
    assert calls == [8, 6]  # chunks 2 and 3 only; 0 and 1 came from disk
    assert vecs.dtype == np.float16 and vecs.shape == (30, 32)
    assert not list(folder.glob("chunk_*.npy"))  # assembled into one array

    fresh = embed_texts(corpus.texts(), str(tiny_bert_dir), precision="fp32")
    np.testing.assert_allclose(np.asarray(vecs, dtype=np.float32), fresh, atol=2e-3)

    calls.clear()
    again = embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, chunk_size=8, precision="fp32")
    assert calls == [] and np.array_equal(np.asarray(again), np.asarray(vecs))


def test_embedding_by_workspace_name_streams_to_the_same_cache(tiny_bert_dir, tmp_path):
    ws = Workspace(tmp_path / "ws")
    corpus = Corpus(tokens=[s.split() for s in SENTENCES], fields={"domain": ["x"] * len(SENTENCES)})
    ws.save_corpus(corpus, "small")
    by_name = embed_corpus("small", str(tiny_bert_dir), workspace=ws, precision="fp32", chunk_size=3)
    in_memory = embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, precision="fp32")
    assert by_name.filename == in_memory.filename  # one key: model fingerprint + token hash + pooling
    assert len(list((ws.root / "artifacts" / "embeddings").iterdir())) == 1


def test_an_explicit_precision_never_reads_a_cache_made_in_another(tiny_bert_dir, tmp_path, monkeypatch):
    """Found in review: embed_corpus(precision="fp32") returned the cache a bf16 pass had written (up to 5e-3 apart,
    20x float16's rounding); "auto" still reads whichever cache there is."""
    ws = Workspace(tmp_path / "ws")
    corpus = Corpus(tokens=[s.split() for s in SENTENCES])
    embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, precision="bf16")
    calls = _counting_encode(monkeypatch)
    full = embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, precision="fp32")
    assert calls == [len(SENTENCES)] and len(list((ws.root / "artifacts" / "embeddings").iterdir())) == 2
    np.testing.assert_allclose(np.asarray(full, dtype=np.float32), embed_texts(corpus.texts(), str(tiny_bert_dir),
                                                                               precision="fp32"), atol=2e-3)
    calls.clear()
    embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, precision="fp32")
    embed_corpus(corpus, str(tiny_bert_dir), workspace=ws, precision="bf16")
    embed_corpus(corpus, str(tiny_bert_dir), workspace=ws)
    assert calls == []  # each precision's cache found again, and auto takes the first


def test_bf16_verdict_is_computed_once_per_model_and_cached_on_disk(tiny_bert_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(encoder, "cpu_has_bf16", lambda: True)
    monkeypatch.setattr(encoder, "_PRECISION_VERDICTS", {})
    ws = Workspace(tmp_path / "ws")
    enc = SentenceEncoder(str(tiny_bert_dir), precision="auto", workspace=ws)
    verdict_files = list((ws.root / "artifacts" / "precision").glob("*/verdict.json"))
    assert len(verdict_files) == 1
    verdict = json.loads(verdict_files[0].read_text())
    assert enc.precision == ("bf16" if verdict["min_cosine"] >= encoder.BF16_MIN_COSINE else "fp32")

    monkeypatch.setattr(encoder, "_PRECISION_VERDICTS", {})  # a new process: only the disk remembers
    monkeypatch.setattr(SentenceEncoder, "encode", lambda *a, **k: pytest.fail("the probe ran again"))
    again = SentenceEncoder(str(tiny_bert_dir), precision="auto", workspace=ws)
    assert again.precision == enc.precision


def test_no_bf16_cpu_means_fp32(tiny_bert_dir, monkeypatch):
    monkeypatch.setattr(encoder, "cpu_has_bf16", lambda: False)
    assert SentenceEncoder(str(tiny_bert_dir), precision="auto", device="cpu").precision == "fp32"


def test_cli_embed_writes_npy(tiny_bert_dir, tmp_path):
    from core.cli import main

    src = tmp_path / "s.txt"
    src.write_text("\n".join(SENTENCES) + "\n")
    out = tmp_path / "e.npy"
    assert main(["--workspace", str(tmp_path / "ws"), "embed", str(src), "--model", str(tiny_bert_dir), "--out", str(out),
                 "--device", "cpu"]) == 0
    arr = np.load(out)
    assert arr.shape == (len(SENTENCES), 32) and arr.dtype == np.float32


def test_embed_job_caches_a_workspace_corpus(tiny_bert_dir, tmp_path):
    from core.runner import jobs

    ws = Workspace(tmp_path / "ws")
    ws.save_corpus(Corpus(tokens=[s.split() for s in SENTENCES]), "small")
    result = jobs.run_inline(ws, "embed", {"corpus": "small", "model": str(tiny_bert_dir), "precision": "fp32"})
    assert result["shape"] == [len(SENTENCES), 32]
    assert (ws.root / "artifacts" / "embeddings" / result["key"] / "embeddings.npy").exists()
    with pytest.raises(UserError, match="no corpus named"):
        jobs.run_inline(ws, "embed", {"corpus": "missing", "model": str(tiny_bert_dir)})


def test_prefetched_keeps_order_and_looks_ahead_a_bounded_number_of_items():
    import threading

    started: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        with lock:
            started.append(i)
        return i * i

    seen = []
    for k, value in enumerate(encoder.prefetched(work, list(range(50)), workers=3)):
        seen.append(value)
        with lock:
            assert max(started) <= k + 4  # item k is being used: at most workers + 1 submitted beyond it
    assert seen == [i * i for i in range(50)]
    assert list(encoder.prefetched(work, [], workers=3)) == []


def test_gpu_loop_gives_the_plain_loops_vectors_in_input_order(tiny_bert_dir):
    """The CUDA loop (threads tokenizing ahead, results kept in sorted order) run on the CPU, so CI checks
    its bookkeeping: same vectors as the plain loop, in the caller's order, whatever the thread count."""
    enc = SentenceEncoder(str(tiny_bert_dir), precision="fp32", device="cpu")
    texts = [s + " x" * (i % 7) for i, s in enumerate(SENTENCES * 3)]
    want = enc.encode(texts, batch_size=4)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    for threads in (1, 3):
        enc.tokenizer_threads = threads
        got = enc._encode_cuda(texts, order, 4, np.zeros_like(want), None)
        np.testing.assert_allclose(got, want, atol=1e-5)
