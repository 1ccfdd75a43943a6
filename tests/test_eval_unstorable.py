"""Corpus and query lines kenning cannot store or search: named by file and line, never a traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kenning.errors import InvalidInput
from kenning.eval.commands import eval_app
from kenning.eval.datasets import load_dataset
from kenning.eval.harness import run_eval

from test_eval_datasets import write_collection

runner = CliRunner()


def _collection(folder, corpus, queries=None):
    return write_collection(folder, corpus, queries or [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1)])


@pytest.mark.parametrize("file", ["corpus.jsonl", "queries.jsonl"])
def test_a_lone_surrogate_is_a_one_line_error_naming_file_and_line(tmp_path, file):
    folder = _collection(tmp_path / "c", [{"_id": "d1", "text": "the auth port is 8443"}])
    with open(folder / file, "a", encoding="utf-8") as handle:  # the JSON escape, as a tool writes it
        handle.write('{"_id": "x2", "text": "lone \\ud800 surrogate"}\n')
    with pytest.raises(InvalidInput, match=rf"{file}:2: not valid Unicode \(a lone surrogate"):
        load_dataset(folder)


def test_a_whole_surrogate_pair_is_read_as_its_character(tmp_path):
    folder = _collection(tmp_path / "c", [{"_id": "d1", "text": "the auth port is 8443"}])
    with open(folder / "corpus.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"_id": "d2", "text": "a grin \\ud83d\\ude00 here"}\n')
    assert load_dataset(folder).documents["d2"].text == "a grin \U0001F600 here"
    assert run_eval(folder, modes="bm25", progress=False)["documents"] == 2


def test_documents_the_store_cannot_keep_are_skipped_and_named_by_file_line_and_id(tmp_path):
    folder = _collection(tmp_path / "bad", [
        {"_id": "empty", "text": " "},
        {"_id": "d1", "text": "the auth port is 8443"},
        {"_id": "dash", "text": "-"},
        {"_id": "x", "text": "x"},
        {"_id": "nul", "text": "a NUL \u0000 here"},
        {"_id": "big", "text": "lorem ipsum " * 100_000},
        {"_id": "tab\tid", "text": "a tab in the id"},
        {"_id": "u/" + "a" * 250, "text": "an id of 252 characters"},
    ])
    report = run_eval(folder, modes="bm25", progress=False, reference=["rank-bm25"])
    assert report["skipped_documents"] == 7
    assert report["skipped_reasons"] == {"no text": 1, "refused by the store": 6}
    named = {d["_id"]: d for d in report["unstorable_documents"]}
    assert named["dash"]["where"] == f"{folder / 'corpus.jsonl'}:3" and "too short" in named["dash"]["why"]
    assert "NUL" in named["nul"]["why"] and "1 MiB" in named["big"]["why"]
    assert "at most 200 characters" in named["tab\tid"]["why"]
    assert report["modes"]["bm25"]["nDCG@10"] == report["modes"]["rank-bm25"]["nDCG@10"] == 1.0

    result = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25", "--baseline", "none"])
    assert result.exit_code == 0, result.output
    assert "7 document(s) were not indexed (1 without text, 6 the store cannot keep)" in result.stdout
    assert f"{folder / 'corpus.jsonl'}:3: _id 'dash' not indexed: memory text '-' is too short" in result.stdout
    assert "and 1 more (--json lists the first 6)" in result.stdout
