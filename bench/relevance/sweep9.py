"""Why RRF beats evidence-fused hybrid on med, cranfield and npl, and whether a rank-based part can
carry that into evidence fusion (issue 11, fourth pass). Legs from legs.py; the evidence fusion
runs on labelfeat4.py's feedback legs (``<name>~fb``, hybrid as shipped), RRF on the plain legs (as
`fusion="rrf"` ships: bm25 1, keyword .2, vector 1, k 60).

1. Diagnosis: per collection, nDCG@10 of RRF and of evidence, the share of queries each wins, and
   the same split by query length (distinct terms) and by which single leg is better for the query.
2. Families, each with the shipped evidence as its zero point (chosen leave-one-collection-out by
   loo.py on the pickles written here):
   - blend: (1 - beta) * evidence + beta * RRF normalised to 0-1 (RRF of the legs hybrid fuses);
   - rankbm: the BM25 part of the lexical evidence by rank, (k + 1) / (k + rank), not score / best;
   - rankvec: a rank-based share of the vector evidence, (1 - g) * cos' + g * (k + 1) / (k + rank).
    python bench/relevance/sweep9.py builtin med cranfield npl locomo-dev scifact-train
    for f in blend rankbm rankvec; do python bench/relevance/loo.py $KENNING_RELEVANCE_OUT/sweep9-$f.pkl; done
"""
import os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from sweep import Coll, leg, rrf
from sweep5 import sem_of

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
A, FL, P, LAM = 0.78, 0.1, 3.0, 0.5


def bm_ratio(f):
    m = f["bm"].max()
    return f["bm"] / m if m > 0 else f["bm"]


def shipped(f):
    return A * f["cov"] ** P * ((1 - LAM) + LAM * bm_ratio(f)) + (1 - A) * sem_of(f, FL)


def rrf_norm(f, k=60):
    return (1 / (k + f["rbm"]) + 0.2 / (k + f["rkw"]) + 1 / (k + f["rvec"])) * (k + 1) / 2.2


def blend(beta):
    return lambda f: (1 - beta) * shipped(f) + beta * rrf_norm(f)


def rankbm(k):
    return lambda f: A * f["cov"] ** P * ((1 - LAM) + LAM * (k + 1) / (k + f["rbm"])) + (1 - A) * sem_of(f, FL)


def rankvec(g, k=10):
    return lambda f: (A * f["cov"] ** P * ((1 - LAM) + LAM * bm_ratio(f))
                      + (1 - A) * ((1 - g) * sem_of(f, FL) + g * (k + 1) / (k + f["rvec"])))


def per_query(c, fn, k=10):
    disc = 1 / np.log2(np.arange(2, k + 2))
    out = []
    for f in c.Q:
        order = np.lexsort((f["keys"], f["best"], -fn(f)))[:k]
        g = f["gain"][order]
        out.append((g * disc[: len(g)]).sum() / f["idcg"] if f["idcg"] else 0.0)
    return np.array(out)


def diagnose(name):
    plain, fb = Coll(name), Coll(name + "~fb")
    r, e = per_query(plain, rrf(60, 0.2, 1.0)), per_query(fb, shipped)
    b, v = per_query(plain, leg("bm25")), per_query(plain, leg("vector"))
    legs = pickle.load(open(f"{OUT}/legs-{name}.pkl", "rb"))
    nterms = np.array([legs["legs"][q]["nterms"] for q in plain.ans])
    print("%-14s RRF %.4f evidence %.4f | RRF wins %d, evidence wins %d, ties %d of %d" % (
        name, r.mean(), e.mean(), (r > e + 1e-9).sum(), (e > r + 1e-9).sum(), (abs(r - e) <= 1e-9).sum(), len(r)))
    for label, m in (("<= 4 terms", nterms <= 4), ("5-8 terms", (nterms > 4) & (nterms <= 8)), (">= 9 terms", nterms >= 9),
                     ("bm25 leg better", b > v + 1e-9), ("vector leg better", v > b + 1e-9), ("legs equal", abs(b - v) <= 1e-9)):
        if m.any():
            print("    %-18s n %4d  RRF %.4f  evidence %.4f  (RRF - evidence %+.4f)" % (label, m.sum(), r[m].mean(), e[m].mean(), (r - e)[m].mean()))


if __name__ == "__main__":
    names = sys.argv[1:]
    for n in names:
        diagnose(n)
    plain = {n: Coll(n) for n in names}
    fb = {n: Coll(n + "~fb") for n in names}
    base = {n: {l: c.score(leg(l)) for l in ("bm25", "vector")} for n, c in plain.items()}
    families = {"blend": {("blend", b): blend(b) for b in (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)},
                "rankbm": {("rankbm", k): rankbm(k) for k in (1, 3, 10, 30)},
                "rankvec": {("rankvec", g): rankvec(g) for g in (0.1, 0.2, 0.3, 0.5)}}
    families["rankbm"][("shipped",)] = families["rankvec"][("shipped",)] = shipped
    rrf_row = {n: plain[n].score(rrf(60, 0.2, 1.0))[0] for n in names}
    print("RRF as shipped:", {n: round(v, 4) for n, v in rrf_row.items()})
    for fam, fns in families.items():
        res = {key: {n: fb[n].score(fn) for n in names} for key, fn in fns.items()}
        pickle.dump({"base": base, "res": res}, open(f"{OUT}/sweep9-{fam}.pkl", "wb"))
        for key, row in res.items():
            print(fam, key, " ".join("%s %.4f" % (n[:5], row[n][0]) for n in names),
                  "| min margin %+.4f" % min(row[n][0] - max(base[n]["bm25"][0], base[n]["vector"][0]) for n in names))
