"""Issue 47: agreement checked against an independent, brute-force computation on random annotation pairs
(hypothesis), entity-free sentences, one-token entities, identical annotations and empty files included."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli import main
from core.data.tags import Span, spans_from_tags
from core.team.agreement import agreement, agreement_files

TYPES = ["PER", "LOC", "ORG"]


@st.composite
def annotation(draw, n: int) -> list[Span]:
    """Non-overlapping spans over n tokens, as one annotator's BIO tags give them (one-token spans common)."""
    spans, pos = [], 0
    while pos < n:
        pos += draw(st.integers(0, 2))
        if pos >= n:
            break
        length = draw(st.integers(1, min(3, n - pos)))
        spans.append(Span(pos, pos + length, draw(st.sampled_from(TYPES))))
        pos += length
    return spans[:4]  # brute force below enumerates matchings


@st.composite
def pairs(draw) -> list[tuple[list[Span], list[Span], int]]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 8))
        out.append((draw(annotation(n)), draw(annotation(n)), n))
    return out


def _overlap(a: Span, b: Span) -> bool:
    return max(a.start, b.start) < min(a.end, b.end)


CREDIT = {
    "f1_exact": lambda a, b: float(a == b),
    "f1_boundary": lambda a, b: float((a.start, a.end) == (b.start, b.end)),
    "f1_partial": lambda a, b: 1.0 if (a.start, a.end) == (b.start, b.end) else (0.5 if _overlap(a, b) else 0.0),
    "f1_type": lambda a, b: float(a.type == b.type and _overlap(a, b)),
}


def best_matching(a: list[Span], b: list[Span], credit) -> float:
    """Every one-to-one matching, enumerated: the most credit any of them collects."""
    if len(a) > len(b):
        a, b = b, a
    best = 0.0
    for chosen in itertools.permutations(range(len(b)), len(a)):
        best = max(best, sum(credit(x, b[j]) for x, j in zip(a, chosen)))
    return best


def reference_f1(ps, credit) -> float:
    total = sum(len(a) + len(b) for a, b, _ in ps)
    return 1.0 if total == 0 else 2 * sum(best_matching(a, b, credit) for a, b, _ in ps) / total


def reference_kappa(ps, bio: bool = False) -> float:
    la, lb = [], []
    for a, b, n in ps:
        for spans, out in ((a, la), (b, lb)):
            labels = ["O"] * n
            for s in spans:
                for i in range(s.start, s.end):
                    labels[i] = (("B-" if i == s.start else "I-") + s.type) if bio else s.type
            out.extend(labels)
    if la == lb:
        return 1.0
    total = len(la)
    po = sum(x == y for x, y in zip(la, lb)) / total
    ca, cb = Counter(la), Counter(lb)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / total**2
    return (po - pe) / (1 - pe)


@settings(max_examples=300, deadline=None)
@given(pairs())
def test_agreement_matches_brute_force(ps):
    r = agreement(ps)
    for key, credit in CREDIT.items():
        assert r[key] == pytest.approx(reference_f1(ps, credit), abs=1e-6), key
    assert r["kappa_token"] == pytest.approx(reference_kappa(ps), abs=1e-6)
    assert r["kappa_bio"] == pytest.approx(reference_kappa(ps, bio=True), abs=1e-6)
    for t, row in r["per_type"].items():
        only = [([s for s in a if s.type == t], [s for s in b if s.type == t], n) for a, b, n in ps]
        assert row["f1_exact"] == pytest.approx(reference_f1(only, CREDIT["f1_exact"]), abs=1e-6)
        assert row["f1_partial"] == pytest.approx(reference_f1(only, CREDIT["f1_partial"]), abs=1e-6)
        assert row["support"] == sum(s.type == t for a, b, _ in ps for s in (*a, *b))
    # the confusion table counts every span once: same boundaries pair up, the rest meet "—"
    cells = r["confusion"]
    same = sum(len({(s.start, s.end) for s in a} & {(s.start, s.end) for s in b}) for a, b, _ in ps)
    assert sum(v for row in cells.values() for v in row.values()) == sum(len(a) + len(b) for a, b, _ in ps) - same
    assert all(list(row) == list(next(iter(cells.values()))) for row in cells.values())  # one column order


@settings(max_examples=200, deadline=None)
@given(pairs())
def test_agreement_is_symmetric_and_identical_annotations_agree(ps):
    r, swapped = agreement(ps), agreement([(b, a, n) for a, b, n in ps])
    for key in ("f1_exact", "f1_boundary", "f1_partial", "f1_type", "kappa_token", "kappa_bio"):
        assert r[key] == pytest.approx(swapped[key], abs=1e-6), key
    same = agreement([(a, a, n) for a, _, n in ps])
    assert all(same[k] == 1.0 for k in ("f1_exact", "f1_boundary", "f1_partial", "f1_type", "kappa_token", "kappa_bio"))


def test_bio_kappa_sees_a_split_span_that_type_kappa_cannot():
    """One PER span over tokens 0-3 against two adjacent PER spans (0-2, 2-4): every token has the same type, so type
    kappa is 1.0 while exact F1 is 0; the BIO tags differ at token 2 (I-PER against B-PER)."""
    r = agreement([([Span(0, 4, "PER")], [Span(0, 2, "PER"), Span(2, 4, "PER")], 6)])
    assert r["f1_exact"] == 0.0 and r["kappa_token"] == 1.0 and r["kappa_bio"] < 0.8


def test_sentences_without_entities(tmp_path, capsys):
    """The issue's files: one entity against none is F1 0.0, exit 0; none against none agrees completely; an
    entity-free first sentence (what broke nervaluate) is fine."""
    (tmp_path / "a.conll").write_text("Paris\tO\nis\tO\nnice\tO\n.\tO\n\n")
    (tmp_path / "b.conll").write_text("Paris\tB-LOC\nis\tO\nnice\tO\n.\tO\n\n")
    assert main(["agreement", str(tmp_path / "a.conll"), str(tmp_path / "b.conll"), "--json"]) == 0
    import json

    printed = json.loads(capsys.readouterr().out)
    assert printed["f1_exact"] == 0.0 and printed["f1_partial"] == 0.0
    assert agreement_files(tmp_path / "a.conll", tmp_path / "a.conll")["f1_exact"] == 1.0
    nothing = agreement([([], [], 3), ([], [], 2)])
    assert nothing["f1_exact"] == nothing["kappa_token"] == 1.0 and nothing["per_type"] == {} and nothing["confusion"] == {}
    first_empty = agreement([([], [], 2), ([Span(0, 1, "PER")], [Span(0, 1, "PER")], 2)])
    assert first_empty["f1_exact"] == 1.0


def test_empty_files_are_a_clear_error(tmp_path, capsys):
    (tmp_path / "a.conll").write_text("")
    (tmp_path / "b.conll").write_text("")
    assert main(["agreement", str(tmp_path / "a.conll"), str(tmp_path / "b.conll"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "a.conll" in err and "no sentences" in err and "Traceback" not in err


def test_spans_from_bio_give_the_same_answer_as_the_files(tmp_path):
    a = ["B-PER", "O", "B-LOC", "I-LOC", "O"]
    b = ["B-PER", "O", "B-LOC", "O", "B-ORG"]
    toks = ["x"] * 5
    (tmp_path / "a.conll").write_text("".join(f"{t}\t{g}\n" for t, g in zip(toks, a)) + "\n")
    (tmp_path / "b.conll").write_text("".join(f"{t}\t{g}\n" for t, g in zip(toks, b)) + "\n")
    direct = agreement([(spans_from_tags(a, "BIO"), spans_from_tags(b, "BIO"), 5)])
    assert agreement_files(tmp_path / "a.conll", tmp_path / "b.conll") == direct
    assert direct["f1_exact"] == pytest.approx(2 * 1 / 5) and direct["f1_partial"] == pytest.approx(2 * 1.5 / 5)  # 2 + 3 spans
