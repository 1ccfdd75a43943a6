"""Credentials gate: a memory is read back into prompts and logs, so it must never hold a secret.

Detection is by shape, not entropy alone: vendor key formats, PEM private key blocks, JWTs whose
header really decodes to JSON with an ``alg``, ``password=``-style assignments whose value looks
secret rather than like a placeholder, and passwords inside URLs. Findings are masked: the refusal
says what kind of secret sits where, never the secret itself.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

from kenning.memory.gates import GateRefusal

GATE = "credentials"
STATUS = "credential_warning"


@dataclass(frozen=True)
class CredentialFinding:
    """One secret-looking span: its kind, a masked rendering and where it starts (1-based line)."""

    kind: str
    masked: str
    line: int


_END = r"(?![A-Za-z0-9_-])"
_START = r"(?<![A-Za-z0-9_-])"

# (kind, pattern, how many leading characters are a public prefix safe to show)
_VENDOR_KEYS: list[tuple[str, re.Pattern[str], int]] = [
    ("AWS access key id", re.compile(rf"{_START}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{{16}}{_END}"), 4),
    ("GitHub token", re.compile(rf"{_START}gh[pousr]_[A-Za-z0-9]{{36,}}{_END}"), 4),
    ("GitHub fine-grained token", re.compile(rf"{_START}github_pat_[A-Za-z0-9_]{{30,}}{_END}"), 11),
    ("Slack token", re.compile(rf"{_START}xox[abposr]-[A-Za-z0-9-]{{10,}}{_END}"), 5),
    (
        "Slack webhook URL",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
        len("https://hooks.slack.com/services/"),
    ),
    ("Stripe live key", re.compile(rf"{_START}(?:sk|rk)_live_[A-Za-z0-9]{{16,}}{_END}"), 8),
    ("Anthropic API key", re.compile(rf"{_START}sk-ant-[A-Za-z0-9_-]{{20,}}{_END}"), 7),
    # OpenAI keys: sk-, sk-proj-, sk-svcacct-, sk-admin-; the body must mix letters and digits.
    (
        "OpenAI API key",
        re.compile(rf"{_START}sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?(?=[A-Za-z_-]*\d)(?=[\d_-]*[A-Za-z])[A-Za-z0-9_-]{{20,}}{_END}"),
        3,
    ),
    ("Google API key", re.compile(rf"{_START}AIza[0-9A-Za-z_-]{{35}}{_END}"), 4),
]

# A header line alone is prose about a key; a header followed by key material is a key.
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----\s*"
    r"(?:[A-Za-z-]+:[^\n]*\n\s*)*"  # optional RFC 1421 headers (Proc-Type, DEK-Info)
    r"[A-Za-z0-9+/=]{40,}"
)

_JWT = re.compile(rf"{_START}([A-Za-z0-9_-]{{10,}})\.([A-Za-z0-9_-]{{10,}})\.([A-Za-z0-9_-]*){_END}")

_SECRET_KEY_NAME = (
    r"[A-Za-z0-9_.-]*?"
    r"(?:password|passwd|pwd|passphrase|token|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key)"
)
# NAME = value / NAME: value / "NAME": "value"; the name must END in the secret word, so
# token_type, max_tokens or password_policy are not assignments of a secret.
_ASSIGNMENT = re.compile(
    rf"""(?ix)
    (?<![A-Za-z0-9_])(?P<name>{_SECRET_KEY_NAME})(?![A-Za-z0-9_])
    ["']?\s*(?::=|=|:)\s*
    (?P<quote>["'`]?)(?P<value>[^\s"'`,;]+)(?P=quote)
    """
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD = re.compile(
    r"\b(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<user>[^\s:/@]*):(?P<password>[^\s/@]+)@(?P<host>[^\s/?#]+)", re.I
)

_PLACEHOLDER_WORDS = frozenset(
    """
    changeme change_me changeit password passwd secret token apikey api_key key value none null
    nil true false empty redacted removed hidden masked placeholder example sample dummy test
    testing foo bar baz required optional string str int todo tbd xxx your_token your_password
    pass
    """.split()
)
_PLACEHOLDER_PARTS = ("example", "placeholder", "redacted", "your_", "your-", "changeme", "xxxx", "dummy")


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret instead of being one: <token>, ${VAR}, xxx, ***, changeme …"""
    v = value.strip()
    low = v.lower()
    if len(v) < 3 or low in _PLACEHOLDER_WORDS:
        return True
    if v[0] in "<{[$%(" or v.startswith(("...", "…")):
        return True  # <token>, {{ secret }}, ${VAR}, $VAR, %VAR%, [redacted], ...
    if len(set(v)) <= 2:
        return True  # ***, xxxxxxxx, ********
    if any(part in low for part in _PLACEHOLDER_PARTS):
        return True
    # a reference to where the secret lives: os.environ[...], getenv(...), settings.db_password
    return "(" in v or "[" in v or re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+", v) is not None


def looks_secret(value: str) -> bool:
    """Not a placeholder, and either 6+ characters with a digit (or letters mixed with symbols such
    as @ ! #), or 20+ characters that are not a plain lower-case word: "hunter2" and "P@ssw0rd" are
    secrets, "Kubernetes" or "required" after a ``secret:`` label are prose."""
    if is_placeholder(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_symbol = any(not c.isalnum() and c not in "-_." for c in value)
    if len(value) >= 6 and (has_digit or (has_alpha and has_symbol)):
        return True
    return len(value) >= 20 and re.fullmatch(r"[a-z]+(?:[-_.][a-z]+)*", value) is None


def _is_jwt_header(segment: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        header = json.loads(raw)
    except (binascii.Error, ValueError):
        return False
    return isinstance(header, dict) and "alg" in header


def _mask(value: str, keep: int = 0) -> str:
    """Show at most the public prefix, then only the length."""
    return f"{value[:keep]}…[{len(value)} chars]"


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def find_credentials(text: str) -> list[CredentialFinding]:
    """Every secret-looking span in text, in order of position, masked."""
    found: list[tuple[int, int, CredentialFinding]] = []

    def add(start: int, end: int, kind: str, masked: str) -> None:
        if not any(s <= start < e or start <= s < end for s, e, _ in found):
            found.append((start, end, CredentialFinding(kind, masked, _line(text, start))))

    for m in _PEM.finditer(text):
        add(m.start(), m.end(), "PEM private key", f"-----BEGIN {m.group(1)}-----…")
    for kind, pattern, keep in _VENDOR_KEYS:
        for m in pattern.finditer(text):
            value = m.group()
            if "EXAMPLE" not in value.upper():  # AWS's documented AKIAIOSFODNN7EXAMPLE and kin
                add(m.start(), m.end(), kind, _mask(value, keep))
    for m in _JWT.finditer(text):
        if _is_jwt_header(m.group(1)):
            add(m.start(), m.end(), "JWT", _mask(m.group(), 3))
    for m in _URL_PASSWORD.finditer(text):
        if looks_secret(m.group("password")):
            masked = f"{m.group('scheme')}://{m.group('user')}:***@{m.group('host')}"
            add(m.start(), m.end(), "password in URL", masked)
    for m in _ASSIGNMENT.finditer(text):
        if looks_secret(m.group("value")):
            add(m.start(), m.end(), "secret assignment", f"{m.group('name')}=***")
    for m in _BEARER.finditer(text):
        if looks_secret(m.group("value")):
            add(m.start(), m.end(), "bearer token", "Bearer ***")
    return [f for _, _, f in sorted(found, key=lambda item: item[0])]


def check(content: str) -> GateRefusal | None:
    """Refuse a body that holds a credential; there is deliberately no override."""
    findings = find_credentials(content)
    if not findings:
        return None
    kinds = sorted({f.kind for f in findings})
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason=f"the text contains what looks like a secret ({', '.join(kinds)}); secrets must not be stored in memory",
        hint=(
            "Remove the secret and store where it lives instead (e.g. 'the deploy token is in the "
            "team vault under ci/github'), or replace it with a placeholder such as <token>."
        ),
        matched=[f"{f.kind} on line {f.line}: {f.masked}" for f in findings],
    )
