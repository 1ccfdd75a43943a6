"""What a memory cites and when it was checked: the half of staleness that needs no git and no models.

memory/staleness.py builds the full report from these; a search annotates a memory that cites
nothing checkable (no origin, claims or paths) with ``uncited_hit_fields`` alone, so a plain
search (store/plain.py) never loads pydantic for it.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timedelta, timezone
from typing import Any

DEFAULT_STALE_DAYS = 30


# ---------------------------------------------------------------------------------------------
# Paths cited in prose

_FILE_EXTENSIONS = frozenset(
    """
    py pyi pyx ipynb md rst txt adoc toml yaml yml json jsonl json5 ini cfg conf env lock sh bash zsh
    fish ps1 bat js mjs cjs ts tsx jsx vue svelte astro go rs java kt kts scala groovy gradle rb php
    c h cc cpp cxx hpp hh cs fs swift m mm sql html htm css scss sass less xml csv tsv proto graphql
    tf hcl nix lua pl ex exs erl hs ml clj dart zig vim el r jl svg png jpg jpeg gif ico pdf
    """.split()
)
_EXTENSIONLESS_FILES = frozenset(
    """
    Makefile Dockerfile Containerfile Justfile Procfile Gemfile Rakefile Vagrantfile LICENSE COPYING
    NOTICE README CHANGELOG CODEOWNERS .gitignore .gitattributes .dockerignore .env .editorconfig
    """.split()
)
_TLDS = frozenset("com org net io dev ai co app gov edu info biz me us uk de eu sh so gg".split())
# URLs and e-mail addresses are blanked before scanning: their paths are not the worktree's. A scheme
# and an address's local part are bounded (32 and 64 characters, as no real one is longer): unbounded,
# each start in a long run of such characters rescanned the run, and a 40 KB word took minutes.
_NOT_PATHS = re.compile(r"\b[a-z][a-z0-9+.-]{0,31}://\S+|\bwww\.\S+|[\w.+-]{1,64}@[\w-]+\.[\w.-]+", re.I)
# a path ends at a space, a quote, a bracket or a separator, CJK's full-width ones included (a Chinese
# or Japanese sentence writes "路径：src/app.py，然后…" with no space around the path)
_CANDIDATE = re.compile(r"[^\s`'\"()\[\]{}<>,;|，、。；：！？（）「」『』【】《》〈〉]+")
_SEGMENT = re.compile(r"[\w@+-][\w.@+-]*|\.[\w@+-][\w.@+-]*")
# a line, a column or a range of them ending the path (dashes of every kind), matched on the reversed
# token: searched for as a suffix, it was tried again from every colon (a 20 KB ':1:1…x' took a minute)
_LOCATION_REVERSED = re.compile(r"(?:(?:\d+L?[-\u2010-\u2015])?\d+L?:)+")


# the lines a location names: ":42", ":42:7" (a column), ":10-20", ":L10-L20", ":10:5-12:3", "#L10-L20"
_LINES = re.compile(r":L?(\d+)(?::\d+)?(?:[-\u2010-\u2015]L?(\d+)(?::\d+)?)?|#L(\d+)(?:-L(\d+))?")


def _as_path(token: str) -> str | None:
    """token as a worktree-relative path if it reads as one, else None."""
    return _cited(token)[0]


def _cited(token: str) -> tuple[str | None, str]:
    """token as (a worktree-relative path if it reads as one, else None; the location after it)."""
    c = token.rstrip(".,:;!?*").lstrip("*").partition("::")[0]  # punctuation, **emphasis**, ::symbol
    at = _location_start(c)  # src/app.py:42:7, src/app.py:10-20, src/app.py:L10, docs/x.md#usage
    location = None
    if at is not None:
        c, location = c[:at], c[at:]
    explicit = c.startswith("./")
    c = c[2:] if explicit else c
    if not c or c.startswith(("/", "~", "-", "../")) or "/../" in c or any(ch in c for ch in "*?$%=\\"):
        return None, ""
    if "/" not in c and not explicit:
        return None, ""  # a bare name could live anywhere in the tree; there is no place to check it
    directory = c.endswith("/")
    segments = c.rstrip("/").split("/")
    if not all(_SEGMENT.fullmatch(s) for s in segments) or all(s.isdigit() for s in segments):
        return None, ""  # a//b, 24/7, 1/2
    first = segments[0]
    if not explicit and "." in first.lstrip(".") and first.rsplit(".", 1)[1].lower() in _TLDS:
        return None, ""  # github.com/org/repo/blob/main/x.py; ./run.sh is no host (.sh is a TLD)
    last = segments[-1]
    ext = last.rsplit(".", 1)[1].lower() if "." in last.lstrip(".") else ""
    if explicit or directory or ext in _FILE_EXTENSIONS or last in _EXTENSIONLESS_FILES:
        return "/".join(segments), "" if directory else location or ""  # a folder has no lines
    return None, ""  # and/or, TCP/IP, origin/main, application/json


def _location_start(token: str) -> int | None:
    """Where the location after a path starts: its first ``#`` (an anchor runs to the end), or the
    longest run of lines and ranges ending the token, whichever comes first; None when it has neither."""
    lines = _LOCATION_REVERSED.match(token[::-1])
    starts = [i for i in (token.find("#"), len(token) - lines.end() if lines else -1) if i >= 0]
    return min(starts, default=None)


def _citations(text: str):
    """(path, location) of each path cited in prose, in order."""
    scrubbed = _NOT_PATHS.sub(" ", text)
    return (_cited(token) for m in _CANDIDATE.finditer(scrubbed) if "/" in (token := m.group()))


def extract_paths(text: str) -> list[str]:
    """Worktree-relative paths cited in prose, in order of first mention.

    A path needs a slash or a leading ``./`` and must end in a known file extension or a known
    extension-less file name (``Makefile``), or end with ``/`` (a directory), or start with
    ``./``. So ``src/app.py``, ``./scripts/run.sh``, ``./run.sh``, ``docs/README.md`` and
    ``store/gates/`` count; URLs, e-mail addresses, versions (``3.12.1``), ``and/or``, ``origin/main``,
    globs, absolute and ``../`` paths, and bare names like ``config.py`` (no place to check them) do not.
    """
    if "/" not in text:  # every path form needs a slash: most bodies stop here
        return []
    return list(dict.fromkeys(p for p, _ in _citations(text) if p))


def extract_line_citations(text: str) -> list[tuple[str, str, int]]:
    """(the citation as written, its path, the last line it names) for each file cited with lines:
    "src/app.py:500-510" gives ("src/app.py:500-510", "src/app.py", 510). A file shorter than that
    no longer holds what the memory points at (staleness.assess_path_drift)."""
    if "/" not in text:
        return []
    out = {}
    for path, location in _citations(text):
        lines = _LINES.match(location) if path else None
        last = max((int(n) for n in lines.groups() if n), default=0) if lines else 0
        if last:
            out.setdefault(f"{path}{lines.group()}", (path, last))
    return [(cite, path, last) for cite, (path, last) in out.items()]


# ---------------------------------------------------------------------------------------------
# The verification calendar


def _utc(value: datetime | str | None) -> datetime | None:
    """Accept the store's ISO strings too; a naive time is taken as UTC."""
    if value is None:
        return None
    ts = datetime.fromisoformat(value) if isinstance(value, str) else value
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def _iso(ts: datetime | None) -> str | None:
    """The store's timestamp text (fixed-width UTC with a Z), since hit fields go out as JSON as-is."""
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if ts else None


def verification_state(
    last_verified_at: datetime | str | None,
    now: datetime,
    stale_days: int = DEFAULT_STALE_DAYS,
    written_at: datetime | str | None = None,
) -> tuple[str, bool]:
    """(status, overdue) of ``assess_verification`` without building its report."""
    verified = _utc(last_verified_at)
    if verified is None:
        written = _utc(written_at)
        age = None if written is None else max(0.0, (_utc(now) - written) / timedelta(days=1))
        return "never", age is None or age > stale_days
    age = (_utc(now) - verified) / timedelta(days=1)
    return ("stale", True) if age > stale_days else ("fresh", False)


def uncited_hit_fields(
    last_verified_at: datetime | str | None,
    now: datetime,
    stale_days: int = DEFAULT_STALE_DAYS,
    written_at: datetime | str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The verdict and hit fields ``assess_staleness(...).to_hit_fields()`` gives a memory that
    cites nothing checkable: only its verification calendar speaks, and no path can be missing
    (tests/test_trust_plain.py compares them in every verification state)."""
    verified, written, shown = _calendar(last_verified_at, written_at)
    # verification_state's arithmetic on the remembered parsed times
    if verified is None:
        age = None if written is None else max(0.0, (_utc(now) - written) / timedelta(days=1))
        status, overdue = "never", age is None or age > stale_days
    else:
        age = (_utc(now) - verified) / timedelta(days=1)
        status, overdue = ("stale", True) if age > stale_days else ("fresh", False)
    verdict = "spot_check_recommended" if overdue else "fresh"
    return verdict, {"staleness_verdict": verdict, "verification": {"status": status, "last_verified_at": shown},
                     "path_drift_missing": 0}


@functools.lru_cache(maxsize=8192)
def _calendar(last_verified_at: datetime | str | None,
              written_at: datetime | str | None) -> tuple[datetime | None, datetime | None, str | None]:
    """A memory's verification and write times as UTC datetimes, and the verification time as the
    hit shows it: parsed and formatted once per memory, not at every search that returns it."""
    verified = _utc(last_verified_at)
    return verified, _utc(written_at), None if verified is None else _iso(verified)
