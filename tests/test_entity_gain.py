"""Issue 46.3: the entity-aware strategy ranks DC by the entity mentions a sentence adds that TC lacks (B2's
predictions, weighted by LC's type shares), mixed with the cosine to TC; its parts on hand-made cases and a run."""

from __future__ import annotations

import numpy as np
import pytest

from core.data.corpus import Corpus
from core.data.tags import Span
from core.errors import UserError
from core.selection.entity_gain import gains, label_shares, percentile_ranks, type_weights
from core.selection.strategies import Strategy, select
from core.train.ner_model import Prediction


def test_gain_counts_mentions_tc_lacks_weighted_by_type():
    known = {"paris"}
    preds = [Prediction(["Paris", "and", "Rome"], [], [Span(0, 1, "LOC"), Span(2, 3, "LOC")], 1.0, 1.0),
             Prediction(["Ann", "in", "Paris"], [], [Span(0, 1, "PER"), Span(2, 3, "LOC")], 1.0, 1.0),
             Prediction(["nothing"], [], [], 1.0, 1.0)]
    weights = type_weights({"PER": 0.75, "LOC": 0.25})
    assert gains(preds, known, weights).tolist() == [0.5, 1.5, 0.0]  # Rome (LOC 0.5); Ann (PER 1.5); none
    assert np.allclose(percentile_ranks(np.array([0.0, 2.0, 1.0, 1.0])), [0.0, 1.0, 0.5, 0.5])


def test_entity_gain_prefers_new_mentions_and_mix_zero_is_the_cosine_order(tmp_path, tiny_bert_dir):
    from tests.tiny_models import build_rigged_ner

    ner = build_rigged_ner(tmp_path / "rigged", tiny_bert_dir, "LOC")  # every word a LOC mention
    tc = Corpus([["john", "lives", "in", "paris"], ["mary", "visited", "berlin"]])
    dc = Corpus([["john", "lives", "in", "paris"],  # nothing TC lacks
                 ["tom", "met", "ann", "near", "oslo", "today"],  # six new words
                 ["mary", "visited", "rome"]])  # one new word
    only_gain = select(tc, dc, "entity-gain", 3, model=str(tiny_bert_dir), ner_model=str(ner), options={"mix": 1.0})
    assert only_gain.order.tolist() == [1, 2, 0]
    assert only_gain.meta.extra["tc_mentions"] == 7 and only_gain.meta.extra["dc_with_gain"] == 2
    only_domain = select(tc, dc, "entity-gain", 3, model=str(tiny_bert_dir), ner_model=str(ner), options={"mix": 0.0})
    cosine = select(tc, dc, "cosine", 3, model=str(tiny_bert_dir))
    assert only_domain.order.tolist() == cosine.order.tolist()
    with pytest.raises(UserError, match="needs a fine-tuned NER model"):
        select(tc, dc, "entity-gain", 2, model=str(tiny_bert_dir))
    with pytest.raises(UserError, match="mix"):
        select(tc, dc, "entity-gain", 2, model=str(tiny_bert_dir), ner_model=str(ner), options={"mix": 2})
    assert Strategy.parse("entity_gain") == Strategy.ENTITY_GAIN and Strategy.ENTITY_GAIN.info.needs_trained_model


def test_the_pooled_variant_ranks_only_the_sentences_nearest_tc_by_gain(tmp_path, tiny_bert_dir):
    """entity-gain-pool: the gain orders the pool x budget sentences nearest TC and nothing outside it leads, however
    many new mentions it has (the mixed entity-gain chose mostly other domains' sentences on CrossNER)."""
    from tests.tiny_models import build_rigged_ner

    ner = build_rigged_ner(tmp_path / "rigged", tiny_bert_dir, "LOC")
    tc = Corpus([["john", "lives", "in", "paris"], ["mary", "visited", "berlin"]])
    dc = Corpus([["john", "lives", "in", "paris"], ["tom", "met", "ann", "near", "oslo", "today"],
                 ["mary", "visited", "rome"], ["john", "lives", "in", "berlin"]])
    cosine = select(tc, dc, "cosine", 4, model=str(tiny_bert_dir)).order.tolist()
    pooled = select(tc, dc, "entity-gain-pool", 1, model=str(tiny_bert_dir), ner_model=str(ner), options={"pool": 2})
    pool = set(cosine[:2])
    order = pooled.order.tolist()
    assert set(order[:2]) == pool and order[2:] == [i for i in cosine if i not in pool]  # the rest by cosine
    assert pooled.meta.extra["pool_size"] == 2 and "mix" not in pooled.meta.extra
    assert pooled.scores[order[0]] >= pooled.scores[order[1]] >= 1.0 > pooled.scores[order[2]] == 0.0
    everything = select(tc, dc, "entity-gain-pool", 1, model=str(tiny_bert_dir), ner_model=str(ner), options={"pool": 4})
    assert everything.order[0] == 1  # with all of DC in the pool, the most new mentions lead
    with pytest.raises(UserError, match="pool"):
        select(tc, dc, "entity-gain-pool", 1, model=str(tiny_bert_dir), ner_model=str(ner), options={"pool": 0.5})


def test_label_shares_refuse_an_unlabeled_corpus():
    with pytest.raises(UserError, match="no tags"):
        label_shares(Corpus([["a"]]))


def test_an_experiment_row_reads_b1_and_b2_and_weighs_types_by_the_cells_lc(tmp_path, tiny_bert_dir, monkeypatch):
    from core.data.workspace import Workspace
    from core.runner import jobs
    from tests.conftest import TOY_SENTENCES, unlike
    from tests.ner_data import write_toy_conll

    monkeypatch.setenv("NERSELECT_TORCH_THREADS", "1")
    (tmp_path / "tc.txt").write_text("\n".join(unlike(s) for s in TOY_SENTENCES[:8]) + "\n")
    (tmp_path / "dc.txt").write_text("\n".join(unlike(s, k) for k in (1, 2, 3) for s in TOY_SENTENCES[:8]) + "\n")
    labeled = write_toy_conll(tmp_path / "lc.conll")
    params = {"tc": str(tmp_path / "tc.txt"), "dc": str(tmp_path / "dc.txt"), "lc": labeled, "dev": labeled, "test": labeled,
              "strategies": ["entity-gain"], "baselines": ["tapt"], "seeds": [1], "model": str(tiny_bert_dir),
              "preset": "tiny", "budget": 8}
    result = jobs.run_inline(Workspace(tmp_path / "ws"), "experiment", params, run_dir=tmp_path / "run")
    cell = next(c for c in result["cells"] if c["row"] == "entity-gain")
    assert cell["budget"] == 8 and "training B1/B2" in (tmp_path / "run" / "log.txt").read_text()
    from core.data.corpus import read_corpus
    from core.data.selection_store import selection_meta

    meta = selection_meta(Workspace(tmp_path / "ws"), cell["selection_key"])
    assert meta.ner_model and meta.options["type_weights"] == pytest.approx(label_shares(read_corpus(labeled)))
