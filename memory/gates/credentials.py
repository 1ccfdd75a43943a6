"""Credentials gate: a memory is read back into prompts and logs, so it must never hold a secret.

Detection is by shape, not entropy alone: vendor key formats, PEM private key blocks, JWTs whose
header really decodes to JSON with an ``alg``, ``password=``-style assignments whose value looks
secret rather than like a placeholder (``Passwort:``, ``密码：``: the labels of other languages are
in secret_labels.py), and passwords inside URLs. Findings are masked: the refusal
says what kind of secret sits where, never the secret itself.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from itertools import chain, repeat
from typing import TYPE_CHECKING

from kenning.memory.gates import prefilter, secret_labels

if TYPE_CHECKING:
    from kenning.memory.gates.refusal import GateRefusal

GATE = "credentials"
STATUS = "credential_warning"


@dataclass(frozen=True)
class CredentialFinding:
    """One secret-looking span: its kind, a masked rendering and where it starts (1-based line)."""

    kind: str
    masked: str
    line: int
    start: int = 0  # the span in the text, for masking
    end: int = 0


MAX_FINDINGS = 50  # enough to refuse and name the kinds; bounds the work on hostile input
_END = r"(?![A-Za-z0-9_-])"
_START = r"(?<![A-Za-z0-9_])"  # vendor keys (literal prefixes, bounded bodies): a hyphen may precede, ops-glpat-…
_WORD_START = r"(?<![A-Za-z0-9_-])"  # unbounded shapes (JWT): one start per word, never a scan per hyphen

# (kind, pattern, how many leading characters are a public prefix safe to show)
_VENDOR_KEYS: list[tuple[str, re.Pattern[str], int]] = [
    (kind, re.compile(pattern), keep)
    for kind, pattern, keep in [
        ("AWS access key id", rf"{_START}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{{16}}{_END}", 4),
        ("GitHub token", rf"{_START}gh[pousr]_[A-Za-z0-9]{{36,}}{_END}", 4),
        ("GitHub fine-grained token", rf"{_START}github_pat_[A-Za-z0-9_]{{30,}}{_END}", 11),
        ("GitLab token", rf"{_START}gl(?:pat|dt|rt|ptt|ft|soat)-[A-Za-z0-9_-]{{20,}}{_END}", 6),
        ("Slack token", rf"{_START}xox[abposr]-[A-Za-z0-9-]{{10,}}{_END}", 5),
        ("Slack webhook URL", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]+/[A-Za-z0-9/]{16,}",
         len("https://hooks.slack.com/services/")),
        ("Discord webhook URL", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{30,}",
         len("https://discord.com/api/webhooks/")),
        ("Stripe key", rf"{_START}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_END}", 8),
        ("Stripe webhook secret", rf"{_START}whsec_[A-Za-z0-9]{{24,}}{_END}", 6),
        ("Anthropic API key", rf"{_START}sk-ant-[A-Za-z0-9_-]{{20,}}{_END}", 7),
        # OpenAI keys: sk-, sk-proj-, sk-svcacct-, sk-admin-; the body must mix letters and digits. Its first
        # digit is looked for in its first 100 characters (a random key has none there once in 40 million):
        # looked for to the end, each "sk-" of a long "-sk-sk-…" word rescanned the word (0.8 s for 10 KB)
        ("OpenAI API key",
         rf"{_START}sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?(?=[A-Za-z_-]{{0,100}}\d)(?=[\d_-]*[A-Za-z])"
         rf"[A-Za-z0-9_-]{{20,}}{_END}", 3),
        ("Google API key", rf"{_START}AIza[0-9A-Za-z_-]{{35}}{_END}", 4),
        ("Azure storage key", r"(?i)(?:AccountKey|SharedAccessKey)\s*=\s*[A-Za-z0-9+/]{40,}={0,2}", 11),
        ("Azure SAS signature", r"(?i)[?&]sig=[A-Za-z0-9%+/]{30,}", 5),
        ("SendGrid API key", rf"{_START}SG\.[A-Za-z0-9_-]{{16,}}\.[A-Za-z0-9_-]{{30,}}{_END}", 3),
        ("Hugging Face token", rf"{_START}hf_[A-Za-z]{{30,}}{_END}", 3),
        ("npm token", rf"{_START}npm_[A-Za-z0-9]{{36}}{_END}", 4),
        ("PyPI token", rf"{_START}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{{40,}}{_END}", 5),
        ("Twilio API key", rf"{_START}SK[0-9a-fA-F]{{32}}{_END}", 2),
        ("Mailgun API key", rf"{_START}key-[0-9a-f]{{32}}{_END}", 4),
        ("Mailchimp API key", rf"{_START}[0-9a-f]{{32}}-us\d{{1,2}}{_END}", 0),
        ("Shopify token", rf"{_START}shp(?:at|ss|ca|pa)_[0-9a-fA-F]{{32}}{_END}", 6),
        ("DigitalOcean token", rf"{_START}do[opr]_v1_[0-9a-f]{{64}}{_END}", 7),
        ("Square token", rf"{_START}sq0(?:atp|csp)-[A-Za-z0-9_-]{{22,}}{_END}", 7),
        ("Databricks token", rf"{_START}dapi[0-9a-f]{{32}}(?:-\d)?{_END}", 4),
        ("Atlassian API token", rf"{_START}ATATT3[A-Za-z0-9_=-]{{100,}}{_END}", 6),
        ("Telegram bot token", rf"{_START}\d{{8,10}}:AA[A-Za-z0-9_-]{{33}}{_END}", 0),
        ("Docker Hub token", rf"{_START}dckr_pat_[A-Za-z0-9_-]{{20,}}{_END}", 9),
        ("Vault token", rf"{_START}hv[sb]\.[A-Za-z0-9_-]{{24,}}{_END}", 4),
        ("Doppler token", rf"{_START}dp\.(?:st|pt|ct|sa|scim|audit)\.[A-Za-z0-9._-]{{40,}}{_END}", 6),
        ("New Relic key", rf"{_START}NRAK-[A-Z0-9]{{27}}{_END}", 5),
        ("Linear API key", rf"{_START}lin_api_[A-Za-z0-9]{{40}}{_END}", 8),
        ("Terraform Cloud token", rf"{_START}[A-Za-z0-9]{{14}}\.atlasv1\.[A-Za-z0-9_-]{{60,}}{_END}", 0),
    ]
]

# A header line alone is prose about a key; a header followed by key material is a key. Inside
# JSON (a GCP service-account file) the line breaks are the two characters backslash and n.
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----(?:\s|\\n)*"
    r"(?:[A-Za-z-]+:[^\n]*\n\s*)*"  # optional RFC 1421 headers (Proc-Type, DEK-Info)
    r"[A-Za-z0-9+/=]{40,}"
)

_JWT = re.compile(rf"{_WORD_START}([A-Za-z0-9_-]{{10,}})\.([A-Za-z0-9_-]{{10,}})\.([A-Za-z0-9_-]*){_END}")

_PASSWORD_WORDS = r"(?:password|passwd|pwd|passphrase|passcode)"
_SECRET_KEY_NAME = (
    r"(?:[A-Za-z0-9_.-]{0,40}?"
    rf"(?:{_PASSWORD_WORDS}|token|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|licen[cs]e[_-]?key)"
    r"|(?:[A-Za-z0-9_.-]{0,40}[_.-])?pass)"
)
# NAME = value / NAME: value / "NAME": "value"; the name must END in the secret word, so
# token_type, max_tokens or password_policy are not assignments of a secret.
_ASSIGNMENT = re.compile(
    rf"""(?ix)
    (?<![A-Za-z0-9_.-])(?P<name>{_SECRET_KEY_NAME})(?![A-Za-z0-9_])  # a name starts after a space, quote or sign
    ["']?\s*(?P<sep>:=|=|:)\s*
    (?P<quote>["'`]?)(?P<value>[^\s"'`,;]+)(?P=quote)
    """
)
# Passwort: hunter2, mot de passe : hunter2, 密码：hunter2 - a label of another language, then a
# separator (full-width in CJK text) and a value as an assignment's. The labels written in ASCII
# letters are one pattern of the screen, in any case. The rest can only match text that is not ASCII
# (none of their letters matches an ASCII one), so they run on such text alone and an ASCII query or
# id is still ruled out by its literals (secret_marks.py); they are matched as written, in lower or
# upper case or with a capital first, not ignoring case: a list of plain literals lets re skip to
# their first letters (a MiB of text in 0.05 s, not 0.3), and a word boundary is checked after.
_LABEL_VALUE = (rf"""\s*(?P<sep>[{re.escape(secret_labels.SEPARATORS)}])\s*"""
                r"""(?P<quote>["'`]?)(?P<value>[^\s"'`,;，、。；]+)(?P=quote)""")
_LABELLED = re.compile(r"(?i)(?<!\w)(?P<name>" + "|".join(re.escape(w) for w in secret_labels.labels() if w.isascii())
                       + ")" + _LABEL_VALUE)
_IN_SCRIPT = sorted({v for w in secret_labels.labels() if not w.isascii()
                     for v in (w, w.lower(), w.upper(), w[0].upper() + w[1:], w.capitalize())}, key=len, reverse=True)
_LABELLED_IN_SCRIPT = re.compile("(?P<name>" + "|".join(map(re.escape, _IN_SCRIPT)) + ")" + _LABEL_VALUE)
# Chinese and Japanese put no space between words, so their labels need no word boundary (我的密码：…)
_UNSPACED = {w for kind in secret_labels.LABELS.values() for lang in ("zh", "ja") for w in kind.get(lang, ())}
_FOREIGN_PASSWORDS = frozenset(w.casefold() for w in secret_labels.labels("password"))
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD = re.compile(
    r"(?<![a-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]{0,30})://(?P<user>[^\s:/@]{0,100}):(?P<password>[^\s/@]{1,200})@"
    r"(?P<host>[^\s/?#]{1,255})", re.I
)
# A secret stated in prose: "my password is hunter2", "root password for db01 is Zx9#kLm2pQ",
# "the api token for jenkins is …", "use pw Tr0ub4dor&3". The value must look secret on its own
# ("the password is expired" is prose), so this asks more of it than an assignment does.
_PROSE_SECRET = re.compile(
    rf"""(?ix)
    \b(?P<label>{_PASSWORD_WORDS}|pw|(?:api|auth|access|deploy|bot|bearer)[ _-]?(?:token|key)|token
       |(?:client|webhook|app|shared)[ _-]?secret|secret)\b
    (?:\s+(?:for|of|on|to)\s+(?:the\s+)?[\w.@-]+(?:\s+[\w.@-]+)?)?   # for db01, for the staging box
    (?:\s*(?:is|was|[:=])(?:\s+now)?)?\s+
    (?P<quote>["'`]?)(?P<value>[^\s"'`]{{4,}})(?P=quote)
    """
)
# user / password pairs after a login word: "login for db01: admin / Adm1n!24", "credentials are ops:pa55w0rd!".
# The password is at most 128 characters: unbounded, each login word of a long "login:login:…" word
# read the rest of it, several times (17 s for 20 KB)
_LOGIN_PAIR = re.compile(
    r"""(?ix)
    \b(?:login|logins|creds|credentials|account|user(?:name)?)\b[^\n/]{0,25}?
    (?<![\w.@-])(?P<user>[\w.@-]{2,30})\s*[/:]\s*
    (?P<value>(?=[^\s/]{0,127}[0-9!@\#$%^&*])(?=[^\s/]{0,127}[A-Za-z])[^\s/]{6,128})(?!\S)
    """
)
_ADMIN_PAIR = re.compile(r"(?i)\b(?:admin|root|administrator|sa)\s+/\s+(?P<value>(?=\S*[0-9!@#$%^&*])[^\s/]{6,})(?!\S)")
# License keys: a 32-hex or 5x5 key after a licence word. A bare 32-hex string is a hash, not a secret.
_LICENSE = re.compile(
    r"""(?ix)
    \b(?:licen[cs]e(?:[ _-]?(?:key|code|number))?|serial(?:[ _-]?(?:key|number|no))?|activation[ _-]?(?:key|code)
       |product[ _-]?key|registration[ _-]?(?:key|code))\b
    [^\n]{0,30}?(?<![A-Za-z0-9])(?P<value>[0-9a-f]{32}|[A-Z0-9]{4,6}(?:-[A-Z0-9]{4,6}){3,})(?![A-Za-z0-9])
    """
)

_PLACEHOLDER_WORDS = frozenset(
    """
    changeme change_me changeit password passwd secret token apikey api_key key value none null
    nil true false empty redacted removed hidden masked placeholder example sample dummy test
    testing foo bar baz required optional string str int todo tbd xxx your_token your_password
    pass unset undefined default disabled enabled generated random prompt ask vault env
    """.split()
)
_PLACEHOLDER_PARTS = ("example", "placeholder", "redacted", "your_", "your-", "changeme", "xxxx", "dummy",
                      "replace", "insert_", "<", ">")


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret instead of being one: <token>, ${VAR}, xxx, ***, changeme …"""
    v = value.strip()
    low = v.lower()
    if len(v) < 3 or low in _PLACEHOLDER_WORDS:
        return True
    if v[0] in "<{[$(" or v.startswith(("...", "…")) or re.fullmatch(r"%\w+%", v):
        return True  # <token>, {{ secret }}, ${VAR}, $VAR, %VAR%, [redacted], ...
    if re.fullmatch(r"!\w+", v):
        return True  # a YAML tag such as !vault (the value follows on the next lines, encrypted)
    if len(set(v)) <= 2:
        return True  # ***, xxxxxxxx, ********
    if any(part in low for part in _PLACEHOLDER_PARTS):
        return True
    # a reference to where the secret lives: os.environ[...], getenv(...), settings.db_password
    return "(" in v or "[" in v or re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+", v) is not None


# a documented example key says so at its end (AKIAIOSFODNN7EXAMPLE, ...EXAMPLEKEY) or as a word of
# its own (sk_test_example_123); "example" inside a random body (sk_live_51HqTESTexampleqwe...) is chance
_EXAMPLE_KEY = re.compile(r"example(?:key)?$|(?:^|[_\-.])example(?:[_\-.]|$)", re.IGNORECASE)


def _placeholder_key(value: str, prefix: int) -> bool:
    """A vendor-shaped key whose body is filler (sk_live_xxxx…, ghp_XXXX…, AKIA0000…) or a documented example."""
    body = value[prefix:]
    return _EXAMPLE_KEY.search(body) is not None or len(set(body.lower())) <= 3 or "xxxx" in body.lower()


def looks_secret(value: str) -> bool:
    """Not a placeholder, and either 6+ characters with a digit (or letters mixed with symbols such
    as @ ! #), or 20+ characters that are not plain words: "hunter2" and "P@ssw0rd" are secrets,
    "Kubernetes" or "Überprüfungsverfahren" after a ``secret:`` label are prose."""
    if is_placeholder(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_symbol = any(not c.isalnum() and c not in "-_." for c in value)
    if len(value) >= 6 and (has_digit or (has_alpha and has_symbol)):
        return True
    return len(value) >= 20 and not _plain_words(value)


def _plain_words(value: str) -> bool:
    """Letters in words joined by ``- _ .``, each without a capital after its first letter: in any
    script, since one without spaces (a Japanese or Thai sentence after ``secret:``) is 20+ characters
    of such letters, and a German noun starts with a capital (Überprüfungsverfahren). Random letters
    put capitals anywhere (aB3dE6…, ОченьДлинное…)."""
    return all(part.isalpha() and not any(c.isupper() for c in part[1:]) for part in re.split(r"[-_.]", value))


def _rest_of_line(text: str, pos: int) -> str:
    """``text[pos:].split("\\n", 1)[0].strip()`` without copying the rest of a long text."""
    end = text.find("\n", pos)
    return text[pos:end if end >= 0 else len(text)].strip()


def _word_password(m: re.Match[str], text: str) -> bool:
    """A plain word assigned to a password name is still a password (PG_PASSWORD=sunshine) when the
    syntax is an assignment: ``=``, a quoted value, or a ``name: value`` that ends the line."""
    name, value = m.group("name"), m.group("value")
    password_name = re.search(rf"(?:{_PASSWORD_WORDS}|pass)$", name.lower()) or name.casefold() in _FOREIGN_PASSWORDS
    if not password_name or len(value) < 4 or is_placeholder(value):
        return False
    if not value.isalpha():  # letters of any script: PG_PASSWORD=Sonnenblümchen as much as =sunshine
        return False
    rest = _rest_of_line(text, m.end())
    return m.group("sep") not in ":\uff1a" or bool(m.group("quote")) or not rest or rest[0] in ",;)}#"


def _prose_value_secret(value: str) -> bool:
    """A value named in prose: a digit and a letter, or a letter and a symbol, and no path or URL."""
    value = value.rstrip(".,;:!?)")
    if "://" in value or value.startswith("/") or is_placeholder(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    return len(value) >= 6 and has_alpha and (has_digit or has_symbol)


def _pair_value_secret(m: re.Match[str], text: str) -> bool:
    """The password of a user / password pair: a symbol in it, or (mixed case and a digit) where it
    ends the clause; "acme-corp/billing-v2" or "admin / Settings2 tab" are paths and labels."""
    value = m.group("value").rstrip(".,;:)")
    if not _prose_value_secret(value):
        return False
    if any(c in "!@#$%^&*+=?~" for c in value):
        return True
    rest = _rest_of_line(text, m.end())
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
    return mixed and (not rest or not rest[0].isalnum())


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


def _iter(pattern: re.Pattern[str], text: str, restart: str):
    """Matches of pattern; after each, resume inside group ``restart`` so a rejected match cannot
    hide one that starts within it (``export TOKEN=aws_secret_access_key = …``)."""
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return
        yield m
        pos = max(m.start(restart), m.start() + 1)


def _in_script(text: str):
    """The matches of _LABELLED_IN_SCRIPT in a text that is not ASCII, each starting a word unless
    its label is Chinese or Japanese."""
    if text.isascii():
        return
    for m in _iter(_LABELLED_IN_SCRIPT, text, "value"):
        before = text[m.start() - 1] if m.start() else " "
        if not (before.isalnum() or before == "_") or m.group("name") in _UNSPACED:
            yield m


_SCREEN = prefilter.Screen([_PEM, *(pattern for _, pattern, _ in _VENDOR_KEYS), _JWT, _URL_PASSWORD, _ASSIGNMENT,
                            _LABELLED, _BEARER, _LICENSE, _PROSE_SECRET, _LOGIN_PAIR, _ADMIN_PAIR])


def find_credentials(text: str, screened: bool = True) -> list[CredentialFinding]:
    """Every secret-looking span in text, in order of position, masked. ``screened`` skips the
    patterns whose literals are absent (the same findings; False runs every pattern)."""
    found: list[tuple[int, int, CredentialFinding]] = []

    def add(start: int, end: int, kind: str, masked: str) -> None:
        if len(found) >= MAX_FINDINGS:
            return
        if not any(s <= start < e or start <= s < end for s, e, _ in found):
            found.append((start, end, CredentialFinding(kind, masked, _line(text, start), start, end)))

    may = iter((_SCREEN.may_match(text) if screened else None) or repeat(True))

    def run(pattern: re.Pattern[str], restart: str | None = None):
        """Matches of pattern (called in the screen's order), or none when the screen rules it out."""
        if not next(may):
            return ()
        return _iter(pattern, text, restart) if restart else pattern.finditer(text)

    for m in run(_PEM):
        add(m.start(), m.end(), "PEM private key", f"-----BEGIN {m.group(1)}-----…")
    for kind, pattern, keep in _VENDOR_KEYS:
        for m in run(pattern):
            value = m.group()
            if not _placeholder_key(value, keep):
                add(m.start(), m.end(), kind, _mask(value, keep))
    for m in run(_JWT):
        if _is_jwt_header(m.group(1)):
            add(m.start(), m.end(), "JWT", _mask(m.group(), 3))
    for m in run(_URL_PASSWORD):
        if looks_secret(m.group("password")):
            masked = f"{m.group('scheme')}://{m.group('user')}:***@{m.group('host')}"
            add(m.start(), m.end(), "password in URL", masked)
    for m in run(_ASSIGNMENT, "value"):
        if looks_secret(m.group("value")) or _word_password(m, text):
            add(m.start(), m.end(), "secret assignment", f"{m.group('name')}=***")
    for m in chain(run(_LABELLED, "value"), _in_script(text)):
        if looks_secret(m.group("value")) or _word_password(m, text):
            add(m.start(), m.end(), "secret assignment", f"{m.group('name')}=***")
    for m in run(_BEARER):
        if looks_secret(m.group("value")):
            add(m.start(), m.end(), "bearer token", "Bearer ***")
    for m in run(_LICENSE):
        add(m.start("value"), m.end("value"), "license key", _mask(m.group("value")))
    for m in run(_PROSE_SECRET, "value"):
        if _prose_value_secret(m.group("value")):
            add(m.start("value"), m.end("value"), "secret in prose", f"{m.group('label')} ***")
    for pattern in (_LOGIN_PAIR, _ADMIN_PAIR):
        for m in run(pattern):
            if _pair_value_secret(m, text):
                add(m.start("value"), m.end("value"), "login and password", "user / ***")
    return [f for _, _, f in sorted(found, key=lambda item: item[0])]


def check(content: str) -> GateRefusal | None:
    """Refuse a body that holds a credential; there is deliberately no override."""
    findings = find_credentials(content)
    if not findings:
        return None
    kinds = sorted({f.kind for f in findings})
    from kenning.memory.gates.refusal import GateRefusal  # here: masking a logged query builds none

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


def check_field(value: object, field: str) -> GateRefusal | None:
    """The same refusal for a stored field other than the body (a removal reason, a note, metadata,
    a scope name, an episode): secrets are kept out of every field, not only the memory text."""
    if not isinstance(value, str) or not value:
        return None
    refusal = check(value)
    if refusal is None:
        return None
    return refusal.model_copy(update={
        "reason": f"{field} contains what looks like a secret "
                  f"({', '.join(sorted({m.split(' on line')[0] for m in refusal.matched}))}); secrets must not be stored",
    })


def mask(text: str) -> str:
    """The text with every secret-looking span replaced by ``[kind removed]``: for what is logged
    rather than refused (search queries, audited turns)."""
    if not isinstance(text, str) or not text:
        return text
    findings = find_credentials(text)
    for f in sorted(findings, key=lambda f: f.start, reverse=True):
        text = text[: f.start] + f"[{f.kind} removed]" + text[f.end :]
    return text
