"""Inputs at the command line's edge, through the real `kenning` command in a subprocess: an empty
store path, a store path that is a file, bytes that are not UTF-8 (stdin and JSON Lines), and an
output stream that cannot encode the text (PYTHONIOENCODING)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kenning.errors import InvalidInput

KENNING = [sys.executable, "-m", "kenning"]


def kenning(tmp_path: Path, *args: str, stdin: bytes = b"", **env_vars: str) -> subprocess.CompletedProcess:
    """The real command; bytes in, text out (decoded leniently: the test reads what was printed).
    XDG_DATA_HOME points into tmp_path, so a fall-back to the default store never touches the user's."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_DATA_HOME": str(tmp_path / "xdg"), "COLUMNS": "100",
           "GIT_CEILING_DIRECTORIES": str(tmp_path), **env_vars}
    for name in ("KENNING_HOME", "KENNING_URL"):
        if name not in env_vars:
            env.pop(name, None)
    done = subprocess.run([*KENNING, *args], input=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=300)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stderr
    return done


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The stderr of a refused command: exit 2, an ``error:`` line, no traceback."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


# ---------------------------------------------------------------- bug 1: an empty path is not "the default"
def test_an_empty_store_path_is_an_error_not_the_default(tmp_path):
    default = tmp_path / "xdg" / "kenning"
    message = one_line_error(kenning(tmp_path, "--store", "", "write", "The auth service listens on port 8443"))
    assert "empty" in message and "--store" in message
    assert not default.exists()  # nothing was written to the default store
    for args in (("info",), ("info", "--json"), ("search", "auth"), ("list",)):
        message = one_line_error(kenning(tmp_path, "--store", "", *args))
        assert "empty" in message and "default" not in message.split("(")[0]
    assert not default.exists()

    # the library: an explicit empty path is a mistake too
    import kenning as library

    for path in ("", "   "):
        with pytest.raises(InvalidInput, match="empty"):
            library.open_store(path)

    # an empty $KENNING_HOME in the environment is read as unset (the default store, said so)
    said = ok(kenning(tmp_path, "info", "--json", KENNING_HOME=""))
    assert json.loads(said.stdout)["chosen_because"].startswith("the default")


def test_a_blank_or_tilde_folder_in_the_environment_reads_as_a_shell_would(tmp_path, monkeypatch):
    """$KENNING_HOME=" " chose (and a write made) a store in a folder named ' ' in the current
    directory; $KENNING_CACHE_DIR=" " put the model's conversion there. '~/...' in $KENNING_CACHE_DIR
    or $KENNING_MODELS_DIR (an MCP client's env block expands nothing) named a folder '~' in the
    current directory, while $KENNING_HOME and a server store's cache read it as the home folder."""
    said = ok(kenning(tmp_path, "info", "--json", KENNING_HOME=" "))
    assert json.loads(said.stdout)["chosen_because"].startswith("the default")

    import platformdirs

    from kenning.retrieval import embedding_cache, embeddings, onnx_export
    from kenning.store import backend

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KENNING_CACHE_DIR", "~/cache")
    monkeypatch.setenv("KENNING_MODELS_DIR", "~/models")
    assert onnx_export.cache_root() == home / "cache"
    assert embedding_cache.default_cache_path().parent == home / "cache"
    assert backend.cache_directory("postgresql://db.internal/kenning").parents[1] == home / "cache"
    assert embeddings.default_models_dir() == home / "models"
    for blank in ("", " ", "\t"):
        monkeypatch.setenv("KENNING_CACHE_DIR", blank)
        monkeypatch.setenv("KENNING_MODELS_DIR", blank)
        assert onnx_export.cache_root() == Path(platformdirs.user_cache_dir("kenning"))
        assert embedding_cache.default_cache_path().parent == Path(platformdirs.user_cache_dir("kenning"))
        assert embeddings.default_models_dir().name == "models" and embeddings.default_models_dir().is_absolute()


def test_a_blank_kenning_url_reads_as_unset_as_a_blank_folder_variable_does(tmp_path, monkeypatch):
    """$KENNING_URL=" " was "error: $KENNING_URL must be a postgresql:// URL, not ' '" while a blank
    $KENNING_HOME reads as unset (f4f453c); blanks around a URL are not part of it either."""
    said = ok(kenning(tmp_path, "info", "--json", KENNING_URL=" \t", KENNING_HOME=str(tmp_path / "s")))
    assert json.loads(said.stdout)["chosen_because"] == "set by $KENNING_HOME"
    said = ok(kenning(tmp_path, "info", "--json", KENNING_URL=" "))
    assert json.loads(said.stdout)["chosen_because"].startswith("the default")
    from kenning.store.location import locate_store

    monkeypatch.setenv("KENNING_URL", " postgresql://kenning@db.internal/kenning\n")
    assert locate_store() == ("postgresql://kenning@db.internal/kenning", "set by $KENNING_URL")


def test_info_shows_the_absolute_folder_a_relative_store_path_names(tmp_path):
    """$KENNING_HOME=rel (or --store rel) was shown as 'store: rel': which rel depends on the folder."""
    for env, args in (({"KENNING_HOME": "rel"}, ()), ({}, ("--store", "rel"))):
        said = ok(kenning(tmp_path, *args, "info", "--json", **env))
        assert json.loads(said.stdout)["store"] == str(tmp_path / "rel")


@pytest.mark.embeddings  # the vector index is the file saved at close
@pytest.mark.sqlite_only  # about the files in the store folder
def test_a_relative_store_folder_is_the_folder_it_named_when_the_store_was_opened(tmp_path, monkeypatch):
    """$KENNING_HOME=rel was kept relative, so a library caller that changed folder afterwards had its
    vector index saved to a new rel/ folder inside the new one."""
    import kenning as library

    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KENNING_HOME", "rel")
    monkeypatch.delenv("KENNING_URL", raising=False)
    store = library.open_store()
    assert store.directory == tmp_path / "rel"
    store.write("The billing export runs nightly at 02:00", scopes=["p"])
    assert store.search("billing export", mode="hybrid").hits  # the vector index, saved at close
    monkeypatch.chdir(tmp_path / "elsewhere")
    store.write("The ledger sync runs hourly on weekdays", scopes=["p"])
    store.close()
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert (tmp_path / "rel" / "vectors.idx").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="a folder in use cannot be deleted on Windows")
def test_a_command_run_in_a_folder_deleted_under_it_says_so_in_one_line(tmp_path):
    """A shell whose current folder was deleted (a removed worktree, an rm -rf of a build folder)
    ran every command into os.getcwd()'s FileNotFoundError: a traceback, for a search or a write."""
    store = tmp_path / "s"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_DATA_HOME": str(tmp_path / "xdg")}
    in_a_deleted_folder = ["sh", "-c", 'mkdir "$1" && cd "$1" && rmdir "$1" && shift && exec "$@"', "sh",
                           str(tmp_path / "gone"), *KENNING, "--store", str(store)]
    for args in (["write", "The auth service listens on port 8443"], ["search", "auth", "--mode", "bm25"],
                 ["list"], ["info"]):
        done = subprocess.run([*in_a_deleted_folder, *args], capture_output=True, text=True, env=env, timeout=300)
        assert "current folder no longer exists" in one_line_error(done), args
    assert not store.exists()
    helped = subprocess.run([*in_a_deleted_folder, "list", "--help"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert helped.returncode == 0 and "Usage" in helped.stdout


def test_columns_zero_is_read_as_unset_not_as_a_width_that_prints_nothing(tmp_path):
    """COLUMNS=0 (set by some terminals and CI runners for "unknown") made rich render every line to
    nothing: `kenning list` and `kenning info` printed nothing and exited 0."""
    store = str(tmp_path / "s")
    ok(kenning(tmp_path, "--store", store, "write", "The auth service listens on port 8443", "--scope", "ops"))
    wide = {args: ok(kenning(tmp_path, "--store", store, *args, COLUMNS="80")).stdout
            for args in (("list",), ("info",), ("config", "get"))}
    assert "auth service" in wide[("list",)] and all(text.strip() for text in wide.values())
    for args, expected in wide.items():
        assert ok(kenning(tmp_path, "--store", store, *args, COLUMNS="0")).stdout == expected, args


def test_transcripts_add_with_an_empty_path_is_an_error(tmp_path):
    store = tmp_path / "store"
    ok(kenning(tmp_path, "--store", str(store), "write", "The auth service listens on port 8443", "--scope", "x"))
    (tmp_path / "ledger.jsonl").write_text('{"role": "user", "text": "where does the auth service listen"}\n')
    message = one_line_error(kenning(tmp_path, "--store", str(store), "transcripts", "add", ""))
    assert "empty" in message
    listed = ok(kenning(tmp_path, "--store", str(store), "transcripts", "list", "--json"))
    assert json.loads(listed.stdout)["count"] == 0  # the current directory was not registered

    import kenning as library

    s = library.open_store(store)
    try:
        from kenning.recall.transcripts import index_for

        with pytest.raises(InvalidInput, match="empty"):
            index_for(s).add_source("")
        assert index_for(s).sources() == []
    finally:
        s.close()


def test_transcripts_remove_with_an_empty_path_is_an_error_not_this_directory(tmp_path):
    store = tmp_path / "store"
    (tmp_path / "ledger.jsonl").write_text('{"role": "user", "text": "where does the auth service listen"}\n')
    ok(kenning(tmp_path, "--store", str(store), "transcripts", "add", "."))  # this directory, registered
    assert "empty" in one_line_error(kenning(tmp_path, "--store", str(store), "transcripts", "remove", ""))
    listed = ok(kenning(tmp_path, "--store", str(store), "transcripts", "list", "--json"))
    assert json.loads(listed.stdout)["count"] == 1  # still registered


def test_import_of_an_empty_file_name_says_the_name_is_empty(tmp_path):
    for name in ("", "  "):
        message = one_line_error(kenning(tmp_path, "--store", str(tmp_path / "store"), "import", name))
        assert "empty" in message and "- to read stdin" in message, message  # was "error:  is not a file"


def test_export_and_sync_with_an_empty_folder_are_errors_not_this_directory(tmp_path):
    store = tmp_path / "store"
    ok(kenning(tmp_path, "--store", str(store), "write", "The auth service listens on port 8443", "--scope", "x"))
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (("export", "--markdown", ""), ("export", "--markdown", "  "), ("sync", ""), ("sync", "--json", "")):
        assert "empty" in one_line_error(kenning(tmp_path, "--store", str(store), *args)), args
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no MEMORY.md, USER.md or manifest here

    import kenning as library
    from kenning.recall.markdown import export, sync

    s = library.open_store(store)
    try:
        for call in (export, sync):
            with pytest.raises(InvalidInput, match="empty"):
                call(s, "")
    finally:
        s.close()


# ---------------------------------------------------------------- bug 2: a store path that is a file
def test_a_store_path_that_is_a_file_is_named_as_a_file(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("hi\n")
    for args in (("search", "auth"), ("list",), ("info",), ("info", "--json"),
                 ("write", "The auth service listens on port 8443")):
        message = one_line_error(kenning(tmp_path, "--store", str(afile), *args))
        assert str(afile) in message and "is a file, not a store folder" in message, (args, message)
        assert "write a memory to create it" not in message
    assert afile.read_text() == "hi\n"
    # the same through $KENNING_HOME, and from the library
    message = one_line_error(kenning(tmp_path, "info", KENNING_HOME=str(afile)))
    assert "is a file, not a store folder" in message and "KENNING_HOME" in message
    import kenning as library

    with pytest.raises(InvalidInput, match="is a file, not a store folder"):
        library.open_store(afile)
    with pytest.raises(InvalidInput, match="holds a NUL character"):  # was os.stat's bare ValueError
        library.open_store(str(tmp_path / "a\x00b"))


@pytest.mark.parametrize("damage", ["a file", pytest.param("not a database", marks=pytest.mark.sqlite_only)])
def test_the_mcp_server_module_refuses_a_bad_store_in_one_line(tmp_path, damage):
    """``python -m kenning.server --store X`` (the client entry the README gives) answered a store path
    that is a file, or a damaged store, with a traceback; `kenning serve` with one line and exit 2."""
    pytest.importorskip("mcp")
    store = tmp_path / "store"
    if damage == "a file":
        store.write_text("hi\n")
    else:
        store.mkdir()
        (store / "kenning.sqlite3").write_bytes(b"garbage" * 100)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "kenning.server", "--store", str(store)], input=b"",
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)
    message = one_line_error(subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                                         done.stderr.decode()))
    assert str(store) in message and ("is a file, not a store folder" in message or "not a SQLite database" in message)
    assert done.stdout == b""  # nothing on the wire


# ---------------------------------------------------------------- bug 3: bytes that are not UTF-8
def test_stdin_text_that_is_not_utf8_is_refused_by_name(tmp_path):
    store = str(tmp_path / "store")
    message = one_line_error(kenning(tmp_path, "--store", store, "write", "-", "--scope", "x",
                                     stdin=b"caf\xe9 opens at nine\n"))
    assert "not valid UTF-8" in message and "0xe9" in message and "stdin" in message
    assert "UnicodeEncodeError" not in message and "surrogate" not in message

    written = json.loads(ok(kenning(tmp_path, "--store", store, "write", "-", "--scope", "x", "--json",
                                    stdin="The caf\u00e9 opens at nine\r\n".encode())).stdout)
    memory_id = written["id"]
    message = one_line_error(kenning(tmp_path, "--store", store, "update", memory_id, "--text", "-",
                                     stdin=b"The caf\xe9 opens at ten\n"))
    assert "not valid UTF-8" in message and "0xe9" in message
    shown = json.loads(ok(kenning(tmp_path, "--store", store, "show", memory_id, "--json")).stdout)
    assert "The caf\u00e9 opens at nine" in json.dumps(shown, ensure_ascii=False)


def test_library_write_of_a_lone_surrogate_says_not_valid_unicode(store):
    with pytest.raises(InvalidInput, match="not valid Unicode"):
        store.write("caf\udce9 opens at nine", scopes=["x"])


def test_jsonl_import_names_the_line_and_accepts_a_bom(tmp_path):
    store = str(tmp_path / "store")

    def imported(name: str, data: bytes, *extra: str) -> subprocess.CompletedProcess:
        (tmp_path / name).write_bytes(data)
        return kenning(tmp_path, "--store", store, "import", name, *extra)

    good = b'{"content": "The auth service listens on port 8443"}\n'
    message = one_line_error(imported("bad.jsonl", good + b'{"content": "caf\xe9 opens at nine"}\n'))
    assert "bad.jsonl:2" in message and "not valid UTF-8" in message and "0xe9" in message
    # the same from stdin
    message = one_line_error(kenning(tmp_path, "--store", store, "import", "-",
                                     stdin=good + b'{"content": "caf\xe9 opens at nine"}\n'))
    assert "stdin:2" in message and "not valid UTF-8" in message

    done = ok(imported("bom.jsonl", b'\xef\xbb\xbf{"content": "Tau with BOM"}\n', "--json"))
    assert json.loads(done.stdout)["lines"][0]["status"] == "committed"
    done = ok(kenning(tmp_path, "--store", store, "import", "-", "--json",
                      stdin=b'\xef\xbb\xbf{"content": "Sigma with BOM on stdin"}\n'))
    assert json.loads(done.stdout)["lines"][0]["status"] == "committed"

    for line, said in ((b'{"content": 12345}', "must be a string"),
                       (b'{"nocontent": "x"}', "no `content`"),
                       (b'{"content": "The cafe opens at nine", "scopes": [1, 2]}', "`scopes` must be strings"),
                       (b'{"content": "The cafe opens at nine", "scopes": 5}', "must be a list of strings"),
                       (b'["The cafe opens at nine"]', "JSON object")):
        message = one_line_error(imported("odd.jsonl", good + line + b"\n"))
        assert "odd.jsonl:2" in message and said in message, (line, message)
        assert "memory text is empty" not in message and "a scope is empty" not in message
    listed = json.loads(ok(kenning(tmp_path, "--store", store, "list", "--json", "--no-auto-scope")).stdout)
    assert len(listed["memories"] if isinstance(listed, dict) else listed) == 2  # only the two BOM lines


# ---------------------------------------------------------------- bug 4: an output stream that is not UTF-8
def test_output_on_a_stream_that_cannot_encode_the_text(tmp_path):
    store = str(tmp_path / "store")
    ok(kenning(tmp_path, "--store", store, "write", "東京の会議室は三階にある", "--scope", "x"))
    for encoding in ("ascii", "cp1252"):
        done = kenning(tmp_path, "--store", store, "search", "東京の会議室は三階にある", "--mode", "bm25", "--json",
                       PYTHONIOENCODING=encoding)
        ok(done)
        assert "東京の会議室は三階にある" in json.dumps(json.loads(done.stdout), ensure_ascii=False)
        done = kenning(tmp_path, "--store", store, "list", "--json", "--no-auto-scope", PYTHONIOENCODING=encoding)
        ok(done)
        assert "東京の会議室は三階にある" in json.dumps(json.loads(done.stdout), ensure_ascii=False)
        # plain output: the text it cannot encode is escaped, not a traceback
        done = kenning(tmp_path, "--store", store, "list", "--no-auto-scope", PYTHONIOENCODING=encoding)
        ok(done)
        assert "Traceback" not in done.stderr
        assert "\\u6771" in done.stdout or "\\u6771" in done.stdout.replace("\\\\", "\\")
        # the plain search output (the fast path writes to stdout itself, not through rich)
        done = kenning(tmp_path, "--store", store, "search", "東京の会議室は三階にある", "--mode", "bm25",
                       PYTHONIOENCODING=encoding)
        ok(done)
        assert "Traceback" not in done.stderr and "\\u6771" in done.stdout
