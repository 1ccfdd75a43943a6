"""The PostgreSQL vector leg (store/postgres/vectors.py) against a real server with pgvector: the
pgvector column holds the stored bytes bit for bit, exact and HNSW search agree with brute force,
filters keep to their keys, and another connection's vector is found at the next search."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kenning.store.postgres.database import PostgresDatabase
from kenning.store.postgres.vectors import PgVectors, index_name

DIM = 16
MODEL = SimpleNamespace(model_id="test-model", dim=DIM)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _insert(db: PostgresDatabase, vectors: np.ndarray, first_mem: int = 1, table: str = "embeddings") -> None:
    with db.transaction() as c:
        if table == "embeddings":
            c.executemany("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                          [(first_mem + i, MODEL.model_id, f"h{first_mem + i}", v.tobytes()) for i, v in enumerate(vectors)])
        else:  # transcript messages' vectors: no text hash
            c.executemany(f"INSERT INTO {table}(mem, model_id, vector) VALUES (?, ?, ?)",
                          [(first_mem + i, MODEL.model_id, v.tobytes()) for i, v in enumerate(vectors)])


def _brute(vectors: np.ndarray, query: np.ndarray, k: int, allowed=None, first_mem: int = 1) -> list[int]:
    scores = vectors @ query
    mems = np.arange(first_mem, first_mem + len(vectors))
    order = sorted(range(len(vectors)), key=lambda i: (-scores[i], mems[i]))
    if allowed is not None:
        order = [i for i in order if mems[i] in set(allowed)]
    return [int(mems[i]) for i in order[:k]]


@pytest.fixture
def db(postgres_url):
    database = PostgresDatabase(postgres_url)
    yield database
    database.close()


def _sent(db: PostgresDatabase, table: str = "embeddings") -> list:
    """Each row's ``vec`` as float32 words (vector_send: int16 dim, int16 unused, big-endian float4s)."""
    rows = db.read(lambda c: c.raw.execute(f"SELECT vector_send(vec) FROM {table} ORDER BY mem").fetchall())
    return [None if sent is None else np.frombuffer(bytes(sent)[4:], ">f4").astype(np.float32).view(np.uint32)
            for (sent,) in rows]


# 21 rows go in one INSERT a row (schema.py's trigger derives vec in SQL); 100 go through COPY, which
# sends vec ready made (Connection._copy_in): both must give the same bits
@pytest.mark.parametrize("rows", [21, 100], ids=["derived-in-sql", "sent-by-copy"])
def test_the_vector_column_holds_the_stored_float32_bits_exactly(db, rows):
    awkward = np.array([[1e-40, -1.4e-45, 0.0, -0.0, 3.4e38, -1.17549435e-38, 1 / 3, -7.25] + [0.5] * (DIM - 8)],
                       np.float32)
    vectors = np.vstack([awkward, np.random.default_rng(1).standard_normal((rows - 1, DIM)).astype(np.float32)])
    _insert(db, vectors)
    rows = db.read(lambda c: c.raw.execute("SELECT vector, vector_send(vec) FROM embeddings ORDER BY id").fetchall())
    for (stored, sent), original in zip(rows, vectors):
        assert bytes(stored) == original.tobytes()
        # vector_send: int16 dim, int16 unused, then big-endian float4s
        assert np.array_equal(np.frombuffer(bytes(sent)[4:], ">f4").astype(np.float32).view(np.uint32),
                              original.view(np.uint32))


def test_copied_rows_that_are_no_vector_get_no_vector_column(db):
    """Through COPY too: empty bytes, infinity and NaN give NULL, and bytes ending in a partial word
    their whole words, as the SQL derivation does."""
    good = _unit(np.random.default_rng(2).standard_normal((70, DIM)))
    bad = [b"", good[0].tobytes()[:-1], np.full(DIM, np.inf, np.float32).tobytes(),
           np.full(DIM, np.nan, np.float32).tobytes()]
    with db.transaction() as c:
        c.executemany("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                      [(i + 1, MODEL.model_id, "h", b) for i, b in enumerate(bad + [v.tobytes() for v in good])])
    sent = _sent(db)
    assert [s is None for s in sent] == [True, False, True, True] + [False] * 70
    assert np.array_equal(sent[1], good[0][:-1].view(np.uint32))
    assert all(np.array_equal(s, v.view(np.uint32)) for s, v in zip(sent[4:], good))


@pytest.mark.parametrize("rows", [3, 80], ids=["row-by-row", "copy"])
def test_replaced_or_updated_bytes_give_the_new_vector_column(db, rows):
    """INSERT OR REPLACE (few rows: ON CONFLICT one by one; many: through COPY with vec sent) and an
    UPDATE of the bytes alone both leave vec equal to the new bytes."""
    rng = np.random.default_rng(4)
    first, second, third = (_unit(rng.standard_normal((rows, DIM))) for _ in range(3))
    _insert(db, first)
    with db.transaction() as c:
        c.executemany("INSERT OR REPLACE INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                      [(i + 1, MODEL.model_id, "h2", v.tobytes()) for i, v in enumerate(second)])
    assert all(np.array_equal(s, v.view(np.uint32)) for s, v in zip(_sent(db), second))
    with db.transaction() as c:
        for i, v in enumerate(third):
            c.execute("UPDATE embeddings SET vector = ? WHERE mem = ?", (v.tobytes(), i + 1))
    assert all(np.array_equal(s, v.view(np.uint32)) for s, v in zip(_sent(db), third))


def test_a_blob_that_is_no_vector_has_no_vector_column_and_is_never_a_neighbour(db):
    inf = np.full(DIM, np.inf, np.float32)
    with db.transaction() as c:
        c.execute("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (1, ?, 'a', ?)", (MODEL.model_id, b"\x00"[:0]))
        c.execute("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (2, ?, 'b', ?)", (MODEL.model_id, inf.tobytes()))
    _insert(db, _unit(np.ones((1, DIM), np.float32)), first_mem=3)
    assert db.read(lambda c: c.raw.execute("SELECT mem FROM embeddings WHERE vec IS NULL ORDER BY mem").fetchall()) == [(1,), (2,)]
    hits = PgVectors(db).search(MODEL, np.ones(DIM, np.float32) / np.sqrt(DIM), 5, None, -1.0)
    assert [m for m, _ in hits] == [3]


@pytest.mark.parametrize("table", ["embeddings", "transcript_embeddings"])
@pytest.mark.parametrize("threshold", [10_000, 50], ids=["exact", "hnsw"])
def test_search_agrees_with_brute_force_with_and_without_a_filter(db, threshold, table):
    """Memories' vectors and transcript messages' are searched the same way, each table with its own index."""
    rng = np.random.default_rng(7)
    vectors = _unit(rng.standard_normal((400, DIM)))
    _insert(db, vectors, table=table)
    leg = db.vector_leg(None) if table == "embeddings" else db.row_vectors(table)
    leg.exact_threshold = threshold
    for _ in range(5):
        query = _unit(rng.standard_normal((1, DIM)))[0]
        hits = leg.search(MODEL, query, 10, None, -1.0)
        assert [m for m, _ in hits] == _brute(vectors, query, 10)
        assert np.allclose([s for _, s in hits], np.sort(vectors @ query)[::-1][:10], atol=1e-5)
        few = rng.choice(np.arange(1, 401), 30, replace=False)  # few rows: exact whatever the size
        assert [m for m, _ in leg.search(MODEL, query, 10, few, -1.0)] == _brute(vectors, query, 10, few)
        many = rng.choice(np.arange(1, 401), 300, replace=False)  # many rows: through HNSW when it is built
        assert [m for m, _ in leg.search(MODEL, query, 10, many, -1.0)] == _brute(vectors, query, 10, many)
    built = {name: db.read(lambda c: c.raw.execute("SELECT to_regclass(%s)", (index_name(DIM, name),)).fetchone()[0])
             for name in ("embeddings", "transcript_embeddings")}
    assert {name for name, found in built.items() if found} == ({table} if threshold < 400 else set())


def test_the_floor_and_an_empty_filter(db):
    vectors = _unit(np.eye(DIM, dtype=np.float32)[:4] + 0.01)
    _insert(db, vectors)
    leg = PgVectors(db)
    hits = leg.search(MODEL, vectors[0], 10, None, 0.5)
    assert [m for m, _ in hits] == [1] and hits[0][1] == pytest.approx(1.0, abs=1e-6)
    assert leg.search(MODEL, vectors[0], 10, np.array([], np.int64), -1.0) == []


def test_another_connection_s_vector_is_found_at_the_next_search(db, postgres_url):
    rng = np.random.default_rng(3)
    vectors = _unit(rng.standard_normal((100, DIM)))
    _insert(db, vectors)
    leg = PgVectors(db, exact_threshold=20)
    query = _unit(rng.standard_normal((1, DIM)))[0]
    assert 101 not in [m for m, _ in leg.search(MODEL, query, 5, None, -1.0)]
    other = PostgresDatabase(postgres_url)
    try:
        _insert(other, query[None, :], first_mem=101)
    finally:
        other.close()
    assert leg.search(MODEL, query, 5, None, -1.0)[0][0] == 101


def _schema_up_to(conn, version: int) -> None:
    """An empty store as an older kenning made it: the first ``version`` schema steps only."""
    from kenning.store.postgres.schema import MIGRATIONS

    conn.execute("CREATE TABLE kenning_schema (version INTEGER NOT NULL)")
    for step in MIGRATIONS[:version]:
        for statement in step:
            conn.execute(statement)
    conn.execute("INSERT INTO kenning_schema(version) VALUES (%s)", (version,))


def _old_store(url: str, version: int, table: str, vectors: np.ndarray) -> None:
    """A store as an older kenning made it (schema steps 1..``version``), holding ``vectors`` for
    memories 1, 2, ... in ``table`` (embeddings rows get the text hash 'h')."""
    import psycopg

    hashed = table == "embeddings"
    insert = (f"INSERT INTO {table}(mem, model_id, content_hash, vector) VALUES (%s, %s, 'h', %s)" if hashed
              else f"INSERT INTO {table}(mem, model_id, vector) VALUES (%s, %s, %s)")
    with psycopg.connect(url, autocommit=True) as conn:
        _schema_up_to(conn, version)
        for i, v in enumerate(vectors):
            conn.execute(insert, (i + 1, MODEL.model_id, v.tobytes()))


def test_a_version_2_store_gains_the_transcript_vector_column_from_its_stored_vectors(postgres_url):
    """Schema 3 derives ``transcript_embeddings.vec`` for the vectors a store already holds."""
    from kenning.store.postgres.schema import MIGRATIONS

    vectors = _unit(np.random.default_rng(5).standard_normal((3, DIM)))
    _old_store(postgres_url, 2, "transcript_embeddings", vectors)
    db = PostgresDatabase(postgres_url)
    try:
        assert db.read(lambda c: c.raw.execute("SELECT version FROM kenning_schema").fetchone()[0]) == len(MIGRATIONS)
        hits = db.row_vectors("transcript_embeddings").search(MODEL, vectors[1], 3, None, -1.0)
        assert [m for m, _ in hits] == _brute(vectors, vectors[1], 3)
    finally:
        db.close()


def test_a_version_3_store_keeps_its_vector_column_and_derives_new_ones(postgres_url):
    """Schema 5 turns the generated column into a trigger-filled one: the values already there stay,
    and a row inserted afterwards, one by one or in bulk, gets its own."""
    from kenning.store.postgres.schema import MIGRATIONS

    rng = np.random.default_rng(6)
    old, new = _unit(rng.standard_normal((3, DIM))), _unit(rng.standard_normal((70, DIM)))
    _old_store(postgres_url, 3, "embeddings", old)
    db = PostgresDatabase(postgres_url)
    try:
        assert db.read(lambda c: c.raw.execute("SELECT version FROM kenning_schema").fetchone()[0]) == len(MIGRATIONS)
        assert db.read(lambda c: c.raw.execute(
            "SELECT is_generated FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'embeddings' AND column_name = 'vec'").fetchone()[0]) == "NEVER"
        _insert(db, new[:1], first_mem=4)
        _insert(db, new[1:], first_mem=5)
        everything = np.vstack([old, new])
        assert all(np.array_equal(s, v.view(np.uint32)) for s, v in zip(_sent(db), everything))
        hits = db.vector_leg(None).search(MODEL, everything[40], 3, None, -1.0)
        assert [m for m, _ in hits] == _brute(everything, everything[40], 3)
    finally:
        db.close()


def test_the_row_count_that_chooses_exact_search_is_kept_per_generation(postgres_url):
    """Counted once per store generation: in one ``one_generation`` block (a search) another
    connection's new vectors are not counted again, at the next block they are, and this
    connection's own commit in a block is counted at once."""
    writer, reader = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)
    try:
        leg = PgVectors(reader, exact_threshold=5)
        rng = np.random.default_rng(8)
        _insert(writer, _unit(rng.standard_normal((3, DIM))))
        with reader.one_generation():
            assert leg._count(MODEL.model_id, 6) == 3
            _insert(writer, _unit(rng.standard_normal((4, DIM))), first_mem=4)
            assert leg._count(MODEL.model_id, 6) == 3  # the block's one look at the store
        assert leg._count(MODEL.model_id, 6) == 6  # the next look: counted again, up to the cap
        with reader.one_generation():
            with reader.transaction() as c:
                c.execute("DELETE FROM embeddings WHERE mem > 2")
            assert leg._count(MODEL.model_id, 6) == 2
        with writer.one_generation():  # nothing changed since: the writer's leg counts once, then keeps it
            other = PgVectors(writer)
            assert other._count(MODEL.model_id, 6) == 2 and other._counted[(MODEL.model_id, 6)][1] == 2
    finally:
        writer.close()
        reader.close()
