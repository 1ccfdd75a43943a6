"""Does a token-level soft match tell a right top hit from a near miss? Each query word (no stopword,
no piece of punctuation) is matched to its closest token of the top hit by MiniLM's contextual token
vectors (the vectors the sentence vector is the mean of); ``soft_min`` is the worst query word's
best match, ``soft_mean`` their mean (BERTScore's recall). Printed per memory set: the figures of
the unanswerable questions' top hits, of the right top hits `high` and not `high`, and how many
right-but-not-`high` top hits an unanswerable question's top hit still matches or beats on the five
figures of dominance.py plus these two. Loads the model with sentence-transformers (torch).
    for n in builtin memval memval2 memval3; do python bench/relevance/labelfeat7.py $n; done
    python bench/relevance/soft_tokens.py
"""
import os, pickle, re, sys
import numpy as np
from sentence_transformers import SentenceTransformer
from kenning.retrieval import embeddings, text

sys.path.insert(0, os.path.dirname(__file__))
from dominance import dominated, evidence  # noqa: E402

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
model = SentenceTransformer(str(embeddings.resolve_model().path))
_tokens: dict[str, tuple[list[str], np.ndarray]] = {}


def tokens(passage):
    if passage not in _tokens:
        vectors = model.encode([passage], output_value="token_embeddings", convert_to_numpy=False)[0].cpu().numpy()
        names = model.tokenizer.convert_ids_to_tokens(model.tokenizer(passage, truncation=True, max_length=256)["input_ids"])
        _tokens[passage] = names, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return _tokens[passage]


def soft(query, hit):
    q_names, q_vectors = tokens(query)
    h_names, h_vectors = tokens(hit)
    inner = lambda names: [i for i, n in enumerate(names) if n not in ("[CLS]", "[SEP]")]
    words = [i for i in inner(q_names) if re.match(r"^[#\w]", q_names[i]) and q_names[i] not in text.STOPWORDS]
    best = (q_vectors[words or inner(q_names)] @ h_vectors[inner(h_names)].T).max(axis=1)
    return float(best.min()), float(best.mean())


for name in ["builtin", "memval", "memval2", "memval3"]:
    rows = pickle.load(open(f"{OUT}/labelfeat7-{name}.pkl", "rb"))
    tops = [(q, q["hits"][0]) for q in rows.values() if q["hits"]]
    figures = {id(h): evidence(h) + soft(q["text"], h["text"]) for q, h in tops}
    unanswerable = [figures[id(h)] for q, h in tops if not q["answerable"]]
    right = [h for q, h in tops if q["answerable"] and h["rel"] in (True, "True")]
    high = [figures[id(h)] for h in right if h["label"] == "high"]
    waiting = [figures[id(h)] for h in right if h["label"] != "high"]
    for column, label in ((5, "soft_min"), (6, "soft_mean")):
        median = lambda rows: np.median([r[column] for r in rows]) if rows else float("nan")
        print(f"{name} {label}: unanswerable tops median {median(unanswerable):.2f}, max "
              f"{max(r[column] for r in unanswerable):.2f}; right `high` {median(high):.2f}; right not `high` "
              f"{median(waiting):.2f}")
    print(f"{name}: right not `high` {len(waiting)}, dominated by an unanswerable's top hit on seven figures "
          f"{sum(dominated(w, unanswerable) for w in waiting)} (five: {sum(dominated(w[:5], [u[:5] for u in unanswerable]) for w in waiting)})")
