"""The small write gates called directly (truncation, scope match, groundedness, write_enabled): each
refusal's exact reason, hint and override, and the edges of each rule. Store-level behaviour is in
test_spec_gates.py and test_lifecycle_write.py."""

import pytest

from kenning.memory.gates import GateRefused, groundedness, scope_match, truncation, write_enabled
from kenning.store.models import StoreConfig

OLD = "The deploy runs nightly. It then rotates the credentials and restarts the workers.\n\n"


def test_a_cut_that_stops_mid_sentence_is_refused_with_what_was_lost():
    new = "The deploy runs nightly. It then rotates the credentials and   "
    refusal = truncation.check(OLD, new)
    cut = new.rstrip()
    tail = cut[-40:]
    assert len(cut) > 40 and refusal.matched == [tail]
    assert (refusal.gate, refusal.status, refusal.override) == ("truncation", "truncation_warning",
                                                                  "acknowledge_truncation")
    assert refusal.reason == (f"the new body is {len(OLD.rstrip()) - len(cut)} characters shorter and ends "
                              f"mid-sentence (…{tail!r}); it is the start of the old body with the rest cut off")
    assert refusal.hint == "Send the complete body, or pass acknowledge_truncation=True if the cut is deliberate."
    assert truncation.check(OLD, new, acknowledge=True) is None


def test_a_dangling_end_that_is_no_prefix_is_refused_without_the_prefix_note():
    refusal = truncation.check(OLD, "The deploy rotates the credentials of")
    assert refusal.reason.endswith("(…'The deploy rotates the credentials of')")


def test_a_shorter_body_ending_a_sentence_and_an_equal_length_one_pass():
    assert truncation.check(OLD, "The deploy runs nightly.") is None  # the last sentence dropped (was refused: fixed)
    assert truncation.check("one two three.", "one two of the") is None  # not shorter: not a cut


@pytest.mark.parametrize("old, new", [
    ("本番サーバーは東京にあります。バックアップは毎晩三時に実行されます。", "本番サーバーは東京にあります。"),
    ("生产服务器位于上海机房！备份每天晚上执行一次。", "生产服务器位于上海机房！"),
    ("الخادم الرئيسي موجود في دبي؟ النسخ الاحتياطي يتم كل ليلة.", "الخادم الرئيسي موجود في دبي؟"),
    ("मुख्य सर्वर दिल्ली में है। बैकअप हर रात चलता है।", "मुख्य सर्वर दिल्ली में है।"),
])
def test_a_sentence_ended_by_the_mark_of_its_own_script_is_no_cut(old, new):
    """。！؟। end a sentence as "." does: dropping the sentences after one is an edit."""
    assert truncation.check(old, new) is None
    assert truncation.check(old, new[:-4]).status == "truncation_warning"  # cut inside the sentence


def test_groundedness_judges_each_chinese_sentence_on_its_own():
    """A CJK sentence ends at 。 with no space after: read as one sentence, the body's grounded
    sentences carried the invented one (a third of its bigrams in the transcript overall)."""
    body = "用户住在上海。他每天早上喝咖啡。他养了一只叫小白的橘猫，体重十二公斤。"
    transcript = "用户说他住在上海，每天早上都喝咖啡。"
    assert groundedness.ungrounded_sentences(body, transcript) == ["他养了一只叫小白的橘猫，体重十二公斤。"]


def test_write_enabled_false_refuses_every_change():
    with pytest.raises(GateRefused) as raised:
        write_enabled.require(StoreConfig(write_enabled=False))
    refusal = raised.value.refusal
    assert (refusal.gate, refusal.status) == ("write_enabled", "writes_disabled")
    assert refusal.reason == "writes are disabled on this store (write_enabled=false)"
    assert refusal.hint == "nothing was written; a person turns writes back on with: kenning config set write_enabled true"
    write_enabled.require(StoreConfig())  # on by default: nothing raised


def test_groundedness_sentences_support_and_the_boundary():
    assert groundedness.sentences("  \nThe deploy runs. It rotates keys!") == ["The deploy runs.", "It rotates keys!"]
    assert groundedness.support("!!!", frozenset()) == 1.0  # nothing to ground
    assert groundedness.support("alpha bravo", frozenset({"alpha"})) == 0.5
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    assert groundedness.support(words, frozenset(groundedness.token_set("alpha bravo charlie"))) == 0.3
    assert groundedness.ungrounded_sentences(words, "alpha bravo charlie") == []  # exactly MIN_SUPPORT: grounded
    assert groundedness.ungrounded_sentences(words, "alpha bravo") == [words]


@pytest.mark.parametrize("folder, scope, other", [
    ("東京", "projects:東京", "projects:大阪"), ("проект", "projects:Проект", "projects:задача"),
    ("cafe\u0301-app", "projects:café-app", "projects:bistro"),  # a decomposed folder name, a composed scope
])
def test_a_repository_named_in_another_script_matches_its_own_scope(tmp_path, folder, scope, other):
    """The default scope of a write in the repository 東京 is projects:東京: the gate must know it."""
    root = tmp_path / folder
    root.mkdir()
    assert scope_match.check([scope], str(root), None) is None
    assert scope_match.check([other], str(root), None).status == "scope_mismatch"


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "kenning_main"
    (root / "services" / "billing").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "notes").write_text("a file, not a directory")
    return str(root)


@pytest.mark.parametrize("scope", [
    "projects:Kenning-Main",   # punctuation and case do not matter
    "projects:kenningmain",    # ... on either side
    "projects:ken",            # three characters are enough for a part of the name
    "projects:mono/billing",   # the last part names a directory two levels down
    "repo:services",           # a top-level directory
])
def test_scopes_naming_this_checkout_pass(repo, scope):
    assert scope_match.check([scope], repo, None) is None


@pytest.mark.parametrize("scope", [
    "projects:ke",             # two characters are not
    "projects:ken-ning-x",     # punctuation is dropped, not turned into something else
    "projects:---",            # nothing left of the name
    "projects:notes",          # a file is not a directory of the project
    "projects:hidden",         # hidden directories do not count
    "projects:mono billing",   # only '/' separates parts
])
def test_scopes_naming_another_project_are_refused(repo, scope):
    refusal = scope_match.check([scope], repo, None)
    assert refusal is not None and refusal.status == "scope_mismatch", scope
    assert scope_match.check([scope], repo, None, acknowledge=True) is None


@pytest.mark.parametrize("value", ["pairing 👩‍💻 done", "flag 🏴󠁧󠁢󠁳󠁣󠁴󠁿", "می‌خواهم", "שלום\u200f world",
                                   "shaking \U0001fae8 (an emoji of Unicode 15)"])
def test_text_written_with_joiners_direction_marks_and_new_emoji_holds_no_control_character(value):
    """A removal reason, a note, metadata or a scope may hold what real text does: an emoji ZWJ
    sequence, a flag's tag characters, Persian's ZWNJ, a right-to-left mark, an emoji newer than
    Python's Unicode tables."""
    from kenning.memory.gates.limits import has_control_chars

    assert not has_control_chars(value)


@pytest.mark.parametrize("value", ["bell\x07", "esc\x1b[2J", "lone \ud800", "rlo \u202e txt", "zero\u200bwidth",
                                   "soft\u00adhyphen", "bom\ufeff", "private \ue000"])
def test_controls_and_characters_that_hide_or_reorder_text_are_control_characters(value):
    from kenning.memory.gates.limits import has_control_chars

    assert has_control_chars(value)


def test_metadata_names_where_a_control_character_hides():
    from kenning.errors import InvalidInput
    from kenning.memory.gates.limits import check_metadata

    with pytest.raises(InvalidInput, match=r"^metadata\.a\.b\[1\] contains a control character$"):
        check_metadata({"a": {"b": ["ok", "bad\x07"]}})
    with pytest.raises(InvalidInput, match=r"^metadata key contains a control character$"):
        check_metadata({"k\n": 1})
    assert check_metadata({"a": {"b": ["ok", 3, None]}, "c": ("x",)}) == {"a": {"b": ["ok", 3, None]}, "c": ("x",)}


def test_a_count_is_a_whole_number_from_one_to_the_most():
    from kenning.errors import InvalidInput
    from kenning.memory.gates.limits import check_count

    assert check_count(1) == 1 and check_count(10, most=10) == 10
    for bad in (0, 11, True, 2.0, "3"):
        with pytest.raises(InvalidInput, match=r"^batch size must be a whole number from 1 to 10, got "):
            check_count(bad, "batch size", most=10)
    with pytest.raises(InvalidInput, match=r"^limit must be a whole number from 1 to 1,000,000,000, got 0$"):
        check_count(0)


def test_a_scope_may_name_the_worktree_and_a_refusal_names_every_project(tmp_path, repo):
    worktree = tmp_path / "feature-tree"
    worktree.mkdir()
    assert scope_match.check(["projects:feature-tree"], repo, str(worktree)) is None
    refusal = scope_match.check(["projects:alpha", "repo:beta"], repo, str(worktree))
    assert refusal.reason == "the scopes name project(s) alpha, beta but this write comes from the 'kenning_main' repository"
    assert refusal.matched == ["projects:alpha", "projects:beta"] and refusal.override == "acknowledge_scope_mismatch"


def test_groundedness_refusal_text_and_its_override():
    refusal = groundedness.check("Kites fly in wind. Boats need water.", "kites fly in the wind")
    assert refusal.matched == ["Boats need water."] and refusal.override == "acknowledge_ungrounded"
    assert refusal.reason == "1 sentence(s) share under 30% of their words with the source transcript"
    assert refusal.hint == ("Drop or rephrase the unsupported sentences, or pass acknowledge_ungrounded=True when "
                            "they come from a source outside the transcript (a file you read, a tool result).")
    assert groundedness.check("Boats need water.", None) is None  # no transcript: nothing to ground against
    assert groundedness.check("Boats need water.", "kites", acknowledge=True) is None


def test_memory_text_limits_and_their_messages():
    from kenning.errors import InvalidInput
    from kenning.memory.gates.limits import MAX_CONTENT_BYTES, check_content

    assert check_content("ok") == "ok" and check_content("a1") == "a1"
    for empty in ("", "   ", None):
        with pytest.raises(InvalidInput, match=r"^memory text is empty; give the text to remember$"):
            check_content(empty)
    for wrong, name in ((b"bytes text", "bytes"), (12345, "int")):
        with pytest.raises(InvalidInput, match=rf"^memory text must be a string, got {name}$"):
            check_content(wrong)
    with pytest.raises(InvalidInput, match=r"^memory text is not valid Unicode"):
        check_content("caf\udce9 opens at nine")
    for short in ("x", " - ", "!?"):
        with pytest.raises(InvalidInput, match=r"is too short to remember: a memory needs at least two characters "
                                               r"and a letter or digit \(did a shell pass '-' or a stray symbol\?\)$"):
            check_content(short)
    assert check_content("a" * MAX_CONTENT_BYTES) == "a" * MAX_CONTENT_BYTES  # the limit itself is allowed
    with pytest.raises(InvalidInput, match=r"^memory text is 1,048,577 bytes; the limit is 1,048,576 \(1 MiB\)$"):
        check_content("a" * (MAX_CONTENT_BYTES + 1))


def test_scope_limits_and_their_messages():
    from kenning.errors import InvalidInput
    from kenning.memory.gates.limits import MAX_SCOPE_CHARS, check_scopes

    assert check_scopes("ops") == ["ops"] and check_scopes([" ops ", "ops", "x"]) == ["ops", "x"]
    assert check_scopes(["s" * MAX_SCOPE_CHARS]) == ["s" * MAX_SCOPE_CHARS]
    assert check_scopes(["team:a,b"]) == ["team:a,b"]  # a comma alone is a character of the tag, as before
    cases = [(None, r"^at least one scope is required"), ("", r"^at least one scope is required"),
             ({"ops": 1}, r"^scopes must be a list of strings, got dict$"),
             ([" "], r"^a scope is empty; use a short tag such as projects:kenning$"),
             ([3], r"^a scope must be a string, got int"), (["a\tb"], r"^scope 'a\\tb' contains a control character$"),
             (["s" * (MAX_SCOPE_CHARS + 1)], rf"is longer than {MAX_SCOPE_CHARS} characters$"),
             ("projects:c, projects:d", r"reads as a list; give each scope on its own"),
             (["ops", "a,\tb"], r"control character"), (["x,  y"], r"reads as a list")]
    for scopes, message in cases:
        with pytest.raises(InvalidInput, match=message):
            check_scopes(scopes)
    long = "s" * (MAX_SCOPE_CHARS + 1)
    with pytest.raises(InvalidInput) as too_long:
        check_scopes([long])
    assert str(too_long.value) == f"scope {long[:40]!r}… is longer than {MAX_SCOPE_CHARS} characters"


def test_at_most_max_scopes_distinct_scopes_are_kept_and_one_more_is_refused_exactly():
    from kenning.errors import InvalidInput
    from kenning.memory.gates.limits import MAX_SCOPES, check_scopes

    most = [f"area:{n}" for n in range(MAX_SCOPES)]
    assert check_scopes(most + most[:3]) == most  # repeats are not counted
    with pytest.raises(InvalidInput) as refused:
        check_scopes(most + ["area:one-more"])
    assert str(refused.value) == f"{MAX_SCOPES + 1} scopes given; at most {MAX_SCOPES} are allowed"


def test_metadata_that_is_not_an_object_is_refused_with_its_path():
    from kenning.errors import InvalidInput
    from kenning.memory.gates.limits import check_metadata

    for value in (["a", "b"], "text", 3):
        with pytest.raises(InvalidInput) as refused:
            check_metadata(value)
        assert str(refused.value) == "metadata must be an object (key/value pairs)"
    with pytest.raises(InvalidInput) as nested:
        check_metadata({"origin": {"tool": "x\ny"}})
    assert str(nested.value) == "metadata.origin.tool contains a control character"


def test_claims_without_a_worktree_are_uncheckable(tmp_path):
    from kenning.memory.gates import claims as claims_gate

    assert claims_gate.check([], None) is None
    refusal = claims_gate.check(["file:README.md"], None)
    assert (refusal.gate, refusal.status) == ("claims", "claims_uncheckable")
    assert refusal.reason == "claims are checked against a git worktree, and this write comes from outside any"
    assert refusal.hint == "Write from inside the repository the claims are about, or leave the claims out."
    assert refusal.matched == ["file:README.md"]
    assert claims_gate.check(["file:README.md"], str(tmp_path / "gone")).status == "claims_uncheckable"


def test_a_claim_that_does_not_hold_in_the_worktree_is_refused_with_what_failed(tmp_path):
    from kenning.memory.claims import parse_claims
    from kenning.memory.gates import claims as claims_gate

    (tmp_path / "present.txt").write_text("PORT = 8443\n")
    assert claims_gate.check(parse_claims(["present.txt"]), str(tmp_path)) is None
    refusal = claims_gate.check(parse_claims(["present.txt", "missing.txt"]), str(tmp_path))
    assert (refusal.gate, refusal.status) == ("claims", "claim_false")
    assert refusal.matched == ["missing.txt"]
    assert refusal.reason.startswith(f"claim(s) do not hold in {tmp_path}: missing.txt (")
    assert refusal.hint == "Correct the claim or the memory text so they match the code as it is now, then write again."


def test_a_claim_that_cannot_be_checked_is_uncheckable_not_false(tmp_path):
    from kenning.memory.claims import MAX_READ_BYTES, parse_claims
    from kenning.memory.gates import claims as claims_gate

    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "big.py").write_text("#\n" * (MAX_READ_BYTES // 2 + 1) + "LATE = 2\n")
    refusal = claims_gate.check(parse_claims(["gen/big.py::LATE=2"]), str(tmp_path))
    assert (refusal.status, refusal.matched) == ("claims_uncheckable", ["gen/big.py::LATE=2"])  # was claim_false
    assert "cannot be checked" in refusal.reason and "the rest of the file was not read" in refusal.reason
    mixed = claims_gate.check(parse_claims(["gen/big.py::LATE=2", "missing.txt"]), str(tmp_path))
    assert mixed.status == "claim_false"  # one is shown false


def test_the_content_gates_run_in_order_with_their_overrides_passed_on():
    from kenning.memory.gates import GateRefused, run_content_gates

    transient = "The deploy pipeline is blocked for now"
    claim = "The user prefers dark mode in every editor"
    secret = "The deploy key is " + "AKIA" + "Q3ZR7XKD2MPLW4NB" + " for now"  # split: no scanner flags this file
    assert run_content_gates(transient, "fact").gate == "durability"  # not acknowledged by default
    assert run_content_gates(transient, "fact", acknowledge_transient=True) is None
    refused = run_content_gates(claim, "fact")
    assert refused.gate == "user_claims" and "filed as 'fact'" in refused.reason  # the category is passed on
    assert run_content_gates(claim, "fact", acknowledge_user_claim=True) is None
    assert run_content_gates(claim, "user-inference") is None
    assert run_content_gates(secret, "fact", acknowledge_transient=True).gate == "credentials"
    assert run_content_gates(secret, "fact").gate == "credentials"  # credentials first, before durability
    error = GateRefused(refused)
    assert str(error) == f"user_claims gate refused it: {refused.reason}. {refused.hint}" and error.refusal is refused
