"""Caller input into valid records: one clear InvalidInput for anything malformed, before any gate runs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from kenning.errors import InvalidInput
from kenning.store.ids import canonical, new_ulid
from kenning.store.models import Link, Memory, iso
from kenning.store.plain import in_utc

from .claims import normalize_claim_path
from .gates.limits import check_content, check_metadata, check_scopes, check_storable, has_control_chars

MAX_ID_CHARS = 200
MAX_NOTE_CHARS = 500
AMBIENT_LONG_WORDS = 500
CLOCK_SKEW = timedelta(days=1)  # how far ahead of this clock an imported time may be (another machine's clock)


def invalid(exc: ValidationError) -> InvalidInput:
    """A one-line message from pydantic's error list: which field, what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "value"
    return InvalidInput(f"{where}: {first.get('msg', 'invalid value')}")


def new_memory(fields: dict, now: datetime) -> Memory:
    """A Memory from request fields: limits checked, an id given or a fresh ULID, created = updated = now."""
    fields = dict(fields)
    fields["content"] = check_content(fields.get("content"))
    fields["scopes"] = check_scopes(fields.get("scopes"))
    fields["metadata"] = check_metadata(fields.get("metadata"))
    no_secret_in(fields["scopes"], fields["metadata"])
    given = fields.get("id")
    fields["id"] = new_ulid() if given is None else check_id(given)
    given = {name for name in ("created", "updated") if fields.get(name) is not None}
    fields.update({name: now for name in ("created", "updated") if name not in given})  # null is not given
    memory = validated({k: v for k, v in fields.items() if v is not None})
    times = {name: in_utc(getattr(memory, name), name) for name in ("created", "updated", "last_verified_at")}
    if times["updated"] < times["created"]:  # a default (now) must not land on the wrong side of a given time
        if "created" not in given:
            times["created"] = times["updated"]
        elif "updated" not in given:
            times["updated"] = times["created"]
        else:
            raise InvalidInput(f"updated {iso(times['updated'])} is before created {iso(times['created'])}; a memory "
                               "cannot have changed before it was written")
    for name, at in times.items():
        # a verification dated 2099 read as fresh until then, a write dated 2099 as never due
        if at is not None and at > now + CLOCK_SKEW:
            raise InvalidInput(f"{name} {iso(at)} is in the future (it is {iso(now)} now); a memory cannot "
                               "have been written or checked later than now")
    changed = {name: at for name, at in times.items() if at is not getattr(memory, name)}
    return memory.model_copy(update=changed) if changed else memory


_set = object.__setattr__


def sibling(first: Memory, changes: dict[str, Any]) -> Memory:
    """``first.model_copy(update=changes)`` (validated values, a shallow copy) without pydantic's
    generic copy, a third of its cost: an import makes one for each record of a shape it has seen.
    The same four slots pydantic's own copy and ``model_construct`` fill."""
    if first.__pydantic_extra__ is not None or getattr(first, "__pydantic_private__", None) is not None:
        return first.model_copy(update=changes)
    memory = Memory.__new__(Memory)
    values = first.__dict__.copy()
    values.update(changes)
    _set(memory, "__dict__", values)
    _set(memory, "__pydantic_fields_set__", first.__pydantic_fields_set__ | changes.keys())
    _set(memory, "__pydantic_extra__", None)
    _set(memory, "__pydantic_private__", None)
    return memory


def check_id(given: object) -> str:
    """A memory id given by the caller (an import's): a short non-blank string without control
    characters, kept as given except that a ULID is stored in upper case, the case lookups use."""
    if not isinstance(given, str) or not given.strip() or has_control_chars(given) or len(given) > MAX_ID_CHARS:
        raise InvalidInput(f"id must be a short non-blank string, got {given!r}")
    return canonical(given)


def validated(fields: dict) -> Memory:
    """A Memory from fields; a link repeated (same kind and target) is kept once."""
    try:
        memory = Memory.model_validate(fields)
    except ValidationError as exc:
        raise invalid(exc) from exc
    links = list({(link.kind, link.target): link for link in reversed(memory.links)}.values())[::-1]
    return memory if len(links) == len(memory.links) else memory.model_copy(update={"links": links})


def link_dict(link: dict | Link) -> dict[str, Any]:
    """A link as stored. A NUL (SQLite kept it, PostgreSQL refused the write) is refused in a note;
    in a target, which no id holds, it becomes U+FFFD, so the target is not found on every backend."""
    try:
        checked = Link.model_validate(link).model_dump()
    except ValidationError as exc:
        raise invalid(exc) from exc
    no_secret(checked.get("note"), "a link note")
    if checked.get("note"):
        check_storable(checked["note"], "a link note")
    if isinstance(checked.get("target"), str):
        checked["target"] = checked["target"].replace("\x00", "\ufffd")
    return checked


def link_dicts(links: object) -> list[dict[str, Any]]:
    """The links a caller gave, each checked, errors naming ``links`` and the item: links="x" was
    read letter by letter and links=[5] answered 'value: Input should be a valid dictionary'."""
    if isinstance(links, (str, bytes, dict)) or not isinstance(links, (list, tuple)):
        raise InvalidInput(f"links must be a list of links ({{'kind': ..., 'target': id}}), "
                           f"got {type(links).__name__}")
    checked = []
    for i, link in enumerate(links):
        try:
            checked.append(link_dict(link))
            # a note is a sentence on why the link holds; a 5 MB one was stored and shown with every `show`
            # (capped here, on what a caller gives: links already stored, as an import carries them, stay)
            if len(checked[-1].get("note") or "") > MAX_NOTE_CHARS:
                raise InvalidInput(f"a link note is at most {MAX_NOTE_CHARS} characters, got {len(checked[-1]['note']):,}")
        except InvalidInput as exc:
            if type(exc) is not InvalidInput:
                raise  # a GateRefused (a secret in a note) keeps its gate
            raise InvalidInput(f"links[{i}]: {str(exc).removeprefix('value: ')}") from exc
    return checked


def no_secret(value: object, field: str) -> None:
    """Secrets stay out of every stored field, not only the memory text: refuse like the gate does."""
    from .gates import GateRefused, credentials

    refusal = credentials.check_field(value, field)
    if refusal is not None:
        raise GateRefused(refusal)


_CLEAN_SCOPES: set[str] = set()  # scopes the credentials check passed (it depends on the text alone)


def no_secret_in(scopes: list[str], metadata: dict | None) -> None:
    for scope in scopes:
        if scope not in _CLEAN_SCOPES:  # an import repeats a handful of scopes thousands of times
            no_secret(scope, f"scope {scope[:12]!r}…")
            if len(_CLEAN_SCOPES) >= 4096:
                _CLEAN_SCOPES.clear()
            _CLEAN_SCOPES.add(scope)
    if metadata:
        no_secret(json.dumps(metadata, ensure_ascii=False, default=str), "the metadata")


def texts(values: Iterable[str] | str | None, what: str) -> list[str]:
    """A list of non-blank strings (a single string counts as one)."""
    if values is None:
        return []
    if not isinstance(values, (str, list, tuple, set, frozenset)):
        raise InvalidInput(f"{what} must be a list of non-empty strings, got {type(values).__name__}")
    values = [values] if isinstance(values, str) else list(values)
    if not all(isinstance(v, str) and v.strip() for v in values):
        singular = what.replace("_", " ").removesuffix("s")  # verified_paths -> "a verified path is empty"
        raise InvalidInput(f"{what} must be a list of non-empty strings" if singular == what else
                           f"a {singular} is empty (or not text); give each as non-empty text")
    return values


def labels(values: Iterable[str], what: str) -> list[str]:
    """Short audit labels (commit ids, version strings): non-blank, one line, at most 200 characters."""
    values = texts(values, what)
    bad = [v for v in values if len(v) > MAX_ID_CHARS or has_control_chars(v)]
    if bad:
        raise InvalidInput(f"{what}: each entry is one line of at most {MAX_ID_CHARS} characters")
    return list(dict.fromkeys(v.strip() for v in values))


def paths(values: Iterable[str], what: str) -> list[str]:
    """Worktree-relative paths, named in an error as ``what`` says (verified_paths: "verified path")."""
    singular = what.replace("_", " ").removesuffix("s")
    return list(dict.fromkeys(normalize_claim_path(p, singular) for p in texts(values, what)))


def note(text: str | None) -> str | None:
    """A short free-text note (line breaks allowed, other control characters not)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise InvalidInput("a note must be text")
    text = text.strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInput(f"a note is at most {MAX_NOTE_CHARS} characters, got {len(text)}")
    if has_control_chars(text.replace("\n", " ").replace("\t", " ")):
        raise InvalidInput("the note contains a control character")
    no_secret(text, "the note")
    return text or None


def excerpts(excerpt: str | Iterable[str | None] | None, count: int) -> list[str | None]:
    """One excerpt per id: a single string repeated, or a parallel list with None gaps."""
    if excerpt is None or isinstance(excerpt, str):
        values = [excerpt] * count
    elif isinstance(excerpt, (bytes, dict)) or not isinstance(excerpt, Iterable):
        raise InvalidInput(f"excerpt must be text or a list parallel to the ids, got {type(excerpt).__name__}")
    else:
        values = list(excerpt)
        if len(values) != count:
            raise InvalidInput(f"the excerpts must parallel the ids, one for each (None where there is none): "
                               f"{len(values)} excerpt(s) for {count} id(s)")
    for value in values:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidInput("an excerpt must be non-empty text (use None for 'no specific phrase')")
        if value is not None and len(value) > MAX_NOTE_CHARS:
            raise InvalidInput(f"an excerpt is at most {MAX_NOTE_CHARS} characters")
        no_secret(value, "an excerpt")
    return values


def warnings(memory: Memory) -> list[str]:
    if memory.category == "ambient" and len(memory.content.split()) > AMBIENT_LONG_WORDS:
        return [f"ambient_body_long: ambient memories colour every reply; keep them to {AMBIENT_LONG_WORDS} words "
                "or fewer"]
    return []
