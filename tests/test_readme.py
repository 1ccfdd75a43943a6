"""The README's commands and example are the ones that work, and docs/architecture.md shows what the code has."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_the_ci_runs_the_readme_test_command_verbatim():
    setup = [b for b in _blocks("bash") if b.startswith("python3 -m venv")]
    assert len(setup) == 2 and all(len(b.strip().splitlines()) == 1 for b in setup)
    assert setup[1].strip() in (ROOT / ".ci" / "run").read_text()
    assert "kenning eval run builtin" in setup[0]


def test_the_library_example_runs(tmp_path, capsys):
    code = _blocks("python")[0].replace('"/tmp/kenning-readme"', repr(str(tmp_path / "s")))
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "8443" in printed and "high" in printed


def test_the_readme_links_nothing_outside_the_repository():
    """The README is also the PyPI page: no relative links, nothing from beside the repository."""
    assert "../" not in README
    assert not re.findall(r"\]\((?!https?://)[^)]*\)", README), "relative links break on PyPI"


def test_the_architecture_pages_search_result_has_the_fields_a_search_returns(tmp_path):
    """The page shows a whole bm25 result as the shape surfaces depend on: no field missing, none made up."""
    import json

    import kenning

    shown = json.loads(re.search(r"```json\n(.*?)```", ARCHITECTURE, flags=re.S).group(1))
    store = kenning.open_store(tmp_path / "s")
    try:
        store.write("The auth service listens on port 8443", scopes=["projects:auth"])
        real = store.search("auth service port", mode="bm25").to_dict()
    finally:
        store.close()
    assert set(shown) == set(real)
    assert set(shown["hits"][0]) == set(real["hits"][0])


def test_the_architecture_page_names_every_extra():
    extras = re.search(r"\[project\.optional-dependencies\]\n(.*?)\n\[", (ROOT / "pyproject.toml").read_text(), re.S)
    names = re.findall(r"^([a-z]+) = \[", extras.group(1), re.M)
    listed = re.search(r"^pyproject\.toml +the distribution: extras ([^;]*);", ARCHITECTURE, re.M).group(1)
    assert names and listed.split(", ") == names


def test_the_readme_names_every_extra_and_that_kenning_eval_needs_its_own():
    """Every `kenning eval` command computes its metrics with ir-measures, which only the eval extra installs:
    the README once offered the extra for "reference rows and plots" alone (and left openvino out)."""
    extras = re.search(r"^Extras: (.*?)Python 3\.10", README, re.M | re.S).group(1)
    declared = re.search(r"\[project\.optional-dependencies\]\n(.*?)\n\[", (ROOT / "pyproject.toml").read_text(), re.S)
    for name in re.findall(r"^([a-z]+) = \[", declared.group(1), re.M):
        assert name == "dev" or re.search(rf"`{name}`\s+\(", extras), name
    said = re.search(r"`eval` \(([^)]*)\)", extras).group(1)
    assert "`kenning eval`" in said and "ir-measures" in said
    assert "ir-measures" in re.search(r"^eval = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(1)


def test_the_readme_names_every_mcp_tool(tmp_path):
    """The MCP section lists the tools by name; memory_list_tombstones was missing and three hid behind
    "scope tools"."""
    import kenning
    from kenning.serve.mcp import build_server

    store = kenning.open_store(tmp_path / "s")
    try:
        tools = {tool.name for tool in build_server(store)._tool_manager.list_tools()}
    finally:
        store.close()
    section = README.split("## Use kenning from an agent (MCP)")[1].split("\n## ")[0]
    named = set(re.findall(r"`((?:memory|episode|session)_[a-z_]+)`", section))
    assert len(tools) > 20 and tools <= named, sorted(tools - named)


def test_the_architecture_page_places_every_module_of_the_rooms():
    """The layout block is where a newcomer looks for a file: deferred.py, collector.py, batch_tokens.py and
    stdio_guard.py were in no room of it."""
    layout = re.search(r"```\n(.*?)```", ARCHITECTURE, flags=re.S).group(1)
    named = set(re.findall(r"[a-z_0-9]+\.(?:py|c)\b", layout))
    for room in ("memory", "store", "retrieval", "serve"):
        for module in sorted((ROOT / room).glob("*.[pc]*")):
            if module.suffix in (".py", ".c") and module.name != "__init__.py":
                assert module.name in named, f"{room}/{module.name}"


def test_each_section_the_docs_point_to_is_a_heading_there():
    """"bench/README.md, "Session 22"" sent a reader to a heading that reads "Sessions 22-23"."""
    for doc in (README, ARCHITECTURE):
        text = " ".join(doc.split())
        for target, names in re.findall(r"`?((?:bench|eval/baselines)/README\.md)`?,? ((?:\"[^\"]+\"(?:,? (?:and )?)?)+)",
                                        text):
            headings = [" ".join(line.split()).lower() for line in (ROOT / target).read_text().splitlines()
                        if line.startswith("#")]
            for name in re.findall(r'"([^"]+)"', names):
                assert any(name.lower() in h for h in headings), (target, name)
