"""Pending writes: a write that waits for a person's yes before it becomes a memory.

A claim about the user (``user-inference``), or every write when the store requires
confirmation, is staged here with its full request and an expiry one hour out. ``confirm``
commits it through the gates again; ``cancel`` drops it. An expired row is kept for a while
after it lapses so a late confirm can say "expired" rather than "never existed"; rows that
lapsed longer ago than that are pruned whenever something new is staged.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from kenning.store.db import Database
from kenning.store.ids import new_ulid
from kenning.store.models import iso, summary_line

PENDING_TTL = timedelta(hours=1)
KEEP_EXPIRED_FOR = timedelta(days=7)

PendingReason = Literal["user_inference", "confirmation_required"]


class PendingWrite(BaseModel):
    id: str
    session: str
    created: datetime
    expires: datetime
    request: dict[str, Any]  # the write's arguments, overrides and origin, as JSON

    @property
    def reason(self) -> PendingReason:
        return "user_inference" if self.request.get("category") == "user-inference" else "confirmation_required"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pending_id": self.id, "session": self.session, "created": iso(self.created),
            "expires": iso(self.expires), "pending_reason": self.reason,
            "category": self.request.get("category"), "scopes": self.request.get("scopes"),
            "summary": summary_line(self.request.get("content", "")),
        }


def stage(conn: sqlite3.Connection, session: str, request: dict[str, Any], now: datetime) -> PendingWrite:
    """Stage a write; prunes rows that lapsed long ago."""
    conn.execute("DELETE FROM pending_writes WHERE expires < ?", (iso(now - KEEP_EXPIRED_FOR),))
    pending = PendingWrite(id=new_ulid(), session=session, created=now, expires=now + PENDING_TTL, request=request)
    conn.execute(
        "INSERT INTO pending_writes(id, session, created, expires, request) VALUES (?, ?, ?, ?, ?)",
        (pending.id, session, iso(now), iso(pending.expires), json.dumps(request, ensure_ascii=False, default=str)),
    )
    return pending


def lookup(
    conn: sqlite3.Connection, pending_id: str, now: datetime
) -> tuple[Literal["live", "expired", "not_found"], PendingWrite | None]:
    """Find a staged write: live, expired (kept but lapsed) or not_found."""
    if not isinstance(pending_id, str) or not pending_id.strip():
        return "not_found", None
    row = conn.execute(
        "SELECT id, session, created, expires, request FROM pending_writes WHERE id = ?", (pending_id.strip(),)
    ).fetchone()
    if row is None:
        return "not_found", None
    pending = _from_row(row)
    return ("live" if pending.expires > now else "expired"), pending


def drop(conn: sqlite3.Connection, pending_id: str) -> None:
    conn.execute("DELETE FROM pending_writes WHERE id = ?", (pending_id,))


def live(db: Database, now: datetime, session: str | None = None) -> list[PendingWrite]:
    """Unexpired staged writes, oldest first; one session's, or every session's with None."""
    sql = "SELECT id, session, created, expires, request FROM pending_writes WHERE expires > ?"
    params: list[Any] = [iso(now)]
    if session is not None:
        sql += " AND session = ?"
        params.append(session)
    rows = db.read(lambda c: c.execute(sql + " ORDER BY created, id", params).fetchall())
    return [_from_row(r) for r in rows]


def _from_row(row: tuple) -> PendingWrite:
    id_, session, created, expires, request = row
    return PendingWrite(id=id_, session=session, created=created, expires=expires, request=json.loads(request))
