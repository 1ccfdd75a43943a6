"""Tune BM25 k1/b, RRF k and leg weights on development collections, for all of them at once.

A setting is chosen by its mean score over every collection given, never by one alone, and the
report shows each collection's figures for the defaults, the chosen setting and each single leg -
so "it helps here and hurts there" is visible rather than averaged away.

How it stays affordable on two cores:

1. BM25 k1/b are read at query time (``Store.configure(persist=False)``), so the corpus is
   indexed once and each k1/b pair re-runs the queries in ``bm25`` mode (depth 10, all an @10
   objective needs).
2. Fusion settings are swept without re-running the legs: each leg's ranking is fetched once
   through ``Store.rank`` (one mode per leg, to the store's ``leg_depth``), and every (k, weights)
   candidate is fused by the engine's own ``retrieval.engine.rank`` - the function hybrid search
   calls - so no query is re-encoded hundreds of times.
3. The winner and the defaults are then measured end to end through ``Store.rank(mode="hybrid")``;
   those are the figures reported as ``default``/``best``. Anything hybrid search adds beyond
   fusing the legs would show up there as a gap to the sweep's estimate (``sweep_estimate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

import kenning
from kenning.errors import InvalidInput
from kenning.retrieval import engine
from kenning.store.store import Store

from .datasets import Dataset
from .harness import Progress, _dataset, loaded_store, query_scopes, run_mode, semantic_available, summarize
from .metrics import mean, per_query

K1_GRID = (0.6, 0.9, 1.2, 1.5, 2.0)
B_GRID = (0.3, 0.5, 0.75, 0.9)
RRF_K_GRID = (1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
KEYWORD_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
VECTOR_WEIGHTS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
OBJECTIVES = ("nDCG@10", "R@10", "MRR@10")
TUNABLE = ("bm25_k1", "bm25_b", "rrf_k", "weights")
TOP = 10
# The mode that runs exactly one leg, per leg name.
LEG_MODES = {"keyword": "keyword", "bm25": "bm25", "vector": "semantic"}


class _Collection:
    """One development collection loaded into its own throwaway store."""

    def __init__(self, data: Dataset, store: Store, group_sep: str | None):
        self.data, self.store, self.group_sep = data, store, group_sep
        self.answerable = [q for q in data.queries if data.is_answerable(q)]

    def score(self, ranked: Mapping[str, Sequence[str]], metric: str) -> float:
        return mean(per_query(self.data.qrels, ranked, self.answerable)[metric]) or 0.0

    def scores(self, ranked: Mapping[str, Sequence[str]]) -> dict[str, float]:
        table = per_query(self.data.qrels, {q: list(r)[:TOP] for q, r in ranked.items()}, self.answerable)
        return {m: round(mean(table[m]) or 0.0, 4) for m in OBJECTIVES}

    def run(self, mode: str, settings: Mapping, bar: Progress, depth: int = TOP) -> dict:
        """All of one mode's scores with ``settings`` applied, through ``Store.rank``."""
        self.store.configure(persist=False, **settings)
        row = summarize(self.data, run_mode(self.store, self.data, mode, self.group_sep, depth, bar))
        return {m: row[m] for m in OBJECTIVES}

    def leg_rankings(self, legs: Iterable[str], bar: Progress) -> dict[str, dict[str, list[tuple[str, float]]]]:
        """``{leg: {query_id: [(doc id, native score), …]}}`` to the store's leg depth, one mode per leg.

        The native scores ride along because ``engine.rank`` takes (key, score) pairs.
        """
        depth = self.store.config.leg_depth
        out: dict[str, dict[str, list[tuple[str, float]]]] = {}
        for leg in legs:
            out[leg] = {}
            with bar.task(f"{self.data.name}: {leg} leg", len(self.data.queries)) as advance:
                for done, query in enumerate(self.data.queries.values(), start=1):
                    result = self.store.rank(query.text, mode=LEG_MODES[leg], depth=depth,
                                             scopes=query_scopes(query.id, self.group_sep))
                    out[leg][query.id] = [(hit.id, hit.legs[leg].score) for hit in result.hits if leg in hit.legs]
                    advance(done)
        return out


def _fused(rankings: Mapping[str, Mapping[str, list[tuple[str, float]]]], query_ids: Iterable[str], rrf_k: float,
           weights: Mapping[str, float]) -> dict[str, list[str]]:
    """Top ten per query from the engine's own fusion of fixed leg rankings."""
    out = {}
    for q in query_ids:
        legs = {leg: (lambda n, r=by_query[q]: r[:n]) for leg, by_query in rankings.items()}
        depth = max(len(by_query[q]) for by_query in rankings.values())
        out[q] = [c.key for c in engine.rank(legs, depth, TOP, rrf_k=rrf_k, weights=dict(weights))]
    return out


def tune(
    datasets: Dataset | str | Path | Sequence[Dataset | str | Path],
    group_sep: str | None = None,
    metric: str = "nDCG@10",
    k1_grid: Sequence[float] = K1_GRID,
    b_grid: Sequence[float] = B_GRID,
    rrf_k_grid: Sequence[float] = RRF_K_GRID,
    keyword_weights: Sequence[float] = KEYWORD_WEIGHTS,
    vector_weights: Sequence[float] = VECTOR_WEIGHTS,
    progress: bool = True,
    limit_queries: int | None = None,
) -> dict:
    """Sweep on one or more collections; return the best setting by mean ``metric`` and the evidence.

    ``group_sep`` applies to every collection (ids without the separator are simply not grouped).
    The result's ``best`` holds ``bm25_k1``, ``bm25_b``, ``rrf_k`` and ``weights``, ready for
    ``Store.configure`` or :func:`write_config`. Without the embeddings extra the fusion stage
    tunes the lexical hybrid (keyword + bm25) and ``semantic`` says so.
    """
    if metric not in OBJECTIVES:
        raise InvalidInput(f"cannot tune for {metric!r}; choose one of {', '.join(OBJECTIVES)}")
    sources = list(datasets) if isinstance(datasets, (list, tuple)) else [datasets]
    if not sources:
        raise InvalidInput("give at least one collection to tune on")
    loaded = [_dataset(s) for s in sources]
    if limit_queries is not None:
        loaded = [d.limit_queries(limit_queries) for d in loaded]
    for data in loaded:
        if not any(data.is_answerable(q) for q in data.queries):
            raise InvalidInput(f"{data.name} has no query with a relevant document; nothing to tune on")
    semantic = semantic_available()
    legs = ["keyword", "bm25"] + (["vector"] if semantic else [])

    with Progress(progress) as bar, ExitStack() as stack:
        sets = [_Collection(d, stack.enter_context(loaded_store(d, group_sep, bar, semantic=semantic)), group_sep)
                for d in loaded]
        config = sets[0].store.config
        defaults = {"bm25_k1": config.bm25_k1, "bm25_b": config.bm25_b, "rrf_k": config.rrf_k,
                    "weights": dict(config.weights)}
        per_set: dict[str, dict] = {c.data.name: {"default": c.run("hybrid", defaults, bar)} for c in sets}

        # 1. BM25 k1/b on the bm25 mode
        bm25_grid = []
        for k1, b in _default_first([(config.bm25_k1, config.bm25_b)], [(k, b) for k in k1_grid for b in b_grid]):
            scores = {c.data.name: c.run("bm25", {"bm25_k1": k1, "bm25_b": b}, bar)[metric] for c in sets}
            bm25_grid.append({"bm25_k1": k1, "bm25_b": b, metric: _avg(scores), "by_dataset": scores})
        best_bm25 = max(bm25_grid, key=lambda r: r[metric])  # max keeps the first of equals: the default
        lexical = {"bm25_k1": best_bm25["bm25_k1"], "bm25_b": best_bm25["bm25_b"]}

        # 2. fusion settings over fixed leg rankings, fused by the engine's own function
        rankings = {}
        for c in sets:
            c.store.configure(persist=False, **lexical)
            rankings[c.data.name] = c.leg_rankings(legs, bar)
            per_set[c.data.name]["legs"] = {
                leg: c.scores({q: [doc for doc, _ in hits] for q, hits in by_query.items()})
                for leg, by_query in rankings[c.data.name].items()
            }
        fusion_grid = []
        candidates = _default_first(
            [(defaults["rrf_k"], defaults["weights"])],
            [(k, w) for k in rrf_k_grid for w in _weights(keyword_weights, vector_weights, semantic)],
        )
        with bar.task("fusion sweep", len(candidates)) as advance:
            for done, (k, weights) in enumerate(candidates, start=1):
                scores = {c.data.name: c.score(_fused(rankings[c.data.name], c.answerable, k, weights), metric)
                          for c in sets}
                fusion_grid.append({"rrf_k": k, "weights": weights, metric: _avg(scores), "by_dataset": scores})
                advance(done)
        winner = max(fusion_grid, key=lambda r: r[metric])
        best = {**lexical, "rrf_k": winner["rrf_k"], "weights": winner["weights"]}

        # 3. the chosen setting end to end, as users will run it
        for c in sets:
            per_set[c.data.name]["best"] = c.run("hybrid", best, bar)
            per_set[c.data.name]["sweep_estimate"] = round(winner["by_dataset"][c.data.name], 4)

    return {
        "datasets": [d.name for d in loaded],
        "metric": metric,
        "semantic": semantic,
        "default": defaults,
        "best": best,
        "default_score": _avg({n: s["default"][metric] for n, s in per_set.items()}),
        "best_score": _avg({n: s["best"][metric] for n, s in per_set.items()}),
        "per_dataset": per_set,
        "bm25_grid": bm25_grid,
        "fusion_grid": sorted(fusion_grid, key=lambda r: -r[metric]),
    }


def _avg(scores: Mapping[str, float | None]) -> float:
    values = [v or 0.0 for v in scores.values()]
    return round(sum(values) / len(values), 4)


def _weights(keyword: Iterable[float], vector: Iterable[float], semantic: bool) -> list[dict[str, float]]:
    """Weights relative to bm25 = 1; the vector weight only varies when that leg can run."""
    vectors = list(vector) if semantic else [1.0]
    return [{"keyword": k, "bm25": 1.0, "vector": v} for k in keyword for v in vectors]


def _default_first(defaults: list, grid: Iterable) -> list:
    """The current setting first, then the rest of the grid: on a tie, what is already there stays."""
    return defaults + [g for g in grid if g not in defaults]


def write_config(store_path: str | Path, settings: Mapping) -> dict:
    """Persist tuned settings (``bm25_k1``, ``bm25_b``, ``rrf_k``, ``weights``) into a store's config."""
    unknown = set(settings) - set(TUNABLE)
    if unknown:
        raise InvalidInput(f"not a tunable setting: {', '.join(sorted(unknown))}")
    with kenning.open_store(store_path) as store:
        return store.configure(persist=True, **settings).model_dump(include=set(TUNABLE))
