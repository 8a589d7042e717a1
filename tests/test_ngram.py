"""Kneser-Ney LM: normalisation, hand-computed values, agreement with NLTK and with a naive
reference implementation, ARPA round trip, kenlm-ex agreement, bad ARPA input."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli import main
from core.data.corpus import Corpus
from core.errors import CorpusError, UserError
from core.lm.ngram import FALLBACK_DISCOUNTS, build_lm, load_arpa, modified_kn_discounts

TOY = [["a", "b"], ["a", "c"]]


def random_corpus(n_sent: int, vocab: int = 30, seed: int = 0, max_len: int = 12) -> list[list[str]]:
    """Zipf-ish words with some bigram structure, so modified-KN discounts are valid."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]
    out = []
    for _ in range(n_sent):
        sent = [rng.choices(words, weights)[0]]
        for _ in range(rng.randint(0, max_len - 1)):
            prev = int(sent[-1][1:])
            sent.append(words[(prev + 1) % vocab] if rng.random() < 0.4 else rng.choices(words, weights)[0])
        out.append(sent)
    return out


def total_prob(lm, context, sentence_start=False) -> float:
    return float(np.sum(10 ** lm.next_word_log10(context, sentence_start)))


# --------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_conditional_distribution_sums_to_one(order):
    corpus = random_corpus(300, seed=order)
    lm = build_lm(corpus, order=order)
    contexts = [([], False), ([], True), (corpus[0][:2], False), (corpus[1][:1], True), (["never", "seen"], False),
                (["w0", "never"], True), (corpus[2][-4:], False), (["w1", "w2", "w3", "w4"], False)]
    for ctx, start in contexts:
        assert total_prob(lm, ctx, start) == pytest.approx(1.0, abs=1e-6), (ctx, start)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefg"), min_size=0, max_size=8), min_size=1, max_size=12),
       st.integers(1, 4), st.lists(st.sampled_from("abcdxyz"), max_size=3), st.booleans())
def test_normalisation_property(sentences, order, context, start):
    if not any(sentences):
        sentences = sentences + [["a"]]
    lm = build_lm(sentences, order=order)
    assert total_prob(lm, context, start) == pytest.approx(1.0, abs=1e-6)


# --------------------------------------------------------------------------- hand-computed values


def test_hand_computed_bigram_toy():
    """<s> a b </s>, <s> a c </s>; every order falls back to discounts 0.5/1/1.5.
    Unigram adjusted counts: a 1 (after <s>), b 1, c 1, </s> 2 (after b and c); total 5,
    gamma = (3 * 0.5 + 1.0) / 5 = 0.5, uniform over 5 words (<unk> </s> a b c):
    p(a) = 0.5/5 + 0.1 = 0.2, p(</s>) = 1/5 + 0.1 = 0.3, p(<unk>) = 0.1.
    Bigrams (raw counts): p(a|<s>) = (2-1)/2 + (1/2)*0.2 = 0.6, p(b|a) = 0.5/2 + 0.5*0.2 = 0.35,
    p(</s>|b) = 0.5/1 + 0.5*0.3 = 0.65."""
    lm = build_lm(TOY, order=2)
    assert lm.fallback_orders == [1, 2] and lm.discounts == [FALLBACK_DISCOUNTS] * 2
    idx = lm.vocab.index
    uni = 10 ** lm.next_word_log10([])
    assert uni[idx["a"]] == pytest.approx(0.2) and uni[idx["</s>"]] == pytest.approx(0.3) and uni[idx["<unk>"]] == pytest.approx(0.1)
    assert 10 ** lm.next_word_log10([], sentence_start=True)[idx["a"]] == pytest.approx(0.6)
    assert 10 ** lm.next_word_log10(["a"])[idx["b"]] == pytest.approx(0.35)
    assert 10 ** lm.next_word_log10(["b"])[idx["</s>"]] == pytest.approx(0.65)
    scores = lm.score_sentences([["a", "b"], ["a", "zzz"]])
    assert scores.log10_prob[0] == pytest.approx(math.log10(0.6 * 0.35 * 0.65))
    assert scores.perplexity[0] == pytest.approx((0.6 * 0.35 * 0.65) ** (-1 / 3))
    # unseen word after "a": gamma(a) * p(<unk>) = 0.5 * 0.1, then p(</s> | <unk>) = p(</s>) (no <unk> context)
    assert scores.log10_prob[1] == pytest.approx(math.log10(0.6 * 0.05 * 0.3))
    assert scores.oov.tolist() == [0, 1]


def test_modified_discounts_from_count_of_counts():
    adjusted = np.array([1] * 10 + [2] * 4 + [3] * 2 + [4] * 1 + [9] * 3)
    d, fallback = modified_kn_discounts(adjusted)
    y = 10 / (10 + 2 * 4)
    assert not fallback
    assert d == pytest.approx((1 - 2 * y * 4 / 10, 2 - 3 * y * 2 / 4, 3 - 4 * y * 1 / 2))
    assert modified_kn_discounts(np.array([1, 1, 2, 2]))== (FALLBACK_DISCOUNTS, True)  # no count-3 n-grams


def naive_interpolated_kn(sentences, order, word):
    """Chen & Goodman interpolated modified KN written the obvious way with dicts (as lmplz:
    raw counts at the top order and for <s>-initial n-grams, continuation counts otherwise)."""
    grams = [Counter() for _ in range(order + 1)]
    for s in sentences:
        toks = ["<s>", *s, "</s>"]
        for n in range(1, order + 1):
            for i in range(len(toks) - n + 1):
                grams[n][tuple(toks[i:i + n])] += 1
    adj = [Counter() for _ in range(order + 1)]
    adj[order] = Counter(grams[order])
    for n in range(1, order):
        for g in grams[n]:
            adj[n][g] = grams[n][g] if g[0] == "<s>" else sum(1 for h in grams[n + 1] if h[1:] == g)
    adj[1][("<s>",)] = 0
    vocab = sorted({w for s in sentences for w in s} | {"</s>", "<unk>"})
    disc = []
    for n in range(1, order + 1):
        t = Counter(min(c, 5) for c in adj[n].values() if c > 0)
        if min(t[1], t[2], t[3]) == 0:
            disc.append([0.0, 0.5, 1.0, 1.5])  # lmplz --discount_fallback
            continue
        y = t[1] / (t[1] + 2 * t[2])
        disc.append([0.0] + [k - (k + 1) * y * t[k + 1] / t[k] for k in (1, 2, 3)])
    D = lambda n, c: disc[n - 1][min(c, 3)]

    def prob(w, h):
        n = len(h) + 1
        if n == 1:
            total = sum(adj[1].values())
            gamma = sum(D(1, c) for c in adj[1].values() if c > 0) / total
            return max(adj[1][(w,)] - D(1, adj[1][(w,)]), 0) / total + gamma / len(vocab)
        rows = {g: c for g, c in adj[n].items() if g[:-1] == h}
        total = sum(rows.values())
        if total == 0:
            return prob(w, h[1:])
        c = rows.get((*h, w), 0)
        gamma = sum(D(n, x) for x in rows.values()) / total
        return max(c - D(n, c), 0) / total + gamma * prob(w, h[1:])

    return prob, vocab


def test_matches_naive_reference_implementation():
    corpus = random_corpus(150, vocab=12, seed=3, max_len=6)
    lm = build_lm(corpus, order=3)
    assert 2 not in lm.fallback_orders and 3 not in lm.fallback_orders  # the modified discounts are under test
    prob, vocab = naive_interpolated_kn(corpus, 3, None)
    idx = lm.vocab.index
    for h in [("w0", "w1"), ("<s>", "w2"), ("w3",), ("w5", "w9"), ("zz", "w1"), ()]:
        start = bool(h) and h[0] == "<s>"
        ours = 10 ** lm.next_word_log10(list(h[1:] if start else h), sentence_start=start)
        for w in vocab:
            assert ours[idx[w]] == pytest.approx(prob(w, tuple("<unk>" if x == "zz" else x for x in h)), rel=1e-9), (h, w)


def test_matches_nltk_with_fixed_discounts():
    """NLTK's KneserNeyInterpolated (one discount, raw counts at the top order, continuation
    counts below, unigrams undiscounted) is our estimator with discounts (0, d, d) when both
    see the same n-grams (single <s> padding); compare all trigram-context probabilities."""
    from nltk.lm import KneserNeyInterpolated
    from nltk.util import everygrams

    corpus = random_corpus(60, vocab=10, seed=5, max_len=6)
    ours = build_lm(corpus, order=3, discounts=[0.0, 0.1, 0.1])
    padded = [["<s>", *s, "</s>"] for s in corpus]
    nltk_lm = KneserNeyInterpolated(3, discount=0.1)
    nltk_lm.fit([list(everygrams(p, max_len=3)) for p in padded], vocabulary_text=[w for p in padded for w in p])
    idx = ours.vocab.index
    words = sorted({w for s in corpus for w in s} | {"</s>"})
    checked = 0
    for p in padded[:20]:
        for i in range(2, len(p)):
            ctx = p[i - 2:i]
            mine = 10 ** ours.next_word_log10(ctx[1:] if ctx[0] == "<s>" else ctx, sentence_start=ctx[0] == "<s>")
            for w in words:
                assert mine[idx[w]] == pytest.approx(nltk_lm.score(w, ctx), rel=1e-9, abs=1e-12)
                checked += 1
    assert checked > 500


# --------------------------------------------------------------------------- small corpora, unknown words, streaming


def test_tiny_corpora_work_with_fallback_discounts():
    for corpus in ([["one"]], [["a", "b", "c"]], [["x"], ["x", "x"]]):
        for order in (3, 5):
            lm = build_lm(corpus, order=order)
            ppl = lm.sentence_perplexities(corpus + [["unknown", "words"], []])
            assert np.all(np.isfinite(ppl)) and np.all(ppl >= 1)
            assert set(lm.fallback_orders) == set(range(1, order + 1))


def test_reserved_symbols_in_text_do_not_fake_boundaries():
    lm = build_lm([["a", "</s>", "b"], ["<s>", "a"]], order=3)
    assert lm.vocab.words[:3] == ["<unk>", "<s>", "</s>"] and "b" in lm.vocab.index
    assert total_prob(lm, ["a", "<unk>"]) == pytest.approx(1.0)


def test_streamed_chunks_equal_one_list():
    corpus = random_corpus(200, seed=9)
    whole = build_lm(corpus, order=3)
    chunks = iter([Corpus(tokens=corpus[:70]), Corpus(tokens=corpus[70:])])
    streamed = build_lm(chunks, order=3)
    assert streamed.counts() == whole.counts()
    target = random_corpus(30, seed=10)
    np.testing.assert_array_equal(whole.score_sentences(target).log10_prob, streamed.score_sentences(target).log10_prob)
    scored_in_chunks = whole.score_sentences(iter([Corpus(tokens=target[:10]), Corpus(tokens=target[10:])]))
    np.testing.assert_allclose(scored_in_chunks.log10_prob, whole.score_sentences(target).log10_prob)


def test_perplexity_forms():
    lm = build_lm(random_corpus(200, seed=1), order=3)
    target = random_corpus(40, seed=2)
    s = lm.score_sentences(target)
    assert s.summed_perplexity == pytest.approx(sum(10 ** (-lp / n) for lp, n in zip(s.log10_prob, s.n_predicted)))
    assert s.corpus_perplexity == pytest.approx(10 ** (-s.log10_prob.sum() / s.n_predicted.sum()))
    assert s.n_predicted.tolist() == [len(t) + 1 for t in target]


# --------------------------------------------------------------------------- ARPA


def test_arpa_round_trip_identical_scores_and_kenlm_agrees(tmp_path):
    corpus = random_corpus(300, seed=4)
    target = random_corpus(50, seed=6) + [["w1", "unseen", "w2"], []]
    lm = build_lm(corpus, order=3)
    path = lm.write_arpa(tmp_path / "m.arpa")
    loaded = load_arpa(path)
    assert loaded.counts() == lm.counts() and loaded.order == 3
    ref = lm.score_sentences(target)
    np.testing.assert_array_equal(loaded.score_sentences(target, backend="numpy").log10_prob, ref.log10_prob)
    pytest.importorskip("kenlm")
    via_kenlm = loaded.score_sentences(target, backend="kenlm")
    np.testing.assert_allclose(via_kenlm.log10_prob, ref.log10_prob, atol=1e-4)
    assert via_kenlm.oov.tolist() == ref.oov.tolist()


def test_order5_arpa_round_trip(tmp_path):
    corpus = random_corpus(100, seed=8)
    lm = build_lm(corpus, order=5)
    loaded = load_arpa(lm.write_arpa(tmp_path / "m5.arpa"))
    np.testing.assert_array_equal(loaded.score_sentences(corpus).log10_prob, lm.score_sentences(corpus).log10_prob)


GOOD_ARPA = """\\data\\
ngram 1=4
ngram 2=2

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.3
-0.5\t</s>\t0
-0.4\ta\t-0.2

\\2-grams:
-0.2\t<s> a
-0.1\ta </s>

\\end\\
"""


@pytest.mark.parametrize("edit, line, message", [
    (lambda t: t.replace("-0.4\ta\t-0.2", "x\ta\t-0.2"), 9, "not a number"),
    (lambda t: t.replace("-0.2\t<s> a", "-0.2\t<s> a b c"), 12, "fields"),
    (lambda t: t.replace("\\end\\\n", ""), 14, "missing"),
    (lambda t: t.replace("ngram 2=2", "ngram 2=3"), 13, "header says 3"),
    (lambda t: t.replace("-0.1\ta </s>", "-0.1\tb </s>"), 13, "missing from the 1-grams"),
    (lambda t: t.replace("\\data\\", "hello"), 1, "expected '\\data\\'"),
    (lambda t: t.replace("ngram 1=4", "ngram one=4"), 2, "ngram N=COUNT"),
    (lambda t: t.replace("-0.1\ta </s>", "-0.2\t<s> a"), 13, "listed twice"),
    (lambda t: t.replace("-0.5\t</s>\t0", "0.5\t</s>\t0"), 8, "<= 0"),
])
def test_bad_arpa_raises_corpus_error_with_line(tmp_path, edit, line, message):
    path = tmp_path / "bad.arpa"
    path.write_text(edit(GOOD_ARPA))
    with pytest.raises(CorpusError) as err:
        load_arpa(path)
    assert err.value.line == line and message in err.value.message, str(err.value)


def test_a_file_named_arpa_without_its_header_is_refused_not_scored_as_text(tmp_path):
    """`lm score --arpa bad.arpa` read a damaged ARPA file as a corpus and gave a perplexity of its words."""
    from core.lm.ngram import lm_from

    path = tmp_path / "cut.arpa"
    path.write_text("garbage\n")
    with pytest.raises(UserError, match="named .arpa but has no .*header"):
        lm_from(path)


def test_good_arpa_loads_and_missing_context_is_reported(tmp_path):
    path = tmp_path / "ok.arpa"
    path.write_text(GOOD_ARPA)
    lm = load_arpa(path)
    assert lm.score_sentences([["a"]]).log10_prob[0] == pytest.approx(-0.2 - 0.1)
    tri = GOOD_ARPA.replace("ngram 2=2", "ngram 2=2\nngram 3=1").replace("\\end\\", "\\3-grams:\n-0.1\ta a </s>\n\n\\end\\")
    path.write_text(tri)
    with pytest.raises(CorpusError, match="context of 'a a </s>'"):
        load_arpa(path)


# --------------------------------------------------------------------------- CLI


def test_cli_lm_build_and_score(tmp_path, capsys):
    import json

    train = tmp_path / "train.txt"
    train.write_text("\n".join(" ".join(s) for s in random_corpus(100, seed=11)) + "\n")
    test = tmp_path / "test.txt"
    test.write_text("w0 w1 w2\nw3 nope\n")
    arpa = tmp_path / "lm.arpa"
    assert main(["lm", "build", str(train), "--order", "3", "--arpa", str(arpa)]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["order"] == 3 and len(built["ngrams"]) == 3
    out = tmp_path / "scores.jsonl"
    assert main(["lm", "score", "--arpa", str(arpa), str(test), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert summary["sentences"] == 2 and [r["tokens"] for r in rows] == [4, 3] and rows[1]["oov"] == 1
    # --arpa may be a corpus: trained on the fly, same numbers as the written model
    assert main(["lm", "score", "--arpa", str(train), str(test)]) == 0
    again = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["log10_prob"] for r in again] == pytest.approx([r["log10_prob"] for r in rows], rel=1e-12)


def test_cli_bad_arpa_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.arpa"
    bad.write_text(GOOD_ARPA.replace("-0.4\ta\t-0.2", "oops\ta\t-0.2"))
    (tmp_path / "t.txt").write_text("a\n")
    assert main(["lm", "score", "--arpa", str(bad), str(tmp_path / "t.txt")]) == 2
    assert f"{bad}:9:" in capsys.readouterr().err


def test_nltk_reference_counts_agree_on_unigram_level():
    """Guard for the NLTK comparison above: NLTK's unigram is continuation count / total."""
    corpus = [["a", "b"], ["b", "a"], ["a", "a"]]
    lm = build_lm(corpus, order=2, discounts=[0.0, 0.1])
    cont = defaultdict(set)
    for s in corpus:
        toks = ["<s>", *s, "</s>"]
        for x, y in zip(toks, toks[1:]):
            cont[y].add(x)
    total = sum(len(v) for v in cont.values())
    uni = 10 ** lm.next_word_log10([])
    for w, left in cont.items():
        assert uni[lm.vocab.index[w]] == pytest.approx(len(left) / total)
