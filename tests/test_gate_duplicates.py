"""Duplicates gate: Jaccard overlap of content-token sets decides duplicate / related /
previously_removed; the numbers below are worked out by hand from the token sets."""

from __future__ import annotations

import pytest

from kenning.memory.gates.duplicates import (
    DUPLICATE_THRESHOLD,
    RELATED_THRESHOLD,
    check_duplicate,
    overlap,
    token_set,
)

PORT_8443 = "The auth service listens on port 8443."


def test_token_set_drops_stopwords_and_stems():
    assert token_set("The services listen on ports") == {"servic", "listen", "port"}
    assert token_set("Does the service listen") == {"servic", "listen"}  # "does" is a stopword, "doe" is not
    assert token_set("it is what it is") == {"it", "is", "what"}  # nothing but stopwords: keep them


def test_overlap_is_jaccard():
    # {auth, service, listen, port, 8443} vs {auth, service, listen, port, 9443}: 4 shared of 6
    assert overlap(PORT_8443, "The auth service listens on port 9443") == pytest.approx(4 / 6)
    assert overlap("", "") == 0.0
    assert overlap("alpha beta", "gamma delta") == 0.0


def test_jaccard_does_not_call_a_short_subset_a_duplicate():
    # the overlap coefficient would score this 1.0; Jaccard says 2 of 7
    long = "Use pytest with the -x flag and xdist for the slow suite"
    assert overlap("use pytest", long) == pytest.approx(2 / 7)
    assert check_duplicate("use pytest", [("m1", long)]).status is None


def test_same_fact_reworded_slightly_is_a_duplicate():
    result = check_duplicate("the auth service listens on port 8443", [("m1", PORT_8443), ("m2", "unrelated words")])
    assert result.status == "duplicate"
    assert result.match.id == "m1" and result.match.overlap == 1.0
    assert result.related == []


def test_duplicate_threshold_is_inclusive():
    # 3 shared of 4 distinct tokens: exactly 0.75
    result = check_duplicate("alpha beta gamma", [("m1", "alpha beta gamma delta")])
    assert result.match.overlap == DUPLICATE_THRESHOLD and result.status == "duplicate"


def test_related_memories_are_listed_best_first_and_the_write_proceeds():
    candidates = [
        ("m_far", "completely different topic about gardening"),
        ("m_40", "alpha beta zeta eta"),  # 2 shared of 5 distinct -> 0.40
        ("m_60", "alpha beta gamma zeta eta"),  # 3 shared of 5 distinct -> 0.60
    ]
    result = check_duplicate("alpha beta gamma", candidates)
    assert result.status is None and result.match is None
    assert result.related_ids == ["m_60", "m_40"]
    assert result.related[1].overlap == pytest.approx(RELATED_THRESHOLD)


def test_ties_are_broken_by_id():
    candidates = [("b", "alpha beta gamma zeta eta"), ("a", "alpha beta gamma theta iota")]  # both 3/5
    result = check_duplicate("alpha beta gamma", candidates)
    assert result.related_ids == ["a", "b"]


def test_near_match_with_a_tombstone_is_previously_removed_with_its_reason():
    tombstones = [("t1", "The auth service listens on port 8443", "port moved to 9443 in the 2.0 rewrite")]
    result = check_duplicate(PORT_8443, [("m2", "The auth service listens on port 9443")], tombstones)
    assert result.status == "previously_removed"
    assert result.match.id == "t1" and result.match.reason == "port moved to 9443 in the 2.0 rewrite"
    assert result.related_ids == ["m2"]


def test_a_loosely_related_tombstone_does_not_block():
    tombstones = [("t1", "auth service port 9443 configuration notes", "obsolete")]
    assert check_duplicate(PORT_8443, [], tombstones).status is None


def test_a_live_duplicate_wins_over_a_tombstone():
    result = check_duplicate(PORT_8443, [("m1", PORT_8443)], [("t1", PORT_8443, "removed once")])
    assert result.status == "duplicate" and result.match.id == "m1"


def test_no_candidates_means_a_clean_write():
    result = check_duplicate(PORT_8443, [])
    assert result.status is None and result.related == []


def test_a_duplicate_still_lists_every_other_related_memory():
    candidates = [("m_dup", "alpha beta gamma"),  # 3 of 3: the duplicate
                  ("m_60", "alpha beta gamma zeta eta"),  # 3 of 5
                  ("m_40", "alpha beta zeta eta")]  # 2 of 5
    result = check_duplicate("alpha beta gamma", candidates)
    assert result.status == "duplicate" and result.match.id == "m_dup"
    assert result.related_ids == ["m_60", "m_40"] and result.removed == []


def test_tombstone_thresholds_are_inclusive_and_every_removed_match_is_returned():
    """A tombstone at exactly 0.75 blocks as previously_removed (the others stay listed); one at exactly
    0.40 lets the write proceed and is listed, with its reason, in ``removed``."""
    tombstones = [("t_75", "alpha beta gamma delta", "replaced by the v2 notes"),  # 3 of 4
                  ("t_40", "alpha beta zeta eta", "obsolete")]  # 2 of 5
    blocked = check_duplicate("alpha beta gamma", [], tombstones)
    assert blocked.status == "previously_removed" and blocked.match.id == "t_75"
    assert blocked.match.overlap == DUPLICATE_THRESHOLD and blocked.match.reason == "replaced by the v2 notes"
    assert [(m.id, m.overlap, m.reason) for m in blocked.removed] == [
        ("t_75", DUPLICATE_THRESHOLD, "replaced by the v2 notes"), ("t_40", RELATED_THRESHOLD, "obsolete")]
    proceeds = check_duplicate("alpha beta gamma", [("m_60", "alpha beta gamma zeta eta")], tombstones[1:])
    assert proceeds.status is None and proceeds.match is None and proceeds.related_ids == ["m_60"]
    assert [(m.id, m.overlap, m.reason) for m in proceeds.removed] == [("t_40", RELATED_THRESHOLD, "obsolete")]


JOB_1 = "The nightly backup job 1 copies /var/lib/postgres to bucket bk-1 at 02:00 UTC every day"
JOB_2 = "The nightly backup job 2 copies /var/lib/postgres to bucket bk-2 at 02:00 UTC every day"


def test_a_long_sentence_differing_in_a_value_is_related_not_a_duplicate():
    """87 % of the words shared, but job 2 and bucket bk-2 are another fact than job 1 and bk-1."""
    assert overlap(JOB_1, JOB_2) >= DUPLICATE_THRESHOLD
    check = check_duplicate(JOB_2, [("m1", JOB_1)])
    assert check.status is None and check.related_ids == ["m1"]
    check = check_duplicate(JOB_2, [], [("t1", JOB_1, "job 1 was retired")])
    assert check.status is None and [m.id for m in check.removed] == ["t1"]


def test_a_numeral_written_as_a_letter_is_a_value_too():
    """Japanese and Chinese write numbers in characters (三時, three o'clock): 85 % of the bigrams
    shared, but four o'clock is another fact."""
    three, four = "本番サーバーのバックアップは毎晩三時に実行されます", "本番サーバーのバックアップは毎晩四時に実行されます"
    assert overlap(three, four) >= DUPLICATE_THRESHOLD
    assert check_duplicate(four, [("m1", three)]).status is None
    assert check_duplicate(three, [("m1", three)]).status == "duplicate"


def test_a_value_one_side_lacks_is_still_the_same_fact():
    """Only a value each side holds and the other lacks makes two facts: a rewording that drops or
    adds one (a time, a version suffix) is the same fact said again."""
    assert check_duplicate(JOB_1, [("m1", JOB_1)]).status == "duplicate"
    longer = JOB_1.replace(" every day", " every day, taking 12 minutes")
    assert overlap(JOB_1, longer) >= DUPLICATE_THRESHOLD
    assert check_duplicate(longer, [("m1", JOB_1)]).status == "duplicate"


def test_the_write_and_the_import_keep_both_facts(tmp_path):
    import kenning

    with kenning.open_store(tmp_path / "s") as store:
        first = store.write(JOB_1, scopes=["ops"])
        second = store.write(JOB_2, scopes=["ops"])
        assert (first.status, second.status) == ("committed", "committed")
        assert first.id in second.related
        report = store.import_checked([{"content": JOB_1.replace("1", "3").replace("02:00", "03:00"), "scopes": ["ops"]},
                                       {"content": JOB_1, "scopes": ["ops"]}])
        assert [line.status for line in report.lines] == ["committed", "duplicate"]
        store.remove(second.id, reason="job 2 was retired")
        assert store.write(JOB_2.replace("2", "4"), scopes=["ops"]).status == "committed"


def test_a_value_the_token_sets_miss_still_makes_two_facts():
    """"region A" and "region B": "a" is a stopword, so the sets differ by "b" alone; "item 1 ... row 1"
    and "item 0 ... row 0": both sets hold "0". Each was refused as a duplicate of the other (and the
    first credited as corroborated); read as written, each names a value the other lacks."""
    from kenning.memory.gates.duplicates import same_values, values

    assert values("Deploys to region A need two approvals. A second rule: plan B; I agree") == ["a", "b"]
    assert values("毎晩三時にバックアップする") == ["三"]
    for first, second in (("Deploys to region A need two approvals", "Deploys to region B need two approvals"),
                          ("Thread 0 item 0 row 0 harvest of the wheat field", "Thread 0 item 1 row 1 harvest of the wheat field")):
        assert overlap(first, second) >= DUPLICATE_THRESHOLD and not same_values(first, second)
        assert check_duplicate(second, [("m1", first)]).status is None
        assert check_duplicate(second, [("m1", token_set(first))], content_of={"m1": first}.get).status is None
        assert check_duplicate(second, [], [("t1", token_set(first), "gone")], content_of={"t1": first}.get).status is None
        assert check_duplicate(second + ".", [("m1", token_set(second))], content_of={"m1": second}.get).status == "duplicate"
    # a value only one side names is a rewording of the same fact, as for the token sets
    assert same_values("Deploys to region A need two approvals", "Deploys to region A need two approvals within 2 days")


def test_the_store_keeps_both_facts_the_token_sets_miss(tmp_path):
    import kenning

    with kenning.open_store(tmp_path / "s") as store:
        a = store.write("Deploys to region A need two approvals", scopes=["d"])
        b = store.write("Deploys to region B need two approvals", scopes=["d"])
        assert (a.status, b.status) == ("committed", "committed") and a.id in b.related
        assert store.write("Deploys to region B need two approvals!", scopes=["d"]).status == "duplicate"
        store.remove(b.id, reason="region B was merged into A")
        assert store.write("Deploys to region C need two approvals", scopes=["d"]).status == "committed"
        report = store.import_checked([{"content": "Deploys to region D need two approvals", "scopes": ["d"]},
                                       {"content": "Deploys to region B need two approvals.", "scopes": ["d"]}])
        assert [line.status for line in report.lines] == ["committed", "previously_removed"]
