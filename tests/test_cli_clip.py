"""clip_values: a long quoted value in a one-line message is cut to its start and length; nothing else is."""

from __future__ import annotations

import pytest

from kenning.commands.support import CLIP_KEEP, clip_values

HINT = ("a memory needs at least two characters and a letter or digit (did a shell pass '-' or a stray "
        "symbol?)")


@pytest.mark.parametrize("message", [
    f"memory text '--' is too short to remember: {HINT}",  # the closing quote of '--' is no opening one
    f"memory text '-' is too short to remember: {HINT}",
    "the store's folder isn't writable, and the user's home isn't either; " * 3,
    f"""value "x" and then a long stretch of words that is surely over a hundred characters {"long " * 20}'y'""",
])
def test_short_values_and_apostrophes_are_left_whole(message):
    assert clip_values(message) == message


@pytest.mark.parametrize("before, after", [("id ", ""), ("id=", ""), ("id: ", ";"), ("(", ")"), ("[", "]"),
                                           ('{"id":', "}"), ("", " is unknown")])
def test_a_long_value_is_cut_wherever_a_message_quotes_it(before, after):
    value = "v" * 5000
    message = f"{before}'{value}'{after} - {HINT}"
    assert clip_values(message) == f"{before}'{'v' * CLIP_KEEP}…' (5,000 characters){after} - {HINT}"
