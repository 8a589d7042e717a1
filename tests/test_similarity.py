"""Similarity measures: boundary values, WVV properties, size control, CrossNER ranking,
workspace cache, the job, F1 correlation, CLI and the page."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from core.cli import main
from core.data.corpus import read_corpus
from core.data.workspace import Workspace
from core.errors import UserError
from core.runner import jobs, jobstore
from core.similarity.correlation import correlate_with_f1, finished_f1_runs
from core.similarity.matrix import similarity_matrix
from core.similarity.matrix_result import SimilarityMatrix
from core.similarity.measures import (
    SimilarityParams,
    compare_corpora,
    ngram_jsd,
    sample_subcorpora,
    train_word_vectors,
    type_token_ratio,
    word_vector_variance,
)
from tests.apptest import open_app

FAST = ("tvc", "tvcc", "ppl", "jsd", "ttr")


def topic_corpus(n: int, seed: int, prefix: str = "t") -> list[list[str]]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnop"
    topics = [[f"{prefix}{letters[k]}w{letters[i]}" for i in range(15)] for k in range(4)]
    func = ["the", "of", "a", "in", "and"]
    out = []
    for _ in range(n):
        topic = rng.choice(topics)
        out.append([rng.choice(topic) if rng.random() < 0.7 else rng.choice(func) for _ in range(rng.randint(6, 14))])
    return out


def test_identical_corpora_tvc_one_jsd_zero():
    corpus = topic_corpus(100, 0)
    r = compare_corpora(corpus, [list(s) for s in corpus], SimilarityParams(measures=FAST, tvcc_method="approx"))
    assert r["tvc"] == 1.0 and r["tvcc"] == 1.0 and r["jsd"] == pytest.approx(0.0, abs=1e-12)
    assert r["ttr_source"] == r["ttr_target"] and "approximation" in r["tvcc_method"]


def test_disjoint_vocabularies_tvc_zero_jsd_one():
    a, b = topic_corpus(50, 1, "x"), [[w.upper() for w in s] for s in topic_corpus(50, 2, "y")]
    r = compare_corpora(a, b, SimilarityParams(measures=("tvc", "tvcc", "jsd"), tvcc_method="approx"))
    assert r["tvc"] == 0.0 and r["tvcc"] == 0.0 and r["jsd"] == pytest.approx(1.0)


def test_jsd_hand_value_and_symmetry():
    # source terms a, b, "a b" (1/3 each); target a, c, "a c": shared mass 1/3 -> JSD = 2/3
    assert ngram_jsd([["a", "b"]], [["a", "c"]]) == pytest.approx(2 / 3)
    x, y = topic_corpus(40, 3), topic_corpus(40, 4)
    assert ngram_jsd(x, y) == pytest.approx(ngram_jsd(y, x))
    assert 0 < ngram_jsd(x, y) < 1


def test_ttr_and_content_words():
    assert type_token_ratio([["a", "b"], ["a"]]) == pytest.approx(2 / 3)
    r = compare_corpora([["the", "guitar", "of", "London"]], [["the", "guitar", "in", "Paris"]],
                        SimilarityParams(measures=("tvc", "tvcc"), tvcc_method="approx"))
    assert r["tvc"] == pytest.approx(2 / 4) and r["tvcc"] == pytest.approx(1 / 2)  # content words: guitar, Paris


def test_wvv_is_deterministic_and_zero_for_a_target_sharing_no_words():
    """WVV over *all source* words (the paper's literal form): words absent from the target keep
    their vectors, so a target with no shared word gives exactly 0; over shared words it is undefined."""
    src = topic_corpus(300, 0)
    params = SimilarityParams(measures=("wvv",))
    model = train_word_vectors(src, params)
    same = word_vector_variance(model, src, "source")
    assert same == word_vector_variance(train_word_vectors(src, params), src, "source") > 0
    disjoint = [[w.upper() for w in s] for s in topic_corpus(300, 1)]
    assert word_vector_variance(model, disjoint, "source") == 0.0
    assert np.isnan(word_vector_variance(model, disjoint, "shared"))
    assert 0 < word_vector_variance(model, topic_corpus(300, 7)) < 1


def test_wvv_of_a_corpus_against_itself_is_smaller_than_against_an_unrelated_one(crossner):
    music = read_corpus(crossner("music", "train")).tokens + read_corpus(crossner("music", "dev")).tokens
    politics = read_corpus(crossner("politics", "test")).tokens
    model = train_word_vectors(music, SimilarityParams(measures=("wvv",)))
    assert word_vector_variance(model, music) < word_vector_variance(model, politics)


def test_subsampling_sizes_and_averaging():
    corpus = topic_corpus(400, 5)
    samples = sample_subcorpora(corpus, 1000, k=3, seed=1)
    assert len(samples) == 3
    for s in samples:
        n = sum(map(len, s))
        assert 1000 <= n < 1000 + 14
    assert samples == sample_subcorpora(corpus, 1000, k=3, seed=1) and samples[0] != samples[1]
    assert sample_subcorpora(corpus, 10**9, k=3) == [corpus]  # smaller than asked: used whole, once
    r = compare_corpora(corpus, topic_corpus(50, 6), SimilarityParams(measures=("tvc", "ppl"), subsample_tokens=1000, subsample_k=3))
    assert r["samples"] == 3 and "tvc_std" in r and "ppl_std" in r and 1000 <= r["source_tokens"] < 1014


def test_bad_parameters_are_user_errors():
    with pytest.raises(UserError, match="unknown measure"):
        SimilarityParams(measures=("tvc", "bleu"))
    with pytest.raises(UserError, match="order"):
        SimilarityParams(order=9)
    with pytest.raises(UserError, match="tokens"):
        compare_corpora([[]], [["a"]])


def test_crossner_own_domain_is_most_similar_source(crossner):
    """Each domain's train+dev must be the most similar source for its test set by PPL, JSD and TVC."""
    domains = ["ai", "literature", "music", "politics", "science"]
    sources = {d: read_corpus(crossner(d, "train")).tokens + read_corpus(crossner(d, "dev")).tokens for d in domains}
    params = SimilarityParams(measures=("tvc", "ppl", "jsd"))
    for target_domain in domains:
        target = read_corpus(crossner(target_domain, "test")).tokens
        scores = {d: compare_corpora(sources[d], target, params) for d in domains}
        assert max(domains, key=lambda d: scores[d]["tvc"]) == target_domain
        assert min(domains, key=lambda d: scores[d]["ppl"]) == target_domain
        assert min(domains, key=lambda d: scores[d]["jsd"]) == target_domain
        assert min(domains, key=lambda d: scores[d]["ppl_sum"]) == target_domain


# --------------------------------------------------------------------------- workspace: matrix, cache, job


@pytest.fixture
def small_ws(tmp_path):
    ws = Workspace(tmp_path / "ws")
    for name, corpus, role in (("tc", topic_corpus(80, 1), "tc"), ("dc", topic_corpus(300, 2) + topic_corpus(100, 3, "z"), "dc"),
                               ("other", topic_corpus(120, 4, "q"), None)):
        path = tmp_path / f"{name}.txt"
        path.write_text("\n".join(" ".join(s) for s in corpus) + "\n")
        ws.import_corpus(path, role=role, name=name)
    return ws


def test_an_empty_corpus_is_refused_before_any_measure(small_ws):
    """Found in review: a 0-token corpus (a workspace accepts one) made TVC NaN and cached, then JSD failed the job."""
    from core.data.corpus import Corpus

    small_ws.save_corpus(Corpus(tokens=[[]]), "empty")
    with pytest.raises(UserError, match="'empty' holds no tokens"):
        similarity_matrix(small_ws, ["dc", "empty"], ["tc"], SimilarityParams(measures=FAST, tvcc_method="approx"))
    assert not (small_ws.root / "artifacts" / "similarity").exists()


def test_the_subsample_note_names_sources_used_whole(small_ws):
    """Found in review: the page said every source was sub-sampled to N tokens; smaller ones entered whole."""
    from core.similarity.matrix import subsample_note

    n = small_ws.corpus_info("other").tokens + 1
    result = similarity_matrix(small_ws, ["dc", "other"], ["tc"],
                               SimilarityParams(measures=("tvc",), subsample_tokens=n, subsample_k=2))
    assert subsample_note(small_ws, result) == (f"Sources sub-sampled to {n:,} tokens, 2x, averaged; other has fewer "
                                                "tokens and entered whole, once.")


def test_matrix_is_cached_per_measure(small_ws):
    params = SimilarityParams(measures=FAST, tvcc_method="approx")
    said: list[tuple[float, str]] = []
    first = similarity_matrix(small_ws, ["dc", "other"], ["tc"], params, progress=lambda f, m: said.append((f, m)))
    assert first.computed == 2 * 4 and first.cached == 0
    # inside a pair the bar hears each measure (an LM on a big DC took minutes at 0%), and never runs back
    assert any(m.startswith("dc → tc, sample 1/1: ppl (") for _, m in said) and [f for f, _ in said] == sorted(f for f, _ in said)
    assert first.values["tvc"][0][0] > first.values["tvc"][1][0]  # dc shares tc's topics, other does not
    again = similarity_matrix(small_ws, ["dc", "other"], ["tc"], params)
    assert again.cached == 8 and again.computed == 0 and again.values == first.values
    new_order = similarity_matrix(small_ws, ["dc", "other"], ["tc"], SimilarityParams(measures=FAST, tvcc_method="approx", order=2))
    assert new_order.computed == 2 and new_order.cached == 6  # only PPL depends on the order
    assert set(first.ttr) == {"dc", "other", "tc"}


def test_similarity_job_inline_with_histogram(small_ws):
    result = jobs.run_inline(small_ws, "similarity", {"sources": ["dc"], "targets": ["tc", "other"], "measures": ["tvc", "ppl"],
                                                      "histogram": {"tc": "tc", "dc": "dc"}})
    hist = result["histogram"]
    assert hist["sentences"] == 400 and sum(hist["counts"]) == 400
    ppl = np.load(hist["path"])
    assert len(ppl) == 400 and hist["median"] == pytest.approx(float(np.median(ppl)))
    # sentences of tc's topics score lower perplexity under the TC model than the "z" ones
    assert np.median(ppl[:300]) < np.median(ppl[300:])
    assert json.loads(json.dumps(result)) == result


# --------------------------------------------------------------------------- F1 correlation


MATRIX = SimilarityMatrix(sources=["s1", "s2", "s3", "s4"], targets=["t"], measures=["tvc", "ppl"],
                          values={"tvc": [[0.1], [0.2], [0.3], [0.4]], "ppl": [[400.0], [300.0], [200.0], [100.0]]})


def test_correlate_with_f1_gain_and_pearson():
    runs = [{"source": None, "f1": 0.5}, {"source": None, "f1": 0.52}]
    runs += [{"source": f"s{i}", "f1": 0.5 + 0.02 * i + d} for i in range(1, 5) for d in (-0.001, 0.001)]  # two seeds each
    out = correlate_with_f1(runs, MATRIX, "t")
    assert out["y_label"] == "F1 gain" and out["baseline_f1"] == pytest.approx(0.51)
    assert [p["runs"] for p in out["points"]] == [2, 2, 2, 2]
    assert out["points"][0]["y"] == pytest.approx(0.52 - 0.51)
    assert out["points"][0]["y_err"] == pytest.approx(0.001 * 2 ** 0.5)  # std of the two seeds
    assert out["measures"]["tvc"]["r"] == pytest.approx(1.0) and out["measures"]["ppl"]["r"] == pytest.approx(-1.0)
    few = correlate_with_f1([{"source": "s1", "f1": 0.6}, {"source": "s2", "f1": 0.7}], MATRIX, "t")
    assert few["y_label"] == "F1" and few["measures"]["tvc"]["r"] is None and "at least 3" in few["measures"]["tvc"]["reason"]
    with pytest.raises(UserError):
        correlate_with_f1(runs, MATRIX, "nope")
    # found in review: runs were matched to a source by name only, so F1 of runs pretrained on what s1 held before a
    # re-import was plotted against s1's new measures
    hashed = SimilarityMatrix(sources=MATRIX.sources, targets=MATRIX.targets, measures=MATRIX.measures, values=MATRIX.values,
                              hashes={"s1": "new"})
    old = [{**r, "source_hash": "old" if r["source"] == "s1" else None} for r in runs]
    out = correlate_with_f1(old, hashed, "t")
    assert out["left_out"] == 2 and [p["source"] for p in out["points"]] == ["s2", "s3", "s4"]
    assert correlate_with_f1([{**r, "source_hash": "new"} for r in runs], hashed, "t")["left_out"] == 0


def test_finished_f1_runs_read_from_the_run_index(tmp_path):
    from core.train.lineage import Lineage, MlmPhase, record_run

    ws = Workspace(tmp_path / "ws")
    pretrained = Lineage(mlm_phases=[MlmPhase("source", [{"name": "dc", "hash": "ab"}])])
    record_run(ws, "r1", "ner", pretrained, f1=0.7)
    record_run(ws, "r2", "ner", Lineage(), f1=0.6)
    record_run(ws, "r3", "ner", pretrained, f1=None)  # unfinished: no F1 yet
    record_run(ws, "r4", "mlm", pretrained)
    runs = sorted(finished_f1_runs(ws), key=lambda r: r["f1"])
    assert [(r["source"], r["f1"]) for r in runs] == [(None, 0.6), ("dc", 0.7)]


# --------------------------------------------------------------------------- CLI and page


def test_cli_similarity_json(tmp_path, capsys):
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt"
    src.write_text("\n".join(" ".join(s) for s in topic_corpus(60, 1)) + "\n")
    tgt.write_text("\n".join(" ".join(s) for s in topic_corpus(30, 2)) + "\n")
    assert main(["similarity", "--source", str(src), "--target", str(tgt), "--json", "--measures", "tvc,tvcc,ppl,jsd,ttr"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"tvc", "tvcc", "ppl", "ppl_sum", "jsd", "ttr_source", "ttr_target", "tvcc_method"} <= set(out)
    assert main(["similarity", "--source", str(src), "--target", str(tmp_path / "missing.txt"), "--json"]) == 2


def test_similarity_page_renders_results_and_f1_panel(tmp_path, monkeypatch):

    from core.data.demo import write_demo_workspace

    ws = write_demo_workspace(tmp_path / "demo")
    roles = {r.value: n for r, n in ws.roles().items()}
    params = {"sources": [roles["dc"], roles["lc"], roles["dev"]], "targets": [roles["tc"]], "measures": ["tvc", "ppl", "jsd", "ttr"],
              "histogram": {"tc": roles["tc"], "dc": roles["dc"]}}
    result = jobs.run_inline(ws, "similarity", params)
    job = jobs.submit(ws, "similarity", {"sources": [], "targets": []}, start=False)
    jobstore.update(ws, job.id, status="done", progress=1.0, result=json.dumps(result))
    from core.train.lineage import CorpusStamp, Lineage, MlmPhase, record_run

    def h(name: str) -> str:  # what a run records of the corpus it pretrained on (a run of other contents is left out)
        return ws.corpus_info(name).hash

    for i, (source, f1) in enumerate(((None, 0.5), (roles["dc"], 0.6), (roles["lc"], 0.55), (roles["dev"], 0.58))):
        phases = [MlmPhase("source", [{"name": source, "hash": h(source)}])] if source else []
        record_run(ws, f"ner-{i}", "ner", Lineage(mlm_phases=phases), f1=f1)
    record_run(ws, "ner-dc-seed2", "ner", Lineage(mlm_phases=[MlmPhase("source", [{"name": roles["dc"], "hash": h(roles["dc"])}])]),
               f1=0.64)
    at = open_app(ws.root, monkeypatch, "views/similarity.py")
    assert any("Pearson r" in str(getattr(e, "proto", "")) for e in at.get("plotly_chart"))
    assert not any("needs finished NER runs" in i.value for i in at.info)
    charts = [str(getattr(e, "proto", "")) for e in at.get("plotly_chart") if "Pearson r" in str(getattr(e, "proto", ""))]
    assert charts and all("error_y" in c for c in charts)  # the DC source has two seeds that differ: error bars
    assert at.selectbox(key="sim_f1_target").label.startswith("Similarity target")  # not "evaluated on": that is TEST

    # runs on an LC subset (an experiment's LC-size sweep) are another group: gains never mix the two
    subset = CorpusStamp(roles["lc"], "h", sentences=10, of=150)
    for i, (source, f1) in enumerate(((None, 0.2), (roles["dc"], 0.3), (roles["lc"], 0.25), (roles["dev"], 0.4))):
        phases = [MlmPhase("source", [{"name": source, "hash": h(source)}])] if source else []
        record_run(ws, f"ner-sub-{i}", "ner", Lineage(mlm_phases=phases, lc=subset), f1=f1)
    at = open_app(ws.root, monkeypatch, "views/similarity.py")
    groups = at.selectbox(key="sim_f1_data").options
    assert len(groups) == 2 and any("(10 of 150)" in g for g in groups)
    at.selectbox(key="sim_f1_data").select(next(g for g in groups if "(10 of 150)" in g)).run()
    assert not at.exception and any("baseline F1 0.2000" in c.value for c in at.caption)


def test_the_measure_settings_are_declared_once():
    """SimilarityParams (validated, hashable) carries exactly the job's measure settings, with the job's defaults."""
    import dataclasses

    from core.runner.params import SimilarityJobParams, field_default

    settings = {f.name for f in dataclasses.fields(SimilarityParams)}
    assert settings == {f.name for f in dataclasses.fields(SimilarityJobParams)} - {"sources", "targets", "histogram"}
    for name in settings:
        job = field_default(SimilarityJobParams, name)
        assert getattr(SimilarityParams(), name) == (tuple(job) if isinstance(job, list) else job), name


def test_measure_settings_are_refused_at_submit_naming_the_field():
    """An unknown measure, a JSD order of 9 or a misspelt TVcC method were taken at submit and failed once the job had
    read its corpora, the order message naming `order` for a bad `jsd_order`."""
    from core.runner.kinds import validate
    from core.runner.params import SIMILARITY_MEASURES
    from core.similarity.measures import MEASURES

    assert tuple(MEASURES) == SIMILARITY_MEASURES
    base = {"sources": ["a"], "targets": ["b"]}
    for bad, said in (({"measures": ["tvc", "bogus"]}, "unknown measure.*bogus"), ({"jsd_order": 9}, "jsd_order: n-gram order"),
                      ({"order": 12}, "order: n-gram order"), ({"tvcc_method": "spcy"}, "tvcc method"),
                      ({"wvv_words": "x"}, "wvv_words"), ({"measures": "tvc, nope"}, "unknown measure.*nope")):
        with pytest.raises(UserError, match=said):
            validate("similarity", {**base, **bad})
    assert validate("similarity", {**base, "measures": "TVC, jsd"}).measures == "TVC, jsd"  # normalised by the job


def test_wvv_with_no_word_at_its_minimum_count_says_so():
    from core.similarity.measures import SimilarityParams, compare_corpora

    with pytest.raises(UserError, match="no word of the source occurs 2 times .*lower wvv_min_count"):
        compare_corpora([["a", "b", "c"]], [["a", "b"]], SimilarityParams(measures=("wvv",), wvv_min_count=2))
