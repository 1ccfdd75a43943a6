"""The outcome loop: every search hit settles as ``applied`` on its own, unless the model said otherwise.

A search hands out a ``use_token`` (logged with its hit ids). The token settles at the end of the
turn (the client's end-of-turn audit) or, without an audit hook, when the session searches twice
more (so within about two turns): each hit of the token that got no explicit outcome in this
session since the search is logged ``applied`` with ``auto: true``. An explicit
``memory_record_use`` (ignored, contradicted, corrected, or applied early) wins, so only the
actionable cases need a call. Auto-applies never count as endorsement in the curation buckets
(``cold_endorsement`` counts explicit applies only).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from kenning.store.ids import new_ulid
from kenning.store.plain import iso

from . import events

SETTLED = "use_settled"  # one per settled use_token, so a token settles once


def new_token() -> str:
    return "use_" + new_ulid()


def settle(conn: sqlite3.Connection, session: str, now: datetime, keep_latest: int = 0,
           after_rowid: int = 0) -> tuple[int, int]:
    """Settle this session's open use_tokens, all but the ``keep_latest`` newest.

    Returns (auto-applies logged, a rowid cursor). Tokens settle oldest first, so every search
    event at or before the cursor is settled: pass it back as ``after_rowid`` and the next call
    reads only the session's newest searches, not its whole history (a long session searched
    thousands of times would otherwise pay for all of them on every search).
    """
    # With a cursor, read the log's tail after it (a rowid range); without one, this session's rows
    # (its index). Left to itself SQLite picks the kind index: every search ever logged, by anyone.
    where = "rowid > ? AND +session = ? AND +kind = ?" if after_rowid else "session = ? AND +kind = ? AND rowid > ?"
    params = (after_rowid, session, events.SEARCH) if after_rowid else (session, events.SEARCH, after_rowid)
    searches = conn.execute(
        "SELECT rowid, at, json_extract(payload, '$.use_token'), json_extract(payload, '$.hit_ids') FROM events "
        f"WHERE {where} ORDER BY rowid", params).fetchall()
    searches = [s for s in searches if s[2] is not None]
    if not searches:
        return 0, after_rowid
    settled = {r[0] for r in conn.execute(
        "SELECT json_extract(payload, '$.use_token') FROM events WHERE rowid > ? AND +session = ? AND +kind = ?",
        (searches[0][0], session, SETTLED)).fetchall()}  # a token's settlement is logged after its search
    open_ = [s for s in searches if s[2] not in settled]
    if keep_latest:
        open_ = open_[:-keep_latest]
    settling = {s[0] for s in open_}
    cursor = after_rowid
    for s in searches:  # the settled prefix: everything before the first token still open
        if s[2] in settled or s[0] in settling:
            cursor = s[0]
        else:
            break
    applied = 0
    if not open_:
        return applied, cursor
    # the session's outcomes since its oldest open search, read once (its own index), not once a token
    # through the kind index (every session's outcomes since then)
    # each memory's newest outcome then: a hit was answered after its search when that is at or after
    # the search (one dict, not a pass over every outcome a token: a batch of 256 searches settling
    # at once made that quadratic)
    latest: dict[str | None, str] = {}
    for mid, logged in conn.execute(
            "SELECT memory_id, at FROM events WHERE session = ? AND at >= ? AND +kind = ?",
            (session, min(s[1] for s in open_), events.OUTCOME)):
        if logged > latest.get(mid, ""):
            latest[mid] = logged
    stamp = iso(now)
    for _, at, token, hit_ids in open_:
        ids = json.loads(hit_ids or "[]")
        payload = {"outcome": "applied", "auto": True, "use_token": token}  # one object: its JSON is made once
        rows = [(mid, payload) for mid in ids if latest.get(mid, "") < at]
        if rows:
            events.log_many(conn, now, session, events.OUTCOME, rows)
            for mid, _ in rows:  # as the next token's query would see them
                if stamp > latest.get(mid, ""):
                    latest[mid] = stamp
            applied += len(rows)
        events.log(conn, now, session, SETTLED, None, {"use_token": token, "auto_applied": len(rows)})
    return applied, cursor

