"""Sweep BM25 k1/b, RRF k and leg weights on a development collection and pick the best setting.

Everything tuned here is read at query time (``Store.configure(persist=False, …)``), so the
corpus is indexed once and each setting only re-runs the queries. The sweep is staged rather
than a full grid: BM25's k1/b first (on the ``bm25`` mode), then the leg weights of ``hybrid``
at the default RRF k, then RRF k with the best weights - about 40 runs instead of several
hundred. Queries are ranked to depth 10, all an @10 objective needs (legs still fetch their own
``leg_depth`` candidates before fusion, so the fused top ten is the same as at depth 100).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import kenning
from kenning.errors import InvalidInput
from kenning.store.store import Store

from .datasets import Dataset
from .harness import Progress, _dataset, loaded_store, run_mode, semantic_available, summarize

K1_GRID = (0.6, 0.9, 1.2, 1.5, 2.0)
B_GRID = (0.3, 0.5, 0.75, 0.9)
RRF_K_GRID = (5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
KEYWORD_WEIGHTS = (0.0, 0.5, 1.0)
VECTOR_WEIGHTS = (0.5, 1.0, 1.5, 2.0, 3.0)
OBJECTIVES = ("nDCG@10", "R@10", "MRR@10")
TUNING_DEPTH = 10


def _score(store: Store, data: Dataset, mode: str, group_sep: str | None, settings: Mapping, metric: str,
           bar: Progress) -> dict:
    store.configure(persist=False, **settings)
    row = summarize(data, run_mode(store, data, mode, group_sep, TUNING_DEPTH, bar))
    return {"settings": dict(settings), "mode": mode, metric: row[metric],
            "scores": {m: row[m] for m in OBJECTIVES}}


def _best(rows: list[dict], metric: str) -> dict:
    """The best row; on a tie the earliest, so the grid's order (defaults first) decides."""
    return max(rows, key=lambda r: (r[metric] if r[metric] is not None else -1.0, -rows.index(r)))


def tune(
    dataset: Dataset | str | Path,
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
    """Sweep and return ``{"best": {settings…}, "best_scores", "default_scores", "bm25_grid", "fusion_grid"}``.

    ``best`` holds ``bm25_k1``, ``bm25_b``, ``rrf_k`` and ``weights``, ready for
    ``Store.configure`` or :func:`write_config`. Without the embeddings extra the fusion stage
    tunes the lexical hybrid (keyword + bm25) and says so in ``semantic``.
    """
    if metric not in OBJECTIVES:
        raise InvalidInput(f"cannot tune for {metric!r}; choose one of {', '.join(OBJECTIVES)}")
    data = _dataset(dataset)
    if limit_queries is not None:
        data = data.limit_queries(limit_queries)
    if not any(data.is_answerable(q) for q in data.queries):
        raise InvalidInput(f"{data.name} has no query with a relevant document; nothing to tune on")
    semantic = semantic_available()
    with Progress(progress) as bar, loaded_store(data, group_sep, bar, semantic=semantic) as store:
        default = store.config
        defaults = {"bm25_k1": default.bm25_k1, "bm25_b": default.bm25_b, "rrf_k": default.rrf_k,
                    "weights": dict(default.weights)}
        default_row = _score(store, data, "hybrid", group_sep, defaults, metric, bar)

        bm25_grid = [
            _score(store, data, "bm25", group_sep, {"bm25_k1": k1, "bm25_b": b}, metric, bar)
            for k1, b in _default_first([(default.bm25_k1, default.bm25_b)], _pairs(k1_grid, b_grid))
        ]
        bm25 = _best(bm25_grid, metric)["settings"]

        weight_grid = [
            _score(store, data, "hybrid", group_sep,
                   {**bm25, "rrf_k": default.rrf_k, "weights": weights}, metric, bar)
            for weights in _default_first([defaults["weights"]], _weights(keyword_weights, vector_weights, semantic))
        ]
        weights = _best(weight_grid, metric)["settings"]["weights"]
        k_grid = [
            _score(store, data, "hybrid", group_sep, {**bm25, "rrf_k": k, "weights": weights}, metric, bar)
            for k in _default_first([default.rrf_k], rrf_k_grid)
        ]
        best = _best(k_grid + weight_grid, metric)
    return {
        "dataset": data.name,
        "metric": metric,
        "semantic": semantic,
        "best": best["settings"],
        "best_scores": best["scores"],
        "default": defaults,
        "default_scores": default_row["scores"],
        "bm25_grid": bm25_grid,
        "fusion_grid": weight_grid + k_grid,
    }


def _pairs(xs: Iterable[float], ys: Iterable[float]) -> list[tuple[float, float]]:
    return [(x, y) for x in xs for y in ys]


def _weights(keyword: Iterable[float], vector: Iterable[float], semantic: bool) -> list[dict[str, float]]:
    """Weight settings relative to bm25 = 1; the vector weight only varies when that leg can run."""
    vectors = list(vector) if semantic else [1.0]
    return [{"keyword": k, "bm25": 1.0, "vector": v} for k in keyword for v in vectors]


def _default_first(defaults: list, grid: Iterable) -> list:
    """The current setting first, then the grid without it: a tie keeps what is already there."""
    return defaults + [g for g in grid if g not in defaults]


def write_config(store_path: str | Path, settings: Mapping) -> dict:
    """Persist tuned settings (``bm25_k1``, ``bm25_b``, ``rrf_k``, ``weights``) into a store's config."""
    allowed = {"bm25_k1", "bm25_b", "rrf_k", "weights"}
    unknown = set(settings) - allowed
    if unknown:
        raise InvalidInput(f"not a tunable setting: {', '.join(sorted(unknown))}")
    with kenning.open_store(store_path) as store:
        return store.configure(persist=True, **settings).model_dump(include=allowed)
