"""A warm search looks at the store's state once and reads each term's postings once for its labels.

``Database.one_generation`` makes a search ask SQLite for PRAGMA data_version once instead of at
each memo's, the lexicon's, the settings' and the trust memo's check; a commit by another
connection must still be seen by the next search. ``bm25.coverages`` gives a page of hits both
coverages the labels read (all terms, and the terms some text holds) in one pass: the same floats
as the two ``idf_coverage`` calls it replaces.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kenning
from kenning.memory import citations
from kenning.retrieval import bm25, labels
from kenning.retrieval.lexical import contains
from kenning.retrieval.text import search_tokens

WORDS = ["billing", "gateway", "staging", "cluster", "postgres", "backup", "deploy", "auth", "token", "index",
         "queue", "cache", "stripe", "nightly", "tls", "pipeline", "python", "node", "alice", "bob"]


def _statements(db):
    """Count the statements SQLite runs on this connection from now on."""
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    return seen


@pytest.mark.sqlite_only  # PRAGMA data_version is SQLite's (PostgreSQL has its own generation block)
def test_a_search_reads_data_version_once(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records([{"content": f"the {a} {b} note", "scopes": ["x"]} for a in WORDS for b in WORDS[:5]])
        for _ in range(2):
            store.search("billing gateway", mode="bm25", limit=10)  # warm: records, memos, settings
        seen = _statements(store._s.db)
        store.search("billing gateway", mode="bm25", limit=10)
        store._s.db.conn.set_trace_callback(None)
        assert sum("data_version" in s for s in seen) == 1, seen
        # outside a search block every ask is a fresh look
        seen = _statements(store._s.db)
        store._s.db.data_version()
        store._s.db.data_version()
        store._s.db.conn.set_trace_callback(None)
        assert sum("data_version" in s for s in seen) == 2


def test_another_connections_commit_is_seen_by_the_next_search(tmp_path):
    home = tmp_path / "s"
    with kenning.open_store(home) as a, kenning.open_store(home) as b:
        a.import_records([{"content": "the billing service bills monthly", "scopes": ["billing"]}])
        for _ in range(2):
            assert [h.confidence for h in a.search("billing monthly", mode="bm25").hits] == ["medium"]
        [hit] = a.search("billing monthly", mode="bm25").hits
        b.update(hit.id, confidence="high")
        b.write("the billing service bills monthly in euros since march", scopes=["billing"])
        result = a.search("billing monthly", mode="bm25")
        assert {h.confidence for h in result.hits} == {"high", "medium"} and len(result.hits) == 2
        assert a.search("euros", mode="bm25").hits  # the lexicon saw the other connection's write


def test_nested_blocks_are_the_outer_one_and_end_with_it(tmp_path):
    with kenning.open_store(tmp_path / "s") as a, kenning.open_store(tmp_path / "s") as b:
        db = a._s.db
        with db.one_generation():
            first = db.data_version()
            b.write("a note another connection commits", scopes=["x"])
            with db.one_generation():
                assert db.data_version() == first
            assert db.data_version() == first  # still the outer block's look
        assert db.data_version() != first  # after it, the commit shows


def _random_store(tmp_path, seed):
    rng = random.Random(seed)
    store = kenning.open_store(tmp_path / f"s{seed}")
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) for _ in range(120)]
    store.import_records([{"content": t, "scopes": ["x"]} for t in texts])
    return store, rng


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_coverages_equal_two_idf_coverage_calls(tmp_path, seed):
    store, rng = _random_store(tmp_path, seed)
    with store:
        lexicon = store._s.lexicon.refresh()
        vocabulary = WORDS + ["unheard", "neverseen", "zzz"]
        for _ in range(200):
            terms = list(dict.fromkeys(rng.choice(vocabulary) for _ in range(rng.randint(1, 6))))
            keys = rng.sample(range(1, 130), rng.randint(1, 70))  # some past the store's keys, some over FEW_KEYS
            present = contains(lexicon, terms, keys)
            coverage, known = bm25.coverages(lexicon, terms, keys, present)
            assert coverage == bm25.idf_coverage(lexicon, terms, keys, matched=present)
            held = [i for i, t in enumerate(terms) if lexicon.postings([t])[t][0].size]
            expected = {} if len(held) == len(terms) else bm25.idf_coverage(
                lexicon, [terms[i] for i in held], keys, matched=present[:, held])
            assert known == expected  # exactly: the same floats
            assert all(isinstance(v, float) for v in (*coverage.values(), *known.values()))
            # a term no text holds that asks for a quantity counts as a known one (answer_types.asks_quantity)
            asking = [t for t in terms if t in ("unheard", "zzz")]
            kept = [i for i, t in enumerate(terms) if i in held or t in asking]
            _, known = bm25.coverages(lexicon, terms, keys, present, asking)
            assert known == ({} if len(kept) == len(terms) else bm25.idf_coverage(
                lexicon, [terms[i] for i in kept], keys, matched=present[:, kept]))


def test_coverages_of_an_empty_store(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        lexicon = store._s.lexicon.refresh()
        present = contains(lexicon, ["nothing"], [1, 2])
        assert bm25.coverages(lexicon, ["nothing"], [1, 2], present) == ({1: 0.0, 2: 0.0}, {1: 0.0, 2: 0.0})
        assert np.array_equal(present, np.zeros((2, 1), bool))


@pytest.mark.sqlite_only
def test_a_writes_gates_read_data_version_once(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records([{"content": f"the {a} {b} note", "scopes": ["x"]} for a in WORDS for b in WORDS[:5]])
        store.write("the nightly backup of postgres runs at two", scopes=["x"])  # warm: settings, hint, lexicon
        seen = _statements(store._s.db)
        assert store.write("the staging cluster deploys through jenkins", scopes=["x"]).status == "committed"
        store._s.db.conn.set_trace_callback(None)
        gates = seen[: seen.index("BEGIN IMMEDIATE")]
        assert sum("data_version" in s for s in gates) == 1, gates


def test_a_write_by_another_connection_is_seen_by_the_next_writes_probe(tmp_path):
    home = tmp_path / "s"
    with kenning.open_store(home) as a, kenning.open_store(home) as b:
        a.write("the billing service bills monthly in euros", scopes=["billing"])
        text = "the auth gateway terminates tls for the staging cluster"
        assert b.write(text, scopes=["auth"]).status == "committed"
        assert a.write(text, scopes=["auth"]).status == "duplicate"
        b.remove(b.search("auth gateway", mode="bm25").hits[0].id, reason="moved to the wiki")
        assert a.write(text, scopes=["auth"]).status == "previously_removed"


@settings(max_examples=2000, deadline=None)
@given(share=st.floats(0, 1), terms=st.integers(0, 12), score=st.floats(0, 50), top=st.floats(0, 50),
       coverage=st.floats(0, 1), known=st.one_of(st.none(), st.floats(0, 1)))
def test_a_label_without_a_cosine_reads_no_coverage(share, terms, score, top, coverage, known):
    """Why a lexical search skips the coverages (store/search.py ``_matches``): without the vector
    leg a hit's label is the same whatever they are."""
    assert labels.label(None, share, terms, score, top, coverage, known) == labels.label(None, share, terms, score, top)


def test_lexical_labels_equal_those_computed_with_the_coverages(tmp_path):
    store, rng = _random_store(tmp_path, 7)
    with store:
        for _ in range(40):
            query = " ".join(rng.choice(WORDS + ["unheard"]) for _ in range(rng.randint(1, 5)))
            for mode in ("bm25", "keyword"):
                result = store.search(query, mode=mode, limit=20)
                ranked = store.rank(query, mode=mode, depth=20)
                assert [h.relevance for h in result.hits] == [h.relevance for h in ranked.hits][: len(result.hits)]
                lexicon = store._s.lexicon.refresh()
                terms = list(dict.fromkeys(search_tokens(query)))
                hits = ranked.hits
                if not hits:
                    continue
                keys = [store._s.db.read(lambda c, i=h.id: c.execute(
                    "SELECT rowid FROM memories WHERE id = ?", (i,)).fetchone()[0]) for h in hits]
                present = contains(lexicon, terms, keys)
                coverage, known = bm25.coverages(lexicon, terms, keys, present)
                top = hits[0].score
                lead = labels.lead_of(top, hits[1].score if len(hits) > 1 else None)  # one leg: its own scores
                for hit, key, row in zip(hits, keys, present.tolist()):
                    share = sum(row) / len(terms)
                    assert hit.relevance == labels.label(None, share, len(terms), hit.score, top, coverage[key],
                                                         known.get(key), lead), (query, mode)


def _reference_uncited(last_verified_at, now, stale_days, written_at):
    """citations.uncited_hit_fields before its times were remembered."""
    status, overdue = citations.verification_state(last_verified_at, now, stale_days, written_at)
    verdict = "spot_check_recommended" if overdue else "fresh"
    verified = None if status == "never" else citations._iso(citations._utc(last_verified_at))
    return verdict, {"staleness_verdict": verdict, "verification": {"status": status, "last_verified_at": verified},
                     "path_drift_missing": 0}


def test_uncited_hit_fields_with_remembered_times_equal_the_reference():
    rng = random.Random(11)
    base = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    zones = [timezone.utc, timezone(timedelta(hours=5, minutes=30)), None]
    for _ in range(4000):
        def instant():
            at = base + timedelta(days=rng.uniform(-400, 400), microseconds=rng.randint(0, 999_999))
            zone = rng.choice(zones)
            at = at.replace(tzinfo=None) if zone is None else at.astimezone(zone)
            return at.isoformat() if rng.random() < 0.4 else at
        verified = None if rng.random() < 0.3 else instant()
        written = None if rng.random() < 0.1 else instant()
        stale = rng.choice([0, 1, 30, 90])
        now = base + timedelta(days=rng.uniform(-400, 800))
        if rng.random() < 0.1 and verified is not None:  # exactly at the boundary
            now = citations._utc(verified) + timedelta(days=stale)
        for _ in range(2):  # the second answer comes from the remembered times
            got = citations.uncited_hit_fields(verified, now, stale, written)
            assert got == _reference_uncited(verified, now, stale, written)
    a = citations.uncited_hit_fields(None, base, 30, base)[1]
    b = citations.uncited_hit_fields(None, base, 30, base)[1]
    assert a == b and a is not b and a["verification"] is not b["verification"]  # callers add to them


@pytest.mark.sqlite_only
def test_a_write_after_a_low_curation_check_asks_the_log_nothing(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        store.write("the nightly backup of postgres runs at two", scopes=["x"])  # measures the pressure: low
        assert store._s.curation_checked_at is not None
        seen = _statements(store._s.db)
        assert store.write("the staging cluster deploys through jenkins", scopes=["x"]).status == "committed"
        store._s.db.conn.set_trace_callback(None)
        assert not [s for s in seen if "curation_hint" in s], seen
