"""A query in lower case, fifteenth pass: for each lowercased question with words no text holds
whose top hit is `high` (hybrid, as shipped), the top hit's cosine to the question and to the
question without those words. A look-alike name is noise to the hit, so dropping it should raise the
cosine; an ordinary word the hit paraphrases ("deadline") should lower it.
    python bench/relevance/dropword.py builtin memval memval2
"""
import sys, re
import numpy as np
from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import labels
from kenning.retrieval.text import token_spans
real = labels.ceiling
ST = {}
def ceiling(q, unknown=()):
    ST["unknown"] = list(unknown); return real(q, unknown)
labels.ceiling = ceiling
for src in sys.argv[1:]:
    data = load_dataset(src)
    with harness.loaded_store(data, None, semantic=True) as store:
        enc = store.semantic.encoder()
        for q in data.queries.values():
            text = q.text.lower()
            hits = store.rank(text, mode="hybrid", depth=100, explain=False).hits
            if not hits or hits[0].relevance != "high" or not ST["unknown"]: continue
            unknown = set(ST["unknown"])
            kept = " ".join(text[s:e] for tok, s, e in token_spans(text) if tok not in unknown)
            doc = data.documents[hits[0].id].content
            v = enc.encode([text, kept, doc])
            c1, c2 = float(v[0] @ v[2]), float(v[1] @ v[2])
            kind = "ANS" if data.is_answerable(q.id) else "UNA"
            right = data.qrels.get(q.id, {}).get(hits[0].id, 0) > 0
            print(f"{data.name:8s} {kind} right={right!s:5s} cos {c1:.3f} -> {c2:.3f} ({c2-c1:+.3f}) rel {(c2-c1)/c1:+.2f} | {text!r} -> {kept!r} unknown {sorted(unknown)}")
