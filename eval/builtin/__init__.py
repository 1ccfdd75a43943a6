"""A small memory-style collection written for kenning and shipped in the package.

300 short memories (``m001`` …) about a fictional team: people, projects, preferences,
decisions, incidents and infrastructure facts with ports, versions and technical tokens
(``3.12.1``, ``node.js``, ``C++20``). 80 queries, each tagged with ``metadata.kind``:

- ``exact``: shares its key words with the memory it asks about;
- ``paraphrase``: shares no token with its target (checked with the one token stream);
- ``typo``: misspelt words;
- ``wordform``: another form of the target's words (publishing/published, crashes/crash);
- ``unanswerable``: nothing in the collection answers it (no qrels rows), often lexically
  tempting, so an engine should come back empty or at least not confident.

Grades: 2 for the memory that answers the query, 1 for one that helps. The text is original to
this project. ``kenning eval run builtin`` loads it through ``importlib.resources``.
"""
