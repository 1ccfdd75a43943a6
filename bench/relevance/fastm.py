import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import numpy as np
def ndcg_r(qrels, ranked, qids, k=10):
    """mean nDCG@10 (exp gains) and R@10 over qids (answerable)."""
    nd, rc = [], []
    for q in qids:
        j = qrels.get(q, {})
        rel = {d: g for d, g in j.items() if g > 0}
        r = ranked.get(q, [])[:k]
        dcg = sum((2**rel.get(d, 0) - 1) / np.log2(i + 2) for i, d in enumerate(r))
        ideal = sorted(rel.values(), reverse=True)[:k]
        idcg = sum((2**g - 1) / np.log2(i + 2) for i, g in enumerate(ideal))
        nd.append(dcg / idcg if idcg else 0.0)
        rc.append(sum(1 for d in r if d in rel) / len(rel) if rel else 0.0)
    return float(np.mean(nd)), float(np.mean(rc))
