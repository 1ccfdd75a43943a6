"""Scratch: fusion sweep over precomputed legs, leave-one-collection-out."""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import pickle, sys, itertools, json
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
NAMES = ["builtin", "med", "cranfield", "npl", "scifact-train", "locomo-dev"]
K1 = 1.2

class Coll:
    def __init__(self, name):
        r = pickle.load(open(OUT + f"/legs-{name}.pkl", "rb"))
        self.name = name
        ids = r["ids"]
        self.qrels = r["qrels"]
        self.ans = [q for q in r["queries"] if any(g > 0 for g in self.qrels.get(q, {}).values())]
        self.Q = []
        for q in self.ans:
            L = r["legs"][q]
            keys = list(dict.fromkeys([k for k, _ in L["bm25"]] + [k for k, _ in L["keyword"]] + [k for k, _ in L["vector"]]))
            idx = {k: i for i, k in enumerate(keys)}
            n = len(keys)
            f = {"cov": np.array([L["coverage"].get(k, 0.0) for k in keys]),
                 "cos": np.full(n, np.nan), "bm": np.zeros(n), "rbm": np.full(n, np.inf),
                 "rkw": np.full(n, np.inf), "rvec": np.full(n, np.inf)}
            for rank, (k, s) in enumerate(L["bm25"], 1): f["bm"][idx[k]] = s; f["rbm"][idx[k]] = rank
            for rank, (k, s) in enumerate(L["keyword"], 1): f["rkw"][idx[k]] = rank
            for rank, (k, s) in enumerate(L["vector"], 1): f["cos"][idx[k]] = s; f["rvec"][idx[k]] = rank
            f["best"] = np.minimum(np.minimum(f["rbm"], f["rkw"]), f["rvec"])
            rel = self.qrels[q]
            f["gain"] = np.array([(2 ** rel.get(ids[k], 0) - 1) if rel.get(ids[k], 0) > 0 else 0 for k in keys], float)
            f["isrel"] = f["gain"] > 0
            f["keys"] = np.array(keys)
            ideal = sorted([2 ** g - 1 for g in rel.values() if g > 0], reverse=True)[:10]
            f["idcg"] = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
            f["nrel"] = sum(1 for g in rel.values() if g > 0)
            self.Q.append(f)

    def score(self, fn, k=10):
        nd = rc = 0.0
        disc = 1 / np.log2(np.arange(2, k + 2))
        for f in self.Q:
            s = fn(f)
            if s is None:
                continue
            order = np.lexsort((f["keys"], f["best"], -s))[:k]
            g = f["gain"][order]
            nd += (g * disc[: len(g)]).sum() / f["idcg"] if f["idcg"] else 0
            rc += f["isrel"][order].sum() / f["nrel"]
        return nd / len(self.Q), rc / len(self.Q)

def leg(name):
    r = {"bm25": "rbm", "keyword": "rkw", "vector": "rvec"}[name]
    return lambda f: np.where(np.isfinite(f[r]), -f[r], -1e9)

def rrf(k, wk, wv):
    def fn(f):
        s = 1 / (k + f["rbm"]) + wk / (k + f["rkw"]) + wv / (k + f["rvec"])
        return s
    return fn

def evidence(alpha, floor, power, lex="cov"):
    def fn(f):
        c = np.nan_to_num(f["cos"], nan=floor)
        sem = np.clip(c - floor, 0, None) / (1 - floor)
        return alpha * f[lex] ** power + (1 - alpha) * sem
    return fn

def cc(alpha, floor):
    """convex combination, per-query max-normalised bm25, floor-anchored cosine / query max."""
    def fn(f):
        bm = f["bm"] / f["bm"].max() if f["bm"].max() > 0 else f["bm"]
        c = np.nan_to_num(f["cos"], nan=floor)
        top = np.nanmax(f["cos"]) if np.isfinite(f["cos"]).any() else 1
        sem = np.clip(c - floor, 0, None) / max(1e-9, top - floor)
        return alpha * bm + (1 - alpha) * sem
    return fn

if __name__ == "__main__":
    colls = [Coll(n) for n in sys.argv[1:] or NAMES]
    base = {}
    for c in colls:
        base[c.name] = {l: c.score(leg(l)) for l in ("bm25", "keyword", "vector")}
        print(c.name, {l: tuple(round(x, 4) for x in v) for l, v in base[c.name].items()}, flush=True)
    settings = []
    for k in (10, 20, 40, 60, 100):
        for wk in (0, 0.2, 0.5):
            for wv in (0.5, 1, 1.5, 2, 3):
                settings.append((("rrf", k, wk, wv), rrf(k, wk, wv)))
    for a in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        for fl in (0.0, 0.1, 0.2, 0.3):
            for p in (1, 1.5, 2, 3):
                settings.append((("evidence", a, fl, p), evidence(a, fl, p)))
            settings.append((("cc", a, fl), cc(a, fl)))
    res = {}
    for key, fn in settings:
        res[key] = {c.name: c.score(fn) for c in colls}
    pickle.dump({"base": base, "res": res}, open(OUT + "/sweep.pkl", "wb"))
    names = [c.name for c in colls]
    def margin(key, n): return res[key][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
    top = sorted(res, key=lambda k: -np.mean([res[k][n][0] for n in names]))[:15]
    for k in top:
        print(k, round(np.mean([res[k][n][0] for n in names]), 4), "min margin", round(min(margin(k, n) for n in names), 4), [round(res[k][n][0], 4) for n in names])
    top = sorted(res, key=lambda k: -min(margin(k, n) for n in names))[:15]
    print("by min margin")
    for k in top:
        print(k, round(np.mean([res[k][n][0] for n in names]), 4), "min margin", round(min(margin(k, n) for n in names), 4), [round(margin(k, n), 4) for n in names])
