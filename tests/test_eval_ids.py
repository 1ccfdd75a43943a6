"""Document ids are scored exactly as the collection spells them, whatever spelling the store keeps."""

from __future__ import annotations

import pytest

from kenning.errors import InvalidInput
from kenning.eval.datasets import load_dataset
from kenning.eval.harness import loaded_store, run_eval, run_mode

from test_eval_datasets import write_collection

# 26 characters of the ULID alphabet starting 0-7, in lower case: the store keeps it in upper case
ULIDS = [f"01j{i:02d}qz8x4v7m3n5p6r9s2t0w1" for i in range(1, 4)]


def _ulid_collection(folder, ids):
    return write_collection(
        folder,
        [{"_id": ids[0], "text": "the auth service listens on port 8443"},
         {"_id": ids[1], "text": "deploys go through the staging cluster"},
         {"_id": ids[2], "text": "lunch is served at noon"}],
        [{"_id": "q1", "text": "auth service port"}, {"_id": "q2", "text": "staging cluster deploys"}],
        [("q1", ids[0], 1), ("q2", ids[1], 1)],
    )


def test_lower_case_ulid_ids_score_as_the_qrels_spell_them(tmp_path):
    data = load_dataset(_ulid_collection(tmp_path / "ulids", ULIDS))
    report = run_eval(data, modes="bm25", progress=False)
    assert report["modes"]["bm25"]["nDCG@10"] == pytest.approx(1.0)
    with loaded_store(data) as store:
        assert run_mode(store, data, "bm25").ranked["q1"][0] == ULIDS[0]


def test_two_ids_one_ulid_in_another_case_are_refused_naming_both_lines(tmp_path):
    folder = _ulid_collection(tmp_path / "twins", [ULIDS[0], ULIDS[1], ULIDS[0].upper()])
    with pytest.raises(InvalidInput, match=r"corpus.jsonl:3: document id '01J01.*same ULID as '01j01.*corpus.jsonl:1\)"):
        load_dataset(folder)


def test_ids_differing_only_in_case_that_are_no_ulid_stay_distinct(tmp_path):
    folder = write_collection(
        tmp_path / "cased",
        [{"_id": "d1", "text": "coffee beans from kenya"}, {"_id": "D1", "text": "tea leaves from assam"}],
        [{"_id": "q1", "text": "tea leaves"}],
        [("q1", "D1", 1)],
    )
    report = run_eval(folder, modes="bm25", progress=False)
    assert report["documents"] == 2 and report["modes"]["bm25"]["MRR@10"] == pytest.approx(1.0)
