"""Evidence fusion with an exponent on the rescaled cosine, swept with the shipped parameters;
pickled for loo.py. ``semantic = ((cos - f) / (1 - f)) ** r``: r > 1 lets only a close meaning
count, r < 1 lets a moderate one count more. r = 1 is the shipped fusion.
    python bench/relevance/sweep7.py builtin med cranfield npl locomo-dev scifact-train
    python bench/relevance/loo.py $KENNING_RELEVANCE_OUT/sweep7.pkl
"""
import itertools, os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep import Coll, leg
from sweep5 import sem_of

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")


def evidence(a, fl, p, lam, r):
    def fn(f):
        m = f["bm"].max()
        bn = f["bm"] / m if m > 0 else f["bm"]
        return a * f["cov"] ** p * ((1 - lam) + lam * bn) + (1 - a) * sem_of(f, fl) ** r
    return fn


if __name__ == "__main__":
    colls = [Coll(n) for n in sys.argv[1:]]
    base = {c.name: {l: c.score(leg(l)) for l in ("bm25", "vector")} for c in colls}
    grid = itertools.product((0.7, 0.75, 0.78, 0.8, 0.85), (0.0, 0.1, 0.2), (2, 3, 4), (0.25, 0.5, 0.75, 1.0),
                             (0.75, 1.0, 1.5, 2.0))
    res = {key: {c.name: c.score(evidence(*key)) for c in colls} for key in grid}
    pickle.dump({"base": base, "res": res}, open(OUT + "/sweep7.pkl", "wb"))
