"""Why a sentence was chosen (core.selection.explain): ranks on one percentile scale under every saved selection
of the DC, nearest TC sentences, DSIR n-grams that sum to its log-weight, entity words it adds to TC; the CLI."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.data.stream import open_corpus_stream
from core.errors import UserError
from core.selection.explain import explain_sentence
from core.selection.strategies import select


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    from core.data.demo import write_demo_workspace

    ws = write_demo_workspace(tmp_path_factory.mktemp("explainws"), dc_size=300)
    tc = ws.resolve_corpus("tc")
    dsir = select(tc, open_corpus_stream(ws, "dc"), "dsir", 30, workspace=ws, names={"tc": "tc", "dc": "dc"},
                  options={"sampling": "topk"})
    rand = select(tc, open_corpus_stream(ws, "dc"), "random", 30, workspace=ws, names={"tc": "tc", "dc": "dc"}, seed=2)
    return ws, dsir, rand


def test_a_top_dsir_sentence_is_explained(explained, tiny_bert_dir):
    ws, dsir, rand = explained
    top = int(dsir.indices[0])
    out = explain_sentence(ws, dsir.key, top, labeled="test", neighbours=3, model=str(tiny_bert_dir))
    ranks = {r["strategy"]: r for r in out["ranks"]}
    assert set(ranks) == {"dsir", "random"} and ranks["dsir"]["rank"] == 1 and ranks["dsir"]["percentile"] == 100.0
    assert ranks["random"]["rank"] == int(list(rand.order).index(top)) + 1
    assert out["dsir"]["log_weight"] == pytest.approx(float(dsir.scores[top]), abs=1e-6)  # the n-grams sum to the weight
    assert len(out["ngrams"] if "ngrams" in out else out["dsir"]["ngrams"]) > 0
    assert len(out["nearest_tc"]) == 3 and out["nearest_tc"][0]["cosine"] >= out["nearest_tc"][-1]["cosine"]
    tc_words = {t.casefold() for s in ws.resolve_corpus("tc").tokens for t in s}
    assert not set(out["entity_words_added"]["words"]) & tc_words


def test_bad_indices_and_the_cli(explained, tiny_bert_dir, capsys):
    ws, dsir, _ = explained
    with pytest.raises(UserError, match="outside DC"):
        explain_sentence(ws, dsir.key, 10_000, model=str(tiny_bert_dir))
    capsys.readouterr()
    idx = int(dsir.indices[1])
    assert main(["--workspace", str(ws.root), "select", "explain", dsir.key[:8], str(idx), "--labeled", "", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dc_index"] == idx and out["ranks"][0]["strategy"] == "dsir" and "entity_words_added" not in out


def test_a_second_explanation_embeds_one_sentence_and_hashes_no_dc(explained, tiny_bert_dir, monkeypatch):
    """Issue 43.12: every click embedded all of TC and hashed all of DC (29-37 s on a real DC); TC's embeddings and
    DC's n-gram counts now come from the workspace, so a second sentence costs one embedding."""
    import core.lm.encoder as encoder
    import core.selection.explain as explain

    ws, dsir, _ = explained
    first = explain_sentence(ws, dsir.key, int(dsir.indices[2]), labeled=None, model=str(tiny_bert_dir))
    embedded, hashed = [], []
    real_embed, real_hash = encoder.embed_texts, explain.hashed_ngrams
    monkeypatch.setattr(encoder, "embed_texts", lambda texts, *a, **k: embedded.append(len(texts)) or real_embed(texts, *a, **k))
    monkeypatch.setattr(explain, "hashed_ngrams", lambda toks, *a, **k: hashed.append(len(toks)) or real_hash(toks, *a, **k))
    again = explain_sentence(ws, dsir.key, int(dsir.indices[2]), labeled=None, model=str(tiny_bert_dir))
    assert embedded == [1] and hashed == [len(ws.resolve_corpus("tc"))]  # the sentence; TC's counts (small) only
    assert again["nearest_tc"] == first["nearest_tc"] and again["dsir"] == first["dsir"]


def test_explain_reads_the_selection_s_own_bucket_count(explained, tiny_bert_dir):
    """Found in review: Explain hashed n-grams into the default 10,000 buckets whatever the selection used, so its
    log weight differed from the selection's score where `buckets` was set."""
    ws, _, _ = explained
    small = select(ws.resolve_corpus("tc"), open_corpus_stream(ws, "dc"), "dsir", 30, workspace=ws,
                   names={"tc": "tc", "dc": "dc"}, options={"sampling": "topk", "buckets": 500})
    top = int(small.indices[0])
    out = explain_sentence(ws, small.key, top, labeled=None, neighbours=1, model=str(tiny_bert_dir))
    assert out["dsir"]["log_weight"] == pytest.approx(float(small.scores[top]), abs=1e-6)


def test_explain_reads_the_selection_s_own_smoothing(explained, tiny_bert_dir):
    """A selection made with smoothing=dc scores n-grams TC lacks otherwise than add-one: Explain's log weight and
    n-gram contributions follow the selection's option, so they sum to its score."""
    ws, _, _ = explained
    sel = select(ws.resolve_corpus("tc"), open_corpus_stream(ws, "dc"), "dsir", 30, workspace=ws,
                 names={"tc": "tc", "dc": "dc"}, options={"sampling": "topk", "smoothing": "dc"})
    top = int(sel.indices[0])
    out = explain_sentence(ws, sel.key, top, labeled=None, neighbours=1, model=str(tiny_bert_dir))
    assert out["dsir"]["log_weight"] == pytest.approx(float(sel.scores[top]), abs=1e-6)
    plain = select(ws.resolve_corpus("tc"), open_corpus_stream(ws, "dc"), "dsir", 30, options={"sampling": "topk"})
    assert abs(float(plain.scores[top]) - float(sel.scores[top])) > 1e-3  # the two smoothings differ here
