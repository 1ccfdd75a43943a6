"""Episodes: a per-session journal beside memory, for run-state that must not become a durable fact.

A memory must stay true; an episode only has to say what a session did and concluded ("tried X,
fell over at step 3; next: Y"). Episodes live in their own table with a 30-day TTL, so they never
appear in memory search, list or health and the durability gate does not apply to them. They
reach later sessions through ``handoff`` (the latest takeaways of the previous session in the
same worktree) and ``search`` (chronological filters, never ranked), and leave the journal
through ``promote``, which sends a takeaway through the ordinary memory write path with every
gate and deletes the episode only once that write has committed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ulid import ULID

from kenning.errors import InvalidInput, NotFound, StorageError
from kenning.store.ids import canonical
from kenning.store.models import Instant, _Record, iso

from . import events
from .gates import GateRefused, credentials, write_enabled
from .gates.limits import MAX_CONTENT_BYTES, check_scopes, check_storable, has_control_chars
from .requests import CLOCK_SKEW

if TYPE_CHECKING:
    from .facade import Store

EPISODE_TTL = timedelta(days=30)
MAX_TAKEAWAY_BYTES = 4 * 1024
MAX_LABEL_CHARS = 200  # session ids, swarm ids, episode ids
HANDOFF_DEFAULT, HANDOFF_CAP = 5, 50
SEARCH_DEFAULT, SEARCH_CAP = 20, 200
MAX_IDS = 200
PROMOTED_EVENT = "episode_promoted"
EXPIRED_EVENT = "episodes_expired"  # a session's entries reached their TTL and were pruned
METADATA_KEY = "promoted_from_episode"

_COLUMNS = "id, session, parent_session, swarm_id, worktree, scopes, takeaway, body, created, expires"


class Episode(_Record):
    """One journal entry of one session; ``worktree`` is where that session ran (None outside git)."""

    id: str
    session: str
    parent_session: str | None = None
    swarm_id: str | None = None
    worktree: str | None = None
    scopes: list[str]
    takeaway: str | None = None
    body: str
    created: Instant
    expires: Instant

    @property
    def headline(self) -> str:
        """The takeaway, else the body's first non-blank line: what a handoff shows first."""
        if self.takeaway:
            return self.takeaway
        return next((line.strip() for line in self.body.splitlines() if line.strip()), "")

    def to_dict(self, include_body: bool = True) -> dict[str, Any]:
        """The row shape the tools and the CLI print (session columns spelled ``*_session_id``)."""
        row = {
            "id": self.id, "session_id": self.session, "parent_session_id": self.parent_session,
            "swarm_id": self.swarm_id, "worktree": self.worktree, "created": iso(self.created),
            "expires": iso(self.expires), "scopes": self.scopes, "takeaway": self.headline,
        }
        if include_body:
            row["body"] = self.body
        return row


def _label(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL_CHARS or has_control_chars(value):
        raise InvalidInput(f"{what} must be a non-blank id of at most {MAX_LABEL_CHARS} characters, got {value!r}")
    return value.strip()


def _bounded(value: int, low: int, high: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(f"{what} must be between {low} and {high}, got {value!r}")
    return value


def _episode(row: tuple) -> Episode:
    fields = dict(zip([c.strip() for c in _COLUMNS.split(",")], row))
    try:
        fields["scopes"] = json.loads(fields["scopes"])
        return Episode.model_validate(fields)
    except (ValueError, TypeError) as exc:  # a row changed behind kenning's back: one line, not a traceback
        why = str(exc).splitlines()[0][:160]
        raise StorageError(f"the stored episode {fields.get('id')!r} is damaged ({type(exc).__name__}: {why}); "
                           "delete that row from the episodes table or restore the store from a backup") from None


class Episodes:
    """The journal of one store, seen from one session (``store.session_id``) in one worktree."""

    def __init__(self, store: "Store"):
        self.store = store
        origin = store.here()  # the caller's checkout, as the store sees it (Store(cwd=...))
        self.worktree = origin.worktree if origin else None
        self.repo = origin.repo if origin else None
        # the session this one continues: set by the first handoff that resolves one (or by the caller)
        self.parent_session: str | None = None

    # ------------------------------------------------------------------ writes
    def write(
        self,
        body: str,
        takeaway: str | None = None,
        scopes: Iterable[str] | None = None,
        swarm_id: str | None = None,
        parent_session_id: str | None = None,
    ) -> dict[str, Any]:
        """Journal one entry for this session; expired entries of every session are pruned first.
        With writes turned off (write_enabled=false) nothing is journaled: GateRefused, writes_disabled."""
        write_enabled.require(self.store.config)
        if not isinstance(body, str) or not body.strip():
            raise InvalidInput("the episode body is empty; describe what this session did or concluded")
        for text, field in ((body, "the episode body"), (takeaway, "the takeaway")):
            if isinstance(text, str):
                check_storable(text, field)
        size = len(body.encode("utf-8"))
        if size > MAX_CONTENT_BYTES:
            raise InvalidInput(f"the episode body is {size:,} bytes; the limit is {MAX_CONTENT_BYTES:,} (1 MiB)")
        if takeaway is not None:
            if not isinstance(takeaway, str):
                raise InvalidInput("takeaway must be text")
            takeaway = takeaway.strip() or None
        size = 0 if takeaway is None else len(takeaway.encode("utf-8"))
        if size > MAX_TAKEAWAY_BYTES:  # bytes, whatever the surface: the MCP tool has no limit of its own
            raise InvalidInput(f"the takeaway is longer than {MAX_TAKEAWAY_BYTES:,} bytes (it is {size:,} bytes of "
                               "UTF-8); keep it to a sentence or two")
        for text, field in ((body, "the episode body"), (takeaway, "the takeaway")):
            refusal = credentials.check_field(text, field)
            if refusal is not None:
                raise GateRefused(refusal)
        scopes = [scopes] if isinstance(scopes, str) else list(scopes or [])  # one scope, as check_scopes reads it
        scopes = check_scopes(scopes) if scopes else []
        fields = dict(id=str(ULID()), session=self.store.session_id,
                      parent_session=_label(parent_session_id, "parent_session_id") or self.parent_session,
                      swarm_id=_label(swarm_id, "swarm_id"), worktree=self.worktree, scopes=scopes, takeaway=takeaway,
                      body=body)
        now = self.store.clock()
        with self.store.db.transaction() as c:
            pruned = self._prune(c, now)
            created = self._after_latest(c, now)
            episode = Episode(**fields, created=created, expires=created + EPISODE_TTL)
            c.execute(
                f"INSERT INTO episodes({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (episode.id, episode.session, episode.parent_session, episode.swarm_id, episode.worktree,
                 json.dumps(episode.scopes), episode.takeaway, episode.body, iso(episode.created),
                 iso(episode.expires)),
            )
        return {"status": "committed", **episode.to_dict(include_body=False), "pruned_sessions": pruned}

    def _after_latest(self, c: sqlite3.Connection, now: datetime) -> datetime:
        """``now``, or just after this worktree's latest entry when that is ahead of it by at most CLOCK_SKEW
        (this clock set back, another host's ahead): a handoff takes the session that journaled last by these
        times, so an entry written later must not be dated earlier. A wilder time drags nothing along."""
        latest = c.execute("SELECT MAX(created) FROM episodes WHERE worktree IS ?", (self.worktree,)).fetchone()[0]
        if latest is None or latest < iso(now):
            return now
        after = datetime.fromisoformat(latest.replace("Z", "+00:00")) + timedelta(microseconds=1)
        return after if after <= now + CLOCK_SKEW else now

    def prune(self) -> list[str]:
        """Delete every expired episode; returns the sessions that lost entries. With writes turned off
        nothing is deleted (GateRefused, writes_disabled), as for every other change to the store."""
        write_enabled.require(self.store.config)
        with self.store.db.transaction() as c:
            return self._prune(c, self.store.clock())

    def _prune(self, c: sqlite3.Connection, now: datetime) -> list[str]:
        """Delete expired entries, logging per session and worktree so a handoff can say where they went."""
        cutoff = iso(now)
        rows = c.execute("SELECT session, worktree, COUNT(*), MAX(created) FROM episodes WHERE expires <= ? "
                         "GROUP BY session, worktree ORDER BY session", (cutoff,)).fetchall()
        if rows:
            c.execute("DELETE FROM episodes WHERE expires <= ?", (cutoff,))
            events.log_many(c, now, self.store.session_id, EXPIRED_EVENT,
                            [(None, {"session": session, "worktree": worktree, "count": count, "journaled": latest})
                             for session, worktree, count, latest in rows])
        return list(dict.fromkeys(session for session, *_ in rows))

    # ------------------------------------------------------------------ reads
    def get(self, episode_id: str) -> Episode:
        episode_id = canonical(_label(episode_id, "episode_id"))  # a ULID in any case
        rows = self._select("id = ?", [episode_id], limit=1)
        if not rows:
            raise NotFound(f"no live episode has id {episode_id!r}; episode_search lists them (they expire after 30 days)")
        return rows[0]

    def search(
        self,
        scopes: Iterable[str] | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        swarm_id: str | None = None,
        since: datetime | str | None = None,
        ids: Iterable[str] | None = None,
        auto_scope: bool = True,
        max_results: int = SEARCH_DEFAULT,
    ) -> list[Episode]:
        """Chronological lookup: the most recent ``max_results`` matches, returned oldest first.

        Naming a session, parent, swarm or ids is deliberate and is never worktree-filtered. A bare
        walk with ``auto_scope`` keeps episodes from this worktree and lets through what cannot be
        compared or belongs to the same checkout (see ``_same_checkout``). An episode in a scope
        disabled for this session is hidden whatever the call names, as memory_search hides a memory
        in one and episode_handoff such an episode.
        """
        max_results = _bounded(max_results, 1, SEARCH_CAP, "max_results")
        where, params = [], []
        disabled = sorted(self.store.disabled_scopes)
        if disabled:
            marks = ",".join("?" * len(disabled))
            where.append(f"NOT EXISTS (SELECT 1 FROM json_each(episodes.scopes) WHERE value IN ({marks}))")
            params += disabled
        if scopes:
            wanted = check_scopes(scopes)
            where.append(f"EXISTS (SELECT 1 FROM json_each(episodes.scopes) WHERE value IN ({','.join('?' * len(wanted))}))")
            params += wanted
        for column, value, what in (("session", session_id, "session_id"),
                                    ("parent_session", parent_session_id, "parent_session_id"),
                                    ("swarm_id", swarm_id, "swarm_id")):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(_label(value, what))
        if since is not None:
            where.append("created >= ?")
            params.append(events.instant(since))
        if ids is not None:
            wanted_ids = [canonical(_label(i, "ids[]")) for i in ids]
            if len(wanted_ids) > MAX_IDS:
                raise InvalidInput(f"{len(wanted_ids)} ids given; at most {MAX_IDS}")
            if not wanted_ids:
                return []
            where.append(f"id IN ({','.join('?' * len(wanted_ids))})")
            params += wanted_ids
        explicit = any(v is not None for v in (session_id, parent_session_id, swarm_id, ids))
        if auto_scope and not explicit:
            rows = [e for e in self._select(" AND ".join(where) or "1 = 1", params) if self._same_checkout(e.worktree)]
            rows = rows[:max_results]
        else:
            rows = self._select(" AND ".join(where) or "1 = 1", params, limit=max_results)
        return rows[::-1]

    def handoff(self, prior_session_id: str | None = None, max_episodes: int = HANDOFF_DEFAULT) -> dict[str, Any]:
        """What the previous session in this worktree concluded: its latest takeaways, oldest first.

        Without ``prior_session_id`` the previous session is the other session with the latest journal
        activity (an entry: live, promoted or expired, as of when it was written) in exactly this worktree.
        Episodes in a session-disabled scope are hidden; when the previous session shows nothing,
        ``note`` says why and the walk falls back to the next older session that shows something.
        """
        max_episodes = _bounded(max_episodes, 1, HANDOFF_CAP, "max_episodes")
        disabled = set(self.store.disabled_scopes)
        if prior_session_id is not None:
            candidates = [_label(prior_session_id, "prior_session_id")]
        else:
            candidates = self._prior_sessions()
        if not candidates:
            where = self.worktree or "outside any git worktree"
            return {"prior_session_id": None, "worktree": self.worktree, "episodes": [],
                    "note": f"no other session has journaled in this worktree ({where})"}
        note = None
        for position, session in enumerate(candidates):
            journal = self._select("session = ?", [session])
            visible = [e for e in journal if not disabled.intersection(e.scopes)][:max_episodes]
            if visible:
                self.parent_session = self.parent_session or session
                result = {"prior_session_id": session, "worktree": self.worktree,
                          "episodes": [_handoff_row(e) for e in visible[::-1]]}
                if note:
                    result["note"] = note
                return result
            if position == 0:
                note = self._empty_reason(session, journal, disabled)
        return {"prior_session_id": candidates[0], "worktree": self.worktree, "episodes": [], "note": note}

    # ------------------------------------------------------------------ promotion
    def promote(
        self,
        episode_id: str,
        scopes: Iterable[str],
        category: str = "fact",
        confidence: str = "medium",
        source: str = "explicit-statement",
        use_body: bool = False,
        **write_options: Any,
    ) -> dict[str, Any]:
        """Write the takeaway (or body) as a memory through ``Store.write`` with all its gates.

        The episode is deleted only when that write commits; on ``pending`` it stays until
        ``confirm_write`` commits the memory, and any refusal leaves it for another attempt, except a
        duplicate of the memory an earlier promotion of this very episode committed before it was cut off.
        """
        episode = self.get(episode_id)
        if not use_body and not episode.takeaway:
            raise InvalidInput(f"episode {episode.id} has no takeaway; pass use_body=true to promote its body")
        text = episode.body if use_body else episode.takeaway
        result = self.store.write(
            text, scopes=scopes, category=category, confidence=confidence, source=source,
            metadata={METADATA_KEY: episode.id}, **write_options,
        )
        deleted = result.status == "committed" or self._promoted_into(result.id, episode.id)
        if deleted:  # gone either way: a promotion of it running at the same time may have deleted it first
            self._retire(episode, result.id)
        return {**result.to_dict(), "promoted_from_episode_id": episode.id, "episode_deleted": deleted}

    def _promoted_into(self, memory_id: str | None, episode_id: str) -> bool:
        """True when ``memory_id`` is the live memory an earlier promotion of this episode committed: that
        promotion ended (a killed process) between the memory's commit and the episode's deletion."""
        if not memory_id:
            return False
        try:
            return self.store.get(memory_id).metadata.get(METADATA_KEY) == episode_id
        except NotFound:
            return False

    def confirm_write(self, pending_id: str, own_session: bool = False) -> dict[str, Any]:
        """``Store.confirm_write``, then retire the source episode when the pending write was a promotion."""
        result = self.store.confirm_write(pending_id, own_session)
        payload = result.to_dict()
        if result.status == "committed" and result.id:
            source = self.store.get(result.id).metadata.get(METADATA_KEY)
            if isinstance(source, str):
                rows = self._select("id = ?", [source], limit=1)
                payload["promoted_from_episode_id"] = source
                payload["episode_deleted"] = bool(rows) and self._retire(rows[0], result.id)
        return payload

    def _retire(self, episode: Episode, memory_id: str | None) -> bool:
        """Delete a promoted episode and log it, so a later handoff can say where the journal went."""
        with self.store.db.transaction() as c:
            gone = c.execute("DELETE FROM episodes WHERE id = ?", (episode.id,)).rowcount > 0
        if gone:
            self.store.log_event(PROMOTED_EVENT, memory_id=memory_id, payload={
                "episode_id": episode.id, "session": episode.session, "worktree": episode.worktree,
                "journaled": iso(episode.created)})
        return gone

    # ------------------------------------------------------------------ helpers
    def _select(self, where: str, params: list, limit: int | None = None) -> list[Episode]:
        """Live (unexpired) episodes matching ``where``, newest first."""
        sql = (f"SELECT {_COLUMNS} FROM episodes WHERE expires > ? AND ({where}) "
               "ORDER BY created DESC, rowid DESC" + (" LIMIT ?" if limit else ""))
        args = [iso(self.store.clock()), *params, *([limit] if limit else [])]
        return [_episode(r) for r in self.store.db.read(lambda c: c.execute(sql, args).fetchall())]

    def _prior_sessions(self) -> list[str]:
        """Other sessions with journal activity in exactly this worktree, latest activity first."""
        latest: dict[str, str] = {}
        # promoted and pruned entries count too, through their events, as of when they were written (the
        # event's "journaled"): not when a later session pruned them, nor when a clock set back promoted one
        rows = self.store.db.read(lambda c: c.execute(
            "SELECT session, MAX(created) FROM episodes WHERE worktree IS ? AND session != ? "
            "GROUP BY session", (self.worktree, self.store.session_id)).fetchall())
        latest.update(rows)
        for event in self.store.events(kinds=[PROMOTED_EVENT, EXPIRED_EVENT]):
            payload = event.get("payload") or {}
            session = payload.get("session")
            if session and session != self.store.session_id and payload.get("worktree") == self.worktree:
                latest[session] = max(latest.get(session, ""), str(payload.get("journaled") or _event_time(event)))
        return sorted(latest, key=lambda s: (latest[s], s), reverse=True)

    def _empty_reason(self, session: str, journal: list[Episode], disabled: set[str]) -> str:
        if journal:
            hidden = sorted(disabled.intersection(s for e in journal for s in e.scopes))
            return (f"session {session} journaled, but every entry is in a scope disabled for this session "
                    f"({', '.join(hidden)}); enable the scope to see them")
        promoted = [e for e in self.store.events(kinds=[PROMOTED_EVENT])
                    if (e.get("payload") or {}).get("session") == session]
        if promoted:
            return (f"session {session} journaled, but all its entries were promoted into memories "
                    f"({len(promoted)} promoted); memory_search finds them")
        expired = self.store.db.read(lambda c: c.execute(
            "SELECT COUNT(*) FROM episodes WHERE session = ? AND expires <= ?",
            (session, iso(self.store.clock()))).fetchone()[0])
        expired += sum((e.get("payload") or {}).get("count", 0) for e in self.store.events(kinds=[EXPIRED_EVENT])
                       if (e.get("payload") or {}).get("session") == session)
        if expired:
            return (f"session {session} journaled, but all {expired} of its entries expired (episodes last "
                    f"{EPISODE_TTL.days} days); nothing of it is left to hand off")
        return f"session {session} has no live journal entries"

    def _same_checkout(self, worktree: str | None) -> bool:
        """Permissive worktree match for the bare search walk: only a clearly different checkout is dropped."""
        if worktree is None or self.worktree is None:
            return True
        if worktree in (self.worktree, self.repo):  # ours, or the main checkout of our linked worktree
            return True
        return not Path(worktree).exists()


def _handoff_row(episode: Episode) -> dict[str, Any]:
    return {"id": episode.id, "created": iso(episode.created), "takeaway": episode.headline,
            "body": episode.body, "scopes": episode.scopes}


def _event_time(event: dict) -> str:
    at = event.get("at")
    return iso(at) if isinstance(at, datetime) else str(at or "")
