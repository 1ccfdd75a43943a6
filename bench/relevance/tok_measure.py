import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import sys, time, importlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import Stemmer
from kenning.retrieval import bm25, text
from legs import MemIndex, setup
from kenning.eval.datasets import group_of
from fastm import ndcg_r
old = importlib.import_module("oldtext")

st = {n: Stemmer.Stemmer(n) for n in ("english", "porter")}
FOLD = {
    "plural": old.fold_plural,
    "snowball": lambda w: st["english"].stemWord(w) if w.isalpha() else w,
    "porter": lambda w: st["porter"].stemWord(w) if w.isalpha() else w,
    "none": lambda w: w,
}
IDF = {
    "lucene": lambda n, df: np.log1p((n - df + 0.5) / (df + 0.5)),
    "atire": lambda n, df: np.log(n / np.asarray(df, float)),
    "rsj-eps": lambda n, df: np.maximum(np.log((n - df + 0.5) / (df + 0.5)), 0.01),
}
names = sys.argv[1:] or ["builtin", "med", "cranfield", "npl", "scifact-train", "locomo-dev"]
for name in names:
    d, ids, texts, sep, masks = setup(name)
    ans = [q for q in d.queries if d.is_answerable(q)]
    for fold, f in FOLD.items():
        text.stem = f; text._word.cache_clear()
        t = time.time(); idx = MemIndex(texts); t_index = time.time() - t
        for qtf in (False, True):
            for idfn, idf in IDF.items():
                bm25.idf = idf
                ranked = {}
                for q in ans:
                    qq = d.queries[q]
                    allowed = masks.get(group_of(q, sep)) if len(masks) > 1 else None
                    toks = text.query_tokens(qq.text)
                    if not qtf: toks = list(dict.fromkeys(toks))
                    ranked[q] = [ids[k] for k, _ in bm25.search(idx, toks, 10, allowed)]
                n, r = ndcg_r(d.qrels, ranked, ans)
                print(f"{name}\t{fold}\tqtf={int(qtf)}\t{idfn}\tnDCG={n:.4f}\tR10={r:.4f}\tpostings={idx.size}\tvocab={len(idx.post)}\tindex_s={t_index:.1f}", flush=True)
