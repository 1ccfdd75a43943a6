"""Leave-one-collection-out over a sweep: choose on the others, score on the one left out."""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, pickle
import numpy as np
d = pickle.load(open(sys.argv[1], "rb"))
base, res = d["base"], d["res"]
names = list(base)
def margin(k, n): return res[k][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
def choose(train):
    return max(res, key=lambda k: (round(min(margin(k, n) for n in train), 4), np.mean([res[k][n][0] for n in train])))
allk = choose(names)
print("chosen on all:", allk, "margins", {n: round(margin(allk, n), 4) for n in names})
worst = None
for n in names:
    k = choose([m for m in names if m != n])
    row = (n, k, round(res[k][n][0], 4), round(res[k][n][1], 4), round(margin(k, n), 4))
    print("LOO held out %s: chose %s -> nDCG %.4f R@10 %.4f margin over better leg %+.4f" % row)
    worst = row if worst is None or row[4] < worst[4] else worst
print("worst held-out margin:", worst)
