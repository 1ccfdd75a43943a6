"""Per-hit label inputs, seventh pass: what ``labels.label`` was given for each of a query's top-10
hits, read from the shipped engine itself (``Store.rank`` hybrid, as ``kenning eval run`` runs it),
plus each hit's legs, text and judged relevance, and the cosine between the top hit and hits 2-3.
A collection's own queries are answerable (or builtin's unanswerable ones); ``--foreign`` adds
another collection's queries as off-topic ones; ``--removed`` instead asks each answerable question
of the store without its judged answers (removed before it is asked, restored after: near misses by
construction).
    python bench/relevance/labelfeat7.py builtin --foreign /work/shared/eval-data/locomo-dev
    # writes $KENNING_RELEVANCE_OUT/labelfeat7-<name>.pkl
"""
import argparse, os, pickle, time
import numpy as np
from kenning.eval import harness
from kenning.eval.datasets import load_dataset, with_foreign_queries
from kenning.retrieval import engine, labels
from kenning.retrieval.embedding_cache import EmbeddingCache

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
TOP = 10


def best_hits(path):
    """Each question of a dump with its best hit (a question with no hit left out); nothing when the
    dump is missing. What the scripts that replay labels on these dumps read."""
    if not os.path.exists(path):
        return
    for q in pickle.load(open(path, "rb")).values():
        if q["hits"]:
            yield q, q["hits"][0]


def dump(source, foreign, group_sep, limit, removed=False, mode="hybrid"):
    data = load_dataset(source)
    if foreign:
        data = with_foreign_queries(data, load_dataset(foreign))
    calls = []
    real_label, real_explain = labels.label, engine.explain

    def label(*args, **kw):
        out = real_label(*args, **kw)
        # the question check is a callable (not picklable): keep whether it fired instead
        calls[-1]["label_args"] = (tuple(a for a in args if not callable(a)),
                                   {k: v for k, v in kw.items() if not callable(v)})
        calls[-1]["label"] = out
        return out

    def explain(candidate, *args, **kw):
        calls.append({"key": candidate.key, "legs": dict(candidate.legs), "score": candidate.score,
                      "runner_up": kw.get("runner_up")})
        return real_explain(candidate, *args, **kw)

    labels.label, engine.explain = label, explain
    rows = {}
    try:
        with harness.loaded_store(data, group_sep, semantic=True) as store:
            vectors = store.semantic.availability().working  # KENNING_ENCODER=none: a base install's labels
            model = store.semantic.model_info()["model_id"]
            cache = EmbeddingCache()
            for n, q in enumerate(data.queries.values()):
                if limit and n >= limit:
                    break
                calls.clear()
                judged = data.qrels.get(q.id, {})
                answers = [d for d, g in judged.items() if g > 0] if removed else []
                if removed and not answers:
                    continue
                for d in answers:
                    store.remove(d, "near miss")
                result = store.rank(q.text, mode=mode, depth=100, scopes=harness.query_scopes(q.id, group_sep),
                                    explain=False)
                for d in answers:
                    store.restore(d)
                if vectors:
                    store.semantic.embed_pending()
                hits = result.hits[:TOP]
                texts = [data.documents[h.id].content for h in hits]
                vecs = cache.get_many(model, texts[:3]) if texts and vectors else []
                sims = [float(np.dot(vecs[0], v)) if vecs[0] is not None and v is not None else None for v in vecs[1:]]
                rows[q.id] = {"text": q.text, "answerable": data.is_answerable(q.id) and not removed,
                              "foreign": q.id.startswith("foreign"),
                              "hits": [dict(c, id=h.id, text=t, rel=judged.get(h.id, 0) > 0)
                                       for c, h, t in zip(calls, hits, texts)],
                              "sim12": sims}
            cache.close()
    finally:
        labels.label, engine.explain = real_label, real_explain
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--foreign")
    ap.add_argument("--group-sep")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--removed", action="store_true")
    ap.add_argument("--mode", default="hybrid", help="the search mode dumped (semantic: labelfeat7-<name>-semantic.pkl)")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    t = time.time()
    rows = dump(a.source, a.foreign, a.group_sep, a.limit, a.removed, a.mode)
    name = os.path.basename(a.source.rstrip("/")) + "-removed" * a.removed + ("" if a.mode == "hybrid" else f"-{a.mode}")
    pickle.dump(rows, open(f"{OUT}/labelfeat7-{name}.pkl", "wb"))
    print(name, len(rows), "queries", round(time.time() - t), "s")
