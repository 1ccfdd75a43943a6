import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, pickle
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from sweep import Coll, leg, NAMES
def fam(a, fl, p, s):
    def fn(f):
        c = np.nan_to_num(f["cos"], nan=fl)
        sem = (np.clip(c - fl, 0, None) / (1 - fl)) ** s
        return a * f["cov"] ** p + (1 - a) * sem
    return fn
names = sys.argv[1:]
colls = [Coll(n) for n in names]
base = {c.name: {l: c.score(leg(l)) for l in ("bm25", "vector")} for c in colls}
res = {}
for a in (0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
    for fl in (0.0, 0.1, 0.2, 0.3):
        for p in (2, 3, 4, 5, 6, 8):
            for s in (0.5, 1, 1.5, 2):
                res[(a, fl, p, s)] = {c.name: c.score(fam(a, fl, p, s)) for c in colls}
pickle.dump({"base": base, "res": res}, open(OUT + "/sweep4-%s.pkl" % "-".join(names), "wb"))
def margin(key, n): return res[key][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
top = sorted(res, key=lambda k: -min(margin(k, n) for n in names))[:20]
for k in top:
    print(k, round(np.mean([res[k][n][0] for n in names]), 4), "min margin", round(min(margin(k, n) for n in names), 4), [round(margin(k, n), 4) for n in names])
