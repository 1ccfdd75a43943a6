"""The ledger files under a registered folder, listed again only where a directory changed.

Every transcript search first looks for new, grown and deleted ledgers, so it lists each source
folder. Walking a tree of a few hundred session folders costs milliseconds of Python per search;
a directory's mtime changes whenever an entry is added, removed or renamed in it, so a directory
whose mtime is unchanged keeps its last listing and costs one stat. A listing made within
``RECENT_S`` of the directory's own mtime is not trusted (a file system with coarse timestamps
may give an entry created in the same tick the same mtime), so such a directory is listed again.

A ledger is listed by its real path: a link (``latest.jsonl -> a.jsonl``, a link to a ledger
elsewhere) names the file it leads to, so the index, which keys ledgers by path, reads each file
once however many names lead to it.
"""

from __future__ import annotations

import os
import time

SUFFIX = ".jsonl"
RECENT_S = 2.0


class LedgerFolders:
    """This process's memory of directory listings, keyed by directory path."""

    def __init__(self) -> None:
        self._listings: dict[str, tuple[int, list[str], list[str]]] = {}  # dir -> (mtime_ns, ledgers, subdirs)

    def ledgers(self, source: str) -> list[str]:
        """The real paths of the ledgers a source holds now: the file itself, or every ``*.jsonl`` below
        the folder (sorted, each folder's files before its subfolders', symlinked folders not followed;
        a path twice when two names lead to one file). ``source`` is registered resolved."""
        if os.path.isfile(source):
            return [source]
        found: list[str] = []
        stack = [source]
        while stack:
            directory = stack.pop()
            listing = self._listing(directory)
            if listing is None:
                continue
            ledgers, subdirs = listing
            found.extend(ledgers)
            stack.extend(reversed(subdirs))
        return found

    def _listing(self, directory: str) -> tuple[list[str], list[str]] | None:
        try:
            mtime = os.stat(directory).st_mtime_ns
        except OSError:
            self._listings.pop(directory, None)
            return None
        cached = self._listings.get(directory)
        if cached is not None and cached[0] == mtime:
            return cached[1], cached[2]
        ledgers, subdirs = [], []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        continue
                    if is_dir:
                        if not entry.is_symlink():
                            subdirs.append(entry.path)
                    elif entry.name.endswith(SUFFIX) and _regular(entry):  # a FIFO would block every read
                        ledgers.append(os.path.realpath(entry.path) if entry.is_symlink() else entry.path)
        except OSError:
            return None
        ledgers.sort()
        subdirs.sort()
        if time.time() - mtime / 1e9 > RECENT_S:
            self._listings[directory] = (mtime, ledgers, subdirs)
        else:
            self._listings.pop(directory, None)
        return ledgers, subdirs


def _regular(entry: os.DirEntry) -> bool:
    """A regular file (or a link to one): not a FIFO, socket or device, whose read could block or never end."""
    try:
        return entry.is_file()
    except OSError:
        return False
