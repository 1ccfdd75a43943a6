"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): a pure function, no I/O.

``score(d) = sum over legs of weight_leg / (k + rank_leg(d))`` with 1-based ranks. Ties are broken
by the best single-leg rank, then by document key, so the order is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RRF_K = 60.0


@dataclass
class Fused:
    key: int
    score: float
    legs: dict[str, tuple[int, float]] = field(default_factory=dict)  # leg -> (rank, native score)


def rrf(
    rankings: dict[str, list[tuple[int, float]]],
    k: float = RRF_K,
    weights: dict[str, float] | None = None,
) -> list[Fused]:
    """Fuse best-first (key, native score) lists from several legs into one best-first list."""
    fused: dict[int, Fused] = {}
    for leg, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for rank, (key, native) in enumerate(ranking, start=1):
            item = fused.setdefault(key, Fused(key, 0.0))
            item.score += weight / (k + rank)
            item.legs[leg] = (rank, native)
    return sorted(
        fused.values(),
        key=lambda f: (-f.score, min(r for r, _ in f.legs.values()), f.key),
    )
