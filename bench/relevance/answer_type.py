"""An answer-type check for `high`, replayed on labelfeat7.py's dumps (hybrid, this main): a short
query's top hit not yet `high` whose missing query words all name an attribute (date, time, version,
money, number, address, path, email, duration: a hand-made list) and which holds a value of that
type (a pattern per type), at cosine >= c and a fused lead >= l. Per collection: answerable top hits
newly `high` right / wrong, unanswerable or off-topic ones, answers-removed ones; ``-v`` lists them.
    python bench/relevance/answer_type.py [-v]
"""
import os, re, sys
from kenning.retrieval import text
from labelfeat7 import best_hits

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev"]
MONTH=r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
VAL={
 'date': re.compile(rf"\b\d{{1,2}}(st|nd|rd|th)?\s+{MONTH}\b|\b{MONTH}\s+\d{{1,2}}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b{MONTH}\s+\d{{4}}\b", re.I),
 'time': re.compile(r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(am|pm)\b", re.I),
 'version': re.compile(r"\b\d+\.\d+(\.\d+)?\b|\bv\d+\b", re.I),
 'money': re.compile(r"[£$€]\s?\d|\b\d[\d,.]*\s?(k|m|million|bn)?\s?(eur|euros?|gbp|usd|dollars?|pounds?)\b", re.I),
 'number': re.compile(r"\d"),
 'address': re.compile(r"\b[\w-]+\.[\w.-]+\.[a-z]{2,}\b|https?://|\b\d+\s+[A-Z][a-z]+\s+(street|st|road|rd|avenue)\b|\brua\b", re.I),
 'path': re.compile(r"\w/\w|/[\w.-]+/"),
 'email': re.compile(r"@[\w-]+\."),
 'duration': re.compile(r"\b\d+\s*(second|minute|hour|day|week|month|year|min|h|d)s?\b", re.I),
}
WORDS={'date':'date dates deadline birthday expiry expiration due'.split(),
 'time':'time'.split(),'version':'version'.split(),
 'money':'budget cost price value fee salary revenue rate'.split(),
 'number':'number capacity count tonnage size limit length port id'.split(),
 'address':'address url hostname host link'.split(),'path':'path folder directory'.split(),'email':'email'.split(),
 'duration':'retention duration'.split()}
TYPE={text.search_tokens(w)[0]:t for t,ws in WORDS.items() for w in ws if text.search_tokens(w)}


def newly_high(x, c, l):
    if x["label"] == "high" or x["ceil"] != "high" or x["n"] >= 6 or x["cos"] < c or x["lead"] < l:
        return False
    types = [TYPE.get(m) for m in x["miss"]]
    return bool(types) and len(types) < x["n"] and None not in types and all(VAL[t].search(x["t"]) for t in types)


def rows(path):
    out = []
    for q, h in best_hits(path):
        cos, _, n, _, _, _, _, lead, ceil = h["label_args"][0][:9]
        held = set(text.tokenize(h["text"]))
        miss = [t for t in dict.fromkeys(text.search_tokens(q["text"])) if t not in held]
        out.append(dict(q=q["text"], t=h["text"], ans=q["answerable"], rel=h["rel"], label=h["label"], cos=cos or 0,
                        n=n, lead=lead, ceil=ceil, miss=miss))
    return out


if __name__ == "__main__":
    data = {n: (rows(f"{OUT}/labelfeat7-{n}.pkl"), rows(f"{OUT}/labelfeat7-{n}-removed.pkl")) for n in NAMES}
    for c in (.4, .5, .6):
        for l in (0, .2, .4):
            cells = []
            for name, (own, removed) in data.items():
                new, gone = [x for x in own if newly_high(x, c, l)], [x for x in removed if newly_high(x, c, l)]
                right = sum(x["ans"] and x["rel"] for x in new)
                wrong = sum(x["ans"] and not x["rel"] for x in new)
                if new or gone:
                    cells.append(f"{name} +{right}/-{wrong} u{sum(not x['ans'] for x in new)} r{len(gone)}")
                if "-v" in sys.argv:
                    for x in new + gone:
                        print("   ", name, "right" if x["rel"] else "wrong", x["q"][:50], "->", x["t"][:60], x["miss"])
            print(c, l, " | ".join(cells))
