"""CPU cost of the BM25 leg's feedback (RM3) against the plain leg, per query, in-process
(legs.py's in-memory index; texts from memory, as the store's text memo serves them).
Median of 5 runs over every query of each collection.
    python bench/relevance/feedback_cost.py scifact-train locomo-dev
"""
import os, statistics, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from legs import MemIndex, setup
from kenning.retrieval import bm25, feedback, text


def plain(idx, texts, toks):
    return bm25.search(idx, toks, 100)


def with_feedback(idx, texts, toks):
    first = bm25.search(idx, toks, feedback.FEEDBACK_DOCS)
    w = feedback.expanded_query(toks, [(s, text.query_tokens(texts[k])) for k, s in first])
    return bm25.search(idx, [], 100, weights=w) if w else []


if __name__ == "__main__":
    for name in sys.argv[1:]:
        d, ids, texts, sep, masks = setup(name)
        idx = MemIndex(texts)
        queries = [text.query_tokens(q.text) for q in d.queries.values()]
        out = {}
        for fn in (plain, with_feedback, plain, with_feedback):
            runs = []
            for _ in range(5):
                t = time.process_time()
                for toks in queries:
                    fn(idx, texts, toks)
                runs.append((time.process_time() - t) / len(queries) * 1000)
            out[fn.__name__] = statistics.median(runs)
        print("%s: %d texts, %d queries; CPU ms/query: plain %.2f, with feedback %.2f (x%.1f)" % (
            name, len(texts), len(queries), out["plain"], out["with_feedback"], out["with_feedback"] / out["plain"]))
