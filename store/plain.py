"""The records without pydantic: timestamps as the store writes them, the search modes, a summary
line, and a search answered as plain data (what the CLI's fast search prints).

store/models.py re-exports the shared names, and its pydantic models stay what the library returns.
A plain search (memory/reads.py ``search_plain``) reads each hit's stored record with
``plain_memory``, which accepts only a record whose JSON is exactly what ``Memory.model_dump_json``
writes for it (every field, in order, timestamps in the store's form); any other record raises
NotPlain and the caller answers through the models. So a plain answer carries the same values,
version tokens and JSON as the model's (tests/test_plain_search.py, tests/test_cli_fast_search.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any

from kenning.errors import InvalidInput

MODES: tuple[str, ...] = ("keyword", "bm25", "semantic", "hybrid")
SUMMARY_CHARS = 120


# store/models.py's StoreConfig defaults (tests/test_plain_search.py holds them equal), for a
# plain search's settings (memory/settings.py ``plain``)
CONFIG_DEFAULTS: dict[str, Any] = {
    "default_mode": "hybrid", "bm25_k1": 1.2, "bm25_b": 0.5, "rrf_k": 60.0,
    "weights": {"keyword": 0.2, "bm25": 1.0, "vector": 1.0}, "leg_depth": 100, "fusion": "evidence",
    "evidence_alpha": 0.78, "evidence_cos_floor": 0.1, "evidence_power": 3.0, "model": None, "vector_floor": None,
    "verification_stale_days": 30, "require_write_confirmation": False, "search_enabled": True,
    "write_enabled": True,
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def in_utc(at: datetime | None, what: str) -> datetime | None:
    """A caller's time in UTC, naive meaning UTC as everywhere in kenning (an import record's times, every
    ``since``). A time an offset takes outside UTC's calendar (0001-01-01T00:00+05:45 is in year 0 in UTC)
    is refused naming it: clamping it to the calendar's edge would store a time nobody gave."""
    if at is None or at.tzinfo is timezone.utc:
        return at
    try:
        return (at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at).astimezone(timezone.utc)
    except OverflowError:
        raise InvalidInput(f"{what} {at.isoformat()} is outside UTC's calendar (years 1 to 9999); "
                           "give it in UTC") from None


def iso(ts: datetime | None) -> str | None:
    """UTC timestamps as fixed-width ISO-8601 with a Z, so they also sort as text."""
    if ts is None:
        return None
    return _iso(ts)


@functools.lru_cache(maxsize=4096)
def _iso(ts: datetime) -> str:
    # remembered: a record is serialised several times (its columns, its JSON, a listing)
    if ts.tzinfo is timezone.utc:  # the usual case (utcnow): the second's text is shared, the microseconds added
        second = (ts.year, ts.month, ts.day, ts.hour, ts.minute, ts.second)
        head = _SECONDS.get(second)
        if head is None:
            if len(_SECONDS) >= 4096:
                _SECONDS.clear()
            head = _SECONDS[second] = ts.replace(microsecond=0, tzinfo=None).isoformat()
        return f"{head}.{ts.microsecond:06d}Z"
    return ts.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


# (year, month, day, hour, minute, second) -> "YYYY-MM-DDTHH:MM:SS": an import stamps each record
# with its own time, nearly all within the same few seconds, and isoformat was most of a stamp's cost
_SECONDS: dict[tuple[int, ...], str] = {}


def summary_line(text: str, width: int = SUMMARY_CHARS) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= width else first[: width - 1].rstrip() + "…"


class NotPlain(Exception):
    """A stored record that only the pydantic model reads the same way (an older shape, a float the
    two JSON writers spell differently, ...): the caller answers through the models instead."""


class Fields:
    """Named values read as attributes: an origin, claim or link of a plain memory, a degraded note."""

    def __init__(self, **values: Any):
        self.__dict__.update(values)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# store/models.py's Memory fields in declaration order (tests/test_plain_search.py holds them equal)
MEMORY_FIELDS = ("id", "content", "scopes", "category", "confidence", "source", "created", "updated",
                 "last_verified_at", "verification_note", "verified_paths", "verified_absent_paths", "origin",
                 "claims", "links", "metadata")
_NESTED_FIELDS = {"origin": ("repo", "worktree", "commit"), "claims": ("spec",), "links": ("kind", "target", "note")}
_CHOICES = {"category": ("fact", "user-inference", "ambient"), "confidence": ("low", "medium", "high"),
            "source": ("explicit-statement", "inferred")}
_LINK_KINDS = ("supersedes", "contradicts", "extends", "depends_on")
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


class PlainMemory:
    """A stored memory's fields as attributes (timestamps as datetimes), for reading only."""

    def __init__(self, data: dict[str, Any], record: str):
        self.__dict__.update(data)
        self._record = record
        for name in ("created", "updated", "last_verified_at"):
            if data[name] is not None:
                setattr(self, name, datetime.fromisoformat(data[name]))
        self.origin = None if data["origin"] is None else Fields(**data["origin"])
        self.claims = [Fields(**c) for c in data["claims"]]
        self.links = [Fields(**link) for link in data["links"]]

    @property
    def summary(self) -> str:
        return summary_line(self.content)

    @property
    def version(self) -> str:
        """The model's version token: a hash of its JSON, which the stored record is (checked on reading)."""
        return hashlib.sha256(self._record.encode("utf-8")).hexdigest()[:16]


def plain_memory(record: str) -> PlainMemory:
    """A stored record as a PlainMemory, or NotPlain unless the record is exactly the model's JSON."""
    try:
        data = json.loads(record)
    except ValueError:
        raise NotPlain("the record is not JSON") from None  # the model's read says it is damaged
    if not isinstance(data, dict) or tuple(data) != MEMORY_FIELDS or not _shaped(data):
        raise NotPlain("the record is not in the current model's shape")
    if json.dumps(data, ensure_ascii=False, separators=(",", ":")) != record:
        raise NotPlain("the record's JSON is not spelled as the model writes it")
    return PlainMemory(data, record)


def _shaped(data: dict[str, Any]) -> bool:
    strings = all(isinstance(data[k], str) for k in ("id", "content"))
    lists = all(isinstance(data[k], list) and all(isinstance(v, str) for v in data[k])
                for k in ("scopes", "verified_paths", "verified_absent_paths"))
    choices = all(data[k] in allowed for k, allowed in _CHOICES.items())
    stamps = all(isinstance(data[k], str) and _STAMP.fullmatch(data[k]) for k in ("created", "updated"))
    verified = data["last_verified_at"] is None or (isinstance(data["last_verified_at"], str)
                                                    and _STAMP.fullmatch(data["last_verified_at"]))
    note = data["verification_note"] is None or isinstance(data["verification_note"], str)
    origin = data["origin"] is None or _nested(data["origin"], "origin")
    claims = isinstance(data["claims"], list) and all(_nested(c, "claims") for c in data["claims"])
    links = isinstance(data["links"], list) and all(_nested(link, "links") and link["kind"] in _LINK_KINDS
                                                    for link in data["links"])
    return (strings and lists and choices and stamps and bool(verified) and note and origin and claims and links
            and isinstance(data["metadata"], dict))


def _nested(value: Any, field: str) -> bool:
    names = _NESTED_FIELDS[field]
    if not isinstance(value, dict) or tuple(value) != names:
        return False
    required, *optional = names
    return isinstance(value[required], str) and all(
        isinstance(value[n], str) or (value[n] is None and n in ("commit", "note")) for n in optional)


class PlainHit:
    """One hit of a plain search: the fields of store/models.py's Hit, and its ``to_dict``."""

    def __init__(self, fields: dict[str, Any]):
        self.__dict__.update(fields)
        self.score = float(self.score)
        self.legs = {leg: Fields(rank=int(v["rank"]), score=float(v["score"])) for leg, v in self.legs.items()}
        self.staleness_verdict = "fresh"
        self.version: str | None = None
        self.trust: dict[str, Any] = {}
        self.content: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As ``Hit.to_dict``: the fields in the model's order, None left out, the trust fields after."""
        out = {"id": self.id, "score": self.score, "matched_leg": self.matched_leg, "relevance": self.relevance,
               "match_terms": list(self.match_terms), "legs": {k: v.to_dict() for k, v in self.legs.items()},
               "snippet": self.snippet, "scopes": list(self.scopes), "category": self.category,
               "confidence": self.confidence, "created": iso(self.created), "updated": iso(self.updated),
               "staleness_verdict": self.staleness_verdict}
        for name in ("version", "content"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out.update(self.trust)
        return out


class PlainResult:
    """A plain search's answer: the fields of store/models.py's SearchResult, and its ``to_dict``."""

    def __init__(self, fields: dict[str, Any]):
        self.query, self.mode, self.legs_run = fields["query"], fields["mode"], list(fields["legs_run"])
        degraded = fields["degraded"]
        self.degraded = None if degraded is None else Fields(**degraded)
        self.pending_embeddings = fields["pending_embeddings"]
        self.hits = [PlainHit(h) for h in fields["hits"]]
        self.note: str | None = None
        self.use_token: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As ``SearchResult.to_dict``: the fields in the model's order, the note only when it says something."""
        out = {"query": self.query, "mode": self.mode, "legs_run": self.legs_run,
               "degraded": None if self.degraded is None else self.degraded.to_dict(),
               "pending_embeddings": self.pending_embeddings, "use_token": self.use_token}
        if self.note:
            out["note"] = self.note
        out["hits"] = [h.to_dict() for h in self.hits]
        return out
