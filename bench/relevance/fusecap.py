"""Capture what hybrid's fusion is given for every query (the legs' rankings and each candidate's
coverage, read from the shipped engine's own call of ``fusion.evidence``), so that fusion variants
can be replayed offline in milliseconds and scored with the collection's judgments.

    python bench/relevance/fusecap.py builtin /work/memval /work/shared/eval-data/med ...
    # writes $KENNING_RELEVANCE_OUT/fusecap-<name>.pkl
"""
import os
import pickle
import sys
from pathlib import Path

from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import fusion

OUT = Path(os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance"))
GROUPED = {"locomo-dev": ":"}


def capture(source: str) -> Path:
    data = load_dataset(source)
    sep = GROUPED.get(data.name)
    calls = []
    real = fusion.evidence

    def recorded(rankings, coverage, **kw):
        calls.append((rankings, dict(coverage), {k: v for k, v in kw.items() if k != "limit"}))
        return real(rankings, coverage, **kw)

    fusion.evidence = recorded
    rows = {}
    try:
        with harness.loaded_store(data, sep, semantic=True) as store:
            ids = dict(store.db.read(lambda c: c.execute("SELECT rowid, id FROM memories").fetchall()))
            for q in data.queries.values():
                calls.clear()
                result = store.rank(q.text, mode="hybrid", depth=100, scopes=harness.query_scopes(q.id, sep), explain=False)
                shipped = [hit.id for hit in result.hits]
                if not calls:  # a leg came back empty: nothing was fused
                    rows[q.id] = {"rankings": None, "shipped": shipped}
                    continue
                rankings, coverage, settings = calls[0]
                rows[q.id] = {
                    "rankings": {leg: [(ids[k], s) for k, s in r] for leg, r in rankings.items()},
                    "coverage": {ids[k]: c for k, c in coverage.items()},
                    "lone": frozenset(ids[k] for k in settings.pop("lone", ())),
                    "settings": settings, "shipped": shipped,
                }
    finally:
        fusion.evidence = real
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"fusecap-{data.name}.pkl"
    with open(path, "wb") as f:
        pickle.dump({"name": data.name, "rows": rows, "qrels": data.qrels,
                     "kinds": {q.id: q.category for q in data.queries.values()},
                     "texts": {q.id: q.text for q in data.queries.values()}}, f)
    return path


if __name__ == "__main__":
    for source in sys.argv[1:]:
        print(capture(source), flush=True)
