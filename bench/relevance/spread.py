"""Fusion with the vector leg's evidence partly relative to the query's own cosine spread, fifteenth
pass: ``cos' = (1 - rho) * (cos - f) / (1 - f) + rho * (cos - m) / (top - m)``, where ``top`` is the
vector leg's best cosine for this query and ``m`` its cosine at rank ``kth`` (a query-relative floor:
a leg whose best hit stands out of its own list counts more); and ``g``: alpha lowered by
``g * (spread - s0)`` (not below ``amin``) where spread = top - m. Replayed on fusecap.py's captures
(the shipped fusion, lone-term weight included, is rho 0 / g 0), margin of hybrid nDCG@10 over the
better of the bm25 and semantic modes in eval/baselines, and the memory sets' paraphrase questions.
    python bench/relevance/fusecap.py memval2 memval builtin .../med .../cranfield .../npl .../locomo-dev .../scifact-train
    python bench/relevance/spread.py
"""
import itertools
import json
import sys
from pathlib import Path

from fusereplay import load, ndcg10

NAMES = ["builtin", "memval", "memval2", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
BASELINES = Path(__file__).resolve().parents[2] / "eval" / "baselines"


def better_mode(name):
    modes = json.loads((BASELINES / f"{name}.json").read_text())["modes"]
    return max(modes["bm25"]["nDCG@10"], modes["semantic"]["nDCG@10"])


def fuse(row, alpha=0.78, cos_floor=0.1, power=3.0, bm25_share=0.5, lone=0.4, rho=0.0, kth=10, g=0.0, s0=0.1,
         amin=0.5):
    rankings, coverage = row["rankings"], row["coverage"]
    bm25_of, vector_of = dict(rankings.get("bm25", [])), dict(rankings.get("vector", []))
    best_bm25 = max(bm25_of.values(), default=0.0)
    listed = rankings.get("vector", [])
    top = listed[0][1] if listed else 0.0
    m = listed[min(kth, len(listed)) - 1][1] if listed else 0.0
    if g:
        alpha = max(amin, min(alpha, alpha - g * ((top - m) - s0)))
    best_rank = {}
    for ranking in rankings.values():
        for rank, (key, _) in enumerate(ranking, 1):
            best_rank[key] = min(rank, best_rank.get(key, rank))
    scores = {}
    for key in best_rank:
        lexical = coverage.get(key, 0.0) ** power
        if best_bm25 > 0:
            b = bm25_of.get(key)
            lexical *= (1 - bm25_share) + bm25_share * (b / best_bm25 if b is not None else 0.0)
        if key in row["lone"]:
            lexical *= lone
        v = vector_of.get(key)
        semantic = max(0.0, v - cos_floor) / (1 - cos_floor) if v is not None else 0.0
        if rho and v is not None and top > m:
            semantic = (1 - rho) * semantic + rho * max(0.0, v - m) / (top - m)
        scores[key] = alpha * lexical + (1 - alpha) * semantic
    return sorted(scores, key=lambda k: (-scores[k], best_rank[k], k))


def evaluate(caps, **settings):
    """Per collection: (nDCG@10, its paraphrase questions' nDCG@10 or None)."""
    out = {}
    for name, cap in caps.items():
        every, paraphrase = [], []
        for qid, row in cap["rows"].items():
            judged = cap["qrels"].get(qid)
            value = judged and ndcg10(row["shipped"] if row["rankings"] is None else fuse(row, **settings), judged)
            if value is None or not judged:
                continue
            every.append(value)
            if cap["kinds"].get(qid) == "paraphrase":
                paraphrase.append(value)
        out[name] = (sum(every) / len(every), sum(paraphrase) / len(paraphrase) if paraphrase else None)
    return out


def show(tag, out, best):
    margins = {n: out[n][0] - best[n] for n in out}
    print(f"{tag:24s} smallest {min(margins.values()):+.4f} | " + " ".join(f"{n[:7]} {v:+.4f}" for n, v in margins.items())
          + f" | paraphrases memval {out['memval'][1]:.3f} memval2 {out['memval2'][1]:.3f}", flush=True)


if __name__ == "__main__":
    names = sys.argv[1:] or NAMES
    caps = {n: load(n) for n in names}
    best = {n: better_mode(n) for n in names}
    show("shipped", evaluate(caps), best)
    for rho, kth in itertools.product((.2, .4, .6), (5, 10, 20, 50)):
        show(f"rho {rho} kth {kth}", evaluate(caps, rho=rho, kth=kth), best)
    for g, s0, kth in itertools.product((.5, 1, 2), (.05, .1, .15, .2), (10, 50)):
        show(f"g {g} s0 {s0} kth {kth}", evaluate(caps, g=g, s0=s0, kth=kth), best)
