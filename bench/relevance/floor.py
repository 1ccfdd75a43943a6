import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, pickle
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
for name in sys.argv[1:]:
    r = pickle.load(open(OUT + f"/legs-{name}.pkl", "rb"))
    ids = r["ids"]; cs = []
    for q in r["queries"]:
        rel = {d for d, g in r["qrels"].get(q, {}).items() if g > 0}
        if not rel: continue
        for k, c in r["legs"][q]["vector"][:10]:
            if ids[k] in rel: cs.append(c)
    cs = np.array(cs)
    print(name, "relevant in vector top10:", len(cs), "min cos %.3f" % cs.min(), "p1 %.3f" % np.percentile(cs, 1), [(f, int((cs < f).sum())) for f in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.345)])
for name in ["med-q-cranfield", "locomo-dev-q-npl"]:
    r = pickle.load(open(OUT + f"/legs-{name}.pkl", "rb"))
    top = np.array([r["legs"][q]["vector"][0][1] for q in r["queries"] if r["legs"][q]["vector"]])
    print(name, "foreign top-1 cos: median %.3f p90 %.3f max %.3f" % (np.median(top), np.percentile(top, 90), top.max()))
