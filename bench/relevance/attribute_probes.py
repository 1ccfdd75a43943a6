"""Questions the store most likely cannot answer, in the shape of the memory sets' own unanswerable
ones ("MV Corran top speed", "Tallyho staging port"): every name an exact question of a memory set
writes with a capital, followed by each of ten attribute phrases. Prints every probe whose top hit is
`high` in hybrid (read them: some are answerable after all) and the count. ``--quantities`` asks
for a quantity instead ("length", "weight", "height", "width", "population", "headcount").
    python bench/relevance/attribute_probes.py memval3 memval memval2
    python bench/relevance/attribute_probes.py --quantities memval3 memval memval2
"""
import re, sys
from kenning.eval import harness
from kenning.eval.datasets import load_dataset

PHRASES = ["top speed", "length overall", "IMO number", "email address", "phone number", "approval limit",
           "annual budget", "software version", "staging port", "start date"]
QUANTITIES = ["length", "weight", "height", "width", "population", "headcount"]
QUESTION_WORDS = {"Who", "What", "When", "Which", "How", "Where"}


def names(data):
    found = []
    for q in data.queries.values():
        if data.is_answerable(q.id) and getattr(q, "category", "") == "exact":
            for name in re.findall(r"\b(?:MV |Captain )?[A-Z][a-zA-Z]+(?: [A-Z][a-zA-Z]+)*", q.text):
                if name not in found and name not in QUESTION_WORDS:
                    found.append(name)
    return found


if __name__ == "__main__":
    phrases = QUANTITIES if "--quantities" in sys.argv else PHRASES
    for source in [a for a in sys.argv[1:] if a != "--quantities"]:
        data = load_dataset(source)
        asked = [f"{name} {phrase}" for name in names(data) for phrase in phrases]
        high = []
        with harness.loaded_store(data, None, semantic=True) as store:
            for probe in asked:
                hits = store.rank(probe, mode="hybrid", depth=3, scopes=None, explain=False).hits
                if hits and hits[0].relevance == "high":
                    high.append((probe, data.documents[hits[0].id].content))
        for probe, text in high:
            print(f"  {probe!r} -> {text[:110]!r}")
        print(f"{source}: {len(asked)} probes, top hit high for {len(high)}")
