"""Truncation gate (updates only): an edit that shrinks a body and stops mid-sentence lost text.

Models rewriting a long memory sometimes send a body cut short. An update is refused with
``truncation_warning`` when the new body is shorter than the old one and either is a prefix of it
where the old one went on mid-sentence (the tail was cut off) or ends on a dangling word or mark ("... because the", "... and,").
A shorter body that ends a sentence passes, as does a longer one however it ends.
``acknowledge_truncation=True`` accepts a deliberate cut.
"""

from __future__ import annotations

import re

from kenning.memory.gates import GateRefusal

GATE = "truncation"
STATUS = "truncation_warning"
OVERRIDE = "acknowledge_truncation"
_DANGLING = re.compile(
    r"(?:[,;(\[{\-–—/&+=]|\b(?:the|a|an|and|or|but|to|of|with|for|in|on|at|by|from|that|which|because|so|as"
    r"|if|when|is|are|was|were|be|its|their|this|these|than|then|into|via|per))\s*$",
    re.I,
)


# what ends a sentence or a clause: ASCII's marks and those of scripts that write their own - CJK's
# full stop and full-width marks and closing brackets, Arabic's question mark and semicolon, the
# Urdu full stop, Devanagari's danda, Ethiopic's full stop
_BOUNDARY = frozenset(".;:!?)]。．｡！？；：）」』】〕》؟؛۔।॥።")


def check(old: str, new: str, acknowledge: bool = False) -> GateRefusal | None:
    """Refuse a shrinking edit that leaves the body ending mid-sentence, unless acknowledged."""
    if acknowledge:
        return None
    cut, before = new.rstrip(), old.rstrip()
    if len(cut) >= len(before):
        return None
    # a prefix cut loses text only when the old body went on mid-sentence (" and …", or mid-word);
    # stopping where the old one ended a clause ("; the windows build …") or a sentence ("… nightly.
    # It then …": the last sentences dropped) is an edit
    boundary = cut[-1:] in _BOUNDARY or before[len(cut):len(cut) + 1] in _BOUNDARY | {"\n"}
    prefix = before.startswith(cut) and not boundary
    dangling = _DANGLING.search(cut)
    if not (prefix or dangling):
        return None
    tail = cut[-40:]
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason=(f"the new body is {len(before) - len(cut)} characters shorter and ends mid-sentence "
                f"(…{tail!r})" + ("; it is the start of the old body with the rest cut off" if prefix else "")),
        hint="Send the complete body, or pass acknowledge_truncation=True if the cut is deliberate.",
        matched=[tail],
        override=OVERRIDE,
    )
