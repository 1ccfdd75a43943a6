"""A batch of read events costs what its rows do, not the square of them.

Two things a deferred batch (memory/deferred.py) does per row were slow: the secret screen of each
logged string (``may_hold_secret``: every credential shape tried, ~20-40 us for an id or a token)
and the settlement's "was this hit answered since its search" (a pass over every outcome of the
batch for each of its tokens). Both are replaced by cheaper forms that must give the same answers:
the screen is compared with ``_screen`` (every shape, as first written) and the settlement with the
code it replaced, on real event logs.
"""

from __future__ import annotations

import json
import random
import string
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings, strategies as st

import kenning
from kenning.memory import events, outcomes
from kenning.memory.gates.secret_marks import SHAPES, _screen, may_hold_secret
from kenning.store.ids import new_ulid
from kenning.store.plain import iso

LITERALS = sorted({s for _, clauses in SHAPES for clause in clauses for s in clause})
PIECES = st.one_of(st.sampled_from(LITERALS), st.sampled_from(LITERALS).map(str.upper),
                   st.text(alphabet=string.ascii_letters + string.digits + "_ -:/.=@", max_size=12),
                   st.builds(new_ulid), st.builds(lambda: "use_" + new_ulid()))


@settings(max_examples=3000, deadline=None)
@given(st.lists(PIECES, max_size=6).map("".join))
def test_the_screen_answers_as_every_shape_tried(text):
    assert may_hold_secret(text) == _screen(text)


def test_the_screen_on_ids_tokens_and_queries():
    rng = random.Random(4)
    texts = [new_ulid() for _ in range(3000)] + ["use_" + new_ulid() for _ in range(3000)]
    texts += [" ".join(rng.choice(LITERALS + ["billing", "gateway", "deploy"]) for _ in range(rng.randint(1, 8)))
              for _ in range(3000)]
    assert [may_hold_secret(t) for t in texts] == [_screen(t) for t in texts]
    assert any(may_hold_secret(t) for t in texts) and not all(may_hold_secret(t) for t in texts)


def _old_settle(conn, session, now, keep_latest=0, after_rowid=0):
    """memory/outcomes.py's settle before this change (a set of answered hits built per token)."""
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
        (searches[0][0], session, outcomes.SETTLED)).fetchall()}
    open_ = [s for s in searches if s[2] not in settled]
    if keep_latest:
        open_ = open_[:-keep_latest]
    settling = {s[0] for s in open_}
    cursor = after_rowid
    for s in searches:
        if s[2] in settled or s[0] in settling:
            cursor = s[0]
        else:
            break
    applied = 0
    if not open_:
        return applied, cursor
    outcomes_since = conn.execute(
        "SELECT memory_id, at FROM events WHERE session = ? AND at >= ? AND +kind = ?",
        (session, min(s[1] for s in open_), events.OUTCOME)).fetchall()
    stamp = iso(now)
    for _, at, token, hit_ids in open_:
        ids = json.loads(hit_ids or "[]")
        answered = {mid for mid, logged in outcomes_since if logged >= at}
        rows = [(mid, {"outcome": "applied", "auto": True, "use_token": token}) for mid in ids if mid not in answered]
        if rows:
            events.log_many(conn, now, session, events.OUTCOME, rows)
            outcomes_since += [(mid, stamp) for mid, _ in rows]
            applied += len(rows)
        events.log(conn, now, session, outcomes.SETTLED, None, {"use_token": token, "auto_applied": len(rows)})
    return applied, cursor


def _log(seed):
    """A random session log: searches (tokens, hits, some repeated), explicit outcomes of every kind
    (some before, some at, some after a search's time; some by another session), earlier settlements."""
    rng = random.Random(seed)
    ids = [f"m{i:03d}" for i in range(25)]
    start = datetime(2026, 3, 2, tzinfo=timezone.utc)
    rows = []
    for step in range(400):
        at = iso(start + timedelta(seconds=rng.choice([step, step, step - 3])))
        session = "s1" if rng.random() < 0.85 else "s2"
        roll = rng.random()
        if roll < 0.5:
            token = f"use_{seed}_{step}"
            rows.append((at, session, events.SEARCH, None, json.dumps(
                {"query": "q", "hit_ids": rng.sample(ids, rng.randint(0, 8)), "use_token": token})))
            if rng.random() < 0.1:
                rows.append((at, session, outcomes.SETTLED, None, json.dumps({"use_token": token, "auto_applied": 0})))
        elif roll < 0.9:
            rows.append((at, session, events.OUTCOME, rng.choice(ids), json.dumps({"outcome": rng.choice(
                ["applied", "ignored", "contradicted", "corrected"])})))
        else:
            rows.append((at, session, events.SEARCH, None, json.dumps({"query": "no token"})))
    return rows, start + timedelta(seconds=500)


def test_the_settlement_logs_what_the_code_it_replaced_logged(tmp_path):
    for seed in range(6):
        log, now = _log(seed)
        results = []
        for name, settle in (("new", outcomes.settle), ("old", _old_settle)):
            with kenning.open_store(tmp_path / f"{name}{seed}") as store:
                db = store._s.db
                with db.transaction() as c:
                    c.executemany(
                        "INSERT INTO events(at, session, kind, memory_id, payload) VALUES (?, ?, ?, ?, ?)", log)
                answers = []
                for keep, after in ((2, 0), (0, 0)):
                    with db.transaction() as c:
                        answers.append(settle(c, "s1", now, keep_latest=keep, after_rowid=after))
                rows = db.read(lambda c: c.execute(
                    "SELECT at, session, kind, memory_id, payload FROM events ORDER BY rowid").fetchall())
                results.append((answers, rows))
        assert results[0] == results[1]
        assert results[0][0][0][0] > 0  # hits were auto-applied
        assert len(results[0][1]) > len(log)


def test_rows_sharing_a_payload_store_it_once_made_and_each_row_keeps_its_own(tmp_path):
    """``log_many`` makes a shared payload's JSON once (a settlement's outcome rows share one); rows
    whose payloads differ, or repeat after another, still store their own, masked."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE events (at TEXT, session TEXT, kind TEXT, memory_id TEXT, payload TEXT)")
    shared = {"outcome": "applied", "auto": True, "use_token": "use_01ABC"}
    secret = {"note": "token=ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}
    rows = [("a", shared), ("b", shared), ("c", secret), ("d", shared), ("e", None), ("f", None)]
    made = []
    real = events.payload_json

    def counting(payload):
        made.append(payload)
        return real(payload)

    events.payload_json, saved = counting, events.payload_json
    try:
        events.log_many(conn, datetime(2026, 3, 2, tzinfo=timezone.utc), "s1", events.OUTCOME, rows)
    finally:
        events.payload_json = saved
    stored = conn.execute("SELECT memory_id, payload, at FROM events ORDER BY rowid").fetchall()
    assert [r[0] for r in stored] == list("abcdef")
    assert [json.loads(r[1]) for r in stored] == [json.loads(real(p)) for _, p in rows]
    assert "ghp_" + "a1B2" not in stored[2][1]  # still masked
    assert len(made) == 4 and {r[2] for r in stored} == {"2026-03-02T00:00:00.000000Z"}
