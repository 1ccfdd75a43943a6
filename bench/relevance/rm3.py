"""Pseudo-relevance feedback (RM3) on hybrid's BM25 leg: is it worth a second BM25 pass?

For each query: the BM25 leg's top ``fb_docs`` texts give a relevance model (each text's term
distribution weighted by its share of their BM25 score), its ``fb_terms`` heaviest non-stopword
terms are mixed with the query (``lam`` of the original, 1 - lam of the model) and BM25 runs again
with those weights. The expanded ranking replaces the BM25 leg inside hybrid only (coverage stays
that of the query's own terms), so bm25 mode - the better-leg reference - is unchanged. Writes
``legs-<name>~rm3-<fb_docs>-<fb_terms>-<lam>.pkl`` next to legs.py's pickles, then sweeps the
shipped evidence fusion over original and expanded legs and runs loo.py's selection on both.
    python bench/relevance/rm3.py builtin med cranfield npl locomo-dev scifact-train
"""
import itertools, os, pickle, sys
from collections import Counter
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from legs import MemIndex, setup, GROUPED
from kenning.eval.datasets import group_of
from kenning.retrieval import bm25, feedback, text
from sweep import Coll, leg
from sweep6 import evbm

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
SETTINGS = [(10, 20, 0.6), (10, 10, 0.5), (5, 10, 0.7), (10, 20, 0.75), (20, 30, 0.6)]


def expand(name, fb_docs, fb_terms, lam):
    """The BM25 leg rerun on the feedback-expanded query, with the shipped code (feedback.py, bm25.py)."""
    r = pickle.load(open(f"{OUT}/legs-{name}.pkl", "rb"))
    d, ids, texts, sep, masks = setup(name)
    idx = MemIndex(texts)
    content = {}
    for q in r["queries"]:
        L = r["legs"][q]
        qtoks = text.query_tokens(r["qtext"][q])
        terms = list(dict.fromkeys(qtoks))
        g = group_of(q, sep)
        allowed = masks.get(g) if len(masks) > 1 else None
        fb = [(s, content.get(k) or content.setdefault(k, text.query_tokens(texts[k]))) for k, s in L["bm25"][:fb_docs]]
        weights = feedback.expanded_query(qtoks, fb, fb_terms, lam)
        new = bm25.search(idx, [], 100, allowed, weights=weights) if weights else []
        L = dict(L)
        L["bm25"] = new
        missing = [k for k, _ in new if k not in L["coverage"]]
        if missing:
            L["coverage"] = {**L["coverage"], **bm25.idf_coverage(idx, terms, missing)}
        r["legs"][q] = L
    tag = f"{name}~rm3-{fb_docs}-{fb_terms}-{lam}"
    pickle.dump(r, open(f"{OUT}/legs-{tag}.pkl", "wb"))
    return tag


if __name__ == "__main__":
    names = sys.argv[1:]
    plain = {n: Coll(n) for n in names}
    base = {n: {l: c.score(leg(l)) for l in ("bm25", "vector")} for n, c in plain.items()}
    grid = list(itertools.product((0.75, 0.78, 0.8), (0.1,), (3,), (0.25, 0.5, 0.75, 1.0)))
    res = {("plain",) + k: {n: plain[n].score(evbm(*k)) for n in names} for k in grid}
    for s in SETTINGS:
        colls = {n: Coll(expand(n, *s)) for n in names}
        print("rm3", s, "bm25 leg alone:", {n: round(c.score(leg("bm25"))[0], 4) for n, c in colls.items()}, flush=True)
        for k in grid:
            res[("rm3",) + s + k] = {n: colls[n].score(evbm(*k)) for n in names}
    pickle.dump({"base": base, "res": res}, open(OUT + "/rm3.pkl", "wb"))
    def margin(k, n): return res[k][n][0] - max(base[n]["bm25"][0], base[n]["vector"][0])
    for k in sorted(res, key=lambda k: -min(margin(k, n) for n in names))[:10]:
        print(k, "mean %.4f" % np.mean([res[k][n][0] for n in names]), "min margin %.4f" % min(margin(k, n) for n in names), [round(margin(k, n), 4) for n in names])
