"""Groundedness gate (opt-in): every sentence of a memory should be supported by the conversation.

With ``groundedness_check=True`` and a ``source_transcript``, each sentence of the body is compared
with the transcript: the share of the sentence's content words (stopwords left out, same tokens as
the duplicates gate) that occur anywhere in the transcript. A sentence under
``MIN_SUPPORT`` (30 %) is a claim the transcript does not ground, most often a model's own
elaboration. The write returns ``ungrounded`` with those sentences; ``acknowledge_ungrounded=True``
writes it anyway when the grounding came from elsewhere (a file read, a tool result).
"""

from __future__ import annotations

import re

from kenning.memory.gates import GateRefusal
from kenning.memory.gates.duplicates import token_set

GATE = "groundedness"
STATUS = "ungrounded"
OVERRIDE = "acknowledge_ungrounded"
MIN_SUPPORT = 0.30
# a sentence ends at . ! ? and a space, at a line break, or at the marks of CJK (full stop,
# full-width ! and ?), which no space follows, and Arabic's question mark
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？؟])\s*|\n+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def support(sentence: str, transcript_tokens: frozenset[str]) -> float:
    """The share of a sentence's content tokens found in the transcript (1.0 for a sentence without any)."""
    tokens = token_set(sentence)
    return len(tokens & transcript_tokens) / len(tokens) if tokens else 1.0


def ungrounded_sentences(content: str, transcript: str) -> list[str]:
    grounded = token_set(transcript)
    return [s for s in sentences(content) if support(s, grounded) < MIN_SUPPORT]


def check(content: str, transcript: str | None, acknowledge: bool = False) -> GateRefusal | None:
    """Refuse sentences the transcript does not support; None when grounded, acknowledged or no transcript."""
    if acknowledge or transcript is None:
        return None
    claims = ungrounded_sentences(content, transcript)
    if not claims:
        return None
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason=f"{len(claims)} sentence(s) share under {MIN_SUPPORT:.0%} of their words with the source transcript",
        hint=("Drop or rephrase the unsupported sentences, or pass acknowledge_ungrounded=True when they come "
              "from a source outside the transcript (a file you read, a tool result)."),
        matched=claims,
        override=OVERRIDE,
    )
