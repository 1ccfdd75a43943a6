"""Reading memories: get and show one, list, tombstones, count, and search (ranked, trust-annotated, logged).

Reads see what the caller may see (the session's view: auto_scope, disabled scopes); ``search``
validates the request here, ranks through store/search.py, then annotates every hit with trust
(memory/trust.py). ``rank`` is the bare ranking the evaluation measures. ``search_plain`` is the
same search answered as plain data (store/plain.py) for the CLI, so this module loads the pydantic
models (store/models.py) only where it builds them.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from datetime import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kenning.errors import EmbeddingsUnavailable, InvalidInput, NotFound, SearchDisabled
from kenning.retrieval.text import search_tokens
from kenning.store import integrity, records, search as ranking
from kenning.store.ids import looked_up, shown
from kenning.store.plain import MODES, NotPlain, PlainResult

from . import events, outcomes, trust
from .gates.limits import check_count, check_scopes
from .scopes import View
from .session import Session

if TYPE_CHECKING:
    from kenning.store.models import Memory, SearchResult, StoreConfig, Tombstone

MAX_LIMIT = 50
QUERY_CHARS_LOGGED = 200
HIDDEN_BY_AUTO_SCOPE = ("nothing of this repository (or global) matches, but memories of other repositories do: "
                        "auto_scope hides them; search with auto_scope off (--no-auto-scope) to see them")
PENDING_VECTORS = ("{waiting} (a bulk import queues them), and semantic search finds a memory only by its vector: "
                   "embed them with `kenning index` (or import with embed=True / --embed); hybrid finds them by "
                   "their words meanwhile")
NO_WORDS = ("the query holds no word to search for: punctuation, symbols and emoji are not indexed, so a memory "
            "holding them is not found by them")


def get(s: Session, id: str) -> Memory:
    """The memory as stored (no event, no annotation); ``show`` is the annotated read."""
    id = looked_up(id)
    row = s.db.read(lambda c: c.execute(
        "SELECT record, removed_at, removed_reason FROM memories WHERE id = ?", (id,)).fetchone())
    if row is None:
        raise NotFound(f"no memory has id {shown(id)}; `kenning list` shows the ids")
    if row[1] is not None:
        raise NotFound(f"memory {id} was removed at {row[1]} ({row[2]}); `kenning restore {id}` brings it back")
    from kenning.store.models import Memory

    return Memory.from_record(row[0], id)


def show(s: Session, id: str) -> dict[str, Any]:
    """One memory in full with its trust report, links (with their targets' summaries) and reverse links."""
    from .staleness import DriftCache

    memory = get(s, id)
    now = s.clock()
    assessed = trust.staleness(memory, now, s.config.verification_stale_days, DriftCache())
    out = memory.model_dump(mode="json")
    out["summary"], out["version"] = memory.summary, memory.version
    out.update(trust.full_detail(assessed))
    targets = records.summaries(s.db, [link.target for link in memory.links])
    replaced = trust.superseded_by(s.db, [link.target for link in memory.links])
    out["links"] = [{**link.model_dump(mode="json"), **targets.get(link.target, {"status": "missing"}),
                     **_replaced_by(replaced.get(link.target, []), memory.id)} for link in memory.links]
    out["reverse_links"] = records.reverse_links(s.db, memory.id)
    replaced = trust.superseded_by(s.db, [memory.id]).get(memory.id)
    negatives = trust.negative_outcomes(s.db, [memory], now).get(memory.id)
    for key, value in (("superseded_by", replaced), ("recent_negative_outcomes", negatives)):
        if value:
            out[key] = value
    s.log_read(events.SHOW, memory.id)
    return out


def _moved_checkout(s: Session, id: str) -> str:
    """When the hidden hit was written in a folder that no longer exists, the way to bring it back
    here: a checkout moved on disk hides what it wrote until ``rehome`` names its new folder."""
    worktree = s.db.read(lambda c: c.execute("SELECT origin_worktree FROM memories WHERE id = ?", (id,)).fetchone())
    if not worktree or not worktree[0] or os.path.exists(worktree[0]):
        return ""
    return (f"; the best of them was written in {worktree[0]}, which no longer exists: if that checkout moved "
            f"here, rehome (`kenning rehome {worktree[0]}`) gives its memories this folder")


def _replaced_by(superseders: list[str], shown: str) -> dict[str, list[str]]:
    """A link target's superseded_by, but for the memory shown (its own supersedes link says so already)."""
    others = [i for i in superseders if i != shown]
    return {"superseded_by": others} if others else {}


def check_category(category: str | None) -> None:
    """A category filter must name one (a typo would otherwise read as "no such memories")."""
    if category is not None and category not in ("fact", "user-inference", "ambient"):
        raise InvalidInput(f"unknown category {category!r}; choose fact, user-inference or ambient")


def list_memories(
    s: Session, scopes: Iterable[str] | None, category: str | None, limit: int, auto_scope: bool, record: bool,
    after: str | None = None,
) -> list[Memory]:
    """Live memories the caller may see, newest update first, optionally filtered by scope (any of) and
    category; with ``after`` (a listed memory's ``cursor``) those that come after it in that order."""
    limit = check_count(limit)
    check_category(category)
    where, params = records.filter_sql(check_scopes(scopes) if scopes else None, category)
    if after is not None:
        updated, id = _cursor(after)
        where += " AND (m.updated < ? OR (m.updated = ? AND m.id < ?))"
        params += [updated, updated, id]
    view_where, view_params = s.view(auto_scope).where()
    rows = s.db.read(lambda c: c.execute(
        f"SELECT record FROM memories m WHERE removed_at IS NULL {where}{view_where} "
        "ORDER BY updated DESC, id DESC LIMIT ?", (*params, *view_params, limit)).fetchall())
    from kenning.store.models import Memory

    memories = [Memory.from_record(r[0]) for r in rows]
    if record:
        s.log_read(events.LIST, payload={"count": len(memories), "auto_scope": auto_scope})
    return memories


def _cursor(after: object) -> tuple[str, str]:
    """A ``Memory.cursor`` (or ``Tombstone.cursor``) as its time and id; anything else is refused, never read
    as the list's start."""
    updated, _, id = after.partition(" ") if isinstance(after, str) else ("", "", "")
    try:
        datetime.fromisoformat(updated)
    except ValueError:
        id = ""
    if not id:
        raise InvalidInput(f"after must be the cursor of the last one listed (its .cursor; over HTTP and MCP the "
                           f"answer's next_after), got {after!r:.80}")
    return updated, id


def tombstones(s: Session, scopes: Iterable[str] | None, limit: int, after: str | None = None) -> list[Tombstone]:
    """Removed memories with their reasons, most recently removed first (``after``: a listed one's ``cursor``)."""
    limit = check_count(limit)
    where, params = records.filter_sql(check_scopes(scopes) if scopes else None, None)
    if after is not None:
        removed, id = _cursor(after)
        where += " AND (m.removed_at < ? OR (m.removed_at = ? AND m.id < ?))"
        params += [removed, removed, id]
    rows = s.db.read(lambda c: c.execute(
        f"SELECT record, removed_reason, removed_at FROM memories m WHERE removed_at IS NOT NULL {where} "
        "ORDER BY removed_at DESC, id DESC LIMIT ?", (*params, limit)).fetchall())
    from kenning.store.models import Memory, Tombstone

    removers = _removers(s, [Memory.from_record(r).id for r, _, _ in rows])
    return [Tombstone(memory=(m := Memory.from_record(r)), reason=why, removed_at=at,
                      removed_by_session=removers.get(m.id)) for r, why, at in rows]


def _removers(s: Session, ids: list[str]) -> dict[str, str]:
    """The session that last removed each memory, from the event log (no column needed)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = s.db.read(lambda c: c.execute(
        f"SELECT memory_id, session FROM events WHERE kind = ? AND memory_id IN ({marks}) ORDER BY rowid",
        (events.REMOVE, *ids)).fetchall())
    return dict(rows)


def _one_generation(read):
    """Run ``read`` (a search, a ranking) with one look at the store's state for the whole answer:
    its settings, lexicon, vector count and trust memo ask alike (PostgreSQL: one round trip, not
    one an ask; see Database.one_generation)."""
    @functools.wraps(read)
    def looked(s: Session, *args, **kwargs):
        with s.db.one_generation():
            return read(s, *args, **kwargs)
    return looked


@_one_generation
def search(
    s: Session,
    query: str,
    mode: str | None,
    scopes: Iterable[str] | None,
    limit: int,
    category: str | None,
    expand_top: bool,
    auto_scope: bool,
    since_prior_session: bool,
    record: bool,
) -> SearchResult:
    """Ranked, explained hits with trust annotations, logged as a search unless ``record=False``.

    ``since_prior_session`` keeps memories updated after the latest event of another session
    (empty, with a note, when no other session has logged anything).
    """
    # read once: each look asks SQLite whether another process changed the settings
    return _search(s, s.config, query, mode, scopes, limit, category, expand_top, auto_scope, since_prior_session,
                   record)


@_one_generation
def search_plain(s: Session, query: str, mode: str | None, scopes: Iterable[str] | None, limit: int,
                 category: str | None, auto_scope: bool, since_prior_session: bool) -> PlainResult | None:
    """``search`` (logged, not expanded) answered as plain data without pydantic, or None when only
    the models answer it the same way: a semantic or hybrid mode, settings or a hit's stored record
    that only they read as they are. None is decided before anything is logged."""
    config = s.settings.plain()
    if config is None or (config.default_mode if mode is None else mode) not in ("keyword", "bm25") \
            or not config.search_enabled:
        return None
    try:
        return _search(s, config, query, mode, scopes, limit, category, False, auto_scope, since_prior_session,
                       True, plain=True)
    except NotPlain:
        return None


def _search(s: Session, config: Any, query: str, mode: str | None, scopes: Iterable[str] | None, limit: int,
            category: str | None, expand_top: bool, auto_scope: bool, since_prior_session: bool, record: bool,
            plain: bool = False) -> Any:
    if not config.search_enabled:
        raise SearchDisabled()
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")
    boundary = events.prior_session_boundary(s.db, s.session_id) if since_prior_session else None
    view = s.view(auto_scope, updated_after=boundary)
    # expand_top weighs the top hit against the runner-up the store holds, which a page of one leaves out
    result, memories = _rank(s, query, mode, limit + 1 if expand_top else limit, scopes, category, view,
                             config=config, plain=plain)
    result.hits, beyond = result.hits[:limit], result.hits[limit:]
    if since_prior_session and boundary is None:
        result.hits = []
        result.note = "no other session has logged anything yet, so there is no prior session to compare with"
    elif not result.hits and view.scoped_to is not None:
        others = replace(view, auto_scope=False)
        hidden = _rank(s, query, mode, 1, scopes, category, others, config=config, plain=plain)[0].hits
        if hidden:
            result.note = HIDDEN_BY_AUTO_SCOPE + _moved_checkout(s, hidden[0].id)
    if not result.hits and not result.note and not search_tokens(query):  # "🎉": not "nothing matched"
        result.note = NO_WORDS
    if not result.hits and not result.note and result.mode == "semantic" and result.pending_embeddings:
        n = result.pending_embeddings
        waiting = "1 memory waits for its vector" if n == 1 else f"{n:,} memories wait for their vectors"
        result.note = PENDING_VECTORS.format(waiting=waiting)
    trust.annotate(s.db, result.hits, memories, s.clock(), config.verification_stale_days, expand_top,
                   runner_up=beyond[0] if beyond else None)
    if record and not s.db.read_only:  # a read-only store answers without its event log
        result.use_token = outcomes.new_token()
        # queued, not committed here: the batch it commits in settles the hits of two searches ago
        s.log_read(events.SEARCH, None, {
            "query": query[:QUERY_CHARS_LOGGED], "mode": result.mode, "hit_ids": [h.id for h in result.hits],
            "auto_scope": auto_scope, "since_prior_session": since_prior_session, "use_token": result.use_token})
    return result


@_one_generation
def rank(s: Session, query: str, mode: str | None, depth: int, scopes: Iterable[str] | None,
         category: str | None, explain: bool = True) -> SearchResult | ranking.Ranking:
    """Pure ranking for evaluation: no result cap, no auto_scope, no trust annotation, no event.

    ``explain=False`` is rank-only (a ``Ranking``: ids and scores, the top hit's relevance label,
    no snippets or match terms): what the eval harness times, so its latency is the engine's."""
    check_count(depth, "depth")  # depth=0 or -1 answered an empty ranking, as if nothing matched
    return _rank(s, query, mode, depth, scopes, category, None, explain)[0]


def _rank(s: Session, query: str, mode: str | None, depth: int, scopes: Iterable[str] | None,
          category: str | None, view: View | None, explain: bool = True,
          config: StoreConfig | None = None, plain: bool = False) -> tuple[SearchResult, dict[str, Memory]]:
    """Validate the request, then rank over the store with what the view hides left out
    (``plain``: a lexical search answered as store/plain.py's data, ``ranking.run_plain``)."""
    config = config or s.config
    mode = config.default_mode if mode is None else mode  # "" is no mode: refused below, as the CLI and MCP do
    if not isinstance(query, str):  # a dict, bytes or None is not an empty query: say what it is
        raise InvalidInput(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInput("the query is empty; give words a matching memory would contain")
    if not query.isprintable() and any("\ud800" <= ch <= "\udfff" for ch in query):
        raise InvalidInput("the query is not valid Unicode (it holds a lone surrogate such as \\ud800)")
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if isinstance(scopes, (list, tuple, set, frozenset)) and not scopes:
        scopes = None  # no scopes named: every scope (an int or a generator is check_scopes' to refuse)
    scopes = check_scopes(scopes) if scopes is not None and scopes != "" else None
    check_category(category)
    filters = ranking.Filters(scopes, category, view.updated_after if view else None,
                              view.hidden_keys(s.db) if view else ())
    if mode in ("semantic", "hybrid") and not plain:
        s.semantic.availability()  # a server's encoder still loading is waited for here, not under the lock
        s.semantic.settle_fresh()  # and the vectors of the writes it just answered (a few: read your writes)
    # one ranking at a time per Store: threads sharing it (a server) would otherwise see the
    # lexicon's cached postings and doc arrays refreshed or grown halfway through (KeyError)
    def run() -> tuple[Any, dict[str, Any]]:
        if plain:
            return ranking.run_plain(s.db, s.lexicon, config, s.clock(), query, mode, depth, filters)
        return ranking.run(s.db, s.lexicon, lambda: s.semantic, config, s.clock(), query, mode, depth, filters,
                           explain)

    with s.db.lock:
        try:
            ranked = run()
        except EmbeddingsUnavailable:
            if s.semantic.availability().working:
                raise
            ranked = run()  # the encoder broke during this search (a NaN vector): answered lexically, degraded
        if s.lexicon.damaged and not s.db.read_only:
            if plain:  # the models' search repairs and says so; a fall-back after a repair would not
                raise NotPlain()
            # damaged postings were skipped, never raised; rebuild from the text and rank again
            damaged = len(s.lexicon.damaged)
            integrity.repair_lexicon(s.db, s.lexicon)
            ranked = run()
            if ranked[0].degraded is None:
                note = {"reason": "lexical_index_repaired", "message": f"the lexical index had damaged postings "
                        f"({damaged} terms); it was rebuilt from the memories' text before this answer",
                        "install": "", "fix": None}
                ranked[0].degraded = _degraded(note)
    if not plain and explain and ranked[0].pending_embeddings is None and _vector_leg_missed(ranked[0]):
        ranked[0].pending_embeddings = s.semantic.pending_count()  # what it would have had to embed
    return ranked


def _vector_leg_missed(result: SearchResult) -> bool:
    """The mode asked for the vector leg and the encoder could not run it."""
    return result.degraded is not None and result.degraded.reason.startswith("embeddings_")


def _degraded(note: dict[str, Any]) -> Any:
    from kenning.store.models import Degraded

    return Degraded.model_validate(note)
