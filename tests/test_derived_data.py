"""Derived data proves itself: damage to the lexical index, the embedding rows or the vector index
file is detected (`check`), repaired (`rebuild`, or on its own), and never an exception in a search."""

from __future__ import annotations

import shutil
import struct

import pytest

import kenning
from kenning import open_store
from kenning.store.semantic import INDEX_FILENAME

TEXTS = [f"memory {i} about the {w} service on port {8000 + i}" for i, w in
         enumerate(["auth", "billing", "search", "mail", "queue", "cache", "gateway", "metrics"] * 5)]


@pytest.fixture
def filled(tmp_path):
    store = open_store(tmp_path / "s")
    store.import_records([{"content": t, "scopes": ["t"]} for t in TEXTS])
    yield store
    store.close()


def bm25_ids(store, query="billing service port"):
    """The bm25 answer as {id: score} (ties may come in another order after a rebuild)."""
    return {h.id: round(h.score, 6) for h in store.search(query, mode="bm25", limit=10, record=False).hits}


def sql(store, statement, *args):
    with store.db.transaction() as c:
        c.execute(statement, args)


def test_a_healthy_store_checks_clean(filled):
    report = filled.check()
    assert report["ok"], report["problems"]


@pytest.mark.parametrize("blob", [b"\x00\x01\x02", b"garbage!" * 3, struct.pack("<4i", 9, 3, 1, 1), b""])
def test_a_garbage_postings_blob_is_skipped_reported_and_rebuilt_in_the_search(filled, blob):
    before = bm25_ids(filled)
    sql(filled, "UPDATE lex_segments SET postings = ? WHERE term = 'bill'", blob)
    assert not filled.check()["ok"]
    fresh = open_store(filled.directory)  # another process sees the damage cold
    result = fresh.search("billing service port", mode="bm25", limit=10, record=False)
    assert result.degraded is not None and result.degraded.reason == "lexical_index_repaired"
    assert {h.id: round(h.score, 6) for h in result.hits} == before
    assert fresh.check()["ok"]
    fresh.close()


def test_a_blob_of_the_wrong_type_is_damage_too(filled):
    sql(filled, "UPDATE lex_segments SET postings = 'text' WHERE term = 'auth'")
    fresh = open_store(filled.directory)
    assert fresh.search("auth", mode="keyword", record=False).hits
    fresh.close()


def test_lost_or_retired_index_rows_are_rebuilt_when_the_store_opens(filled):
    before = bm25_ids(filled)
    sql(filled, "DELETE FROM lex_docs WHERE lexid IN (SELECT lexid FROM lex_docs LIMIT 5)")
    sql(filled, "UPDATE lex_docs SET live = 0 WHERE lexid IN (SELECT lexid FROM lex_docs WHERE live = 1 LIMIT 3)")
    with open_store(filled.directory) as fresh:
        assert bm25_ids(fresh) == before
        assert fresh.check()["ok"]


def checked_flag(store) -> int:
    return store.db.read(lambda c: c.execute("SELECT ok FROM lex_docs_checked").fetchone()[0])


@pytest.mark.sqlite_only  # the flag is SQLite's (triggers of migration 7); PostgreSQL checks at every open
@pytest.mark.parametrize("damage", [
    "DELETE FROM lex_docs WHERE lexid = (SELECT MIN(lexid) FROM lex_docs)",
    "UPDATE lex_docs SET live = 0 WHERE lexid = (SELECT MIN(lexid) FROM lex_docs WHERE live = 1)",
    "UPDATE lex_docs SET mem = mem + 1000 WHERE lexid = (SELECT MIN(lexid) FROM lex_docs WHERE live = 1)",
    "INSERT INTO lex_docs(mem, length, live, ts) SELECT mem, length, 1, ts FROM lex_docs LIMIT 1",
    "UPDATE memories SET removed_at = '2026-01-01T00:00:00Z' WHERE rowid = (SELECT MIN(rowid) FROM memories)",
    "INSERT INTO memories(id, content, category, created, updated, content_hash, record) SELECT 'X' || id, "
    "content, category, created, updated, content_hash, record FROM memories LIMIT 1",
    "DELETE FROM memories WHERE rowid = (SELECT MAX(rowid) FROM memories)",
])
def test_a_change_behind_the_stores_back_clears_the_open_checks_flag_and_is_repaired(filled, damage):
    with open_store(filled.directory) as clean:  # a clean open proves the index and sets the flag
        assert checked_flag(clean) == 1
    filled.db.conn.execute("PRAGMA foreign_keys = OFF")  # a hand-made delete of a memory leaves its scopes
    sql(filled, damage)
    assert checked_flag(filled) == 0
    with open_store(filled.directory) as fresh:
        assert fresh.check()["ok"]  # repaired at open
        assert checked_flag(fresh) == 1


@pytest.mark.sqlite_only
def test_an_open_with_the_flag_set_trusts_it_and_a_write_clears_it(filled):
    with open_store(filled.directory) as clean:
        assert checked_flag(clean) == 1
        clean.write("The ledger service exports nightly at 02:00", scopes=["t"])
        assert checked_flag(clean) == 0
    with open_store(filled.directory) as again:
        assert checked_flag(again) == 1 and again.check()["ok"]
    # damage with the flag forced back on: the open believes the flag (no full check), as designed
    sql(filled, "UPDATE lex_docs SET live = 0 WHERE lexid = (SELECT MIN(lexid) FROM lex_docs WHERE live = 1)")
    sql(filled, "UPDATE lex_docs_checked SET ok = 1")
    with open_store(filled.directory) as trusting:
        assert not trusting.check()["ok"]


def test_swapped_or_deleted_postings_are_found_by_check_and_fixed_by_rebuild(filled):
    before = bm25_ids(filled)
    for a, b in (("billing", "swap"), ("mail", "billing"), ("swap", "mail")):
        sql(filled, "UPDATE lex_segments SET term = ? WHERE term = ?", b, a)
    sql(filled, "DELETE FROM lex_segments WHERE term = 'port'")
    report = filled.check()
    assert not report["ok"]
    assert any(p["part"] == "lexical" and "postings differ" in p["what"] for p in report["problems"])
    with open_store(filled.directory) as cold:  # the damage is real for a process that reads it
        assert bm25_ids(cold) != before
    done = filled.rebuild("lexical")
    assert done["lexical"]["documents"] == len(TEXTS)
    assert filled.check()["ok"] and bm25_ids(filled) == before


def test_rebuild_refuses_an_unknown_part(filled):
    with pytest.raises(kenning.InvalidInput if hasattr(kenning, "InvalidInput") else Exception, match="rebuild what"):
        filled.rebuild("everything")


@pytest.mark.sqlite_only  # the SQLite backend's vector index file (PostgreSQL searches pgvector)
def test_a_folder_in_place_of_the_index_file_is_reported_and_moved_aside(filled):
    (filled.directory / INDEX_FILENAME).mkdir()
    report = filled.check()
    assert any(p["part"] == "vectors" and "not a file" in p["what"] for p in report["problems"])
    done = filled.rebuild("vectors")
    assert "moved the folder" in done["vectors"]["index_file"]
    assert not (filled.directory / INDEX_FILENAME).is_dir()


def test_the_store_has_an_identity(filled, tmp_path):
    other = open_store(tmp_path / "other")
    assert filled.store_id and other.store_id and filled.store_id != other.store_id
    other.close()


# ---------------------------------------------------------------------------------- with the real model
needs_model = pytest.mark.skipif(not kenning.embeddings_available(), reason="the embeddings extra is not installed")


@pytest.mark.embeddings
@pytest.mark.slow
@pytest.mark.sqlite_only  # restores the SQLite file beside its index file
@needs_model
def test_an_index_file_newer_than_a_restored_database_is_not_trusted(tmp_path):
    """Back up the DB, write and embed more, restore the backup beside the newer vectors.idx, then
    write new memories (whose embedding keys collide with the newer file's): answers stay right."""
    home = tmp_path / "s"
    with open_store(home) as store:
        store.import_records([{"content": t, "scopes": ["t"]} for t in TEXTS[:10]], embed=True)
        store.search("billing", mode="semantic")
    backup = tmp_path / "backup.sqlite3"
    shutil.copy(home / "kenning.sqlite3", backup)
    with open_store(home) as store:
        store.import_records([{"content": f"the zebra enclosure number {i}", "scopes": ["t"]} for i in range(10)],
                             embed=True)
        store.search("zebra", mode="semantic")
    for suffix in ("-wal", "-shm"):
        (home / f"kenning.sqlite3{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, home / "kenning.sqlite3")
    with open_store(home) as store:
        store.import_records([{"content": f"the teapot collection item {i}", "scopes": ["t"]} for i in range(10)],
                             embed=True)
        assert any("not trusted" in p["what"] for p in store.check()["problems"]), store.check()
        hits = store.search("teapot collection", mode="semantic", limit=10).hits
        contents = [store.get(h.id).content for h in hits]
        assert contents and all("teapot" in c for c in contents[:5]), contents
        assert not any("zebra" in c for c in contents)
        assert store.check()["ok"], store.check()["problems"]


@pytest.mark.embeddings
@pytest.mark.slow
@pytest.mark.sqlite_only  # the index file beside the SQLite file
@needs_model
def test_an_index_file_from_before_store_identities_is_dropped_when_the_store_gets_one(tmp_path):
    """A store an older kenning made (before 84f0ea8) has no identity, and its vectors.idx names none: the
    upgrade gives the store one, so `kenning check` called the file 'built for another store' (exit 1)."""
    from kenning.retrieval.vector import VectorIndex

    home = tmp_path / "s"
    with open_store(home) as store:
        store.import_records([{"content": t, "scopes": ["t"]} for t in TEXTS[:10]], embed=True)
        store.search("billing", mode="semantic")
        model, dim = store.db.get_meta("embedding_model"), int(store.db.get_meta("embedding_dim"))
        sql(store, "DELETE FROM meta WHERE key = 'store_id'")
    index = VectorIndex.load(home / INDEX_FILENAME, dim, {"model_id": model})
    index.save(home / INDEX_FILENAME, {"model_id": model, "generation": index.meta["generation"]})  # the old meta
    with open_store(home) as store:
        assert store.check()["ok"], store.check()["problems"]
        hits = store.search("billing service", mode="semantic", limit=3).hits
        assert "billing" in store.get(hits[0].id).content
        assert store.check()["ok"], store.check()["problems"]


@pytest.mark.embeddings
@pytest.mark.slow
@needs_model
def test_damaged_embedding_rows_are_found_and_rebuilt(tmp_path):
    with open_store(tmp_path / "s") as store:
        store.import_records([{"content": t, "scopes": ["t"]} for t in TEXTS], embed=True)
        store.search("billing", mode="semantic")
        sql(store, "DELETE FROM embeddings WHERE id IN (SELECT id FROM embeddings ORDER BY id LIMIT 3)")
        sql(store, "UPDATE embeddings SET vector = ? WHERE id = (SELECT MAX(id) FROM embeddings)", b"\x00")
        sql(store, "UPDATE embeddings SET content_hash = 'x' WHERE id = (SELECT MIN(id) FROM embeddings)")
        problems = {p["what"] for p in store.check()["problems"] if p["part"] == "embeddings"}
        assert any("no embedding" in p for p in problems) and any("damaged vector" in p for p in problems)
        assert any("older text" in p for p in problems)
        done = store.rebuild("vectors")
        assert done["vectors"]["embedded"] >= 5
        assert store.check()["ok"], store.check()["problems"]


# ---------------------------------------------------------------------------------- the CLI
def cli(*args, store):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(store), *args],
                          capture_output=True, text=True)


def test_cli_check_exits_1_on_damage_and_rebuild_fixes_it(filled):
    import json

    home = filled.directory
    filled.close()
    clean = cli("check", "--json", store=home)
    assert clean.returncode == 0 and json.loads(clean.stdout)["ok"]
    with open_store(home) as store:
        sql(store, "UPDATE lex_segments SET postings = x'0102' WHERE term = 'bill'")
    damaged = cli("check", store=home)
    assert damaged.returncode == 1 and "damaged postings" in damaged.stdout and "Traceback" not in damaged.stderr
    rebuilt = cli("rebuild", "lexical", store=home)
    assert rebuilt.returncode == 0 and f"from {len(TEXTS)} memories" in rebuilt.stdout
    assert cli("check", store=home).returncode == 0
    wrong = cli("rebuild", "everything", store=home)
    assert wrong.returncode == 2 and "rebuild what" in wrong.stderr and "Traceback" not in wrong.stderr


def postings(store, term):
    """The term's stored (lexids, tfs), from its one segment."""
    blob = store.db.read(lambda c: c.execute("SELECT postings FROM lex_segments WHERE term = ?", (term,)).fetchone()[0])
    half = len(blob) // 8
    values = struct.unpack(f"<{2 * half}i", blob)
    return list(values[:half]), list(values[half:])


def set_postings(store, term, lexids, tfs):
    sql(store, "UPDATE lex_segments SET postings = ? WHERE term = ?",
        struct.pack(f"<{2 * len(lexids)}i", *lexids, *tfs), term)


def test_check_names_exactly_the_terms_whose_postings_differ(filled):
    """Postings compared as a multiset per term: a wrong tf, a posting stored twice (segment and
    delta) and a posting moved to another document are each named; postings of removed memories
    and an untouched term are not."""
    auth_ids, auth_tfs = postings(filled, "auth")
    set_postings(filled, "auth", auth_ids, [auth_tfs[0] + 1, *auth_tfs[1:]])  # a wrong tf
    mail_ids, mail_tfs = postings(filled, "mail")
    sql(filled, "INSERT INTO lex_delta(term, lexid, tf) VALUES ('mail', ?, ?)", mail_ids[0], mail_tfs[0])  # twice
    gateway_ids, gateway_tfs = postings(filled, "gateway")
    set_postings(filled, "gateway", [gateway_ids[0] + 1, *gateway_ids[1:]], gateway_tfs)  # the wrong document
    queue = filled.search("queue", mode="bm25", limit=1, record=False).hits[0].id
    filled.remove(queue, "gone")  # its postings stay in the segments, no longer live: not a difference
    report = filled.check()
    assert [p["what"] for p in report["problems"]] == [
        "postings differ from the memories' text for 3 terms ('auth', 'gateway', 'mail')"]
    filled.rebuild("lexical")
    assert filled.check()["ok"]
