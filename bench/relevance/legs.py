"""Scratch: precompute leg rankings per collection (in-memory lexical index, exact cosine)."""
import os
OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
os.makedirs(OUT, exist_ok=True)
import pickle, sys, time
from collections import Counter, defaultdict
import numpy as np
from kenning.eval.datasets import load_dataset, group_of
from kenning.eval.harness import indexable
from kenning.retrieval import bm25, keyword, lexical, text
from kenning.retrieval.embedding_cache import EmbeddingCache, embed_with_cache

DATA = "/work/shared/eval-data"
GROUPED = {"locomo-dev": ":"}

class MemIndex:
    def __init__(self, docs):
        self.doc_key = np.arange(len(docs), dtype=np.int64)
        lens, post = [], defaultdict(lambda: ([], []))
        for i, t in enumerate(docs):
            c = Counter(text.tokenize(t))
            lens.append(sum(c.values()))
            for term, tf in c.items():
                post[term][0].append(i); post[term][1].append(tf)
        self.doc_len = np.asarray(lens, np.float64)
        self.doc_ts = np.zeros(len(docs))
        self.live = np.ones(len(docs), bool)
        self.n_docs = len(docs)
        self.avg_len = float(self.doc_len.mean())
        self.post = {t: (np.asarray(a, np.int64), np.asarray(b, np.int32)) for t, (a, b) in post.items()}
        self.size = sum(len(a) for a, _ in self.post.values())
    def lexids_of(self, keys):
        return np.asarray(keys, np.int64)
    def postings(self, terms):
        e = (np.empty(0, np.int64), np.empty(0, np.int32))
        return {t: self.post.get(t, e) for t in terms}

def load(name):
    return load_dataset("builtin" if name == "builtin" else f"{DATA}/{name}")

def setup(name, data=None):
    d = data or load(name)
    docs = indexable(d)
    ids = [i for i, _ in docs]; texts = [c for _, c in docs]
    sep = GROUPED.get(name)
    groups = defaultdict(list)
    for k, i in enumerate(ids):
        groups[group_of(i, sep)].append(k)
    masks = {}
    for g, ks in groups.items():
        m = np.zeros(len(ids), bool); m[ks] = True; masks[g] = m
    return d, ids, texts, sep, masks

def vectors(texts):
    from kenning.retrieval import embeddings
    enc = embeddings.get_encoder(embeddings.resolve_model(None))
    with EmbeddingCache() as c:
        return embed_with_cache(enc, texts, c)

def precompute(name, queries_from=None, depth=100, k1=1.2, b=0.5):
    d, ids, texts, sep, masks = setup(name)
    qd = load(queries_from) if queries_from else d
    idx = MemIndex(texts)
    dv = vectors(texts)
    qs = list(qd.queries.values())
    qv = vectors([q.text for q in qs])
    out = {}
    for q, v in zip(qs, qv):
        g = group_of(q.id, sep) if not queries_from else None
        allowed = masks.get(g) if len(masks) > 1 else None
        if queries_from and len(masks) > 1:
            allowed = masks[sorted(masks, key=str)[0]]
        toks = text.query_tokens(q.text); terms = list(dict.fromkeys(toks))
        bm = bm25.search(idx, toks, depth, allowed, k1=k1, b=b)
        kw = keyword.search(idx, terms, depth, allowed, phrase=q.text, text_of=lambda keys: {k: texts[k] for k in keys})
        cos = dv @ v
        if allowed is not None:
            cos = np.where(allowed, cos, -2)
        top = np.argsort(-cos, kind="stable")[:depth]
        vec = [(int(k), float(cos[k])) for k in top if cos[k] > -2]
        keys = list(dict.fromkeys([k for k, _ in bm] + [k for k, _ in kw] + [k for k, _ in vec]))
        cov = bm25.idf_coverage(idx, terms, keys)
        present = lexical.contains(idx, terms, keys)
        idfs = [float(bm25.idf(idx.n_docs, idx.postings([t])[t][0].size)) for t in terms]
        out[q.id] = {"bm25": bm, "keyword": kw, "vector": vec, "coverage": cov, "nterms": len(terms),
                     "idfs": idfs, "present": {k: row for k, row in zip(keys, present)}}

    qrels = {} if queries_from else {q: {ids.index(x) if False else x: g for x, g in j.items()} for q, j in d.qrels.items()}
    return {"ids": ids, "queries": [q.id for q in qs], "qtext": {q.id: q.text for q in qs},
            "cat": {q.id: q.category for q in qs}, "qrels": qrels, "legs": out, "index_size": idx.size}

if __name__ == "__main__":
    name = sys.argv[1]; src = sys.argv[2] if len(sys.argv) > 2 else None
    t = time.time()
    r = precompute(name, src)
    pickle.dump(r, open(OUT + f"/legs-{name}{'-q-'+src if src else ''}.pkl", "wb"))
    print(name, src, round(time.time() - t, 1))
