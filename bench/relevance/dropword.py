"""A query in lower case, fifteenth pass: for each lowercased question with words no text holds
whose top hit is `high` (hybrid, as shipped), the top hit's cosine to the question and to the
question without those words. A look-alike name is noise to the hit, so dropping it should raise the
cosine; an ordinary word the hit paraphrases ("deadline") should lower it.
    python bench/relevance/dropword.py builtin memval memval2
"""
import sys

from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import labels
from kenning.retrieval.text import token_spans

shipped_ceiling = labels.ceiling
unknown_of_last = []  # the unknown terms the search just asked the ceiling about


def ceiling(query, unknown=()):
    unknown_of_last[:] = list(unknown)
    return shipped_ceiling(query, unknown)


if __name__ == "__main__":
    labels.ceiling = ceiling
    for source in sys.argv[1:]:
        data = load_dataset(source)
        with harness.loaded_store(data, None, semantic=True) as store:
            encoder = store.semantic.encoder()
            for q in data.queries.values():
                text = q.text.lower()
                hits = store.rank(text, mode="hybrid", depth=100, explain=False).hits
                if not hits or hits[0].relevance != "high" or not unknown_of_last:
                    continue
                unknown = set(unknown_of_last)
                kept = " ".join(text[s:e] for token, s, e in token_spans(text) if token not in unknown)
                question, without, hit = encoder.encode([text, kept, data.documents[hits[0].id].content])
                before, after = float(question @ hit), float(without @ hit)
                kind = "answerable" if data.is_answerable(q.id) else "unanswerable"
                right = data.qrels.get(q.id, {}).get(hits[0].id, 0) > 0
                print(f"{data.name:8s} {kind:12s} right={right!s:5s} cosine {before:.3f} -> {after:.3f} ({after - before:+.3f})"
                      f" | {text!r} -> {kept!r}, unknown {sorted(unknown)}")
