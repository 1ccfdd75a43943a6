"""Per-hit label features under a fusion, for answerable queries (top 10) and unanswerable ones
(builtin's own plus other collections' queries, from legs.py's ``<name>-q-<other>`` pickles).

    python bench/relevance/labelfeat.py   # writes $KENNING_RELEVANCE_OUT/labelfeat.pkl
"""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
import sys, pickle, glob
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np


def fuse(L, a=0.78, fl=0.1, p=3.0, lam=0.5):
    """The shipped evidence fusion (retrieval/fusion.py) over one query's precomputed legs."""
    ranks = {leg: {key: i for i, (key, _) in enumerate(L[leg], 1)} for leg in ("bm25", "keyword", "vector")}
    cos, bm = dict(L["vector"]), dict(L["bm25"])
    top_bm = max(bm.values(), default=0.0)
    keys = list(dict.fromkeys([x for x, _ in L["bm25"]] + [x for x, _ in L["keyword"]] + [x for x, _ in L["vector"]]))
    out = []
    for key in keys:
        c = cos.get(key)
        sem = max(0.0, (c if c is not None else fl) - fl) / (1 - fl)
        lex = L["coverage"].get(key, 0.0) ** p
        if top_bm > 0:
            lex *= (1 - lam) + lam * bm.get(key, 0.0) / top_bm
        best = min(ranks[l].get(key, np.inf) for l in ranks)
        out.append((key, a * lex + (1 - a) * sem, c, L["coverage"].get(key, 0.0),
                    ranks["bm25"].get(key, 999), ranks["vector"].get(key, 999), best))
    out.sort(key=lambda h: (-h[1], h[6], h[0]))
    return [h[:6] for h in out]


def rows(pkl, answerable_only):
    r = pickle.load(open(pkl, "rb"))
    ids = r["ids"]
    out = {}
    for q in r["queries"]:
        rel = {d for d, g in r["qrels"].get(q, {}).items() if g > 0}
        if answerable_only and not rel:
            continue
        if not answerable_only and rel:
            continue
        L = r["legs"][q]
        hits = fuse(L)[:10]
        if not hits:
            continue
        top = hits[0][1]
        tcos = max((h[2] for h in hits if h[2] is not None), default=0.0)
        tcov = max(h[3] for h in hits)
        mat = []
        for i, (key, s, cos, cov, rbm, rvec) in enumerate(hits):
            nxt = hits[i + 1][1] if i + 1 < len(hits) else 0.0
            mat.append((i, cos if cos is not None else 0.0, cov, s / top if top > 0 else 0, L["nterms"],
                        rbm, rvec, tcos, tcov, nxt / s if s > 0 else 0, float(ids[key] in rel)))
        out[q] = np.array(mat)
    return out


if __name__ == "__main__":
    data = {}
    for name in ["builtin", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]:
        if os.path.exists(f"{OUT}/legs-{name}.pkl"):
            data[name] = rows(f"{OUT}/legs-{name}.pkl", True)
    unans = {"builtin": rows(f"{OUT}/legs-builtin.pkl", False)}
    for p in glob.glob(f"{OUT}/legs-*-q-*.pkl"):
        unans[os.path.basename(p)[5:-4]] = rows(p, False)
    pickle.dump({"ans": data, "unans": unans}, open(OUT + "/labelfeat.pkl", "wb"))
