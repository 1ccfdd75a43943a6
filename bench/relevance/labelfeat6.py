"""Per-hit label features, sixth pass: everything labelrule5.py reads plus leg ranks, the fused
lead of hit 1 over hit 2, the cosine lead, and the query's length, for hybrid as shipped (spelling.py's
``~ty~fb`` legs: query words respelt, BM25 leg with feedback). One row a hit of the top 10.
    python bench/relevance/labelfeat6.py     # writes $KENNING_RELEVANCE_OUT/labelfeat6.pkl
"""
import os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from labelfeat import fuse
from labelfeat2 import without
from kenning.retrieval import bm25

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
PAIRS = ["med-q-cranfield", "cranfield-q-med", "locomo-dev-q-npl", "builtin-q-locomo-dev",
         "scifact-train-q-locomo-dev", "npl-q-med"]
COLS = ["rank", "cos", "cov", "known", "nmatch", "nterms", "rel", "rbm", "rvec", "gap12", "cosgap",
        "cos2", "idfmass", "y"]


def hits(tag, answerable, remove=False):
    """Per query, an array of its top-10 hits' rows (COLS)."""
    r = pickle.load(open(f"{OUT}/legs-{tag}~ty~fb.pkl", "rb"))
    ids, unknown_idf = r["ids"], bm25.idf(len(r["ids"]), 0)
    out = []
    for q in r["queries"]:
        rel = {d for d, g in r["qrels"].get(q, {}).items() if g > 0}
        if bool(rel) != answerable:
            continue
        L = r["legs"][q]
        if remove:
            L, rel = without(L, {k for k, i in enumerate(ids) if i in rel}), set()
        fused = fuse(L)[:10]
        if not fused:
            continue
        idfs = np.asarray(L["idfs"])
        known = idfs < unknown_idf - 1e-9
        top = fused[0][1]
        cosines = [h[2] or 0.0 for h in fused]
        rows = []
        for i, (key, s, cos, cov, rbm, rvec) in enumerate(fused):
            p = L["present"].get(key)
            p = np.zeros(len(idfs), bool) if p is None else np.asarray(p, bool)
            kc = idfs[p & known].sum() / idfs[known].sum() if known.any() else 0.0
            gap12 = (fused[0][1] - fused[1][1]) / top if len(fused) > 1 and top > 0 else 1.0
            others = [c for j, c in enumerate(cosines) if j != i]
            rows.append((i, cos or 0.0, cov, kc, p.sum(), len(idfs), s / top if top > 0 else 0.0, rbm, rvec,
                         gap12, (cos or 0.0) - max(others, default=0.0), sorted(cosines)[-2] if len(cosines) > 1 else 0.0,
                         idfs.sum(), ids[key] in rel))
        out.append(np.array(rows, float))
    return out


if __name__ == "__main__":
    A = {n: hits(n, True) for n in NAMES}
    U = {"builtin": hits("builtin", False), **{t: hits(t, False) for t in PAIRS}}
    R = {n: hits(n, True, True) for n in NAMES}
    pickle.dump({"cols": COLS, "ans": A, "unans": U, "removed": R}, open(f"{OUT}/labelfeat6.pkl", "wb"))
    print({n: len(v) for n, v in A.items()}, {n: len(v) for n, v in U.items()})
