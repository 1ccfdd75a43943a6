"""How sure the hybrid's margin over its better leg is: per collection, nDCG@10 of every answerable
question in bm25, semantic and hybrid (``Store.rank``, as ``kenning eval run`` runs it), the margin
hybrid - max(bm25, semantic), and its spread over 4,000 bootstrap resamples of the questions (the
three modes resampled together): the share of resamples under +.01 and under 0, and the 5th
percentile. A held-out set of the same kind draws other questions; a margin whose resamples often
fall under +.01 may not clear it there.
    KENNING_EVAL_DATA=../shared/eval-data python bench/relevance/margin_bootstrap.py builtin memval3 med
    ... margin_bootstrap.py --without-vector-feedback builtin memval3 med   # the hybrid before the twenty-third pass
"""
import os, sys
import numpy as np
from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import feedback
from vector_feedback import ndcg10  # this folder's; a script's own folder is on sys.path

DATA = os.environ.get("KENNING_EVAL_DATA", "../shared/eval-data")
MODES = ("bm25", "semantic", "hybrid")


def per_question(name):
    source = name if name.startswith(("builtin", "memval")) else os.path.join(DATA, name)
    sep = ":" if name == "locomo-dev" else None
    data = load_dataset(source)
    rows = []
    with harness.loaded_store(data, sep, semantic=True) as store:
        for q in data.queries.values():
            if data.is_answerable(q.id):
                rows.append([ndcg10([h.id for h in store.rank(q.text, mode=mode, depth=10, explain=False,
                                                             scopes=harness.query_scopes(q.id, sep)).hits],
                                    data.qrels.get(q.id, {})) for mode in MODES])
    return np.array(rows)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    names = sys.argv[1:]
    if names and names[0] == "--without-vector-feedback":
        feedback.VECTOR_FEEDBACK_TERMS, names = 10 ** 9, names[1:]
    for name in names:
        scores = per_question(name)
        means = scores.mean(0)
        resampled = scores[rng.integers(0, len(scores), (4000, len(scores)))].mean(1)
        margins = resampled[:, 2] - resampled[:, :2].max(1)
        print(f"{name}: {len(scores)} questions, bm25 {means[0]:.4f} semantic {means[1]:.4f} hybrid {means[2]:.4f}, "
              f"margin {means[2] - means[:2].max():+.4f}; resampled under +.01 {np.mean(margins < 0.01):.2f}, "
              f"under 0 {np.mean(margins < 0):.2f}, 5th percentile {np.percentile(margins, 5):+.4f}", flush=True)
