"""A memory naming a code identifier (``KESTREL_DB_POOL``, ``getUserById``, ``tenant_id``) is found
by the words the identifier joins, through every road a text takes into the index (a write, an
import, a rebuilt index), while a query naming the identifier still asks for that identifier."""

import pytest


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_an_identifier_is_found_by_the_words_it_joins(store, mode):
    pool = store.write("kestrel-api reads its pool size from KESTREL_DB_POOL (default 20)", scopes=["ops"]).id
    lookup = store.write("The slow page calls getUserById once per row", scopes=["ops"]).id
    store.write("The database backup runs nightly at 02:00", scopes=["ops"])
    hits = store.search("db pool", mode=mode).hits
    assert [h.id for h in hits] == [pool] and hits[0].match_terms == ["db", "pool"]
    hits = store.search("user by id", mode=mode).hits
    assert hits[0].id == lookup and set(hits[0].match_terms) == {"user", "id"}
    assert [h.id for h in store.search("KESTREL_DB_POOL", mode=mode).hits] == [pool]


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_query_naming_an_identifier_asks_for_it_not_for_its_words(store, mode):
    """The query is read as written: ``tenant_id`` is one term, which prose about tenants and ids
    does not hold."""
    column = store.write("Every invoice row carries tenant_id as its first column", scopes=["ops"]).id
    store.write("Each tenant gets an id when it signs up", scopes=["ops"])
    hits = store.search("tenant_id", mode=mode).hits
    assert [h.id for h in hits] == [column] and hits[0].match_terms == ["tenant_id"]


def test_an_imported_memory_and_a_rebuilt_index_find_it_alike(store):
    """The import's batch tokenizer lower-cases its texts, so a text that may hold a compound is
    tokenized on its own; a rebuilt index reads the same streams."""
    [imported] = store.import_records([{"content": "Set concurrencyPolicy to Forbid on the invoice CronJob",
                                        "scopes": ["ops"]}])
    written = store.write("The retry loop lives in http_client.retry_after", scopes=["ops"]).id
    for rebuilt in (False, True):
        if rebuilt:
            store.rebuild("lexical")
        assert [h.id for h in store.search("concurrency policy", mode="bm25").hits] == [imported]
        assert [h.id for h in store.search("retry client", mode="bm25").hits] == [written]
    assert store.check()["ok"]


def test_a_name_written_with_capitals_is_not_taken_apart(store):
    """PostgreSQL and TideDesk are names, not compounds: "desk" finds no memory about TideDesk."""
    store.write("Bookings go through TideDesk since March", scopes=["ops"])
    assert store.search("desk", mode="bm25").hits == []
