"""psycopg_pool's warnings about kenning's own pools losing their server, kept off stderr.

While a server is down the pool logs a warning for every connection it drops and every reconnect it
tries ("discarding broken connection", "error connecting in 'kenning'"), and with no logging set up
Python prints each on stderr: lines in the middle of a CLI command's output and, repeated every few
seconds, in an MCP server's log. The call that needed the server already says it in one line
("cannot reach ..."), so these records are dropped; those of any other pool in the process, and the
pool's other warnings, pass as before.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

POOL_NAME = "kenning"  # the name kenning's pools carry (ConnectionPool(name=...))
_DROPPED = ("discarding broken connection: %s", "discarding closed connection: %s")
_RECONNECTS = ("error connecting in %r: %s", "reconnection attempt in pool %r failed after %s sec")
_CONNECTIONS: weakref.WeakSet[Any] = weakref.WeakSet()  # every connection a kenning pool made


def adopt(conn: Any) -> None:
    """Mark ``conn`` as a kenning pool's (from the pool's configure callback)."""
    _CONNECTIONS.add(conn)


class _LostServer(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if not args:
            return True
        if record.msg in _DROPPED:
            return args[0] not in _CONNECTIONS
        if record.msg in _RECONNECTS:
            return args[0] != POOL_NAME
        return True


logging.getLogger("psycopg.pool").addFilter(_LostServer())
