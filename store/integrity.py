"""Derived data that proves itself: what each derived structure was built from, checked and repaired.

The lexical index, the embeddings rows and the vector index file are all derived from the
memories. Each carries its provenance: the tokenizer fingerprint (lexical), the model id and the
text's hash (each embedding row), and for the index file the store's identity, the embeddings
generation it was saved at, and the text hashes of its newest keys (its lineage). A file from
another store, from a later state than the database (a restored backup), or whose keys now name
other texts is not trusted; it is rebuilt from the rows.

``check_*`` functions only read and return problems; ``repair_*`` functions fix what the
matching check finds. ``kenning check`` and ``kenning rebuild`` run them over a whole store.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from array import array
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kenning.errors import StorageError
from kenning.retrieval.text import fingerprint, tokenize

from .db import Database, salvage_advice
from .lexicon import MEMORY_TABLES, LexTables, valid_segment

STORE_ID_KEY = "store_id"
LINEAGE_KEYS = 64


@dataclass(frozen=True)
class Problem:
    """One thing found wrong: which structure, what, and what ``kenning rebuild`` does about it."""

    part: str  # sqlite | memories | episodes | lexical | embeddings | vectors
    what: str
    repair: str
    id: str | None = None  # a damaged row: its id and the column that is damaged
    column: str | None = None

    def to_dict(self) -> dict:
        return {key: value for key, value in asdict(self).items() if value is not None or key in _ALWAYS}


_ALWAYS = ("part", "what", "repair")


# ------------------------------------------------------------------------------ store identity
def store_id(db: Database, directory: Path | None = None) -> str:
    """The store's identity, made once: a derived file names the store it was built from. A vector index
    file in ``directory`` when it is made predates it (a kenning before store identities wrote it, so it
    names no store): it is removed then, and the next vector search builds one from the rows, where `kenning
    check` of an upgraded store called it 'built for another store' until then."""
    found = db.get_meta(STORE_ID_KEY)
    if found or getattr(db, "read_only", False):
        return found or ""
    if directory is not None:  # first: a crash before the identity is made leaves no such file behind
        from .vector_file import INDEX_FILENAME  # here: the vector code loads only for a store made now

        if (directory / INDEX_FILENAME).is_file():
            remove_index_file(directory / INDEX_FILENAME)
    with db.transaction() as c:
        row = c.execute("SELECT value FROM meta WHERE key = ?", (STORE_ID_KEY,)).fetchone()
        if row:
            return row[0]
        import uuid  # here: uuid loads platform, and only a new store needs an identity

        made = str(uuid.uuid4())
        Database.set_meta(c, STORE_ID_KEY, made)
        return made


def _generation(c: sqlite3.Connection) -> int:
    row = c.execute("SELECT value FROM meta WHERE key = 'embeddings_generation'").fetchone()
    try:
        return int(row[0]) if row else 0
    except (TypeError, ValueError):
        return -1


# ------------------------------------------------------------------------------ sqlite
QUICK_CHECK_SHOWN = 3  # quick_check's findings quoted in the one problem line; the rest are counted


def check_sqlite(db: Database) -> list[Problem]:
    """The database file's own pages (PRAGMA quick_check). Damage is one problem naming the file and how
    to salvage it, with SQLite's first findings on the same line: its report (one row, many lines, a
    "*** in database main ***" heading) is no list of separate problems, and every finding has one fix.
    Pages too damaged for quick_check itself to read are the same finding, not a failed check."""
    try:
        rows = db.read(lambda c: c.execute("PRAGMA quick_check").fetchall())
    except StorageError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, sqlite3.DatabaseError) else exc
        return [Problem("sqlite", f"the store file {db.path} is damaged (quick_check could not read it: {cause})",
                        salvage_advice(db.path))]
    if [r[0] for r in rows] == ["ok"]:
        return []
    findings = [line.strip() for (text,) in rows for line in str(text).splitlines()
                if line.strip() and not line.startswith("*** in database")]
    shown = "; ".join(findings[:QUICK_CHECK_SHOWN])
    more = len(findings) - QUICK_CHECK_SHOWN
    return [Problem("sqlite", f"the store file {db.path} is damaged (quick_check: {shown}"
                    f"{f'; and {more} more' if more > 0 else ''})", salvage_advice(db.path))]


# ------------------------------------------------------------------------------ rows
MEMORY_ROW_REPAIR = ("rewrite that row's record as a memory's JSON by hand (its text is kept in the content "
                     "column) or restore the store from a backup")
EPISODE_ROW_REPAIR = "delete that row from the episodes table or restore the store from a backup"


def check_rows(db: Database) -> list[Problem]:
    """Every memory and episode row whose JSON column reads would fail on: a memory's ``record`` that
    is not valid JSON or not a memory, an episode's ``scopes`` that is not a JSON list of strings.
    One problem a row, naming its id and the column (nothing derived can rebuild them)."""
    from pydantic import ValidationError

    from .models import Memory

    memories, episodes = db.read(lambda c: (c.execute("SELECT id, record FROM memories ORDER BY rowid").fetchall(),
                                            c.execute("SELECT id, scopes FROM episodes ORDER BY rowid").fetchall()))
    problems = []
    for mid, record in memories:
        try:
            Memory.model_validate_json(record)
        except ValidationError as exc:
            problems.append(Problem("memories", f"memory {mid}: its record column {_invalid(exc)}",
                                    MEMORY_ROW_REPAIR, id=mid, column="record"))
        except (TypeError, ValueError) as exc:  # not text at all (a blob), or text that is no UTF-8
            problems.append(Problem("memories", f"memory {mid}: its record column is not valid JSON ({exc})",
                                    MEMORY_ROW_REPAIR, id=mid, column="record"))
    for eid, scopes in episodes:
        try:
            parsed = json.loads(scopes)
        except (TypeError, ValueError) as exc:
            why = f"is not valid JSON ({str(exc).splitlines()[0][:160]})"
        else:
            if isinstance(parsed, list) and all(isinstance(s, str) for s in parsed):
                continue
            why = "is valid JSON but not a list of scopes"
        problems.append(Problem("episodes", f"episode {eid}: its scopes column {why}", EPISODE_ROW_REPAIR,
                                id=eid, column="scopes"))
    return problems


def _invalid(exc) -> str:
    """Why a record is refused, in one line: not JSON at all, or JSON that is not a memory (which field)."""
    first = exc.errors()[0]
    if first.get("type") == "json_invalid":
        return f"is not valid JSON ({str(first.get('ctx', {}).get('error') or first['msg'])[:160]})"
    where = ".".join(str(part) for part in first.get("loc", ())) or "the whole record"
    more = exc.error_count() - 1
    return (f"is valid JSON but not a memory ({where}: {first['msg'][:160]}"
            f"{f'; and {more} more' if more > 0 else ''})")


# ------------------------------------------------------------------------------ lexical
def lexicon_docs_consistent(c: sqlite3.Connection, t: LexTables = MEMORY_TABLES) -> bool:
    """Cheap check at open: every live document has exactly one live index row and no other row is live."""
    live_docs = c.execute(f"SELECT COUNT(*), COUNT(DISTINCT mem) FROM {t.docs} WHERE live = 1").fetchone()
    documents = c.execute(f"SELECT COUNT(*) FROM ({t.documents})").fetchone()[0]
    joined = c.execute(
        f"SELECT COUNT(*) FROM {t.docs} d JOIN ({t.documents}) m ON m.rowid = d.mem WHERE d.live = 1"
    ).fetchone()[0]
    return live_docs[0] == live_docs[1] == documents == joined


def lexicon_docs_still_consistent(db: Database) -> bool:
    """The check at open, O(1) while nothing changed the live memories or index rows since a full
    check passed (a flag that the schema's triggers clear on any such change, whoever makes it).
    Otherwise the full check runs, and a pass sets the flag in the same write transaction, so no
    change can slip in between; when another writer holds the lock, the check runs as a plain read."""
    if not getattr(db, "flags_lexicon_changes", False):
        return db.read(lexicon_docs_consistent)
    if db.read(lambda c: c.execute("SELECT ok FROM lex_docs_checked").fetchone()[0]):
        return True
    try:
        with db.waiting_at_most(0), db.transaction() as c:
            consistent = lexicon_docs_consistent(c)
            if consistent:
                c.execute("UPDATE lex_docs_checked SET ok = 1")
        return consistent
    except Exception:  # locked (or full): the flag is only a shortcut
        return db.read(lexicon_docs_consistent)


def check_lexicon(db: Database, t: LexTables = MEMORY_TABLES) -> list[Problem]:
    """Re-derive every live document's postings and compare them with the stored index.

    Postings are held as numpy columns of term codes, lexids and tfs, never as one Python tuple a
    posting: at 100k memories (3.2M postings) tuples and Counters of them took ~23 s and ~1.1 GB."""
    repair = "kenning rebuild lexical"

    def read(c: sqlite3.Connection):
        return (c.execute("SELECT value FROM meta WHERE key = ?", (t.tokenizer_key,)).fetchone(),
                c.execute(t.documents).fetchall(),
                c.execute(f"SELECT lexid, mem, length FROM {t.docs} WHERE live = 1").fetchall(),
                c.execute(f"SELECT term, seg, postings FROM {t.segments}").fetchall(),
                c.execute(f"SELECT term, lexid, tf FROM {t.delta}").fetchall())

    mark, documents, docs, segments, delta = db.read(read)
    problems = []
    if not mark or mark[0] != fingerprint():
        problems.append(Problem("lexical", "built with another tokenizer (or never built)", repair))
    by_mem: dict[int, list[tuple[int, int]]] = {}
    for lexid, mem, length in docs:
        by_mem.setdefault(mem, []).append((lexid, length))
    codes = _Codes()
    expected_terms, expected_tfs = array("q"), array("q")  # each document's distinct terms (as codes) and their tfs
    doc_lexids, doc_terms = array("q"), array("q")  # each document's lexid and its number of distinct terms
    missing = duplicated = wrong_length = 0
    for key, text, _ in documents:
        rows = by_mem.pop(key, [])
        if not rows:
            missing += 1
            continue
        if len(rows) > 1:
            duplicated += 1
        lexid, length = rows[0]
        counts = Counter(tokenize(text))
        if sum(counts.values()) != length:
            wrong_length += 1
        expected_terms.extend(map(codes.__getitem__, counts))
        expected_tfs.extend(counts.values())
        doc_lexids.append(lexid)
        doc_terms.append(len(counts))
    del documents  # the texts are not needed any more
    stale = sum(len(rows) for rows in by_mem.values())
    for count, what in ((missing, "live memories missing from the index"),
                        (duplicated, "memories indexed more than once"),
                        (wrong_length, "documents with a wrong length"),
                        (stale, "index rows live for a removed or unknown memory")):
        if count:
            problems.append(Problem("lexical", f"{count} {what}", repair))
    term_codes, ids, tfs = [], [], []
    damaged = 0
    for term, seg, blob in segments:
        if not isinstance(seg, int) or not valid_segment(blob, seg):
            damaged += 1
            continue
        postings = np.frombuffer(blob, np.int32)  # views of the blob: lexids, then tfs
        term_codes.append(codes[term])
        ids.append(postings[:postings.size // 2])
        tfs.append(postings[postings.size // 2:])
    del segments
    if damaged:
        problems.append(Problem("lexical", f"{damaged} damaged postings blobs", repair))
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    stored_ids = np.concatenate((*ids, np.fromiter((lexid for _, lexid, _ in delta), np.int64, len(delta))))
    live = np.isin(stored_ids, np.fromiter((lexid for lexid, _, _ in docs), np.int64, len(docs)))
    actual = (np.concatenate((np.repeat(np.asarray(term_codes, np.int64), lengths),
                              np.fromiter((codes[term] for term, _, _ in delta), np.int64, len(delta))))[live],
              stored_ids[live],
              np.concatenate((*tfs, np.fromiter((tf for _, _, tf in delta), np.int64, len(delta))))[live])
    del ids, tfs, stored_ids
    expected = (np.frombuffer(expected_terms, np.int64),
                np.repeat(np.frombuffer(doc_lexids, np.int64), np.frombuffer(doc_terms, np.int64)),
                np.frombuffer(expected_tfs, np.int64))
    differ = _postings_difference(expected, actual)
    if differ.size:
        names = list(codes)
        terms = sorted(names[code] for code in differ.tolist())
        shown = ", ".join(repr(x) for x in terms[:5]) + (" …" if len(terms) > 5 else "")
        problems.append(Problem("lexical", f"postings differ from the memories' text for {len(terms)} terms ({shown})",
                                repair))
    return problems


class _Codes(dict):
    """Term -> a small integer, given in order of first sight."""

    def __missing__(self, term: str) -> int:
        code = self[term] = len(self)
        return code


def _postings_difference(expected: tuple[np.ndarray, ...], actual: tuple[np.ndarray, ...]) -> np.ndarray:
    """Term codes whose (lexid, tf) postings differ between the two (term, lexid, tf) column triples,
    counting each posting as often as it occurs (a posting stored twice differs from one expected once)."""
    if expected[0].size == actual[0].size and _same_postings(expected, actual):
        return np.empty(0, np.int64)
    terms, lexids, tfs = (np.concatenate((e, a)) for e, a in zip(expected, actual))
    # both sides sorted together; each distinct posting's occurrences summed, +1 expected and -1 stored
    sign = np.concatenate((np.ones(expected[0].size, np.int64), -np.ones(actual[0].size, np.int64)))
    order = np.lexsort((tfs, lexids, terms))
    terms, lexids, tfs, sign = terms[order], lexids[order], tfs[order], sign[order]
    first = np.ones(terms.size, bool)
    first[1:] = (terms[1:] != terms[:-1]) | (lexids[1:] != lexids[:-1]) | (tfs[1:] != tfs[:-1])
    starts = np.flatnonzero(first)
    return np.unique(terms[starts[np.add.reduceat(sign, starts) != 0]]) if starts.size else starts


def _same_postings(expected: tuple[np.ndarray, ...], actual: tuple[np.ndarray, ...]) -> bool:
    """The common case in one sort a side: (term, lexid) as one int64 key while lexids fit in 32 bits.
    Equal sorted columns are equal multisets; unequal ones may still be (ties in another order), so
    False only sends the caller to the exact comparison."""
    sides = []
    for terms, lexids, tfs in (expected, actual):
        if lexids.size and (lexids.min() < 0 or lexids.max() >= 1 << 32):
            return False
        keys = (terms << 32) | lexids
        order = np.argsort(keys, kind="stable")
        sides.append((keys[order], tfs[order]))
    return all(np.array_equal(e, a) for e, a in zip(*sides))


def repair_lexicon(db: Database, lexicon) -> None:
    """Re-index every live document from its text (the Lexicon's own rebuild), in one transaction."""
    with db.transaction() as c:
        lexicon.rebuild(c)
        Database.set_meta(c, lexicon.t.tokenizer_key, fingerprint())
        if getattr(db, "flags_lexicon_changes", False) and lexicon.t == MEMORY_TABLES:
            c.execute("UPDATE lex_docs_checked SET ok = 1")  # rebuilt from the live memories: consistent
    lexicon.damaged.clear()


# ------------------------------------------------------------------------------ embeddings
def check_embeddings(db: Database) -> list[Problem]:
    """Embedding rows against the memories: the model recorded, live owner, same text hash, sound vector."""
    repair = "kenning rebuild vectors"

    def read(c: sqlite3.Connection):
        model = c.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
        dim = c.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
        rows = c.execute(
            "SELECT e.mem, e.model_id, e.content_hash, e.vector, e.whole, m.content_hash, m.removed_at IS NULL "
            "FROM embeddings e LEFT JOIN memories m ON m.rowid = e.mem").fetchall()
        unembedded = c.execute(
            "SELECT COUNT(*) FROM memories m WHERE m.removed_at IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.mem = m.rowid AND e.model_id = ?) "
            "AND NOT EXISTS (SELECT 1 FROM embed_queue q WHERE q.mem = m.rowid)",
            (model[0] if model else "",)).fetchone()[0]
        return model, dim, rows, unembedded

    model, dim, rows, unembedded = db.read(read)
    if model is None:
        return []  # never embedded: nothing derived yet
    try:
        size = int(dim[0]) * 4 if dim else None
    except (TypeError, ValueError):
        size = None
    other_model = orphan = stale = corrupt = 0
    for _, model_id, digest, vector, whole, current, live in rows:
        if model_id != model[0]:
            other_model += 1
        elif current is None or not live:
            orphan += 1
        elif digest != current:
            stale += 1
        elif not _sound_vectors(vector, whole, size):
            corrupt += 1
    problems = []
    for count, what in ((other_model, "embedding rows of another model"),
                        (orphan, "embedding rows of removed or unknown memories"),
                        (stale, "embedding rows of an older text of their memory"),
                        (corrupt, "embedding rows with a damaged vector"),
                        (unembedded, "live memories with no embedding and not queued for one")):
        if count:
            problems.append(Problem("embeddings", f"{count} {what}", repair))
    return problems


def _sound_vectors(vector: object, whole: object, size: int | None) -> bool:
    """An embedding row's vectors: the ranked one, and the whole text's where it has one (a stamped memory)."""
    return _sound_vector(vector, size) and (whole is None or _sound_vector(whole, size))


def _sound_vector(blob: object, size: int | None) -> bool:
    if not isinstance(blob, bytes) or (size is not None and len(blob) != size) or len(blob) % 4:
        return False
    vector = np.frombuffer(blob, np.float32)
    if not np.all(np.isfinite(vector)):
        return False
    return abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3


def repair_embeddings(db: Database) -> int:
    """Drop every embedding row the check objects to and queue its memory again; returns rows dropped."""
    with db.transaction() as c:
        model = c.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
        if model is None:
            return 0
        dim = c.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
        try:
            size = int(dim[0]) * 4 if dim else None
        except (TypeError, ValueError):
            size = None
        bad = [rowid for rowid, model_id, digest, vector, whole, current, live in c.execute(
            "SELECT e.id, e.model_id, e.content_hash, e.vector, e.whole, m.content_hash, m.removed_at IS NULL "
            "FROM embeddings e LEFT JOIN memories m ON m.rowid = e.mem")
            if model_id != model[0] or current is None or not live or digest != current
            or not _sound_vectors(vector, whole, size)]
        for i in range(0, len(bad), 500):
            chunk = bad[i : i + 500]
            c.execute(f"DELETE FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        c.execute(
            "INSERT OR IGNORE INTO embed_queue(mem) SELECT m.rowid FROM memories m WHERE m.removed_at IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.mem = m.rowid AND e.model_id = ?)", (model[0],))
        if bad:
            c.execute("INSERT INTO meta(key, value) VALUES ('embeddings_generation', '1') "
                      "ON CONFLICT(key) DO UPDATE SET value = CAST(meta.value AS INTEGER) + 1")
    return len(bad)


# ------------------------------------------------------------------------------ the vector index file
def index_provenance(db: Database, keys: np.ndarray, generation: int | None) -> dict:
    """What a saved index records beside its model id: store identity, generation and lineage
    (the text hashes of its newest keys, which a restored older database would give to other texts)."""
    newest = sorted(int(k) for k in np.asarray(keys).tolist())[-LINEAGE_KEYS:]
    marks = ",".join("?" * len(newest))
    rows = db.read(lambda c: c.execute(
        f"SELECT id, content_hash FROM embeddings WHERE id IN ({marks})", newest).fetchall()) if newest else []
    return {"store_id": db.get_meta(STORE_ID_KEY) or "", "generation": generation,
            "lineage": {str(k): _short(h) for k, h in rows}}


def index_trusted(db: Database, meta: dict | None) -> str | None:
    """None when a loaded index's provenance fits this database, else why not (it is then rebuilt)."""
    if not isinstance(meta, dict):
        return "no provenance recorded"
    mine = db.get_meta(STORE_ID_KEY) or ""
    if meta.get("store_id") != mine:
        return "it was built for another store"
    generation = meta.get("generation")
    current = db.read(_generation)
    if not isinstance(generation, int) or generation > current:
        return f"it is from a later state (generation {generation}) than the database ({current}): a restored backup?"
    lineage = meta.get("lineage")
    if not isinstance(lineage, dict):
        return "no lineage recorded"
    try:
        keys = [int(k) for k in lineage]
    except ValueError:
        return "its lineage is damaged"
    if keys:
        marks = ",".join("?" * len(keys))
        rows = dict(db.read(lambda c: c.execute(
            f"SELECT id, content_hash FROM embeddings WHERE id IN ({marks})", keys).fetchall()))
        if any(k in rows and _short(rows[k]) != lineage[str(k)] for k in keys):
            return "its keys now name other texts (the database was restored or replaced)"
    return None


def _short(digest: str) -> str:
    return hashlib.sha256(str(digest).encode()).hexdigest()[:16]


def check_vector_index(db: Database, path: Path) -> list[Problem]:
    from kenning.retrieval.vector import read_header

    repair = "kenning rebuild vectors"
    if not path.exists() and not path.is_symlink():
        return []
    if not path.is_file():
        return [Problem("vectors", f"{path.name} is not a file (a folder, a broken link or a FIFO)", repair)]
    header = read_header(path)
    if header is None:
        return [Problem("vectors", f"{path.name} is damaged (unreadable header or checksum mismatch)", repair)]
    meta = header.get("meta") or {}
    model = db.get_meta("embedding_model")
    if model is not None and meta.get("model_id") != model:
        return [Problem("vectors", f"{path.name} was built with another model ({meta.get('model_id')})", repair)]
    why = index_trusted(db, meta)
    return [Problem("vectors", f"{path.name} is not trusted: {why}", repair)] if why else []


def remove_index_file(path: Path) -> str | None:
    """Clear the way for a rebuilt index: delete the file; a folder in its place is moved aside."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return f"removed {path.name}"
    if path.exists() and not path.is_dir():  # a FIFO, a socket, a device node: not ours, and not data
        path.unlink()
        return f"removed {path.name} (not a regular file)"
    if path.is_dir():
        import shutil  # here: every store open imports this module

        aside = path.with_name(f"{path.name}.not-an-index-{int(time.time())}")
        shutil.move(str(path), str(aside))
        return f"moved the folder {path.name} aside to {aside.name}"
    return None
