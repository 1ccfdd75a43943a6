"""Two more ways to `high`, replayed on labelfeat7.py's dumps (hybrid, this main): per collection,
answerable top hits newly `high` and judged right / wrong, unanswerable or off-topic top hits newly
`high`, and answers-removed top hits newly `high` (``<name>-removed`` dumps).

- ``lead``: a top hit passing ``labels.vector_high`` but not the standing-out test, at cosine >= c,
  whose cosine leads every other top-10 hit's by d (a short query);
- ``partial``: two query terms or more, cosine >= c, coverage >= v and a fused lead >= l (a short
  query): "lisbon holiday dates" -> the Lisbon holiday memory, without the word "dates".
    python bench/relevance/labelfeat7.py builtin --foreign .../locomo-dev   # and the rest, as labelrule9.py
    python bench/relevance/more_high.py lead
    python bench/relevance/more_high.py partial
"""
import itertools, os, sys
from kenning.retrieval import labels as L
from labelfeat7 import best_hits

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]


def tops(path):
    out = []
    for q, h in best_hits(path):
        if h["label_args"][0][0] is None:
            continue
        cos, share, n, _, _, cov, known, lead, ceil, _ = h["label_args"][0][:10]
        others = [x["label_args"][0][0] or 0 for x in q["hits"][1:]]
        out.append(dict(ans=q["answerable"], rel=h["rel"], label=h["label"], cos=cos, share=share, n=n, cov=cov,
                        known=known, lead=lead, ceil=ceil, dc=cos - max(others, default=0)))
    return out


def newly_high(x, kind, a, b, c):
    if x["label"] == "high" or x["ceil"] != "high" or x["n"] >= L.LONG_QUERY_TERMS:
        return False
    matched = round(x["share"] * x["n"])
    if kind == "lead":
        return L.vector_high(x["cos"], x["cov"], matched, x["share"], x["known"]) and x["cos"] >= a and x["dc"] >= b
    return matched >= 2 and x["cos"] >= a and x["cov"] >= b and x["lead"] >= c


if __name__ == "__main__":
    kind = sys.argv[1]
    grid = (itertools.product((.5, .55, .6, .65), (.1, .15, .2, .25), (0,)) if kind == "lead"
            else itertools.product((.65, .7, .75), (.55, .6), (.5, .6, .65, .7)))
    data = {n: (tops(f"{OUT}/labelfeat7-{n}.pkl"), tops(f"{OUT}/labelfeat7-{n}-removed.pkl")) for n in NAMES}
    for a, b, c in grid:
        cells = []
        for name, (own, removed) in data.items():
            new = [x for x in own if newly_high(x, kind, a, b, c)]
            right = sum(x["ans"] and x["rel"] for x in new)
            wrong = sum(x["ans"] and not x["rel"] for x in new)
            unanswered = sum(not x["ans"] for x in new)
            gone = sum(newly_high(x, kind, a, b, c) for x in removed)
            if new or gone:
                cells.append(f"{name} +{right}/-{wrong} u{unanswered} r{gone}")
        print(a, b, c if kind == "partial" else "", " | ".join(cells))
