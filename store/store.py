"""The Store: one SQLite file holding memories, tombstones and the lexical index; every write one transaction."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ulid import ULID

from kenning.errors import InvalidInput, NotFound
from kenning.retrieval.text import fingerprint

from . import search as search_mod
from .db import DB_FILENAME, Database
from .gates.limits import check_content, check_metadata, check_scopes, has_control_chars
from .lexicon import Lexicon
from .location import resolve_store_dir
from .models import Link, Memory, SearchResult, StoreConfig, Tombstone, WriteResult, iso, utcnow
from .semantic import Semantic, enqueue, forget

MAX_LIMIT = 50
MAX_ID_CHARS = 200


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
    ):
        self.directory = resolve_store_dir(directory)
        # one session per Store object (a CLI run, a server connection): the event log's unit
        self.session_id = session_id or str(ULID())
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"cannot create the store directory {self.directory}: {exc.strerror}") from exc
        self.path = self.directory / DB_FILENAME
        self.clock = clock
        try:
            self.db = Database(self.path)
        except sqlite3.DatabaseError as exc:
            raise InvalidInput(f"{self.path} is not a kenning store ({exc})") from exc
        self.lexicon = Lexicon(self.db)
        if self.db.get_meta("tokenizer") != fingerprint():
            with self.db.transaction() as c:
                self.lexicon.ensure_current(c)
        self.config = StoreConfig.model_validate_json(self.db.get_meta("config") or "{}")
        self.semantic = Semantic(self)

    # ------------------------------------------------------------------ config
    def configure(self, persist: bool = True, **changes: Any) -> StoreConfig:
        """Change settings (e.g. ``bm25_k1=1.5``); ``persist=False`` keeps them to this object."""
        try:
            config = StoreConfig.model_validate({**self.config.model_dump(), **changes})
        except ValidationError as exc:
            raise _invalid(exc) from exc
        if persist:
            with self.db.transaction() as c:
                Database.set_meta(c, "config", config.model_dump_json())
        self.config = config
        return config

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
    ) -> WriteResult:
        """Commit one memory and index it in the same transaction."""
        memory = self._new_memory(
            {"content": content, "scopes": scopes, "category": category, "confidence": confidence,
             "source": source, "metadata": metadata, "links": links or [],
             "claims": [{"spec": c} for c in claims or []]}
        )
        with self.db.transaction() as c:
            self._check_link_targets(c, memory.links)
            self._insert(c, memory)
        self._embed_if_loaded()
        return WriteResult(status="committed", id=memory.id)

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
        """
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
        existing = self._existing_ids([m.id for m in memories])
        if existing:
            raise InvalidInput(f"{len(existing)} id(s) already in the store, e.g. {sorted(existing)[0]!r}")
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
        else:
            self._embed_if_loaded()
        return [m.id for m in memories]

    def update(
        self,
        id: str,
        text: str | None = None,
        scopes: Iterable[str] | None = None,
        confidence: str | None = None,
        category: str | None = None,
        links: list[dict | Link] | None = None,
        metadata: dict | None = None,
    ) -> Memory:
        """Change fields of a live memory and bump ``updated``; a new text clears its verification."""
        changes: dict[str, Any] = {
            k: v for k, v in {"content": text, "scopes": scopes, "confidence": confidence,
                              "category": category, "links": links, "metadata": metadata}.items()
            if v is not None
        }
        if not changes:
            raise InvalidInput("nothing to update; give new text, scopes, confidence, category, links or metadata")
        if text is not None:
            changes["content"] = check_content(text)
        if scopes is not None:
            changes["scopes"] = check_scopes(scopes)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        with self.db.transaction() as c:
            rowid, memory = self._live_row(c, id)
            fields = memory.model_dump()
            fields.update(changes)
            text_changed = text is not None and text != memory.content
            if text_changed:
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
            if text_changed:
                self.lexicon.remove(c, rowid)
                self.lexicon.add(c, rowid, updated.content, updated.updated.timestamp())
                forget(c, rowid)
                enqueue(c, [rowid])
            else:
                self.lexicon.touch(c, rowid, updated.updated.timestamp())
        if text_changed:
            self._embed_if_loaded()
        return updated

    def remove(self, id: str, reason: str) -> Tombstone:
        """Move a memory to the tombstones with a reason; it leaves search but is never deleted."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("a removal reason is required, e.g. --reason 'superseded by the new deploy doc'")
        if has_control_chars(reason):
            raise InvalidInput("the removal reason contains a control character")
        now = self.clock()
        with self.db.transaction() as c:
            rowid, memory = self._live_row(c, id)
            c.execute("UPDATE memories SET removed_at = ?, removed_reason = ? WHERE rowid = ?", (iso(now), reason.strip(), rowid))
            self.lexicon.remove(c, rowid)
            forget(c, rowid)
        return Tombstone(memory=memory, reason=reason.strip(), removed_at=now)

    def restore(self, id: str) -> Memory:
        """Bring a tombstoned memory back into search, as it was when removed."""
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
        self._embed_if_loaded()
        return memory

    # ------------------------------------------------------------------ reads
    def get(self, id: str) -> Memory:
        row = self.db.read(lambda c: c.execute(
            "SELECT record, removed_at, removed_reason FROM memories WHERE id = ?", (id,)).fetchone())
        if row is None:
            raise NotFound(f"no memory has id {id!r}; `kenning list` shows the ids")
        if row[1] is not None:
            raise NotFound(f"memory {id} was removed at {row[1]} ({row[2]}); `kenning restore {id}` brings it back")
        return Memory.model_validate_json(row[0])

    def list(self, scopes: Iterable[str] | None = None, category: str | None = None, limit: int = 50) -> list[Memory]:
        """Live memories, newest update first, optionally filtered by scope (any of) and category."""
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        where, params = self._filter_sql(scopes, category)
        rows = self.db.read(lambda c: c.execute(
            f"SELECT record FROM memories m WHERE removed_at IS NULL {where} ORDER BY updated DESC, id DESC LIMIT ?",
            (*params, limit)).fetchall())
        return [Memory.model_validate_json(r[0]) for r in rows]

    def tombstones(self, scopes: Iterable[str] | None = None, limit: int = 50) -> list[Tombstone]:
        where, params = self._filter_sql(scopes, None)
        rows = self.db.read(lambda c: c.execute(
            f"SELECT record, removed_reason, removed_at FROM memories m WHERE removed_at IS NOT NULL {where} "
            "ORDER BY removed_at DESC, id DESC LIMIT ?", (*params, limit)).fetchall())
        return [Tombstone(memory=Memory.model_validate_json(r), reason=why, removed_at=at) for r, why, at in rows]

    def count(self) -> int:
        return self.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE removed_at IS NULL").fetchone()[0])

    def search(
        self,
        query: str,
        mode: str | None = None,
        scopes: Iterable[str] | None = None,
        limit: int = 5,
        category: str | None = None,
    ) -> SearchResult:
        """Ranked, explained hits. ``limit`` is 1-50; filters apply before ranking."""
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")
        return self.rank(query, mode, depth=limit, scopes=scopes, category=category)

    def rank(
        self,
        query: str,
        mode: str | None = None,
        depth: int = 100,
        scopes: Iterable[str] | None = None,
        category: str | None = None,
    ) -> SearchResult:
        """``search`` without the result cap, for evaluation (e.g. Recall@100)."""
        return search_mod.run(self, query, mode or self.config.default_mode, depth, scopes, category)

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
        try:
            return Memory.model_validate(fields)
        except ValidationError as exc:
            raise _invalid(exc) from exc

    def _insert(self, c: sqlite3.Connection, memory: Memory) -> int:
        rowid = c.execute(
            "INSERT INTO memories(id, content, category, created, updated, content_hash, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (memory.id, memory.content, memory.category, iso(memory.created), iso(memory.updated),
             content_hash(memory.content), memory.model_dump_json()),
        ).lastrowid
        c.executemany("INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)", [(s, rowid) for s in memory.scopes])
        self.lexicon.add(c, rowid, memory.content, memory.updated.timestamp())
        enqueue(c, [rowid])
        return rowid

    def _insert_many(self, c: sqlite3.Connection, memories: list[Memory]) -> None:
        start = c.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM memories").fetchone()[0]
        c.executemany(
            "INSERT INTO memories(rowid, id, content, category, created, updated, content_hash, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(start + i, m.id, m.content, m.category, iso(m.created), iso(m.updated), content_hash(m.content),
              m.model_dump_json()) for i, m in enumerate(memories)],
        )
        c.executemany(
            "INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)",
            [(s, start + i) for i, m in enumerate(memories) for s in m.scopes],
        )
        self.lexicon.add_many(c, [(start + i, m.content, m.updated.timestamp()) for i, m in enumerate(memories)])
        enqueue(c, [start + i for i in range(len(memories))])

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
        where, params = "", []
        if scopes:
            scopes = check_scopes(scopes)
            marks = ",".join("?" * len(scopes))
            where += f" AND m.rowid IN (SELECT mem FROM memory_scopes WHERE scope IN ({marks}))"
            params += scopes
        if category:
            where += " AND m.category = ?"
            params.append(category)
        return where, params

    def close(self) -> None:
        self.semantic.save()
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(path: str | os.PathLike | None = None, **kwargs: Any) -> Store:
    """Open (creating if needed) the store at ``path`` or the default location (see store/location.py)."""
    return Store(path, **kwargs)

