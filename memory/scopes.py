"""What a caller sees: auto-scoping to its repository, session-disabled scopes, scope renames, and
moving a checkout's memories to where it now lives (``rehome``).

A memory written inside a git worktree belongs to that repository and worktree; one written
outside any repository is global. With ``auto_scope`` a caller inside a worktree sees that
worktree's memories plus the global ones, so two projects sharing one store do not leak into
each other; a caller outside any repository has nothing to scope to and sees everything.
Disabled scopes hide every memory carrying one of them, for one session (one Store object).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

from kenning.errors import InvalidInput
from kenning.store.db import Database
from .gates.limits import check_scopes
from .origin import Origin


@dataclass(frozen=True)
class View:
    """The visibility rules of one read; ``where()`` renders them as SQL on ``memories m``."""

    here: Origin | None = None  # the caller's repository and worktree; None outside any
    auto_scope: bool = True
    disabled: frozenset[str] = field(default_factory=frozenset)
    updated_after: str | None = None  # ISO text: only memories updated strictly later

    @property
    def scoped_to(self) -> Origin | None:
        return self.here if self.auto_scope else None

    def where(self) -> tuple[str, list]:
        sql, params = "", []
        if self.scoped_to is not None:
            sql += " AND (m.origin_worktree IS NULL OR (m.origin_worktree = ? AND m.origin_repo = ?))"
            params += [self.scoped_to.worktree, self.scoped_to.repo]
        if self.disabled:
            marks = ",".join("?" * len(self.disabled))
            sql += f" AND NOT EXISTS (SELECT 1 FROM memory_scopes d WHERE d.mem = m.rowid AND d.scope IN ({marks}))"
            params += sorted(self.disabled)
        if self.updated_after is not None:
            sql += " AND m.updated > ?"
            params.append(self.updated_after)
        return sql, params

    def hidden_keys(self, db: Database) -> list[int]:
        """Memory keys hidden by auto_scope (another repository or worktree) or a disabled scope.

        Read from the origin and scope indexes, so a search pays for what it hides, not for the
        store's size; removed memories may be among them (harmless: search never returns those).
        """
        parts, params = [], []
        here = self.scoped_to
        if here is not None:
            parts.append("SELECT rowid FROM memories WHERE origin_worktree < ? OR origin_worktree > ?")
            parts.append("SELECT rowid FROM memories WHERE origin_worktree = ? AND origin_repo IS NOT ?")
            params += [here.worktree, here.worktree, here.worktree, here.repo]
        if self.disabled:
            parts.append(f"SELECT mem FROM memory_scopes WHERE scope IN ({','.join('?' * len(self.disabled))})")
            params += sorted(self.disabled)
        if not parts:
            return []
        return [r[0] for r in db.read(lambda c: c.execute(" UNION ".join(parts), params).fetchall())]


def scope_counts(db: Database, view: View) -> tuple[dict[str, int], int]:
    """Live visible memories per scope (most used first) and their total."""
    where, params = view.where()

    def read(c: sqlite3.Connection):
        per_scope = c.execute(
            f"SELECT s.scope, COUNT(*) FROM memory_scopes s JOIN memories m ON m.rowid = s.mem "
            f"WHERE m.removed_at IS NULL {where} GROUP BY s.scope ORDER BY COUNT(*) DESC, s.scope", params).fetchall()
        total = c.execute(f"SELECT COUNT(*) FROM memories m WHERE m.removed_at IS NULL {where}", params).fetchone()[0]
        return dict(per_scope), total

    return db.read(read)


def rename(conn: sqlite3.Connection, old: str, new: str) -> list[str]:
    """Relabel ``old`` as ``new`` on every memory and tombstone that carries it; returns their ids.

    A relabel, not an edit: ``updated`` and verification stay as they were. A memory that already
    carries ``new`` simply loses ``old``.
    """
    from kenning.store.models import Memory  # here: a plain search uses this module without pydantic

    old, new = check_scopes([old])[0], check_scopes([new])[0]
    if old == new:
        raise InvalidInput(f"the old and new scope are both {old!r}")
    return _relabel(conn, old, new)


def _relabel(conn: sqlite3.Connection, old: str, new: str) -> list[str]:
    from kenning.store.models import Memory

    rows = conn.execute(
        "SELECT m.rowid, m.id, m.record FROM memories m JOIN memory_scopes s ON s.mem = m.rowid WHERE s.scope = ?",
        (old,)).fetchall()
    for rowid, mid, record in rows:
        memory = Memory.from_record(record, mid)
        scopes = list(dict.fromkeys(new if s == old else s for s in memory.scopes))
        conn.execute("UPDATE memories SET record = ? WHERE rowid = ?",
                     (memory.model_copy(update={"scopes": scopes}).model_dump_json(), rowid))
        conn.execute("DELETE FROM memory_scopes WHERE scope = ? AND mem = ?", (old, rowid))
        conn.execute("INSERT OR IGNORE INTO memory_scopes(scope, mem) VALUES (?, ?)", (new, rowid))
    return [mid for _, mid, _ in rows]


COMPOSED_META = "scopes_composed"  # set once a store's stored scopes are all in NFC


def compose_stored(conn: sqlite3.Connection) -> int:
    """Relabel every stored scope not in Unicode NFC as its NFC form (memories, tombstones, journal
    entries); returns how many memories changed. ``check_scopes`` composes every scope given since,
    so a scope stored decomposed ("café" as e + U+0301, what a folder name on macOS HFS+ gives the
    default scope) would be found by no filter typed as it looks; run once per store."""
    import json
    import unicodedata

    changed = 0
    for (scope,) in conn.execute("SELECT DISTINCT scope FROM memory_scopes").fetchall():
        composed = unicodedata.normalize("NFC", scope)
        if composed != scope:
            changed += len(_relabel(conn, scope, composed))
    for rowid, stored in conn.execute("SELECT rowid, scopes FROM episodes").fetchall():
        scopes = json.loads(stored)
        composed = list(dict.fromkeys(unicodedata.normalize("NFC", scope) for scope in scopes))
        if composed != scopes:
            conn.execute("UPDATE episodes SET scopes = ? WHERE rowid = ?", (json.dumps(composed), rowid))
    return changed


MOVED_LISTED = 5


def moved_checkouts(db: Database, view: View) -> list[dict[str, object]]:
    """Checkout folders, now gone, whose live memories this view hides (most memories first, at
    most ``MOVED_LISTED``): the likely old homes of a checkout moved on disk, which ``rehome``
    gives back. Empty unless auto_scope hides something, so it costs nothing outside a checkout."""
    here = view.scoped_to
    if here is None:
        return []

    def read(c: sqlite3.Connection) -> list[tuple[str, int]]:
        # the folders from the origin index alone; rows are read only for the few that are gone
        folders = c.execute("SELECT DISTINCT origin_worktree FROM memories WHERE origin_worktree IS NOT NULL "
                            "AND origin_worktree != ?", (here.worktree,)).fetchall()
        counts = [(folder, c.execute("SELECT COUNT(*) FROM memories WHERE origin_worktree = ? AND removed_at IS NULL",
                                     (folder,)).fetchone()[0]) for (folder,) in folders if not os.path.exists(folder)]
        return sorted((pair for pair in counts if pair[1]), key=lambda pair: (-pair[1], pair[0]))

    return [{"worktree": folder, "memories": count} for folder, count in db.read(read)[:MOVED_LISTED]]


def under(path: str | None, folder: str) -> str | None:
    """``path`` with its leading ``folder`` part, or None when it is not ``folder`` or inside it."""
    if path is None:
        return None
    if path == folder:
        return ""
    prefix = folder.rstrip("/") + "/"
    return path[len(prefix) - 1:] if path.startswith(prefix) else None


def rehome(conn: sqlite3.Connection, old: str, new: str) -> list[tuple[str, str, str | None]]:
    """Give every memory, tombstone and journal entry recorded at ``old`` (or in a folder inside it)
    ``new`` in its place; returns (id, new worktree, recorded commit) of the memories changed.

    A relabel, not an edit, like ``rename``: ``updated`` and verification stay (the version changes, as
    with any change to the record). The
    recorded worktree and repository are matched by equality on their distinct values (read from
    the origin index), never by a text range, whose order depends on PostgreSQL's collation.
    """
    from kenning.store.models import Memory  # here: a plain search uses this module without pydantic

    def moved(path: str | None) -> str | None:
        rest = under(path, old)
        return None if rest is None else new + rest

    pairs = conn.execute("SELECT DISTINCT origin_repo, origin_worktree FROM memories "
                         "WHERE origin_worktree IS NOT NULL").fetchall()
    changed: list[tuple[str, str, str | None]] = []
    for repo, worktree in pairs:
        new_repo, new_worktree = moved(repo), moved(worktree)
        if new_repo is None and new_worktree is None:
            continue
        rows = conn.execute("SELECT rowid, id, record FROM memories WHERE origin_worktree = ? AND origin_repo = ?",
                            (worktree, repo)).fetchall()
        for rowid, mid, record in rows:
            memory = Memory.from_record(record, mid)
            origin = memory.origin.model_copy(update={"repo": new_repo or repo, "worktree": new_worktree or worktree})
            conn.execute("UPDATE memories SET record = ?, origin_repo = ?, origin_worktree = ? WHERE rowid = ?",
                         (memory.model_copy(update={"origin": origin}).model_dump_json(), origin.repo,
                          origin.worktree, rowid))
            changed.append((mid, origin.worktree, origin.commit))
    for (worktree,) in conn.execute("SELECT DISTINCT worktree FROM episodes WHERE worktree IS NOT NULL").fetchall():
        if (target := moved(worktree)) is not None:
            conn.execute("UPDATE episodes SET worktree = ? WHERE worktree = ?", (target, worktree))
    return changed
