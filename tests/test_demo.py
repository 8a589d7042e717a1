"""The generated demo data set: deterministic, multi-domain, valid BIO, sane density, idempotent on disk."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from core.data.corpus import Corpus
from core.data.demo import DOMAINS, DemoData, domain_entity_types, ensure_demo_workspace, generate_demo, write_demo_workspace
from core.data.tags import TagScheme, detect_scheme, spans_from_tags, validate_tags
from core.data.workspace import CorpusRole, Workspace
from core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
DEMO_NAMES = {CorpusRole.TC: "demo-tc", CorpusRole.DC: "demo-dc", CorpusRole.LC: "demo-lc", CorpusRole.DEV: "demo-dev",
              CorpusRole.TEST: "demo-test"}


@pytest.fixture(scope="module")
def demo() -> DemoData:
    return generate_demo()  # how long it takes is a benchmark's question, not a test's


def _digest(d: DemoData) -> str:
    h = hashlib.sha256()
    for corpus in d.by_role().values():
        for rec in corpus.records():
            h.update(repr(sorted(rec.items())).encode())
    return h.hexdigest()


def _labeled(d: DemoData) -> list[Corpus]:
    return [d.lc, d.dev, d.test]


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_output_and_other_seed_differs():
    a, b = generate_demo(seed=5, dc_size=800), generate_demo(seed=5, dc_size=800)
    assert _digest(a) == _digest(b)
    c = generate_demo(seed=6, dc_size=800)
    assert _digest(c) != _digest(a)
    assert a.lc.texts() != c.lc.texts()


def test_output_does_not_depend_on_hash_seed_or_global_random():
    import random

    random.seed(0)
    here = _digest(generate_demo(seed=3, dc_size=300))
    random.seed(1)
    assert _digest(generate_demo(seed=3, dc_size=300)) == here
    code = ("from core.data.demo import generate_demo; from tests.test_demo import _digest; "
            "print(_digest(generate_demo(seed=3, dc_size=300)))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == here


# --------------------------------------------------------------------------- shape


def test_sizes_roles_and_fields(demo):
    assert demo.target_domain == "music"
    assert len(demo.dc) == 6000 and len(demo.tc) == 400
    assert (len(demo.lc), len(demo.dev), len(demo.test)) == (150, 150, 200)
    assert not demo.dc.labeled and not demo.tc.labeled
    assert all(c.labeled for c in _labeled(demo))
    for role, corpus in demo.by_role().items():
        assert {"id", "domain"} <= set(corpus.fields), role
        ids = corpus.fields["id"]
        assert len(set(ids)) == len(ids)
        assert all(re.fullmatch(rf"{role.value}-\d{{6}}", i) for i in ids), ids[:3]
    assert demo.dc.fields["id"][123] == "dc-000123"
    for corpus in (demo.tc, *_labeled(demo)):
        assert set(corpus.fields["domain"]) == {"music"}


def test_dc_mixes_all_domains_in_roughly_equal_shares(demo):
    shares = Counter(demo.dc.fields["domain"])
    assert set(shares) == set(DOMAINS) and len(shares) >= 4
    for domain, n in shares.items():
        assert abs(n / len(demo.dc) - 1 / len(DOMAINS)) < 0.03, (domain, n)


def test_sentence_lengths_and_tokenization(demo):
    for corpus in demo.by_role().values():
        for toks in corpus.tokens:
            assert 6 <= len(toks) <= 40
            assert toks[-1] == "."
            assert toks[0][:1].isupper() or toks[0][:1].isdigit(), toks
            for tok in toks:
                assert tok and not any(ch.isspace() for ch in tok)
                # punctuation is its own token: "Paris ," never "Paris,"; "K." (an initial) is the one exception
                assert len(tok) == 1 or not re.search(r"[,;:!?()]$", tok), tok
                assert len(tok) == 1 or not tok.endswith(".") or re.fullmatch(r"[A-Z]\.", tok), tok
            lowered = [t.lower() for t in toks]
            assert not any(a == b and a in ("the", "a", "an", ",") for a, b in zip(lowered, lowered[1:])), toks
    mean_len = sum(map(len, demo.dc.tokens)) / len(demo.dc)
    assert 12 <= mean_len <= 35


def test_dc_has_few_duplicates_and_test_text_is_not_leaked(demo):
    dc_texts = demo.dc.texts()
    assert len(set(dc_texts)) / len(dc_texts) > 0.9
    test_texts = set(demo.test.texts())
    assert len(test_texts) == len(demo.test)
    for other in (demo.lc, demo.dev, demo.tc, demo.dc):
        assert not test_texts & set(other.texts()), other.name
    others = demo.lc.texts() + demo.dev.texts() + demo.tc.texts()
    assert len(set(others)) == len(others)


# --------------------------------------------------------------------------- labels


def test_tags_are_valid_bio(demo):
    for corpus in _labeled(demo):
        assert detect_scheme(corpus.tags) == TagScheme.BIO
        for toks, tags in zip(corpus.tokens, corpus.tags):
            assert len(toks) == len(tags)
            assert validate_tags(tags, TagScheme.BIO) == [], list(zip(toks, tags))


def test_entity_density_is_realistic(demo):
    for corpus in _labeled(demo):
        spans = [spans_from_tags(t) for t in corpus.tags]
        per_sentence = [len(s) for s in spans]
        mean = sum(per_sentence) / len(corpus)
        assert 1.0 <= mean <= 6.0, (corpus.name, mean)
        assert 0 < per_sentence.count(0) < 0.3 * len(corpus)  # some sentences have no entity at all
        lengths = Counter(s.end - s.start for ss in spans for s in ss)
        assert lengths[1] and lengths[2] and sum(n for k, n in lengths.items() if k >= 3)  # multi-token names too
    lc_types = {s.type for tags in demo.lc.tags for s in spans_from_tags(tags)}
    assert len(lc_types) >= 5
    assert {"musicalartist", "band", "song", "album"} <= lc_types


def test_each_domain_has_its_own_entity_types():
    types = {d: set(domain_entity_types(d)) for d in DOMAINS}
    assert len(DOMAINS) >= 4
    for d in DOMAINS:
        assert len(types[d]) >= 8, d
        assert types[d] - set().union(*(types[o] for o in DOMAINS if o != d)), f"{d} has no type of its own"
    for d in DOMAINS:
        data = generate_demo(seed=1, target_domain=d, dc_size=20, tc_size=20, lc_size=60, dev_size=10, test_size=10)
        seen = {s.type for tags in data.lc.tags for s in spans_from_tags(tags)}
        assert seen <= types[d], (d, seen - types[d])
        assert len(seen) >= 5, (d, seen)
        assert set(data.lc.fields["domain"]) == {d}


def test_unknown_domain_is_a_user_error():
    with pytest.raises(UserError, match="music"):
        generate_demo(target_domain="cooking")


# --------------------------------------------------------------------------- workspace


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_write_demo_workspace_is_idempotent(tmp_path):
    ws = write_demo_workspace(tmp_path, seed=13, dc_size=500)
    assert isinstance(ws, Workspace)
    assert ws.roles() == DEMO_NAMES
    settings = ws.settings()
    assert settings.target_domain == "music" and settings.demo_seed == 13
    infos = {i.name: i for i in ws.list_corpora()}
    assert set(infos) == set(DEMO_NAMES.values())
    assert all(i.source == "demo (seed 13)" for i in infos.values())
    assert infos["demo-dc"].sentences == 500 and not infos["demo-dc"].labeled
    assert infos["demo-lc"].labeled and infos["demo-lc"].tag_scheme == "bio"
    loaded = ws.load_corpus("demo-dc")
    assert set(loaded.fields) >= {"id", "domain"} and len(set(loaded.fields["domain"])) == len(DOMAINS)

    before = _snapshot(tmp_path)
    write_demo_workspace(tmp_path, seed=13, dc_size=500)
    assert _snapshot(tmp_path) == before

    # With the record of the demo gone, saving again stores byte-identical corpora.
    ws.update_settings(demo=None)
    write_demo_workspace(tmp_path, seed=13, dc_size=500)
    after = _snapshot(tmp_path)
    assert {k: v[1] for k, v in after.items() if k.endswith(".parquet")} == \
           {k: v[1] for k, v in before.items() if k.endswith(".parquet")}
    assert Workspace(tmp_path).roles() == DEMO_NAMES


def test_write_demo_workspace_replaces_an_older_demo_but_not_user_data(tmp_path):
    write_demo_workspace(tmp_path, seed=13, dc_size=200)
    ws = write_demo_workspace(tmp_path, seed=14, dc_size=200)
    assert {i.source for i in ws.list_corpora()} == {"demo (seed 14)"}
    assert ws.settings().demo_seed == 14

    other = tmp_path / "other"
    ws = Workspace(other)
    ws.save_corpus(Corpus(tokens=[["my", "own", "data"]], tags=[["O", "O", "O"]]), "demo-lc", source="upload")
    with pytest.raises(UserError, match="demo-lc"):
        write_demo_workspace(other, dc_size=200)


def test_ensure_demo_workspace_only_fills_an_empty_workspace(tmp_path):
    empty = tmp_path / "empty"
    ws = ensure_demo_workspace(empty)
    assert set(ws.roles()) == set(CorpusRole)
    assert ws.corpus_info("demo-dc").sentences >= 5000

    used = tmp_path / "used"
    ws = Workspace(used)
    ws.save_corpus(Corpus(tokens=[["Paris", "is", "nice"]]), "mine", role=CorpusRole.TC)
    ensure_demo_workspace(used)
    assert [i.name for i in Workspace(used).list_corpora()] == ["mine"]
