"""Hostile text does not make a regular expression backtrack for minutes.

A memory body may be 1 MiB and an agent fed a hostile page writes what the page says. Each input
here is a long run of the characters a pattern repeats; each pattern used to rescan the run from
every position in it (quadratic: minutes for these sizes), and now goes through it once. The
tests assert what the scan finds, so they pass in milliseconds and would hang without the fix.
"""

from __future__ import annotations

from kenning.memory.citations import extract_line_citations, extract_paths
from kenning.memory.claims import assigned_values
from kenning.memory.gates.credentials import find_credentials
from kenning.memory.gates.durability import find_transient_markers
from kenning.retrieval.answer_types import holds

RUN = 100_000  # characters: a tenth of the largest body a write takes


def test_a_long_word_after_a_path_is_scanned_once_for_urls_and_addresses():
    """_NOT_PATHS: an address's local part ([\\w.+-]+ before @) and a URL's scheme were unbounded."""
    assert extract_paths("see src/app.py " + "a_" * (RUN // 2)) == ["src/app.py"]
    assert extract_paths("see src/app.py " + "a." * (RUN // 2)) == ["src/app.py"]
    assert extract_paths("mail ops@example.com about src/app.py") == ["src/app.py"]


def test_a_long_run_of_line_numbers_is_read_once():
    """The location after a path (:10, :10-20) was searched as a suffix, retried from every colon."""
    hostile = "see src/app.py:12 and src/x" + ":1" * (RUN // 2) + "x"
    assert extract_paths(hostile) == ["src/app.py"]
    assert extract_line_citations(hostile) == [("src/app.py:12", "src/app.py", 12)]
    assert extract_line_citations("src/app.py:10:5-12:3 and docs/x.md#L4-L9") == [
        ("src/app.py:10:5-12:3", "src/app.py", 12), ("docs/x.md#L4-L9", "docs/x.md", 9)]


def test_a_dotted_run_is_blanked_as_calls_in_one_pass():
    """The durability gate blanks calls (os.path.join()) first; the name was tried at every word of a run."""
    marked = ["is <status>: 'is red'", "now <verb>: 'now'"]
    assert find_transient_markers("The build is red now " + "a." * (RUN // 2)) == marked
    assert find_transient_markers("Call os.path.join() to build it") == []


def test_curly_quotes_never_closed_are_scanned_once():
    """... and quotations: each “ with no ” after it was a scan to the end (24 s for 100,000 of them)."""
    marked = ["is <status>: 'is red'", "now <verb>: 'now'"]
    assert find_transient_markers("The build is red now ”" + "“" * (3 * RUN)) == marked  # 1 MiB of UTF-8 is 350,000
    assert find_transient_markers("Say “right now” to build it") == []


def test_a_long_word_of_login_words_is_no_scan_per_word():
    """The secrets gate's login pair read the rest of the word after each login word, several times."""
    assert find_credentials("The staging account " + "login:" * (RUN // 6)) == []
    found = find_credentials("login for db01: admin / Adm1n!24")
    assert [(f.kind, f.masked) for f in found] == [("login and password", "user / ***")]


def test_a_long_word_of_sk_prefixes_is_no_scan_per_prefix():
    """An OpenAI key's first digit was looked for to the end of the word from each "sk-" in it."""
    assert find_credentials("The setting " + "-sk" * RUN) == []  # 52 s for a third of it
    key = "sk-proj-" + "Qz7pLm2XwR9tVb4N" * 8
    assert [f.kind for f in find_credentials(f"the key is {key}")] == ["OpenAI API key"]


def test_a_hit_holding_long_runs_is_labelled_without_a_scan_per_position():
    """Labelling a hit asks whether its text holds the value a missing query word asks for (a budget,
    an e-mail address, a host ...): each value was tried from every digit or word of a dotted run."""
    for kind, value in (("money", "1,500.25 eur"), ("weight", "12.5 kg"), ("distance", "3.2 km"), ("people", "1,200 users")):
        assert not holds(kind, "0." * (RUN // 2)) and holds(kind, f"it is .{value}")
    assert not holds("address", "a." * (RUN // 2)) and holds("address", "at müller-shop.example.com")
    assert not holds("path", "0." * (RUN // 2)) and holds("path", "see .git/hooks/ there")
    assert not holds("email", "a_" * (RUN // 2)) and holds("email", "ops+alerts@example.com")
    assert not holds("identifier", "a-" * (RUN // 2)) and holds("identifier", "ticket -ab-12")


def test_a_padded_line_of_a_claimed_file_is_read_once_for_a_comment():
    """A NAME=literal claim reads the file's assignments without their comments: the comment was looked
    for from each blank of a long run of them."""
    padded = "5" + " " * RUN + "x"
    assert assigned_values(f"TIMEOUT = {padded}\n", "TIMEOUT") == [padded]
    assert assigned_values("TIMEOUT = 5  # seconds\nTIMEOUT = 7; // ms\n", "TIMEOUT") == ["5", "7"]
