"""Per-hit label features in hybrid *as shipped*: the BM25 leg rerun with RM3 feedback
(retrieval/feedback.py's settings) before fusion, for every legs.py pickle - the dev collections
and the off-topic pairs (``<host>-q-<other>``) - so that leg agreement (the top hit rank 1 in both
the BM25 and the vector leg) is measured on the leg hybrid really fuses. Then labelfeat2.py's
columns. Writes $KENNING_RELEVANCE_OUT/labelfeat4.pkl (the layout of labelfeat2.pkl).
    python bench/relevance/labelfeat4.py
"""
import glob, os, pickle, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from legs import MemIndex, setup
from kenning.eval.datasets import group_of
from kenning.retrieval import bm25, feedback, text
import labelfeat2

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]


def expanded(tag):
    """legs-<tag>.pkl with its BM25 leg replaced by the feedback pass; returns the new pickle's path."""
    path = f"{OUT}/legs-{tag}~fb.pkl"
    if os.path.exists(path):
        return path
    host, _, other = tag.partition("-q-")
    r = pickle.load(open(f"{OUT}/legs-{tag}.pkl", "rb"))
    d, ids, texts, sep, masks = setup(host)
    idx = MemIndex(texts)
    content = {}
    for q in r["queries"]:
        L = dict(r["legs"][q])
        qtoks = text.query_tokens(r["qtext"][q])
        terms = list(dict.fromkeys(qtoks))
        if other:
            allowed = masks[sorted(masks, key=str)[0]] if len(masks) > 1 else None
        else:
            allowed = masks.get(group_of(q, sep)) if len(masks) > 1 else None
        first = L["bm25"][:feedback.FEEDBACK_DOCS]
        fb = [(s, content.get(k) or content.setdefault(k, text.query_tokens(texts[k]))) for k, s in first]
        weights = feedback.expanded_query(qtoks, fb)
        L["bm25"] = bm25.search(idx, [], 100, allowed, weights=weights) if weights else []
        missing = [k for k, _ in L["bm25"] if k not in L["coverage"]]
        if missing:
            L["coverage"] = {**L["coverage"], **bm25.idf_coverage(idx, terms, missing)}
            from kenning.retrieval import lexical
            L["present"] = {**L["present"], **dict(zip(missing, lexical.contains(idx, terms, missing)))}
        r["legs"][q] = L
    pickle.dump(r, open(path, "wb"))
    return path


if __name__ == "__main__":
    ans = {n: labelfeat2.rows(expanded(n), True) for n in NAMES}
    unans = {"builtin": labelfeat2.rows(expanded("builtin"), False)}
    for p in sorted(glob.glob(f"{OUT}/legs-*-q-*.pkl")):
        tag = os.path.basename(p)[5:-4]
        if tag.endswith("~fb"):
            continue
        unans[tag] = labelfeat2.rows(expanded(tag), False)
    removed = {n: labelfeat2.rows(expanded(n), True, remove_answers=True) for n in ans}
    pickle.dump({"cols": labelfeat2.COLS, "ans": ans, "unans": unans, "removed": removed},
                open(OUT + "/labelfeat4.pkl", "wb"))
    print({n: len(v) for n, v in ans.items()}, {n: len(v) for n, v in unans.items()})
