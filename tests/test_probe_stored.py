"""The duplicate probe reads stored data instead of re-deriving it, and says what it said before.

Schema 8 keeps each memory's content terms (``memories.terms``) and each term's posting count in
the segments (``lex_counts``). The probe's verdicts must equal those of the probe that tokenized
every candidate and tombstone and summed the segments' lengths, and the counts must equal that sum
whatever changed the index: imports, single writes, compaction, updates, removals, a rebuild, and
another process's writes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import kenning
from kenning.memory.gates import duplicates, pipeline
from kenning.retrieval import bm25
from kenning.retrieval.text import query_terms

VOCAB = [f"w{i}" for i in range(60)] + "deploy staging cache nightly jenkins runs the of is a".split()


def _segment_counts(db, prefix: str = "") -> dict[str, int]:
    return dict(db.read(lambda c: c.execute(
        f"SELECT term, SUM(length(postings)) / 8 FROM {prefix}lex_segments GROUP BY term").fetchall()))


def _stored_counts(db, prefix: str = "") -> dict[str, int]:
    return dict(db.read(lambda c: c.execute(f"SELECT term, n FROM {prefix}lex_counts").fetchall()))


def _text(rng: random.Random, n: int | None = None) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n or rng.randint(3, 16)))


def test_stored_counts_equal_the_segments_after_a_mixed_workload(tmp_path):
    rng = random.Random(5)
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        s.import_records([{"content": _text(rng), "scopes": ["t"]} for _ in range(300)], batch_size=70)
        assert _stored_counts(s.db) == _segment_counts(s.db) != {}
        ids = [s.write(_text(rng, 12), scopes=["t"], force=True).id for _ in range(20)]
        with s.db.transaction() as c:  # the single writes' delta rows folded into the segments
            s.lexicon.compact(c)
        assert _stored_counts(s.db) == _segment_counts(s.db)
        s.update(ids[0], text=_text(rng, 9) + " changed")
        s.remove(ids[1], reason="test")
        s.restore(ids[1])
        child = (f"import kenning, random\nrng = random.Random(9)\nV = {VOCAB!r}\n"
                 f"with kenning.open_store({str(path)!r}) as o:\n"
                 "    o.import_records([{'content': ' '.join(rng.choice(V) for _ in range(8)) + ' other',"
                 " 'scopes': ['o']} for _ in range(50)])\n"
                 "    o.write('w1 w2 w3 written by another process', scopes=['o'], force=True)\n")
        subprocess.run([sys.executable, "-c", child], check=True, env=os.environ.copy())
        s.import_records([{"content": _text(rng), "scopes": ["t"]} for _ in range(40)])
        with s.db.transaction() as c:
            s.lexicon.compact(c)
        assert _stored_counts(s.db) == _segment_counts(s.db)
        assert _stored_counts(s.db)["other"] == 50
        s.rebuild("lexical")
        assert _stored_counts(s.db) == _segment_counts(s.db)


def _old_probe(s, text: str) -> duplicates.DuplicateCheck:
    """The probe as it was before schema 8: frequencies summed over the segments, candidates and
    tombstones tokenized from their texts."""
    db, config = s.db, s.config
    lexicon = s.lexicon.refresh()
    terms = list(dict.fromkeys(query_terms(text)))[: pipeline.PROBE_TERMS]
    if len(terms) > pipeline.RAREST_PROBE_TERMS:
        stored = _segment_counts(db)
        delta = dict(db.read(lambda c: c.execute("SELECT term, COUNT(*) FROM lex_delta GROUP BY term").fetchall()))
        df = {t: stored.get(t, 0) + delta.get(t, 0) for t in terms}
        terms = sorted([t for t in terms if df[t]], key=lambda t: (df[t], t))[: pipeline.RAREST_PROBE_TERMS]
    keys = [k for k, _ in bm25.search(lexicon, terms, pipeline.DUPLICATE_CANDIDATES, None, k1=config.bm25_k1,
                                      b=config.bm25_b)]
    marks = ",".join("?" * len(keys))
    live = db.read(lambda c: c.execute(
        f"SELECT id, content FROM memories WHERE rowid IN ({marks}) AND removed_at IS NULL", keys).fetchall())
    removed = db.read(lambda c: c.execute(
        "SELECT id, content, removed_reason FROM memories WHERE removed_at IS NOT NULL "
        "ORDER BY removed_at DESC LIMIT ?", (pipeline.TOMBSTONES_COMPARED,)).fetchall())
    return duplicates.check_duplicate(text, live, removed)


def test_the_probe_gives_the_verdicts_of_the_text_probe_on_random_stores(tmp_path):
    seen = {"duplicate": 0, "previously_removed": 0, None: 0}
    for seed in range(3):
        rng = random.Random(seed)
        with kenning.open_store(tmp_path / f"s{seed}") as store:
            s = store._s
            texts = [_text(rng) for _ in range(250)]
            store.import_records([{"content": t, "scopes": ["t"]} for t in texts], batch_size=90)
            for t in texts[:30]:
                store.write(t + " " + _text(rng, 3), scopes=["t"], force=True)
            live = [m.id for m in store.list(limit=400)]
            for mid in rng.sample(live, 25):
                store.remove(mid, reason=f"gone {mid}")
            with s.db.transaction() as c:  # some rows as a store before schema 8 left them
                c.execute("UPDATE memories SET terms = NULL WHERE rowid % 3 = 0")
            probes = [_text(rng) for _ in range(40)] + texts[:40]
            probes += [" ".join(rng.sample(t.split(), max(1, len(t.split()) - 1))) for t in texts[40:80]]
            for text in probes:
                s.lexicon._cache.clear()
                s.lexicon._stored_df.clear()
                old = _old_probe(s, text)
                s.lexicon._cache.clear()
                s.lexicon._stored_df.clear()
                new = duplicates.check_duplicate(text, pipeline._neighbours(s.db, s.lexicon, s.config, text),
                                                 pipeline._tombstones(s.db))
                assert new == old, text
                seen[new.status] += 1
    assert all(seen.values()), seen  # every verdict was exercised


def test_a_tokenizer_change_forgets_the_stored_terms(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.write("The zeppelin cache warms every morning", scopes=["t"])
        with s.db.transaction() as c:
            c.execute("UPDATE meta SET value = 'an older token stream' WHERE key = 'tokenizer'")
    with kenning.open_store(tmp_path / "s") as s:  # opening rebuilds the index and drops the term sets
        assert s.db.read(lambda c: c.execute("SELECT terms FROM memories").fetchall()) == [(None,)]
        again = s.write("The zeppelin cache warms every morning", scopes=["t"])
        assert again.status == "duplicate"
