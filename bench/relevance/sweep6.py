"""Evidence fusion whose lexical part also weighs BM25 (term frequency, length) relative to the
query's best BM25 candidate; swept with the evidence parameters, pickled for loo.py.

lexical = coverage**p * ((1 - lam) + lam * (bm25 / best bm25 of the query)**q)
    python bench/relevance/sweep6.py builtin med cranfield npl locomo-dev scifact-train
SWEEP6_Q1=1 sweeps the BM25 ratio's exponent q at 1 only (what the shipped fusion uses).
"""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
import sys, pickle, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from sweep import Coll, leg
from sweep5 import sem_of


def evbm(a, fl, p, lam, q=1.0):
    def fn(f):
        m = f["bm"].max()
        bn = (f["bm"] / m) ** q if m > 0 else f["bm"]
        return a * f["cov"] ** p * ((1 - lam) + lam * bn) + (1 - a) * sem_of(f, fl)
    return fn


if __name__ == "__main__":
    names = sys.argv[1:]
    colls = [Coll(n) for n in names]
    base = {c.name: {l: c.score(leg(l)) for l in ("bm25", "vector")} for c in colls}
    res = {}
    q_grid = (1,) if os.environ.get("SWEEP6_Q1") else (0.5, 1, 2)
    grid = list(itertools.product((0.7, 0.75, 0.78, 0.8, 0.85), (0.0, 0.1, 0.2), (2, 3, 4), (0, 0.25, 0.5, 0.75, 1), q_grid))
    for i, key in enumerate(grid):
        if key[3] == 0 and key[4] != 1:
            continue
        res[key] = {c.name: c.score(evbm(*key)) for c in colls}
    pickle.dump({"base": base, "res": res}, open(OUT + "/sweep6-%s.pkl" % "-".join(names), "wb"))
    def margin(key, n): return res[key][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
    for k in sorted(res, key=lambda k: -min(margin(k, n) for n in names))[:12]:
        print(k, "mean %.4f" % np.mean([res[k][n][0] for n in names]), "min margin %.4f" % min(margin(k, n) for n in names), [round(margin(k, n), 4) for n in names])
