"""Checking and rebuilding what is derived from the memories: the lexical index, embedding rows, the vector index file.

``check`` only reads; ``rebuild`` recomputes from the memories' text (store/integrity.py does
the work). They back ``kenning check`` and ``kenning rebuild``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kenning.errors import InvalidInput
from kenning.store import integrity, records
from kenning.store.backend import is_url

from .session import Session

REBUILDABLE = ("lexical", "vectors", "all")


def check(s: Session) -> dict[str, Any]:
    """Every problem found in the database, its rows' JSON and its derived structures: {ok, store, problems}. A
    database that is itself damaged is reported as such; what is derived from it is then not read
    (it would fail on the same pages, and is rebuilt from the memories once they are restored)."""
    problems = integrity.check_sqlite(s.db)  # damage that even quick_check cannot read is a finding too
    if not problems:
        problems = [*integrity.check_rows(s.db), *integrity.check_lexicon(s.db), *integrity.check_embeddings(s.db), *s.semantic.check_index()]
    # the store as the caller named it: a server's URL without its password, not the local folder of its derived files
    where = s.db.path if is_url(s.location) else s.directory
    return {"ok": not problems, "store": str(where), "problems": [p.to_dict() for p in problems]}


def rebuild(s: Session, what: str, progress: Callable[[str, int, int], None] | None) -> dict[str, Any]:
    """Rebuild ``lexical``, ``vectors`` or ``all``; ``progress(stage, done, total)`` hears how far each stage got."""
    if what not in REBUILDABLE:
        raise InvalidInput(f"rebuild what? choose one of {', '.join(REBUILDABLE)}, not {what!r}")
    done: dict[str, Any] = {}
    if what in ("lexical", "all"):
        total = records.count_live(s.db)
        if progress:
            progress("lexical", 0, total)
        integrity.repair_lexicon(s.db, s.lexicon)
        if progress:
            progress("lexical", total, total)
        done["lexical"] = {"documents": total}
    if what in ("vectors", "all"):
        dropped = integrity.repair_embeddings(s.db)
        moved = s.semantic.discard_index()
        embedded, note = 0, None
        if s.semantic.availability().working:
            total = s.semantic.pending_count()
            counter = {"n": 0}

            def step(n: int) -> None:
                counter["n"] += n
                if progress:
                    progress("vectors", min(counter["n"], total), total)

            embedded = s.semantic.embed_pending(progress=step)
            s.semantic.rebuild_index()
        else:
            note = "the embeddings extra is not working here: rows are queued for `kenning index` or a server"
        done["vectors"] = {"rows_dropped": dropped, "embedded": embedded, "index_file": moved, "note": note}
    return {"rebuilt": what, **done}
