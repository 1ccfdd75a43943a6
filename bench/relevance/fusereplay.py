"""Replay hybrid fusion variants on fusecap.py's captures: nDCG@10 per collection, in-sample and
leave-one-collection-out.

    python bench/relevance/fusereplay.py builtin memval med cranfield npl locomo-dev scifact-train
"""
import math
import os
import pickle
import sys
from pathlib import Path

from fusevariants import fuse  # noqa: E402  (the shipped fusion before the lone-term weight, and its variants)

OUT = Path(os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance"))


def load(name):
    with open(OUT / f"fusecap-{name}.pkl", "rb") as f:
        return pickle.load(f)


def ndcg10(ranked, judged):
    gains = sorted((2 ** g - 1 for g in judged.values() if g > 0), reverse=True)
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:10]))
    if ideal <= 0:
        return None
    dcg = sum((2 ** judged.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if judged.get(d, 0) > 0)
    return dcg / ideal


def score(cap, fuse, kinds=False):
    per = {}
    for qid, row in cap["rows"].items():
        judged = cap["qrels"].get(qid)
        if not judged:
            continue
        ranked = row["shipped"] if row["rankings"] is None else fuse(row)
        value = ndcg10(ranked, judged)
        if value is not None:
            per[qid] = value
    mean = sum(per.values()) / len(per)
    if not kinds:
        return mean
    by = {}
    for qid, v in per.items():
        by.setdefault(cap["kinds"].get(qid), []).append(v)
    return mean, {k: sum(v) / len(v) for k, v in by.items()}


def legs_only(cap, leg):
    per = []
    for qid, row in cap["rows"].items():
        judged = cap["qrels"].get(qid)
        if not judged:
            continue
        ranked = [] if row["rankings"] is None else [k for k, _ in row["rankings"].get(leg, [])]
        value = ndcg10(ranked, judged)
        if value is not None:
            per.append(value)
    return sum(per) / len(per)


if __name__ == "__main__":
    names = sys.argv[1:]
    caps = {n: load(n) for n in names}
    for n, cap in caps.items():
        shipped = score(cap, lambda row: row["shipped"])
        replay = score(cap, fuse)
        print(f"{n:14s} shipped {shipped:.4f} replay {replay:.4f} bm25-leg {legs_only(cap, 'bm25'):.4f} vector-leg {legs_only(cap, 'vector'):.4f}")
