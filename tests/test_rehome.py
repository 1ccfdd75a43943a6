"""A checkout moved on disk: its memories are hidden (auto_scope keys on the folder) until ``rehome``.

Real repositories in tmp_path, moved with os.rename; a real store; the CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput, NotFound
from kenning.memory import scopes
from kenning.memory.episodes import Episodes

from test_origin import git, make_repo

TEXT = "The deploy script lives in src/deploy.py and reads AWS_PROFILE before it uploads anything"


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def written_then_moved(tmp_path, with_episode: bool = False) -> tuple[str, str, str]:
    """A memory (citing src/deploy.py) written in tmp/old, which is then renamed tmp/new."""
    old = make_repo(tmp_path / "old")
    (old / "src").mkdir()
    (old / "src" / "deploy.py").write_text("def deploy():\n    pass\n")
    git(old, "add", ".")
    git(old, "commit", "-q", "-m", "deploy")
    with kenning.open_store(tmp_path / "store", cwd=old) as store:
        mid = store.write(TEXT, scopes=["projects:old"], force=True).id
        store.verify(mid, verified_paths=["src/deploy.py"])
        if with_episode:
            Episodes(store).write("worked on the deploy script", takeaway="deploy needs AWS_PROFILE")
    new = tmp_path / "new"
    os.rename(old, new)
    return str(old), str(new), mid


def ids(result) -> list[str]:
    return [hit.id for hit in result.hits]


def test_a_moved_checkout_gets_its_memories_back(tmp_path):
    old, new, mid = written_then_moved(tmp_path, with_episode=True)
    with kenning.open_store(tmp_path / "store", cwd=new) as store:
        hidden = store.search("deploy script", mode="bm25")
        assert ids(hidden) == []
        assert f"kenning rehome {old}" in hidden.note  # the way back is named
        assert store.rehome(Path(old)) == {"old": old, "new": new, "moved": 1}  # a Path as well as a str
        assert ids(store.search("deploy script", mode="bm25")) == [mid]
        shown = store.show(mid)
        assert shown["origin"]["worktree"] == new and shown["origin"]["repo"] == new
        assert shown["path_drift"]["checked"] == ["src/deploy.py"] and shown["path_drift"]["missing"] == []
        assert Episodes(store).handoff()["worktree"] == new
        assert [e.worktree for e in Episodes(store).search()] == [new]
        kinds = [e["kind"] for e in store.events(kinds=["rehome"])]
        assert kinds == ["rehome"]
    os.remove(os.path.join(new, "src", "deploy.py"))  # drift is measured in the new folder now
    with kenning.open_store(tmp_path / "store", cwd=new) as store:
        assert store.show(mid)["path_drift"]["missing"] == ["src/deploy.py"]


def test_the_overview_names_the_gone_folder_until_its_memories_are_rehomed(tmp_path):
    """memory_scope_overview is an agent's first call, and its total 0 tells the agent to skip memory
    for the conversation: in a moved checkout it names the old folder instead of saying nothing."""
    old, new, mid = written_then_moved(tmp_path)
    other = make_repo(tmp_path / "other")  # a checkout that still exists: not a moved one
    with kenning.open_store(tmp_path / "store", cwd=other) as store:
        store.write("The other project builds with make", scopes=["projects:other"], force=True)
    with kenning.open_store(tmp_path / "store", cwd=new) as store:
        overview = store.scope_overview()
        assert overview["total"] == 0 and overview["moved_checkouts"] == [{"worktree": old, "memories": 1}]
        assert store.scope_overview(auto_scope=False)["moved_checkouts"] == []  # nothing hidden
        store.rehome(old)
        overview = store.scope_overview()
        assert overview["total"] == 1 and overview["moved_checkouts"] == []
    with kenning.open_store(tmp_path / "store", cwd=other) as store:
        assert store.scope_overview()["moved_checkouts"] == []  # rehomed: its folder exists again


def test_a_folder_holding_several_checkouts_moves_them_all(tmp_path):
    parent = tmp_path / "work"
    main = make_repo(parent / "main")
    git(main, "worktree", "add", "-q", str(parent / "feature"))
    with kenning.open_store(tmp_path / "store", cwd=parent / "feature") as store:
        mid = store.write(TEXT, scopes=["projects:main"], force=True).id
        assert store.show(mid)["origin"]["repo"] == str(main)
    os.rename(parent, tmp_path / "moved")
    git(tmp_path / "moved" / "main", "worktree", "repair", str(tmp_path / "moved" / "feature"))
    with kenning.open_store(tmp_path / "store", cwd=tmp_path / "moved" / "feature") as store:
        assert store.rehome(str(parent), str(tmp_path / "moved"))["moved"] == 1
        origin = store.show(mid)["origin"]
        assert (origin["repo"], origin["worktree"]) == (str(tmp_path / "moved" / "main"),
                                                          str(tmp_path / "moved" / "feature"))
        assert ids(store.search("deploy script", mode="bm25")) == [mid]


@pytest.mark.parametrize("how", ["symlink", "dotdot", "left-behind"])
def test_the_old_folder_is_the_real_path_a_symlink_or_dotdot_leads_to(tmp_path, how):
    """Memories record a checkout by its real path; the old folder was matched as typed, so a symlink to
    it (the path the user knows, dangling once the folder moved) or a ".." after a symlink found none.
    A symlink left at the old place to the new folder is the old folder as written, and hides nothing."""
    old, new, mid = written_then_moved(tmp_path)
    if how == "left-behind":
        os.symlink(new, old)
        given = old
    elif how == "symlink":
        os.symlink(old, tmp_path / "known")
        given = str(tmp_path / "known")
    else:  # the kernel walks deep -> x/y, then up twice: tmp_path/old; the text reads tmp_path/../old
        (tmp_path / "x" / "y").mkdir(parents=True)
        os.symlink(tmp_path / "x" / "y", tmp_path / "deep")
        given = str(tmp_path / "deep" / ".." / ".." / "old")
    with kenning.open_store(tmp_path / "store", cwd=new) as store:
        assert store.rehome(given) == {"old": old, "new": new, "moved": 1}
        assert ids(store.search("deploy script", mode="bm25")) == [mid]


def test_an_origin_recorded_through_a_symlink_is_still_found_as_written(tmp_path):
    """A store copied from another machine holds that machine's paths, which here may run through a
    symlink: the path as written still names them when its real path names none."""
    old, new, mid = written_then_moved(tmp_path)
    os.symlink(tmp_path, tmp_path / "via")
    recorded = str(tmp_path / "via" / "old")
    with kenning.open_store(tmp_path / "store", cwd=new) as store:
        with store._s.transaction() as c:
            scopes.rehome(c, old, recorded)  # as the other machine recorded it
        with pytest.raises(NotFound, match=f"no memory was written in {tmp_path / 'nowhere'} \\(or "):
            os.symlink(tmp_path / "gone", tmp_path / "nowhere")
            store.rehome(str(tmp_path / "nowhere"))
        assert store.rehome(recorded) == {"old": recorded, "new": new, "moved": 1}
        assert store.show(mid)["origin"]["worktree"] == new


def test_refusals_change_nothing(tmp_path):
    old, new, mid = written_then_moved(tmp_path)
    other = make_repo(tmp_path / "other")
    outside = tmp_path / "plain"
    outside.mkdir()
    with kenning.open_store(tmp_path / "store", cwd=new) as store:
        version = store.show(mid)["version"]
        with pytest.raises(InvalidInput, match="holds none of the commits"):
            store.rehome(old, str(other))  # another repository: most likely a mistake
        with pytest.raises(InvalidInput, match="still exists"):
            store.rehome(str(other))  # what was written in other stays there
        with pytest.raises(NotFound, match="no memory was written in"):
            store.rehome(str(tmp_path / "never"))
        with pytest.raises(InvalidInput, match="not a directory"):
            store.rehome(old, str(tmp_path / "missing"))
        with pytest.raises(InvalidInput, match="empty"):
            store.rehome("")
        with pytest.raises(InvalidInput, match="must be a path"):
            store.rehome(42)
        assert store.show(mid)["version"] == version and store.show(mid)["origin"]["worktree"] == old
        assert store.events(kinds=["rehome"]) == []
    with kenning.open_store(tmp_path / "store", cwd=outside) as store:
        with pytest.raises(InvalidInput, match="no git checkout"):
            store.rehome(old)
        assert store.rehome(old, str(other), force=True)["moved"] == 1  # force: the caller knows better
        assert store.show(mid)["origin"]["worktree"] == str(other)


def run_cli(tmp_path, cwd, *args):
    env = {**os.environ, "KENNING_HOME": str(tmp_path / "store"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "kenning", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_command_moves_them_and_refuses_in_one_line(tmp_path):
    old, new, mid = written_then_moved(tmp_path)
    for command in (["list"], ["scopes"]):  # both name the command that brings the memories back
        assert f"kenning rehome {old}" in run_cli(tmp_path, new, *command).stdout
    refused = run_cli(tmp_path, new, "rehome", str(tmp_path / "never"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    done = run_cli(tmp_path, new, "rehome", old, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"old": old, "new": new, "moved": 1}
    found = run_cli(tmp_path, new, "search", "deploy script", "--mode", "bm25", "--json")
    assert [hit["id"] for hit in json.loads(found.stdout)["hits"]] == [mid]
