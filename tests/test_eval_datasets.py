"""The BEIR loader: the bundled set, title handling, and clear errors for broken files."""

from __future__ import annotations

import json
import warnings

import pytest

from kenning.errors import InvalidInput
from kenning.eval.datasets import Document, Query, group_of, load_dataset
from kenning.retrieval.text import query_tokens, tokenize, written_as_names


def write_collection(folder, corpus, queries, qrels, header=True):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    lines = (["query-id\tcorpus-id\tscore"] if header else []) + ["\t".join(map(str, r)) for r in qrels]
    (folder / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def small(tmp_path):
    return write_collection(
        tmp_path / "small",
        [{"_id": "d1", "title": "Ports", "text": "The auth service listens on 8443.", "extra": 1},
         {"_id": "d2", "title": "", "text": "Lunch is at noon."},
         {"_id": 3, "text": "numeric ids are read as text"}],
        [{"_id": "q1", "text": "auth port", "metadata": {"category": 4}},
         {"_id": "q2", "text": "what colour is the sky"}],
        [("q1", "d1", 2), ("q1", "d2", 0)],
    )


def test_loads_documents_queries_and_graded_qrels(small):
    data = load_dataset(small)
    assert data.name == "small"
    assert list(data.documents) == ["d1", "d2", "3"]
    assert data.documents["d1"].content == "Ports. The auth service listens on 8443."
    assert data.documents["d2"].content == "Lunch is at noon."
    assert data.qrels == {"q1": {"d1": 2, "d2": 0}}
    assert data.queries["q1"].category == "4"
    assert data.queries["q2"].category is None
    assert data.is_answerable("q1") and not data.is_answerable("q2")
    assert data.unknown_qrels == 0


def test_title_rules():
    assert Document("x", "A claim.", "Body").content == "A claim. Body"
    assert Document("x", "Wing flow", "wing flow . more text").content == "wing flow . more text"
    assert Document("x", "Only a title", "").content == "Only a title"
    assert Document("x", "", "").content == ""


def test_qrels_without_header_are_read(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d", "text": "x"}], [{"_id": "q", "text": "x"}],
                              [("q", "d", 1)], header=False)
    assert load_dataset(folder).qrels == {"q": {"d": 1}}


def test_unknown_ids_in_qrels_are_counted_not_fatal_and_not_a_python_warning(tmp_path):
    """The caller reports the count (the CLI as one note line); a UserWarning would print its source line."""
    folder = write_collection(tmp_path / "c", [{"_id": "d", "text": "x"}], [{"_id": "q", "text": "x"}],
                              [("q", "d", 1), ("q", "missing-doc", 1), ("ghost", "d", 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = load_dataset(folder)
    assert data.unknown_qrels == 2
    assert data.qrels == {"q": {"d": 1}}


@pytest.mark.parametrize("filename, line", [("corpus.jsonl", 4), ("queries.jsonl", 3), ("qrels.tsv", 4)])
def test_a_byte_that_is_not_utf8_names_its_file_and_line(small, filename, line):
    with (small / filename).open("ab") as f:
        f.write(b"caf\xe9\n")  # Latin-1, as an editor on another system may have saved it
    with pytest.raises(InvalidInput, match=rf"{filename.replace('.', '[.]')}:{line}: not UTF-8 text \(byte 0xe9 at column 4\)"):
        load_dataset(small)


@pytest.mark.parametrize("filename, message", [("corpus.jsonl", "no document with text"), ("queries.jsonl", "no queries")])
def test_a_collection_without_documents_or_queries_is_an_error(small, filename, message):
    (small / filename).write_text("\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=rf"{filename.replace('.', '[.]')}: {message}"):
        load_dataset(small)


def test_corpus_of_empty_documents_is_an_error(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d", "title": "", "text": " "}], [{"_id": "q", "text": "x"}], [])
    with pytest.raises(InvalidInput, match="no document with text"):
        load_dataset(folder)


def test_locomo_categories_are_named_even_without_evidence():
    """An adversarial (category 5) question may carry no evidence turns; it is still LoCoMo's."""
    temporal = Query("conv-1:q0", "when?", {"sample_id": "conv-1", "category": 2, "evidence": ["D1:3"]})
    adversarial = Query("conv-1:q1", "what did she say about the dog?", {"sample_id": "conv-1", "category": 5})
    assert (temporal.category, adversarial.category) == ("temporal", "adversarial")
    assert Query("q", "x", {"category": 5}).category == "5"  # not LoCoMo: as given


def test_missing_folder_and_missing_file(tmp_path):
    with pytest.raises(InvalidInput, match="no such collection folder .*the shipped sets are builtin, memval, memval2 and memval3"):
        load_dataset(tmp_path / "nope")
    folder = write_collection(tmp_path / "c", [{"_id": "d", "text": "x"}], [{"_id": "q", "text": "x"}], [])
    (folder / "queries.jsonl").unlink()
    with pytest.raises(InvalidInput, match=r"queries\.jsonl: file is missing"):
        load_dataset(folder)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"text": "no id"}', "missing or empty '_id'"),
        ('{"_id": "d9", "text": 5}', "'text' must be text"),
        ('{"_id": "d1", "text": "dup"}', "duplicate document id"),
    ],
)
def test_malformed_corpus_line_names_file_and_line(small, line, message):
    with (small / "corpus.jsonl").open("a", encoding="utf-8") as f:
        f.write("\n" + line + "\n")  # line 4 is blank, line 5 is the bad one
    with pytest.raises(InvalidInput, match=rf"corpus\.jsonl:5: .*{message}"):
        load_dataset(small)


def test_query_needs_text(small):
    with (small / "queries.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"_id": "q3", "text": "  "}\n')
    with pytest.raises(InvalidInput, match=r"queries\.jsonl:3: 'text' must be non-empty text"):
        load_dataset(small)


@pytest.mark.parametrize("row, message", [("q1\td1", "expected 3 tab-separated fields"), ("q1\td1\thigh", "score .high. is not an integer")])
def test_malformed_qrels_line_names_line(small, row, message):
    with (small / "qrels.tsv").open("a", encoding="utf-8") as f:
        f.write(row + "\n")
    with pytest.raises(InvalidInput, match=rf"qrels\.tsv:4: {message}"):
        load_dataset(small)


def test_group_of():
    assert group_of("conv-26:D1:3", ":") == "conv-26"
    assert group_of("conv-26:q0", ":") == "conv-26"
    assert group_of("42", None) is None
    assert group_of("42", ":") is None  # no separator: not grouped


def test_limit_queries_keeps_their_judgments(small):
    data = load_dataset(small).limit_queries(1)
    assert list(data.queries) == ["q1"] and data.qrels == {"q1": {"d1": 2, "d2": 0}}
    assert len(data.documents) == 3


def test_builtin_set_shape():
    data = load_dataset("builtin")
    assert data.name == "builtin"
    assert len(data.documents) == 300 and len(data.queries) == 80
    assert all(doc_id.startswith("m") and len(doc_id) == 4 for doc_id in data.documents)
    kinds: dict[str, int] = {}
    for query in data.queries.values():
        kinds[query.category] = kinds.get(query.category, 0) + 1
    assert set(kinds) == {"exact", "paraphrase", "typo", "wordform", "unanswerable"}
    assert kinds["unanswerable"] == 15
    for qid, query in data.queries.items():
        # unanswerable <=> no judgments at all
        assert (query.category == "unanswerable") == (qid not in data.qrels)
    assert data.unknown_qrels == 0


def test_builtin_paraphrases_share_no_token_with_their_targets():
    data = load_dataset("builtin")
    for qid, query in data.queries.items():
        if query.category != "paraphrase":
            continue
        for doc_id in data.qrels[qid]:
            shared = set(query_tokens(query.text)) & set(tokenize(data.documents[doc_id].content))
            assert not shared, (qid, doc_id, shared)


def test_memval_set_shape_and_paraphrases():
    """The second shipped memory-style set: 400 memories, 180 queries of six kinds; unanswerable and
    unknown-name <=> no judgments; a paraphrase shares no token with its grade-2 answer (the one token
    stream); most unknown-name questions write a name no memory holds."""
    data = load_dataset("memval")
    assert data.name == "memval" and data.unknown_qrels == 0
    assert len(data.documents) == 400 and len(data.queries) == 180
    vocabulary = {token for doc in data.documents.values() for token in tokenize(doc.content)}
    kinds: dict[str, int] = {}
    unheard = 0
    for qid, query in data.queries.items():
        kinds[query.category] = kinds.get(query.category, 0) + 1
        assert (query.category in ("unanswerable", "unknown-name")) == (qid not in data.qrels)
        if query.category == "unknown-name":
            unheard += bool(written_as_names(query.text, set(query_tokens(query.text)) - vocabulary))
        if query.category == "paraphrase":
            for doc_id, grade in data.qrels[qid].items():
                shared = set(query_tokens(query.text)) & set(tokenize(data.documents[doc_id].content))
                assert grade < 2 or not shared, (qid, doc_id, shared)
    assert kinds == {"exact": 40, "paraphrase": 50, "typo": 15, "wordform": 15, "unanswerable": 40, "unknown-name": 20}
    assert unheard == 17
    assert all(2 in judged.values() for judged in data.qrels.values())


@pytest.mark.parametrize("name, documents, kinds, disjoint", [
    ("memval2", 300, {"exact": 35, "paraphrase": 40, "typo": 10, "unanswerable": 45}, 29),
    ("memval3", 400, {"exact": 50, "paraphrase": 60, "typo": 15, "wordform": 15, "unanswerable": 20}, 53),
])
def test_memory_sets_written_blind_have_their_shape(name, documents, kinds, disjoint):
    """The shipped memory-style sets written blind in other domains (memval2: 300 memories, 130
    queries; memval3: the held-out set's shape, 400 memories, 160 queries): unanswerable <=> no
    judgments, every answerable one has a grade-2 answer; most paraphrases share no token with their
    grade-2 answer (the one token stream)."""
    data = load_dataset(name)
    assert data.name == name and data.unknown_qrels == 0
    assert len(data.documents) == documents and len(data.queries) == sum(kinds.values())
    found: dict[str, int] = {}
    apart = 0
    for qid, query in data.queries.items():
        found[query.category] = found.get(query.category, 0) + 1
        assert (query.category == "unanswerable") == (qid not in data.qrels)
        if query.category == "paraphrase":
            answers = [d for d, grade in data.qrels[qid].items() if grade == 2]
            apart += all(not set(query_tokens(query.text)) & set(tokenize(data.documents[d].content)) for d in answers)
    assert found == kinds
    assert apart == disjoint
    assert all(2 in judged.values() for judged in data.qrels.values())


@pytest.mark.parametrize("filename", ["corpus.jsonl", "queries.jsonl"])
def test_a_byte_order_mark_an_editor_added_is_no_error(tmp_path, filename):
    folder = write_collection(tmp_path / "c", [{"_id": "d", "text": "the deploy uses helm"}],
                              [{"_id": "q", "text": "helm deploy"}], [("q", "d", 1)])
    path = folder / filename
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    data = load_dataset(folder)
    assert list(data.documents) == ["d"] and list(data.queries) == ["q"] and data.qrels == {"q": {"d": 1}}


def test_a_pair_judged_twice_with_different_grades_keeps_the_higher_and_is_counted(tmp_path):
    """The later row used to replace the earlier: q2's relevant d2 judged 0 again made q2
    unanswerable and dropped it from every mean (nDCG@10 .80 -> .70 on a 3-query set), silently.
    The higher grade is kept whatever the rows' order, and the pairs are counted; the file is not
    refused (qrels merged from several assessors' rows hold such pairs)."""
    for rows in ([("q1", "d1", 1), ("q2", "d2", 1), ("q2", "d1", 0), ("q2", "d2", 0)],
                 [("q1", "d1", 1), ("q2", "d2", 0), ("q2", "d1", 0), ("q2", "d2", 1)]):
        folder = write_collection(tmp_path / "c", [{"_id": "d1", "text": "x"}, {"_id": "d2", "text": "y"}],
                                  [{"_id": "q1", "text": "x"}, {"_id": "q2", "text": "y"}], rows)
        data = load_dataset(folder)
        assert data.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1, "d1": 0}} and data.conflicting_judgments == 1
        assert data.is_answerable("q2") and data.limit_queries(2).conflicting_judgments == 1


def test_a_pair_judged_twice_with_the_same_grade_is_read_once(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d1", "text": "x"}], [{"_id": "q1", "text": "x"}],
                              [("q1", "d1", 2), ("q1", "d1", 2)])
    assert load_dataset(folder).qrels == {"q1": {"d1": 2}}


def test_beir_layout_qrels_test_tsv_is_read(tmp_path):
    """A collection as BEIR ships it (qrels/test.tsv, no qrels.tsv) used to stop at
    'qrels.tsv: file is missing'."""
    folder = write_collection(tmp_path / "beir", [{"_id": "d1", "text": "x"}, {"_id": "d2", "text": "y"}],
                              [{"_id": "q1", "text": "x"}], [("q1", "d1", 2), ("q1", "dx", 1)])
    (folder / "qrels").mkdir()
    (folder / "qrels.tsv").rename(folder / "qrels" / "test.tsv")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n", encoding="utf-8")
    data = load_dataset(folder)
    assert data.qrels == {"q1": {"d1": 2}} and data.unknown_qrels == 1
    assert data.qrels_file == "qrels/test.tsv" and data.limit_queries(1).qrels_file == "qrels/test.tsv"


def test_beir_layout_without_a_test_split_names_the_splits_it_has(tmp_path):
    folder = write_collection(tmp_path / "beir", [{"_id": "d1", "text": "x"}], [{"_id": "q1", "text": "x"}],
                              [("q1", "d1", 1)])
    (folder / "qrels").mkdir()
    (folder / "qrels.tsv").rename(folder / "qrels" / "dev.tsv")
    with pytest.raises(InvalidInput, match=r"no qrels.tsv nor qrels/test.tsv; qrels/ holds dev.tsv: the test split"):
        load_dataset(folder)
    (folder / "qrels" / "dev.tsv").unlink()
    with pytest.raises(InvalidInput, match=r"qrels.tsv: file is missing \(nor is there BEIR's qrels/test.tsv\)"):
        load_dataset(folder)


def test_a_file_given_for_the_folder_is_named_as_a_file(small):
    """`eval run path/corpus.jsonl` said 'no such collection folder', as if the path did not exist."""
    with pytest.raises(InvalidInput, match=r"corpus.jsonl: a file, not a collection folder; give the folder that holds"):
        load_dataset(small / "corpus.jsonl")


def test_qrels_of_which_no_row_matches_the_collection_is_an_error(tmp_path):
    """Columns swapped (corpus-id first): every row was ignored with a note, and every query ran as an
    'unanswerable' one - a table of dashes and an unanswerable block for a collection that has none."""
    folder = write_collection(tmp_path / "c", [{"_id": "d1", "text": "x"}], [{"_id": "q1", "text": "x"}],
                              [("d1", "q1", 1)])
    with pytest.raises(InvalidInput, match=r"qrels.tsv: none of its 1 judgment\(s\) names a query of queries.jsonl "
                                           r"and a document of corpus.jsonl \(columns: query-id, corpus-id, score\)"):
        load_dataset(folder)
    header_only = write_collection(tmp_path / "h", [{"_id": "d1", "text": "x"}], [{"_id": "q1", "text": "x"}], [])
    assert load_dataset(header_only).qrels == {}  # no judgment at all: every query unanswerable, as written


def test_foreign_queries_never_replace_a_query_of_the_collection(tmp_path):
    """A collection whose own query is called 'foreign0' lost it (and its judgments' say) to the first
    foreign query, silently: one answerable query fewer, the mean moved."""
    from kenning.eval.datasets import with_foreign_queries

    here = load_dataset(write_collection(tmp_path / "here", [{"_id": "d1", "text": "x"}],
                                         [{"_id": "foreign0", "text": "x"}], [("foreign0", "d1", 1)]))
    other = load_dataset(write_collection(tmp_path / "other", [{"_id": "e1", "text": "y"}],
                                          [{"_id": "o1", "text": "y"}], [("o1", "e1", 1)]))
    both = with_foreign_queries(here, other)
    assert len(both.queries) == 2 and both.queries["foreign0"].text == "x" and both.is_answerable("foreign0")
    assert sorted(q.category or "" for q in both.queries.values()) == ["", "foreign"]


def test_a_first_qrels_row_with_a_fractional_score_is_an_error_not_a_header(tmp_path):
    """Line 1 of "q\\td\\t0.5" was taken for a header and skipped: its judgment silently lost."""
    folder = write_collection(tmp_path / "c", [{"_id": "d", "text": "x"}, {"_id": "e", "text": "y"}],
                              [{"_id": "q", "text": "x"}], [("q", "d", "0.5"), ("q", "e", 1)], header=False)
    with pytest.raises(InvalidInput, match=r"qrels\.tsv:1: score '0\.5' is not an integer"):
        load_dataset(folder)


def test_scores_written_with_a_zero_fraction_are_grades(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d", "text": "x"}, {"_id": "e", "text": "y"}],
                              [{"_id": "q", "text": "x"}], [("q", "d", "1.0"), ("q", "e", "2.0")], header=False)
    assert load_dataset(folder).qrels == {"q": {"d": 1, "e": 2}}


def test_ids_with_surrounding_spaces_match_the_qrels_as_their_fields_are_read(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d1 ", "text": "the auth port"}],
                              [{"_id": " q1", "text": "auth port"}], [("q1", "d1", 1)])
    loaded = load_dataset(folder)
    assert loaded.qrels == {"q1": {"d1": 1}} and set(loaded.documents) == {"d1"} and set(loaded.queries) == {"q1"}
