"""Which queries a swap undone in the word as written respells (retrieval/spelling.py's
``written_swaps``), per collection: every query token no document holds and the slips of its stem
do not fix, the swaps of the query's written word tokenized, the most common stored one kept.
``--inserts`` also puts a left-out letter back into the written word (the variant not shipped: it
"corrects" words the store merely lacks); ``--whole-inserts`` only into a word the stemmer leaves
whole, and never after its last letter (not shipped either: the stemmer makes stems of non-words,
"status" -> "statues" -> "statu", "evening" -> "evenning" -> "even").
    python bench/relevance/written_swaps.py [--inserts | --whole-inserts]
"""
import argparse, collections, os
from kenning.eval.datasets import load_dataset
from kenning.retrieval import spelling, text

DATA = os.environ.get("KENNING_EVAL_DATA", "../shared/eval-data")
SOURCES = ["builtin", "memval", "memval2", "memval3"] + [
    f"{DATA}/{c}" for c in ("med", "cranfield", "npl", "locomo-dev", "scifact-train")]


def changes(source, inserts, whole=False):
    data = load_dataset(source)
    df = collections.Counter()
    for doc in data.documents.values():
        df.update(set(text.tokenize(doc.content)))
    freqs = lambda terms: {t: df.get(t, 0) for t in terms}
    for q in data.queries.values():
        tokens = text.search_tokens(q.text)
        fixed, words, new = spelling.corrections(tokens, freqs, {}), text.surface_forms(q.text), {}
        for t in dict.fromkeys(tokens):
            word = words.get(t, t)
            if t in fixed or df.get(t) or len(t) < spelling.MIN_LENGTH or (word == t) != whole or not word.isalpha():
                continue
            if whole:  # the letters put back inside the word only
                tried = [word[:i] + c + word[i:] for i in range(1, len(word)) for c in spelling._LETTERS] \
                    if len(word) >= spelling.MIN_INSERT_LENGTH else []
            else:
                tried = spelling.slips(word) if inserts else spelling.written_swaps(word, t)
            stems = {s for w in tried for s in text.tokenize(w)} if inserts or whole else set(tried)
            best = max((s for s in stems if df.get(s)), key=df.get, default=None)
            if best:
                new[t] = (word, best)
        if new:
            yield q.text, new


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inserts", action="store_true")
    ap.add_argument("--whole-inserts", action="store_true")
    a = ap.parse_args()
    for source in SOURCES:
        found = list(changes(source, a.inserts, a.whole_inserts))
        for query, new in found:
            print("   ", query[:70], new)
        print(os.path.basename(source), len(found), "queries change")
