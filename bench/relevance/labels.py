import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, pickle
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
A, FL, P = 0.75, 0.1, 3
def hits(name, foreign=False, k=10):
    r = pickle.load(open(OUT + f"/legs-{name}.pkl", "rb"))
    ids = r["ids"]; out = []
    for q in r["queries"]:
        rel = {d for d, g in r["qrels"].get(q, {}).items() if g > 0}
        if not foreign and not rel: continue
        L = r["legs"][q]
        cos = dict(L["vector"]); cov = L["coverage"]
        keys = list(dict.fromkeys([k for k, _ in L["bm25"]] + [k for k, _ in L["keyword"]] + [k for k, _ in L["vector"]]))
        sc = []
        for key in keys:
            c = cos.get(key, np.nan)
            sem = max(0, (c if c == c else FL) - FL) / (1 - FL)
            sc.append(A * cov.get(key, 0) ** P + (1 - A) * sem)
        order = np.argsort(-np.array(sc), kind="stable")[:k]
        for rank, i in enumerate(order):
            key = keys[i]
            out.append((name, q, rank, cov.get(key, 0), cos.get(key, np.nan), sc[i], ids[key] in rel, L["nterms"]))
    return out
if __name__ == "__main__":
    H = []
    for n in sys.argv[1:]:
        H += hits(n)
    F = []
    for n in ["med-q-cranfield", "locomo-dev-q-npl"]:
        F += hits(n, True, 1)
    pickle.dump((H, F), open(OUT + "/labelhits.pkl", "wb"))
    H = np.array([(h[2], h[3], np.nan_to_num(h[4], nan=0), h[5], h[6], h[7]) for h in H])
    F = np.array([(h[2], h[3], np.nan_to_num(h[4], nan=0), h[5], h[6], h[7]) for h in F])
    print("hits", len(H), "relevant rate", H[:, 4].mean())
    for cut in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
        m = H[:, 2] >= cut; top = H[:, 0] == 0
        print("cos>=%.2f: share %.3f precision %.3f top1 share %.3f | foreign top1 %.3f" % (cut, m.mean(), H[m, 4].mean() if m.any() else 0, (m & top).sum() / top.sum(), (F[:, 2] >= cut).mean()))
    for cut in (0.8, 0.9, 1.0):
        for cc in (0.3, 0.4, 0.5, 0.6):
            m = (H[:, 1] >= cut) & (H[:, 2] >= cc); top = H[:, 0] == 0
            print("cov>=%.2f & cos>=%.2f: share %.3f precision %.3f top1 share %.3f | foreign top1 %.3f" % (cut, cc, m.mean(), H[m, 4].mean() if m.any() else 0, (m & top).sum() / top.sum(), ((F[:, 1] >= cut) & (F[:, 2] >= cc)).mean()))
