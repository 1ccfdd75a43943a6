"""CPU cost of embedding scifact-train's abstracts from an empty cache (the relevance gate's case in CI),
extrapolated from N of them: python bench/relevance/scifact_cost.py 300
"""
import json, time, resource, sys
from kenning.retrieval import embeddings
texts = []
for line in open("/work/shared/eval-data/scifact-train/corpus.jsonl"):
    d = json.loads(line); texts.append((d.get("title", "") + "\n" + d["text"]).strip())
enc = embeddings.get_encoder(embeddings.resolve_model(None))
enc.encode(texts[:8])
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.time()
n = int(sys.argv[1])
enc.encode(texts[1000:1000 + n])
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(f"{n} abstracts: cpu {cpu:.1f} s, wall {time.time()-t0:.1f} s -> all {len(texts)}: cpu {cpu * len(texts) / n:.0f} s")
