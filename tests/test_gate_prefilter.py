"""The content gates' literal screen (memory/gates/prefilter.py) never changes a verdict.

Every text of the gate corpora, every string in the gate test files, a slice of the benchmark
corpus and generated texts built from the screens' own literals go through each gate twice, with
the screen and with every pattern run; the findings must be identical.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kenning.memory.gates import credentials, durability, prefilter, user_claims

TESTS = Path(__file__).parent
ROOT = TESTS.parent


def _gate_test_strings() -> list[str]:
    """Every string constant of the gate test files (the cases they assert on)."""
    out: list[str] = []
    for path in sorted(TESTS.glob("test_gate_*.py")) + sorted(TESTS.glob("test_*_corpus.py")) + [
            TESTS / "test_gates_units.py", TESTS / "test_write_pipeline.py", TESTS / "test_credentials_units.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 3:
                out.append(node.value)
    return out


def _credential_corpus() -> list[str]:
    spec = importlib.util.spec_from_file_location("credentials_corpus", TESTS / "data" / "credentials_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [item["text"] for item in module.corpus()]


def _durability_corpus() -> list[str]:
    return [line.strip() for path in sorted((TESTS / "data" / "durability").glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _bench_corpus() -> list[str]:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from corpus import Corpus
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return list(Corpus().memories(300))


@pytest.fixture(scope="module")
def texts() -> list[str]:
    found = _gate_test_strings() + _credential_corpus() + _durability_corpus() + _bench_corpus()
    return list(dict.fromkeys(found))


def _same_verdicts(text: str) -> None:
    assert credentials.find_credentials(text) == credentials.find_credentials(text, screened=False), text
    assert durability.find_transient_markers(text) == durability.find_transient_markers(text, screened=False), text
    assert user_claims.find_user_claims(text) == user_claims.find_user_claims(text, screened=False), text


def test_screened_and_full_scans_agree_on_every_corpus(texts):
    assert len(texts) > 2000
    flagged = 0
    for text in texts:
        _same_verdicts(text)
        flagged += bool(durability.find_transient_markers(text) or credentials.find_credentials(text)
                        or user_claims.find_user_claims(text))
    assert flagged > 500  # the corpora exercise the patterns, not only the screen's refusals


def test_the_screen_rules_out_most_patterns_for_ordinary_text():
    text = "the billing service runs on helm behind the envoy proxy and writes to postgres"
    for module in (credentials, durability, user_claims):
        may = module._SCREEN.derive().may_match(text)
        assert may is not None and sum(may) <= len(may) // 4


_LITERALS = sorted({s for m in (credentials, durability, user_claims) for s in m._SCREEN.derive().literals
                    if s.isascii()})
_PIECES = _LITERALS + [" ", ". ", ", ", "\n", "`x`", "(", ")", "=", ":", "/", "@", "-", "9c4e2fa", "2024-05-01",
                       "AKIA", "ghp_", "Ab3", "zz", "The", "I", "We", "user", "you", "42", "%", "'", '"']


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14),
       st.lists(st.booleans(), min_size=14, max_size=14))
def test_screened_and_full_scans_agree_on_generated_texts(pieces, upper):
    text = " ".join(p.upper() if up else p for p, up in zip(pieces, upper))
    _same_verdicts(text)


def test_clauses_of_simple_shapes():
    assert prefilter.clauses(re.compile(r"\bfor now\b")) == (frozenset({"for now"}),)
    assert prefilter.clauses(re.compile(r"\b(?:is|are)\s+blocked\b", re.I)) == (
        frozenset({"is", "are"}), frozenset({"blocked"}))
    assert prefilter.clauses(re.compile(r"(?:x|\d+)y?")) == ()  # an alternative needs nothing
    assert prefilter.clauses(re.compile(r"[0-9a-f]{7,40}")) == ()
    assert prefilter.clauses(re.compile(r"AKIA[0-9A-Z]{16}")) == (frozenset({"akia"}),)  # compared lower-cased


def test_texts_are_checked_in_full_until_they_add_up_to_the_threshold_then_screened():
    screen = prefilter.Screen([re.compile(r"\bfor now\b")])
    short = "nothing here"  # a logged query or a hit id: many of them never pay for the derivation
    for _ in range(prefilter.DERIVE_AFTER_CHARS // len(short)):
        assert screen.may_match(short) is None and screen._needs is None
    assert screen.may_match(short) is None  # this one reaches the threshold
    assert screen._needs is None
    assert screen.may_match("nothing here") == [False]
    assert screen.may_match("fine for now") == [True]
    long = prefilter.Screen([re.compile(r"\bfor now\b")])
    # a long memory alone reaches the threshold: screened at once (a full scan of 1 MiB costs seconds)
    assert long.may_match("x" * (prefilter.DERIVE_AFTER_CHARS - 1)) is None and long._needs is None
    assert long.may_match("x" * prefilter.DERIVE_AFTER_CHARS + " for now") == [True] and long._needs is not None


def test_non_ascii_text_is_screened_with_the_letters_ignorecase_takes_for_ascii():
    # under IGNORECASE "k" matches the Kelvin sign, which lower-casing does not turn into "k"
    assert re.compile("kelvin", re.I).search("\u212aelvin")
    assert durability._SCREEN.derive().may_match("\u212aelvin") is not None
    assert prefilter.fold("\u212aelvin \u0130S \u017fecret \u0131t \u4e00") == "kelvin is secret it \u4e00"
    assert user_claims.find_user_claims("The user prefers \u212aotlin") == \
        user_claims.find_user_claims("The user prefers \u212aotlin", screened=False) != []
    for text in ("The u\u017fer prefers vim", "\u0130 am running it", "currently \u4e2d\u6587", "PG_PA\u017f\u017fWORD=\u212aelvin1",
                 "we are fixing it \u2014 today", "the build is r\u0130d"):
        _same_verdicts(text)


def test_only_the_folded_letters_match_an_ascii_letter_under_ignorecase():
    # every code point: which non-ASCII characters does IGNORECASE take for an ASCII letter?
    letters = re.compile("[abcdefghijklmnopqrstuvwxyz]", re.I)
    found = {chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF and letters.fullmatch(chr(c))}
    assert found == set(prefilter.ASCII_FOLDS)
    for ch, letter in prefilter.ASCII_FOLDS.items():
        assert re.fullmatch(letter, ch, re.I) and re.fullmatch(f"[{letter}]", ch, re.I)
    # the screens' non-ASCII literals (quotes, dashes, bullets) match only themselves
    others = sorted({ch for m in (credentials, durability, user_claims) for lit in m._SCREEN.derive().literals
                     for ch in lit if not ch.isascii()})
    assert others
    own = re.compile("[" + "".join(others) + "]", re.I)
    assert {chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF and own.fullmatch(chr(c))} == set(others)


def test_present_finds_the_literals_a_substring_test_finds():
    import random

    literals = sorted({s for m in (credentials, durability, user_claims) for s in m._SCREEN.derive().literals})
    rng = random.Random(3)
    alphabet = list("abcdefgh isnotedr'-_.:/\n\t,") + ["\u00e9", "\u4e00", "0", "\u212a", "\u2019"]
    for _ in range(150):
        n = rng.choice([50, prefilter.LONG_TEXT - 1, prefilter.LONG_TEXT, 9000, 30000])
        text = "".join(rng.choice(literals) if rng.random() < 0.3 else rng.choice(alphabet) for _ in range(n // 3))
        low = prefilter.fold(text)
        assert prefilter.present(literals, low) == [s for s in literals if s in low]


def test_long_bodies_get_the_verdicts_of_a_full_scan(texts):
    # the gates screen a long body through its distinct runs (prefilter.present); ASCII and not
    body = "\n".join(texts[:1500])
    for text in (body, " ".join(texts[1500:]), body.replace("s", "\u017f").replace("k", "\u212a"),
                 body.replace("i", "\u0131") + " \u4e00\u4e01" * 3000, "\u4e2d\u6587" * 5000 + " currently"):
        assert len(text) >= prefilter.LONG_TEXT
        _same_verdicts(text)


def _combos(*pairs: tuple[str, str]) -> set[str]:
    out = {""}
    for pair in pairs:
        out = {a + b for a in out for b in pair}
    return out


SIX = [("aa", "b"), ("cc", "dd"), ("ee", "ff"), ("gg", "hh"), ("ii", "jj"), ("kk", "ll")]

# each pattern's literal requirements, worked out by hand from what any match must contain
DERIVED = [
    (r"\bfor now\b", [{"for now"}]),  # word boundaries are zero width
    (r"\b(?:is|are)\s+(?:still\s+)?blocked", [{"is", "are"}, {"blocked"}]),  # \s+ and an optional group break the run
    (r"ab(?:cd)?ef", [{"ab"}, {"ef"}]),
    (r"x{2}y", [{"xxy"}]),  # an exact repeat is spelt out
    (r"(?:ab)+z", [{"ab"}, {"z"}]),  # an open repeat still needs one copy
    (r"[Aa]pi[_-]?key", [{"api"}, {"key"}]),  # a class of literals is a set, lower-cased
    (r"t\w+oken", [{"t"}, {"oken"}]),
    (r"(?>xy)z", [{"xyz"}]),  # an atomic group is a sequence
    (r"(?:foo|\d+)bar", [{"bar"}]),  # one alternative needs nothing, so the branch requires nothing
    (r"(?:foo|bar)(?:baz|qux)", [{"foo", "bar"}, {"baz", "qux"}, {"foobaz", "fooqux", "barbaz", "barqux"}]),
    (r"é\w", []),  # a cased non-ASCII letter is left unknown
    (r"(?:abc|de)", [{"abc", "de"}]),
    (r"[a-z]+", []),  # a range is no literal
    (r"(?i)SECRET", [{"secret"}]),
    (r"(?:xyz\d|pq\s)w", [{"xyz", "pq"}, {"w"}]),  # each alternative's most selective clause
    (r"(?:ab|c)(?:de|f)g", [{"ab", "c"}, {"de", "f"}, {"abdeg", "abfg", "cdeg", "cfg"}]),
    # 2**7 = 128 spellings exceed MAX_EXACT (64): the run is cut after six branches
    ("".join(f"(?:{a}|{b})" for a, b in SIX) + "(?:mm|nn)",
     [{a, b} for a, b in SIX] + [{"mm", "nn"}, _combos(*SIX)]),
    (r"(?:a|b)(?:x|y)*q", [{"a", "b"}, {"q"}]),  # a repeat that may be empty breaks the run
    (r"(?:hello|\w)", []),
    (r"(ab)c", [{"abc"}]),  # a capturing group is a sequence too
    (r"q[abcd]{3}", [{"q" + s for s in _combos(*[tuple("abcd")] * 3)}]),  # 4**3 = 64 spellings: still spelt out
    (r"q[abcdefgh]{3}", [{"q"}, set("abcdefgh")]),  # 8**3 = 512: only one copy's letters are required

    # re's parser turns a|b into the class [ab], which requires nothing by itself; {3} spells it out
    (r"z(?:a|b){3}", [{"z" + s for s in _combos(("a", "b"), ("a", "b"), ("a", "b"))}]),
]


@pytest.mark.parametrize("pattern, expected", DERIVED, ids=[f"pattern{i}" for i in range(len(DERIVED))])
def test_each_pattern_requires_exactly_the_literals_worked_out_by_hand(pattern, expected):
    from kenning.memory.gates.prefilter import clauses

    assert sorted(map(sorted, clauses(re.compile(pattern)))) == sorted(map(sorted, expected))
