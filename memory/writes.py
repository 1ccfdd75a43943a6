"""Writing memories: gate, then commit (or stage for confirmation); bulk import; update.

Every change is one transaction: the row, its scopes and links, the lexical index, the embedding
queue and the event all commit together or not at all. The model never runs inside it: new text
is queued, then embedded at once when the encoder can run (Session.embed_if_loaded).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from kenning.errors import InvalidInput, Stale, StorageError
from kenning.retrieval.batch_tokens import BatchTokenizer
from kenning.store import records
from kenning.store.ids import new_ulid
from kenning.store.lexicon import ImportTail
from kenning.store.models import ImportLine, ImportReport, Link, Memory, WriteResult, iso
from kenning.store.semantic import enqueue, enqueue_range, forget

from . import collector, events, health, pending as pending_mod, requests
from .claims import parse_claims
from .gates import GateRefused, batch as batch_gates, pipeline, run_content_gates, truncation, user_claims, write_enabled
from .gates.limits import check_content, check_count, check_metadata, check_scopes
from .session import Session
from .staleness import VERIFIED_HEAD, head_of

CURATION_HINT = "curation_hint"  # logged when a write carried the hint: once per session
CURATION_RECHECK = timedelta(minutes=10)  # how long a measured curation pressure is trusted
# what memory_verify keeps in a memory's metadata: attestations of the text it checked, void for a new one
ATTESTED = ("verified_commits", "verified_versions", VERIFIED_HEAD)


def write(
    s: Session,
    content: str,
    scopes: Iterable[str] | str,
    category: str,
    confidence: str,
    source: str,
    metadata: dict | None,
    links: list[dict | Link] | None,
    claims: list[str] | None,
    acknowledge_transient: bool,
    acknowledge_user_claim: bool,
    acknowledge_scope_mismatch: bool,
    acknowledge_ungrounded: bool,
    force: bool,
    groundedness_check: bool,
    source_transcript: str | None,
) -> WriteResult:
    """Gate, then commit one memory, or stage it (user-inference, or require_write_confirmation).

    A malformed request raises InvalidInput / NotFound; a gate's refusal is returned as a
    WriteResult whose status is the gate's (transient_warning, duplicate, …) and writes nothing,
    except that a duplicate credits its match a corroboration (once per session).
    ``groundedness_check=True`` compares every sentence with ``source_transcript``.
    ``force=True`` writes through duplicate, previously_removed and scope_mismatch.
    """
    if groundedness_check and not (isinstance(source_transcript, str) and source_transcript.strip()):
        raise InvalidInput("groundedness_check needs source_transcript: the conversation text to check against")
    # the settings, the probe's lexicon and the tombstones share one look at the store (store/db.py)
    with s.db.one_generation() as looks_now:
        # read before the block's look: a commit that look misses lies past it (pipeline.run)
        seen = pipeline.last_rowid(s.db) if looks_now else None
        config = s.config
        refusal = write_enabled.check(config)
        if refusal is not None:
            return pipeline.refused(refusal)
        origin = s.locate()
        request = {
            "content": content, "scopes": scopes, "category": category, "confidence": confidence, "source": source,
            "metadata": metadata, "links": requests.link_dicts(links or []),
            "claims": [str(c) for c in parse_claims(requests.texts(claims, "claims"))],
            "acknowledge_transient": bool(acknowledge_transient),
            "acknowledge_user_claim": bool(acknowledge_user_claim),
            "acknowledge_scope_mismatch": bool(acknowledge_scope_mismatch), "force": bool(force),
            "acknowledge_ungrounded": bool(acknowledge_ungrounded),
            "origin": None if origin is None else {"repo": origin.repo, "worktree": origin.worktree,
                                                   "commit": origin.commit},
        }
        memory, gated = _gated(s, request, source_transcript if groundedness_check else None, seen)
    if isinstance(gated, WriteResult):
        return _credit_duplicate(s, gated)
    if memory.category == "user-inference" or config.require_write_confirmation:
        request["scopes"], request["metadata"] = memory.scopes, memory.metadata
        # groundedness is judged once, now: the staged write passed it and keeps no transcript
        request["acknowledge_ungrounded"] = request["acknowledge_ungrounded"] or groundedness_check
        with s.transaction() as c:
            staged = pending_mod.stage(c, s.session_id, request, s.clock())
            events.log(c, staged.created, s.session_id, events.PENDING, None,
                       {"pending_id": staged.id, "reason": staged.reason})
        return WriteResult(status="pending", pending_id=staged.id, pending_reason=staged.reason,
                           expires=staged.expires, related=gated.related,
                           removed_matches=gated.removed_matches, warnings=requests.warnings(memory))
    with s.transaction() as c:
        late = None if request["force"] else pipeline.late_duplicate(c, memory.content, gated)
        if late is None:
            result = _commit(s, c, memory, gated, events.WRITE, {"category": memory.category})
    if late is not None:
        return _credit_duplicate(s, late)
    s.embed_if_loaded([memory.id])
    return _with_curation_hint(s, result)


def confirm_write(s: Session, pending_id: str, own_session: bool = False) -> WriteResult:
    """Commit a staged write, gated again against the store as it is now; a refusal keeps it staged.
    ``own_session``: only a write this session staged (an agent's connection: the user's veto over
    an inference about them is given in that conversation, not by another agent)."""
    _check_pending_id(pending_id)
    now = s.clock()
    state, staged = s.db.read(lambda c: pending_mod.lookup(c, pending_id, now))
    if state == "live" and own_session and staged.session != s.session_id:
        return WriteResult(status="not_found", pending_id=pending_id, reason=ANOTHER_SESSIONS)
    if state != "live":
        return _gone(pending_id, state, staged)
    refusal = write_enabled.check(s.config)
    if refusal is not None:
        return pipeline.refused(refusal).model_copy(update={"pending_id": staged.id, "pending_retained": True})
    memory, gated = _gated(s, staged.request)
    if isinstance(gated, WriteResult):
        return _credit_duplicate(s, gated).model_copy(update={"pending_id": staged.id, "pending_retained": True})
    with s.transaction() as c:
        state, _ = pending_mod.lookup(c, staged.id, s.clock())
        if state != "live":  # confirmed or cancelled by someone else meanwhile
            return _gone(pending_id, state, staged)
        pending_mod.drop(c, staged.id)
        result = _commit(s, c, memory, gated, events.CONFIRM, {"pending_id": staged.id})
    s.embed_if_loaded([memory.id])
    return _with_curation_hint(s, result.model_copy(update={"pending_id": staged.id}))


def cancel_write(s: Session, pending_id: str, own_session: bool = False) -> dict[str, Any]:
    """Drop a staged write: cancelled, or expired / not_found when there was nothing left to drop;
    ``own_session``: only a write this session staged (``confirm_write``)."""
    _check_pending_id(pending_id)
    now = s.clock()
    with s.transaction() as c:
        state, staged = pending_mod.lookup(c, pending_id, now)
        if state == "live" and own_session and staged.session != s.session_id:
            return {"status": "not_found", "pending_id": pending_id, "existed": False, "reason": ANOTHER_SESSIONS}
        if state == "live":
            pending_mod.drop(c, staged.id)
            events.log(c, now, s.session_id, events.CANCEL, None, {"pending_id": staged.id})
    return {"status": "cancelled" if state == "live" else state, "pending_id": pending_id, "existed": state == "live"}


ANOTHER_SESSIONS = ("another session staged this write: only that session confirms or cancels it here (a person "
                    "can with `kenning confirm` or `kenning cancel`, or on the HTTP page)")


def pending_writes(s: Session, all_sessions: bool = False) -> list[dict[str, Any]]:
    """Unexpired staged writes of this session (or of every session), oldest first."""
    staged = pending_mod.live(s.db, s.clock(), None if all_sessions else s.session_id)
    return [p.to_dict() for p in staged]


def import_records(
    s: Session,
    items: Iterable[dict],
    batch_size: int,
    progress: Callable[[int], None] | None,
    default_scopes: list[str] | None,
    labels: list[str] | None,
    embed: bool,
) -> list[str]:
    """Validate every record first, then commit in batches; a bad record means nothing is written.

    The trusted bulk path: no write gates run (``import_checked`` runs them). A record is ``{"content" or "text", "scopes"?, "id"?, "category"?, "metadata"?}``; a given ``id``
    is kept (external ids survive), otherwise a ULID is assigned; ``labels`` name the records in
    error messages (``"line 7"``). The bulk path (corpora, migrations): no write gates run and no
    origin is recorded, so imported memories are global (visible from every repository under
    auto_scope). ``embed=True`` embeds them now when the embeddings extra works, instead of leaving
    them queued for `kenning index` or a server's background embedder.
    """
    batch_size = check_count(batch_size, "batch_size")
    _check_import(items, progress)
    write_enabled.require(s.config)
    memories = _import_memories(s, items, default_scopes, labels)
    since = _newest_rowid(s)
    existing = records.existing_ids(s.db, [m.id for m in memories])
    if existing:
        raise InvalidInput(f"{len(existing)} id(s) already in the store, e.g. {sorted(existing)[0]!r}")
    _insert_batches(s, memories, batch_size, progress, embed, since=since, refuse_late=True)
    return [m.id for m in memories]


def import_checked(
    s: Session,
    items: Iterable[dict],
    batch_size: int,
    progress: Callable[[int], None] | None,
    default_scopes: list[str] | None,
    labels: list[str] | None,
) -> ImportReport:
    """Import through the write gates, in batch form: each record is committed, refused (secrets,
    run-state wording, a user-inference, an id that names another memory) or skipped as a duplicate
    of a live memory, a removed one or an earlier record. Importing the same records again commits
    nothing new. A malformed record still means nothing is written (InvalidInput)."""
    batch_size = check_count(batch_size, "batch_size")
    _check_import(items, progress)
    write_enabled.require(s.config)
    items = items if isinstance(items, list) else list(items)
    memories = _import_memories(s, items, default_scopes, labels)
    labels = labels or [f"record {n}" for n in range(1, len(memories) + 1)]
    since = _newest_rowid(s)  # the gates see the store up to here; each batch checks what came after
    verdicts = batch_gates.gate_batch(s.db, s.lexicon, s.config, memories, labels)
    taken = records.existing_ids(s.db, [m.id for m, v in zip(memories, verdicts) if v is None])
    lines, accepted = [], []
    for memory, label, verdict in zip(memories, labels, verdicts):
        if verdict is None and memory.id in taken:
            if _stored_hash(s, memory.id) == records.content_hash(memory.content):
                # committed since the gates looked (another import of this file running at once)
                verdict = batch_gates.Verdict("duplicate", "duplicates", "already in the store (committed by "
                                              "another import running at the same time)", match=memory.id, code="duplicate")
            else:
                verdict = batch_gates.Verdict("refused", "limits", f"id {memory.id!r} already names another memory",
                                              code="id_taken")
        if verdict is None:
            accepted.append(memory)
            lines.append(ImportLine(label=label, status="committed", id=memory.id))
        else:
            lines.append(ImportLine(label=label, status=verdict.status, gate=verdict.gate,
                                    reason=verdict.reason, match=verdict.match, code=verdict.code))
    late = _insert_batches(s, accepted, batch_size, progress, embed=False, since=since,
                           by_text=[True] * len(accepted))
    return ImportReport(lines=_late_lines(lines, late, "duplicate"), ignored_keys=_ignored_keys(items))


def import_bulk(
    s: Session,
    items: Iterable[dict],
    batch_size: int = 2000,
    progress: Callable[[int], None] | None = None,
    default_scopes: list[str] | None = None,
    labels: list[str] | None = None,
    embed: bool = False,
) -> ImportReport:
    """The trusted bulk path (no gates, like ``import_records``) made resumable: a record already
    in the store is skipped as ``already_present`` and the rest committed, so re-running an import
    cut off by a crash finishes it. A record with an ``id`` is present when that id holds the same
    text (the same id with another text refuses the whole import); one without an id is present
    when a memory with the same text hash exists (as many times as the file repeats it)."""
    batch_size = check_count(batch_size, "batch_size")
    _check_import(items, progress)
    write_enabled.require(s.config)
    items = items if isinstance(items, list) else list(items)
    memories = _import_memories(s, items, default_scopes, labels)
    labels = labels or [f"record {n}" for n in range(1, len(memories) + 1)]
    given = [isinstance(r, dict) and r.get("id") is not None for r in items]
    since = _newest_rowid(s)
    present = _already_present(s, memories, given)
    lines, todo, by_text = [], [], []
    for memory, label, stored, g in zip(memories, labels, present, given):
        if stored is None:
            todo.append(memory)
            by_text.append(not g)
            lines.append(ImportLine(label=label, status="committed", id=memory.id))
        else:
            lines.append(ImportLine(label=label, status="already_present", id=stored, match=stored,
                                    reason="already in the store (an earlier import of this record)"))
    late = _insert_batches(s, todo, batch_size, progress, embed, since=since, by_text=by_text,
                           matched={p for p in present if p is not None})
    return ImportReport(gated=False, lines=_late_lines(lines, late, "already_present"),
                        ignored_keys=_ignored_keys(items))


def _already_present(s: Session, memories: list[Memory], given: list[bool]) -> list[str | None]:
    """For each memory, the id of the stored memory it repeats, or None when it is new."""
    explicit = [m.id for m, g in zip(memories, given) if g]
    by_id: dict[str, str] = {}
    for i in range(0, len(explicit), 500):
        chunk = explicit[i : i + 500]
        by_id.update(s.db.read(lambda c: c.execute(
            f"SELECT id, content_hash FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall()))
    hashes = list(dict.fromkeys(records.content_hash(m.content) for m, g in zip(memories, given) if not g))
    stored: dict[str, list[str]] = {}
    for i in range(0, len(hashes), 500):
        chunk = hashes[i : i + 500]
        for digest, mid in s.db.read(lambda c: c.execute(
                f"SELECT content_hash, id FROM memories WHERE content_hash IN ({','.join('?' * len(chunk))}) "
                "ORDER BY rowid", chunk).fetchall()):
            stored.setdefault(digest, []).append(mid)
    out: list[str | None] = []
    for memory, g in zip(memories, given):
        digest = records.content_hash(memory.content)
        if g:
            if memory.id not in by_id:
                out.append(None)
            elif by_id[memory.id] == digest:
                out.append(memory.id)
            else:
                raise InvalidInput(f"id {memory.id!r} already names a memory with other text; "
                                   "nothing was imported (give that record another id, or remove the old one)")
        else:
            same = stored.get(digest)
            out.append(same.pop(0) if same else None)  # each stored copy answers one line
    return out


def _check_pending_id(pending_id: object) -> None:
    """confirm_write(5) failed as a several-line pydantic ValidationError; cancel_write(5) answered not_found."""
    if not isinstance(pending_id, str):
        raise InvalidInput("pending_id must be a string (the id a staged write answered), got "
                           f"{type(pending_id).__name__}")


def _check_import(items: object, progress: object) -> None:
    """The records must be an iterable of dicts: one dict, a string or None was refused as 'record 1:
    expected a JSON object' or a TypeError ('NoneType' object is not iterable); progress a function."""
    if isinstance(items, dict):
        raise InvalidInput("records must be a list of records, got one dict; wrap it in a list: [record]")
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidInput(f"records must be a list (or iterable) of dicts, got {type(items).__name__}")
    if progress is not None and not callable(progress):
        raise InvalidInput(f"progress must be a function (it is called with the count done), got "
                           f"{type(progress).__name__}")


def _import_memories(s: Session, items: Iterable[dict], default_scopes: list[str] | None,
                     labels: list[str] | None, shapes: bool = True) -> list[Memory]:
    """Every record as a Memory, or InvalidInput naming the first bad one (nothing is written).

    A record of a shape seen before in this import (``_shape``: the same keys, scopes, category,
    confidence and source) is built from the first such record's validated Memory with its own
    id, text and time, instead of being validated field by field again: the same Memory, at a
    fraction of pydantic's cost a record. ``shapes=False`` validates every record in full."""
    if labels is not None and (not isinstance(labels, (list, tuple)) or not all(isinstance(x, str) for x in labels)):
        raise InvalidInput(f"labels must be a list of strings, one per record (such as 'line 7'), got {labels!r:.60}")
    with collector.paused():  # every memory made here stays alive until written (memory/collector.py)
        memories = _validated_memories(s, items, default_scopes, labels, shapes)
    if labels and len(labels) != len(memories):  # the reports zip records with labels: those past the last went unwritten
        raise InvalidInput(f"{len(labels)} labels for {len(memories)} records; give one label per record, or none")
    return memories


def _validated_memories(s: Session, items: Iterable[dict], default_scopes: list[str] | None,
                        labels: list[str] | None, shapes: bool) -> list[Memory]:
    memories, seen = [], set()

    def where(n: int) -> str:  # a label list too short is refused once every record is read
        return labels[n - 1] if labels and n <= len(labels) else f"record {n}"

    validated: dict[tuple, Memory] = {}  # shape -> the first validated memory of that shape
    for number, record in enumerate(items, start=1):
        try:
            if not isinstance(record, dict):
                raise InvalidInput("expected a JSON object")
            fields = _fields(record, default_scopes)
            shape = _shape(fields) if shapes else None
            first = validated.get(shape) if shape is not None else None
            if first is None:
                memory = requests.new_memory(fields, s.clock())
                if shape is not None:
                    validated[shape] = memory
            else:
                memory = _like(first, fields, s.clock())
        except InvalidInput as exc:
            raise InvalidInput(f"{where(number)}: {exc}") from exc
        if memory.id in seen:
            raise InvalidInput(f"{where(number)}: id {memory.id!r} appears twice")
        seen.add(memory.id)
        memories.append(memory)
    return memories


# what an import line may set (``text`` is another name for ``content``), and the keys kenning's own
# ``show --json`` adds beside them, which a re-import of that output carries and ignores
_IMPORTABLE = frozenset(Memory.model_fields) | {"text"}
_SHOWN = frozenset({"summary", "version", "staleness_verdict", "verification", "path_drift_missing",
                    "staleness_reasons", "path_drift", "commit_drift", "reverse_links",
                    # the trust fields show adds only in some states (staleness.to_hit_fields, reads.show)
                    "path_drift_status", "path_drift_reason", "claim_anchored_missing", "commit_drift_count",
                    "commit_drift_scope", "commit_drift_status", "commit_drift_reason", "superseded_by",
                    "recent_negative_outcomes"})
_READ = _IMPORTABLE | _SHOWN  # every key an import line may carry without a word


def _ignored_keys(items: list) -> dict[str, int]:
    """Keys of the records that are neither a memory's (nor ``show --json``'s) and were not refused as
    misspelt ones: each with how many records carried it, the most frequent first. Read past, they
    may still be something the caller meant to keep (``tags``), so the import report names them."""
    counts: dict[str, int] = {}
    for record in items:
        if not record.keys() <= _READ:  # a C-level test: a record of known keys costs no more than this
            for key in record.keys() - _READ:
                name = key if isinstance(key, str) else repr(key)  # a library caller's int key, say
                counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], str(item[0]))))


def _misspelt(record: dict) -> None:
    """Refuse a key that reads as a misspelt importable one ("scope" for ``scopes``): ignored, it
    would send the memory to the default scope (or drop its category) without a word."""
    for key in record:
        if key in _IMPORTABLE or key in _SHOWN or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, _IMPORTABLE, n=1, cutoff=0.8)
        if close and close[0] not in record:
            raise InvalidInput(f"unknown key {key!r}: did you mean {close[0]!r}?")


def _fields(record: dict, default_scopes: list[str] | None) -> dict:
    """An import record as write fields: ``text`` is another name for ``content``; scopes default."""
    _misspelt(record)
    fields = dict(record)
    if "content" not in fields and "text" in fields:
        fields["content"] = fields.pop("text")
    elif "text" in fields:  # both: one was dropped without a word when they differed
        text = fields.pop("text")
        if text != fields["content"]:
            raise InvalidInput("give the body as content or as text, not two different ones")
    fields.setdefault("scopes", default_scopes or ["imported"])
    return fields


# record keys whose values either belong to the shape or are checked one by one (_like)
_SHAPED_KEYS = frozenset({"content", "scopes", "id", "category", "confidence", "source"})


def _shape(fields: dict) -> tuple | None:
    """What a record's Memory shares with every other record of the same shape: all but its id,
    text and time. None when the record has anything else (metadata, links, claims, times, an
    unknown key) or a value that is not plain text: such a record is validated in full."""
    if not fields.keys() <= _SHAPED_KEYS:
        return None
    scopes, get = fields["scopes"], fields.get
    rest = (get("category"), get("confidence"), get("source"))
    # the types counted by C loops (set displays), not a generator a value: this runs for every record
    if not isinstance(scopes, list) or not {*map(type, scopes)} <= _STR or not {*map(type, rest)} <= _STR_OR_NONE:
        return None
    return (frozenset(fields), tuple(scopes), *rest)


_STR, _STR_OR_NONE = frozenset({str}), frozenset({str, type(None)})


def _like(first: Memory, fields: dict, now: datetime) -> Memory:
    """A record of ``first``'s shape as ``requests.new_memory`` would build it: its text and id
    checked the same way, everything else as validated for ``first``."""
    content = check_content(fields.get("content"))
    given = fields.get("id")
    id = new_ulid() if given is None else requests.check_id(given)
    return requests.sibling(first, {"id": id, "content": content, "created": now, "updated": now,
                                    "scopes": list(first.scopes)})


def _insert_batches(s: Session, memories: list[Memory], batch_size: int,
                    progress: Callable[[int], None] | None, embed: bool, since: int | None = None,
                    by_text: list[bool] | None = None, refuse_late: bool = False,
                    matched: set[str] | None = None) -> dict[str, tuple[str, str | None]]:
    """Commit validated memories in batches of one transaction each (row, index, embedding queue).

    With ``since`` (the newest memory rowid when the caller looked for what is already stored),
    each batch first reads, under the write lock, the memories committed after that by anyone
    else (another import of the same file running at once): a memory whose id is now taken, or
    (where ``by_text``) whose text one of them holds, is not inserted. Returns those, id ->
    (``present`` or ``id_taken``, the stored memory's id). ``refuse_late``: such a memory stops
    the import instead (InvalidInput; the batches before it stay committed). ``matched``: stored
    memories the caller already answered a record with, which answer no other."""
    done = 0
    late: dict[str, tuple[str, str | None]] = {}
    others = _OthersRows(since, matched or set()) if since is not None else None
    tail = ImportTail()
    tokenizer = BatchTokenizer()
    with s.db.bulk_writes(), collector.paused():
        for start in range(0, len(memories), batch_size):
            batch = memories[start : start + batch_size]
            coded = tokenizer.encode([m.content for m in batch])  # each text tokenized once, the batch at a time
            with s.transaction() as c:
                if others is not None:
                    keep = others.filter(c, batch, (by_text or [])[start : start + batch_size], late)
                    if len(keep) < len(batch) and refuse_late:
                        kept = {m.id for m in keep}
                        taken = sorted(m.id for m in batch if m.id not in kept)
                        raise InvalidInput(f"{len(taken)} id(s) were stored by another process during this import, "
                                           f"e.g. {taken[0]!r}; it stopped after committing {done} memories")
                    if len(keep) < len(batch):  # rare: another import committed some of them meanwhile
                        batch = keep
                        coded = tokenizer.encode([m.content for m in batch])
                if batch:
                    tail.check(s.db)
                    keys = records.insert_many(c, batch, coded.terms)
                    s.lexicon.add_coded(c, [(key, m.updated.timestamp()) for key, m in zip(keys, batch)], coded, tail)
                    enqueue_range(c, keys[0], keys[-1])  # insert_many's rowids are consecutive
                    # sealed before COMMIT, while the write lock keeps everyone else out: a stamp taken
                    # after it could already include another writer's commit and trust a stale tail
                    tail.sealed(s.db)
                    if others is not None:
                        others.since = keys[-1]  # every row up to ours was read under this lock
            done += len(memories[start : start + batch_size])
            if progress:
                progress(done)
    if embed and s.semantic.availability().working:
        s.semantic.embed_pending()
    elif memories:
        s.embed_if_loaded()
    return late


def _stored_hash(s: Session, id: str) -> str | None:
    row = s.db.read(lambda c: c.execute("SELECT content_hash FROM memories WHERE id = ?", (id,)).fetchone())
    return row[0] if row else None


def _newest_rowid(s: Session) -> int:
    return s.db.read(lambda c: c.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchone()[0])


class _OthersRows:
    """The memories other processes committed during an import (after rowid ``since``, the
    newest one when the import looked for what is stored): read in each batch's transaction."""

    def __init__(self, since: int, matched: set[str]):
        self.since = since
        self.matched = matched  # already answered a record (the caller's look found them)
        self.ids: dict[str, str] = {}  # id -> content hash
        self.hashes: dict[str, list[str]] = {}  # content hash -> ids not yet matched to a record

    def filter(self, c: Any, batch: list[Memory], by_text: list[bool],
               late: dict[str, tuple[str, str | None]]) -> list[Memory]:
        """The memories of ``batch`` no such memory holds already (the same id; or, where
        ``by_text``, the same text: each stored copy answers one record); the others go to ``late``."""
        rows = c.execute("SELECT id, content_hash FROM memories WHERE rowid > ? ORDER BY rowid",
                         (self.since,)).fetchall()
        for mid, digest in rows:
            self.ids[mid] = digest
            if mid not in self.matched:
                self.hashes.setdefault(digest, []).append(mid)
        if rows:
            self.since = c.execute("SELECT MAX(rowid) FROM memories").fetchone()[0]
        if not self.ids:
            return batch
        keep = []
        for i, memory in enumerate(batch):
            digest = records.content_hash(memory.content)
            if memory.id in self.ids:
                same = self.ids[memory.id] == digest
                late[memory.id] = ("present" if same else "id_taken", memory.id)
                if memory.id in self.hashes.get(digest, []):
                    self.hashes[digest].remove(memory.id)
            elif i < len(by_text) and by_text[i] and self.hashes.get(digest):
                late[memory.id] = ("present", self.hashes[digest].pop(0))
            else:
                keep.append(memory)
        return keep


def _late_lines(lines: list[ImportLine], late: dict[str, tuple[str, str | None]], present: str) -> list[ImportLine]:
    """Report lines with the memories another import committed meanwhile (``_insert_batches``) as
    ``present`` (duplicate / already_present) or refused, not as committed."""
    if not late:
        return lines
    out = []
    for line in lines:
        what = late.get(line.id) if line.status == "committed" else None
        if what is None:
            out.append(line)
        elif what[0] == "present":
            gate, code = ("duplicates", "duplicate") if present == "duplicate" else (None, None)
            out.append(ImportLine(label=line.label, status=present, match=what[1], gate=gate, code=code,
                                  reason="already in the store (committed by another import running at the same time)"))
        else:
            out.append(ImportLine(label=line.label, status="refused", gate="limits", code="id_taken",
                                  reason=f"id {line.id!r} already names another memory"))
    return out


def update(
    s: Session,
    id: str,
    text: str | None,
    scopes: Iterable[str] | None,
    confidence: str | None,
    category: str | None,
    links: list[dict | Link] | None,
    metadata: dict | None,
    acknowledge_transient: bool,
    acknowledge_user_claim: bool,
    acknowledge_truncation: bool,
    version: str | None,
) -> Memory:
    """Change fields of a live memory and bump ``updated``; a new text clears its verification.

    A new text passes the content gates (credentials, durability, user claims) like a write, and
    the truncation gate (a shorter body ending mid-sentence); a refusal raises GateRefused and
    changes nothing. Scopes and links replace the old lists whole. ``version`` (from show or
    search) makes the update conditional: a memory changed since raises Stale and nothing is written.
    """
    changes: dict[str, Any] = {
        k: v for k, v in {"content": text, "scopes": scopes, "confidence": confidence,
                          "category": category, "links": links, "metadata": metadata}.items()
        if v is not None
    }
    if not changes:
        raise InvalidInput("nothing to update; give new text, scopes, confidence, category, links or metadata")
    write_enabled.require(s.config)
    if category == "user-inference":
        raise InvalidInput("a memory cannot become user-inference by update: that category needs the "
                           "user's confirmation, so write it anew with category user-inference")
    if text is not None:
        changes["content"] = check_content(text)
    if scopes is not None:
        changes["scopes"] = check_scopes(scopes)
    if metadata is not None:
        changes["metadata"] = check_metadata(metadata)
    if links is not None:
        changes["links"] = requests.link_dicts(links)
    requests.no_secret_in(changes.get("scopes", []), changes.get("metadata"))
    with s.transaction() as c:
        updated, text_changed = apply_update(s, c, id, changes, acknowledge_transient, acknowledge_user_claim,
                                             acknowledge_truncation, version)
    if text_changed:
        s.embed_if_loaded([updated.id])
    return updated


def apply_update(s: Session, c: Any, id: str, changes: dict[str, Any], acknowledge_transient: bool = False,
                 acknowledge_user_claim: bool = False, acknowledge_truncation: bool = False,
                 version: str | None = None) -> tuple[Memory, bool]:
    """``update``'s change, checked fields already in ``changes``, inside the caller's transaction
    ``c`` (so a caller changing several memories commits them together); the memory as updated and
    whether its text changed (the caller embeds it after the commit)."""
    text = changes.get("content")
    rowid, memory = records.live_row(c, id)
    if version is not None and version != memory.version:
        raise Stale(memory.id, version, memory.version)
    fields = memory.model_dump()
    fields.update(changes)
    text_changed = text is not None and text != memory.content
    if text_changed:
        refusal = (run_content_gates(text, fields["category"], acknowledge_transient, acknowledge_user_claim)
                   or truncation.check(memory.content, text, acknowledge_truncation))
        if refusal is not None and refusal.gate == user_claims.GATE:
            refusal = refusal.model_copy(update={"hint": user_claims.UPDATE_HINT})
        if refusal is not None:
            raise GateRefused(refusal)
        fields.update(last_verified_at=None, verification_note=None, verified_paths=[],
                      verified_absent_paths=[], claims=[],
                      metadata={k: v for k, v in fields["metadata"].items() if k not in ATTESTED})
        if fields["origin"] and (head := head_of(memory.origin)):
            # the new text is written against the code as it is now: commit drift counts from here,
            # not from the first text's commit (a rewrite read as "N commits since it was written")
            fields["origin"] = {**fields["origin"], "commit": head}
    fields["updated"] = max(s.clock(), memory.updated)
    updated = requests.validated(fields)
    # only a link the update adds must name a memory here: one it keeps may point past the store (an
    # import of live memories only carries links to tombstones left behind), and refusing it refused every update
    kept = {(link.kind, link.target) for link in memory.links}
    records.check_link_targets(c, [link for link in updated.links if (link.kind, link.target) not in kept],
                               self_id=updated.id)
    records.replace(c, rowid, updated, scopes="scopes" in changes, links="links" in changes)
    if text_changed:
        s.lexicon.remove(c, rowid)
        s.lexicon.add(c, rowid, updated.content, updated.updated.timestamp())
        forget(c, rowid)
        enqueue(c, [rowid])
    else:
        s.lexicon.touch(c, rowid, updated.updated.timestamp())
    events.log(c, updated.updated, s.session_id, events.UPDATE, updated.id,
               {"fields": sorted(changes), "text_changed": text_changed})
    return updated, text_changed


def _with_curation_hint(s: Session, result: WriteResult) -> WriteResult:
    """``_curation_hint``, which reads the store after the write committed: a failure there (a damaged
    page among the old memories) is a warning on the committed write, never a failed write."""
    try:
        return _curation_hint(s, result)
    except StorageError as exc:
        return result.model_copy(update={"warnings": [*result.warnings, f"committed; the curation check after "
                                                                         f"it could not read the store: {exc}"]})


def _curation_hint(s: Session, result: WriteResult) -> WriteResult:
    """Attach the one-shot curation hint to a commit when the curation pressure crossed the threshold.

    The counts (``health.pressure_counts``: the hint's three buckets, which still read every
    memory older than the dead-weight age and the event log's retrievals) are measured at most once per
    ``CURATION_RECHECK`` for a view, by whichever session (each CLI call is one) gets there first,
    and kept in the store's meta table: a high pressure as well as a low one, or every new session
    of a store with much dead weight would scan again."""
    if result.status != "committed":
        return result
    now = s.clock()
    if s.curation_checked_at is not None and timedelta(0) <= now - s.curation_checked_at < CURATION_RECHECK:
        return result  # measured low a moment ago in this session (asked first: no statement; not in the clock's future)
    shown = s.db.read(lambda c: c.execute(
        "SELECT 1 FROM events WHERE session = ? AND kind = ? LIMIT 1", (s.session_id, CURATION_HINT)).fetchone())
    if shown:
        return result
    view = s.view(True)
    mark = "curation_counts:" + hashlib.sha256(
        repr((view.where(), s.config.verification_stale_days)).encode()).hexdigest()[:16]
    counts = _measured_counts(s.db.get_meta(mark), now)
    if counts is None:
        counts = health.pressure_counts(s.db, view, now)
        with s.transaction() as c:
            s.db.set_meta(c, mark, json.dumps({"at": iso(now), "counts": counts}))
    hint = health.curation_hint(counts)
    if hint is None:
        s.curation_checked_at = now
        return result
    s.log(CURATION_HINT, payload={"pressure": hint["pressure"]})
    return result.model_copy(update={"curation_hint": hint})


def _measured_counts(stored: str | None, now: datetime) -> dict[str, int] | None:
    """The counts a session measured less than ``CURATION_RECHECK`` ago (and not in the clock's future)."""
    if stored is None:
        return None
    try:
        measured = json.loads(stored)
        at, counts = measured["at"], measured["counts"]
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(at, str) or not isinstance(counts, dict) or not iso(now - CURATION_RECHECK) < at <= iso(now):
        return None
    return counts


def _credit_duplicate(s: Session, result: WriteResult) -> WriteResult:
    """A duplicate is evidence: credit the memory that already says it, once per session."""
    if result.status != "duplicate" or result.id is None:
        return result
    with s.transaction() as c:
        seen = c.execute("SELECT 1 FROM events WHERE session = ? AND kind = ? AND memory_id = ? LIMIT 1",
                         (s.session_id, events.CORROBORATE, result.id)).fetchone()
        if seen is None:
            events.log(c, s.clock(), s.session_id, events.CORROBORATE, result.id,
                       {"overlap": (result.match or {}).get("overlap")})
    return result.model_copy(update={"corroboration_recorded": seen is None})


def _gated(s: Session, request: dict[str, Any], source_transcript: str | None = None,
           seen: int | None = None) -> tuple[Memory, WriteResult | pipeline.Passed]:
    """Validate a write request into a Memory and run the gates: (memory, refusal or what passed);
    ``seen`` as ``pipeline.run`` takes it."""
    origin = request.get("origin")
    memory = requests.new_memory({
        "content": request["content"], "scopes": request["scopes"], "category": request["category"],
        "confidence": request["confidence"], "source": request["source"], "metadata": request["metadata"],
        "links": request["links"], "claims": [{"spec": c} for c in request["claims"]], "origin": origin,
    }, s.clock())
    s.db.read(lambda c: records.check_link_targets(c, memory.links))
    with s.db.lock:  # the lexicon's in-memory caches must not change under the gates' probe search
        gated = pipeline.run(
            s.db, s.lexicon, s.config, memory.content, memory.category, parse_claims(request["claims"]),
            origin["worktree"] if origin else None, pipeline.Overrides.from_request(request),
            scopes=memory.scopes, repo=origin["repo"] if origin else None, source_transcript=source_transcript,
            seen=seen,
        )
    return memory, gated


def _commit(s: Session, c: sqlite3.Connection, memory: Memory, passed: pipeline.Passed, kind: str,
            payload: dict) -> WriteResult:
    """Insert a gated memory inside the caller's transaction: row, index entry, embedding queue, event."""
    records.check_link_targets(c, memory.links)
    rowid = records.insert(c, memory, passed.terms)
    s.lexicon.add(c, rowid, memory.content, memory.updated.timestamp(), passed.tokens)
    enqueue(c, [rowid])
    events.log(c, memory.created, s.session_id, kind, memory.id, payload)
    return WriteResult(status="committed", id=memory.id, related=passed.related,
                       removed_matches=passed.removed_matches, warnings=requests.warnings(memory))


def _gone(pending_id: str, state: str, staged: pending_mod.PendingWrite | None) -> WriteResult:
    """The answer to confirming a staged write that is no longer there."""
    if state == "expired":
        return WriteResult(status="expired", pending_id=pending_id, expires=staged.expires,
                           reason=f"the pending write expired at {iso(staged.expires)} (they last "
                                  f"{pending_mod.PENDING_TTL.seconds // 60} minutes); write it again if it still holds")
    return WriteResult(status="not_found", pending_id=pending_id,
                       reason="no pending write has this id: it never existed, or was already confirmed or cancelled")
