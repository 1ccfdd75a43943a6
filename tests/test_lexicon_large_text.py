"""A text that alone fills the lexicon's delta (store/lexicon.py ``Lexicon.add``: a 1 MiB body of
CJK has ~300k distinct terms) skips the delta table and is merged straight into the segments.
The index must end up exactly as the original path (delta rows, then a compaction) leaves it:
this file keeps that code as the reference and compares every lexicon row and search."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kenning.retrieval.text import tokenize
from kenning.store import lexicon
from kenning.store.db import Database


def _reference_add(self, conn, key, text, ts, stream=None):  # Lexicon.add as it was (d65975a)
    counts = Counter(tokenize(text) if stream is None else stream)
    length = sum(counts.values())
    lexid = conn.execute(
        f"INSERT INTO {self.t.docs}(mem, length, live, ts) VALUES (?, ?, 1, ?)", (key, length, ts)
    ).lastrowid
    conn.executemany(
        f"INSERT INTO {self.t.delta}(term, lexid, tf) VALUES (?, ?, ?)",
        [(t, lexid, c) for t, c in counts.items()],
    )
    stored_df = self._stored_df
    for term in counts.keys() & stored_df.keys():
        stored_df[term] += 1
    pending = int(lexicon._meta(conn, self.t.delta_rows_key, "0")) + len(counts)
    if pending >= lexicon.COMPACT_AFTER_DELTA_ROWS:
        self.compact(conn)
    else:
        Database.set_meta(conn, self.t.delta_rows_key, str(pending))
    self._patch_add(lexid, key, length, ts, counts)


def _rows(store) -> dict:
    def read(c):
        return {
            "docs": c.execute("SELECT lexid, length, live FROM lex_docs ORDER BY lexid").fetchall(),
            "segments": c.execute("SELECT term, seg, postings FROM lex_segments ORDER BY term, seg").fetchall(),
            "delta": c.execute("SELECT term, lexid, tf FROM lex_delta ORDER BY term, lexid").fetchall(),
            "counts": c.execute("SELECT term, n FROM lex_counts ORDER BY term").fetchall(),
            "pending": lexicon._meta(c, "lex_delta_rows", "0"),
        }
    return store.db.read(read)


def _texts(rng: random.Random) -> list[str]:
    small = [f"memory number {i} about topic{i % 7} and {rng.choice(['helm', 'envoy', 'postgres'])}" for i in range(30)]
    big = " ".join(f"w{rng.randrange(10**6)}" for _ in range(3000))  # ~3,000 distinct terms
    cjk = "".join(chr(0x4E00 + rng.randrange(400)) for _ in range(2500))  # thousands of distinct bigrams
    return small[:10] + [big] + small[10:20] + [cjk, big + " tail"] + small[20:]


@pytest.mark.parametrize("threshold", [1, 50, 2000, 10**9])
def test_a_text_that_fills_the_delta_is_indexed_as_the_delta_path_indexed_it(tmp_path, monkeypatch, threshold):
    import kenning

    monkeypatch.setattr(lexicon, "COMPACT_AFTER_DELTA_ROWS", threshold)
    texts = _texts(random.Random(threshold))
    stores = {}
    for name in ("direct", "reference"):
        if name == "reference":
            monkeypatch.setattr(lexicon.Lexicon, "add", _reference_add)
        store = kenning.open_store(tmp_path / name)
        ids = [store.write(text, scopes=["x"], force=True).id for text in texts]
        store.remove(ids[3], reason="test")  # a retired document among them
        store.write("memory number 99 about topic3", scopes=["x"], force=True)
        stores[name] = store
    direct, reference = _rows(stores["direct"]), _rows(stores["reference"])
    assert direct == reference
    for query in ("topic3 memory", "w1 w2 helm", texts[10].split()[5], texts[21][:6]):
        hits = [[(h.content, round(h.score, 9)) for h in s.search(query, mode="bm25", limit=20).hits]
                for s in stores.values()]
        assert hits[0] == hits[1]
