"""A fourth memory-style collection, written blind in another domain, in the held-out set's shape:
``kenning eval run memval3``.

400 short memories (``m001`` …) a work assistant might keep about one user (an operations planner)
and a fictional ferry and freight company: its vessels (sister ships side by side), routes with a
summer and a winter timetable, ports, crews, suppliers, contracts, incidents and tools, and the
user's own preferences and family, with near misses planted (two colleagues of one first name, an
old contract value beside the new one). 160 queries tagged with ``metadata.category``: 50 ``exact``,
60 ``paraphrase`` (55 sharing no content word with their grade-2 answer), 15 ``typo``, 15
``wordform`` and 20 ``unanswerable`` (no qrels rows): 7 asking an attribute the store does not hold
("MV Corran top speed"), 7 about a look-alike name, 6 off-topic. Grades: 2 answers, 1 helps (an
out-of-date value when the question names no date, the memory that says which thing a description
means).

Written in session 26 by a helper that read none of kenning's code, data or figures, in the shape of
the held-out memory set the issue measured (400 memories, 140 answerable questions, 60 of them
paraphrases, 20 unanswerable); its first measurement (eval/baselines/README.md, "Sixteenth pass")
was taken before anything was tuned on it.
"""
