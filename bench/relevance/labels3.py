import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, pickle
import numpy as np
H, F = pickle.load(open(OUT + "/labelhits.pkl", "rb"))
def arr(rows):
    tops = {(r[0], r[1]): r[5] for r in rows if r[2] == 0}
    return (np.array([r[0] for r in rows]), np.array([r[2] for r in rows]), np.array([r[3] for r in rows]),
            np.array([0.0 if r[4] != r[4] else r[4] for r in rows]), np.array([r[5] / tops[(r[0], r[1])] if tops[(r[0], r[1])] else 0 for r in rows]), np.array([r[6] for r in rows], float))
names, rank, cov, cos, rel, y = arr(H)
fn, frank, fcov, fcos, frel, _ = arr(F)
for c in (0.55, 0.6, 0.65):
    for rr in (0.0, 0.8, 0.9, 0.95):
        m = (cos >= c) & (rel >= rr); top = rank == 0
        per = {n[:5]: (round(y[m & (names == n)].mean(), 2) if (m & (names == n)).any() else None, round((m & top & (names == n)).sum() / (top & (names == n)).sum(), 2)) for n in sorted(set(names))}
        print("cos>=%.2f rel>=%.2f share %.3f prec %.3f top1 %.3f foreign %.3f" % (c, rr, m.mean(), y[m].mean(), (m & top).sum() / top.sum(), ((fcos >= c) & (frel >= rr)).mean()), per)
