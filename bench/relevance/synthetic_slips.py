"""Misspelt questions nobody tuned on: every exact and word-form question of the memory sets with one
slip put into one of its words of five letters or more (two adjacent letters swapped or one left
out, seeded), ranked in hybrid with the vector leg's respelling (``spelling.for_the_model``) and
without it (the query as written), and in semantic mode: nDCG@10, top hits `high`, and how many of
those are judged relevant.
    python bench/relevance/synthetic_slips.py builtin memval memval2 memval3
"""
import random, re, sys
from kenning.eval import harness, metrics
from kenning.eval.datasets import load_dataset
from kenning.retrieval import spelling

SEED = 29
respelt = spelling.for_the_model


def slipped(text, rng):
    words = list(re.finditer(r"[A-Za-z]{5,}", text))
    if not words:
        return None
    m = rng.choice(words)
    w = m.group(0)
    if rng.random() < 0.5:
        i = rng.randrange(1, len(w) - 2)
        w = w[:i] + w[i + 1] + w[i] + w[i + 2:]
    else:
        i = rng.randrange(1, len(w) - 1)
        w = w[:i] + w[i + 1:]
    return text[:m.start()] + w + text[m.end():]


if __name__ == "__main__":
    rng = random.Random(SEED)
    for name in sys.argv[1:]:
        data = load_dataset(name)
        asked = [(q.id, slipped(q.text, rng)) for q in data.queries.values()
                 if data.is_answerable(q.id) and getattr(q, "category", "") in ("exact", "wordform")]
        asked = [(qid, text) for qid, text in asked if text]
        with harness.loaded_store(data, None, semantic=True) as store:
            for label, mode, fix in (("semantic", "semantic", respelt), ("hybrid, as written", "hybrid", lambda q, *a: q),
                                     ("hybrid, respelt", "hybrid", respelt)):
                spelling.for_the_model = fix
                run, high, right = {}, 0, 0
                for qid, text in asked:
                    hits = store.rank(text, mode=mode, depth=10, scopes=None, explain=False).hits
                    run[qid] = [h.id for h in hits]
                    if hits and hits[0].relevance == "high":
                        high += 1
                        right += data.qrels.get(qid, {}).get(hits[0].id, 0) > 0
                spelling.for_the_model = respelt
                ndcg = metrics.evaluate(data.qrels, run, run)["nDCG@10"]
                print(f"{name:9s} {len(asked):3d} slipped questions  {label:18s} nDCG@10 {ndcg:.4f}"
                      f"  top hits high {high} ({right} judged relevant)")
