"""Claims: what a memory says about the code, in a form that can be checked against a worktree.

Four shapes, written as text so a model can declare them inline:

- ``path``                  the file or directory exists;
- ``path:N`` / ``path:N-M`` the file has line N (lines N to M), as an editor counts them: a range
                            past the end of the file points at code that is no longer there;
- ``path::symbol``          the file defines ``symbol`` (a def/class/function/const/…, or a
                            ``symbol =`` / ``symbol:`` binding; ``Class.method`` needs every part);
- ``path::NAME=literal``    the file assigns ``literal`` to ``NAME`` (quotes on either side are
                            ignored, so ``PORT=8443`` holds for ``PORT = "8443"``).

Symbol detection is a language-agnostic regex, not a parser: good enough to notice a rename or
a deletion, which is what drift checks need. Paths are relative to the worktree and may not
leave it, neither by ``..`` nor through a symlink.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from kenning.errors import InvalidInput

MAX_READ_BYTES = 4 * 1024 * 1024  # a claim about a larger file is checked on its first 4 MiB (else too_large)

_IDENTIFIER = r"[A-Za-z_$][\w$]*"
_SYMBOL_RE = re.compile(rf"{_IDENTIFIER}(?:\.{_IDENTIFIER})*")
_NAME_RE = re.compile(r"[A-Za-z_$][\w$.-]*")
# path:10, path:10-20, path:L10-L20 (dashes of every kind, as citations in prose are read)
_LINES_RE = re.compile(r"(?P<path>.+?):L?(?P<first>\d+)(?:[-\u2010-\u2015]L?(?P<last>\d+))?")
# a comment after a value, from the start of the blanks before it: tried from each blank of a long run
# of them (a generated file's padded line), it reread the run each time (9 s for a line of 20,000)
_TRAILING_COMMENT = re.compile(r"(?<!\s)\s+(?:#|//).*$")

# unreadable: the file or a folder on its path may not be read (permissions, an I/O error);
# too_large: what a claim names is not in the first MAX_READ_BYTES of a larger file. Such a claim is
# neither shown to hold nor to fail (UNCHECKED), and drift reports it as unmeasured
ClaimStatus = Literal["ok", "missing_path", "missing_lines", "missing_symbol", "wrong_value", "outside_worktree",
                      "unreadable", "too_large"]
UNCHECKED = ("unreadable", "too_large")


@dataclass(frozen=True)
class ParsedClaim:
    """A claim split into its parts; ``str(claim)`` gives the canonical text back."""

    path: str
    symbol: str | None = None
    value: str | None = None  # set for NAME=literal claims; symbol holds NAME
    lines: tuple[int, int] | None = None  # set for path:N-M claims: the first and last line

    @property
    def kind(self) -> Literal["path", "lines", "symbol", "value"]:
        if self.lines:
            return "lines"
        return "value" if self.value is not None else "symbol" if self.symbol else "path"

    def __str__(self) -> str:
        if self.value is not None:
            return f"{self.path}::{self.symbol}={self.value}"
        if self.lines:
            first, last = self.lines
            return f"{self.path}:{first}" if first == last else f"{self.path}:{first}-{last}"
        return f"{self.path}::{self.symbol}" if self.symbol else self.path


@dataclass(frozen=True)
class ClaimResult:
    """The outcome of checking one claim now; ``detail`` says what was found instead."""

    claim: str
    status: ClaimStatus
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def normalize_claim_path(path: str, what: str = "claim path") -> str:
    """A worktree-relative POSIX path: ``./`` dropped; absolute paths and ``..`` refused. ``what``
    names it in an error (a claim's path, a verified path)."""
    raw = path.strip().replace("\\", "/")
    if not raw:
        raise InvalidInput(f"a {what} is empty; give one such as src/app.py")
    pure = PurePosixPath(raw)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", raw):
        raise InvalidInput(f"{what} {path!r} is absolute; give it relative to the repository root")
    if ".." in pure.parts:
        raise InvalidInput(f"{what} {path!r} leaves the worktree ('..' is not allowed)")
    parts = [p for p in pure.parts if p != "."]
    if not parts:
        raise InvalidInput(f"{what} {path!r} names the worktree itself; name a file or directory in it")
    return "/".join(parts)


def parse_claim(text: str) -> ParsedClaim:
    """Parse ``path``, ``path:N-M``, ``path::symbol`` or ``path::NAME=literal``; InvalidInput says what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("a claim is empty; use path, path:N-M, path::symbol or path::NAME=literal")
    path, sep, rest = text.strip().partition("::")
    span = None if sep else _LINES_RE.fullmatch(path.strip())
    if span:  # src/app.py:10-20 named a file "src/app.py:10-20", which 'did not exist'
        path, first, last = span["path"], int(span["first"]), int(span["last"] or span["first"])
        if not 1 <= first <= last:
            raise InvalidInput(f"claim {text!r}: lines are counted from 1 and a range ends at or after its start")
    path = normalize_claim_path(path)
    if not sep:
        return ParsedClaim(path, lines=(first, last) if span else None)
    name, eq, value = rest.partition("=")
    name = name.strip()
    if eq:
        if not _NAME_RE.fullmatch(name):
            raise InvalidInput(f"claim {text!r}: {name!r} is not a name; use path::NAME=literal")
        if not value.strip():
            raise InvalidInput(f"claim {text!r} has no literal after '='")
        return ParsedClaim(path, name, value.strip())
    if not _SYMBOL_RE.fullmatch(name):
        raise InvalidInput(f"claim {text!r}: {name!r} is not a symbol name; use path::symbol (Class.method allowed)")
    return ParsedClaim(path, name)


def parse_claims(texts: Iterable[str]) -> list[ParsedClaim]:
    """Parse several claims, dropping exact repeats."""
    return list(dict.fromkeys(parse_claim(t) for t in texts))


_DEFINITION_KEYWORDS = (
    r"def|class|function|func|fn|struct|enum|interface|trait|type|typedef|module|record|object"
    r"|const|let|var|val|static|macro|defmacro|defn|defun|sub|proc|alias|namespace|impl|union"
)


def _symbol_patterns(name: str) -> list[re.Pattern[str]]:
    n = re.escape(name)
    return [
        # def name / class Name / export async function name / func (r *T) Name / fn name<T>
        re.compile(rf"\b(?:{_DEFINITION_KEYWORDS})\s+(?:\([^)]*\)\s*)?\*?\s*{n}(?![\w$])"),
        # name = … / self.name = … / export const-less assignment; "==" is a comparison
        re.compile(rf"(?m)^\s*(?:export\s+)?(?:[\w$]+\.)?{n}\s*(?::[^=\n]*)?(?::=|=)(?!=)"),
        # name: … as a YAML/TOML/JSON key or an annotated declaration
        re.compile(rf"""(?m)^\s*["']?{n}["']?\s*:(?!:)"""),
        # [name] TOML table, name() { shell function
        re.compile(rf"(?m)^\s*(?:\[{n}\]|{n}\s*\(\)\s*\{{)"),
        # C-family method or function: `public static int name(args) {`, `async name(a, b) {`
        re.compile(
            rf"(?m)^\s*(?!(?:if|for|while|switch|catch|return|else|do)\b)(?:[\w$<>\[\],*&:]+\s+)*"
            rf"{n}\s*(?:<[^>\n]*>)?\s*\([^)\n]*\)\s*(?:(?:->|:)[^{{\n]*|throws\s+[\w.,\s]+|const\s*)?\{{"
        ),
    ]


def defines_symbol(source: str, symbol: str) -> bool:
    """True when source defines symbol; a dotted ``Class.method`` needs every part defined."""
    return all(any(p.search(source) for p in _symbol_patterns(part)) for part in symbol.split("."))


def assigned_values(source: str, name: str) -> list[str]:
    """The right-hand sides assigned to name in source, trailing ``;``/``,`` and comments removed."""
    n = re.escape(name)
    pattern = re.compile(
        rf"""(?m)(?<![\w$-])["']?{n}["']?\s*(?::[^=\n]*?)?\s*(?::=|=(?!=)|:(?!:))\s*(?P<value>[^\n]*)"""
    )
    values = []
    for m in pattern.finditer(source):
        value = _TRAILING_COMMENT.sub("", m.group("value")).strip().rstrip(";,").strip()
        if value:
            values.append(value)
    return values


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'`":
        return v[1:-1]
    return v


def inside(root: Path, target: Path) -> bool:
    """Whether target, its symlinks followed, lies in root. os.path.realpath, not Path.resolve: that
    raises RuntimeError on a symlink loop, which failed every search returning such a claim."""
    try:
        Path(os.path.realpath(target)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True


def exists(path: Path) -> bool | None:
    """Whether path exists, or None when that cannot be told (a folder on the way may not be
    searched): pathlib answers False only for a path that is not there, and raises otherwise. A
    name too long for the file system cannot be there."""
    try:
        return path.exists()
    except OSError as exc:
        return False if exc.errno == errno.ENAMETOOLONG else None


def check_claim(claim: ParsedClaim | str, worktree: str | os.PathLike[str]) -> ClaimResult:
    """Check one claim against the files in worktree as they are now."""
    parsed = parse_claim(claim) if isinstance(claim, str) else claim
    text = str(parsed)
    root = Path(worktree)
    target = root / parsed.path
    if not inside(root, target):
        return ClaimResult(text, "outside_worktree", f"{parsed.path} resolves outside the worktree (symlink)")
    found = exists(target)
    if found is False:
        return ClaimResult(text, "missing_path", f"{parsed.path} does not exist in {root}")
    try:
        if found is None:
            target.stat()  # raises again, with the reason the detail gives
        if parsed.kind == "path":
            return ClaimResult(text, "ok", f"{parsed.path} exists")
        if not target.is_file():
            if parsed.kind == "lines":
                return ClaimResult(text, "missing_lines", f"{parsed.path} is not a file, so it has no lines")
            return ClaimResult(text, "missing_symbol", f"{parsed.path} is not a file, so it defines no {parsed.symbol}")
        with target.open("rb") as fh:
            raw = fh.read(MAX_READ_BYTES + 1)
    except OSError as exc:  # a search, show or health must not fail on one file it may not read
        return ClaimResult(text, "unreadable", f"{parsed.path} cannot be read: {exc.strerror or exc}")
    result = _judge(parsed, text, _text(raw[:MAX_READ_BYTES]))
    if len(raw) > MAX_READ_BYTES and not result.ok:  # the rest of the file may hold it: not a sign that the claim fails
        return ClaimResult(text, "too_large", f"{result.detail} in its first {MAX_READ_BYTES // 2**20} MiB; "
                                              "the rest of the file was not read")
    return result


LINES_CHUNK = 64 * 1024  # has_lines reads this much at a time and stops once the line is reached


def has_lines(path: Path, last: int) -> bool | None:
    """Whether the file at path has a line ``last`` (a cited line range reaches no further than its
    end), or None when that cannot be told: it may not be read, or its first MAX_READ_BYTES hold
    fewer lines. CR, LF and CRLF each end a line, as editors count them. Read in chunks up to that
    line, since a search checks the citations of every hit: line 510 is in the first few kilobytes."""
    try:
        with path.open("rb") as fh:
            chunk = fh.read(LINES_CHUNK)
            if chunk.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # two bytes a character: decode
                raw = chunk + fh.read(MAX_READ_BYTES + 1 - len(chunk))
                if _line_count(_text(raw[:MAX_READ_BYTES])) >= last:
                    return True
                return None if len(raw) > MAX_READ_BYTES else False
            ended, seen, before = 0, 0, b""  # line endings so far, bytes read, the byte before this chunk
            while chunk:
                cut = len(chunk) > MAX_READ_BYTES - seen  # the file goes on past what is read
                chunk = chunk[:MAX_READ_BYTES - seen]
                ended += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n") - (before + chunk[:1] == b"\r\n")
                seen, before = seen + len(chunk), chunk[-1:]
                if ended + (before not in b"\r\n") >= last:  # a line begun is there, ended or not
                    return True
                if seen >= MAX_READ_BYTES:
                    return None if cut or fh.read(1) else False
                chunk = fh.read(LINES_CHUNK)
    except OSError:
        return None
    return False


def _line_count(text: str) -> int:
    """The lines of a file's text: CR, LF and CRLF each end one, and a last line needs no ending."""
    return text.count("\n") + text.count("\r") - text.count("\r\n") + (not text.endswith(("\n", "\r")) and bool(text))


def _text(raw: bytes) -> str:
    """A file's text: UTF-16 when it starts with that byte order mark (as Windows tools write
    PowerShell scripts and .reg files), else UTF-8; a BOM is no part of the first line's text."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8-sig", errors="replace")


def _judge(parsed: ParsedClaim, text: str, source: str) -> ClaimResult:
    """A lines, symbol or value claim against the text of its file."""
    if parsed.kind == "lines":
        count, last = _line_count(source), parsed.lines[1]
        if count >= last:
            return ClaimResult(text, "ok", f"{parsed.path} has line {last}")
        return ClaimResult(text, "missing_lines", f"{parsed.path} has {count} lines, so no line {last}")
    if parsed.kind == "symbol":
        if defines_symbol(source, parsed.symbol):
            return ClaimResult(text, "ok", f"{parsed.symbol} is defined in {parsed.path}")
        return ClaimResult(text, "missing_symbol", f"no definition of {parsed.symbol} found in {parsed.path}")
    values = assigned_values(source, parsed.symbol)
    if not values:
        return ClaimResult(text, "missing_symbol", f"{parsed.symbol} is not assigned in {parsed.path}")
    if any(_unquote(v) == _unquote(parsed.value) for v in values):
        return ClaimResult(text, "ok", f"{parsed.path} assigns {parsed.value} to {parsed.symbol}")
    shown = ", ".join(values[:3]) + (" …" if len(values) > 3 else "")
    return ClaimResult(text, "wrong_value", f"{parsed.path} assigns {parsed.symbol} = {shown}, not {parsed.value}")


def check_claims(claims: Iterable[ParsedClaim | str], worktree: str | os.PathLike[str]) -> list[ClaimResult]:
    """Check each claim; the write or verify path refuses when any result is not ok."""
    return [check_claim(c, worktree) for c in claims]
