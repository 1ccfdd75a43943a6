"""Tune BM25 k1/b and hybrid fusion on development collections, for all of them at once.

A setting is chosen by its mean score over every collection given, never by one alone, and the
result shows each collection's figures for the defaults, the chosen setting and each single leg -
so "it helps here and hurts there" is visible rather than averaged away.

Hybrid search has two fusion families (``StoreConfig.fusion``): weighted RRF (``rrf_k``,
``weights``) and absolute evidence (``evidence_alpha``, ``evidence_cos_floor``, ``evidence_power``).
Both are swept when the vector leg runs; without it hybrid is the BM25 leg alone
(``engine.legs_for_mode``), so only k1/b are tuned. To stay affordable on two cores:

1. BM25 k1/b are read at query time (``Store.configure(persist=False)``), so each collection is
   indexed once and each k1/b pair only re-runs the queries in ``bm25`` mode, to depth 10.
2. Fusion candidates are scored without re-running the legs: each leg's ranking is fetched once
   through ``Store.rank`` (one single-leg mode per leg, to the store's ``leg_depth``) and every
   candidate setting is fused by the engine's own ``retrieval.engine.rank`` - the function hybrid
   search calls. Evidence fusion also needs each candidate document's term coverage; one hybrid
   run with ``evidence_alpha = 1`` and ``evidence_power = 1`` returns exactly that as the score.
3. The best setting of each family is then measured end to end through
   ``Store.rank(mode="hybrid")`` and competes with the measured defaults; those measured figures
   decide and are what is reported (so the result is never worse than the defaults). The sweep's
   own estimate is kept beside them (``sweep_estimate``), so a gap between the two would show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

import kenning
from kenning.errors import InvalidInput
from kenning.retrieval import engine
from kenning.memory.facade import Store

from .datasets import Dataset, checked_group_sep
from .harness import Progress, as_dataset, loaded_store, query_scopes, run_mode, summarize
from .metrics import mean, per_query

K1_GRID = (0.9, 1.2, 1.5, 2.0)
B_GRID = (0.5, 0.75, 0.9)
RRF_K_GRID = (1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
KEYWORD_WEIGHTS = (0.0, 0.2, 0.5, 1.0)
VECTOR_WEIGHTS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
ALPHA_GRID = (0.2, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8)
COS_FLOOR_GRID = (0.0, 0.1, 0.2, 0.3)
POWER_GRID = (1.0, 1.5, 2.0, 3.0)
OBJECTIVES = ("nDCG@10", "R@10", "MRR@10")
TUNABLE = ("bm25_k1", "bm25_b", "fusion", "rrf_k", "weights", "evidence_alpha", "evidence_cos_floor", "evidence_power")
TOP = 10
# The mode that runs exactly one leg, per leg name.
LEG_MODES = {"keyword": "keyword", "bm25": "bm25", "vector": "semantic"}

Ranking = list[tuple[str, float]]


class _Collection:
    """One development collection loaded into its own throwaway store."""

    def __init__(self, data: Dataset, store: Store, group_sep: str | None):
        self.data, self.store, self.group_sep = data, store, group_sep
        self.answerable = [q for q in data.queries if data.is_answerable(q)]
        self.rankings: dict[str, dict[str, Ranking]] = {}
        self.coverage: dict[str, dict[str, float]] = {}

    def scores(self, ranked: Mapping[str, Sequence[str]]) -> dict[str, float]:
        table = per_query(self.data.qrels, {q: list(r)[:TOP] for q, r in ranked.items()}, self.answerable)
        return {m: round(mean(table[m]) or 0.0, 4) for m in OBJECTIVES}

    def run(self, mode: str, settings: Mapping, bar: Progress) -> dict[str, float]:
        """One mode's scores with ``settings`` applied, end to end through ``Store.rank``."""
        self.store.configure(persist=False, **settings)
        row = summarize(self.data, run_mode(self.store, self.data, mode, self.group_sep, TOP, bar))
        return {m: row[m] for m in OBJECTIVES}

    def _each_query(self, label: str, mode: str, depth: int, bar: Progress):
        with bar.task(f"{self.data.name}: {label}", len(self.data.queries)) as advance:
            for done, query in enumerate(self.data.queries.values(), start=1):
                yield query.id, self.store.rank(query.text, mode=mode, depth=depth,
                                                scopes=query_scopes(query.id, self.group_sep))
                advance(done)

    def fetch_legs(self, legs: Sequence[str], bar: Progress) -> None:
        """Each leg's ranking per query (doc id, native score) to the store's leg depth."""
        depth = self.store.config.leg_depth
        for leg in legs:
            self.rankings[leg] = {
                q: [(hit.id, hit.legs[leg].score) for hit in result.hits if leg in hit.legs]
                for q, result in self._each_query(f"{leg} leg", LEG_MODES[leg], depth, bar)
            }

    def fetch_coverage(self, bar: Progress) -> None:
        """Every fusion candidate's term coverage: the evidence score itself when alpha = power = 1."""
        depth = self.store.config.leg_depth * len(self.rankings)
        self.store.configure(persist=False, fusion="evidence", evidence_alpha=1.0, evidence_power=1.0)
        self.coverage = {q: {hit.id: hit.score for hit in result.hits}
                         for q, result in self._each_query("term coverage", "hybrid", depth, bar)}

    def fused(self, **fusion: object) -> dict[str, list[str]]:
        """Top ten per answerable query from ``engine.rank`` over the fixed leg rankings."""
        out, spelt = {}, self.data.collection_ids  # the store's ids in the qrels' spelling
        for q in self.answerable:
            legs = {leg: (lambda n, r=by_query[q]: r[:n]) for leg, by_query in self.rankings.items()}
            depth = max(len(by_query[q]) for by_query in self.rankings.values())
            coverage = self.coverage.get(q, {})
            # the fetched coverage is a hybrid score, so a lone-term text's weight is in it already: none named here
            ranked = engine.rank(legs, depth, TOP, coverage_of=lambda keys: (coverage, frozenset()), **fusion)
            out[q] = [spelt.get(c.key, c.key) for c in ranked]
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
    alpha_grid: Sequence[float] = ALPHA_GRID,
    cos_floor_grid: Sequence[float] = COS_FLOOR_GRID,
    power_grid: Sequence[float] = POWER_GRID,
    progress: bool = True,
    limit_queries: int | None = None,
) -> dict:
    """Sweep on one or more collections; return the best setting by mean ``metric`` and the evidence.

    ``group_sep`` applies to every collection (ids without the separator are simply not grouped).
    ``best`` holds only tunable settings, ready for ``Store.configure`` or :func:`write_config`.
    Without the embeddings extra only BM25 and the lexical hybrid's RRF are tuned (``semantic``).
    """
    if metric not in OBJECTIVES:
        raise InvalidInput(f"cannot tune for {metric!r}; choose one of {', '.join(OBJECTIVES)}")
    group_sep = checked_group_sep(group_sep)
    sources = list(datasets) if isinstance(datasets, (list, tuple)) else [datasets]
    if not sources:
        raise InvalidInput("give at least one collection to tune on")
    loaded = [as_dataset(s) for s in sources]
    if limit_queries is not None:
        if limit_queries < 1:  # a negative slice would tune on all but the last N, silently
            raise InvalidInput("--limit-queries must be at least 1")
        loaded = [d.limit_queries(limit_queries) for d in loaded]
    for data in loaded:
        if not any(data.is_answerable(q) for q in data.queries):
            raise InvalidInput(f"{data.name} has no query with a relevant document; nothing to tune on")
        grouped, outside = data.outside_their_group(group_sep)
        if grouped and outside == grouped:  # as eval run: a sweep over queries that cannot find their answers
            raise InvalidInput(f"--group-sep {group_sep!r}: every grouped query of {data.name} has a relevant document "
                               "outside its group (the part of the id before the separator), where it can never be "
                               "found; check the separator against the ids")
    semantic = kenning.embeddings_available()
    legs = ["keyword", "bm25"] + (["vector"] if semantic else [])

    with Progress(progress) as bar, ExitStack() as stack:
        sets = [_Collection(d, stack.enter_context(loaded_store(d, group_sep, bar, semantic=semantic)), group_sep)
                for d in loaded]
        defaults = sets[0].store.config.model_dump(include=set(TUNABLE))
        per_set: dict[str, dict] = {c.data.name: {"default": c.run("hybrid", defaults, bar)} for c in sets}

        # 1. BM25 k1/b on the bm25 mode
        bm25_grid = []
        for k1, b in _default_first([(defaults["bm25_k1"], defaults["bm25_b"])], [(k, b) for k in k1_grid for b in b_grid]):
            scores = {c.data.name: c.run("bm25", {"bm25_k1": k1, "bm25_b": b}, bar)[metric] for c in sets}
            bm25_grid.append({"bm25_k1": k1, "bm25_b": b, metric: _avg(scores), "by_dataset": scores})
        best_bm25 = max(bm25_grid, key=lambda r: r[metric])  # max keeps the first of equals: the default
        lexical = {"bm25_k1": best_bm25["bm25_k1"], "bm25_b": best_bm25["bm25_b"]}

        # 2. fixed leg rankings (and coverage) at the chosen k1/b
        for c in sets:
            c.store.configure(persist=False, **{**defaults, **lexical})
            c.fetch_legs(legs, bar)
            per_set[c.data.name]["legs"] = {
                leg: c.scores({q: [doc for doc, _ in hits] for q, hits in by_query.items()})
                for leg, by_query in c.rankings.items()
            }
            if semantic:
                c.fetch_coverage(bar)

        # 3. sweep both fusion families over them
        candidates = []  # without the vector leg no fusion runs: hybrid is BM25
        if semantic:
            candidates += [{"fusion": "rrf", "rrf_k": k, "weights": w}
                           for k in _default_first([defaults["rrf_k"]], rrf_k_grid)
                           for w in _default_first([defaults["weights"]], _weights(keyword_weights, vector_weights))]
            candidates += [{"fusion": "evidence", "evidence_alpha": a, "evidence_cos_floor": f, "evidence_power": p}
                           for a in _default_first([defaults["evidence_alpha"]], alpha_grid)
                           for f in _default_first([defaults["evidence_cos_floor"]], cos_floor_grid)
                           for p in _default_first([defaults["evidence_power"]], power_grid)]
        fusion_grid = []
        with bar.task("fusion sweep", len(candidates)) as advance:
            for done, setting in enumerate(candidates, start=1):
                scores = {c.data.name: c.scores(c.fused(**_engine_args(setting)))[metric] for c in sets}
                fusion_grid.append({**setting, metric: _avg(scores), "by_dataset": scores})
                advance(done)

        # 4. the best of each family, measured end to end as users will run it, against the defaults
        measured = [(defaults, {c.data.name: per_set[c.data.name]["default"] for c in sets}, None)]
        for family in ("rrf", "evidence") if semantic else ():
            winner = max((r for r in fusion_grid if r["fusion"] == family), key=lambda r: r[metric])
            setting = {**defaults, **lexical, **{k: v for k, v in winner.items() if k in TUNABLE}}
            figures = {c.data.name: c.run("hybrid", setting, bar) for c in sets}
            measured.append((setting, figures, winner["by_dataset"]))
        if not semantic and lexical != {"bm25_k1": defaults["bm25_k1"], "bm25_b": defaults["bm25_b"]}:
            setting = {**defaults, **lexical}
            measured.append((setting, {c.data.name: c.run("hybrid", setting, bar) for c in sets}, None))
        best, figures, estimate = max(
            measured, key=lambda m: _avg({n: f[metric] for n, f in m[1].items()}))
        for name, row in figures.items():
            per_set[name]["best"] = row
            per_set[name]["sweep_estimate"] = None if estimate is None else round(estimate[name], 4)

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


def _engine_args(setting: Mapping) -> dict:
    """A fusion setting as ``engine.rank`` keyword arguments."""
    if setting["fusion"] == "evidence":
        return {"evidence": {"alpha": setting["evidence_alpha"], "cos_floor": setting["evidence_cos_floor"],
                             "power": setting["evidence_power"]}}
    return {"rrf_k": setting["rrf_k"], "weights": dict(setting["weights"])}


def _avg(scores: Mapping[str, float | None]) -> float:
    values = [v or 0.0 for v in scores.values()]
    return round(sum(values) / len(values), 4)


def _weights(keyword: Iterable[float], vector: Iterable[float]) -> list[dict[str, float]]:
    """Weights relative to bm25 = 1."""
    vectors = list(vector)
    return [{"keyword": k, "bm25": 1.0, "vector": v} for k in keyword for v in vectors]


def _default_first(defaults: list, grid: Iterable) -> list:
    """The current setting first, then the rest of the grid: on a tie, what is already there stays."""
    return defaults + [g for g in grid if g not in defaults]


def write_config(store_path: str | Path, settings: Mapping) -> dict:
    """Persist tuned settings (any of ``TUNABLE``) into a store's config."""
    unknown = set(settings) - set(TUNABLE)
    if unknown:
        raise InvalidInput(f"not a tunable setting: {', '.join(sorted(unknown))}")
    with kenning.open_store(store_path) as store:
        return store.configure(persist=True, **settings).model_dump(include=set(TUNABLE))
