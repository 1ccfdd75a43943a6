"""The event log: one append-only row per thing a session did (searched, showed, wrote, used …).

Memories say what is known; events say what happened to them and when, and in which session.
That answers "what changed since the prior session", "was this memory contradicted recently"
and "did this session look anything up" (the silent-miss audit) without touching the records.
A call logs one row (``record_use`` one per memory, in one statement), so logging stays cheap.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from kenning.errors import InvalidInput
from kenning.store.db import Database
from kenning.store.plain import in_utc, iso

from .gates.limits import has_control_chars
from .gates.secret_marks import may_hold_secret

# kinds the store itself logs; other modules add their own (audit: turn_audited, search_miss)
SEARCH, SHOW, LIST = "search", "show", "list"
WRITE, PENDING, CONFIRM, CANCEL = "write", "pending", "confirm", "cancel"
UPDATE, REMOVE, RESTORE, VERIFY = "update", "remove", "restore", "verify"
OUTCOME, RENAME_SCOPE, REHOME = "outcome", "rename_scope", "rehome"
CORROBORATE = "corroborate"  # a duplicate write credited to the memory that already said it
SEARCH_MISS = "search_miss"

MAX_KIND_CHARS = 64


def log(
    conn: sqlite3.Connection,
    at: datetime,
    session: str,
    kind: str,
    memory_id: str | None = None,
    payload: dict[str, Any] | None = None,
) -> None:
    """Append one event inside the caller's transaction."""
    log_many(conn, at, session, kind, [(memory_id, payload)])


def log_many(
    conn: sqlite3.Connection,
    at: datetime,
    session: str,
    kind: str,
    rows: Iterable[tuple[str | None, dict[str, Any] | None]],
) -> None:
    """Append several events of one kind and time in one statement (one row per memory). Rows that
    share one payload object in a run (a settlement's outcome rows: ~10 a search) make its JSON once:
    masking and dumping it again for each row (5 us a row) was ~5% of a warm bm25 search's
    instructions at 20k memories."""
    check_kind(kind)
    stamp = iso(at)
    stored, last, text = [], None, None
    for mid, payload in rows:
        if payload is not last or text is None:
            last, text = payload, payload_json(payload)
        stored.append((stamp, session, kind, mid, text))
    conn.executemany("INSERT INTO events(at, session, kind, memory_id, payload) VALUES (?, ?, ?, ?, ?)", stored)


def from_caller(memory_id: object, payload: object) -> tuple[str | None, dict[str, Any] | None]:
    """A caller's own event (Store.log_event): an id that is not text (5) was stored as a number no
    query by memory id finds, and a payload that is not a mapping ([1]) broke the events' shape."""
    if memory_id is not None and not isinstance(memory_id, str):
        raise InvalidInput(f"log_event: memory_id must be a memory id (text), got {type(memory_id).__name__}")
    if memory_id is not None and has_control_chars(memory_id):  # a NUL: kept by SQLite, refused by PostgreSQL
        raise InvalidInput(f"log_event: memory_id {memory_id!r:.60} contains a control character; no id does")
    if payload is not None and not isinstance(payload, dict):
        raise InvalidInput(f"log_event: payload must be a dict (a JSON object), got {type(payload).__name__}")
    return memory_id, payload


def check_kind(kind: object) -> None:
    """A short name without control characters (a NUL was kept by SQLite and refused by PostgreSQL)."""
    if not isinstance(kind, str) or not kind.strip() or len(kind) > MAX_KIND_CHARS or has_control_chars(kind):
        raise InvalidInput(f"an event kind must be a short non-blank name, got {kind!r}")


def payload_json(payload: dict[str, Any] | None) -> str:
    """The stored form of a payload: JSON with secret-looking spans masked."""
    return json.dumps(_masked(payload or {}), ensure_ascii=False, default=str)


@functools.lru_cache(maxsize=8192)
def _mask_short(text: str) -> str:
    """The masked form of a short string, remembered: a search logs the same hit ids and use_token
    again and again (its own event, then one outcome row per hit and the settlement), and even the
    screen costs more than the look-up."""
    if not may_hold_secret(text):
        return text
    from kenning.memory.gates.credentials import mask

    return mask(text)


def _masked(value: Any) -> Any:
    """The payload with secret-looking spans masked in every string: what a caller typed (a search
    query, an audited user turn) is logged, but a secret in it is not. A NUL becomes U+FFFD: the log
    keeps it as JSON's \\u0000, which PostgreSQL's jsonb refuses to read, so one search for "a\\x00b"
    made every later read of the log there fail (health, events, the session's settlement)."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "\ufffd")
        if len(value) < 8:
            return value
        if len(value) <= 64:
            return _mask_short(value)
        if not may_hold_secret(value):  # most strings: no pattern can match
            return value
        from kenning.memory.gates.credentials import mask

        return mask(value)
    if isinstance(value, dict):
        return {k.replace("\x00", "\ufffd") if isinstance(k, str) else k: _masked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(v) for v in value]
    return value


def query(
    db: Database,
    session: str | None = None,
    since: datetime | str | None = None,
    kinds: Iterable[str] | None = None,
    memory_ids: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Events oldest first, filtered by session, time (``at >= since``), kinds and memories."""
    where, params = [], []
    if session is not None and not isinstance(session, str):
        raise InvalidInput(f"session must be a session id (a string), got {type(session).__name__}")
    if session is not None and "\x00" in session:  # no logged name holds a NUL, which PostgreSQL cannot take
        return []
    if session is not None:
        where.append("session = ?")
        params.append(session)
    if since is not None:
        where.append("at >= ?")
        params.append(instant(since))
    for column, values in (("kind", kinds), ("memory_id", memory_ids)):
        if values is not None:
            values = [v for v in _names(values, "kinds" if column == "kind" else "memory_ids") if "\x00" not in v]
            if not values:
                return []
            where.append(f"{column} IN ({','.join('?' * len(values))})")
            params += values
    flush_store(db.path)  # read events other sessions of this process still hold queued
    sql = "SELECT at, session, kind, memory_id, payload FROM events"
    sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY rowid"
    rows = db.read(lambda c: c.execute(sql, params).fetchall())
    return [{"at": at, "session": s, "kind": k, "memory_id": m, "payload": json.loads(p)} for at, s, k, m, p in rows]


def _names(values: Iterable[str] | str, what: str) -> list[str]:
    """A list of names; one string is one name (kinds="write" matched the kinds "w", "r", … and found nothing)."""
    if isinstance(values, str):
        return [values]
    try:
        names = list(values)
    except TypeError:
        raise InvalidInput(f"{what} must be a list of strings, got {type(values).__name__}") from None
    for name in names:
        if not isinstance(name, str):
            raise InvalidInput(f"{what} must be a list of strings, got an item of type {type(name).__name__}")
    return names


def instant(value: datetime | date | str) -> str:
    """A caller's time as the store's sortable UTC text: a datetime, a date (its midnight) or ISO-8601 text,
    read as an import's times are (store/plain.py ``in_utc``: naive means UTC, one outside UTC's calendar is
    refused naming it)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().upper().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"since must be an ISO-8601 time such as 2026-11-30T08:00:00Z, got {value!r}") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        raise InvalidInput(f"since must be an ISO-8601 time such as 2026-11-30T08:00:00Z, got {value!r}")
    return iso(in_utc(value, "since"))


def prior_session_boundary(db: Database, session: str) -> str | None:
    """The time of the latest event logged by any other session (ISO text), or None if there is none.

    Walks the log backwards, so the cost is this session's own tail, not the whole log.
    """
    flush_store(db.path)
    row = db.read(lambda c: c.execute(
        "SELECT at FROM events WHERE session != ? ORDER BY rowid DESC LIMIT 1", (session,)).fetchone())
    return row[0] if row else None


def flush_store(path) -> None:
    """Commit the read events this process still holds queued for the store (memory/deferred.py)."""
    from .deferred import flush_store as flush

    flush(path)
