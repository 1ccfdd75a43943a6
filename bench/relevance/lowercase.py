"""A query written in lower case, fifteenth pass: the unknown-name ceiling and the paraphrase branch's
name test read capitals, so "yuki tanaka parental leave dates" passes where "Yuki Tanaka ..." is
capped. Runs each collection's questions as written and lowercased through the shipped engine
(hybrid), and with two variants for a query that writes no capital past its first word:
``known`` - the known-term coverage no longer discounts the words no text holds; ``names`` - a query
word the collection writes with a capital mid-sentence counts as a name (``labels.names_something``).
Prints the answerable questions' top hits `high` and judged right, and the unanswerable ones' `high`.
    python bench/relevance/lowercase.py builtin memval memval2
"""
import re
import sys

from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import labels
from kenning.retrieval.text import STOPWORDS, search_tokens, token_spans

_WORD = re.compile(r"[A-Za-z][\w']*")
shipped_ceiling, shipped_label, shipped_names = labels.ceiling, labels.label, labels.names_something
state = {"variant": "", "query": "", "unknown": [], "capitals": set()}


def writes_case(query):
    """A capital past the query's first word, on a word that is not a stopword ("I")."""
    return any(any(c.isupper() for c in w) for w in _WORD.findall(query)[1:] if w.lower() not in STOPWORDS)


def capitalised_mid_sentence(texts):
    out = set()
    for text in texts:
        for token, start, _ in token_spans(text):
            before = text[:start].rstrip()
            if text[start].isupper() and before and before[-1] not in ".!?:\n\"'":
                out.add(token)
    return out


def ceiling(query, unknown=()):
    state["query"], state["unknown"] = query, list(unknown)
    return shipped_ceiling(query, unknown)


def label(cosine, term_share, distinct_terms, score, top_score, coverage=0.0, known_coverage=None, *a, **kw):
    if "known" in state["variant"] and state["unknown"] and not writes_case(state["query"]):
        known_coverage = None
    return shipped_label(cosine, term_share, distinct_terms, score, top_score, coverage, known_coverage, *a, **kw)


def names_something(query):
    if shipped_names(query):
        return True
    return ("names" in state["variant"] and not writes_case(query)
            and any(t in state["capitals"] for t in search_tokens(query)))


if __name__ == "__main__":
    labels.ceiling, labels.label, labels.names_something = ceiling, label, names_something
    for source in sys.argv[1:]:
        data = load_dataset(source)
        state["capitals"] = capitalised_mid_sentence(d.content for d in data.documents.values())
        with harness.loaded_store(data, None, semantic=True) as store:
            for state["variant"] in ("", "known", "known+names"):
                for written in ("as written", "lowercased"):
                    right = answerable = wrong_high = unanswerable = 0
                    let_through = []
                    for q in data.queries.values():
                        text = q.text if written == "as written" else q.text.lower()
                        hits = store.rank(text, mode="hybrid", depth=100, explain=False).hits
                        high = bool(hits) and hits[0].relevance == "high"
                        if data.is_answerable(q.id):
                            answerable += 1
                            right += high and data.qrels.get(q.id, {}).get(hits[0].id, 0) > 0
                        else:
                            unanswerable += 1
                            wrong_high += high
                            if high:
                                let_through.append(q.text)
                    print(f"{data.name:8s} {state['variant'] or 'shipped':12s} {written:10s} answerable top high and right "
                          f"{right}/{answerable} = {right / answerable:.3f}  unanswerable top high {wrong_high}/{unanswerable}",
                          let_through, flush=True)
