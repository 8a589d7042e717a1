"""Scale: the streamed demo DC, CorpusStream, streamed selection equal to the in-memory path,
the selection store, and (slow) the Ray Data passes against the local path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.data import demo as demo_mod
from core.data import selection_store as store
from core.data.corpus import Corpus
from core.data.selection_store import find_selection, list_selections, load_selection, selection_texts
from core.data.stream import CorpusStream, open_corpus_stream
from core.data.workspace import Workspace
from core.lm.embed import corpus_digest
from core.runner.params import PredictParams, ProjectParams
from core.selection.strategies import rank_order, select
from tests.ner_data import single_thread_torch  # noqa: F401 - fixture


@pytest.fixture(scope="module")
def ws20k(tmp_path_factory) -> Workspace:
    """A demo workspace with a 20,000-sentence DC, written by the streamed generator."""
    return demo_mod.write_demo_workspace(tmp_path_factory.mktemp("ws20k"), dc_size=20_000)


def test_streamed_demo_equals_generate_demo(tmp_path, monkeypatch):
    monkeypatch.setattr(demo_mod, "DC_CHUNK", 64)  # many chunks: the chunking must not change the data
    ws = demo_mod.write_demo_workspace(tmp_path / "ws", dc_size=300)
    ref = demo_mod.generate_demo(dc_size=300)
    dc = ws.load_corpus("demo-dc")
    assert dc.tokens == ref.dc.tokens and dc.fields == ref.dc.fields
    assert ws.load_corpus("demo-tc").tokens == ref.tc.tokens and ws.load_corpus("demo-test").tags == ref.test.tags
    assert ws.corpus_for_role("dc") == "demo-dc" and ws.settings().demo["dc_size"] == 300


def test_corpus_stream_reads_batches_and_rows(ws20k):
    stream = open_corpus_stream(ws20k, "dc")
    assert stream.streamed and len(stream) == 20_000 and stream.fields == ["id", "domain"]
    whole = ws20k.load_corpus("demo-dc")
    assert [len(b) for b in stream.batches(7_000)] == [7_000, 7_000, 6_000]
    assert stream.digest() == corpus_digest(whole)
    assert CorpusStream.from_workspace(ws20k, "dc").digest() == corpus_digest(whole)  # cached by file hash
    idx = [19_999, 3, 12_345, 3]
    assert stream.take(idx).tokens == [whole.tokens[i] for i in idx]
    counts = stream.field_counts("domain", np.array([0, 1, 2]))
    assert sum(counts.values()) == 3 and counts[whole.fields["domain"][0]] >= 1


@pytest.mark.parametrize("strategy", ["dsir", "ppl"])
def test_streamed_selection_equals_in_memory(ws20k, strategy):
    tc, dc = ws20k.load_corpus("demo-tc"), ws20k.load_corpus("demo-dc")
    mem = select(tc, dc, strategy, 0.1)
    streamed = select(tc, open_corpus_stream(ws20k, "dc"), strategy, 0.1, workspace=ws20k, names={"tc": "tc", "dc": "dc"})
    assert np.array_equal(mem.order, streamed.order) and np.allclose(mem.scores, streamed.scores, equal_nan=True)
    assert mem.summary()["domain_precision"] == streamed.summary()["domain_precision"] > 0.5
    # The in-memory algorithm of the previous code, computed independently: whole-corpus scores, lexsort.
    if strategy == "ppl":
        from core.lm.ngram import build_lm

        ref_scores = build_lm(tc.tokens, order=3).sentence_perplexities(dc.tokens)
        assert np.allclose(streamed.scores, ref_scores, equal_nan=True)
        assert np.array_equal(streamed.order, np.lexsort((np.arange(len(dc)), np.nan_to_num(ref_scores, nan=np.inf))))
    else:
        from core.lm.dsir import feature_distribution, hashed_ngrams

        diff = (feature_distribution(np.asarray(hashed_ngrams(tc.tokens).sum(0)))
                - feature_distribution(np.asarray(hashed_ngrams(dc.tokens).sum(0))))
        assert np.allclose(streamed.scores, hashed_ngrams(dc.tokens) @ diff)
    # Saved rows, streamed from DC, equal the in-memory records.
    loaded = load_selection(ws20k, streamed.key)
    assert list(loaded.records()) == list(mem.records())
    assert loaded.selected.tokens == mem.selected.tokens


def test_rank_order_stable_argsort_matches_lexsort():
    scores = np.array([0.5, np.nan, 0.5, 2.0, -1.0, 2.0])
    for higher in (True, False):
        sign = -1.0 if higher else 1.0
        expected = np.lexsort((np.arange(6), np.nan_to_num(sign * scores, nan=np.inf)))
        assert rank_order(scores, higher).tolist() == expected.tolist()


def test_selection_store_one_place(tmp_path):
    ws = Workspace(tmp_path / "ws")
    tc = Corpus([["band", "album"], ["album", "tour"]])
    dc = Corpus([["tax", "law"], ["band", "album", "tour"], ["album"], ["court"]], fields={"domain": ["p", "m", "m", "p"]})
    ws.save_corpus(dc, "mydc", role="dc")
    sel = select(tc, open_corpus_stream(ws, "dc"), "ppl", 2, workspace=ws, names={"tc": "tc", "dc": "mydc"})
    metas = list_selections(ws)
    assert [m.key for m in metas] == [sel.key]
    assert find_selection(ws, sel.key[:8]) == sel.folder and find_selection(ws, "dc") is None
    texts = list(selection_texts(ws, sel.key))
    assert texts == [" ".join(dc.tokens[i]) for i in sel.indices]
    assert store.selected_indices(ws, sel.key) == sel.indices.tolist()
    listed = store.list_selections(ws, in_workspace=True)
    assert [m.key for m in listed] == [sel.key] and listed[0].budget == 2 and listed[0].label.endswith(f"[{sel.key[:8]}]")
    out = tmp_path / "sc.csv"
    load_selection(ws, sel.key).write_export(out)
    assert out.read_text().splitlines()[0] == "text,score,rank,dc_index,domain"
    rows = [json.loads(line) for line in (sel.folder / "selected.jsonl").read_text().splitlines()]
    assert [r["rank"] for r in rows] == [1, 2] and [r["dc_index"] for r in rows] == sel.indices.tolist()


# --------------------------------------------------------------------------- Ray (local cluster, 2 CPUs)


@pytest.fixture(scope="module")
def ray_local():
    pytest.importorskip("ray")
    from core.lm.distributed import connect, shutdown

    connect("local:2")
    yield "local:2"
    shutdown()


@pytest.mark.slow  # starting Ray and its workers (torch imported in each) takes 60-120 s on 2 busy cores
def test_ray_embed_and_select_equal_local(tmp_path, tiny_bert_dir, ray_local):
    from core.lm.embed import embed_corpus
    from core.lm.precision import cosine_agreement

    ws = Workspace(tmp_path / "ws")
    data = demo_mod.generate_demo(dc_size=300)
    ws.save_corpus(data.dc, "dc", role="dc")
    local = embed_corpus(data.dc, str(tiny_bert_dir))  # in memory, no cache
    on_ray = embed_corpus("dc", str(tiny_bert_dir), workspace=ws, ray=ray_local)
    assert on_ray.shape == local.shape and cosine_agreement(local, np.asarray(on_ray, dtype=np.float32)) >= 0.9999
    tc = data.tc
    sel_ray = select(tc, open_corpus_stream(ws, "dc"), "ppl", 50, ray=ray_local)
    sel_local = select(tc, data.dc, "ppl", 50)
    assert np.array_equal(sel_ray.order, sel_local.order)
    ws2 = Workspace(tmp_path / "ws2")
    ws2.save_corpus(data.dc, "dc", role="dc")
    cos_local = select(tc, data.dc, "cosine", 50, model=str(tiny_bert_dir))
    cos_ray = select(tc, open_corpus_stream(ws2, "dc"), "cosine", 50, model=str(tiny_bert_dir), workspace=ws2, ray=ray_local)
    assert np.allclose(cos_local.scores, cos_ray.scores, atol=2e-3)  # float16 cache vs float32 in memory
    assert len(set(cos_local.indices.tolist()) & set(cos_ray.indices.tolist())) >= 48


@pytest.mark.long  # over ~15 s: CI runs it after the default suite (.ci/run)
def test_parallel_row_group_passes_equal_sequential(ws20k, monkeypatch):
    """dsir and ppl over a large streamed DC run on every core, one row group set per worker."""
    import core.lm.dsir
    import core.selection.strategies

    tc, dc = ws20k.load_corpus("demo-tc"), ws20k.load_corpus("demo-dc")
    runs = [("dsir", {}), ("dsir", {"length": "chunk"}), ("ppl", {})]  # chunk: DC's mean n-grams over every group
    mem = [select(tc, dc, s, 0.1, options=o) for s, o in runs]
    monkeypatch.setattr(core.lm.dsir, "PARALLEL_MIN", 1000)
    monkeypatch.setattr(core.lm.dsir, "_KEEP_MATRICES", 1000)
    monkeypatch.setattr(core.selection.strategies, "PARALLEL_MIN", 1000)
    for (s, o), alone in zip(runs, mem):
        par = select(tc, open_corpus_stream(ws20k, "dc"), s, 0.1, options=o)
        assert np.array_equal(par.order, alone.order) and np.allclose(par.scores, alone.scores, equal_nan=True)
        assert par.meta.extra.get("mean_tokens") == alone.meta.extra.get("mean_tokens")


# --------------------------------------------------------------------------- similarity, Map sampling, NER prediction over a streamed DC


def _reference_jsd(source, target, max_order=3):
    """The previous in-memory JSD (whole corpora encoded at once, index_ngrams), kept here as the reference."""
    from core.lm.ngram import Encoded, Vocabulary, encode, index_ngrams
    from core.similarity.measures import _kl

    vocab = Vocabulary()
    es = encode(source, vocab, grow=True, padded=False)
    et = encode(target, vocab, grow=True, padded=False)
    both = Encoded(np.concatenate([es.seq, et.seq]), np.concatenate([es.lengths, et.lengths]), padded=False)
    split, V = len(es.seq), len(vocab)
    p_parts, q_parts = [np.bincount(both.seq[:split], minlength=V)], [np.bincount(both.seq[split:], minlength=V)]
    for level in index_ngrams(both, max_order, V)[2:]:
        src = level.valid < split
        p_parts.append(np.bincount(level.rows[src], minlength=len(level.keys)))
        q_parts.append(np.bincount(level.rows[~src], minlength=len(level.keys)))
    p, q = np.concatenate(p_parts).astype(np.float64), np.concatenate(q_parts).astype(np.float64)
    p /= p.sum()
    q /= q.sum()
    m = (p + q) / 2
    return float(min(max(0.5 * _kl(p, m) + 0.5 * _kl(q, m), 0.0), 1.0))


@pytest.fixture(scope="module")
def ws2k(tmp_path_factory) -> Workspace:
    return demo_mod.write_demo_workspace(tmp_path_factory.mktemp("ws2k"), dc_size=2_000)


@pytest.fixture
def small_batches(monkeypatch):
    """Record batches of 300 sentences, so a 2k DC is read in many chunks."""
    orig_tok, orig_arrow = CorpusStream.token_batches, CorpusStream.arrow_batches
    monkeypatch.setattr(CorpusStream, "token_batches", lambda self, size=300: orig_tok(self, size))
    monkeypatch.setattr(CorpusStream, "arrow_batches", lambda self, size=300, columns=None: orig_arrow(self, size, columns))


def _no_whole_corpus_loads(monkeypatch):
    from core.data.workspace import CorpusRef

    def refuse(*a, **k):
        raise AssertionError("a whole corpus was loaded")

    monkeypatch.setattr(Workspace, "load_corpus", refuse)
    monkeypatch.setattr(Workspace, "resolve_corpus", refuse)
    monkeypatch.setattr(CorpusRef, "load", refuse)
    monkeypatch.setattr(CorpusStream, "to_corpus", refuse)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (isinstance(a[k], float) and np.isnan(a[k]) and np.isnan(b[k])) or a[k] == b[k] for k in a)


def test_similarity_streamed_equals_in_memory(ws2k, small_batches, monkeypatch, capsys):
    from core.data.workspace import resolve_corpus_ref
    from core.similarity.matrix import similarity_matrix
    from core.similarity.measures import SimilarityParams, compare_corpora, corpus_text, ngram_jsd

    dc, tc = ws2k.load_corpus("demo-dc").tokens, ws2k.load_corpus("demo-tc").tokens
    params = SimilarityParams(measures=("tvc", "tvcc", "ppl", "jsd", "wvv", "ttr"), tvcc_method="approx", wvv_dim=16,
                              wvv_epochs=2)
    sub = SimilarityParams(measures=("tvc", "ppl", "jsd", "ttr"), subsample_tokens=5_000, subsample_k=2)
    mem = compare_corpora(dc, tc, params)
    mem_sub = compare_corpora(dc, tc, sub)
    assert ngram_jsd(dc, tc) == _reference_jsd(dc, tc) and ngram_jsd(tc, dc, 2) == _reference_jsd(tc, dc, 2)
    assert mem["jsd"] == _reference_jsd(dc, tc)
    refs = {r: resolve_corpus_ref(r, ws2k) for r in ("dc", "tc")}
    _no_whole_corpus_loads(monkeypatch)
    dc_s, tc_s = corpus_text(refs["dc"]), corpus_text(refs["tc"])
    assert isinstance(dc_s, CorpusStream) and dc_s.streamed
    assert _same(compare_corpora(dc_s, tc_s, params), mem)
    assert _same(compare_corpora(dc_s, tc_s, sub), mem_sub) and mem_sub["samples"] == 2
    assert ngram_jsd(dc_s, tc_s) == _reference_jsd(dc, tc)
    matrix = similarity_matrix(ws2k, ["demo-dc"], ["demo-tc"], params)
    for m in ("tvc", "tvcc", "ppl", "ppl_sum", "jsd", "wvv"):
        assert matrix.values[m][0][0] == mem[m], m
    assert matrix.ttr["demo-dc"] == mem["ttr_source"] and matrix.ttr["demo-tc"] == mem["ttr_target"]
    assert mem_sub["ttr_source"] == mem["ttr_source"]  # the whole corpus's, as the page's matrix: not its sub-samples'
    from core.cli import main

    assert main(["similarity", "--source", "dc", "--target", "tc", "--workspace", str(ws2k.root), "--json",
                 "--measures", "tvc,jsd"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tvc"] == mem["tvc"] and out["jsd"] == mem["jsd"]


def _refuse_dc_loads(monkeypatch, dc_name: str):
    """Loading DC whole (by any loader) fails the test; TC (small) may still be loaded."""
    from core.data.workspace import CorpusRef

    def guard(orig, name_of):
        def wrapped(*a, **k):
            if name_of(*a, **k) == dc_name:
                raise AssertionError("DC was loaded whole")
            return orig(*a, **k)
        return wrapped

    monkeypatch.setattr(Workspace, "load_corpus", guard(Workspace.load_corpus, lambda self, name, *a, **k: name))
    monkeypatch.setattr(CorpusRef, "load", guard(CorpusRef.load, lambda self, *a, **k: self.name))
    monkeypatch.setattr(CorpusStream, "to_corpus", guard(CorpusStream.to_corpus, lambda self: self.name))


def test_map_of_a_streamed_dc_reads_it_in_batches(ws2k, tiny_bert_dir, monkeypatch):
    """The map of a workspace DC embeds, lays out and stores its texts batch by batch: the DC is never loaded whole."""
    from types import SimpleNamespace

    from core.selection import atlas

    real_layout = atlas.layout
    monkeypatch.setattr(atlas, "layout", lambda vectors, **kw: real_layout(vectors, **{**kw, "fit_points": 60}))
    _refuse_dc_loads(monkeypatch, "demo-dc")
    ctx = SimpleNamespace(workspace=ws2k, progress=lambda f, m="": None, log=lambda m: None)
    out = atlas.atlas_job(ProjectParams(corpora=["tc", "dc"], model=str(tiny_bert_dir), seed=1), ctx)
    assert out["points"] == len(ws2k.load_corpus("demo-tc")) + ws2k.corpus_info("demo-dc").sentences and not out["reused"]
    made = atlas.load_atlas(ws2k, out["key"])
    assert made.meta["fitted"] == 60 and made.texts()[-1] == " ".join(next(reversed(list(
        open_corpus_stream(ws2k, "dc").token_batches())))[-1])


@pytest.mark.usefixtures("single_thread_torch")
def test_ner_predict_streamed_equals_in_memory(tmp_path, tiny_bert_dir, monkeypatch):
    """`ner predict` over a workspace DC reads and writes chunk by chunk, with the in-memory path's lines
    (batch size 1: no padding, so the two paths run the very same forward passes)."""
    from types import SimpleNamespace

    import torch

    from core.cli import main
    from core.progress import sub
    from core.train.ner_model import build_ner_model, load_ner_model
    from core.train.ner_predict import ner_predict_job, predict_corpus, predict_to_file, write_predictions

    torch.manual_seed(0)
    build_ner_model(str(tiny_bert_dir), ["O", "B-PER", "I-PER", "E-PER", "S-PER"]).save(tmp_path / "ner")
    model = load_ner_model(tmp_path / "ner")
    ws = Workspace(tmp_path / "ws")
    dc = demo_mod.generate_demo(dc_size=60).dc
    ws.save_corpus(dc, "dc", role="dc")
    write_predictions(tmp_path / "mem.jsonl", predict_corpus(model, dc, batch_size=1))
    expected = (tmp_path / "mem.jsonl").read_text("utf-8")
    _refuse_dc_loads(monkeypatch, "dc")
    monkeypatch.setattr(Workspace, "resolve_corpus", lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded whole")))
    seen: list[float] = []
    out = predict_to_file(model, open_corpus_stream(ws, "dc"), tmp_path / "s.jsonl", batch_size=1, chunk=25,
                          progress=lambda f, m: seen.append(f))
    assert (tmp_path / "s.jsonl").read_text("utf-8") == expected and out["sentences"] == len(dc) == 60
    assert seen == sorted(seen) and seen[-1] == 1.0
    ctx = SimpleNamespace(workspace=ws, run_dir=tmp_path / "run", log=lambda m: None,
                          sub=lambda a, b, prefix="": sub(lambda f, m: None, a, b))
    result = ner_predict_job(PredictParams(model=str(tmp_path / "ner"), corpus="dc", batch_size=1), ctx)
    assert (tmp_path / "run" / "predictions.jsonl").read_text("utf-8") == expected
    assert result["entities"] == sum(json.loads(x)["n_entities"] for x in expected.splitlines())
    assert main(["ner", "predict", "--model", str(tmp_path / "ner"), "dc", "--workspace", str(ws.root), "--batch-size", "1",
                 "--out", str(tmp_path / "cli.jsonl"), "--quiet"]) == 0
    assert (tmp_path / "cli.jsonl").read_text("utf-8") == expected


def test_rows_per_block_gives_every_actor_work():
    from core.lm.distributed import rows_per_block

    assert rows_per_block(5_000, 2, 64, 4096) == 1250  # 4 blocks: 2 per actor (one block used to go to one actor)
    assert rows_per_block(10_000_000, 2, 64, 4096) == 4096 and rows_per_block(100, 2, 64, 4096) == 64
    assert rows_per_block(0, 2, 64, 4096) == 64


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_kn_lm_from_streamed_counts_equals_whole_corpus_lm(ws2k, order):
    from core.lm.ngram import build_lm, build_lm_streamed

    tokens = ws2k.load_corpus("demo-dc").tokens[:1_500] + [["<s>", "a b", ""], []]  # odd tokens take the same paths
    whole = build_lm(tokens, order=order)
    streamed = build_lm_streamed((tokens[i:i + 200] for i in range(0, len(tokens), 200)), order=order)
    assert streamed.vocab.words == whole.vocab.words and streamed.discounts == whole.discounts
    for n in range(1, order + 1):
        assert np.array_equal(streamed.log10_prob[n], whole.log10_prob[n]) and np.array_equal(streamed.log10_bow[n], whole.log10_bow[n])
        if n > 1:
            assert np.array_equal(streamed.keys[n], whole.keys[n])
    test = ws2k.load_corpus("demo-tc").tokens
    assert np.array_equal(streamed.sentence_perplexities(test), whole.sentence_perplexities(test))
