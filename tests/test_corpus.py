import json

import pytest

from core.data.corpus import Corpus, corpus_bytes, detect_format, iter_corpus, read_corpus, write_corpus
from core.errors import CorpusError

CONLL = "-DOCSTART- O\n\nJohn\tB-PER\nlives\tO\nin\tO\nParis\tB-LOC\n\nMary\tB-PER\nSmith\tI-PER\n"


def write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def test_conll_reader_skips_docstart(tmp_path):
    c = read_corpus(write(tmp_path, "a.conll", CONLL))
    assert c.tokens == [["John", "lives", "in", "Paris"], ["Mary", "Smith"]]
    assert c.tags[1] == ["B-PER", "I-PER"]
    assert c.scheme.value == "bio"


def test_conll_sniffed_from_txt_extension(tmp_path):
    p = write(tmp_path, "train.txt", CONLL.replace("\t", " "))
    assert detect_format(p) == "conll"
    assert len(read_corpus(p)) == 2


def test_txt_reader_whitespace_tokenization_and_bom(tmp_path):
    c = read_corpus(write(tmp_path, "a.txt", "\ufeffHello  world .\n\n  second line\n"))
    assert c.tokens == [["Hello", "world", "."], ["second", "line"]]
    assert not c.labeled


def test_custom_tokenizer(tmp_path):
    c = read_corpus(write(tmp_path, "a.txt", "a,b c\n"), tokenize=lambda s: s.replace(",", " , ").split())
    assert c.tokens == [["a", ",", "b", "c"]]


def test_jsonl_text_and_tokens_keep_extra_fields(tmp_path):
    rows = [{"text": "a b", "domain": "music", "id": 1}, {"text": "c", "domain": "ai", "id": 2}]
    c = read_corpus(write(tmp_path, "a.jsonl", "\n".join(json.dumps(r) for r in rows)))
    assert c.fields == {"domain": ["music", "ai"], "id": [1, 2]}
    labeled = [{"tokens": ["New", "York"], "tags": ["B-LOC", "I-LOC"]}]
    c = read_corpus(write(tmp_path, "b.jsonl", json.dumps(labeled[0])))
    assert c.tags == [["B-LOC", "I-LOC"]]


def test_a_token_that_is_empty_or_holds_a_space_is_refused_in_every_record_format(tmp_path):
    """CoNLL refused "New York" as one token; JSONL, CSV and Parquet took it (and ""), then wrote CoNLL that the
    project could not read back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = {"tokens": ["Paris", "is"], "tags": ["B-LOC", "O"]}
    for bad, said in ((["New York", "is"], "token 1 ('New York') is more than one word"), (["Paris", ""], "token 2 ('') is empty")):
        row = {"tokens": bad, "tags": ["B-LOC", "O"]}
        path = write(tmp_path, "t.jsonl", json.dumps(good) + "\n" + json.dumps(row) + "\n")
        with pytest.raises(CorpusError, match=f"t.jsonl:2: {said.replace('(', '.').replace(')', '.')}"):
            read_corpus(path)
        pq.write_table(pa.table({"tokens": [good["tokens"], bad], "tags": [good["tags"], row["tags"]]}), tmp_path / "t.parquet")
        with pytest.raises(CorpusError, match="t.parquet:2: token"):
            read_corpus(tmp_path / "t.parquet")
    assert read_corpus(write(tmp_path, "ok.jsonl", json.dumps({"text": "New York  is"}))).tokens == [["New", "York", "is"]]


def test_a_bad_tag_sequence_in_a_record_format_names_its_records_line():
    """The CoNLL rule (token k on the line k after the sentence's first) named line 5 of a 2-line JSONL file."""
    import tempfile
    from pathlib import Path

    rows = [{"tokens": ["a", "b"], "tags": ["B-PER", "O"]}, {"tokens": ["x", "y", "z", "w"], "tags": ["O", "O", "O", "I-PER"]}]
    path = Path(tempfile.mkdtemp()) / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CorpusError, match=r"bad.jsonl:2: sentence 2, token 4: 'I-PER' follows O"):
        read_corpus(path)


def test_csv_and_parquet_round_trip(tmp_path):
    c = Corpus(tokens=[["a", "b"], ["c"]], tags=[["B-X", "I-X"], ["O"]], fields={"domain": ["d1", "d2"]})
    for fmt in ("csv", "parquet", "jsonl"):
        p = write_corpus(c, tmp_path / f"x.{fmt}")
        back = read_corpus(p)
        assert back.tokens == c.tokens and back.tags == c.tags and back.fields == c.fields, fmt
    plain = tmp_path / "plain.csv"
    plain.write_text("text,domain\nhello world,music\nbye,ai\n")
    c2 = read_corpus(plain)
    assert c2.tokens == [["hello", "world"], ["bye"]] and c2.fields["domain"] == ["music", "ai"]


def test_conll_writer_bioes(tmp_path):
    c = read_corpus(write(tmp_path, "a.conll", CONLL))
    text = corpus_bytes(c, "conll", scheme="bioes").decode()
    assert "Paris\tS-LOC" in text and "Smith\tE-PER" in text


@pytest.mark.parametrize("name, text, line, fragment", [
    ("bad.conll", "John B-PER\nlives\n", 2, "at least two columns"),
    ("bad2.conll", "John B-PER\nlives XYZ\n", 2, "is not a tag"),
    ("space.conll", "John\tB-PER\nNew York\tB-LOC\n", 2, "token 'New York' holds a space"),  # found in review
    ("bad.conllu", "# text = a\n1\ta\t_\n", 2, "expected 10 tab-separated columns"),
    ("bad2.conllu", "1\tJohn" + "\t_" * 7 + "\tNER=B-PER\n2\tlives" + "\t_" * 8 + "\n", 2, "no NER=TAG in the MISC"),
    ("bad3.conllu", "1\tJohn" + "\t_" * 7 + "\tNER=PERSON\n", 1, "NER='PERSON' is not a tag"),
    ("bad3.conll", "\n\nJohn B-PER\nin O\nParis I-LOC\n", 5, "I- must continue"),
    ("bad.jsonl", '{"text": "a"}\n{oops\n', 2, "invalid JSON"),
    ("bad2.jsonl", '{"tokens": ["a", "b"], "tags": ["O"]}\n', 1, "2 tokens but 1 tags"),
    ("bad3.jsonl", '{"foo": 1}\n', 1, "expected a 'text' or 'tokens'"),
    ("bad.csv", "text,domain\na,b,c\n", 2, "3 cells"),
    ("bad2.csv", "foo,bar\n1,2\n", 1, "expected a 'text' column"),
])
def test_errors_name_file_and_line(tmp_path, name, text, line, fragment):
    p = write(tmp_path, name, text)
    with pytest.raises(CorpusError) as err:
        read_corpus(p)
    assert err.value.line == line
    assert fragment in str(err.value)
    assert str(err.value).startswith(f"{p}:{line}: ")


def test_non_utf8_names_the_line(tmp_path):
    p = write(tmp_path, "latin.txt", "ok line\nsecond caf\xe9\n", encoding="latin-1")
    with pytest.raises(CorpusError, match=r"latin.txt:2: not valid UTF-8"):
        read_corpus(p)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CorpusError, match="file not found"):
        read_corpus(tmp_path / "nope.txt")
    with pytest.raises(CorpusError, match="no sentences"):
        read_corpus(write(tmp_path, "empty.txt", "\n\n"))


def test_streaming_chunks(tmp_path):
    p = write(tmp_path, "big.txt", "".join(f"sentence number {i}\n" for i in range(1050)))
    chunks = list(iter_corpus(p, chunk_size=500))
    assert [len(c) for c in chunks] == [500, 500, 50]


def test_crossner_music_train(crossner):
    c = read_corpus(crossner("music", "train"))
    assert len(c) == 100 and c.scheme.value == "bio"


def test_a_txt_file_mostly_tagged_is_conll_and_its_untagged_line_is_named(tmp_path):
    """Found in review: one line without a tag in a train.txt made the whole file plain text (each 'TOKEN TAG' line a
    sentence) and a role that needs labels refused it without naming the line."""
    f = tmp_path / "train.txt"
    f.write_text("EU\tB-ORG\nrejects\tO\nGerman\tB-MISC\ncall\tO\nto\tO\n\nPeter\tB-PER\nBlackburn\n")
    assert detect_format(f) == "conll"
    with pytest.raises(CorpusError, match=r"train.txt:8: expected 'TOKEN<TAB>TAG'"):
        read_corpus(f)
    f.write_text("The cat sat .\nIt rained all day .\n")
    assert detect_format(f) == "txt"


def test_one_tag_scheme_for_the_whole_file_and_sentences_counted_from_its_start(tmp_path):
    """Found in review: a file read in chunks detected its scheme chunk by chunk, so a stray I- after the first chunk
    was accepted (that chunk read as IOB1) and messages counted sentences within the chunk."""
    f = tmp_path / "late.conll"
    f.write_text("EU\tB-ORG\nboard\tI-ORG\n\nyes\tO\n\nthe\tO\ncommission\tI-ORG\n")
    with pytest.raises(CorpusError, match=r"late.conll:7: sentence 3, token 2: .*\(scheme bio\)"):
        list(iter_corpus(f, chunk_size=2))
    ok = tmp_path / "ok.conll"
    ok.write_text("EU\tB-ORG\nboard\tI-ORG\n\nyes\tO\n\nthe\tO\nEU\tB-ORG\n")
    assert [len(c) for c in iter_corpus(ok, chunk_size=2)] == [2, 1]


def test_a_field_appearing_after_the_first_chunk_is_refused_not_dropped(tmp_path):
    f = tmp_path / "late.jsonl"
    f.write_text("\n".join(json.dumps({"text": f"s {i}", **({"domain": "ai"} if i == 2 else {})}) for i in range(3)))
    with pytest.raises(CorpusError, match=r"late.jsonl:3: field 'domain' first appears here, after the first 2 sentences"):
        list(iter_corpus(f, chunk_size=2))


def test_conllu_reads_forms_and_ner_tags_from_misc_and_round_trips(tmp_path):
    """Found in review: a .conllu file was read as CoNLL and failed on its first comment ("last column '1' is not a
    tag"). FORM is the token, MISC's NER= the tag; multiword ranges and empty nodes are skipped; a treebank with no
    NER layer is unlabeled text (a DC)."""
    row = "{id}\t{form}\t_\tX\t_\t_\t0\tdep\t_\t{misc}"
    text = "\n".join(["# sent_id = 1", "# text = Paris isn't", row.format(id=1, form="Paris", misc="NER=B-LOC"),
                      row.format(id="2-3", form="isn't", misc="_"), row.format(id=2, form="is", misc="NER=O"),
                      row.format(id=3, form="n't", misc="SpaceAfter=No|NER=O"), row.format(id="3.1", form="x", misc="_"),
                      "", row.format(id=1, form="Bob", misc="NE=B-PER"), ""])
    path = write(tmp_path, "ud.conllu", text)
    assert detect_format(path) == "conllu"
    corpus = read_corpus(path)
    assert corpus.tokens == [["Paris", "is", "n't"], ["Bob"]] and corpus.tags == [["B-LOC", "O", "O"], ["B-PER"]]
    again = read_corpus(write_corpus(corpus, tmp_path / "out.conllu"))
    assert (again.tokens, again.tags) == (corpus.tokens, corpus.tags)
    plain = read_corpus(write(tmp_path, "plain.conllu", text.replace("NER=", "X=").replace("NE=", "X=")))
    assert plain.tags is None and plain.tokens == corpus.tokens
