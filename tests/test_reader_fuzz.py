"""Random and malformed input to every reader: only the project's own error may escape."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.data.corpus import FORMATS, read_corpus
from core.errors import CorpusError

_LINES = st.lists(st.one_of(
    st.text(max_size=30),
    st.sampled_from(["John B-PER", "x\tI-LOC", "-DOCSTART- O", "", '{"text": "a b"}', '{"tokens": ["a"], "tags": ["B-X"]}',
                     '{"tokens": 3}', "text,domain", "a,b", '"unterminated', "[1, 2]", "E-PER S-LOC", "\x00"]),
), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_LINES, fmt=st.sampled_from(FORMATS), junk=st.binary(max_size=8))
def test_readers_raise_only_corpus_errors(tmp_path, lines, fmt, junk):
    path = tmp_path / f"fuzz.{fmt}"
    path.write_bytes("\n".join(lines).encode("utf-8") + junk)
    try:
        corpus = read_corpus(path, fmt)
    except CorpusError as exc:
        assert str(exc).startswith(str(path))
        return
    assert len(corpus) > 0
    assert all(tokens for tokens in corpus.tokens)
    if corpus.tags is not None:
        assert [len(t) for t in corpus.tags] == [len(t) for t in corpus.tokens]
