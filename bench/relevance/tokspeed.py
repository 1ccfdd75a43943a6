import os
import sys, time, importlib, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kenning.retrieval import text
from legs import setup
old = importlib.import_module("oldtext")
d, ids, texts, sep, masks = setup("scifact-train")
snow = text.stem
res = {}
for rep in range(3):
    for name, f in (("plural", old.fold_plural), ("snowball", snow)):
        text.stem = f; text._word.cache_clear()
        t = time.process_time(); n = sum(len(text.tokenize(x)) for x in texts); res.setdefault(name, []).append(time.process_time() - t)
print({k: round(statistics.median(v), 2) for k, v in res.items()}, "cpu seconds to tokenize scifact-train (5183 docs), cold word cache, median of 3")
