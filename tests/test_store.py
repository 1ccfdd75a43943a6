"""Store round trips on a real SQLite file: write, get, list, update, remove, restore, reopen."""

import sqlite3

import pytest

import kenning
from kenning.errors import InvalidInput, NotFound
from kenning.store.db import SCHEMA_VERSION


def test_write_get_round_trip(store):
    result = store.write("The auth service listens on port 8443", scopes=["projects:auth", "infra"],
                         confidence="high", source="inferred", metadata={"ticket": "OPS-1"})
    assert result.status == "committed" and len(result.id) == 26
    memory = store.get(result.id)
    assert memory.content == "The auth service listens on port 8443"
    assert memory.scopes == ["projects:auth", "infra"]
    assert (memory.category, memory.confidence, memory.source) == ("fact", "high", "inferred")
    assert memory.metadata == {"ticket": "OPS-1"} and memory.created == memory.updated


def test_list_filters_and_orders_newest_first(store):
    a = store.write("alpha note", scopes=["s1"]).id
    b = store.write("beta note", scopes=["s2"], category="ambient").id
    c = store.write("gamma note", scopes=["s1", "s2"]).id
    assert [m.id for m in store.list()] == [c, b, a]
    assert [m.id for m in store.list(scopes=["s1"])] == [c, a]
    assert [m.id for m in store.list(category="ambient")] == [b]
    assert [m.id for m in store.list(limit=1)] == [c]


def test_update_changes_fields_and_reindexes(store):
    mid = store.write("the cache lives in redis", scopes=["infra"]).id
    before = store.get(mid)
    after = store.update(mid, text="the cache lives in memcached", scopes=["infra", "cache"], confidence="low")
    assert after.updated >= before.updated and after.created == before.created
    assert store.get(mid).scopes == ["infra", "cache"]
    assert store.search("redis", mode="bm25").hits == []
    assert [h.id for h in store.search("memcached", mode="bm25").hits] == [mid]
    assert [h.id for h in store.search("memcached", scopes=["cache"]).hits] == [mid]
    with pytest.raises(InvalidInput):
        store.update(mid)


def test_remove_is_a_tombstone_and_restore_brings_it_back(store):
    mid = store.write("the old deploy script is deploy.sh", scopes=["ops"]).id
    tomb = store.remove(mid, reason="replaced by the pipeline")
    assert tomb.reason == "replaced by the pipeline"
    assert store.search("deploy script").hits == []
    with pytest.raises(NotFound, match="restore"):
        store.get(mid)
    assert [t.memory.id for t in store.tombstones()] == [mid]
    assert store.restore(mid).id == mid
    assert [h.id for h in store.search("deploy script").hits] == [mid]
    assert store.tombstones() == []
    with pytest.raises(InvalidInput):
        store.restore(mid)


def test_reopen_keeps_everything_and_does_not_reindex(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        keep = s.write("persistent lexical index survives restarts", scopes=["x"]).id
        gone = s.write("this one is removed later", scopes=["x"]).id
        s.remove(gone, reason="test")
        with s.db.transaction() as c:  # a posting no rebuild would re-derive: it survives only if none runs
            lexid = c.execute("SELECT d.lexid FROM lex_docs d JOIN memories m ON m.rowid = d.mem "
                              "WHERE m.id = ? AND d.live = 1", (keep,)).fetchone()[0]
            c.execute("INSERT INTO lex_delta(term, lexid, tf) VALUES ('zzsentinel', ?, 1)", (lexid,))
    with kenning.open_store(path) as s:
        assert [h.id for h in s.search("zzsentinel", mode="bm25").hits] == [keep]
        assert [h.id for h in s.search("lexical index").hits] == [keep]
        assert s.search("removed later", mode="bm25").hits == []
        assert [t.memory.id for t in s.tombstones()] == [gone]


@pytest.mark.sqlite_only
def test_the_file_is_at_the_current_schema_in_wal_mode(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.write("persistent lexical index survives restarts", scopes=["x"])
    con = sqlite3.connect(tmp_path / "s" / "kenning.sqlite3")
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_tokenizer_change_rebuilds_the_index(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        mid = s.write("rebuild me from the records", scopes=["x"]).id
        with s.db.transaction() as c:
            c.execute("UPDATE meta SET value = 'old' WHERE key = 'tokenizer'")
            c.execute("DELETE FROM lex_delta")
    with kenning.open_store(path) as s:
        assert [h.id for h in s.search("rebuild records").hits] == [mid]


def test_store_indexed_by_an_older_token_stream_rebuilds_once(tmp_path, monkeypatch):
    from kenning.retrieval import text
    from kenning.store.lexicon import Lexicon

    path = tmp_path / "s"
    with monkeypatch.context() as old:  # build the index with the token stream before stemming
        old.setattr(text, "stem", lambda word: word)
        text.clear_word_caches()
        with kenning.open_store(path) as s:
            mid = s.write("the connection pool was exhausted", scopes=["x"]).id
            assert s.search("connected", mode="bm25").hits == []
    text.clear_word_caches()
    rebuilds = []
    real = Lexicon.ensure_current
    monkeypatch.setattr(Lexicon, "ensure_current", lambda self, c, *rest: rebuilds.append(real(self, c, *rest)) or rebuilds[-1])
    with kenning.open_store(path) as s:
        assert [h.id for h in s.search("connected", mode="bm25").hits] == [mid]
    with kenning.open_store(path) as s:
        assert [h.id for h in s.search("connected", mode="bm25").hits] == [mid]
    assert rebuilds.count(True) == 1 and rebuilds[0] is True


def test_compaction_keeps_results_identical(store, monkeypatch):
    import kenning.retrieval.text
    from kenning.store import lexicon

    ids = [store.write(f"memory number {i} about topic{i % 7}", scopes=["x"]).id for i in range(60)]
    before = [(h.id, h.score) for h in store.search("topic3 memory", mode="bm25", limit=50).hits]
    with store.db.transaction() as c:
        store.lexicon.compact(c)
    assert store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM lex_delta").fetchone()[0]) == 0
    assert [(h.id, h.score) for h in store.search("topic3 memory", mode="bm25", limit=50).hits] == before
    # writes past the threshold compact on their own: the delta fills, then empties into the segments
    monkeypatch.setattr(lexicon, "COMPACT_AFTER_DELTA_ROWS", 10)
    delta = []
    for i in range(60, 63):
        store.write(f"memory number {i} about topic3 extra{i}", scopes=["x"])
        delta.append(store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM lex_delta").fetchone()[0]))
    terms = len(set(kenning.retrieval.text.tokenize("memory number 60 about topic3 extra60")))
    assert delta == [terms, 0, terms]  # the second write crossed 10 rows and compacted
    found = {h.id for h in store.search("extra60 extra61 extra62", mode="bm25").hits}
    assert len(found) == 3
    assert len(ids) == 60


def test_filters_apply_before_ranking(store):
    store.import_records([{"content": f"common words everywhere {i}", "scopes": ["noise"]} for i in range(30)])
    wanted = store.import_records([{"content": f"common words {i}", "scopes": ["wanted"]} for i in range(3)])
    result = store.search("common words", scopes=["wanted"], limit=5)
    assert sorted(h.id for h in result.hits) == sorted(wanted)
    amb = store.write("common words ambient", scopes=["noise"], category="ambient").id
    assert [h.id for h in store.search("common words", category="ambient").hits] == [amb]


def test_import_records_keeps_ids_and_is_all_or_nothing(store):
    ids = store.import_records([{"id": "a1", "text": "first imported"}, {"content": "second", "scopes": ["s"]}])
    assert ids[0] == "a1" and store.get("a1").scopes == ["imported"]
    with pytest.raises(InvalidInput, match="record 2"):
        store.import_records([{"text": "fine"}, {"text": "  "}])
    with pytest.raises(InvalidInput, match="already"):
        store.import_records([{"id": "a1", "text": "dup"}])
    with pytest.raises(InvalidInput, match="twice"):
        store.import_records([{"id": "z", "text": "xx"}, {"id": "z", "text": "yy"}])
    assert store.count() == 2


def test_search_result_shape(store):
    mid = store.write("The auth service listens on port 8443", scopes=["projects:kenning"]).id
    result = store.search("auth service port").to_dict()
    assert set(result) >= {"query", "mode", "legs_run", "degraded", "hits"}
    hit = result["hits"][0]
    semantic = kenning.embeddings_available()
    assert hit["id"] == mid and hit["relevance"] == "high"
    assert hit["matched_leg"] == ("both" if semantic else "lexical")
    assert hit["match_terms"] == ["auth", "service", "port"]
    assert set(hit["legs"]) == ({"keyword", "bm25", "vector"} if semantic else {"bm25"})
    assert hit["legs"]["bm25"]["rank"] == 1
    assert (result["degraded"] is None) == semantic
    for key in ("score", "snippet", "scopes", "category", "created", "updated", "staleness_verdict"):
        assert key in hit


def test_relevance_reflects_literal_coverage(store):
    store.write("redis cache eviction policy", scopes=["x"])
    hit = store.search("redis kafka zookeeper etcd consul", mode="bm25").hits[0]
    assert hit.relevance == "low" and hit.match_terms == ["redis"]


@pytest.mark.sqlite_only
def test_a_version_1_database_is_migrated_in_place(tmp_path):
    from kenning.store.db import DB_FILENAME, MIGRATIONS

    path = tmp_path / "old"
    path.mkdir()
    con = sqlite3.connect(path / DB_FILENAME)
    for statement in MIGRATIONS[0].split(";"):
        if statement.strip():
            con.execute(statement)
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    with kenning.open_store(path) as s:
        mid = s.write("written after the upgrade", scopes=["x"]).id
        assert [h.id for h in s.search("upgrade").hits] == [mid]
        tables = {r[0] for r in s.db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"embeddings", "events", "pending_writes", "episodes"} <= tables
    assert sqlite3.connect(path / DB_FILENAME).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.sqlite_only
def test_a_newer_schema_is_refused(tmp_path):
    from kenning.errors import KenningError

    with kenning.open_store(tmp_path / "s"):
        pass
    con = sqlite3.connect(tmp_path / "s" / "kenning.sqlite3")
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(KenningError, match="newer kenning"):
        kenning.open_store(tmp_path / "s")


def test_segmented_postings_give_the_same_answers_however_they_were_built(tmp_path, monkeypatch):
    from kenning.store import lexicon

    texts = [f"note {i} on topic{i % 5} with shared words and tag{i % 3}" for i in range(60)]
    with kenning.open_store(tmp_path / "one") as s:
        s.import_records([{"id": f"n{i}", "content": t} for i, t in enumerate(texts)])
        expected = [(h.id, h.score) for h in s.search("topic3 shared tag1", mode="bm25", limit=50).hits]
    monkeypatch.setattr(lexicon, "SEGMENT_DOCS", 8)
    monkeypatch.setattr(lexicon, "COMPACT_AFTER_DELTA_ROWS", 25)
    with kenning.open_store(tmp_path / "many") as s:
        s.import_records([{"id": f"n{i}", "content": t} for i, t in enumerate(texts[:40])], batch_size=7)
        s.import_records([{"id": f"n{i}", "content": texts[i]} for i in range(40, 60)], batch_size=3)
        assert s.db.read(lambda c: c.execute("SELECT COUNT(DISTINCT seg) FROM lex_segments").fetchone()[0]) > 4
        assert [(h.id, h.score) for h in s.search("topic3 shared tag1", mode="bm25", limit=50).hits] == expected
    with kenning.open_store(tmp_path / "many") as s:  # a fresh process reads the segments back
        assert [(h.id, h.score) for h in s.search("topic3 shared tag1", mode="bm25", limit=50).hits] == expected


def test_every_mode_answers_and_says_when_it_is_degraded(store):
    mid = store.write("The auth service listens on port 8443", scopes=["x"]).id
    semantic = kenning.embeddings_available()
    for mode in ("keyword", "bm25", "semantic", "hybrid"):
        result = store.search("auth port", mode=mode)
        assert result.mode == mode and [h.id for h in result.hits] == [mid]
        if mode in ("keyword", "bm25") or semantic:
            assert result.degraded is None
        else:
            assert result.degraded.reason == "embeddings_absent"
            assert result.degraded.install == 'pip install "kenning[embeddings]"'
            assert result.legs_run == ["bm25"]


def test_import_checked_gates_every_record_and_is_idempotent(store):
    records = [{"text": "The wifi password=Sunflower2024xyz"}, {"text": "The auth service listens on port 8443"},
               {"text": "The auth service listens on port 8443"}, {"text": "Deploys pass through staging first"},
               {"id": "ext-1", "text": "Backups run nightly at 02:00 UTC"}]
    report = store.import_checked(records, labels=[f"line {n}" for n in range(1, 6)])
    assert [line.status for line in report.lines] == ["refused", "committed", "duplicate", "committed", "committed"]
    assert report.lines[0].gate == "credentials" and report.lines[2].match == "line 2"
    assert store.count() == 3 and "ext-1" in report.ids
    again = store.import_checked(records)
    assert again.count("committed") == 0 and again.count("duplicate") == 4 and store.count() == 3
    removed = store.remove(report.ids[0], reason="moved to 9443")
    assert store.import_checked([records[1]]).lines[0].status == "previously_removed" and removed
    taken = store.import_checked([{"id": "ext-1", "text": "A different text under a taken id"}]).lines[0]
    assert taken.status == "refused" and "already names another memory" in taken.reason


@pytest.mark.sqlite_only
def test_the_stamp_ignores_event_log_rows_written_under_log_only(tmp_path):
    """In-process memos compare ``stamp``: a search's own event rows (``log_only``) must leave it alone,
    any other row this connection changes must move it."""
    from kenning.store.db import Database

    db = Database(tmp_path / "kenning.sqlite3")
    try:
        before = db.stamp()
        with db.log_only(), db.transaction() as conn:
            conn.execute("INSERT INTO events(at, session, kind) VALUES ('2026-01-01T00:00:00', 's', 'search')")
            conn.execute("INSERT INTO events(at, session, kind) VALUES ('2026-01-01T00:00:01', 's', 'search')")
        assert db.stamp() == before
        with db.transaction() as conn:
            Database.set_meta(conn, "k", "v")
        assert db.stamp() != before
    finally:
        db.close()


@pytest.mark.sqlite_only
def test_row_vectors_search_the_named_table_of_this_store(tmp_path):
    """``Database.row_vectors`` is the SQLite store's vector leg over transcript messages: an index over
    that table's rows of the encoder's model, keyed by ``mem``."""
    from types import SimpleNamespace

    import numpy as np

    from kenning.store.db import Database

    db = Database(tmp_path / "kenning.sqlite3")
    try:
        rows = [(7, "m", [1.0, 0.0, 0.0]), (8, "m", [0.6, 0.8, 0.0]), (9, "other", [1.0, 0.0, 0.0])]
        with db.transaction() as conn:
            conn.executemany("INSERT INTO transcript_embeddings(mem, model_id, vector) VALUES (?, ?, ?)",
                             [(mem, model, np.array(v, np.float32).tobytes()) for mem, model, v in rows])
        vectors = db.row_vectors("transcript_embeddings")
        encoder = SimpleNamespace(model_id="m", dim=3)  # what the index needs of an encoder: its model and width
        hits = vectors.search(encoder, np.array([1.0, 0.0, 0.0], np.float32), 5, None, -1.0)
        assert [mem for mem, _ in hits] == [7, 8]
        assert [round(score, 4) for _, score in hits] == [1.0, 0.6]
    finally:
        db.close()
