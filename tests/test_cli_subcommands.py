"""CLI commands and options the other CLI tests leave out, through a real subprocess: `kenning index`,
`kenning models`, --no-auto-scope (two real git repositories), the degraded note (a broken encoder
setting, and a missing extra on the base install), and an example in every subcommand's help."""

import json
import os
import subprocess
import sys

import pytest


def kenning(tmp_path, *args, cwd=None, **env_vars):
    env = {**os.environ, "KENNING_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1",
           "GIT_CEILING_DIRECTORIES": str(tmp_path), **env_vars}
    return subprocess.run([sys.executable, "-m", "kenning.cli", *args], env=env, capture_output=True, text=True,
                          cwd=cwd or tmp_path)


@pytest.mark.parametrize("command", [("index",), ("models",), ("serve",), ("episodes", "list"),
                                     ("episodes", "search"), ("episodes", "prune"),
                                     # kenning itself and its command groups
                                     (), ("eval",), ("transcripts",), ("episodes",), ("config",)])
def test_subcommand_help_has_an_example(tmp_path, command):
    done = kenning(tmp_path, *command, "--help")
    if done.returncode == 2 and "No such command" in done.stderr:
        pytest.fail(f"{' '.join(command)} is not a command: {done.stderr}")
    assert done.returncode == 0, done.stderr
    assert "Example: kenning" in done.stdout, command


@pytest.mark.parametrize("command", [("episodes", "list"), ("episodes", "search")])
def test_an_episode_limit_out_of_range_names_the_option(tmp_path, command):
    """The CLI's own option, not the library's parameter (max_results), is what the user is told to fix."""
    done = kenning(tmp_path, *command, "--limit", "0")
    assert done.returncode == 2, done
    assert "--limit" in done.stderr and "max_results" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.embeddings  # lists the packaged model and embeds
def test_models_and_index_report_the_store_as_json(tmp_path):
    assert kenning(tmp_path, "write", "kiwi orchard watering schedule", "--scope", "x").returncode == 0
    models = kenning(tmp_path, "models", "--json")
    assert models.returncode == 0, models.stderr
    listed = json.loads(models.stdout)
    assert listed["configured"] in {m["name"] for m in listed["models"]}
    index = kenning(tmp_path, "index", "--json")
    assert index.returncode == 0, index.stderr
    done = json.loads(index.stdout)
    assert done["embedded"] <= done["pending_before"]
    after = json.loads(kenning(tmp_path, "models", "--json").stdout)
    if listed["store"].get("model_id"):  # the extra is installed: nothing is left waiting for a vector
        assert after["store"]["pending"] == 0


def test_search_notes_when_it_answered_without_the_semantic_leg(tmp_path):
    """A hybrid search whose encoder cannot run answers from the BM25 leg and says so on stderr
    (the JSON says it in `degraded`). KENNING_ENCODER naming no backend is a real way to break it."""
    assert kenning(tmp_path, "write", "kiwi orchard watering schedule", "--scope", "x").returncode == 0
    broken = {"KENNING_ENCODER": "bogus"}
    plain = kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid", **broken)
    assert plain.returncode == 0, plain.stderr
    assert "note: KENNING_ENCODER='bogus' is not a backend" in plain.stderr
    assert "(unset KENNING_ENCODER)" in plain.stderr
    assert "· legs bm25\n" in plain.stdout and "kiwi orchard watering schedule" in plain.stdout
    answer = kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid", "--json", **broken)
    assert answer.returncode == 0 and "note:" not in answer.stderr  # JSON carries it instead
    found = json.loads(answer.stdout)
    assert found["legs_run"] == ["bm25"] and len(found["hits"]) == 1
    assert found["degraded"]["reason"] == "embeddings_broken" and found["degraded"]["fix"] == "unset KENNING_ENCODER"
    lexical = kenning(tmp_path, "search", "kiwi watering", "--mode", "bm25", **broken)
    assert lexical.returncode == 0 and "note:" not in lexical.stderr  # bm25 never wanted the vector leg


def test_search_notes_a_missing_extra_and_names_the_install(tmp_path):
    """Unforced: on the base install (no embeddings extra) the note names the pip command; with the
    extra there is no note and the vector leg ran. Whichever install runs this, one branch is checked."""
    assert kenning(tmp_path, "write", "kiwi orchard watering schedule", "--scope", "x").returncode == 0
    found = json.loads(kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid", "--json").stdout)
    plain = kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid")
    assert plain.returncode == 0, plain.stderr
    if found["degraded"] is None:
        assert "vector" in found["legs_run"] and "note:" not in plain.stderr
    else:
        assert found["degraded"]["reason"] == "embeddings_absent" and found["legs_run"] == ["bm25"]
        assert 'note: ' in plain.stderr and 'pip install "kenning[embeddings]"' in plain.stderr


@pytest.mark.embeddings  # the vector leg's line
def test_why_prints_every_legs_rank_and_score_and_the_words_a_hit_holds(tmp_path):
    """The JSON's per-leg ranks and scores and match_terms, on one line under each hit: a hit found by
    meaning alone says which lexical legs missed it and that it holds none of the query's words."""
    for text in ("kiwi orchard watering schedule", "the fruit trees are irrigated every Tuesday morning"):
        assert kenning(tmp_path, "write", text, "--scope", "x").returncode == 0
    found = json.loads(kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid", "--json").stdout)
    plain = kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid", "--why")
    assert plain.returncode == 0, plain.stderr
    whys = [line.strip() for line in plain.stdout.splitlines() if line.strip().startswith("why: ")]
    assert len(whys) == len(found["hits"]) == 2
    for hit, why in zip(found["hits"], whys):
        legs = []
        for leg, name in (("keyword", "keyword score"), ("bm25", "bm25"), ("vector", "cosine")):
            got = hit["legs"].get(leg)
            legs.append(f"{leg} #{got['rank']} ({name} {got['score']:.3f})" if got else f"{leg} -")
        words = ", ".join(hit["match_terms"]) or "none of the query's words"
        assert why == "why: " + " · ".join(legs) + f" · holds {words}"
    assert whys[1] == (f"why: keyword - · bm25 - · vector #2 (cosine {found['hits'][1]['legs']['vector']['score']:.3f})"
                       " · holds none of the query's words")
    assert "why:" not in kenning(tmp_path, "search", "kiwi watering", "--mode", "hybrid").stdout


def test_no_auto_scope_searches_and_lists_every_project(tmp_path):
    """Run inside one git repository, search and list see that repository's memories (and global ones);
    --no-auto-scope also shows another repository's."""
    first, second = tmp_path / "first", tmp_path / "second"
    for repo in (first, second):
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    written = kenning(tmp_path, "write", "the build server is called hopper", "--scope", "ops", "--json", cwd=first)
    assert written.returncode == 0, written.stderr
    mid = json.loads(written.stdout)["id"]
    def ids(*args):
        done = kenning(tmp_path, *args, "--json", cwd=second)
        assert done.returncode == 0, done.stderr
        payload = json.loads(done.stdout)
        return [m["id"] for m in (payload["hits"] if isinstance(payload, dict) else payload)]
    assert ids("search", "build server", "--mode", "bm25") == []
    assert ids("search", "build server", "--mode", "bm25", "--no-auto-scope") == [mid]
    assert ids("list") == []
    assert ids("list", "--no-auto-scope") == [mid]
    here = kenning(tmp_path, "search", "build server", "--mode", "bm25", "--json", cwd=first)
    assert [h["id"] for h in json.loads(here.stdout)["hits"]] == [mid]


@pytest.mark.sqlite_only  # looks for the SQLite file in ./.kenning
def test_a_kenning_folder_in_the_current_directory_is_the_store(tmp_path):
    """Without --store or $KENNING_HOME, ./.kenning/ is the store when it exists; $KENNING_HOME still wins."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / ".kenning").mkdir(parents=True)
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KENNING_HOME"}
    env.update(HF_HUB_OFFLINE="1", XDG_DATA_HOME=str(tmp_path / "xdg"), GIT_CEILING_DIRECTORIES=str(tmp_path))

    def run(*args, cwd):
        return subprocess.run([sys.executable, "-m", "kenning.cli", *args], env=env, capture_output=True,
                              text=True, cwd=cwd)

    assert run("write", "the build server is called hopper", "--scope", "ops", cwd=project).returncode == 0
    assert (project / ".kenning" / "kenning.sqlite3").is_file()
    found = json.loads(run("search", "build server", "--mode", "bm25", "--json", cwd=project).stdout)
    assert len(found["hits"]) == 1
    other = run("search", "build server", "--mode", "bm25", "--json", cwd=elsewhere)
    assert other.returncode != 0 or json.loads(other.stdout)["hits"] == []  # the default store holds nothing
    env["KENNING_HOME"] = str(tmp_path / "home")
    assert run("write", "the deploy bot is called kestrel", "--scope", "ops", cwd=project).returncode == 0
    assert (tmp_path / "home" / "kenning.sqlite3").is_file()
    del env["KENNING_HOME"]
    assert json.loads(run("search", "kestrel", "--mode", "bm25", "--json", cwd=project).stdout)["hits"] == []


def test_index_and_models_say_why_the_encoder_cannot_run(tmp_path):
    """On any install: with an encoder that cannot run, `kenning index` leaves the queue as it was and
    says why in one line (exit 2); `--json` reports the same; `kenning models` names the bad setting."""
    broken = {"KENNING_ENCODER": "bogus"}
    assert kenning(tmp_path, "write", "kiwi orchard watering schedule", "--scope", "x", **broken).returncode == 0
    index = kenning(tmp_path, "index", **broken)
    assert index.returncode == 2 and "Traceback" not in index.stderr
    assert index.stderr.strip().splitlines() == [
        "error: 1 memory waits for embeddings, but KENNING_ENCODER='bogus' is not a backend; choose one of "
        "onnx, onnx-q8, onnx-rows8, torch; fix: unset KENNING_ENCODER"]
    models = kenning(tmp_path, "models", **broken)
    assert models.returncode == 2 and models.stderr.startswith("error: KENNING_ENCODER='bogus' is not a backend")
    assert len(models.stderr.strip().splitlines()) == 1


@pytest.mark.embeddings
@pytest.mark.slow  # quantises the packaged model once (a few CPU seconds)
def test_models_convert_makes_the_8bit_variant_the_store_then_uses(tmp_path):
    """With KENNING_ENCODER=onnx-q8, `kenning models --convert` quantises the float conversion (linked
    here, not exported again), and writes and searches run on the 8-bit file under its own id."""
    from kenning.retrieval import embeddings, onnx_export

    spec = embeddings.resolve_model()
    source = onnx_export.ensure(spec)
    folder = tmp_path / "cache" / "onnx" / source.parent.name
    folder.mkdir(parents=True)
    (folder / "model.onnx").symlink_to(source)
    manifest = json.loads((source.parent / onnx_export.MANIFEST).read_text())
    manifest["files"] = {"onnx": manifest["files"]["onnx"]}
    (folder / onnx_export.MANIFEST).write_text(json.dumps(manifest))
    env = {"KENNING_ENCODER": "onnx-q8", "KENNING_CACHE_DIR": str(tmp_path / "cache")}
    store = ["--store", str(tmp_path / "store")]
    written = kenning(tmp_path, *store, "write", "kiwi orchard watering schedule", "--scope", "x", **env)
    assert written.returncode == 0, written.stderr
    assert "kenning:   quantising the weights to 8-bit blocks of 32 (onnx-q8)" in written.stderr  # on first use
    made = (folder / "model-q8.onnx").stat().st_mtime_ns
    converted = kenning(tmp_path, *store, "models", "--convert", "--json", **env)  # made again on request
    assert converted.returncode == 0, converted.stderr
    assert (folder / "model-q8.onnx").stat().st_mtime_ns != made
    report = json.loads(converted.stdout)
    row = next(m for m in report["models"] if m["configured"])
    assert report["backend"] == "onnx-q8" and row["onnx_q8"] == str(folder / "model-q8.onnx")
    assert report["store"]["model_id"] == spec.model_id + "@onnx-q8" and report["store"]["pending"] == 0
    assert (folder / "model.onnx").is_symlink()  # the float file was not exported again
    found = json.loads(kenning(tmp_path, *store, "search", "fruit trees need water", "--mode", "semantic",
                               "--json", **env).stdout)
    assert found["hits"] and found["hits"][0]["matched_leg"] == "semantic"


def test_info_points_at_kenning_index_only_when_the_extra_is_there(tmp_path):
    """On the base install `kenning info` said "1 waiting (`kenning index`)", a command that then fails
    for want of the extra; it names the install instead. The extra's absence is made with
    sys.modules[name] = None, which find_spec reads as "not installed"."""
    assert kenning(tmp_path, "write", "kiwi orchard watering schedule", "--scope", "x").returncode == 0
    run = ("import sys; sys.modules['onnxruntime'] = None; sys.argv = ['kenning', 'info']; "
           "from kenning.__main__ import main; main()")
    env = {**os.environ, "KENNING_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "KENNING_ENCODER": "onnx"}
    base = subprocess.run([sys.executable, "-c", run], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert base.returncode == 0, base.stderr
    assert "`kenning index`" not in base.stdout and 'pip install "kenning[embeddings]"' in base.stdout, base.stdout
    from kenning.retrieval.embeddings import installed

    if installed():  # with the extra, the command that embeds them
        assert "`kenning index`" in kenning(tmp_path, "info").stdout
