"""Claims: parsing the four shapes and checking them against a real directory tree."""

from __future__ import annotations

import os

import pytest

from kenning.errors import InvalidInput
from kenning.memory.claims import (
    ParsedClaim,
    assigned_values,
    check_claim,
    check_claims,
    defines_symbol,
    parse_claim,
    parse_claims,
)


@pytest.fixture
def worktree(tmp_path):
    root = tmp_path / "wt"
    (root / "src" / "auth").mkdir(parents=True)
    (root / "src" / "auth" / "server.py").write_text(
        "import os\n\n"
        "PORT: int = 8443\n"
        'HOST = "auth.internal"  # overridden in tests\n'
        "TIMEOUT = 30\n\n"
        "class AuthServer:\n"
        "    async def serve(self):\n"
        "        if PORT == 9000:\n"
        "            pass\n\n"
        "def main():\n"
        "    AuthServer()\n"
    )
    (root / "web").mkdir()
    (root / "web" / "api.ts").write_text(
        "export const API_VERSION = 'v2';\n"
        "export async function fetchUser(id: string): Promise<User> {\n  return get(id);\n}\n"
        "class Client {\n  private retry(count: number): void {\n  }\n}\n"
    )
    (root / "config.yaml").write_text("database:\n  pool_size: 10\nlog_level: info\n")
    (root / ".env.example").write_text("REDIS_URL=redis://localhost:6379/0\n")
    return root


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("src/app.py", ParsedClaim("src/app.py")),
        ("./src/app.py", ParsedClaim("src/app.py")),
        ("src/app.py::main", ParsedClaim("src/app.py", "main")),
        ("src/app.py::AuthServer.serve", ParsedClaim("src/app.py", "AuthServer.serve")),
        ("src/app.py::PORT=8443", ParsedClaim("src/app.py", "PORT", "8443")),
        ("src/app.py:: PORT = 'a=b' ", ParsedClaim("src/app.py", "PORT", "'a=b'")),
        ("docs/", ParsedClaim("docs")),
        # a line range named a file "src/app.py:10-20", which never existed
        ("src/app.py:10-20", ParsedClaim("src/app.py", lines=(10, 20))),
        ("src/app.py:L7", ParsedClaim("src/app.py", lines=(7, 7))),
        ("src/app.py:L10\u2013L20", ParsedClaim("src/app.py", lines=(10, 20))),
    ],
)
def test_parse_the_three_shapes(text, expected):
    assert parse_claim(text) == expected


def test_canonical_text_round_trips():
    for text in ("src/app.py", "src/app.py::main", "src/app.py::PORT=8443", "src/app.py:10-20", "src/app.py:7"):
        assert str(parse_claim(text)) == text
    assert [c.kind for c in parse_claims(["a.py", "a.py::f", "a.py::X=1", "a.py", "a.py:3"])] == [
        "path", "symbol", "value", "lines"]


@pytest.mark.parametrize(
    "text",
    ["", "   ", "../secrets.txt", "src/../../etc/passwd", "/etc/passwd", "C:/Windows/x.ini", ".", "a.py::",
     "a.py::not a symbol", "a.py::PORT=", "a.py::=8443", "::main", "a.py:0", "a.py:20-10"],
)
def test_malformed_or_escaping_claims_are_invalid_input(text):
    with pytest.raises(InvalidInput):
        parse_claim(text)


@pytest.mark.parametrize(
    "claim",
    [
        "src/auth/server.py",
        "src/auth",
        "src/auth/server.py::AuthServer",
        "src/auth/server.py::AuthServer.serve",
        "src/auth/server.py::main",
        "src/auth/server.py::PORT",
        "src/auth/server.py::PORT=8443",
        'src/auth/server.py::HOST="auth.internal"',
        "src/auth/server.py::HOST=auth.internal",  # quotes on either side are ignored
        "web/api.ts::fetchUser",
        "web/api.ts::Client.retry",
        "web/api.ts::API_VERSION=v2",
        "config.yaml::pool_size=10",
        "config.yaml::log_level",
        ".env.example::REDIS_URL=redis://localhost:6379/0",
        "src/auth/server.py:7-13",  # 13 lines: the last one is there
        "src/auth/server.py:13",
    ],
)
def test_true_claims_hold(worktree, claim):
    result = check_claim(claim, worktree)
    assert result.ok, result


@pytest.mark.parametrize(
    ("claim", "status", "detail"),
    [
        ("src/auth/client.py", "missing_path", "does not exist"),
        ("src/auth/client.py::main", "missing_path", "does not exist"),
        ("src/auth/server.py::shutdown", "missing_symbol", "no definition of shutdown"),
        ("src/auth/server.py::AuthServer.stop", "missing_symbol", "AuthServer.stop"),
        ("src/auth/server.py::os", "missing_symbol", "no definition"),  # imported, not defined
        ("src/auth::main", "missing_symbol", "not a file"),
        ("src/auth/server.py::PORT=9000", "wrong_value", "assigns PORT = 8443, not 9000"),
        ("src/auth/server.py::RETRIES=3", "missing_symbol", "not assigned"),
        ("web/api.ts::API_VERSION=v3", "wrong_value", "'v2'"),
        ("src/auth/server.py:500-510", "missing_lines", "src/auth/server.py has 13 lines, so no line 510"),
        ("src/auth/server.py:14", "missing_lines", "has 13 lines, so no line 14"),
        ("src/auth:3", "missing_lines", "not a file"),
        ("src/auth/client.py:3", "missing_path", "does not exist"),
    ],
)
def test_false_claims_say_what_is_wrong(worktree, claim, status, detail):
    result = check_claim(claim, worktree)
    assert (result.ok, result.status) == (False, status)
    assert detail in result.detail


def test_a_symlink_out_of_the_worktree_is_refused(worktree, tmp_path):
    (tmp_path / "outside.txt").write_text("secret\n")
    os.symlink(tmp_path / "outside.txt", worktree / "link.txt")
    assert check_claim("link.txt", worktree).status == "outside_worktree"


def test_a_symlink_loop_is_a_missing_path_not_an_error(worktree):
    # Path.resolve raised RuntimeError on it: every search, show, verify and write naming it failed
    os.symlink("loop.py", worktree / "src" / "loop.py")
    os.symlink("b.py", worktree / "src" / "a.py")
    os.symlink("a.py", worktree / "src" / "b.py")
    for claim in ("src/loop.py::main", "src/a.py", "src/b.py::PORT=1"):
        assert check_claim(claim, worktree).status == "missing_path"


def test_a_claim_past_the_part_of_a_huge_file_that_is_read_is_unchecked_not_false(worktree):
    from kenning.memory.claims import MAX_READ_BYTES

    big = worktree / "gen" / "tables.py"
    big.parent.mkdir()
    big.write_text("EARLY = 1\n" + "# generated\n" * (MAX_READ_BYTES // 12 + 1) + "LATE = 2\ndef late():\n    pass\n")
    assert check_claim("gen/tables.py::EARLY=1", worktree).ok
    assert check_claim("gen/tables.py::EARLY=3", worktree).status == "too_large"  # may be assigned again later
    for claim in ("gen/tables.py::LATE=2", "gen/tables.py::late"):  # were missing_symbol: a false drift
        result = check_claim(claim, worktree)
        assert result.status == "too_large" and "the rest of the file was not read" in result.detail
    from kenning.memory.staleness import assess_path_drift

    drift = assess_path_drift("see gen/tables.py", ["gen/tables.py::late"], str(worktree))
    assert drift.status == "unmeasured" and drift.claim_anchored_missing == []  # was spot_check_required


def test_a_byte_order_mark_does_not_hide_a_first_line_definition(worktree):
    # saved by an editor that writes a BOM: PORT was "not defined" and the memory spot_check_required
    (worktree / "conf.py").write_bytes(b"\xef\xbb\xbfPORT = 8443\n")
    (worktree / "compose.yml").write_bytes(b"\xef\xbb\xbfversion: 3\nservices: {}\n")
    for claim in ("conf.py::PORT", "conf.py::PORT=8443", "compose.yml::version", "compose.yml::version=3"):
        assert check_claim(claim, worktree).ok, claim


def test_a_utf16_file_is_read_as_utf16(worktree):
    # read as UTF-8, "$Version = '1.2'" was a run of NULs: the claim missing, a true claim refused
    (worktree / "setup.ps1").write_bytes("$Version = '1.2'\r\nfunction Install {\r\n}\r\n".encode("utf-16"))
    for claim in ("setup.ps1::$Version='1.2'", "setup.ps1::Install", "setup.ps1::$Version"):
        assert check_claim(claim, worktree).ok, claim
    assert check_claim("setup.ps1::$Version='2.0'", worktree).status == "wrong_value"


def test_a_path_too_long_for_the_file_system_is_missing_not_an_error(worktree):
    # stat raised ENAMETOOLONG: every search returning a memory that cited such a path failed
    from kenning.memory.staleness import assess_path_drift

    long = "src/" + "x" * 300 + ".py"
    assert check_claim(f"{long}::main", worktree).status == "missing_path"
    drift = assess_path_drift(f"the generated file is {long}", [], str(worktree))
    assert (drift.status, drift.missing) == ("measured", [long])


def test_check_claims_keeps_order(worktree):
    results = check_claims(["src/auth/server.py::main", "nope.py"], worktree)
    assert [r.status for r in results] == ["ok", "missing_path"]
    assert results[0].claim == "src/auth/server.py::main"


def test_definition_and_assignment_helpers_ignore_comparisons_and_look_alikes():
    source = "if PORT == 1:\n    pass\nPORT_NUMBER = 2\nprint(main)\n"
    assert assigned_values(source, "PORT") == []
    assert not defines_symbol(source, "PORT")
    assert not defines_symbol(source, "main")
    assert defines_symbol("func (s *Server) Serve(l net.Listener) error {", "Serve")
    assert defines_symbol("pub fn parse<T>(x: T) -> T {", "parse")
    assert not defines_symbol("if ready(x) {", "ready")


def test_has_lines_counts_as_the_whole_text_does_across_chunks_and_the_read_limit(tmp_path, monkeypatch):
    """has_lines stops reading once the line is reached; counted chunk by chunk (a CRLF split between
    two, a last line without an ending, the MAX_READ_BYTES cut) it answers what counting the text
    read whole answers, and None where the cut leaves it open."""
    import random

    from kenning.memory import claims

    draw, target = random.Random(5), tmp_path / "f.txt"
    for chunk, limit in ((1, 10**6), (3, 5), (7, 20)):
        monkeypatch.setattr(claims, "LINES_CHUNK", chunk)
        monkeypatch.setattr(claims, "MAX_READ_BYTES", limit)
        for _ in range(300):
            data = bytes(draw.choice(b"ab\r\n\xe9") for _ in range(draw.randint(0, 30)))
            target.write_bytes(data)
            count = claims._line_count(claims._text(data[:limit]))
            for last in range(1, 20):
                want = True if count >= last else None if len(data) > limit else False
                assert claims.has_lines(target, last) is want, (chunk, limit, data, last)
