"""What respelling unindexed query words (retrieval/spelling.py) does to every collection: the lexical
legs of legs.py's pickles recomputed on the corrected query tokens (BM25 and keyword, then RM3
feedback as hybrid ships it; the vector leg kept: it embeds the query as written), written as
``legs-<tag>~ty.pkl`` and ``legs-<tag>~ty~fb.pkl``; then per collection bm25 / vector / hybrid
nDCG@10 and R@10 before and after, the margin over the better leg, the shipped label rule's
answerable top hits `high` and its unanswerable top hits `high`, and a fusion grid for loo.py.

``--embed-respelt`` also embeds the respelt query text for the vector leg (``~tv`` pickles; builtin
only: the variant not shipped, measured for the write-up).
    python bench/relevance/spelling.py builtin med cranfield npl locomo-dev scifact-train \\
        --pairs med-q-cranfield cranfield-q-med locomo-dev-q-npl builtin-q-locomo-dev scifact-train-q-locomo-dev npl-q-med
    python bench/relevance/loo.py $KENNING_RELEVANCE_OUT/spelling-none.pkl
    python bench/relevance/loo.py $KENNING_RELEVANCE_OUT/spelling-~ty.pkl
"""
import argparse, itertools, os, pickle, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from legs import MemIndex, setup, vectors
from kenning.eval.datasets import group_of
from kenning.retrieval import bm25, feedback, keyword, labels, lexical, spelling, text
import labelfeat2
from sweep import Coll, leg
from sweep6 import evbm

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
C = {c: i for i, c in enumerate(labelfeat2.COLS)}
GRID = list(itertools.product((0.75, 0.78, 0.8), (0.1, 0.2), (3,), (0.25, 0.5, 0.75, 1.0)))
SHIPPED = (0.78, 0.1, 3, 0.5)


def doc_freqs(idx):
    return lambda terms: {t: int(idx.post[t][0].size) if t in idx.post else 0 for t in terms}


def allowed_for(q, other, sep, masks):
    if len(masks) <= 1:
        return None
    return masks[sorted(masks, key=str)[0]] if other else masks.get(group_of(q, sep))


def respell(tag, embed=False):
    """legs-<tag>~ty(.pkl, ~fb.pkl): the lexical legs, coverage and feedback on the corrected tokens."""
    host, _, other = tag.partition("-q-")
    r = pickle.load(open(f"{OUT}/legs-{tag}.pkl", "rb"))
    d, ids, texts, sep, masks = setup(host)
    idx = MemIndex(texts)
    fb_r, content, changed, fixes = {**r, "legs": {}}, {}, [], {}
    for q in r["queries"]:
        raw = text.query_tokens(r["qtext"][q])
        fixed = spelling.corrections(raw, doc_freqs(idx), {})  # the rule as measured: the stem's slips only
        toks = [fixed.get(t, t) for t in raw]
        terms = list(dict.fromkeys(toks))
        if fixed:
            changed.append(q)
            fixes[q] = fixed
        L, allowed = dict(r["legs"][q]), allowed_for(q, other, sep, masks)
        L["bm25"] = bm25.search(idx, toks, 100, allowed, k1=1.2, b=0.5)
        L["keyword"] = keyword.search(idx, terms, 100, allowed, phrase=r["qtext"][q],
                                      text_of=lambda keys: {k: texts[k] for k in keys})
        first = L["bm25"][:feedback.FEEDBACK_DOCS]
        fb = [(s, content.get(k) or content.setdefault(k, text.query_tokens(texts[k]))) for k, s in first]
        weights = feedback.expanded_query(toks, fb)
        F = dict(L)
        F["bm25"] = bm25.search(idx, [], 100, allowed, weights=weights) if weights else []
        for X in (L, F):
            keys = list(dict.fromkeys([k for k, _ in X["bm25"]] + [k for k, _ in X["keyword"]] + [k for k, _ in X["vector"]]))
            X["coverage"] = bm25.idf_coverage(idx, terms, keys)
            X["present"] = dict(zip(keys, lexical.contains(idx, terms, keys)))
            X["nterms"] = len(terms)
            X["idfs"] = [float(bm25.idf(idx.n_docs, idx.postings([t])[t][0].size)) for t in terms]
        r["legs"][q], fb_r["legs"][q] = L, F
    pickle.dump(r, open(f"{OUT}/legs-{tag}~ty.pkl", "wb"))
    pickle.dump(fb_r, open(f"{OUT}/legs-{tag}~ty~fb.pkl", "wb"))
    print("%-28s %d of %d queries respelt" % (tag, len(changed), len(r["queries"])),
          sorted({(a, b) for f in fixes.values() for a, b in f.items()})[:12], flush=True)
    if embed:
        embed_respelt(tag, r, fb_r, fixes, idx, texts, sep, masks, other)


def embed_respelt(tag, r, fb_r, fixes, idx, texts, sep, masks, other):
    """The ~tv variant: the vector leg embeds the query with its respelt words written out."""
    def written(q):
        def one(m):
            word = m.group(0).lower()
            toks = text.tokenize(word)
            return spelling.respelt(word, toks[0], fixes[q][toks[0]]) if len(toks) == 1 and toks[0] in fixes[q] \
                and word not in text.STOPWORDS and word.startswith(toks[0]) else m.group(0)
        return re.sub(r"[A-Za-z]+", one, r["qtext"][q])
    qs = [q for q in fixes if written(q) != r["qtext"][q]]
    dv, qv = vectors(texts), vectors([written(q) for q in qs])
    for legs_of in (r, fb_r):
        for q, v in zip(qs, qv):
            cos = dv @ v
            allowed = allowed_for(q, other, sep, masks)
            if allowed is not None:
                cos = np.where(allowed, cos, -2)
            L = dict(legs_of["legs"][q])
            L["vector"] = [(int(k), float(cos[k])) for k in np.argsort(-cos, kind="stable")[:100] if cos[k] > -2]
            terms = list(dict.fromkeys(spelling.corrections(text.query_tokens(r["qtext"][q]), doc_freqs(idx)).get(t, t)
                                       for t in text.query_tokens(r["qtext"][q])))
            keys = list(dict.fromkeys([k for k, _ in L["bm25"]] + [k for k, _ in L["keyword"]] + [k for k, _ in L["vector"]]))
            L["coverage"] = bm25.idf_coverage(idx, terms, keys)
            L["present"] = dict(zip(keys, lexical.contains(idx, terms, keys)))
            legs_of["legs"][q] = L
    pickle.dump(r, open(f"{OUT}/legs-{tag}~tv.pkl", "wb"))
    pickle.dump(fb_r, open(f"{OUT}/legs-{tag}~tv~fb.pkl", "wb"))


def top_high(rows):
    """Share of top hits the shipped rule labels `high`, and their judged precision."""
    T = [m[0] for m in rows.values()]
    h = [t[C["rel"]] >= labels.NEAR_TOP and labels.vector_high(t[C["cos"]], t[C["cov"]], int(t[C["nmatch"]]),
                                                              t[C["nmatch"]] / max(t[C["nterms"]], 1)) for t in T]
    y = [t[C["y"]] for t, x in zip(T, h) if x]
    return float(np.mean(h)), (float(np.mean(y)) if y else float("nan")), len(T)


def compare(names, pairs, suf):
    for n in names:
        a, b, fa, fb = Coll(n), Coll(n + suf), Coll(n + "~fb"), Coll(n + suf + "~fb")
        bm0, bm1, v0, v1 = a.score(leg("bm25")), b.score(leg("bm25")), a.score(leg("vector")), b.score(leg("vector"))
        h0, h1 = fa.score(evbm(*SHIPPED)), fb.score(evbm(*SHIPPED))
        l0 = top_high(labelfeat2.rows(f"{OUT}/legs-{n}~fb.pkl", True))
        l1 = top_high(labelfeat2.rows(f"{OUT}/legs-{n}{suf}~fb.pkl", True))
        print("%-14s bm25 %.4f->%.4f vector %.4f->%.4f hybrid %.4f->%.4f (R@10 %.4f->%.4f) margin %+.4f->%+.4f"
              " | answerable top hit high %.3f->%.3f (precision %.3f->%.3f)" % (
                  n, bm0[0], bm1[0], v0[0], v1[0], h0[0], h1[0], h0[1], h1[1], h0[0] - max(bm0[0], v0[0]),
                  h1[0] - max(bm1[0], v1[0]), l0[0], l1[0], l0[1], l1[1]))
    for tag in pairs:
        u0 = top_high(labelfeat2.rows(f"{OUT}/legs-{tag}~fb.pkl", False))
        u1 = top_high(labelfeat2.rows(f"{OUT}/legs-{tag}{suf}~fb.pkl", False))
        print("unanswerable %-28s top hit high %.3f -> %.3f (n %d)" % (tag, u0[0], u1[0], u1[2]))


def sweep(names, suf):
    """The fusion grid on plain (suf "none") or respelt legs, for loo.py."""
    s = "" if suf == "none" else suf
    plain, fb = {n: Coll(n + s) for n in names}, {n: Coll(n + s + "~fb") for n in names}
    base = {n: {l: c.score(leg(l)) for l in ("bm25", "vector")} for n, c in plain.items()}
    res = {k: {n: fb[n].score(evbm(*k)) for n in names} for k in GRID}
    pickle.dump({"base": base, "res": res}, open(f"{OUT}/spelling-{suf}.pkl", "wb"))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--pairs", nargs="*", default=[], help="off-topic pickles (<host>-q-<other>), unanswerable")
    ap.add_argument("--embed-respelt", action="store_true", help="also the ~tv variant (respelt text embedded)")
    a = ap.parse_args()
    for tag in a.names + a.pairs:
        respell(tag, a.embed_respelt)
    compare(a.names, ["builtin"] * ("builtin" in a.names) + a.pairs, "~ty")
    if a.embed_respelt:
        print("with the respelt text embedded too (~tv):")
        compare(a.names, ["builtin"] * ("builtin" in a.names) + a.pairs, "~tv")
    if len(a.names) > 2:
        for suf in ("none", "~ty"):
            sweep(a.names, suf)
