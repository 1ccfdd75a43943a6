"""Durability gate: a memory should still be true next month; run-state belongs in an episode.

Wording that pins a statement to the moment it was written ("currently", "right now", "as of
<date>", "this branch …", "WIP") marks the body as transient. The markers are phrases, not single
words like "current", so "the current version policy is …" passes. A caller who knows the
statement is durable as written passes ``acknowledge_transient=True``.
"""

from __future__ import annotations

import re

from kenning.memory.gates import GateRefusal

GATE = "durability"
STATUS = "transient_warning"
OVERRIDE = "acknowledge_transient"

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
# Dates and relative days only: "as of 3.12" or "as of version 2" is a durable versioned fact.
_DATE = (
    r"(?:\d{4}-\d{2}(?:-\d{2})?"  # 2026-03, 2026-03-14
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 3/14/2026
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"  # March 14, 2026
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?:,?\s+\d{{4}})?"  # 14 March 2026
    rf"|{_MONTH}\s+\d{{4}}"  # March 2026
    r"|today|tonight|yesterday|now|this (?:morning|afternoon|evening|week|month|sprint))"
)

# (marker shown to the caller, pattern)
_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("currently", re.compile(r"\bcurrently\b", re.I)),
    ("right now", re.compile(r"\bright now\b", re.I)),
    ("at the moment", re.compile(r"\bat the moment\b(?!\s+(?:of|when|that)\b)", re.I)),
    ("for now", re.compile(r"\bfor now\b", re.I)),
    ("in progress", re.compile(r"\b(?:work\s+)?in progress\b", re.I)),
    ("WIP", re.compile(r"\bWIP\b")),  # upper case only: "wip" is rarely an abbreviation
    ("as of <date>", re.compile(rf"\bas of\s+{_DATE}\b", re.I)),
    ("this branch", re.compile(r"\bthis branch\b", re.I)),
    ("this PR", re.compile(r"\bthis (?:PR|pull request|MR|merge request)\b", re.I)),
    ("today I'm", re.compile(r"\btoday,?\s+(?:I|we)(?:'m|'re|’m|’re|\s+am|\s+are)?\b", re.I)),
    ("I'm … today", re.compile(r"\b(?:I|we)(?:'m|'re|’m|’re|\s+am|\s+are)\s+(?:\w+\s+){0,4}today\b", re.I)),
]


def find_transient_markers(text: str) -> list[str]:
    """The transient markers present in text, each with the words it matched, in text order."""
    hits: list[tuple[int, str]] = []
    for label, pattern in _MARKERS:
        for m in pattern.finditer(text):
            hits.append((m.start(), label if m.group().lower() == label.lower() else f"{label}: {m.group()!r}"))
    return [label for _, label in sorted(hits)]


def check(content: str, acknowledge_transient: bool = False) -> GateRefusal | None:
    """Refuse run-state wording unless the caller acknowledges it is durable."""
    if acknowledge_transient:
        return None
    markers = find_transient_markers(content)
    if not markers:
        return None
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason="the text reads as run-state that will go stale (" + ", ".join(markers) + ")",
        hint=(
            "Write run-state as an episode (episode_write) instead. If the fact is durable, restate it "
            "without the time-bound wording, or pass acknowledge_transient=True."
        ),
        matched=markers,
        override=OVERRIDE,
    )
