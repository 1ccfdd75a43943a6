"""Helpers rewritten so a 1 MiB body costs one pass (bench/large_write.py times it) answer as before."""

from __future__ import annotations

import pytest

from kenning.errors import InvalidInput
from kenning.memory.gates import credentials, limits


@pytest.mark.parametrize("text", ["", "a", "\n", "x = 1\n", "pw=abc \n next", "tail without newline  ",
                                  "  \n\n", "a\r\nb", "é\u2028x\ny"])
def test_rest_of_line_is_the_split_it_replaced(text):
    for pos in range(len(text) + 2):
        assert credentials._rest_of_line(text, pos) == text[pos:].split("\n", 1)[0].strip()


@pytest.mark.parametrize("text", ["plain", "two\nlines", "tab\tand\x0bform", "lone \ud800 high", "lone \udfff low",
                                  "pair \U0001f600 ok", "nul \x00 here", "\ud83d\ude00 two surrogates"])
def test_check_storable_refuses_what_the_character_loop_refused(text):
    def original(value: str) -> str | None:
        if not value.isprintable() and any("\ud800" <= ch <= "\udfff" for ch in value):
            return "surrogate"
        return "nul" if "\x00" in value else None

    try:
        limits.check_storable(text, "memory text")
        got = None
    except InvalidInput as exc:
        got = "surrogate" if "surrogate" in str(exc) else "nul"
    assert got == original(text)


def test_a_long_body_of_secret_assignments_is_refused_with_the_findings_capped():
    body = "PG_PASSWORD=sunshine\n" * 20_000
    refusal = credentials.check(body)
    assert refusal is not None and len(refusal.matched) == credentials.MAX_FINDINGS
    assert refusal.matched[1] == "secret assignment on line 2: PG_PASSWORD=***"
