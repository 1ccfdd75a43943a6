"""Fusion families replayed on fusecap.py's captures (eval/baselines/README.md, "Eighth pass").

``fuse`` with its defaults is the evidence fusion as shipped before the lone-term weight (``one=0.4``
is it as shipped now); each family is one change:
- ``gate``: a hit's lexical evidence counts in full only when its cosine reaches ``g_hi`` (linearly
  less down to ``g_lo``, none below): words shared with a text about something else are not evidence;
- ``rel``: the same with the cosine as a share of the query's best cosine (``r_lo``, ``r_hi``);
- ``missing``: lexical evidence times ``missing`` for a text outside the vector leg's list;
- ``one``: lexical evidence times ``one`` for a text holding one of a query's several terms
  (below cosine ``one_cos`` when given): one shared word is weak evidence of an answer; the engine's
  own set (``row["lone"]``, ``bm25.fusion_coverage``) where the capture has it, else counted from
  ``with_matches``, which misses the stems and typo forms the engine matches;
- ``few``: lexical evidence times ``few`` for a text holding under ``few_share`` of the query's terms;
- ``rho``: the vector evidence partly relative to the query's best cosine (as BM25's is to its best);
- ``adapt``: alpha scaled by the best coverage any candidate reaches (a query no text covers well
  is one whose words are not the answer's).
"""
import itertools


def fuse(row, alpha=0.78, cos_floor=0.1, power=3.0, bm25_share=0.5, g_lo=None, g_hi=None, g_min=0.0,
         a_cov=None, a_min=None, r_lo=None, r_hi=None, r_min=0.0, missing=None, one=None, one_cos=None, rho=0.0,
         few=None, few_share=0.5):
    """The fused order of one captured query (``matched`` / ``n_terms`` from ``with_matches`` for
    ``one`` and ``few``)."""
    rankings, coverage = row["rankings"], row["coverage"]
    natives = {leg: dict(r) for leg, r in rankings.items()}
    bm25_of, vector_of = natives.get("bm25", {}), natives.get("vector", {})
    best_bm25 = max(bm25_of.values(), default=0.0)
    if a_cov is not None:
        best_cov = max(coverage.values(), default=0.0)
        if best_cov < a_cov:
            alpha = a_min + (alpha - a_min) * best_cov / a_cov
    span = max(1e-9, 1 - cos_floor)
    top_cos = max(vector_of.values(), default=0.0)
    scores, best_rank = {}, {}
    for leg, ranking in rankings.items():
        for rank, (key, _) in enumerate(ranking, 1):
            if rank < best_rank.get(key, 10**9):
                best_rank[key] = rank
    for key in best_rank:
        lexical = coverage.get(key, 0.0) ** power
        if best_bm25 > 0:
            b = bm25_of.get(key)
            lexical *= (1 - bm25_share) + bm25_share * (b / best_bm25 if b is not None else 0.0)
        v = vector_of.get(key)
        lone = key in row["lone"] if "lone" in row else row["matched"].get(key, 0) == 1 and row["n_terms"] >= 2
        if one is not None and lone and (one_cos is None or (v or 0.0) < one_cos):
            lexical *= one
        if few is not None and row["n_terms"] >= 2 and row["matched"].get(key, 0) < few_share * row["n_terms"]:
            lexical *= few
        if missing is not None and v is None:
            lexical *= missing
        if r_hi is not None:
            r = (v if v is not None else 0.0) / top_cos if top_cos > 0 else 1.0
            g = 1.0 if r >= r_hi else max(0.0, (r - r_lo) / (r_hi - r_lo))
            lexical *= r_min + (1 - r_min) * g
        if g_hi is not None:
            c = v if v is not None else 0.0
            g = 1.0 if c >= g_hi else max(0.0, (c - g_lo) / (g_hi - g_lo)) if c > g_lo else 0.0
            lexical *= g_min + (1 - g_min) * g
        semantic = max(0.0, v - cos_floor) / span if v is not None else 0.0
        if rho and v is not None and top_cos > cos_floor:
            semantic = (1 - rho) * semantic + rho * max(0.0, v - cos_floor) / (top_cos - cos_floor)
        scores[key] = alpha * lexical + (1 - alpha) * semantic
    return sorted(scores, key=lambda k: (-scores[k], best_rank[k], k))


def grid(**axes):
    keys = list(axes)
    for values in itertools.product(*axes.values()):
        yield dict(zip(keys, values))


def with_matches(cap, texts_of):
    """Add each candidate's count of distinct query terms (``matched``) and the query's (``n_terms``)."""
    from kenning.retrieval.text import match_terms, query_terms
    for qid, row in cap["rows"].items():
        if row["rankings"] is None or "matched" in row:
            continue
        terms = query_terms(cap["texts"][qid])
        row["n_terms"] = len(terms)
        row["matched"] = {k: len(match_terms(terms, texts_of[k])) for k, c in row["coverage"].items() if c > 0}
    return cap
