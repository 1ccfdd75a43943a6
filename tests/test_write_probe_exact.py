"""A write's cheaper duplicate probe finds what the old one found, and the index reads it relies on
return what the old reads returned (issue 14: faster single writes without weakening a gate).

- ``bm25.search_once`` (one pass over all the probe terms' postings) ranks exactly as
  ``bm25.search``: the same documents, the same float scores, on real stores.
- The gate's verdicts (duplicate / previously_removed / pass, the match, related and removed
  lists) equal those of the probe ranked by ``bm25.search`` and tokenizing the body again, write
  after write, while the store grows, texts are removed and the lexicon's cached postings are
  patched in place.
- ``_read_terms``, which checks all the segment rows of a read at once, returns the postings and
  the damaged terms of the row-by-row reading it replaced, on tables with every kind of damage.
- Cached postings a write appended to stay equal to the stored ones, and arrays handed out
  before an append never change.
"""

from __future__ import annotations

import random
import sqlite3
import sys

import numpy as np
import pytest

import kenning
from kenning.memory.gates import duplicates, pipeline
from kenning.retrieval import bm25
from kenning.retrieval.text import query_terms
from kenning.store import lexicon as lexicon_mod

WORDS = [f"w{i}" for i in range(120)] + "deploy staging cache nightly jenkins runs the of is a".split()


def _text(rng: random.Random, n: int | None = None) -> str:
    # a skewed vocabulary: a few words in most texts, a long tail in few
    return " ".join(WORDS[min(int(rng.paretovariate(0.8)) - 1, len(WORDS) - 1)] if rng.random() < 0.5
                    else rng.choice(WORDS) for _ in range(n or rng.randint(3, 18)))


def _reference_probe(s, text: str) -> duplicates.DuplicateCheck:
    """The probe as it was before search_once: ranked by bm25.search, the body tokenized again."""
    lexicon = s.lexicon.refresh()
    terms = query_terms(text)[: pipeline.PROBE_TERMS]
    if len(terms) > pipeline.RAREST_PROBE_TERMS:
        df = lexicon.doc_freqs(terms)
        terms = sorted([t for t in terms if df[t]], key=lambda t: (df[t], t))[: pipeline.RAREST_PROBE_TERMS]
    keys = [k for k, _ in bm25.search(lexicon, terms, pipeline.DUPLICATE_CANDIDATES, None,
                                      k1=s.config.bm25_k1, b=s.config.bm25_b)]
    marks = ",".join("?" * len(keys))
    live = s.db.read(lambda c: c.execute(
        f"SELECT id, content FROM memories WHERE rowid IN ({marks}) AND removed_at IS NULL", keys).fetchall())
    return duplicates.check_duplicate(text, live, pipeline._tombstones(s.db), content_of=pipeline.content_of(s.db))


def test_search_once_ranks_exactly_as_search(tmp_path, sums):
    rng = random.Random(1)
    with kenning.open_store(tmp_path / "s") as store:
        s = store._s
        # two segments of postings, then delta rows of single writes beside them
        store.import_records([{"content": _text(rng), "scopes": ["t"]} for _ in range(8500)], batch_size=3000)
        for _ in range(12):
            store.write(_text(rng, 12), scopes=["t"], force=True)
        lexicon = s.lexicon.refresh()
        for trial in range(400):
            terms = [rng.choice(WORDS) for _ in range(rng.randint(1, 9))] + (["zzz-unknown"] if trial % 7 == 0 else [])
            k = rng.choice([1, 5, 20, 50])
            k1, b = rng.choice([(bm25.K1, bm25.B), (0.9, 0.4), (2.0, 0.0), (1.2, 1.0)])
            expected = bm25.search(lexicon, terms, k, None, k1=k1, b=b)
            assert bm25.search_once(lexicon, terms, k, k1=k1, b=b) == expected, (terms, k)
        assert bm25.search_once(lexicon, [], 5) == [] == bm25.search_once(lexicon, ["zzz-unknown"], 5)


def test_the_probe_gives_the_reference_verdicts_write_after_write(tmp_path):
    seen = {"duplicate": 0, "previously_removed": 0, "related": 0, None: 0}
    for seed in range(2):
        rng = random.Random(100 + seed)
        with kenning.open_store(tmp_path / f"s{seed}") as store:
            s = store._s
            texts = [_text(rng) for _ in range(300)]
            store.import_records([{"content": t, "scopes": ["t"]} for t in texts], batch_size=120)
            store.search(" ".join(WORDS[:30]), mode="bm25")  # common terms' postings cached, then patched
            written: list[str] = []
            for step in range(130):
                kind = rng.random()
                if kind < 0.25 and written:  # a repeat, or a near duplicate of an earlier write
                    words = rng.choice(written).split()
                    text = " ".join(rng.sample(words, max(1, len(words) - rng.randint(0, 2))))
                elif kind < 0.4:
                    text = rng.choice(texts) + " " + _text(rng, rng.randint(0, 3))
                else:
                    text = _text(rng)
                expected = _reference_probe(s, text)
                got = duplicates.check_duplicate(text, pipeline._neighbours(s.db, s.lexicon, s.config, text),
                                                 pipeline._tombstones(s.db), content_of=pipeline.content_of(s.db))
                assert got == expected, (seed, step, text)
                seen["related" if got.status is None and got.related else got.status] += 1
                result = store.write(text, scopes=["t"])
                assert result.status in ("committed", "duplicate", "previously_removed")
                assert result.status == (got.status or "committed")
                if result.status == "committed":
                    written.append(text)
                    if rng.random() < 0.15:  # a tombstone to be written again later
                        store.remove(result.id, reason=f"step {step}")
    assert all(seen.values()), seen  # every verdict was exercised


def test_cached_postings_patched_by_writes_equal_the_stored_ones(tmp_path):
    rng = random.Random(4)
    with kenning.open_store(tmp_path / "s") as store:
        s = store._s
        store.import_records([{"content": _text(rng), "scopes": ["t"]} for _ in range(200)])
        lexicon = s.lexicon.refresh()
        handed = {t: tuple(a.copy() for a in p) for t, p in lexicon.postings(WORDS[:40]).items()}
        views = lexicon.postings(WORDS[:40])
        for _ in range(120):  # each write appends to the cached lists of its terms
            store.write(_text(rng, 14), scopes=["t"], force=True)
            if rng.random() < 0.1:
                store.search(rng.choice(WORDS), mode="bm25")
        for term, (ids, tfs) in views.items():  # what was handed out before the appends never changed
            assert np.array_equal(ids, handed[term][0]) and np.array_equal(tfs, handed[term][1])
        patched = {t: tuple(a.copy() for a in p) for t, p in s.lexicon.refresh().postings(WORDS[:40]).items()}
        s.lexicon._cache.clear()
        stored = s.lexicon.postings(WORDS[:40])
        for term in WORDS[:40]:
            assert np.array_equal(patched[term][0], stored[term][0]), term
            assert np.array_equal(patched[term][1], stored[term][1]), term
        assert sum(len(p[0]) for p in patched.values()) > sum(len(p[0]) for p in handed.values())


def _old_read_terms(c, t, terms):
    """``_read_terms`` as it was: every segment row checked on its own, then each term's list."""
    def bounded(blob, seg):
        if not isinstance(blob, bytes) or not blob or len(blob) % 8:
            return False
        half = len(blob) // 2
        first = int.from_bytes(blob[:4], sys.byteorder, signed=True)
        last = int.from_bytes(blob[half - 4: half], sys.byteorder, signed=True)
        return seg * lexicon_mod.SEGMENT_DOCS <= first <= last < (seg + 1) * lexicon_mod.SEGMENT_DOCS

    marks = ",".join("?" * len(terms))
    segments, damaged = {}, set()
    for term, seg, blob in c.execute(
            f"SELECT term, seg, postings FROM {t.segments} WHERE term IN ({marks}) ORDER BY term, seg", terms):
        if isinstance(seg, int) and bounded(blob, seg):
            segments.setdefault(term, []).append(blob)
        else:
            damaged.add(term)
    arrays = {}
    for term, parts in segments.items():
        ids = np.concatenate([np.frombuffer(p, np.int32)[: len(p) // 8] for p in parts]).astype(np.int64)
        tfs = np.concatenate([np.frombuffer(p, np.int32)[len(p) // 8:] for p in parts])
        if bool((ids[1:] > ids[:-1]).all()) and bool((tfs > 0).all()):
            arrays[term] = (ids, tfs)
        else:
            damaged.add(term)
    delta = [(term, lexid, tf) for term, lexid, tf in c.execute(
        f"SELECT term, lexid, tf FROM {t.delta} WHERE term IN ({marks})", terms)
        if isinstance(lexid, int) and isinstance(tf, int) and tf > 0]
    damaged |= {term for term, lexid, tf in c.execute(
        f"SELECT term, lexid, tf FROM {t.delta} WHERE term IN ({marks})", terms)
        if not (isinstance(lexid, int) and isinstance(tf, int) and tf > 0)}
    return arrays, delta, damaged


def _blob(ids, tfs) -> bytes:
    return np.asarray(ids, np.int32).tobytes() + np.asarray(tfs, np.int32).tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_reading_all_segments_at_once_equals_reading_them_one_by_one(seed):
    rng = random.Random(seed)
    size = lexicon_mod.SEGMENT_DOCS
    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE lex_segments (term TEXT NOT NULL, seg INTEGER NOT NULL, postings BLOB NOT NULL, "
              "PRIMARY KEY (term, seg)) WITHOUT ROWID")
    c.execute("CREATE TABLE lex_delta (term TEXT NOT NULL, lexid INTEGER NOT NULL, tf INTEGER NOT NULL)")
    terms = [f"t{i}" for i in range(60)]
    damages = ["none"] * 6 + ["not bytes", "empty", "odd length", "first below", "last above", "descending",
                              "across segments", "zero tf", "text seg"]
    for term in terms:
        for seg in rng.sample(range(5), rng.randint(1, 4)):
            n = rng.randint(1, 6)
            ids = sorted(rng.sample(range(seg * size, (seg + 1) * size), n))
            tfs = [rng.randint(1, 4) for _ in ids]
            damage = rng.choice(damages)
            blob: object = _blob(ids, tfs)
            if damage == "not bytes":
                blob = "text"
            elif damage == "empty":
                blob = b""
            elif damage == "odd length":
                blob = blob[:-3]
            elif damage == "first below":
                blob = _blob([seg * size - 1] + ids[1:], tfs)
            elif damage == "last above":
                blob = _blob(ids[:-1] + [(seg + 1) * size], tfs)
            elif damage == "descending" and n > 1:
                blob = _blob([ids[0], ids[-1]] + ids[1:-1][::-1] if n > 2 else ids[::-1], tfs)
            elif damage == "across segments":
                blob = _blob(ids, tfs)  # fine alone; a neighbour segment below repeats a lexid
                other = seg + 1
                c.execute("INSERT OR REPLACE INTO lex_segments VALUES (?, ?, ?)",
                          (term, other, _blob([ids[-1]], [1])))
            elif damage == "zero tf":
                blob = _blob(ids, tfs[:-1] + [0])
            c.execute("INSERT OR REPLACE INTO lex_segments VALUES (?, ?, ?)",
                      (term, "x" if damage == "text seg" else seg, blob))
        for _ in range(rng.randint(0, 2)):
            c.execute("INSERT INTO lex_delta VALUES (?, ?, ?)",
                      (term, rng.randint(0, 6 * size), rng.choice([1, 2, 0, "x"])))
    tables = lexicon_mod.MEMORY_TABLES
    for _ in range(40):
        chunk = rng.sample(terms + ["absent"], rng.randint(1, 20))
        old_arrays, old_delta, old_damaged = _old_read_terms(c, tables, chunk)
        arrays, delta, damaged = lexicon_mod._read_terms(c, tables, chunk)
        assert damaged == old_damaged
        assert sorted(delta) == sorted(old_delta)
        assert arrays.keys() == old_arrays.keys()
        for term, (ids, tfs) in arrays.items():
            assert ids.dtype == np.int64 and tfs.dtype == np.int32
            assert np.array_equal(ids, old_arrays[term][0]) and np.array_equal(tfs, old_arrays[term][1])


def test_overlap_counts_the_union_without_building_it():
    rng = random.Random(8)
    for _ in range(3000):
        a = frozenset(rng.sample(WORDS, rng.randint(0, 12)))
        b = frozenset(rng.sample(WORDS, rng.randint(0, 12)))
        union = len(a | b)
        assert duplicates.overlap(a, b) == (len(a & b) / union if union else 0.0)


def test_remembered_term_sets_are_the_split_strings_also_past_the_bound(monkeypatch):
    from kenning.store import records

    monkeypatch.setattr(records, "TERM_SETS_KEPT", 5)
    rng = random.Random(9)
    strings = [" ".join(rng.sample(WORDS, rng.randint(1, 8))) for _ in range(40)]
    for s in strings * 3:  # the memo fills, is emptied, fills again
        assert records.stored_terms(s, "ignored") == frozenset(s.split())
        assert len(records._term_sets) <= 5
    assert records.stored_terms(None, "The zeppelin caches") == duplicates.token_set("The zeppelin caches")


def test_remembered_tombstones_follow_removals_restores_and_other_writers(tmp_path):
    import os
    import subprocess

    path = tmp_path / "s"
    text = "The nightly jenkins job deploys the staging cache at two"
    with kenning.open_store(path) as store, kenning.open_store(path) as other:
        first = store.write(text, scopes=["t"])
        store.write("an unrelated fact about w1 w2 w3", scopes=["t"])  # the tombstones are read (none)
        store.remove(first.id, reason="moved to the wiki")
        again = store.write(text, scopes=["t"])
        assert again.status == "previously_removed" and "moved to the wiki" in again.reason
        store.restore(first.id)
        assert store.write(text, scopes=["t"]).status == "duplicate"
        other.remove(first.id, reason="removed through another Store object")  # another connection
        again = store.write(text, scopes=["t"])
        assert again.status == "previously_removed" and "another Store object" in again.reason
        other.restore(first.id)
        assert store.write(text, scopes=["t"]).status == "duplicate"
        child = (f"import kenning\nwith kenning.open_store({str(path)!r}) as o:\n"
                 f"    o.remove({first.id!r}, reason='removed by another process')\n")
        subprocess.run([sys.executable, "-c", child], check=True, env=os.environ.copy())
        again = store.write(text, scopes=["t"])
        assert again.status == "previously_removed" and "another process" in again.reason
        s = store._s
        assert pipeline._tombstones(s.db) is pipeline._tombstones(s.db)  # remembered while nothing changed
