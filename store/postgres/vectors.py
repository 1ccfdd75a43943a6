"""The vector leg of a PostgreSQL store: nearest neighbours from pgvector, in the server.

Each embedding row carries its vector twice: the float32 bytes every backend stores (what `kenning
migrate` copies) and ``vec``, a pgvector column holding them bit for bit: sent ready made by a
bulk COPY (``column_binary``), else derived from them by the schema's trigger (schema.py). A
search is one query, so every process sees another's committed vector at its next search; nothing
is cached here but the row count that chooses exact or HNSW search, kept per store generation.
Filters are part of that query: the memories a search may return
(scopes, category, updated-after, what the caller's view hides, worked out once for all legs by
store/search.py) go in as a key array. How it searches follows the SQLite leg (retrieval/vector.py):

- exact when the candidates are few (``EXACT_THRESHOLD``, the filter's keys or the whole table):
  every candidate's cosine is computed, so a filtered search never misses a neighbour;
- else through an HNSW index (cosine, ``m``/``ef_construction`` as the SQLite leg's), built on
  the column cast to the model's dimension once the table outgrows exact search. A filter drops
  hits after the index scan, so ``ef_search`` grows with the share the filter removes; should the
  scan still come back short, the search is redone exactly.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from kenning.retrieval.vector import EF_SEARCH, EXACT_THRESHOLD, HNSW_EF_CONSTRUCTION, HNSW_M

EF_SEARCH_MAX = 1000  # pgvector's upper bound for hnsw.ef_search
# pgvector builds the graph in maintenance_work_mem; once it outgrows that the build goes on on disk,
# many times slower (20k 384-d vectors: 9 minutes instead of a few seconds). Measured need: about
# 2,250 bytes a 384-d vector at m = 16 ("no longer fits after 7,446 tuples" in 16 MB), so a row takes
# its vector plus 48 bytes per m, with a quarter more as margin.
BUILD_MEMORY_MIN_MB = 64
BUILD_MEMORY_MAX_MB = 16384


def build_memory_mb(rows: int, dim: int) -> int:
    """maintenance_work_mem (MB) for an HNSW build over ``rows`` vectors of ``dim``: the whole graph fits."""
    need = rows * (4 * dim + 48 * HNSW_M) * 1.25 / 2**20
    return int(min(BUILD_MEMORY_MAX_MB, max(BUILD_MEMORY_MIN_MB, need + 1)))


def literal(vector: np.ndarray) -> str:
    """A pgvector literal that parses back to the same float32 values (9 significant digits suffice)."""
    return "[" + ",".join(f"{x:.9g}" for x in np.asarray(vector, np.float32).tolist()) + "]"


def column_binary(blob: bytes | None) -> bytes | None:
    """``vec`` as a writer may hand it over (schema.py's trigger derives it when left out), in
    pgvector's binary form (int16 dimension, int16 zero, big-endian float4s): the stored float32
    bits, byte-swapped, nothing parsed. None for any other bytes (empty, ending in a partial word,
    holding infinity or NaN), left to the trigger's SQL derivation."""
    if not blob or len(blob) % 4 or len(blob) // 4 > 16000:  # pgvector's largest dimension
        return None
    values = np.frombuffer(blob, "<f4")
    if not np.isfinite(values).all():
        return None
    return struct.pack(">HH", len(values), 0) + values.astype(">f4").tobytes()


def index_name(dim: int, table: str = "embeddings") -> str:
    return f"{table}_vec_hnsw_{int(dim)}"


class PgVectors:
    """Nearest neighbours over ``vec`` of ``embeddings`` (memories, keyed by ``mem``) or of
    ``transcript_embeddings`` (messages): exact for few candidates, else HNSW."""

    rows_seen = None  # nothing counted in this process: callers count in the database

    def __init__(self, db: Any, exact_threshold: int = EXACT_THRESHOLD, table: str = "embeddings"):
        self.db = db
        self.exact_threshold = exact_threshold
        self.table = table  # the caller's constant, never user input
        self._indexed: set[int] = set()  # dimensions whose HNSW index this process saw in place
        self._counted: dict[tuple[str, int], tuple[int, int]] = {}  # (model, cap) -> (generation, count)

    # -------------------------------------------------------------- nothing kept outside the server
    def reset(self) -> None:
        pass

    def model_changed(self) -> None:
        pass  # the other model's rows are deleted with their vec; its index, on another dimension, empties

    def committed(self, before: int, after: int, added: list, dropped: list) -> None:
        pass  # the rows are the index

    def save(self, force: bool = True) -> None:
        pass

    def warm(self, encoder: Any) -> None:
        pass  # nothing to load into this process

    def check(self) -> list:
        return []  # `kenning check` checks the rows (store/integrity.py); vec is derived from them

    def discard(self) -> str | None:
        return None

    def rebuild(self, encoder: Any) -> None:
        """Make sure the HNSW index exists when the table is large enough to use it."""
        if self._count(encoder.model_id, self.exact_threshold + 1) > self.exact_threshold:
            self._ensure_index(encoder.dim)

    def state(self) -> dict:
        """The rows against what the leg can search (those with a vector): for checks and tests."""
        from kenning.store.vector_file import current_generation

        rows = self.db.read(lambda c: c.raw.execute(f"SELECT id, mem, vec IS NOT NULL FROM {self.table}").fetchall())
        searchable = {key: mem for key, mem, ok in rows if ok}
        generation = self.db.read(current_generation)
        return {"generation": generation, "db_generation": generation, "index_keys": sorted(searchable),
                "key_map": searchable, "db": {key: mem for key, mem, _ in rows}}

    # -------------------------------------------------------------- search
    def search(self, encoder: Any, query_vector: np.ndarray, k: int, allowed_mems: np.ndarray | None,
               floor: float) -> list[tuple[int, float]]:
        """(memory key, cosine) best first, at most ``k``, only those at or above ``floor``."""
        if k <= 0 or (allowed_mems is not None and len(allowed_mems) == 0):
            return []
        allowed = None if allowed_mems is None else [int(m) for m in np.asarray(allowed_mems).tolist()]
        query = literal(query_vector)
        if allowed is not None and len(allowed) <= self.exact_threshold:
            hits = self._exact(encoder, query, k, allowed)
        else:
            total = self._count(encoder.model_id, self.exact_threshold + 1)
            if total <= self.exact_threshold:
                hits = self._exact(encoder, query, k, allowed)
            else:
                hits = self._approximate(encoder, query, k, allowed)
        return [(mem, score) for mem, score in hits if score >= floor]

    def _exact(self, encoder: Any, query: str, k: int, allowed: list[int] | None) -> list[tuple[int, float]]:
        # ordered by the score, not by the distance operator: the planner cannot answer from the index
        where = "" if allowed is None else " AND mem = ANY(%s)"
        params = [query, encoder.model_id] + ([allowed] if allowed is not None else []) + [k]
        rows = self.db.read(lambda c: c.raw.execute(
            f"SELECT mem, 1 - (vec <=> %s::vector) AS score FROM {self.table} "
            f"WHERE model_id = %s AND vec IS NOT NULL{where} ORDER BY score DESC, mem LIMIT %s", params).fetchall())
        return [(int(m), float(s)) for m, s in rows]

    def _approximate(self, encoder: Any, query: str, k: int, allowed: list[int] | None) -> list[tuple[int, float]]:
        dim = int(encoder.dim)
        if not self._ensure_index(dim):
            return self._exact(encoder, query, k, allowed)
        ef = max(EF_SEARCH, k)
        if allowed is not None:  # the filter removes hits after the scan: look further in proportion
            total = max(self._estimate(), len(allowed))
            ef = int(ef * total / len(allowed)) + 1
        ef = min(ef, EF_SEARCH_MAX)
        where = "" if allowed is None else " AND mem = ANY(%s)"
        params = [query, encoder.model_id] + ([allowed] if allowed is not None else []) + [query, k]

        def run(c: Any) -> list:
            with c.raw.transaction():
                # the index, whatever the planner's statistics say: after a bulk load, before
                # autovacuum's ANALYZE, it counts few rows and scans them all (1M: seconds a search);
                # one statement, one round trip (SET LOCAL, the same, took four)
                c.raw.execute(f"SELECT set_config('hnsw.ef_search', '{ef}', true), "
                              "set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), "
                              "set_config('enable_sort', 'off', true)")
                return c.raw.execute(
                    f"SELECT mem, 1 - (vec::vector({dim}) <=> %s::vector({dim})) FROM {self.table} "
                    f"WHERE vector_dims(vec) = {dim} AND model_id = %s{where} "
                    f"ORDER BY vec::vector({dim}) <=> %s::vector({dim}) LIMIT %s", params).fetchall()

        rows = self.db.read(run)
        if len(rows) < k and (allowed is None or len(rows) < len(allowed)):
            return self._exact(encoder, query, k, allowed)  # the scan came back short: never miss a hit
        hits = [(int(m), float(s)) for m, s in rows]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    # -------------------------------------------------------------- the table and its index
    def _count(self, model_id: str, cap: int) -> int:
        """How many searchable rows, counted up to ``cap`` (enough to choose exact or HNSW), once per
        store generation: counting reads up to ``cap`` rows (about 3 ms of server CPU at 10,001, as
        much as the HNSW query), and the answer changes only with a commit. The generation is read
        first (a search has it already), so a commit landing during the count makes the next
        search count again."""
        generation = self.db.generation()
        held = self._counted.get((model_id, cap))
        if held is not None and held[0] == generation:
            return held[1]
        count = self.db.read(lambda c: c.raw.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {self.table} WHERE model_id = %s AND vec IS NOT NULL LIMIT %s) AS few",
            (model_id, cap)).fetchone()[0])
        self._counted[(model_id, cap)] = (generation, count)
        return count

    def _estimate(self) -> int:
        """The table's size as the planner knows it (no scan)."""
        return int(self.db.read(lambda c: c.raw.execute(
            "SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = %s::regclass", (self.table,)).fetchone()[0]))

    def _ensure_index(self, dim: int) -> bool:
        """The HNSW index for ``dim``, built now if missing (once; then kept up by every insert).
        False when it cannot be built here (a role that may not): the search is then exact."""
        if dim in self._indexed:
            return True
        name = index_name(dim, self.table)
        found = self.db.read(lambda c: c.raw.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0])
        if found is None:
            rows = self.db.read(lambda c: c.raw.execute(  # counted, not estimated: a fresh bulk load has no statistics
                f"SELECT count(*) FROM {self.table} WHERE vector_dims(vec) = {dim}").fetchone()[0])
            memory = build_memory_mb(int(rows), dim)

            def build(c: Any) -> None:
                with c.raw.transaction():
                    c.raw.execute(f"SET LOCAL maintenance_work_mem = '{memory}MB'")  # the graph fits: a faster build
                    c.raw.execute(
                        f"CREATE INDEX IF NOT EXISTS {name} ON {self.table} USING hnsw ((vec::vector({dim})) "
                        f"vector_cosine_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                        f"WHERE vector_dims(vec) = {dim}")
                c.raw.execute(f"ANALYZE {self.table}")  # statistics of the rows just indexed, for every other query

            try:
                self.db.read(build)
            except Exception:  # another process built it at that moment, or this role may not: look again
                if self.db.read(lambda c: c.raw.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]) is None:
                    return False
        self._indexed.add(dim)
        return True
