import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collections import Counter
import numpy as np
from kenning.retrieval import bm25, text
from legs import MemIndex, setup
from kenning.eval.datasets import group_of
from fastm import ndcg_r
orig_search = bm25.search
res = {}
for name in ["builtin", "med", "cranfield", "npl", "scifact-train", "locomo-dev"]:
    d, ids, texts, sep, masks = setup(name)
    ans = [q for q in d.queries if d.is_answerable(q)]
    idx = MemIndex(texts)
    qlen = np.mean([len(text.query_tokens(d.queries[q].text)) for q in ans])
    rep = np.mean([len(text.query_tokens(d.queries[q].text)) - len(set(text.query_tokens(d.queries[q].text))) > 0 for q in ans])
    for k3 in (0, 0.5, 1, 2, 4, 1000):
        ranked = {}
        for q in ans:
            allowed = masks.get(group_of(q, sep)) if len(masks) > 1 else None
            toks = text.query_tokens(d.queries[q].text)
            c = Counter(toks)
            # emulate saturated qtf by repeating weights: call per-term weights through idf hack
            w = {t: 1.0 if k3 == 0 else (k3 + 1) * n / (k3 + n) for t, n in c.items()}
            lists = []
            acc = {}
            for t, wt in w.items():
                for k, s in bm25.search(idx, [t], 100000, allowed):
                    acc[k] = acc.get(k, 0) + wt * s
            ranked[q] = [ids[k] for k, _ in sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:10]]
        n, r = ndcg_r(d.qrels, ranked, ans)
        res[(name, k3)] = n
        print(f"{name}\tqlen={qlen:.1f}\trepeat_share={rep:.2f}\tk3={k3}\tnDCG={n:.4f}\tR10={r:.4f}", flush=True)
