"""`kenning import` reads past keys that are no memory's field (nor a misspelling of one, which is
refused): the line still imports, and one warning at the end names each ignored key and how many
lines carried it; `--json` carries the same as ``ignored_keys``. The keys kenning's own `show --json`
(in every state it reports: drift, commit drift, supersession, negative outcomes) and `list --json`
emit are never warned about, so re-importing kenning's own output stays silent. The real CLI on
real stores; a real git repository for the drift states."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import kenning


def cli(store, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, timeout=300)


def jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def tagged(tmp_path):
    """Twelve lines carrying "tags", one of them "foo" too, and one plain line."""
    records = [{"content": f"The service number {i} listens on port {8000 + i}", "scopes": ["ops"],
                "tags": ["ports"]} for i in range(12)]
    records[3]["foo"] = 1
    records.append({"content": "The backup job runs at midnight", "scopes": ["ops"]})
    return jsonl(tmp_path / "tagged.jsonl", records)


@pytest.mark.parametrize("gates", [[], ["--no-gates"]], ids=["gated", "no-gates"])
def test_ignored_keys_are_named_once_with_their_line_counts(tmp_path, tagged, gates):
    done = cli(tmp_path / "s", "import", str(tagged), *gates)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done
    assert done.stdout.strip().endswith("imported 13 memories from 13 lines")  # every line is still imported
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    # was: nothing at all, the tags dropped without a word
    assert warned == ["warning: ignored keys not in a memory: tags (12 lines), foo (1 line)"], done.stderr
    again = cli(tmp_path / "t", "import", str(tagged), "--json", *gates)
    assert again.returncode == 0, again
    report = json.loads(again.stdout)
    assert report["ignored_keys"] == {"tags": 12, "foo": 1} and report["committed"] == 13


def test_a_file_of_memory_keys_only_warns_of_nothing(tmp_path):
    plain = jsonl(tmp_path / "plain.jsonl", [{"text": "The backup job runs at midnight", "scopes": ["ops"],
                                              "category": "fact", "metadata": {"from": "notes"}}])
    done = cli(tmp_path / "s", "import", str(plain))
    assert done.returncode == 0 and "warning" not in done.stderr, done
    assert json.loads(cli(tmp_path / "t", "import", str(plain), "--json").stdout)["ignored_keys"] == {}


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args], cwd=cwd, check=True,
                   capture_output=True, text=True)


def repository(path):
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("x\n")
    (path / "src" / "b.py").write_text("y\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def test_kenning_s_own_show_and_list_output_imports_without_a_warning(tmp_path, monkeypatch):
    """show --json in every state that adds keys of its own: a claim's path gone and commits since
    (claim_anchored_missing, commit_drift_count), a superseded memory with a contradicted outcome
    (superseded_by, recent_negative_outcomes, commit_drift_scope), a memory whose worktree is gone
    (path_drift_status / _reason, commit_drift_status / _reason)."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo, other, store = repository(tmp_path / "repo"), repository(tmp_path / "other"), tmp_path / "a"
    with kenning.open_store(store, cwd=repo) as s:
        cited = s.write("The entry point is src/app.py and it parses flags", scopes=["projects:repo"],
                        claims=["src/app.py"]).id
        helper = s.write("The helper module lives in src/b.py for parsing", scopes=["projects:repo"]).id
        s.verify(cited, note="checked")
        s.record_use([helper], "contradicted", note="it moved")
    with kenning.open_store(store, cwd=other) as s:
        orphan = s.write("The config loader lives in src/b.py of the other checkout", scopes=["projects:other"]).id
    git(repo, "rm", "-q", "src/app.py", "src/b.py")
    git(repo, "commit", "-q", "-m", "move")
    shutil.rmtree(other)
    with kenning.open_store(store, cwd=repo) as s:
        newer = s.write("The flags parser moved to src/flags.py for good", scopes=["projects:repo"], force=True,
                        links=[{"kind": "supersedes", "target": helper}]).id
    shown = [json.loads(cli(store, "show", mid, "--json").stdout) for mid in (cited, helper, orphan, newer)]
    every = set().union(*shown)
    assert {"claim_anchored_missing", "commit_drift_count", "commit_drift_scope", "superseded_by",
            "recent_negative_outcomes", "path_drift_status", "path_drift_reason", "commit_drift_status",
            "commit_drift_reason", "reverse_links", "summary", "version"} <= every  # the states were reached
    listed = json.loads(cli(store, "list", "--json", "--no-auto-scope").stdout)
    for name, records in (("shown", shown), ("listed", listed)):
        done = cli(tmp_path / f"into-{name}", "import", str(jsonl(tmp_path / f"{name}.jsonl", records)), "--json")
        assert done.returncode == 0 and "warning" not in done.stderr, done
        report = json.loads(done.stdout)
        assert report["ignored_keys"] == {} and report["committed"] == 4, report


def test_an_ignored_key_holding_escape_sequences_is_named_escaped(tmp_path):
    """A key of an imported file is the file's text: 'bogus\\x1b]0;…\\x07' was printed raw in the
    warning (a Text built for its colour skipped the console's sanitising), retitling the terminal."""
    hostile = jsonl(tmp_path / "hostile.jsonl", [{"content": "The relay host listens on port 8443", "scopes": ["ops"],
                                                  "bogus\x1b]0;pwned\x07\u202e": 1}])
    done = cli(tmp_path / "s", "import", str(hostile))
    assert done.returncode == 0, done
    assert not any(ch in done.stderr for ch in "\x1b\x07\u202e"), done.stderr
    assert "warning: ignored keys not in a memory: bogus\\x1b]0;pwned\\x07\\u202e (1 line)" in done.stderr
