"""The write gates over a whole import at once, so a bulk load is held to what a single write is.

Per record, in write order: the content gates (credentials, durability, user claims; an import
cannot stage a user-inference for confirmation, so one is refused with a pointer to `write`),
then duplicates. The batch form keeps it fast: the live memories' content hashes and the recent
tombstones' token sets are read once for the whole import, an exact repeat (of a live memory or
of an earlier line of the same import) is caught by hash without a search, and only the rest
probe the lexical index for near duplicates the way a single write does. Two lines of the same
import are compared by their word streams (``text.tokenize``: case, punctuation and spacing aside,
the same words in the same order), which a single write would call a duplicate of the other (every
word shared); looser near duplicates between two lines are not compared, as that would need the
index to hold lines not yet written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kenning.retrieval.text import tokenize

from . import duplicates, pipeline, run_content_gates

if TYPE_CHECKING:
    from kenning.store.db import Database
    from kenning.store.lexicon import Lexicon
    from kenning.store.models import Memory, StoreConfig


@dataclass(frozen=True)
class Verdict:
    """Why one record is not committed: refused (a gate), duplicate or previously_removed."""

    status: str
    gate: str
    reason: str
    match: str | None = None  # the live memory, tombstone or earlier line it repeats
    code: str | None = None  # the gate's own status, as a single write reports it (e.g. credential_warning)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def gate_batch(db: "Database", lexicon: "Lexicon", config: "StoreConfig", memories: list["Memory"],
               labels: list[str]) -> list[Verdict | None]:
    """One verdict per memory: None to commit it, else why not. Reads the store, writes nothing."""
    live = dict(db.read(lambda c: c.execute(
        "SELECT content_hash, id FROM memories WHERE removed_at IS NULL").fetchall()))
    tombstones = pipeline._tombstones(db)
    earlier: dict[str, str] = {}
    verdicts: list[Verdict | None] = []
    for memory, label in zip(memories, labels):
        verdict = _content_verdict(memory) or _repeat_verdict(memory, live, earlier)
        if verdict is None and (live or tombstones):
            verdict = _near_duplicate(db, lexicon, config, memory.content, tombstones)
        if verdict is None:
            earlier[_words(memory.content)] = label
        verdicts.append(verdict)
    return verdicts


def _content_verdict(memory: "Memory") -> Verdict | None:
    if memory.category == "user-inference":
        return Verdict("refused", "user_claims", "a user-inference needs the person's confirmation, which an "
                       "import cannot ask for; write it with `kenning write --category user-inference`",
                       code="user_claim_warning")
    refusal = run_content_gates(memory.content, memory.category)
    if refusal is None:
        return None
    return Verdict("refused", refusal.gate, f"{refusal.reason}. {refusal.hint}".strip(), code=refusal.status)


def _words(text: str) -> str:
    """What two lines of one import must share to repeat each other: their word streams (a text of
    no words, its exact text)."""
    return " ".join(tokenize(text, compounds=False)) or f"#{_hash(text)}"


def _repeat_verdict(memory: "Memory", live: dict[str, str], earlier: dict[str, str]) -> Verdict | None:
    digest = _hash(memory.content)
    if digest in live:
        return Verdict("duplicate", "duplicates", f"memory {live[digest]} already says this", live[digest], "duplicate")
    words = _words(memory.content)
    if words in earlier:
        return Verdict("duplicate", "duplicates", f"the same words as {earlier[words]}", earlier[words], "duplicate")
    return None


def _near_duplicate(db: "Database", lexicon: "Lexicon", config: "StoreConfig", content: str,
                    tombstones: list) -> Verdict | None:
    check = duplicates.check_duplicate(content, pipeline._neighbours(db, lexicon, config, content), tombstones,
                                       content_of=pipeline.content_of(db))
    if check.status == "duplicate":
        return Verdict("duplicate", "duplicates", f"memory {check.match.id} already says this "
                       f"({check.match.overlap:.0%} of their words are shared)", check.match.id, "duplicate")
    if check.status == "previously_removed":
        return Verdict("previously_removed", "duplicates", f"a memory like this ({check.match.id}) was removed: "
                       f"{check.match.reason}", check.match.id, "previously_removed")
    return None
