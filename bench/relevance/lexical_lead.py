"""`high` without the vector leg, fifteenth pass: every distinct query term (two or more), not asked,
and - the new test - the best hit leading the second by ``lead`` of its BM25 score (the keyword leg's
in keyword mode; ``engine.lead``), for queries of at least ``min_terms`` terms. Read from
labelfeat7.py's dumps of the three lexical searches (``--mode bm25``, ``--mode keyword``, and hybrid
with ``KENNING_ENCODER=none``, a base install, its files renamed ``*-lexhybrid.pkl``).
    KENNING_ENCODER=none KENNING_RELEVANCE_OUT=/tmp/kenning-relevance/lexhyb python bench/relevance/labelfeat7.py builtin ...
    python bench/relevance/labelfeat7.py builtin --foreign .../locomo-dev --mode bm25   # and the rest, as labelrule9.py lists
    python bench/relevance/lexical_lead.py
"""
import itertools
import os
import pickle

from kenning.retrieval import labels
from kenning.retrieval.text import search_tokens

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "memval", "memval2", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
MODES = ["bm25", "keyword", "lexhybrid"]


def prepared(mode):
    leg = "keyword" if mode == "keyword" else "bm25"
    data = {n: pickle.load(open(f"{OUT}/labelfeat7-{n}-{mode}.pkl", "rb")) for n in NAMES}
    for rows in data.values():
        for q in rows.values():
            terms = list(dict.fromkeys(search_tokens(q["text"])))
            hits = q["hits"]
            for h in hits:
                h["asks"] = labels.asks_about(terms, h["text"])
            if hits:
                second = hits[1]["legs"].get(leg, (0, 0.0))[1] if len(hits) > 1 else None
                q["lead"] = labels.lead_of(hits[0]["legs"].get(leg, (0, 0.0))[1], second)
    return data


def rule(lead, min_terms):
    def high(q, i):
        cosine, share, n, score, top, *_ , ceiling = q["hits"][i]["label_args"][0][:9]
        return (ceiling == "high" and not q["hits"][i]["asks"] and score >= labels.NEAR_TOP * top
                and share >= 1.0 and n >= max(2, min_terms) and q["lead"] >= lead)
    return high


def scored(data, high):
    out = {}
    for name, rows in data.items():
        answerable = [q for q in rows.values() if q["answerable"] and q["hits"]]
        unanswerable = [q for q in rows.values() if not q["answerable"] and q["hits"]]
        judged = [q["hits"][i]["rel"] for q in answerable for i in range(len(q["hits"])) if high(q, i)]
        out[name] = (sum(high(q, 0) for q in answerable) / len(answerable), sum(judged) / len(judged) if judged else None,
                     len(judged), sum(high(q, 0) for q in unanswerable))
    return out


if __name__ == "__main__":
    for mode in MODES:
        data = prepared(mode)
        print(f"== {mode}: answerable top hits high, high judged relevant (hits), unanswerable top hits high")
        for lead, min_terms in [(0.0, 2)] + list(itertools.product((.1, .2, .3, .4, .5), (2, 3))):
            out = scored(data, rule(lead, min_terms))
            print(f"lead {lead} terms {min_terms}" + "".join(
                f" | {n[:7]} {s * 100:4.1f}% {'-' if p is None else f'{p:.2f}'} ({k}) {u}" for n, (s, p, k, u) in out.items()))
