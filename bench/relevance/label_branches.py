"""The fourteenth pass's two `high` branches switched off (the rule before) and on, in one run: label
figures of bm25, semantic and hybrid on one collection (a folder, "builtin", "memval" or "memval2").
    python bench/relevance/label_branches.py memval2
"""
import sys
from kenning.eval.harness import run_eval
from kenning.retrieval import labels

if __name__ == "__main__":
    shipped = labels.EVERY_TERM_COSINE, labels.PARAPHRASE_COSINE
    for tag, branches in (("before", (9, 9)), ("after", shipped)):
        labels.EVERY_TERM_COSINE, labels.PARAPHRASE_COSINE = branches  # 9: no cosine reaches it, the branch is off
        report = run_eval(sys.argv[1], modes=["bm25", "semantic", "hybrid"], progress=False)
        for mode, m in report["modes"].items():
            high = m["reliability"]["high"]
            un = m.get("unanswerable") or {}
            print(f"{tag:6} {mode:8} nDCG@10 {m['nDCG@10']:.4f} | answerable top hit high {m['reliability']['top_high']:.3f}"
                  f" | high judged relevant {high.get('precision')} ({high['hits']} hits)"
                  f" | unanswerable top hit high {un.get('top_high')} of {un.get('queries')}")
