"""The batch write gates (memory/gates/batch.py) through Store.import_checked: each verdict's status, gate,
code, match and wording, the tombstone threshold at exactly 0.75, and what an import line is compared with.
Expected overlaps come from duplicates.overlap on the texts themselves."""

from kenning.memory.gates import duplicates, run_content_gates


def _line(store, text, **extra):
    return store.import_checked([{"text": text, **extra}]).lines[0]


def test_a_user_inference_is_refused_with_a_pointer_to_write(store):
    line = _line(store, "The user seems to prefer short answers", category="user-inference")
    assert (line.status, line.gate, line.code) == ("refused", "user_claims", "user_claim_warning")
    assert line.reason == ("a user-inference needs the person's confirmation, which an import cannot ask for; "
                           "write it with `kenning write --category user-inference`") and store.count() == 0


def test_a_secret_is_refused_as_a_single_write_would_report_it(store):
    text = "The wifi password=Sunflower2024xyz"
    refusal = run_content_gates(text, None)
    line = _line(store, text)
    assert (line.status, line.gate, line.code) == ("refused", refusal.gate, refusal.status)
    assert line.reason == f"{refusal.reason}. {refusal.hint}".strip() and line.match is None


def test_an_exact_repeat_names_the_live_memory_or_the_earlier_line(store):
    first = store.import_checked([{"text": "The auth service listens on port 8443"}]).ids[0]
    report = store.import_checked([{"text": "The auth service listens on port 8443"},
                                   {"text": "Deploys pass through staging first"},
                                   {"text": "Deploys pass through staging first"}], labels=["a", "b", "c"])
    live, _, repeat = report.lines
    assert (live.status, live.gate, live.code, live.match) == ("duplicate", "duplicates", "duplicate", first)
    assert live.reason == f"memory {first} already says this"
    assert (repeat.status, repeat.gate, repeat.code) == ("duplicate", "duplicates", "duplicate")
    assert (repeat.match, repeat.reason) == ("b", "the same words as b")
    assert store.count() == 2


def test_a_line_with_an_earlier_lines_words_is_its_repeat_whatever_the_case_and_punctuation(store):
    """What a single write calls a duplicate (every word shared) an import must not commit twice."""
    report = store.import_checked([{"text": "Pi service writes audit logs to S3"},
                                   {"text": "pi service  writes audit logs to s3."},
                                   {"text": "Pi service writes audit logs to S3 daily"}], labels=["a", "b", "c"])
    first, repeat, longer = report.lines
    assert first.status == "committed" and longer.status == "committed"
    assert (repeat.status, repeat.match, repeat.reason) == ("duplicate", "a", "the same words as a")
    assert store.count() == 2
    refusal = store.write("pi service writes audit logs to s3", scopes=["global"])  # a single write agrees
    assert refusal.status == "duplicate"


def test_a_near_duplicate_of_a_live_memory_names_it_and_the_shared_share(store):
    old, new = "The auth service listens on port 8443", "The auth service listens on port 8443 internally"
    first = store.import_checked([{"text": old}]).ids[0]
    share = duplicates.overlap(new, old)
    assert duplicates.DUPLICATE_THRESHOLD <= share < 1
    report = store.import_checked([{"text": new}, {"text": new}], labels=["x", "y"])
    for line in report.lines:  # a skipped line is no "earlier line" for the next: both name the live memory
        assert (line.status, line.gate, line.code, line.match) == ("duplicate", "duplicates", "duplicate", first)
        assert line.reason == f"memory {first} already says this ({share:.0%} of their words are shared)"
    assert store.count() == 1


def test_a_near_repeat_of_a_removed_memory_at_the_threshold_is_previously_removed(store):
    """Only a tombstone in the store (no live memory): the near-duplicate probe still runs."""
    gone = store.import_checked([{"text": "kiwi mango papaya"}]).ids[0]
    assert store.remove(gone, reason="fruit list moved")
    new = "kiwi mango papaya guava"
    assert duplicates.overlap(new, "kiwi mango papaya") == duplicates.DUPLICATE_THRESHOLD  # 3 of 4 words
    line = _line(store, new)
    assert (line.status, line.gate, line.code, line.match) == (
        "previously_removed", "duplicates", "previously_removed", gone)
    assert line.reason == f"a memory like this ({gone}) was removed: fruit list moved" and store.count() == 0


def test_below_the_threshold_of_the_best_tombstone_the_line_is_committed(store):
    ids = store.import_checked([{"text": "kiwi mango papaya"}, {"text": "apricot cherry"}]).ids
    for memory_id in ids:
        store.remove(memory_id, reason="gone")
    new = "kiwi mango papaya guava lychee"
    assert duplicates.overlap(new, "kiwi mango papaya") < duplicates.DUPLICATE_THRESHOLD
    assert _line(store, new).status == "committed" and store.count() == 1


def test_the_best_of_several_tombstones_is_named(store):
    ids = store.import_checked([{"text": "kiwi mango papaya"}, {"text": "kiwi mango papaya guava"},
                                {"text": "quartz granite basalt"}]).ids
    for memory_id, why in zip(ids, ["first", "second", "third"]):
        store.remove(memory_id, reason=why)
    line = _line(store, "kiwi mango papaya guava")  # an exact repeat of the second, 3/4 of the first
    assert (line.status, line.match) == ("previously_removed", ids[1])
    assert line.reason.endswith("was removed: second")


def test_near_duplicates_within_one_import_are_not_compared(store):
    report = store.import_checked([{"text": "kiwi mango papaya"}, {"text": "kiwi mango papaya guava"}])
    assert [line.status for line in report.lines] == ["committed", "committed"] and store.count() == 2


def test_a_claim_about_the_user_is_refused_under_the_category_it_was_filed_as(store):
    text = "The user prefers dark mode"
    refusal = run_content_gates(text, "ambient")
    line = _line(store, text, category="ambient")
    assert (line.status, line.gate, line.code) == ("refused", "user_claims", "user_claim_warning")
    assert line.reason == f"{refusal.reason}. {refusal.hint}" and "filed as 'ambient'" in line.reason
