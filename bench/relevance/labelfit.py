"""Label rules measured per collection, and a small logistic model chosen leave-one-collection-out.

Reads labelfeat.py's pickle. Per collection: P@1 (what bounds a 0.9-precise label on the top hit),
the shipped rule's reliability, and the fitted model's with the threshold chosen on the others.
Rejected: left out, the model labels almost nothing `high` (the collections' judgment densities
differ too much for one calibrated probability); labelrule.py chose the shipped thresholds.
    python bench/relevance/labelfit.py
"""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
import sys, pickle
import numpy as np
from sklearn.linear_model import LogisticRegression

D = pickle.load(open(OUT + "/labelfeat.pkl", "rb"))
C = {c: i for i, c in enumerate(["rank", "cos", "cov", "rel", "nterms", "rbm", "rvec", "topcos", "topcov", "next", "y"])}


def stack(qs):
    return np.vstack(list(qs.values())) if qs else np.zeros((0, len(C)))


def feats(M):
    """The model's inputs: what the engine knows about one hit."""
    return np.column_stack([M[:, C["cos"]], M[:, C["cov"]], M[:, C["cov"]] * M[:, C["cos"]],
                            M[:, C["rel"]], np.log(np.maximum(M[:, C["nterms"]], 1)),
                            (M[:, C["rvec"]] <= 1) * 1.0, (M[:, C["rbm"]] <= 1) * 1.0])


def report(name, M, U, is_high):
    top = M[:, C["rank"]] == 0
    h = is_high(M)
    prec = M[h, C["y"]].mean() if h.any() else float("nan")
    uh = is_high(U[U[:, C["rank"]] == 0]).mean() if len(U) else float("nan")
    return "%-14s P@1 %.2f | high share %.3f prec %.2f | ans top high %.2f | unans top high %.3f (n=%d)" % (
        name, M[top, C["y"]].mean(), h.mean(), prec, h[top].mean(), uh, int((U[:, C["rank"]] == 0).sum()) if len(U) else 0)


def current(M):
    cos, cov, rel = M[:, C["cos"]], M[:, C["cov"]], M[:, C["rel"]]
    return (rel >= 0.95) & ((cos >= 0.85) | ((cos >= 0.55) & (cov >= 0.7)))


names = list(D["ans"])
unans_of = {}
for key, qs in D["unans"].items():
    host = key.split("-q-")[0]
    unans_of.setdefault(host, []).append(stack(qs))
U = {n: np.vstack(unans_of[n]) if n in unans_of else np.zeros((0, len(C))) for n in names}
A = {n: stack(D["ans"][n]) for n in names}
print("shipped rule")
for n in names:
    print(" ", report(n, A[n], U[n], current))


def fit(train):
    X = np.vstack([feats(A[n]) for n in train] + [feats(U[n][U[n][:, C["rank"]] == 0]) for n in train if len(U[n])])
    y = np.concatenate([A[n][:, C["y"]] for n in train] + [np.zeros(int((U[n][:, C["rank"]] == 0).sum())) for n in train if len(U[n])])
    w = np.concatenate([np.full(len(A[n]), 1 / len(A[n])) for n in train] + [np.full(int((U[n][:, C["rank"]] == 0).sum()), 1 / max(1, (U[n][:, C["rank"]] == 0).sum())) for n in train if len(U[n])])
    return LogisticRegression(C=10, max_iter=2000).fit(X, y, sample_weight=w * len(w))


def choose(m, train, prec=0.9, unans=0.02):
    """Lowest threshold whose high is >= prec precise on every training set (that has high hits) and
    labels <= unans of training unanswerable top hits."""
    for t in np.arange(0.3, 0.999, 0.01):
        ok = True
        for n in train:
            p = m.predict_proba(feats(A[n]))[:, 1] >= t
            if p.sum() >= 5 and A[n][p, C["y"]].mean() < prec:
                ok = False
            if len(U[n]):
                Ut = U[n][U[n][:, C["rank"]] == 0]
                if (m.predict_proba(feats(Ut))[:, 1] >= t).mean() > unans:
                    ok = False
        if ok:
            return t
    return 1.0


if __name__ == "__main__":
    print("logistic model, threshold chosen leave-one-collection-out")
    for n in names:
        train = [m for m in names if m != n]
        m = fit(train)
        t = choose(m, train)
        print("  t=%.2f" % t, report(n, A[n], U[n], lambda M: m.predict_proba(feats(M))[:, 1] >= t))
    m = fit(names); t = choose(m, names)
    print("all: t=%.2f coef" % t, np.round(m.coef_, 3), np.round(m.intercept_, 3))
