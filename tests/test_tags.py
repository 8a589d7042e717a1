from hypothesis import given
from hypothesis import strategies as st

from core.data.tags import (
    Span,
    TagScheme,
    convert_tags,
    detect_scheme,
    spans_from_tags,
    tags_from_spans,
    validate_tags,
)


@st.composite
def span_layouts(draw):
    """Random non-overlapping spans over a random-length sentence."""
    length = draw(st.integers(1, 25))
    spans, i = [], 0
    while i < length:
        if draw(st.booleans()):
            n = draw(st.integers(1, min(4, length - i)))
            spans.append(Span(i, i + n, draw(st.sampled_from(["PER", "LOC", "ORG"]))))
            i += n
        else:
            i += 1
    return spans, length


@given(span_layouts(), st.sampled_from([TagScheme.BIO, TagScheme.IOB1, TagScheme.BIOES]))
def test_spans_round_trip_in_every_scheme(layout, scheme):
    spans, length = layout
    tags = tags_from_spans(spans, length, scheme)
    assert validate_tags(tags, scheme) == []
    assert spans_from_tags(tags, scheme) == spans


@given(span_layouts(), st.sampled_from([TagScheme.BIO, TagScheme.IOB1, TagScheme.BIOES]),
       st.sampled_from([TagScheme.BIO, TagScheme.IOB1, TagScheme.BIOES]))
def test_conversion_round_trips(layout, source, target):
    spans, length = layout
    tags = tags_from_spans(spans, length, source)
    assert convert_tags(convert_tags(tags, source, target), target, source) == tags


def test_bioes_encoding():
    assert convert_tags(["B-PER", "I-PER", "I-PER", "O", "B-LOC"], "bio", "bioes") == ["B-PER", "I-PER", "E-PER", "O", "S-LOC"]


def test_iob1_adjacent_spans():
    assert convert_tags(["I-PER", "I-PER", "B-PER", "O"], "iob1", "bio") == ["B-PER", "I-PER", "B-PER", "O"]


def test_detect_scheme():
    assert detect_scheme([["B-PER", "I-PER", "O"]]) == TagScheme.BIO
    assert detect_scheme([["I-PER", "I-PER", "O"]]) == TagScheme.IOB1
    assert detect_scheme([["S-PER", "O", "B-LOC", "E-LOC"]]) == TagScheme.BIOES
    assert detect_scheme([["O", "O"]]) == TagScheme.NONE


def test_validation_reports_position():
    assert validate_tags(["O", "B-PER", "O", "I-LOC"], TagScheme.BIO) == [
        (3, "'I-LOC' follows O: I- must continue a span of the same type")]
    problems = validate_tags(["O", "E-PER"], TagScheme.BIOES)
    assert problems and problems[0][0] == 1
    assert validate_tags(["X-PER"], TagScheme.BIO)[0][0] == 0
    assert validate_tags(["B-PER", "O"], TagScheme.BIOES)  # B- never closed by E-
