"""Fusion families beyond evidence: rank evidence blended in, query-adaptive leg weights.

Legs precomputed by legs.py; every setting scored on every collection, pickled for loo.py.
    python bench/relevance/sweep5.py builtin med cranfield npl locomo-dev scifact-train
"""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
import sys, pickle, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from sweep import Coll, leg


def sem_of(f, fl):
    c = np.nan_to_num(f["cos"], nan=fl)
    return np.clip(c - fl, 0, None) / (1 - fl)


def rrf_norm(f, k, wk):
    """RRF of bm25 + weighted keyword + vector, divided by its maximum (rank 1 everywhere): 0-1."""
    return (1 / (k + f["rbm"]) + wk / (k + f["rkw"]) + 1 / (k + f["rvec"])) * (k + 1) / (2 + wk)


def blend(a, fl, p, beta, k=60, wk=0.2):
    """(1 - beta) * evidence + beta * normalised RRF."""
    def fn(f):
        ev = a * f["cov"] ** p + (1 - a) * sem_of(f, fl)
        return (1 - beta) * ev + beta * rrf_norm(f, k, wk)
    return fn


def adaptive(a, fl, p, g):
    """alpha moved per query by the legs' own best evidence: lexical best cov^p vs vector best cos'."""
    def fn(f):
        lex = f["cov"] ** p
        sem = sem_of(f, fl)
        lc, vc = lex.max(), sem.max()
        w = a * lc ** g / (a * lc ** g + (1 - a) * vc ** g) if (lc + vc) > 0 else a
        return w * lex + (1 - w) * sem
    return fn


if __name__ == "__main__":
    names = sys.argv[1:]
    colls = [Coll(n) for n in names]
    base = {c.name: {l: c.score(leg(l)) for l in ("bm25", "vector")} for c in colls}
    settings = {}
    for a, fl, p in itertools.product((0.6, 0.7, 0.75, 0.8, 0.85), (0.0, 0.1, 0.2), (2, 3, 4)):
        for beta in (0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
            for k in (10, 30, 60):
                if beta == 0 and k != 60:
                    continue
                settings[("blend", a, fl, p, beta, k)] = blend(a, fl, p, beta, k)
        for g in (0.5, 1, 2):
            settings[("adaptive", a, fl, p, g)] = adaptive(a, fl, p, g)
    settings[("rrf", 60)] = blend(0.75, 0.1, 3, 1.0, 60)
    res = {}
    for i, (key, fn) in enumerate(settings.items()):
        res[key] = {c.name: c.score(fn) for c in colls}
        if i % 100 == 0:
            print(i, len(settings), flush=True)
    pickle.dump({"base": base, "res": res}, open(OUT + "/sweep5-%s.pkl" % "-".join(names), "wb"))
    def margin(key, n): return res[key][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
    print({n: {l: round(v[0], 4) for l, v in b.items()} for n, b in base.items()})
    for fam in ("blend", "adaptive", "rrf"):
        keys = [k for k in res if k[0] == fam]
        print("family", fam)
        for k in sorted(keys, key=lambda k: -min(margin(k, n) for n in names))[:8]:
            print(" ", k, "mean %.4f" % np.mean([res[k][n][0] for n in names]), "min margin %.4f" % min(margin(k, n) for n in names), [round(margin(k, n), 4) for n in names])
