"""kenning's ULIDs are the text python-ulid gives for the same 128 bits, ordered by time."""

from __future__ import annotations

import random
import time

from ulid import ULID

from kenning.store import ids


def test_the_same_text_as_the_library_for_the_same_bits(monkeypatch):
    draw = random.Random(7)
    for _ in range(2000):
        raw = draw.randbytes(16)
        stamp, rest = int.from_bytes(raw[:6], "big"), raw[6:]
        monkeypatch.setattr(ids.time, "time_ns", lambda s=stamp: s * 1_000_000)
        monkeypatch.setattr(ids.os, "urandom", lambda n, r=rest: r)
        assert ids.new_ulid() == str(ULID.from_bytes(raw))


def test_fresh_ids_parse_and_carry_the_time():
    before = time.time()
    made = [ids.new_ulid() for _ in range(100)]
    assert len(set(made)) == 100
    for text in made:
        assert len(text) == 26
        assert abs(ULID.from_str(text).timestamp - before) < 60


def test_a_ulid_in_any_case_is_one_spelling_and_other_ids_stay_as_given():
    made = ids.new_ulid()
    assert ids.canonical(made.lower()) == made and ids.canonical(made[:13].lower() + made[13:]) == made
    for other in ("wiki/ops/7", "01nosuchmemory", "8" + made.lower()[1:], made.lower()[:-1] + "u"):
        assert ids.canonical(other) == other  # not a ULID: an import's external id, kept exactly


def test_a_lower_case_ulid_names_the_memory_on_every_surface(store, tmp_path):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from kenning.cli import app
    from kenning.serve.http import create_app

    store.configure(default_mode="bm25")
    mid = store.write("The auth service listens on port 8443", scopes=["projects:auth"]).id
    other = store.write("The billing service listens on port 7000", scopes=["projects:billing"]).id
    low = mid.lower()
    assert store.show(low)["id"] == mid and store.get(low[:10] + mid[10:]).id == mid
    linked = store.update(other, links=[{"type": "depends_on", "target_id": low}])
    assert [link.target for link in linked.links] == [mid]
    assert store.record_use([low], "applied")["memory_ids"] == [mid]

    cli = CliRunner()
    run = lambda *args: cli.invoke(app, ["--store", str(tmp_path / "store"), *args])  # noqa: E731
    for args in (("show", low), ("verify", low), ("remove", low, "--reason", "moved"), ("restore", low)):
        result = run(*args, "--json")
        assert result.exit_code == 0, (args, result.output)

    with TestClient(create_app(store), base_url="http://127.0.0.1:8765") as http:
        assert http.get(f"/memories/{low}").json()["id"] == mid
        assert http.post(f"/memories/{low}/verify", json={}).json()["status"] == "verified"
        assert http.delete(f"/memories/{low}", params={"reason": "moved"}).status_code == 200
        assert http.post(f"/memories/{low}/restore").json()["memory"]["id"] == mid
        assert http.patch(f"/memories/{low}", json={"text": "The auth service listens on port 9443"}).status_code == 200


def test_i_l_and_o_typed_for_1_and_0_name_the_memory_as_crockford_reads_them(store, tmp_path):
    """Crockford base32 decodes I and L as 1 and O as 0 (letters its alphabet leaves out as look-alikes);
    an id copied by hand that way said 'no memory has id ...' on every surface."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from kenning.cli import app
    from kenning.serve.http import create_app

    made = ids.new_ulid()
    assert ids.canonical(made.replace("1", "l").replace("0", "o")) == made
    assert ids.canonical(made.replace("1", "I").replace("0", "O")) == made
    mid = store.write("The auth service listens on port 8443", scopes=["projects:auth"]).id
    typed = "O" + mid[1:].replace("1", "l").replace("0", "O")  # a ULID of today starts with 0
    assert typed != mid and store.show(typed)["id"] == mid and store.verify(typed)["status"] == "verified"
    result = CliRunner().invoke(app, ["--store", str(tmp_path / "store"), "show", typed, "--json"])
    assert result.exit_code == 0 and f'"id": "{mid}"' in result.stdout, result.output
    with TestClient(create_app(store), base_url="http://127.0.0.1:8765") as http:
        assert http.get(f"/memories/{typed}").json()["id"] == mid


def test_an_imported_ulid_is_stored_in_the_case_lookups_use(store):
    made = ids.new_ulid()
    store.import_records([{"content": "The queue is RabbitMQ on port 5672", "scopes": ["q"], "id": made.lower()},
                          {"content": "The wiki page lives at ops/7", "scopes": ["q"], "id": "wiki/ops/7"}])
    assert store.get(made).id == made and store.get(made.lower()).id == made
    assert store.get("wiki/ops/7").id == "wiki/ops/7"


def test_an_episode_ulid_in_lower_case_is_found(store):
    from kenning.memory.episodes import Episodes

    episodes = Episodes(store)
    written = episodes.write("iteration 3 tried the retry loop", takeaway="retries fix the flake")
    assert episodes.get(written["id"].lower()).id == written["id"]
    assert [e.id for e in episodes.search(ids=[written["id"].lower()])] == [written["id"]]
