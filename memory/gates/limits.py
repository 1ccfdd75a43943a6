"""Size and character limits on what a memory may hold, checked before anything is written."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping

from kenning.errors import InvalidInput

MAX_CONTENT_BYTES = 1024 * 1024
MAX_SCOPES = 64
MAX_SCOPE_CHARS = 200


# format characters that text in the world is written with: the joiners of emoji sequences (👩‍💻)
# and of Persian and Indic words (ZWNJ), and the direction marks of Arabic and Hebrew
_TEXT_FORMATS = frozenset("\u200c\u200d\u200e\u200f\u061c")


def has_control_chars(value: str) -> bool:
    """True when value holds a control, surrogate or private-use character, or a format character
    that hides or reorders text (a bidi override, a zero-width space, a soft hyphen, a BOM). The
    ``_TEXT_FORMATS``, the tag characters of a subdivision flag (🏴󠁧󠁢󠁳󠁣󠁴󠁿) and a character newer
    than this Python's Unicode tables (a later emoji: unassigned, Cn, to it) are none of these."""
    if value.isprintable():  # no C* character is printable: the common case costs one C call
        return False
    for ch in value:
        kind = unicodedata.category(ch)
        if kind in ("Cc", "Cs", "Co") or (kind == "Cf" and ch not in _TEXT_FORMATS
                                          and not "\U000e0020" <= ch <= "\U000e007f"):
            return True
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> bool:
    """Does ``text`` hold half of a surrogate pair, which no UTF-8 text can (undecodable bytes, a JSON \\ud800)?"""
    return not text.isprintable() and _SURROGATE.search(text) is not None


def reads_as_a_list(scope: str) -> bool:
    """A scope that is really a list ("projects:c, projects:d"): no search would ever name it as it is."""
    return re.search(r",\s", scope.strip()) is not None


def check_storable(text: str, what: str) -> None:
    """Refuse text a store cannot keep on every backend (a memory's body, an episode's body and
    takeaway): a lone surrogate, left by undecodable bytes, which UTF-8 cannot encode; a NUL, which
    PostgreSQL text cannot hold (refused on SQLite too, so a store can always migrate)."""
    if lone_surrogate(text):
        raise InvalidInput(f"{what} is not valid Unicode (it holds a lone surrogate such as \\ud800, "
                           "left by undecodable bytes); send UTF-8 text")
    if "\x00" in text:
        raise InvalidInput(f"{what} holds a NUL character (\\x00), which a store cannot keep on every backend; "
                           "remove it")


def check_content(content: object) -> str:
    """The body must be text of at most 1 MiB (UTF-8) with at least two characters and a letter or digit."""
    if content is not None and not isinstance(content, str):
        raise InvalidInput(f"memory text must be a string, got {type(content).__name__}")
    if content is None or not content.strip():
        raise InvalidInput("memory text is empty; give the text to remember")
    check_storable(content, "memory text")
    if len(content.strip()) < 2 or not any(ch.isalnum() for ch in content):
        raise InvalidInput(f"memory text {content.strip()!r} is too short to remember: a memory needs at least "
                           "two characters and a letter or digit (did a shell pass '-' or a stray symbol?)")
    size = len(content.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise InvalidInput(f"memory text is {size:,} bytes; the limit is {MAX_CONTENT_BYTES:,} (1 MiB)")
    return content


def check_scopes(scopes: Iterable[str] | str | None) -> list[str]:
    """1-64 distinct, non-blank scopes without control characters; returns them in NFC, de-duplicated."""
    if scopes is None or isinstance(scopes, str):
        scopes = [scopes] if scopes else []
    elif isinstance(scopes, (bytes, Mapping)) or not isinstance(scopes, Iterable):
        raise InvalidInput(f"scopes must be a list of strings, got {type(scopes).__name__}")
    elif not isinstance(scopes, (list, tuple, set, frozenset)):
        scopes = list(scopes)  # a generator, dict keys, a map: the Iterable[str] the annotations promise
    clean: list[str] = []
    for scope in scopes:
        if not isinstance(scope, str):
            raise InvalidInput(f"a scope must be a string, got {type(scope).__name__}; use a short tag such as "
                               "projects:kenning")
        if not scope.strip():
            raise InvalidInput("a scope is empty; use a short tag such as projects:kenning")
        # composed (NFC): "café" typed, and "café" from a folder name macOS stores decomposed, are one scope
        scope = unicodedata.normalize("NFC", scope)
        if has_control_chars(scope):
            raise InvalidInput(f"scope {scope!r} contains a control character")
        if len(scope) > MAX_SCOPE_CHARS:
            raise InvalidInput(f"scope {scope[:40]!r}… is longer than {MAX_SCOPE_CHARS} characters")
        if reads_as_a_list(scope):
            raise InvalidInput(f"scope {scope!r} reads as a list; give each scope on its own (a list of scopes, "
                               "or --scope once per scope)")
        if scope.strip() not in clean:
            clean.append(scope.strip())
    if not clean:
        raise InvalidInput("at least one scope is required, e.g. --scope projects:kenning")
    if len(clean) > MAX_SCOPES:
        raise InvalidInput(f"{len(clean)} scopes given; at most {MAX_SCOPES} are allowed")
    return clean


# Objects and lists inside metadata, at most. A record is read back by a JSON parser that stops at 200
# levels: metadata 200 deep was committed, and from then on the memory could not be read, listed,
# searched past, updated or removed, and every list and search of the store failed with it.
MAX_METADATA_DEPTH = 32


def check_metadata(metadata: Mapping | None, path: str = "metadata", depth: int = 1) -> dict:
    """Metadata keys and string values must be free of control characters (newlines included), its
    numbers finite (a record is JSON, which stores NaN and infinity as null, a value lost without a
    word), and its nesting at most ``MAX_METADATA_DEPTH`` levels."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{path} must be an object (key/value pairs)")
    if depth > MAX_METADATA_DEPTH:
        _too_deep()
    for key, value in metadata.items():
        _check_value(str(key), f"{path} key", depth)
        _check_value(value, f"{path}.{str(key)[:40]}", depth)
    return dict(metadata)


def _too_deep() -> None:
    raise InvalidInput(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep (objects and lists "
                       "within each other); keep it flatter")


def _check_value(value: object, where: str, depth: int = 1) -> None:
    if isinstance(value, str):
        if has_control_chars(value):
            raise InvalidInput(f"{where} contains a control character")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"{where} is {value!r}, which a memory's JSON cannot hold (it would be kept as null); "
                           "give a finite number, or text")
    elif isinstance(value, Mapping):
        check_metadata(value, where if depth < 8 else "metadata…", depth + 1)
    elif isinstance(value, (list, tuple)):
        if depth + 1 > MAX_METADATA_DEPTH:
            _too_deep()
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]" if depth < 8 else "metadata…", depth + 1)


MAX_COUNT = 10**9  # "all" for callers that want everything; beyond it SQLite overflows


def check_count(value: object, what: str = "limit", most: int = MAX_COUNT) -> int:
    """A positive whole number of at most ``most`` (a limit, a batch size)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise InvalidInput(f"{what} must be a whole number from 1 to {most:,}, got {value!r}")
    return value
