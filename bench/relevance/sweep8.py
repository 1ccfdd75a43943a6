"""Fusion families not tried before (issue 11, third pass), each swept together with the shipped
evidence fusion as its special case, so leave-one-collection-out says whether the new dimension
helps a held-out collection (loo.py on each family's pickle):

- ``qnorm``: the vector part measured against this query's best cosine as well as absolutely,
  ``sem = (1 - t) * (cos - f) / (1 - f) + t * (cos - f) / (best cos - f)``;
- ``qlen``: alpha moved by the query's length, ``alpha + g * (ln(distinct terms) - ln 4)``;
- ``idfmass``: alpha moved by how specific the query's words are (mean IDF / ln N, 0-1);
- ``agree``: alpha moved by leg agreement (share of the vector leg's top 10 in BM25's top 10);
- ``mnz``: a bonus for a text both legs put in their top 20 (CombMNZ's idea on evidence scores);
- ``zsum``: z-scored BM25 and cosine over the candidates, summed (score-normalised CombSUM),
  with the coverage evidence kept (``zsum`` with weight 0 is the shipped fusion's lexical part).

    python bench/relevance/sweep8.py builtin med cranfield npl locomo-dev scifact-train
    for f in qnorm qlen idfmass agree mnz zsum; do python bench/relevance/loo.py $KENNING_RELEVANCE_OUT/sweep8-$f.pkl; done
"""
import itertools, os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from sweep import Coll, leg

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
BASE = list(itertools.product((0.75, 0.78, 0.8), (0.1,), (3,), (0.25, 0.5, 0.75, 1.0)))


def with_query_features(c):
    """Add each query's distinct-term count, mean IDF share and leg agreement to ``c.Q``."""
    r = pickle.load(open(OUT + f"/legs-{c.name}.pkl", "rb"))
    n_docs = len(r["ids"])
    for q, f in zip(c.ans, c.Q):
        L = r["legs"][q]
        f["nterms"] = max(1, L["nterms"])
        f["idfmass"] = float(np.mean(L["idfs"])) / np.log1p(n_docs) if L["idfs"] else 0.0
        top_bm = {k for k, _ in L["bm25"][:10]}
        f["agree"] = len([k for k, _ in L["vector"][:10] if k in top_bm]) / 10
    return c


def parts(f, fl, p, lam):
    m = f["bm"].max()
    bn = f["bm"] / m if m > 0 else f["bm"]
    lex = f["cov"] ** p * ((1 - lam) + lam * bn)
    cos = np.nan_to_num(f["cos"], nan=fl)
    sem = np.clip(cos - fl, 0, None) / (1 - fl)
    return lex, sem, cos


def qnorm(a, fl, p, lam, t):
    def fn(f):
        lex, sem, cos = parts(f, fl, p, lam)
        best = cos.max()
        rel = np.clip(cos - fl, 0, None) / max(1e-9, best - fl)
        return a * lex + (1 - a) * ((1 - t) * sem + t * rel)
    return fn


def shifted(feature, centre):
    def family(a, fl, p, lam, g):
        def fn(f):
            lex, sem, _ = parts(f, fl, p, lam)
            x = np.log(f["nterms"]) - np.log(4) if feature == "qlen" else f[feature] - centre
            w = float(np.clip(a + g * x, 0.3, 0.97))
            return w * lex + (1 - w) * sem
        return fn
    return family


def mnz(a, fl, p, lam, mu):
    def fn(f):
        lex, sem, _ = parts(f, fl, p, lam)
        both = (f["rbm"] <= 20) & (f["rvec"] <= 20)
        return (a * lex + (1 - a) * sem) * (1 + mu * both)
    return fn


def zsum(a, fl, p, lam, w):
    def fn(f):
        lex, sem, cos = parts(f, fl, p, lam)
        bm = f["bm"]
        zb = (bm - bm.mean()) / (bm.std() or 1)
        zc = (cos - cos.mean()) / (cos.std() or 1)
        return (1 - w) * (a * lex + (1 - a) * sem) + w * 0.1 * (zb + zc)
    return fn


FAMILIES = {
    "qnorm": (qnorm, (0.0, 0.25, 0.5, 1.0)),
    "qlen": (shifted("qlen", 0), (-0.1, -0.05, 0.0, 0.05, 0.1)),
    "idfmass": (shifted("idfmass", 0.5), (-0.3, -0.15, 0.0, 0.15, 0.3)),
    "agree": (shifted("agree", 0.3), (-0.2, -0.1, 0.0, 0.1, 0.2)),
    "mnz": (mnz, (0.0, 0.02, 0.05, 0.1, 0.2)),
    "zsum": (zsum, (0.0, 0.1, 0.2, 0.3, 0.5)),
}

if __name__ == "__main__":
    colls = [with_query_features(Coll(n)) for n in sys.argv[1:]]
    base = {c.name: {l: c.score(leg(l)) for l in ("bm25", "vector")} for c in colls}
    names = [c.name for c in colls]
    for fam, (make, values) in FAMILIES.items():
        res = {key + (v,): {c.name: c.score(make(*key, v)) for c in colls} for key in BASE for v in values}
        pickle.dump({"base": base, "res": res}, open(OUT + f"/sweep8-{fam}.pkl", "wb"))
        def margin(k, n): return res[k][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
        print(fam)
        for k in sorted(res, key=lambda k: -min(margin(k, n) for n in names))[:5]:
            print("  ", k, "mean %.4f" % np.mean([res[k][n][0] for n in names]), "min margin %.4f" % min(margin(k, n) for n in names), [round(margin(k, n), 4) for n in names], flush=True)
