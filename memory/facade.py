"""The Store: one SQLite file holding memories, tombstones and the lexical index; every write one transaction.

It is also the library's front door for the trust lifecycle: writes go through the gates
(memory/gates/pipeline.py) and may be staged for confirmation (memory/pending.py); reads see what
the caller's repository may see (memory/scopes.py) and carry trust annotations (memory/trust.py);
calls are logged (memory/events.py); curation counts come from memory/health.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ulid import ULID

from kenning.errors import InvalidInput, NotFound, SearchDisabled, Stale
from kenning.retrieval.text import fingerprint

from kenning.store import files, integrity, records, search as search_mod

from . import events, health as health_mod, outcomes, pending as pending_mod, scopes as scopes_mod, trust
from .claims import ParsedClaim, check_claims, normalize_claim_path, parse_claims
from kenning.store.db import DB_FILENAME, Database
from .gates import GateRefusal, GateRefused, batch as batch_gates, pipeline, run_content_gates, truncation
from .gates.limits import check_content, check_metadata, check_scopes, has_control_chars
from kenning.store.lexicon import Lexicon
from kenning.store.location import resolve_store_dir
from kenning.store.models import (
    MODES, Degraded, ImportLine, ImportReport, Link, Memory, SearchResult, StoreConfig, Tombstone, WriteResult, iso,
    utcnow,
)
from .origin import Origin, detect_origin
from .scopes import View
from kenning.store.semantic import Semantic, enqueue, forget
from .staleness import DriftCache

MAX_LIMIT = 50
MAX_ID_CHARS = 200
MAX_NOTE_CHARS = 500
MAX_OUTCOME_IDS = 50
OUTCOMES = ("applied", "ignored", "contradicted", "corrected")
AMBIENT_LONG_WORDS = 500
RECENTLY_REMOVED = timedelta(days=7)
QUERY_CHARS_LOGGED = 200
CURATION_HINT = "curation_hint"  # logged when a write carried the hint: once per session


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _invalid(exc: ValidationError) -> InvalidInput:
    """A one-line message from pydantic's error list: which field, what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "value"
    return InvalidInput(f"{where}: {first.get('msg', 'invalid value')}")


class Store:
    """A memory store on disk. Safe to share between processes (WAL) and threads (one lock)."""

    def __init__(
        self,
        directory: str | os.PathLike | None = None,
        clock: Callable[[], datetime] = utcnow,
        session_id: str | None = None,
        cwd: str | os.PathLike | None = None,
    ):
        self.directory = resolve_store_dir(directory)
        # one session per Store object (a CLI run, a server connection): the event log's unit
        self.session_id = session_id or str(ULID())
        # where the caller works (origin of writes, auto_scope of reads); None: the process's directory
        self.cwd = Path(cwd) if cwd is not None else None
        self._here: tuple[Origin | None] | None = None
        # scopes hidden from search and list for this session only
        self.disabled_scopes: list[str] = []
        files.prepare_directory(self.directory)
        self.path = files.database_file(self.directory, DB_FILENAME)
        self.clock = clock
        try:
            self.db = Database(self.path)
        except sqlite3.DatabaseError as exc:
            if not self.path.exists():
                raise InvalidInput(f"cannot create a store in {self.directory} ({exc})") from exc
            raise InvalidInput(f"{self.path} is not a kenning store ({exc})") from exc
        files.tighten(self.path)
        self.store_id = integrity.store_id(self.db)
        self.lexicon = Lexicon(self.db)
        if not self.db.read_only and not self.db.read(integrity.lexicon_docs_consistent):
            integrity.repair_lexicon(self.db, self.lexicon)  # index rows lost or retired behind its back
        if self.db.get_meta("tokenizer") != fingerprint() and not self.db.read_only:
            with self.db.transaction() as c:
                self.lexicon.ensure_current(c)
        # settings: the stored JSON, plus this object's own persist=False changes on top
        self._local: dict[str, Any] = {}
        self._config_seen = self.db.data_version()
        self._config_raw = self.db.get_meta("config") or "{}"
        self._config = _config_from(json.loads(self._config_raw), self._local)
        self.semantic = Semantic(self.db, self.directory, lambda: self.config)

    # ------------------------------------------------------------------ config
    @property
    def config(self) -> StoreConfig:
        """The settings in force now: re-read when another process (or Store object) committed.

        PRAGMA data_version tells, without a query, whether any other connection committed since
        the last look; only then is the stored JSON read again (and parsed only if it changed).
        So a setting flipped by the CLI or the HTTP page reaches a running server at its next call.
        """
        version = self.db.data_version()
        if version != self._config_seen:
            self._config_seen = version
            raw = self.db.get_meta("config") or "{}"
            if raw != self._config_raw:
                self._config_raw = raw
                self._config = _config_from(json.loads(raw), self._local)
        return self._config

    def configure(self, persist: bool = True, **changes: Any) -> StoreConfig:
        """Change settings (e.g. ``bm25_k1=1.5``, ``write_enabled=False``); others keep their values.

        ``persist=True`` merges the changes into the stored settings in one transaction, so two
        processes changing different settings at once both win, and every process sees them at its
        next call. ``persist=False`` keeps them to this object (evaluation sweeps). An unknown
        name or a bad value raises InvalidInput and changes nothing.
        """
        unknown = sorted(set(changes) - set(StoreConfig.model_fields))
        if unknown:
            raise InvalidInput(f"unknown setting {unknown[0]!r}; settings are: {', '.join(StoreConfig.model_fields)}")
        if not persist:
            _config_from({**self.config.model_dump(), **changes}, {})  # validate before keeping any
            self._local.update(changes)
            self._config = _config_from(json.loads(self._config_raw), self._local)
            return self._config
        with self.db.transaction() as c:
            row = c.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
            stored = _config_from(json.loads(row[0]) if row else {}, changes)
            raw = stored.model_dump_json()
            Database.set_meta(c, "config", raw)
        for name in changes:
            self._local.pop(name, None)
        self._config_raw = raw
        self._config = _config_from(json.loads(raw), self._local)
        return self._config

    def _writes_refused(self) -> GateRefusal | None:
        """The live setting write_enabled=false refuses every memory change, before anything is written."""
        if self.config.write_enabled:
            return None
        return GateRefusal(
            gate="write_enabled", status="writes_disabled",
            reason="writes are disabled on this store (write_enabled=false)",
            hint="nothing was written; a person turns writes back on with: kenning config set write_enabled true",
        )

    def _check_writable(self) -> None:
        refusal = self._writes_refused()
        if refusal is not None:
            raise GateRefused(refusal)

    def stats(self) -> dict[str, Any]:
        """What `kenning info` reports: schema version, counts and size, without memory text or an event."""
        queries = {
            "schema_version": "PRAGMA user_version",
            "memories": "SELECT COUNT(*) FROM memories WHERE removed_at IS NULL",
            "tombstones": "SELECT COUNT(*) FROM memories WHERE removed_at IS NOT NULL",
            "episodes": "SELECT COUNT(*) FROM episodes",
            "embedded": "SELECT COUNT(DISTINCT mem) FROM embeddings",
            "embed_pending": "SELECT COUNT(*) FROM embed_queue",
        }
        report = self.db.read(lambda c: {k: c.execute(sql).fetchone()[0] for k, sql in queries.items()})
        report["pending_writes"] = len(self.pending_writes(all_sessions=True))
        report["size_bytes"] = sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file())
        report["read_only"] = self.db.read_only
        report["default_mode"] = self.config.default_mode
        return report

    # ------------------------------------------------------------------ where the caller is
    def here(self) -> Origin | None:
        """The caller's repository, worktree and HEAD (detected once per Store; None outside git)."""
        if self._here is None:
            self._here = (detect_origin(self.cwd),)
        return self._here[0]

    def _view(self, auto_scope: bool = True, updated_after: str | None = None) -> View:
        return View(here=self.here() if auto_scope else None, auto_scope=auto_scope,
                    disabled=frozenset(self.disabled_scopes), updated_after=updated_after)

    # ------------------------------------------------------------------ writes
    def write(
        self,
        content: str,
        scopes: Iterable[str] | str,
        category: str = "fact",
        confidence: str = "medium",
        source: str = "explicit-statement",
        metadata: dict | None = None,
        links: list[dict | Link] | None = None,
        claims: list[str] | None = None,
        acknowledge_transient: bool = False,
        acknowledge_user_claim: bool = False,
        acknowledge_scope_mismatch: bool = False,
        acknowledge_ungrounded: bool = False,
        force: bool = False,
        groundedness_check: bool = False,
        source_transcript: str | None = None,
    ) -> WriteResult:
        """Gate, then commit one memory (or stage it: user-inference, or require_write_confirmation).

        A malformed request raises InvalidInput / NotFound; a gate's refusal is returned as a
        WriteResult whose status is the gate's (transient_warning, duplicate, …) and writes
        nothing, except that a duplicate credits its match a corroboration (once per session).
        ``groundedness_check=True`` compares every sentence with ``source_transcript``.
        ``force=True`` writes through duplicate, previously_removed and scope_mismatch.
        """
        if groundedness_check and not (isinstance(source_transcript, str) and source_transcript.strip()):
            raise InvalidInput("groundedness_check needs source_transcript: the conversation text to check against")
        refusal = self._writes_refused()
        if refusal is not None:
            return pipeline.refused(refusal)
        origin = detect_origin(self.cwd)
        self._here = (origin,)
        request = {
            "content": content, "scopes": scopes, "category": category, "confidence": confidence, "source": source,
            "metadata": metadata, "links": [_link_dict(link) for link in links or []],
            "claims": [str(c) for c in parse_claims(_texts(claims, "claims"))],
            "acknowledge_transient": bool(acknowledge_transient), "acknowledge_user_claim": bool(acknowledge_user_claim),
            "acknowledge_scope_mismatch": bool(acknowledge_scope_mismatch), "force": bool(force),
            "acknowledge_ungrounded": bool(acknowledge_ungrounded),
            "origin": None if origin is None else {"repo": origin.repo, "worktree": origin.worktree, "commit": origin.commit},
        }
        memory, gated = self._gated(request, source_transcript if groundedness_check else None)
        if isinstance(gated, WriteResult):
            return self._credit_duplicate(gated)
        if memory.category == "user-inference" or self.config.require_write_confirmation:
            request["scopes"], request["metadata"] = memory.scopes, memory.metadata
            # groundedness is judged once, now: the staged write passed it and keeps no transcript
            request["acknowledge_ungrounded"] = request["acknowledge_ungrounded"] or groundedness_check
            with self.db.transaction() as c:
                staged = pending_mod.stage(c, self.session_id, request, self.clock())
                events.log(c, staged.created, self.session_id, events.PENDING, None,
                           {"pending_id": staged.id, "reason": staged.reason})
            return WriteResult(status="pending", pending_id=staged.id, pending_reason=staged.reason,
                               expires=staged.expires, related=gated.related,
                               removed_matches=gated.removed_matches, warnings=_warnings(memory))
        return self._with_curation_hint(self._commit(memory, gated, events.WRITE, {"category": memory.category}))

    def confirm_write(self, pending_id: str) -> WriteResult:
        """Commit a staged write after the person agreed, gated again against the store as it is now.

        A refusal now (say a duplicate written meanwhile) keeps the staged write (pending_retained).
        """
        now = self.clock()
        state, staged = self.db.read(lambda c: pending_mod.lookup(c, pending_id, now))
        if state != "live":
            return _gone(pending_id, state, staged)
        refusal = self._writes_refused()
        if refusal is not None:
            return pipeline.refused(refusal).model_copy(update={"pending_id": staged.id, "pending_retained": True})
        memory, gated = self._gated(staged.request)
        if isinstance(gated, WriteResult):
            return self._credit_duplicate(gated).model_copy(update={"pending_id": staged.id, "pending_retained": True})
        with self.db.transaction() as c:
            state, _ = pending_mod.lookup(c, staged.id, self.clock())
            if state != "live":  # confirmed or cancelled by someone else meanwhile
                return _gone(pending_id, state, staged)
            pending_mod.drop(c, staged.id)
            result = self._commit(memory, gated, events.CONFIRM, {"pending_id": staged.id}, conn=c)
        self._embed_if_loaded()
        return self._with_curation_hint(result.model_copy(update={"pending_id": staged.id}))

    def cancel_write(self, pending_id: str) -> dict[str, Any]:
        """Drop a staged write: cancelled, or expired / not_found when there was nothing left to drop."""
        now = self.clock()
        with self.db.transaction() as c:
            state, staged = pending_mod.lookup(c, pending_id, now)
            if state == "live":
                pending_mod.drop(c, staged.id)
                events.log(c, now, self.session_id, events.CANCEL, None, {"pending_id": staged.id})
        return {"status": "cancelled" if state == "live" else state, "pending_id": pending_id, "existed": state == "live"}

    def pending_writes(self, all_sessions: bool = False) -> list[dict[str, Any]]:
        """Unexpired staged writes of this session (or of every session), oldest first."""
        staged = pending_mod.live(self.db, self.clock(), None if all_sessions else self.session_id)
        return [p.to_dict() for p in staged]

    def _with_curation_hint(self, result: WriteResult) -> WriteResult:
        """Attach the one-shot curation hint to a commit when the curation pressure crossed the threshold."""
        if result.status != "committed":
            return result
        shown = self.db.read(lambda c: c.execute(
            "SELECT 1 FROM events WHERE session = ? AND kind = ? LIMIT 1", (self.session_id, CURATION_HINT)).fetchone())
        if shown:
            return result
        counts, _ = health_mod.curation_counts(self.db, self.config.verification_stale_days, self._view(True),
                                               self.clock())
        hint = health_mod.curation_hint(counts)
        if hint is None:
            return result
        self.log_event(CURATION_HINT, payload={"pressure": hint["pressure"]})
        return result.model_copy(update={"curation_hint": hint})

    def _credit_duplicate(self, result: WriteResult) -> WriteResult:
        """A duplicate is evidence: credit the memory that already says it, once per session."""
        if result.status != "duplicate" or result.id is None:
            return result
        with self.db.transaction() as c:
            seen = c.execute("SELECT 1 FROM events WHERE session = ? AND kind = ? AND memory_id = ? LIMIT 1",
                             (self.session_id, events.CORROBORATE, result.id)).fetchone()
            if seen is None:
                events.log(c, self.clock(), self.session_id, events.CORROBORATE, result.id,
                           {"overlap": (result.match or {}).get("overlap")})
        return result.model_copy(update={"corroboration_recorded": seen is None})

    def _gated(self, request: dict[str, Any],
               source_transcript: str | None = None) -> tuple[Memory, WriteResult | pipeline.Passed]:
        """Validate a write request into a Memory and run the gates: (memory, refusal or related ids)."""
        origin = request.get("origin")
        memory = self._new_memory({
            "content": request["content"], "scopes": request["scopes"], "category": request["category"],
            "confidence": request["confidence"], "source": request["source"], "metadata": request["metadata"],
            "links": request["links"], "claims": [{"spec": c} for c in request["claims"]], "origin": origin,
        })
        self.db.read(lambda c: self._check_link_targets(c, memory.links))
        with self.db.lock:  # the lexicon's in-memory caches must not change under the gates' probe search
            gated = pipeline.run(
                self.db, self.lexicon, self.config, memory.content, memory.category, parse_claims(request["claims"]),
                origin["worktree"] if origin else None, pipeline.Overrides.from_request(request),
                scopes=memory.scopes, repo=origin["repo"] if origin else None, source_transcript=source_transcript,
            )
        return memory, gated

    def _commit(self, memory: Memory, passed: pipeline.Passed, kind: str, payload: dict,
                conn: sqlite3.Connection | None = None) -> WriteResult:
        if conn is None:
            with self.db.transaction() as c:
                result = self._commit(memory, passed, kind, payload, conn=c)
            self._embed_if_loaded()
            return result
        self._check_link_targets(conn, memory.links)
        self._insert(conn, memory)
        events.log(conn, memory.created, self.session_id, kind, memory.id, payload)
        return WriteResult(status="committed", id=memory.id, related=passed.related,
                           removed_matches=passed.removed_matches, warnings=_warnings(memory))

    def import_records(
        self,
        records: Iterable[dict],
        batch_size: int = 2000,
        progress: Callable[[int], None] | None = None,
        default_scopes: list[str] | None = None,
        labels: list[str] | None = None,
        embed: bool = False,
    ) -> list[str]:
        """Validate every record first, then commit in batches; a bad record means nothing is written.

        A record is ``{"content" or "text", "scopes"?, "id"?, "category"?, "metadata"?}``; an ``id`` is
        kept as given (so external ids survive), otherwise a ULID is assigned. ``labels`` name the
        records in error messages (e.g. ``"line 7"``). ``embed=True`` also embeds them now (when the
        embeddings extra works) instead of leaving them queued for the next semantic search.
        This is the trusted bulk path (corpora, migrations): no write gates run (``import_checked``
        runs them) and no origin is recorded, so imported memories are global (visible from every
        repository under auto_scope).
        """
        self._check_writable()
        memories = self._import_memories(records, default_scopes, labels)
        existing = self._existing_ids([m.id for m in memories])
        if existing:
            raise InvalidInput(f"{len(existing)} id(s) already in the store, e.g. {sorted(existing)[0]!r}")
        self._insert_batches(memories, batch_size, progress, embed)
        return [m.id for m in memories]

    def import_checked(
        self,
        records: Iterable[dict],
        batch_size: int = 2000,
        progress: Callable[[int], None] | None = None,
        default_scopes: list[str] | None = None,
        labels: list[str] | None = None,
    ) -> ImportReport:
        """Import through the write gates, in batch form: each record is committed, refused (secrets,
        run-state wording, a user-inference, an id that names another memory) or skipped as a duplicate
        of a live memory, a removed one or an earlier record. Importing the same records again
        commits nothing new. A malformed record still means nothing is written (InvalidInput)."""
        self._check_writable()
        memories = self._import_memories(records, default_scopes, labels)
        labels = labels or [f"record {n}" for n in range(1, len(memories) + 1)]
        verdicts = batch_gates.gate_batch(self.db, self.lexicon, self.config, memories, labels)
        taken = self._existing_ids([m.id for m, v in zip(memories, verdicts) if v is None])
        lines, accepted = [], []
        for memory, label, verdict in zip(memories, labels, verdicts):
            if verdict is None and memory.id in taken:
                verdict = batch_gates.Verdict("refused", "limits", f"id {memory.id!r} already names another memory",
                                              code="id_taken")
            if verdict is None:
                accepted.append(memory)
                lines.append(ImportLine(label=label, status="committed", id=memory.id))
            else:
                lines.append(ImportLine(label=label, status=verdict.status, gate=verdict.gate,
                                        reason=verdict.reason, match=verdict.match, code=verdict.code))
        self._insert_batches(accepted, batch_size, progress, embed=False)
        return ImportReport(lines=lines)

    def _import_memories(self, records: Iterable[dict], default_scopes: list[str] | None,
                         labels: list[str] | None) -> list[Memory]:
        """Every record as a Memory, or InvalidInput naming the first bad one (nothing is written)."""
        memories, seen = [], set()
        where = (lambda n: labels[n - 1]) if labels else (lambda n: f"record {n}")
        for number, record in enumerate(records, start=1):
            try:
                if not isinstance(record, dict):
                    raise InvalidInput("expected a JSON object")
                fields = dict(record)
                if "content" not in fields and "text" in fields:
                    fields["content"] = fields.pop("text")
                fields.setdefault("scopes", default_scopes or ["imported"])
                memory = self._new_memory(fields)
            except InvalidInput as exc:
                raise InvalidInput(f"{where(number)}: {exc}") from exc
            if memory.id in seen:
                raise InvalidInput(f"{where(number)}: id {memory.id!r} appears twice")
            seen.add(memory.id)
            memories.append(memory)
        return memories

    def _insert_batches(self, memories: list[Memory], batch_size: int,
                        progress: Callable[[int], None] | None, embed: bool) -> None:
        done = 0
        for start in range(0, len(memories), batch_size):
            batch = memories[start : start + batch_size]
            with self.db.transaction() as c:
                self._insert_many(c, batch)
            done += len(batch)
            if progress:
                progress(done)
        if embed and self.semantic.availability().working:
            self.semantic.embed_pending()
        elif memories:
            self._embed_if_loaded()

    def update(
        self,
        id: str,
        text: str | None = None,
        scopes: Iterable[str] | None = None,
        confidence: str | None = None,
        category: str | None = None,
        links: list[dict | Link] | None = None,
        metadata: dict | None = None,
        acknowledge_transient: bool = False,
        acknowledge_user_claim: bool = False,
        acknowledge_truncation: bool = False,
        version: str | None = None,
    ) -> Memory:
        """Change fields of a live memory and bump ``updated``; a new text clears its verification.

        A new text passes the content gates (credentials, durability, user claims) like a write,
        and the truncation gate (a shorter body ending mid-sentence); a refusal raises GateRefused
        and changes nothing. Scopes and links replace the old lists whole. ``version`` (from show or
        search) makes the update conditional: a memory changed since raises Stale and nothing is written.
        """
        changes: dict[str, Any] = {
            k: v for k, v in {"content": text, "scopes": scopes, "confidence": confidence,
                              "category": category, "links": links, "metadata": metadata}.items()
            if v is not None
        }
        if not changes:
            raise InvalidInput("nothing to update; give new text, scopes, confidence, category, links or metadata")
        self._check_writable()
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
            changes["links"] = [_link_dict(link) for link in links]
        with self.db.transaction() as c:
            rowid, memory = self._live_row(c, id)
            _check_version(memory, version)
            fields = memory.model_dump()
            fields.update(changes)
            text_changed = text is not None and text != memory.content
            if text_changed:
                refusal = (run_content_gates(text, fields["category"], acknowledge_transient, acknowledge_user_claim)
                           or truncation.check(memory.content, text, acknowledge_truncation))
                if refusal is not None:
                    raise GateRefused(refusal)
                fields.update(last_verified_at=None, verification_note=None, verified_paths=[],
                              verified_absent_paths=[], claims=[])
            fields["updated"] = max(self.clock(), memory.updated)
            updated = self._validated(fields)
            self._check_link_targets(c, updated.links, self_id=updated.id)
            c.execute(
                "UPDATE memories SET content = ?, category = ?, updated = ?, content_hash = ?, record = ? WHERE rowid = ?",
                (updated.content, updated.category, iso(updated.updated), content_hash(updated.content),
                 updated.model_dump_json(), rowid),
            )
            if scopes is not None:
                c.execute("DELETE FROM memory_scopes WHERE mem = ?", (rowid,))
                c.executemany("INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)", [(s, rowid) for s in updated.scopes])
            if links is not None:
                self._store_links(c, rowid, updated.links, replace=True)
            if text_changed:
                self.lexicon.remove(c, rowid)
                self.lexicon.add(c, rowid, updated.content, updated.updated.timestamp())
                forget(c, rowid)
                enqueue(c, [rowid])
            else:
                self.lexicon.touch(c, rowid, updated.updated.timestamp())
            events.log(c, updated.updated, self.session_id, events.UPDATE, updated.id,
                       {"fields": sorted(changes), "text_changed": text_changed})
        if text_changed:
            self._embed_if_loaded()
        return updated

    def remove(self, id: str, reason: str) -> Tombstone:
        """Move a memory to the tombstones with a reason; it leaves search but is never deleted."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("a removal reason is required, e.g. --reason 'superseded by the new deploy doc'")
        if has_control_chars(reason):
            raise InvalidInput("the removal reason contains a control character")
        self._check_writable()
        now = self.clock()
        with self.db.transaction() as c:
            rowid, memory = self._live_row(c, id)
            c.execute("UPDATE memories SET removed_at = ?, removed_reason = ? WHERE rowid = ?", (iso(now), reason.strip(), rowid))
            self.lexicon.remove(c, rowid)
            forget(c, rowid)
            events.log(c, now, self.session_id, events.REMOVE, memory.id, {"reason": reason.strip()})
        return Tombstone(memory=memory, reason=reason.strip(), removed_at=now, removed_by_session=self.session_id)

    def restore(self, id: str) -> Memory:
        """Bring a tombstoned memory back into search, as it was when removed."""
        self._check_writable()
        with self.db.transaction() as c:
            row = c.execute("SELECT rowid, record, removed_at FROM memories WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise NotFound(f"no memory or tombstone has id {id!r}")
            if row[2] is None:
                raise InvalidInput(f"memory {id} is not removed; nothing to restore")
            memory = Memory.model_validate_json(row[1])
            c.execute("UPDATE memories SET removed_at = NULL, removed_reason = NULL WHERE rowid = ?", (row[0],))
            self.lexicon.add(c, row[0], memory.content, memory.updated.timestamp())
            enqueue(c, [row[0]])
            events.log(c, self.clock(), self.session_id, events.RESTORE, memory.id)
        self._embed_if_loaded()
        return memory

    def verify(
        self,
        id: str,
        note: str | None = None,
        verified_paths: Iterable[str] | None = None,
        verified_absent_paths: Iterable[str] | None = None,
        claims: Iterable[str] | None = None,
        verified_commits: Iterable[str] | None = None,
        verified_versions: Iterable[str] | None = None,
        version: str | None = None,
    ) -> dict[str, Any]:
        """Record a spot-check: ``last_verified_at`` = now; ``updated`` and the text stay as they are.

        ``verified_commits`` and ``verified_versions`` are an audit trail only (kept on the record
        and in the event log; nothing on the read path resolves them). With ``version`` (from show or
        search), a memory changed since returns ``{status: stale, current_version}`` and records nothing.

        Attested paths must exist in the memory's worktree and every claim (given, else stored)
        must hold there, or nothing is recorded (InvalidInput says which). Each list replaces the
        previous attestation; None keeps it, [] clears it.
        """
        note = _note(note)
        paths = None if verified_paths is None else _paths(verified_paths, "verified_paths")
        absent = None if verified_absent_paths is None else _paths(verified_absent_paths, "verified_absent_paths")
        given = None if claims is None else parse_claims(_texts(claims, "claims"))
        commits = None if verified_commits is None else _labels(verified_commits, "verified_commits")
        versions = None if verified_versions is None else _labels(verified_versions, "verified_versions")
        self._check_writable()
        now = self.clock()
        with self.db.transaction() as c:
            rowid, memory = self._live_row(c, id)
            if version is not None and version != memory.version:
                return {"status": "stale", "id": memory.id, "version": version, "current_version": memory.version,
                        "hint": "another agent changed this memory since you read it; nothing was recorded. "
                                "Re-read it with memory_show, re-check, and verify again with the new version."}
            to_check = given if given is not None else parse_claims(c.spec for c in memory.claims)
            self._check_attestation(memory, paths or [], to_check)
            fields = memory.model_dump()
            fields.update(last_verified_at=now, verification_note=note)
            if paths is not None:
                fields["verified_paths"] = paths
            if absent is not None:
                fields["verified_absent_paths"] = absent
            if given is not None:
                fields["claims"] = [{"spec": str(claim)} for claim in given]
            audit_trail = dict(fields.get("metadata") or {})
            for key, values in (("verified_commits", commits), ("verified_versions", versions)):
                if values is not None:
                    audit_trail[key] = values
            fields["metadata"] = audit_trail
            verified = self._validated(fields)
            c.execute("UPDATE memories SET record = ? WHERE rowid = ?", (verified.model_dump_json(), rowid))
            events.log(c, now, self.session_id, events.VERIFY, verified.id,
                       {"note": note, "verified_paths": verified.verified_paths,
                        "verified_absent_paths": verified.verified_absent_paths,
                        "claims": [claim.spec for claim in verified.claims],
                        "verified_commits": verified.metadata.get("verified_commits"),
                        "verified_versions": verified.metadata.get("verified_versions")})
        assessed = trust.staleness(verified, now, self.config.verification_stale_days, DriftCache())
        return {
            "status": "verified", "id": verified.id, "version": verified.version,
            "last_verified_at": iso(now), "verification_note": note,
            "verified_paths": verified.verified_paths, "verified_absent_paths": verified.verified_absent_paths,
            "claims": [claim.spec for claim in verified.claims],
            "verified_commits": verified.metadata.get("verified_commits", []),
            "verified_versions": verified.metadata.get("verified_versions", []), **assessed.to_hit_fields(),
        }

    def _check_attestation(self, memory: Memory, paths: list[str], claims: list[ParsedClaim]) -> None:
        if not paths and not claims:
            return
        worktree = memory.origin.worktree if memory.origin else None
        if worktree is None:
            raise InvalidInput(f"memory {memory.id} was written outside any git repository, so paths and claims "
                               "cannot be checked against it; verify it without them")
        root = Path(worktree)
        if not root.is_dir():
            raise InvalidInput(f"the worktree of memory {memory.id} ({worktree}) no longer exists, so its paths and "
                               "claims cannot be checked; update or remove the memory")
        missing = [p for p in paths if not (root / p).exists()]
        if missing:
            raise InvalidInput(f"verified path(s) missing in {worktree}: {', '.join(missing)}; attest only paths that "
                               "exist (verified_absent_paths is for paths meant to be absent), or update the memory")
        failed = [r for r in check_claims(claims, root) if not r.ok]
        if failed:
            raise InvalidInput("claim(s) do not hold: " + "; ".join(f"{r.claim} ({r.detail})" for r in failed)
                               + "; update the memory (or its claims) first, then verify")

    def record_use(
        self,
        ids: Iterable[str] | str,
        outcome: str,
        note: str | None = None,
        excerpt: str | Iterable[str | None] | None = None,
    ) -> dict[str, Any]:
        """Log what happened with memories that were shown: applied, ignored, contradicted or corrected.

        ``excerpt`` is the phrase that mattered (the claim that was wrong): one for every id, or a
        list parallel to ``ids`` with None where there is none. Negative outcomes come back on
        later hits as ``recent_negative_outcomes``.
        """
        ids = [ids] if isinstance(ids, str) else list(ids or [])
        if not ids or len(ids) > MAX_OUTCOME_IDS or not all(isinstance(i, str) and i.strip() for i in ids):
            raise InvalidInput(f"give 1-{MAX_OUTCOME_IDS} memory ids")
        if outcome not in OUTCOMES:
            raise InvalidInput(f"unknown outcome {outcome!r}; choose one of {', '.join(OUTCOMES)}")
        note = _note(note)
        excerpts = _excerpts(excerpt, len(ids))
        unknown = sorted(set(ids) - self._existing_ids(ids))
        if unknown:
            raise NotFound(f"no memory has id {unknown[0]!r}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""))
        now = self.clock()
        rows = [(mid, {k: v for k, v in {"outcome": outcome, "note": note, "excerpt": ex}.items() if v is not None})
                for mid, ex in zip(ids, excerpts)]
        with self.db.transaction() as c:
            events.log_many(c, now, self.session_id, events.OUTCOME, rows)
        return {"status": "recorded", "outcome": outcome, "memory_ids": ids, "at": iso(now)}

    # ------------------------------------------------------------------ reads
    def get(self, id: str) -> Memory:
        """The memory as stored (no event, no annotation); ``show`` is the annotated read."""
        row = self.db.read(lambda c: c.execute(
            "SELECT record, removed_at, removed_reason FROM memories WHERE id = ?", (id,)).fetchone())
        if row is None:
            raise NotFound(f"no memory has id {id!r}; `kenning list` shows the ids")
        if row[1] is not None:
            raise NotFound(f"memory {id} was removed at {row[1]} ({row[2]}); `kenning restore {id}` brings it back")
        return Memory.model_validate_json(row[0])

    def show(self, id: str) -> dict[str, Any]:
        """One memory in full with its trust report: verification, staleness verdict and reasons,
        path and commit drift, links (with their targets' summaries) and reverse links."""
        memory = self.get(id)
        now = self.clock()
        assessed = trust.staleness(memory, now, self.config.verification_stale_days, DriftCache())
        out = memory.model_dump(mode="json")
        out["summary"], out["version"] = memory.summary, memory.version
        out.update(trust.full_detail(assessed))
        targets = self._summaries([link.target for link in memory.links])
        out["links"] = [{**link.model_dump(mode="json"), **targets.get(link.target, {"status": "missing"})}
                        for link in memory.links]
        out["reverse_links"] = self._reverse_links(memory.id)
        replaced = trust.superseded_by(self.db, [memory.id]).get(memory.id)
        negatives = trust.negative_outcomes(self.db, [memory], now).get(memory.id)
        for key, value in (("superseded_by", replaced), ("recent_negative_outcomes", negatives)):
            if value:
                out[key] = value
        self.log_event(events.SHOW, memory.id)
        return out

    def list(
        self,
        scopes: Iterable[str] | None = None,
        category: str | None = None,
        limit: int = 50,
        auto_scope: bool = True,
        record: bool = True,
    ) -> list[Memory]:
        """Live memories the caller may see, newest update first, optionally filtered by scope (any of)
        and category. ``auto_scope`` and session-disabled scopes apply as in ``search``."""
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInput("limit must be at least 1")
        where, params = self._filter_sql(scopes, category)
        view_where, view_params = self._view(auto_scope).where()
        rows = self.db.read(lambda c: c.execute(
            f"SELECT record FROM memories m WHERE removed_at IS NULL {where}{view_where} "
            "ORDER BY updated DESC, id DESC LIMIT ?", (*params, *view_params, limit)).fetchall())
        memories = [Memory.model_validate_json(r[0]) for r in rows]
        if record:
            self.log_event(events.LIST, payload={"count": len(memories), "auto_scope": auto_scope})
        return memories

    def tombstones(self, scopes: Iterable[str] | None = None, limit: int = 50) -> list[Tombstone]:
        where, params = self._filter_sql(scopes, None)
        rows = self.db.read(lambda c: c.execute(
            f"SELECT record, removed_reason, removed_at FROM memories m WHERE removed_at IS NOT NULL {where} "
            "ORDER BY removed_at DESC, id DESC LIMIT ?", (*params, limit)).fetchall())
        removers = self._removers([Memory.model_validate_json(r).id for r, _, _ in rows])
        return [Tombstone(memory=(m := Memory.model_validate_json(r)), reason=why, removed_at=at,
                          removed_by_session=removers.get(m.id)) for r, why, at in rows]

    def _removers(self, ids: list[str]) -> dict[str, str]:
        """The session that last removed each memory, from the event log (no column needed)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.read(lambda c: c.execute(
            f"SELECT memory_id, session FROM events WHERE kind = ? AND memory_id IN ({marks}) ORDER BY rowid",
            (events.REMOVE, *ids)).fetchall())
        return dict(rows)

    def count(self) -> int:
        return self.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE removed_at IS NULL").fetchone()[0])

    def search(
        self,
        query: str,
        mode: str | None = None,
        scopes: Iterable[str] | None = None,
        limit: int = 5,
        category: str | None = None,
        expand_top: bool = False,
        auto_scope: bool = True,
        since_prior_session: bool = False,
        record: bool = True,
    ) -> SearchResult:
        """Ranked, explained hits with trust annotations. ``limit`` is 1-50; filters apply before ranking.

        ``auto_scope``: only memories from the caller's repository and worktree, plus global ones.
        ``since_prior_session``: only memories updated after the latest event of another session
        (empty, with a note, when no other session has logged anything). ``expand_top`` inlines
        the top hit's body and full staleness report when it is clearly the answer. ``record=False``
        leaves the search out of the event log (the silent-miss audit's own probe).
        """
        if not self.config.search_enabled:
            raise SearchDisabled()
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")
        boundary = events.prior_session_boundary(self.db, self.session_id) if since_prior_session else None
        view = self._view(auto_scope, updated_after=boundary)
        result, memories = self._rank(query, mode, limit, scopes, category, view)
        if since_prior_session and boundary is None:
            result.hits = []
            result.note = "no other session has logged anything yet, so there is no prior session to compare with"
        trust.annotate(self.db, result.hits, memories, self.clock(), self.config.verification_stale_days, expand_top)
        if record:
            result.use_token = outcomes.new_token()
            now = self.clock()
            with self.db.transaction() as c:
                outcomes.settle(c, self.session_id, now, keep_latest=1)  # hits of two searches ago settle
                events.log(c, now, self.session_id, events.SEARCH, None, {
                    "query": query[:QUERY_CHARS_LOGGED], "mode": result.mode, "hit_ids": [h.id for h in result.hits],
                    "auto_scope": auto_scope, "since_prior_session": since_prior_session,
                    "use_token": result.use_token})
        return result

    def rank(
        self,
        query: str,
        mode: str | None = None,
        depth: int = 100,
        scopes: Iterable[str] | None = None,
        category: str | None = None,
    ) -> SearchResult:
        """Pure ranking for evaluation (e.g. Recall@100): no result cap, no auto_scope, no trust
        annotation, no event."""
        return self._rank(query, mode, depth, scopes, category, None)[0]

    # ------------------------------------------------------------------ scopes and curation
    def disable_scope(self, scope: str) -> list[str]:
        """Hide a scope from this session's searches, lists and counts; returns the disabled scopes."""
        scope = check_scopes([scope])[0]
        known = self.db.read(lambda c: c.execute(
            "SELECT 1 FROM memory_scopes WHERE scope = ? UNION ALL "
            "SELECT 1 FROM episodes, json_each(episodes.scopes) WHERE value = ? LIMIT 1", (scope, scope)).fetchone())
        if known is None and scope not in self.disabled_scopes:
            raise NotFound(f"no memory, tombstone or episode has scope {scope!r}; memory_scope_overview lists the scopes")
        if scope not in self.disabled_scopes:
            self.disabled_scopes.append(scope)
        return sorted(self.disabled_scopes)

    def enable_scope(self, scope: str) -> list[str]:
        """Show a disabled scope again; returns the scopes still disabled."""
        scope = check_scopes([scope])[0]
        if scope in self.disabled_scopes:
            self.disabled_scopes.remove(scope)
        return sorted(self.disabled_scopes)

    def rename_scope(self, old: str, new: str) -> int:
        """Relabel a scope on every memory and tombstone carrying it; returns how many changed."""
        with self.db.transaction() as c:
            changed = scopes_mod.rename(c, old, new)
            events.log(c, self.clock(), self.session_id, events.RENAME_SCOPE, None,
                       {"old": old, "new": new, "count": len(changed)})
        if old in self.disabled_scopes:
            self.disabled_scopes[self.disabled_scopes.index(old)] = new
            self.disabled_scopes = list(dict.fromkeys(self.disabled_scopes))
        return len(changed)

    def scope_overview(self, auto_scope: bool = True) -> dict[str, Any]:
        """A cheap session-start picture without any memory content: counts per scope, the curation
        backlog (and what is new in it since the prior session), recent removals, pending writes."""
        view = self._view(auto_scope)
        per_scope, total = scopes_mod.scope_counts(self.db, view)
        now = self.clock()
        boundary = events.prior_session_boundary(self.db, self.session_id)
        counts, counts_since = health_mod.curation_counts(
            self.db, self.config.verification_stale_days, view, now, since=boundary)
        here = self.here()
        return {
            "current_repo": here.repo if here else None,
            "current_worktree": here.worktree if here else None,
            "current_cwd": str(self.cwd or Path.cwd()),
            "auto_scope": auto_scope,
            "scopes": per_scope,
            "total": total,
            "disabled_scopes": sorted(self.disabled_scopes),
            "curation_pending": counts,
            "curation_pending_new_since_last_session": counts_since,
            "recently_removed_in_worktree": self._recently_removed(view, now),
            # write-reflex proposals: kenning has no proposal capture (no Stop-hook auto_propose), so none wait
            "proposals_pending": 0,
            "pending_writes": self.pending_writes(),
        }

    def health(self, auto_scope: bool = True, limit: int = health_mod.LISTED) -> dict[str, Any]:
        """The curation report: counts per bucket, the oldest unverified memories, drifted ones,
        conflicts and contradicted ones (``limit`` of each), plus store totals."""
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInput("limit must be at least 1")
        view = self._view(auto_scope)
        now = self.clock()
        _, total = scopes_mod.scope_counts(self.db, view)
        where, params = view.where()
        by_category = dict(self.db.read(lambda c: c.execute(
            f"SELECT category, COUNT(*) FROM memories m WHERE removed_at IS NULL {where} GROUP BY category",
            params).fetchall()))
        tombstoned = self.db.read(lambda c: c.execute(
            "SELECT COUNT(*) FROM memories WHERE removed_at IS NOT NULL").fetchone()[0])
        here = self.here() if auto_scope else None
        return {
            "auto_scope": auto_scope, "current_worktree": here.worktree if here else None,
            "total": total, "by_category": by_category, "tombstones": tombstoned,
            "pending_writes": len(self.pending_writes(all_sessions=True)),
            **health_mod.report(self.db, self.config.verification_stale_days, view, now, limit),
        }

    def conflicts(self, auto_scope: bool = True, limit: int = MAX_LIMIT) -> list[dict[str, Any]]:
        """Contradiction pairs among visible live memories (one row per pair), with both summaries."""
        report = health_mod.report(self.db, self.config.verification_stale_days, self._view(auto_scope),
                                   self.clock(), limit)
        pairs = report["conflicts"]
        summaries = self._summaries([p["id"] for p in pairs] + [p["contradicts"] for p in pairs])
        return [{"id": p["id"], "other_id": p["contradicts"], "note": p["note"],
                 "summary": summaries.get(p["id"], {}).get("summary"),
                 "other_summary": summaries.get(p["contradicts"], {}).get("summary")} for p in pairs]

    def resolve_conflict(self, id: str, other_id: str, resolution: str, keep_id: str | None = None,
                         note: str | None = None) -> dict[str, Any]:
        """Settle a contradiction between two memories: ``supersede`` (``keep_id`` wins and supersedes
        the other) or ``keep_both`` (both hold in their contexts; the pair becomes an ``extends`` link
        carrying ``note``). The contradicts links between them go either way; nothing is removed."""
        note = _note(note)
        if resolution not in ("supersede", "keep_both"):
            raise InvalidInput(f"unknown resolution {resolution!r}; choose supersede or keep_both")
        pair = {id, other_id}
        if len(pair) != 2:
            raise InvalidInput("a conflict is between two different memories")
        first, second = self.get(id), self.get(other_id)
        linked = any(link.kind == "contradicts" and link.target in pair for m in (first, second) for link in m.links)
        if not linked:
            raise InvalidInput(f"memories {id} and {other_id} are not in conflict (no contradicts link between them); "
                               "memory_conflicts lists the pairs")
        if resolution == "supersede":
            if keep_id not in pair:
                raise InvalidInput("supersede needs keep_id: the id of the memory that stays true (one of the pair)")
            winner, loser = (first, second) if keep_id == first.id else (second, first)
            kind = "supersedes"
        else:
            if not note:
                raise InvalidInput("keep_both needs a note saying how both can hold (e.g. which context each is for)")
            winner, loser, kind = first, second, "extends"
        for memory in (winner, loser):
            links = [link for link in memory.links if not (link.kind == "contradicts" and link.target in pair)]
            if memory is winner:
                links.append(Link(kind=kind, target=loser.id, note=note))
            self.update(memory.id, links=links)
        self.log_event("conflict_resolved", winner.id, {"other": loser.id, "resolution": resolution, "note": note})
        return {"status": "resolved", "resolution": resolution, "id": winner.id, "other_id": loser.id,
                "link": {"type": kind, "source": winner.id, "target_id": loser.id, "note": note}}

    def _recently_removed(self, view: View, now: datetime) -> int:
        sql = "SELECT COUNT(*) FROM memories WHERE removed_at IS NOT NULL AND removed_at >= ?"
        params: list[Any] = [iso(now - RECENTLY_REMOVED)]
        if view.scoped_to is not None:
            sql += " AND origin_worktree = ?"
            params.append(view.scoped_to.worktree)
        return self.db.read(lambda c: c.execute(sql, params).fetchone()[0])

    # ------------------------------------------------------------------ the event log
    def settle_uses(self) -> int:
        """End of turn: every open use_token of this session settles (hits without an explicit outcome
        become applied, auto); returns how many auto-applies were logged."""
        with self.db.transaction() as c:
            return outcomes.settle(c, self.session_id, self.clock())

    def log_event(self, kind: str, memory_id: str | None = None, payload: dict[str, Any] | None = None) -> None:
        """Append one event for this session (other modules log their own kinds: the audit, episodes).
        A read-only store serves reads without a log."""
        if self.db.read_only:
            return
        with self.db.transaction() as c:
            events.log(c, self.clock(), self.session_id, kind, memory_id, payload)

    def events(
        self,
        session: str | None = None,
        since: datetime | str | None = None,
        kinds: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Logged events, oldest first: {at, session, kind, memory_id, payload}."""
        return events.query(self.db, session=session, since=since, kinds=kinds)

    # ------------------------------------------------------------------ helpers
    def _new_memory(self, fields: dict) -> Memory:
        now = self.clock()
        fields = dict(fields)
        fields["content"] = check_content(fields.get("content"))
        fields["scopes"] = check_scopes(fields.get("scopes"))
        fields["metadata"] = check_metadata(fields.get("metadata"))
        given = fields.get("id")
        if given is not None:
            if not isinstance(given, str) or not given.strip() or has_control_chars(given) or len(given) > MAX_ID_CHARS:
                raise InvalidInput(f"id must be a short non-blank string, got {given!r}")
        fields["id"] = given or str(ULID())
        fields.setdefault("created", now)
        fields.setdefault("updated", now)
        return self._validated({k: v for k, v in fields.items() if v is not None})

    @staticmethod
    def _validated(fields: dict) -> Memory:
        """A Memory from fields; a link repeated (same kind and target) is kept once."""
        try:
            memory = Memory.model_validate(fields)
        except ValidationError as exc:
            raise _invalid(exc) from exc
        links = list({(link.kind, link.target): link for link in reversed(memory.links)}.values())[::-1]
        return memory if len(links) == len(memory.links) else memory.model_copy(update={"links": links})

    _INSERT = ("INSERT INTO memories(rowid, id, content, category, created, updated, content_hash, record, "
               "origin_repo, origin_worktree) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

    @staticmethod
    def _row(rowid: int | None, m: Memory) -> tuple:
        return (rowid, m.id, m.content, m.category, iso(m.created), iso(m.updated), content_hash(m.content),
                m.model_dump_json(), m.origin.repo if m.origin else None, m.origin.worktree if m.origin else None)

    def _insert(self, c: sqlite3.Connection, memory: Memory) -> int:
        rowid = c.execute(self._INSERT, self._row(None, memory)).lastrowid
        c.executemany("INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)", [(s, rowid) for s in memory.scopes])
        self._store_links(c, rowid, memory.links)
        self.lexicon.add(c, rowid, memory.content, memory.updated.timestamp())
        enqueue(c, [rowid])
        return rowid

    def _insert_many(self, c: sqlite3.Connection, memories: list[Memory]) -> None:
        start = c.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM memories").fetchone()[0]
        c.executemany(self._INSERT, [self._row(start + i, m) for i, m in enumerate(memories)])
        c.executemany(
            "INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)",
            [(s, start + i) for i, m in enumerate(memories) for s in m.scopes],
        )
        for i, m in enumerate(memories):
            self._store_links(c, start + i, m.links)
        self.lexicon.add_many(c, [(start + i, m.content, m.updated.timestamp()) for i, m in enumerate(memories)])
        enqueue(c, [start + i for i in range(len(memories))])

    @staticmethod
    def _store_links(c: sqlite3.Connection, rowid: int, links: list[Link], replace: bool = False) -> None:
        """Mirror a memory's links into memory_links, where reverse lookups (superseded_by) find them."""
        if replace:
            c.execute("DELETE FROM memory_links WHERE source = ?", (rowid,))
        c.executemany("INSERT INTO memory_links(source, kind, target, note) VALUES (?, ?, ?, ?)",
                      [(rowid, link.kind, link.target, link.note) for link in links])

    def _summaries(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """{id: {summary, scopes, status: live | removed}} for the ids that exist."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.read(lambda c: c.execute(
            f"SELECT id, record, removed_at FROM memories WHERE id IN ({marks})", ids).fetchall())
        out = {}
        for mid, record, removed in rows:
            memory = Memory.model_validate_json(record)
            out[mid] = {"summary": memory.summary, "scopes": memory.scopes, "status": "removed" if removed else "live"}
        return out

    def _reverse_links(self, id: str) -> list[dict[str, Any]]:
        """Live memories that link to id: {kind, source, note, summary}."""
        rows = self.db.read(lambda c: c.execute(
            "SELECT l.kind, m.id, l.note, m.record FROM memory_links l JOIN memories m ON m.rowid = l.source "
            "WHERE l.target = ? AND m.removed_at IS NULL ORDER BY l.kind, m.id", (id,)).fetchall())
        return [{"kind": kind, "source": source, "note": note, "summary": Memory.model_validate_json(record).summary}
                for kind, source, note, record in rows]

    def _embed_if_loaded(self) -> None:
        """Where the model is already in memory (a server), embed new text now; else it stays queued."""
        if self.semantic.loaded:
            self.semantic.embed_pending()

    def _existing_ids(self, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in self.db.read(
                lambda c: c.execute(f"SELECT id FROM memories WHERE id IN ({marks})", chunk).fetchall()))
        return found

    def _live_row(self, c: sqlite3.Connection, id: str) -> tuple[int, Memory]:
        row = c.execute("SELECT rowid, record, removed_at FROM memories WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise NotFound(f"no memory has id {id!r}; `kenning list` shows the ids")
        if row[2] is not None:
            raise NotFound(f"memory {id} is removed; `kenning restore {id}` first")
        return row[0], Memory.model_validate_json(row[1])

    @staticmethod
    def _check_link_targets(c: sqlite3.Connection, links: list[Link], self_id: str | None = None) -> None:
        for link in links:
            if link.target == self_id:
                raise InvalidInput(f"a memory cannot link to itself ({link.kind} {link.target})")
            if c.execute("SELECT 1 FROM memories WHERE id = ?", (link.target,)).fetchone() is None:
                raise NotFound(f"link target {link.target!r} ({link.kind}) is not a memory in this store")

    @staticmethod
    def _filter_sql(scopes: Iterable[str] | None, category: str | None) -> tuple[str, list]:
        return records.filter_sql(check_scopes(scopes) if scopes else None, category)

    def _rank(self, query, mode, depth, scopes, category, view: View | None):
        mode = mode or self.config.default_mode
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query is empty; give words a matching memory would contain")
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if scopes is not None and not isinstance(scopes, str) and not list(scopes):
            scopes = None
        scopes = check_scopes(scopes) if scopes else None
        if category is not None and category not in ("fact", "user-inference", "ambient"):
            raise InvalidInput(f"unknown category {category!r}; choose fact, user-inference or ambient")
        filters = search_mod.Filters(scopes, category, view.updated_after if view else None,
                                     view.hidden_keys(self.db) if view else ())
        # one ranking at a time per Store: threads sharing it (a server) would otherwise see the
        # lexicon's cached postings and doc arrays refreshed or grown halfway through (KeyError)
        with self.db.lock:
            ranked = search_mod.run(self.db, self.lexicon, self.semantic, self.config, self.clock(),
                                    query, mode, depth, filters)
            if self.lexicon.damaged and not getattr(self.db, "read_only", False):
                # damaged postings were skipped, never raised; rebuild from the text and rank again
                damaged = len(self.lexicon.damaged)
                integrity.repair_lexicon(self.db, self.lexicon)
                ranked = search_mod.run(self.db, self.lexicon, self.semantic, self.config, self.clock(),
                                        query, mode, depth, filters)
                ranked[0].degraded = ranked[0].degraded or Degraded(
                    reason="lexical_index_repaired", install="",
                    message=f"the lexical index had damaged postings ({damaged} terms); it was rebuilt from the "
                            "memories' text before this answer")
        return ranked

    # ------------------------------------------------------------------ derived data
    def check(self) -> dict[str, Any]:
        """Verify the database and every structure derived from it (lexical index, embedding rows,
        vector index file) without changing anything: {ok, problems: [{part, what, repair}]}."""
        problems = [*integrity.check_sqlite(self.db), *integrity.check_lexicon(self.db),
                    *integrity.check_embeddings(self.db),
                    *integrity.check_vector_index(self.db, self.semantic.index_path)]
        return {"ok": not problems, "store": str(self.directory), "problems": [p.to_dict() for p in problems]}

    REBUILDABLE = ("lexical", "vectors", "all")

    def rebuild(self, what: str = "all", progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
        """Rebuild derived data from the memories: ``lexical`` (the keyword/BM25 index), ``vectors``
        (drop bad embedding rows and the index file, then embed what is missing when the model can
        run) or ``all``. ``progress(stage, done, total)`` is told how far each stage got."""
        if what not in self.REBUILDABLE:
            raise InvalidInput(f"rebuild what? choose one of {', '.join(self.REBUILDABLE)}, not {what!r}")
        done: dict[str, Any] = {}
        if what in ("lexical", "all"):
            total = self.count()
            if progress:
                progress("lexical", 0, total)
            integrity.repair_lexicon(self.db, self.lexicon)
            if progress:
                progress("lexical", total, total)
            done["lexical"] = {"documents": total}
        if what in ("vectors", "all"):
            dropped = integrity.repair_embeddings(self.db)
            moved = integrity.remove_index_file(self.semantic.index_path)
            self.semantic.forget_index()
            embedded, note = 0, None
            if self.semantic.availability().working:
                total = self.semantic.pending_count()
                counter = {"n": 0}

                def step(n: int) -> None:
                    counter["n"] += n
                    if progress:
                        progress("vectors", min(counter["n"], total), total)

                embedded = self.semantic.embed_pending(progress=step)
                self.semantic.rebuild_index()
            else:
                note = "the embeddings extra is not working here: rows are queued and embedded by the next semantic search"
            done["vectors"] = {"rows_dropped": dropped, "embedded": embedded, "index_file": moved, "note": note}
        return {"rebuilt": what, **done}

    def close(self) -> None:
        self.semantic.save()
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _config_from(stored: dict[str, Any], changes: dict[str, Any]) -> StoreConfig:
    """Settings from stored JSON with changes on top; a bad value is a one-line InvalidInput."""
    try:
        return StoreConfig.model_validate({**StoreConfig.model_validate(stored).model_dump(), **changes})
    except ValidationError as exc:
        raise _invalid(exc) from exc


def _link_dict(link: dict | Link) -> dict[str, Any]:
    try:
        return Link.model_validate(link).model_dump()
    except ValidationError as exc:
        raise _invalid(exc) from exc


def _texts(values: Iterable[str] | str | None, what: str) -> list[str]:
    """A list of non-blank strings (a single string counts as one)."""
    if values is None:
        return []
    values = [values] if isinstance(values, str) else list(values)
    if not all(isinstance(v, str) and v.strip() for v in values):
        raise InvalidInput(f"{what} must be a list of non-empty strings")
    return values


def _labels(values: Iterable[str], what: str) -> list[str]:
    """Short audit labels (commit ids, version strings): non-blank, one line, at most 200 characters."""
    values = _texts(values, what)
    bad = [v for v in values if len(v) > MAX_ID_CHARS or has_control_chars(v)]
    if bad:
        raise InvalidInput(f"{what}: each entry is one line of at most {MAX_ID_CHARS} characters")
    return list(dict.fromkeys(v.strip() for v in values))


def _paths(values: Iterable[str], what: str) -> list[str]:
    return list(dict.fromkeys(normalize_claim_path(p) for p in _texts(values, what)))


def _note(note: str | None) -> str | None:
    """A short free-text note (line breaks allowed, other control characters not)."""
    if note is None:
        return None
    if not isinstance(note, str):
        raise InvalidInput("a note must be text")
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise InvalidInput(f"a note is at most {MAX_NOTE_CHARS} characters, got {len(note)}")
    if has_control_chars(note.replace("\n", " ").replace("\t", " ")):
        raise InvalidInput("the note contains a control character")
    return note or None


def _excerpts(excerpt: str | Iterable[str | None] | None, count: int) -> list[str | None]:
    """One excerpt per id: a single string repeated, or a parallel list with None gaps."""
    if excerpt is None or isinstance(excerpt, str):
        values = [excerpt] * count
    else:
        values = list(excerpt)
        if len(values) != count:
            raise InvalidInput(f"excerpts must parallel the ids: {len(values)} excerpt(s) for {count} id(s)")
    for value in values:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidInput("an excerpt must be non-empty text (use None for 'no specific phrase')")
        if value is not None and len(value) > MAX_NOTE_CHARS:
            raise InvalidInput(f"an excerpt is at most {MAX_NOTE_CHARS} characters")
    return values


def _check_version(memory: Memory, version: str | None) -> None:
    if version is not None and version != memory.version:
        raise Stale(memory.id, version, memory.version)


def _warnings(memory: Memory) -> list[str]:
    if memory.category == "ambient" and len(memory.content.split()) > AMBIENT_LONG_WORDS:
        return [f"ambient_body_long: ambient memories colour every reply; keep them under {AMBIENT_LONG_WORDS} words"]
    return []


def _gone(pending_id: str, state: str, staged: pending_mod.PendingWrite | None) -> WriteResult:
    """The answer to confirming a staged write that is no longer there."""
    if state == "expired":
        return WriteResult(status="expired", pending_id=pending_id, expires=staged.expires,
                           reason=f"the pending write expired at {iso(staged.expires)} (they last "
                                  f"{pending_mod.PENDING_TTL.seconds // 60} minutes); write it again if it still holds")
    return WriteResult(status="not_found", pending_id=pending_id,
                       reason="no pending write has this id: it never existed, or was already confirmed or cancelled")


def open_store(path: str | os.PathLike | None = None, **kwargs: Any) -> Store:
    """Open (creating if needed) the store at ``path`` or the default location (see store/location.py)."""
    return Store(path, **kwargs)

