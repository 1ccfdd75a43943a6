"""A third memory-style collection, written blind in another domain: ``kenning eval run memval2``.

300 short memories (``m001`` …) a work assistant might keep about one user (a data engineer) and a
fictional chain of veterinary clinics: its people, systems, partners, offices, incidents, decisions,
and the user's own preferences and family, with near misses planted (a service's production port
beside its staging one, an old database version beside the upgrade). 130 queries tagged with
``metadata.category``: 35 ``exact``, 40 ``paraphrase`` (29 sharing no token with their grade-2 answer in the one token stream),
10 ``typo`` and 45 ``unanswerable`` (no qrels rows): 15 off-topic, 15 asking an attribute the store
does not hold about something it knows ("Tallyho staging port"), 15 about a look-alike name it does
not hold ("When is Priya Okafor's birthday?"). Grades: 2 answers, 1 helps.

Written in session 24 by a helper that read none of kenning's code, data or figures; its first
measurement (eval/baselines/README.md, "Fourteenth pass") was taken before anything was tuned on it.
"""
