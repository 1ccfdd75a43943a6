"""Upgrades of stores that hold data, from every past schema version.

A store written by today's code (memories with links, a tombstone, events, an embedding, a pending write)
is copied into a database built from the old schema's own SQL (MIGRATIONS[:version]), in the layout
that version used: links only inside the record JSON before schema 3, postings in one ``lex_terms`` row
a term before schema 4. Opening the copy with today's code upgrades it; search, links and row counts
must then be what the original store gives.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kenning
from kenning.store.db import DB_FILENAME, MIGRATIONS, SCHEMA_VERSION, _statements

COUNTED = {  # table -> the schema version that created it
    "memories": 1, "memory_scopes": 1, "events": 2, "embeddings": 2, "pending_writes": 2,
    "episodes": 2, "memory_links": 3,
}

ORIGINS = "SELECT id, origin_repo, origin_worktree FROM memories ORDER BY id"


def _count(con: sqlite3.Connection, table: str) -> int:
    return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


pytestmark = pytest.mark.sqlite_only  # upgrades SQLite files written at older schemas; PostgreSQL has its own steps


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The store every old-version copy is made from, with what each version could hold."""
    root = tmp_path_factory.mktemp("source")
    repo = root / "repo"  # memories carry an origin (repo, worktree) only when written inside git
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    path = root / "store"
    with kenning.open_store(path, cwd=repo) as s:
        old = s.write("Staging deploys run from jenkins nightly", scopes=["ci"]).id
        new = s.write("Staging deploys run from github actions", scopes=["ci"],
                      links=[{"kind": "supersedes", "target": old, "note": "moved off jenkins"}]).id
        other = s.write("The zeppelin cache warms every morning", scopes=["infra"]).id
        gone = s.write("The legacy quokka exporter feeds grafana", scopes=["infra"]).id
        s.remove(gone, reason="exporter retired")
        pending = s.write("The user prefers short answers with code first", scopes=["user:style"],
                          category="user-inference")
        assert pending.status == "pending"
        with s.db.transaction() as c:  # one stored vector (no model needed to carry it across)
            rowid, digest = c.execute("SELECT rowid, content_hash FROM memories WHERE id = ?", (other,)).fetchone()
            c.execute("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, 'test-model', ?, ?)",
                      (rowid, digest, (np.ones(4, np.float32) / 2).tobytes()))
            s.lexicon.compact(c)  # every posting in lex_segments, as an old store's lex_terms held them
        reference = [(h.id, round(h.score, 9)) for h in s.search("staging deploys jenkins", mode="bm25").hits]
    con = sqlite3.connect(path / DB_FILENAME)
    counts = {t: _count(con, t) for t in COUNTED}
    origins = con.execute(ORIGINS).fetchall()
    con.close()
    assert counts["memory_links"] == 1 and counts["pending_writes"] == 1 and counts["events"] > 0
    return {"path": path, "reference": reference, "origins": origins, "old": old, "new": new, "other": other, "gone": gone, "counts": counts}


def _old_copy(source_path: Path, version: int, dest: Path) -> Path:
    """The source's data in a database built by the SQL of schema versions 1..version."""
    dest.mkdir(parents=True)
    con = sqlite3.connect(dest / DB_FILENAME)
    for step in MIGRATIONS[:version]:
        for statement in _statements(step):  # a trigger's body holds semicolons of its own (step 7)
            con.execute(statement)
    con.execute("ATTACH DATABASE ? AS src", (str(source_path / DB_FILENAME),))
    tables = [r[0] for r in con.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        if table == "lex_terms":
            continue
        columns = [r[1] for r in con.execute(f"PRAGMA main.table_info({table})")]
        cols = ", ".join(columns)
        con.execute(f"INSERT OR REPLACE INTO main.{table} ({cols}) SELECT {cols} FROM src.{table}")
    if "lex_terms" in tables:  # before schema 4: one row a term, all its lexids then all its tfs
        by_term: dict[str, tuple[list, list]] = {}
        for term, blob in con.execute("SELECT term, postings FROM src.lex_segments ORDER BY term, seg"):
            arr = np.frombuffer(blob, np.int32)
            ids, tfs = by_term.setdefault(term, ([], []))
            ids.append(arr[: len(arr) // 2])
            tfs.append(arr[len(arr) // 2:])
        con.executemany("INSERT INTO main.lex_terms(term, postings) VALUES (?, ?)",
                        [(t, np.concatenate(i).tobytes() + np.concatenate(f).tobytes()) for t, (i, f) in by_term.items()])
    con.execute(f"PRAGMA user_version = {version}")
    con.commit()
    con.execute("DETACH DATABASE src")
    con.close()
    return dest


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_old_store_with_data_upgrades_to_the_same_answers(source, tmp_path, version):
    path = _old_copy(source["path"], version, tmp_path / f"v{version}")
    con = sqlite3.connect(path / DB_FILENAME)
    assert "memory_links" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")} or version >= 3
    con.close()
    with kenning.open_store(path) as s:
        counts = {t: s.db.read(lambda c, t=t: _count(c, t)) for t in COUNTED}
        expected = {t: (n if COUNTED[t] <= version or t == "memory_links" else 0) for t, n in source["counts"].items()}
        assert counts == expected
        # origin columns (auto_scope filters on them) filled from the records (step 3)
        assert s.db.read(lambda c: c.execute(ORIGINS).fetchall()) == source["origins"]
        assert any(repo for _, repo, _ in source["origins"])
        assert s.count() == 3 and [t.memory.id for t in s.tombstones()] == [source["gone"]]
        # search: the upgraded index finds each memory by its own words (the tokenizer reset, step 4)
        assert [h.id for h in s.search("zeppelin cache", mode="bm25").hits] == [source["other"]]
        assert [h.id for h in s.search("github actions", mode="bm25").hits] == [source["new"]]
        assert s.search("quokka exporter", mode="bm25").hits == []
        # links: the supersedes link resolves both ways (the links backfill, step 3)
        hits = {h["id"]: h for h in s.search("staging deploys", mode="bm25").to_dict()["hits"]}
        assert set(hits) == {source["old"], source["new"]}
        assert hits[source["old"]]["superseded_by"] == [source["new"]]
        assert s.show(source["old"])["reverse_links"] == [
            {"kind": "supersedes", "source": source["new"], "note": "moved off jenkins",
             "summary": "Staging deploys run from github actions"}]
        if version >= 2:
            assert len(s.pending_writes(all_sessions=True)) == 1
            # the embedding rows carried across, with no whole-text vector beside them (schema 9: a
            # stamped text's; no memory here opens with one)
            wholes = s.db.read(lambda c: c.execute("SELECT whole FROM embeddings").fetchall())
            assert wholes and set(wholes) == {(None,)}
        # the same ranking, scores included, as the store it was copied from
        assert [(h.id, round(h.score, 9)) for h in s.search("staging deploys jenkins", mode="bm25").hits] == \
            source["reference"]
        # the duplicates gate: rows from before schema 8 keep no term sets and are compared by their
        # text, with the verdicts of the store they were copied from
        stored = s.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE terms IS NOT NULL").fetchone()[0])
        assert stored == (s.db.read(lambda c: _count(c, "memories")) if version >= 8 else 0)
        again = s.write("Staging deploys run from github actions", scopes=["ci"])
        assert (again.status, again.id) == ("duplicate", source["new"])
        removed = s.write("The legacy quokka exporter feeds grafana", scopes=["infra"])
        assert (removed.status, removed.match["id"], removed.match["reason"]) == \
            ("previously_removed", source["gone"], "exporter retired")
        near = s.write("Staging deploys run from github actions on weekdays with caching enabled", scopes=["ci"])
        assert near.status == "committed" and near.related == [source["new"]]
        assert s.db.read(lambda c: c.execute("SELECT terms FROM memories WHERE id = ?", (near.id,)).fetchone()[0]) \
            == "stage deploy run github action weekday cach enabl"
    assert sqlite3.connect(path / DB_FILENAME).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
