import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kenning.retrieval import bm25, text
from legs import MemIndex, setup
from kenning.eval.datasets import group_of
from fastm import ndcg_r
grid = [(k1, b) for k1 in (0.9, 1.2, 1.5, 2.0) for b in (0.5, 0.75, 0.9)]
res = {}
for name in ["builtin", "med", "cranfield", "npl", "scifact-train", "locomo-dev"]:
    d, ids, texts, sep, masks = setup(name)
    ans = [q for q in d.queries if d.is_answerable(q)]
    idx = MemIndex(texts)
    for k1, b in grid:
        ranked = {}
        for q in ans:
            allowed = masks.get(group_of(q, sep)) if len(masks) > 1 else None
            ranked[q] = [ids[k] for k, _ in bm25.search(idx, text.query_tokens(d.queries[q].text), 10, allowed, k1=k1, b=b)]
        res[f"{name}|{k1}|{b}"] = ndcg_r(d.qrels, ranked, ans)
        print(name, k1, b, res[f"{name}|{k1}|{b}"], flush=True)
json.dump(res, open(OUT + "/k1b.json", "w"))
