"""Transcript recall: the session ledgers agents already write, indexed incrementally and ranked by kenning's engine.

Why the store's own SQLite file: one file to back up and move, one transaction model, and the
messages get their own lexical index through the very ``Lexicon`` code the memories use (tables
``tlex_*``, see store/db.py), so a transcript hit is ranked and explained by the same legs,
fusion and snippet code as a memory hit. Their own tables keep them out of every memory path
(gates, duplicates, counts, trust).

Incremental: every search first brings the index up to date with the files, cheaply. A ledger
whose size and mtime did not change is not opened; one that grew is read on from the byte offset
where the last read stopped (the same file, its digests proving it was appended to); one replaced
by another file, rewritten in place at the same size, shrunk or changed before the offset is read
again from the start (ledger.py); one that disappeared is dropped. So a line a live session appends
is searchable at the next query, in this process or any other, and a line redacted from a ledger
leaves the index at the next one.
"""

from __future__ import annotations

import json
import os
import sqlite3
from stat import S_ISREG
import threading
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning.errors import InvalidInput, NotFound, SearchDisabled, StorageError
from kenning.retrieval import bm25, engine, keyword, labels, query_reading, spelling
from kenning.retrieval.lexical import contains, unknown
from kenning.retrieval.text import fingerprint
from kenning.store.db import Database
from kenning.store.lexicon import LexTables, Lexicon
from kenning.store.location import current_folder
from kenning.store.models import MODES, Degraded, iso, utcnow

from .folders import LedgerFolders
from .ledger import Mark, appended, file_id, read_from
from .readers import READER_VERSION, epoch as _epoch, identity  # _epoch: readers.py checked it when the line was read
from .transcript_models import TranscriptHit, TranscriptResult
from .transcript_vectors import TranscriptVectors, forget

if TYPE_CHECKING:
    from kenning.retrieval.embeddings import Availability
    from kenning.store.models import StoreConfig
    from kenning.store.semantic import Semantic

TRANSCRIPT_TABLES = LexTables(
    docs="tlex_docs", segments="tlex_segments", delta="tlex_delta", counts="tlex_counts",
    tokenizer_key="tlex_tokenizer", delta_rows_key="tlex_delta_rows",
    documents="SELECT rowid, text, at FROM transcript_messages",
)
BATCH_BELOW = 64  # an increment this small goes through the delta table (cheap, patches the cache)
# retired postings (rewritten or deleted ledgers) are dropped by a rebuild once they outnumber the live ones
REBUILD_RETIRED_MIN = 10_000
MAX_LIMIT = 50
ENV_CURRENT_SESSION = "KENNING_CURRENT_SESSION"
READER_KEY = "transcript_reader_version"  # meta: the READER_VERSION that read the indexed messages


@dataclass
class SourceShare:
    """One source's part in a sync: `transcripts add` says what happened to the source it names, not
    what the whole sync did (another source's grown ledgers are read by the same pass)."""

    messages: int = 0     # messages added from the ledgers it holds
    malformed: int = 0
    unreadable: list[dict[str, str]] = field(default_factory=list)
    elsewhere: int = 0    # ledgers it lists that an earlier source holds (a file, and then the folder holding it)
    links: int = 0        # names it lists for a ledger it lists already (latest.jsonl -> a.jsonl)


@dataclass
class SyncReport:
    """What one pass over the sources changed."""

    new: int = 0          # ledgers read for the first time
    appended: int = 0     # ledgers read on from their offset
    reread: int = 0       # rewritten ledgers read again from the start
    dropped: int = 0      # ledgers whose file is gone (or whose source was removed)
    paths: list[str] = field(default_factory=list)
    shares: dict[int, SourceShare] = field(default_factory=dict)  # source id -> its part; the totals sum them

    @property
    def changed(self) -> bool:
        return bool(self.new or self.appended or self.reread or self.dropped)

    @property
    def messages(self) -> int:  # messages added
        return sum(share.messages for share in self.shares.values())

    @property
    def malformed(self) -> int:  # lines skipped as malformed in this pass
        return sum(share.malformed for share in self.shares.values())

    @property
    def unreadable(self) -> list[dict[str, str]]:  # {path, why}: ledgers this user may not read
        return [why for share in self.shares.values() for why in share.unreadable]

    def share(self, source_id: int) -> SourceShare:
        return self.shares.setdefault(source_id, SourceShare())

    def cannot_read(self, source_id: int, path: str, exc: OSError) -> None:
        """One unreadable ledger never stops the rest, but is said."""
        self.share(source_id).unreadable.append({"path": path, "why": exc.strerror or str(exc)})


@dataclass
class _Ledger:
    id: int
    source: int
    path: str
    mark: Mark
    session: str | None
    parent_session: str | None
    project: str | None
    state: str

    def read_by_these_readers(self) -> bool:
        """Whether these readers (``READER_VERSION``) read it, though the store's READER_KEY is older."""
        return json.loads(self.state).get("readers") == READER_VERSION


_indexes: "weakref.WeakKeyDictionary[Any, TranscriptIndex]" = weakref.WeakKeyDictionary()


def index_for(store: Any) -> "TranscriptIndex":
    """The transcript index of an open store (one per store object, so its caches are reused)."""
    found = _indexes.get(store)
    if found is None:
        found = _indexes[store] = TranscriptIndex(store.db, lambda: store.config, cwd=store.cwd, semantic=store.semantic)
    return found


class TranscriptIndex:
    """Sources, ledgers and messages in the store's database, plus this process's view of them."""

    def __init__(self, db: Database, config: "Callable[[], StoreConfig]", cwd: str | os.PathLike | None = None,
                 semantic: "Semantic | None" = None):
        """``semantic`` (the store's) lends the model for the vector leg; without it transcripts rank lexically."""
        self.db = db
        self.vectors = TranscriptVectors(db, semantic) if semantic is not None else None
        if self.vectors is not None:  # a server's background embedder gives new messages their vectors
            semantic.also_in_background(self.vectors.embed_in_background)
        self.config = config
        self.cwd = Path(cwd) if cwd is not None else None
        self.lexicon = Lexicon(db, TRANSCRIPT_TABLES)
        self._lock = threading.RLock()
        self._version: int | None = None
        self._ledgers: dict[str, _Ledger] = {}
        self._key_ledger = np.full(0, -1, np.int64)
        self._ledger_sessions: dict[int, tuple[tuple, set[str]]] = {}  # ledger id -> (its mark, its sessions)
        self._ledger_projects: dict[int, tuple[tuple, dict[str, str]]] = {}  # ... (its mark, sessions elsewhere)
        self._folders = LedgerFolders()
        self._readers_current = False  # the index was read by these readers (READER_KEY), once known
        if not db.read_only and db.get_meta(TRANSCRIPT_TABLES.tokenizer_key) != fingerprint():
            with db.transaction() as c:
                self.lexicon.ensure_current(c)

    # ------------------------------------------------------------------ sources
    def add_source(self, path: str | os.PathLike, project: str | os.PathLike | None = None,
                   progress: "Callable[[int, int], None] | None" = None) -> dict[str, Any]:
        """Register a ledger file or a folder of them; ``project`` is the project of ledgers that name none
        (default: the project of the directory the caller works in). Reads it right away."""
        if isinstance(path, str) and not path.strip():  # Path("") is ".": it would register this directory
            raise InvalidInput("the transcript path is empty; give a transcript file (.jsonl) or a folder holding them")
        resolved = Path(path).expanduser()
        try:
            resolved.stat()
        except FileNotFoundError:
            pass  # said just below
        except OSError as exc:  # a name longer than the file system allows, a loop of links ...
            raise InvalidInput(f"cannot read {str(resolved)[:200]}: {exc.strerror or exc}") from None
        if not resolved.exists():
            raise InvalidInput(f"{resolved} does not exist; give a transcript file (.jsonl) or a folder holding them")
        if not (resolved.is_dir() or resolved.is_file()):
            raise InvalidInput(f"{resolved} is neither a file nor a folder")
        try:  # one this user may not read was registered, skipped at every sync: "0 new messages", exit 0
            if resolved.is_dir():
                os.scandir(resolved).close()
            else:
                open(resolved, "rb").close()
        except OSError as exc:
            raise InvalidInput(f"cannot read {str(resolved)[:200]}: {exc.strerror or exc}; nothing was registered") from None
        resolved = resolved.resolve()
        owner = project_of(str(Path(project).expanduser().resolve()) if project is not None else str(self._here()))
        with self.db.transaction() as c:
            row = c.execute("SELECT id FROM transcript_sources WHERE path = ?", (str(resolved),)).fetchone()
            source_id = row[0] if row is not None else c.execute(
                "INSERT INTO transcript_sources(path, project, added) VALUES (?, ?, ?)",
                (str(resolved), owner, iso(utcnow()))).lastrowid
        share = self.sync(progress).share(source_id)
        return {"path": str(resolved), "project": owner, "already_registered": row is not None,
                "ledgers": sum(1 for led in self._ledgers.values() if led.source == source_id),
                "messages_added": share.messages, "malformed_lines": share.malformed,
                "unreadable_ledgers": share.unreadable, "ledgers_under_other_sources": share.elsewhere,
                "links_skipped": share.links}

    def sources(self) -> list[dict[str, Any]]:
        """Registered sources with how many ledgers and messages each holds now."""
        return self.listing()["sources"]

    def listing(self) -> dict[str, Any]:
        """``{count, sources}`` as ``transcripts list`` shows them, with a ``note`` when the ledgers' new lines
        could not be taken in first (a full disk failed the listing whole, a read-only store said nothing)."""
        note = self._sync_for_a_read("these counts")
        rows = self.db.read(lambda c: c.execute(
            "SELECT s.id, s.path, s.project, s.added, COUNT(DISTINCT l.id), "
            "(SELECT COUNT(*) FROM transcript_messages m JOIN transcript_ledgers l2 ON l2.id = m.ledger "
            " WHERE l2.source = s.id), COALESCE(SUM(l.malformed), 0) "
            "FROM transcript_sources s LEFT JOIN transcript_ledgers l ON l.source = s.id "
            "GROUP BY s.id ORDER BY s.path").fetchall())
        sources = [{"path": path, "project": project, "added": added, "ledgers": ledgers, "messages": messages,
                    "malformed_lines": malformed, "exists": Path(path).exists()}
                   for _, path, project, added, ledgers, messages, malformed in rows]
        return {"count": len(sources), "sources": sources, **({"note": note} if note else {})}

    def remove_source(self, path: str | os.PathLike) -> dict[str, Any]:
        """Unregister a source and drop what was indexed from it (the files are not touched). A ledger
        another source also holds (a file, and the folder holding it) stays indexed, under that source:
        dropping it would only have it read again at the next search."""
        if isinstance(path, str) and not path.strip():  # Path("") is ".": it would remove this directory's source
            raise InvalidInput("the transcript source is empty; give one as `kenning transcripts list` shows it")
        given = Path(path).expanduser()
        candidates = {str(given), str(given.resolve()) if given.exists() else str(given.absolute())}
        with self._lock:
            others: dict[str, tuple[int, str]] = {}  # ledger path -> the first other source listing it
            for source_id, source_path in self.db.read(lambda c: c.execute(
                    "SELECT id, path FROM transcript_sources ORDER BY id").fetchall()):
                if source_path not in candidates:
                    for ledger in self._folders.ledgers(source_path):
                        others.setdefault(ledger, (source_id, source_path))
            with self.db.transaction() as c:
                row = next((r for p in candidates for r in [c.execute(
                    "SELECT id, path FROM transcript_sources WHERE path = ?", (p,)).fetchone()] if r), None)
                if row is None:
                    raise NotFound(f"{path} is not a registered transcript source; `kenning transcripts list` shows them")
                ledgers = c.execute("SELECT id, path FROM transcript_ledgers WHERE source = ?", (row[0],)).fetchall()
                counts = dict(c.execute("SELECT m.ledger, COUNT(*) FROM transcript_messages m JOIN transcript_ledgers l "
                                        "ON l.id = m.ledger WHERE l.source = ? GROUP BY m.ledger", (row[0],)).fetchall())
                kept = [(ledger_id, others[p]) for ledger_id, p in ledgers if p in others]
                c.executemany("UPDATE transcript_ledgers SET source = ? WHERE id = ?",
                              [(owner, ledger_id) for ledger_id, (owner, _) in kept])
                dropped = [ledger_id for ledger_id, p in ledgers if p not in others]
                messages = self._drop(c, dropped)
                c.execute("DELETE FROM transcript_sources WHERE id = ?", (row[0],))
        self._version = None
        return {"path": row[1], "removed": True, "ledgers_dropped": len(dropped), "messages_dropped": messages,
                "ledgers_kept": len(kept), "messages_kept": sum(counts.get(ledger_id, 0) for ledger_id, _ in kept),
                "kept_under": sorted({owner_path for _, (_, owner_path) in kept})}

    # ------------------------------------------------------------------ keeping up with the files
    def sync(self, progress: "Callable[[int, int], None] | None" = None) -> SyncReport:
        """Bring the index up to date with the files: new, appended, rewritten and deleted ledgers.

        ``progress(done, total)`` is called per ledger file (a first index of a large folder takes a while)."""
        report = SyncReport()
        with self._lock:
            self._refresh()
            if self.db.read_only:  # serve what is indexed; reading the files on would need a write
                return report
            outdated = self._read_by_older_readers()
            sources = self.db.read(lambda c: c.execute(
                "SELECT id, path, project FROM transcript_sources ORDER BY id").fetchall())
            seen: dict[str, int] = {}  # ledger path -> the source holding it: the first that lists it
            files = [(source_id, project, path) for source_id, source_path, project in sources
                     for path in self._folders.ledgers(source_path)]
            for done, (source_id, project, path) in enumerate(files, 1):
                if progress is not None:
                    progress(done, len(files))
                if path in seen:
                    share = report.share(source_id)
                    if seen[path] == source_id:
                        share.links += 1
                    else:
                        share.elsewhere += 1
                    continue
                seen[path] = source_id
                try:
                    stat = os.stat(path)
                except OSError:  # gone since the walk: dropped below
                    del seen[path]
                    continue
                if not S_ISREG(stat.st_mode):  # replaced by a FIFO or a device since: reading it could block
                    del seen[path]
                    continue
                known = self._ledgers.get(path)
                again = outdated and known is not None and not known.read_by_these_readers()
                if known and not again and known.mark.size == stat.st_size \
                        and known.mark.mtime_ns == stat.st_mtime_ns:
                    if known.source != source_id:  # the source that held it no longer lists it (a link gone)
                        self._hand_over(known, source_id)
                    continue
                self._read(source_id, project, path, stat, known, report, again=again)
            gone = [led for path, led in self._ledgers.items() if path not in seen]
            if gone:
                with self.db.transaction() as c:
                    self._drop(c, [led.id for led in gone])
                report.dropped += len(gone)
                for led in gone:
                    self._ledgers.pop(led.path, None)
            if report.reread or report.dropped:
                self._maybe_rebuild()
            if outdated:
                with self.db.transaction() as c:
                    self.db.set_meta(c, READER_KEY, READER_VERSION)
                self._readers_current = True
        if report.messages and self.vectors is not None:
            self.vectors.semantic.wake_background()
        return report

    def _hand_over(self, led: _Ledger, source_id: int) -> None:
        with self.db.transaction() as c:
            c.execute("UPDATE transcript_ledgers SET source = ? WHERE id = ?", (source_id, led.id))
        led.source = source_id

    def _read_by_older_readers(self) -> bool:
        """Whether the indexed messages were read by readers older than these (``READER_VERSION``):
        then every ledger is read again from its start at this sync. Asked once a process."""
        if not self._readers_current:
            self._readers_current = self.db.get_meta(READER_KEY) == READER_VERSION
        return not self._readers_current

    def _read(self, source_id: int, default_project: str | None, path: str, stat: os.stat_result,
              known: _Ledger | None, report: SyncReport, again: bool = False) -> None:
        """Read a ledger on from where it was read (from its start when it was rewritten, or when
        ``again``: read by older readers)."""
        offset, state = 0, {}
        rewritten = known is not None and again
        if known is not None and not again:
            kept = json.loads(known.state)
            try:
                with open(path, "rb") as f:
                    grown = appended(f, stat, known.mark, kept.get("file"))
            except OSError as exc:
                report.cannot_read(source_id, path, exc)
                return
            if grown:
                offset, state = known.mark.offset, kept
            else:
                rewritten = True
        try:
            inc = read_from(path, stat, offset, int(state.get("lines", 0)), state)
        except OSError as exc:
            report.cannot_read(source_id, path, exc)
            return
        state["lines"] = inc.lines
        state["file"] = file_id(stat)  # a file put in its place is read whole, whatever its size
        state["readers"] = READER_VERSION  # a sync killed before it records READER_KEY does not read it again
        session, parent = identity(state)
        if session is None:
            session = Path(path).stem
        project = project_of(state["cwd"]) if state.get("cwd") else default_project
        fallback_at = stat.st_mtime
        with self.db.transaction() as c:
            row = c.execute("SELECT id, offset, head FROM transcript_ledgers WHERE path = ?", (path,)).fetchone()
            if (row is None) != (known is None) or (row and known and (row[1], row[2]) != (known.mark.offset, known.mark.head)):
                self._version = None  # another process got here first; look again at the next sync
                return
            if rewritten:
                self._drop(c, [known.id], keep_ledger=True)
            mark = inc.mark
            values = (source_id, state.get("format"), mark.size, mark.mtime_ns, mark.offset, mark.head, mark.tail,
                      session, parent, project, inc.malformed, json.dumps(state))
            if row is None:
                ledger_id = c.execute(
                    "INSERT INTO transcript_ledgers(source, format, size, mtime_ns, offset, head, tail, session, "
                    "parent_session, project, malformed, state, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*values, path)).lastrowid
            else:
                ledger_id = row[0]
                c.execute(
                    "UPDATE transcript_ledgers SET source = ?, format = ?, size = ?, mtime_ns = ?, offset = ?, head = ?, "
                    "tail = ?, session = ?, parent_session = ?, project = ?, "
                    "malformed = CASE WHEN ? = 1 THEN 0 ELSE malformed END + ?, state = ? WHERE id = ?",
                    (*values[:10], rewritten, *values[10:], ledger_id))
            self._insert_messages(c, ledger_id, inc.messages, fallback_at)
        self._ledgers[path] = _Ledger(ledger_id, source_id, path, inc.mark, session, parent, project, json.dumps(state))
        share = report.share(source_id)
        share.messages += len(inc.messages)
        share.malformed += inc.malformed
        report.paths.append(path)
        if known is None:
            report.new += 1
        elif rewritten:
            report.reread += 1
        else:
            report.appended += 1

    def _insert_messages(self, c: sqlite3.Connection, ledger_id: int, messages: list, fallback_at: float) -> None:
        if not messages:
            return
        start = c.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM transcript_messages").fetchone()[0]
        rows = []
        for i, (line, m) in enumerate(messages):
            at = _epoch(m.ts)
            rows.append((start + i, ledger_id, line, m.session, m.parent_session, int(m.sidechain),
                         _stamp(m.ts), at if at is not None else fallback_at, m.speaker, m.text))
        c.executemany(
            "INSERT INTO transcript_messages(rowid, ledger, line, session, parent_session, sidechain, ts, at, speaker, "
            "text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        if len(rows) < BATCH_BELOW:
            for row in rows:
                self.lexicon.add(c, row[0], row[9], row[7])
        else:
            self.lexicon.add_many(c, [(row[0], row[9], row[7]) for row in rows])
        self._map_keys([row[0] for row in rows], ledger_id)

    def _drop(self, c: sqlite3.Connection, ledgers: list[int], keep_ledger: bool = False) -> int:
        """Forget ledgers' messages (and the ledgers themselves unless ``keep_ledger``); returns how many messages."""
        dropped = 0
        for i in range(0, len(ledgers), 500):
            chunk = ledgers[i : i + 500]
            marks = ",".join("?" * len(chunk))
            keys = [r[0] for r in c.execute(f"SELECT rowid FROM transcript_messages WHERE ledger IN ({marks})", chunk)]
            self.lexicon.remove_many(c, keys)
            forget(c, keys)
            c.execute(f"DELETE FROM transcript_messages WHERE ledger IN ({marks})", chunk)
            if not keep_ledger:
                c.execute(f"DELETE FROM transcript_ledgers WHERE id IN ({marks})", chunk)
            dropped += len(keys)
        return dropped

    def _maybe_rebuild(self) -> None:
        retired = self.db.read(lambda c: c.execute(f"SELECT COUNT(*) FROM {TRANSCRIPT_TABLES.docs} WHERE live = 0").fetchone()[0])
        if retired >= REBUILD_RETIRED_MIN and retired > self.lexicon.refresh().n_docs:
            with self.db.transaction() as c:
                self.lexicon.rebuild(c)

    # ------------------------------------------------------------------ this process's view
    def _refresh(self) -> None:
        """Reload the ledger table and the message -> ledger map after another connection's commit."""
        version = self.db.data_version()
        if version == self._version:
            return
        rows = self.db.read(lambda c: c.execute(
            "SELECT id, source, path, size, mtime_ns, offset, head, tail, session, parent_session, project, state "
            "FROM transcript_ledgers").fetchall())
        self._ledgers = {
            r[2]: _Ledger(r[0], r[1], r[2], Mark(r[3], r[4], r[5], r[6], r[7]), r[8], r[9], r[10], r[11]) for r in rows}
        pairs = self.db.read(lambda c: c.execute("SELECT rowid, ledger FROM transcript_messages").fetchall())
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self._key_ledger = np.full(int(arr[:, 0].max()) + 1 if arr.size else 0, -1, np.int64)
        self._key_ledger[arr[:, 0]] = arr[:, 1]
        self._version = version

    def _map_keys(self, keys: list[int], ledger_id: int) -> None:
        top = max(keys) + 1
        if top > self._key_ledger.size:
            grown = np.full(max(top, 2 * self._key_ledger.size), -1, np.int64)
            grown[: self._key_ledger.size] = self._key_ledger
            self._key_ledger = grown
        self._key_ledger[keys] = ledger_id

    def _here(self) -> Path:
        return self.cwd or current_folder()

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        limit: int = 8,
        all_projects: bool = False,
        project: str | os.PathLike | None = None,
        exclude_session: str | None = None,
        mode: str | None = None,
    ) -> TranscriptResult:
        """Ranked, explained transcript messages. By default only ledgers of the caller's project (its
        repository, else its directory); ``all_projects`` searches every one. ``exclude_session`` (default:
        $KENNING_CURRENT_SESSION) leaves out the caller's own session, whose content it already has."""
        if not self.config().search_enabled:
            raise SearchDisabled()
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query is empty; give words a past message would contain")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}")
        mode = mode or self.config().default_mode
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; choose keyword, bm25, semantic or hybrid")
        exclude = exclude_session if exclude_session is not None else os.environ.get(ENV_CURRENT_SESSION) or None
        scope = None if all_projects else project_of(str(Path(project).resolve()) if project is not None else str(self._here()))
        with self.db.one_generation():  # the sync and the ranking share one look at the store's state
            note = self._sync_for_a_read("this answer")
            with self._lock:
                result = self._rank(query, limit, scope, exclude, mode)
        result.note = note
        return result

    def _sync_for_a_read(self, answer: str) -> str | None:
        """Take in the ledgers' new lines before a read. A store that cannot take them now (a full disk)
        failed the whole read, memories and all; the read answers from what is indexed instead, and this
        note says why ``answer`` lacks the newest messages (None when the sync went through)."""
        try:
            self.sync()
        except StorageError as exc:
            return (f"the ledgers' new lines could not be indexed ({exc}): messages added since the last "
                    f"search are not in {answer}")
        if self.db.read_only:
            return ("the store is read-only for this user, so ledgers were not read again: messages added "
                    f"since its last search are not in {answer}")
        return None

    def _rank(self, query: str, limit: int, scope: str | None, exclude: str | None, mode: str) -> TranscriptResult:
        config = self.config()
        lexicon = self.lexicon.refresh()
        # a word no message holds respelt as memory search does ("pgbuoncer")
        reading = query_reading.read(
            query, lambda tokens, written: spelling.corrections(tokens, lexicon.doc_freqs, written))
        tokens, terms = reading.tokens, reading.terms
        # asked once: a server's encoder may finish loading during the search
        availability = self._availability() if mode in ("semantic", "hybrid") else None
        vector_ok = availability is not None and availability.working and self.vectors is not None
        legs, degraded = engine.legs_for_mode(mode, vector_ok)
        now = datetime.now(timezone.utc).timestamp()
        asked = reading.for_the_model(mode, self.vectors.semantic.knows_word) if engine.VECTOR_LEG in legs else None
        if asked is not None:
            self.vectors.pending_seen = None

        def runs_within(allowed: np.ndarray | None) -> dict[str, engine.LegRun]:
            runs: dict[str, engine.LegRun] = {}
            if "keyword" in legs:
                runs["keyword"] = lambda n: keyword.search(lexicon, terms, n, allowed, phrase=query, text_of=self._texts, now=now)
            if "bm25" in legs:
                runs["bm25"] = lambda n: bm25.search(lexicon, tokens, n, allowed, k1=config.bm25_k1, b=config.bm25_b)
            if asked is not None:
                keys = None if allowed is None else lexicon.doc_key[allowed]  # one live lexid a message: no repeats
                runs[engine.VECTOR_LEG] = lambda n: self.vectors.search(asked, n, keys)
            return runs

        evidence = None
        if config.fusion == "evidence":
            evidence = {"alpha": config.evidence_alpha, "cos_floor": config.evidence_cos_floor,
                        "power": config.evidence_power}
        # a message said once but indexed twice (a ledger's line repeated, a resumed session's copy) is
        # ranked once: its later copies among the hits are left out and the legs run again, so a copy
        # neither takes a hit's place nor stands as the rival that lowers the first hit's label
        allowed, window = self._allowed(lexicon, scope, exclude), max(limit, 2)
        while True:
            runs = runs_within(allowed)
            candidates, lead, cosine_lead = engine.rank_with_lead(
                runs, max(window, config.leg_depth), window, rrf_k=config.rrf_k, weights=config.weights,
                evidence=evidence, coverage_of=lambda keys: bm25.fusion_coverage(lexicon, terms, keys))
            rows = self._rows([c.key for c in candidates])
            copies = _later_copies(candidates, rows)
            if not copies:
                break
            allowed = _without(lexicon, allowed, copies)
            window *= 2  # many copies of one message: fewer passes
        candidates = candidates[:limit]
        hits = []
        shown = reading.shown()
        coverage = bm25.idf_coverage(lexicon, terms, [c.key for c in candidates]) if candidates else {}
        ceiling = labels.ceiling(query, unknown(lexicon, terms) if engine.VECTOR_LEG in runs else ())
        names_something = labels.names_something(query, reading.as_written) if engine.VECTOR_LEG in runs else False
        # the terms each hit holds, from the postings as memory search reads them: a message of megabytes
        # is not tokenized whole for them
        present = contains(lexicon, terms, [c.key for c in candidates]).tolist()
        for cand, holds in zip(candidates, present):
            row = rows[cand.key]
            engine.explain(cand, terms, row["text"], shown, top_score=candidates[0].score,
                           vector_ran=engine.VECTOR_LEG in runs, coverage=coverage.get(cand.key, 0.0), lead=lead,
                           ceiling=ceiling, names_something=names_something, cosine_lead=cosine_lead,
                           matched=[t for t, held in zip(terms, holds) if held])
            hits.append(TranscriptHit(
                id=f"t{cand.key}", score=round(cand.score, 6), matched_leg=cand.matched_leg, relevance=cand.relevance,
                match_terms=cand.match_terms, snippet=cand.snippet,
                legs={leg: {"rank": r, "score": round(s, 6)} for leg, (r, s) in cand.legs.items()},
                session=row["session"], parent_session=row["parent_session"], sidechain=row["sidechain"],
                timestamp=row["ts"], speaker=row["speaker"], project=self._project_of(row), ledger=row["path"],
                line=row["line"], format=row["format"],
            ))
        hits = _newest_first_among_equals(hits, [rows[c.key]["ts"] for c in candidates])
        pending = None
        if engine.VECTOR_LEG in runs:
            pending = self.vectors.pending_seen if self.vectors.pending_seen is not None else self.vectors.pending()
        return TranscriptResult(query=query, mode=mode, legs_run=list(runs), scope="all" if scope is None else scope,
                                excluded_session=exclude, hits=hits, pending_embeddings=pending,
                                degraded=self._degraded(availability) if degraded else None)

    def _availability(self) -> Availability:
        from kenning.retrieval.embeddings import probe

        return self.vectors.semantic.availability() if self.vectors is not None else probe(self.config().model)

    @staticmethod
    def _degraded(availability: Availability | None) -> Degraded | None:
        from kenning.retrieval.embeddings import degraded_note

        note = degraded_note(availability) if availability is not None else None
        return Degraded.model_validate(note) if note else None

    def _allowed(self, lexicon: Lexicon, scope: str | None, exclude: str | None) -> np.ndarray | None:
        """A mask over lexids: messages in scope and not of the excluded session (None: all).

        A message is the excluded session's when it names that session (a generic ledger may hold
        several sessions' lines, each naming its own), or when it is a sidechain of that session
        written into the session's own ledger; a worker's or subagent's own ledger is kept. A message's
        project is its ledger's, unless its session worked in a directory of its own (``cwds``)."""
        ledgers = list(self._ledgers.values())
        keep, mixed = [], []
        for led in ledgers:
            moved = self._session_projects(led) if scope is not None else {}
            inside = {scope is None or _in_project(p, scope) for p in (led.project, *moved.values())}
            excluding = False
            if exclude is not None:
                sessions = self._sessions_of(led)
                if exclude in sessions or led.session == exclude:
                    if not sessions - {exclude}:
                        continue  # every message is the excluded session's
                    excluding = True
            if inside == {False}:
                continue
            keep.append(led.id)
            if excluding or len(inside) > 1:
                mixed.append(led)
        if len(keep) == len(ledgers) and not mixed:
            return None
        ok = np.zeros(max((led.id for led in ledgers), default=0) + 2, bool)
        ok[keep] = True
        keys = lexicon.doc_key
        inside = (keys >= 0) & (keys < self._key_ledger.size)
        ledger_of = np.full(keys.size, -1, np.int64)
        ledger_of[inside] = self._key_ledger[keys[inside]]
        mask = lexicon.live & (ledger_of >= 0) & ok[np.clip(ledger_of, 0, ok.size - 1)]
        if mixed and self._key_ledger.size:
            left_out = np.zeros(self._key_ledger.size, bool)
            for led in mixed:
                left_out[self._left_out_of(led, scope, exclude)] = True
            mask &= ~(inside & left_out[np.clip(keys, 0, max(0, left_out.size - 1))])
        return mask

    def _project_of(self, row: dict[str, Any]) -> str | None:
        """A hit's project: its session's own when that session worked elsewhere than its ledger's."""
        led = self._ledgers.get(row["path"])
        if led is None:
            return row["project"]
        return self._session_projects(led).get(row["session"] or led.session, row["project"])

    def _sessions_of(self, led: _Ledger) -> set[str]:
        """The sessions a ledger's messages belong to (a message naming none is the ledger's own)."""
        cached = self._ledger_sessions.get(led.id)
        if cached is None or cached[0] != _mark_key(led):
            self._load_sessions()
            cached = self._ledger_sessions[led.id]
        return cached[1]

    def _load_sessions(self) -> None:
        """Fill ``_ledger_sessions`` for every ledger read since it was last filled: a few queries for all
        of them, not one a ledger (a first search that leaves a session out would make thousands)."""
        stale = [led for led in self._ledgers.values()
                 if (cached := self._ledger_sessions.get(led.id)) is None or cached[0] != _mark_key(led)]
        for i in range(0, len(stale), 500):
            chunk = stale[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.read(lambda c: c.execute(
                f"SELECT DISTINCT ledger, session FROM transcript_messages WHERE ledger IN ({marks})",
                [led.id for led in chunk]).fetchall())
            found: dict[int, set[str]] = {led.id: set() for led in chunk}
            own = {led.id: led.session for led in chunk}
            for ledger, session in rows:
                found[ledger].add(session if session is not None else own[ledger])
            for led in chunk:
                self._ledger_sessions[led.id] = (_mark_key(led), found[led.id])

    def _session_projects(self, led: _Ledger) -> dict[str, str]:
        """The projects of a ledger's sessions that worked outside the ledger's own directory."""
        cached = self._ledger_projects.get(led.id)
        if cached is not None and cached[0] == _mark_key(led):
            return cached[1]
        moved: dict[str, str] = {}
        if '"cwds"' in (led.state or ""):  # most ledgers hold one session: no JSON to parse
            try:
                cwds = json.loads(led.state).get("cwds") or {}
            except (ValueError, AttributeError):
                cwds = {}
            moved = {session: project_of(cwd) for session, cwd in cwds.items()
                     if isinstance(session, str) and isinstance(cwd, str) and project_of(cwd) != led.project}
        self._ledger_projects[led.id] = (_mark_key(led), moved)
        return moved

    def _left_out_of(self, led: _Ledger, scope: str | None, exclude: str | None) -> list[int]:
        """The rowids of a mixed ledger's messages that are out of scope or the excluded session's."""
        projects = self._session_projects(led) if scope is not None else {}
        rows = self.db.read(lambda c: c.execute(
            "SELECT rowid, COALESCE(session, ?), sidechain, parent_session FROM transcript_messages WHERE ledger = ?",
            (led.session, led.id)).fetchall())
        out = []
        for rowid, session, sidechain, parent in rows:
            excluded = exclude is not None and (
                session == exclude or (bool(sidechain) and parent == exclude and led.session == exclude))
            if excluded or (scope is not None and not _in_project(projects.get(session, led.project), scope)):
                if rowid < self._key_ledger.size:
                    out.append(rowid)
        return out

    def _texts(self, keys: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            out.update(self.db.read(lambda c: c.execute(
                f"SELECT rowid, text FROM transcript_messages WHERE rowid IN ({marks})", chunk).fetchall()))
        return out

    def _rows(self, keys: list[int]) -> dict[int, dict[str, Any]]:
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        rows = self.db.read(lambda c: c.execute(
            "SELECT m.rowid, m.text, m.session, m.parent_session, m.sidechain, m.ts, m.speaker, m.line, "
            "l.project, l.path, l.format FROM transcript_messages m JOIN transcript_ledgers l ON l.id = m.ledger "
            f"WHERE m.rowid IN ({marks})", keys).fetchall())
        names = ("text", "session", "parent_session", "sidechain", "ts", "speaker", "line", "project", "path", "format")
        return {r[0]: {**dict(zip(names, r[1:])), "sidechain": bool(r[4])} for r in rows}




# ---------------------------------------------------------------------------------------- helpers
def _newest_first_among_equals(hits: list[TranscriptHit], stamps: list[Any]) -> list[TranscriptHit]:
    """Hits of equal score, latest message first (the recall design's tiebreak): the same sentence said
    in five sessions answers best from the newest; a message without a readable time goes last."""
    def seconds(ts: Any) -> float:
        try:
            found = _epoch(ts)
        except ValueError:  # Malformed: the reader kept the line, its time is no date
            found = None
        return float("-inf") if found is None else found

    order = sorted(range(len(hits)), key=lambda i: (-hits[i].score, -seconds(stamps[i])))
    return [hits[i] for i in order]


def _later_copies(candidates: list[engine.Candidate], rows: dict[int, dict[str, Any]]) -> list[int]:
    """The candidates that repeat an earlier one's message: the same words by the same speaker at the
    same time, in the same session (a Claude Code line copied into a resumed session keeps its time
    and uuid, not its session, so in that format the time alone tells a copy)."""
    seen, copies = set(), []
    for cand in candidates:
        row = rows[cand.key]
        copied = row["format"] == "claude-code" and row["ts"] is not None
        said = (row["speaker"], row["text"], row["ts"], None if copied else row["session"])
        if said in seen:
            copies.append(cand.key)
        seen.add(said)
    return copies


def _without(lexicon: Lexicon, allowed: np.ndarray | None, keys: list[int]) -> np.ndarray:
    """``allowed`` (a mask over lexids; None: every live one) without the messages ``keys``."""
    mask = (lexicon.live if allowed is None else allowed).copy()
    mask[np.isin(lexicon.doc_key, keys)] = False
    return mask


_projects: dict[str, str] = {}


def project_of(directory: str) -> str:
    """A working directory's project: its repository's root when it is (still) in one, else the directory."""
    found = _projects.get(directory)
    if found is None:
        found = os.path.normpath(directory)
        if os.path.isdir(directory):
            from kenning.memory.origin import detect_origin

            origin = detect_origin(directory)
            if origin is not None:
                found = origin.repo
        _projects[directory] = found
    return found


def _mark_key(led: _Ledger) -> tuple:
    """What changes whenever a ledger is read again (its cached sessions are then looked up again)."""
    return led.mark.size, led.mark.mtime_ns, led.mark.offset, led.mark.head


def _in_project(ledger_project: str | None, scope: str) -> bool:
    """A session belongs to "this project" when its project is this one: not when it lies beneath it (run
    from a parent folder, from $HOME or /, "this project" was every project nested below; a session started
    deeper in a repository already has the repository's root as its project, ``project_of``)."""
    return ledger_project is not None and os.path.normpath(ledger_project) == os.path.normpath(scope)


def _stamp(ts: Any) -> str | None:
    """The timestamp as ISO text (epoch numbers converted)."""
    if isinstance(ts, str):
        return ts or None
    at = _epoch(ts)
    return iso(datetime.fromtimestamp(at, timezone.utc)) if at is not None else None
