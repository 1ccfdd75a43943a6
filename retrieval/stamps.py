"""A timestamp in front of a memory, which the vector leg ranks without.

"1:56 pm on 8 May, 2023. Caroline: Hey Mel!", "2024-07-01 09:30 - deployed ...", "14 October 2024:
MV Brannock made a hard landing ...": the stamp says when the text was written or happened, not
what it says. The lexical legs index it (a temporal question matches its words), but a sentence
encoder averages its tokens, and in a short chat turn the stamp is half of them: every turn of a
session is pulled toward every other, and away from the question. So the vector leg ranks a
memory by the vector of its text without its leading stamp, while the label reads the cosine of
the whole text (``Semantic.label_cosines``), the scale its thresholds were measured on: a stripped
chat turn that repeats a question's words reads closer than it answers (LoCoMo, whose turns all
carry their session's date: hybrid nDCG@10 .5426 -> .5567, each of the five conversations up,
its `high` precision kept; eval/baselines/README.md, "Twenty-second pass"). Only a stamp at the
very start is one, closed by punctuation or a bracket, or by a space when it holds both a date and
a time: "8 May is the deadline" and "10:00 stand-up every weekday" are sentences and stay whole.
A change to ``STAMP`` changes ``store.semantic.STAMPS_VERSION``, so stores re-embed what it moves.
"""

from __future__ import annotations

import re

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_TIME = r"\d{1,2}(?::\d{2}){1,2}(?:\.\d+)?\s*(?:[ap]\.?m\.?)?(?:\s*(?:z|utc|gmt|[+-]\d{2}:?\d{2}))?|\d{1,2}\s*[ap]\.?m\.?"
_DATE = (rf"\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
         rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?"
         rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?")
_WHEN = rf"(?:(?:{_TIME})\s*(?:on\s+|,\s*)?)?(?:{_DATE})(?:(?:[t\s]|,\s*|\s+at\s+)(?:{_TIME}))?"
# a date with its time is a stamp even when only a space follows ("2024-07-01 09:30 deployed ...",
# a log line); a date alone must be closed by punctuation or a bracket ("8 May is the deadline")
_DATED_TIME = rf"(?:{_TIME})\s*(?:on\s+|,\s*)?(?:{_DATE})|(?:{_DATE})(?:[t\s]|,\s*|\s+at\s+)(?:{_TIME})"
STAMP = re.compile(rf"^\s*(?:\[(?:{_WHEN})\]|\((?:{_WHEN})\)|(?:{_WHEN})\s*[.:;,|–—-]|(?:{_DATED_TIME})(?=\s))\s+",
                   re.IGNORECASE)


def strip(text: str) -> str:
    """``text`` without a leading timestamp (``STAMP``); unchanged when it has none, or is nothing else."""
    match = STAMP.match(text)
    return text[match.end():] if match and match.end() < len(text) else text


def has_stamp(text: str) -> bool:
    """Whether the vector leg reads ``text`` without a leading stamp (``strip`` changes it)."""
    return strip(text) != text


def describe() -> str:
    """What the vector leg reads of a stamped memory, for the eval report's "what ran"."""
    return ("a memory opening with a timestamp is ranked by its text without it; its label reads the "
            "cosine of the whole text")
