"""One-line notices for whoever runs the library, which never prints them itself: a wait it is
about to make, such as the lexical index rebuilt once at open for a new token stream (seconds at
100,000 memories). The CLI listens and prints them on stderr (never stdout, so --json output and an
MCP server's protocol stay clean); a library caller may listen too. A plain list of callables, not
logging: importing logging costs every short CLI command a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable

_listeners: list[Callable[[str], None]] = []


def listen(listener: Callable[[str], None]) -> None:
    """Have ``listener`` called with each notice of this process (once, however often it is added)."""
    if listener not in _listeners:
        _listeners.append(listener)


def say(message: str) -> None:
    """Hand ``message`` to every listener; with none, nothing is said."""
    for listener in list(_listeners):
        listener(message)
