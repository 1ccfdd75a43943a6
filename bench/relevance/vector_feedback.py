"""Feedback on the hybrid's vector leg for long questions (retrieval/feedback.py, ``moved_query``):
each grid setting of (texts, weight, terms) - the question's vector moved toward its ``texts``
nearest texts by ``weight``, for questions of at least ``terms`` distinct terms - run through the
shipped engine (``Store.rank`` hybrid, as ``kenning eval run`` runs it), nDCG@10 per answerable
question; bm25 and semantic once (feedback never runs there). Prints each collection's margin of
hybrid over its better leg per setting, the settings by their smallest margin, and
leave-one-collection-out: the setting with the largest smallest margin on the other collections,
scored on the one left out. SciFact: its first 400 questions, as the gate runs it.
    KENNING_EVAL_DATA=../shared/eval-data python bench/relevance/vector_feedback.py
"""
import itertools, math, os, sys
import numpy as np
from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import feedback

DATA = os.environ.get("KENNING_EVAL_DATA", "../shared/eval-data")
NAMES = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
OFF = (0, 0.0, 10 ** 9)
GRID = [OFF] + list(itertools.product((1, 2, 3, 4), (0.1, 0.15, 0.2, 0.3, 0.4, 0.5), (4, 5, 6, 7)))


def ndcg10(ids, judged):
    dcg = sum((2 ** judged.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ids[:10]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:10]
    best = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def per_question(name):
    source = name if name in ("builtin", "memval", "memval2", "memval3") else os.path.join(DATA, name)
    sep = ":" if name == "locomo-dev" else None
    data = load_dataset(source)
    asked = [q for q in data.queries.values() if data.is_answerable(q.id)][: 400 if name == "scifact-train" else None]
    out = {}
    with harness.loaded_store(data, sep, semantic=True) as store:
        def run(mode):
            return np.array([ndcg10([h.id for h in store.rank(q.text, mode=mode, depth=10, explain=False,
                                                               scopes=harness.query_scopes(q.id, sep)).hits],
                                    data.qrels.get(q.id, {})) for q in asked])
        out["bm25"], out["semantic"] = run("bm25"), run("semantic")
        shipped = feedback.VECTOR_FEEDBACK_DOCS, feedback.VECTOR_FEEDBACK_WEIGHT, feedback.VECTOR_FEEDBACK_TERMS
        try:
            for setting in GRID:
                feedback.VECTOR_FEEDBACK_DOCS, feedback.VECTOR_FEEDBACK_WEIGHT, feedback.VECTOR_FEEDBACK_TERMS = setting
                out[setting] = run("hybrid")
        finally:
            feedback.VECTOR_FEEDBACK_DOCS, feedback.VECTOR_FEEDBACK_WEIGHT, feedback.VECTOR_FEEDBACK_TERMS = shipped
    return out


def margin(per, setting):
    return per[setting].mean() - max(per["bm25"].mean(), per["semantic"].mean())


if __name__ == "__main__":
    names = sys.argv[1:] or NAMES
    res = {}
    for name in names:
        res[name] = per_question(name)
        print(name, "done", flush=True)
    settings = sorted((s for s in GRID if s != OFF), key=lambda s: -min(margin(res[n], s) for n in names))
    print("setting (texts, weight, terms): smallest margin | per collection; first without feedback")
    for s in [OFF] + settings[:15]:
        print(s, f"{min(margin(res[n], s) for n in names):+.4f} |",
              " ".join(f"{n} {margin(res[n], s):+.4f}" for n in names))
    print("leave one collection out:")
    for name in names:
        others = [n for n in names if n != name]
        chosen = max(GRID, key=lambda s: (min(margin(res[n], s) for n in others), sum(margin(res[n], s) for n in others)))
        print(f"  {name:14s} chosen {chosen}: margin {margin(res[name], chosen):+.4f} (without {margin(res[name], OFF):+.4f})")
