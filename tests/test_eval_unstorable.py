"""Corpus and query lines kenning cannot store or search: named by file and line, never a traceback."""

from __future__ import annotations

import pytest

from kenning.errors import InvalidInput
from kenning.eval.datasets import load_dataset
from kenning.eval.harness import run_eval

from test_eval_datasets import write_collection


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
