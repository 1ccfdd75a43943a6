"""Per-hit label features (hybrid, evidence fusion as shipped) with everything a label rule could use.

Extends labelfeat.py's columns with: whether the hit holds the query's rarest term, BM25 against
the query's highest possible score, the cosine margin to the best other hit, the fused-score
margin between hit 1 and hit 2, and leg agreement. Reads legs.py's pickles (which must include
``idfs`` and ``present``), writes $KENNING_RELEVANCE_OUT/labelfeat2.pkl.
    python bench/relevance/labelfeat2.py
"""
import glob, os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from labelfeat import fuse

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
COLS = ["rank", "cos", "cov", "rel", "nterms", "rbm", "rvec", "rare", "bmnorm", "cosgap", "gap12",
        "both1", "cos1", "nmatch", "mass", "y"]
K1 = 1.2


def without(L, gone):
    """One query's legs with the documents in ``gone`` taken out of the store."""
    out = dict(L)
    for leg in ("bm25", "keyword", "vector"):
        out[leg] = [(k, s) for k, s in L[leg] if k not in gone]
    return out


def rows(pkl, answerable, remove_answers=False):
    """Per-query hit matrices; ``remove_answers``: answerable queries against the store without
    their judged-relevant documents (a near miss: the topic is there, the answer is not)."""
    r = pickle.load(open(pkl, "rb"))
    ids, out = r["ids"], {}
    for q in r["queries"]:
        rel = {d for d, g in r["qrels"].get(q, {}).items() if g > 0}
        if bool(rel) != answerable:
            continue
        L = r["legs"][q]
        if remove_answers:
            L = without(L, {k for k, i in enumerate(ids) if i in rel})
            rel = set()
        hits = fuse(L)[:10]
        if not hits:
            continue
        idfs = np.asarray(L["idfs"])
        rarest = int(np.argmax(idfs)) if len(idfs) else -1
        best_possible = float(idfs.sum() * (K1 + 1)) or 1.0
        bm = dict(L["bm25"])
        top = hits[0][1]
        cosines = [h[2] if h[2] is not None else 0.0 for h in hits]
        mat = []
        for i, (key, s, cos, cov, rbm, rvec) in enumerate(hits):
            c = cos if cos is not None else 0.0
            others = [x for j, x in enumerate(cosines) if j != i]
            present = L["present"].get(key)
            rare = float(present[rarest]) if present is not None and rarest >= 0 else 0.0
            gap12 = (hits[0][1] - hits[1][1]) / top if len(hits) > 1 and top > 0 else 1.0
            mat.append((i, c, cov, s / top if top > 0 else 0.0, L["nterms"], rbm, rvec, rare,
                        bm.get(key, 0.0) / best_possible, c - max(others, default=0.0), gap12,
                        float(rbm == 1 and rvec == 1), cosines[0],
                        float(present.sum()) if present is not None else 0.0,
                        float(idfs[present].sum()) if present is not None else 0.0, float(ids[key] in rel)))
        out[q] = np.array(mat)
    return out


if __name__ == "__main__":
    ans = {n: rows(f"{OUT}/legs-{n}.pkl", True)
           for n in ["builtin", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]}
    unans = {"builtin": rows(f"{OUT}/legs-builtin.pkl", False)}
    for p in glob.glob(f"{OUT}/legs-*-q-*.pkl"):
        unans[os.path.basename(p)[5:-4]] = rows(p, False)
    removed = {n: rows(f"{OUT}/legs-{n}.pkl", True, remove_answers=True) for n in ans}
    pickle.dump({"cols": COLS, "ans": ans, "unans": unans, "removed": removed}, open(OUT + "/labelfeat2.pkl", "wb"))
