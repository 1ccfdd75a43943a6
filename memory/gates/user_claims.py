"""User-claims gate: a claim about the user goes through the user's veto, never straight in.

A body that reads as a statement about the person the agent works with ("the user prefers …",
"User likes …", "you prefer …", "I (the user) am …") must be filed as ``user-inference``, which
stays pending until confirmed. Misattribution sticks, so the user decides.

The patterns are narrow on purpose. Software text talks about *users* all the time ("the user
table has …", "user-facing API", "the user is redirected to /login"), so a claim needs the user as
the subject of a verb of preference, identity or habit. Conditionals ("if the user prefers
reduced motion …") describe an application's users, not this user, and pass. "<Name> prefers"
passes too: a named person may be a colleague, and a name alone does not say who the user is.
"""

from __future__ import annotations

import re

from kenning.memory.gates import GateRefusal, prefilter

GATE = "user_claims"
STATUS = "user_claim_warning"
OVERRIDE = "acknowledge_user_claim"
USER_CATEGORY = "user-inference"

# Verbs of preference, feeling and personal habit; deliberately not is/has/can/uses/never, which
# describe application users ("the user never sees the token") as often as the person.
_VERB = (
    r"(?:prefers?|likes?|loves?|hates?|dislikes?|enjoys?|favou?rs?|would rather|wants me to|wants you to"
    r"|asked me to|asked you to|told me|doesn'?t like|does not like|doesn'?t want|does not want"
    r"|can'?t stand|is allergic|is (?:a|an) (?:beginner|novice|expert|senior|junior)"
    r"|tends to|works (?:at|for|as)|lives in|speaks|is learning|is based in)\b"
)
_CONDITIONAL = r"(?<!\bif )(?<!\bwhen )(?<!\bunless )(?<!\bwhether )(?<!\bonce )(?<!\bin case )"

# (label shown to the caller, pattern)
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # "the user prefers", "the user's favourite editor"; "User likes" opening a sentence or line
    ("the user …", re.compile(rf"{_CONDITIONAL}\b(?:the|this|our|my) user\s+{_VERB}", re.I)),
    ("the user's favourite …", re.compile(rf"{_CONDITIONAL}\b(?:the|this|our|my) user'?s favou?rite\b", re.I)),
    ("User …", re.compile(rf"(?:^|(?<=[.!?:;])\s)\s*(?:[-*•]\s+)?user\s+{_VERB}", re.I | re.M)),
    # second person: the memory addresses the user directly
    (
        "you …",
        re.compile(
            rf"{_CONDITIONAL}\byou\s+(?:prefer|like|love|hate|dislike|enjoy|would rather|tend to"
            r"|are (?:a|an) (?:beginner|novice|expert|senior|junior|\w+ (?:developer|engineer|user))"
            r"|work (?:at|for|as)|live in)\b",
            re.I,
        ),
    ),
    ("you're a …", re.compile(rf"{_CONDITIONAL}\byou(?:'re|’re) (?:a|an)\s+\w+", re.I)),
    ("I (the user) …", re.compile(r"\bI\s*[(,]\s*(?:the\s+)?user\s*[),]", re.I)),
    ("as the user, I …", re.compile(r"\bas the user,?\s+I\b", re.I)),
]


_SCREEN = prefilter.Screen([pattern for _, pattern in _PATTERNS])


def find_user_claims(text: str, screened: bool = True) -> list[str]:
    """The phrases that make text read as a claim about the user, in text order. ``screened``
    skips the patterns whose literals are absent (the same result; False runs every pattern)."""
    may = _SCREEN.may_match(text) if screened else None
    hits: list[tuple[int, str]] = []
    for i, (label, pattern) in enumerate(_PATTERNS):
        if may is not None and not may[i]:
            continue
        for m in pattern.finditer(text):
            hits.append((m.start(), f"{label}: {m.group().strip()!r}"))
    return [label for _, label in sorted(hits)]


# an update cannot change a memory into a user-inference (that needs the user's confirmation), so its hint says how instead
UPDATE_HINT = (
    "A memory cannot become a user-inference by update: write the claim anew with memory_write and "
    "category='user-inference' so the user can confirm it, then memory_remove this one; if the subject is "
    "someone else (an application's users, a colleague), pass acknowledge_user_claim=True."
)


def check(content: str, category: str, acknowledge_user_claim: bool = False) -> GateRefusal | None:
    """Refuse a claim about the user filed under any category but user-inference, unless acknowledged."""
    if category == USER_CATEGORY or acknowledge_user_claim:
        return None
    phrases = find_user_claims(content)
    if not phrases:
        return None
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason=f"the text reads as a claim about the user but is filed as {category!r}",
        hint=(
            "Re-issue the write with category='user-inference' so the user can confirm it; if the "
            "subject is someone else (an application's users, a colleague), pass acknowledge_user_claim=True."
        ),
        matched=phrases,
        override=OVERRIDE,
    )
