"""Can a logged string hold a secret at all? Answered without loading the credentials gate.

Every search logs its query, hit ids and use token with secret-looking spans masked
(memory/events.py). Compiling the credentials gate's ~40 patterns costs a short CLI search more
than the masking it does, and an ordinary query ("billing helios migration") or id cannot match
any of them: every pattern needs one of these marks or words in its match (an ``_`` or ``-`` of a
vendor prefix, a ``.`` of a JWT, the ``=`` or ``:`` of an assignment, a label such as "password"
or "token", an AWS prefix...). ``tests/test_secret_marks.py`` checks that against the literals
memory/gates/prefilter.py derives from each pattern, and against the credential corpora. The test
is necessary, never sufficient: a string that passes it goes through the real patterns.
"""

from __future__ import annotations

# characters at least one of which every credential pattern's match holds, or ...
MARKS = "_-.:/=&?"
# ... a word (lower-cased) it holds: AWS and other vendor prefixes, labels, licence words
WORDS = ("akia", "asia", "abia", "acca", "aiza", "sk", "dapi", "atatt3", "bearer", "pw", "pass", "key",
         "token", "secret", "licen", "serial", "activation", "product", "registration")


def may_hold_secret(text: str) -> bool:
    """False when no credential pattern can match ``text``. Text that is not ASCII is always
    checked: case-insensitive patterns match some non-ASCII letters (the Kelvin sign matches "k")
    that plain lower-casing does not map."""
    if not text.isascii():
        return True
    if any(mark in text for mark in MARKS):
        return True
    low = text.lower()
    return any(word in low for word in WORDS)
