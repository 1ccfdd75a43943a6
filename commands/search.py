"""``kenning search``: its output, and the fast path that runs it without typer, click or rich.

A CLI search is usually one short process, and importing typer (which builds a pydantic adapter per
option), click and rich's console cost about as much CPU as the search itself. ``run_fast`` parses
the plain forms of the command line, ``[--store DIR] search QUERY [options]``, itself and prints
through ``PlainOut``; any other form (help, ``--``, an unknown or malformed option, a value that
starts with a dash, a second word) returns None and the typer app answers it, so every message about
a bad command line stays click's. Both paths print with ``show_search``: the output is the same bytes.

A keyword or bm25 search is answered as plain data (memory/reads.py ``search_plain``), so it loads no
pydantic either; a semantic or hybrid one, ``--expand-top``, or a store whose settings or hits only
the models read as they are, is answered by ``Store.search``.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

from kenning.errors import KenningError

from . import support

VALUE_OPTIONS = {"--mode": "mode", "--scope": "scope", "-s": "scope", "--category": "category", "--limit": "limit"}
FLAGS = {"--no-auto-scope": "no_auto_scope", "--expand-top": "expand_top",
         "--since-prior-session": "since_prior_session", "--why": "why", "--json": "as_json"}
# what each leg's score is, as --why prints it
LEG_SCORES = {"vector": "cosine", "bm25": "bm25", "keyword": "keyword score"}


class PlainOut:
    """What ``support.out.print(text)`` writes for a plain string, without importing rich: the text
    sanitised (control characters as visible escapes) and a newline. The console is made with
    markup, emoji codes, highlighting and wrapping off, so for text without tabs rich adds nothing; a
    line with a tab (which rich expands to its cell-width tab stops) is printed by rich itself."""

    def print(self, text: str = "") -> None:
        if "\t" in text:
            support.out.print(text)
            return
        try:  # a character the stream cannot encode is written as an escape (support.Tolerant)
            stdout = support.Tolerant(sys.stdout)
            stdout.write(support.sanitize(text) + "\n")
            stdout.flush()  # rich flushes every print
        except BrokenPipeError:  # rich's answer to a closed pipe: silence stdout, exit 1
            _quiet_stdout()
            raise SystemExit(1) from None


def check_mode(mode: str | None) -> None:
    """An empty ``--mode ""`` is a mistake to name, not a request for the default: the library reads
    an empty mode as none given and would search in the default mode without a word."""
    if mode == "":
        from kenning.errors import InvalidInput
        from kenning.store.plain import MODES

        raise InvalidInput(f"--mode is empty; choose one of {', '.join(MODES)}")


def short(text: str, width: int = 200) -> str:
    """The text on one line (whitespace runs as one space), cut to ``width`` with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def show_search(result: Any, as_json: bool, out: Any = None, why: bool = False) -> None:
    """A search result as ``--json`` or as lines: a head line, then per hit its id line (never
    wrapped, so the id stays copyable) and its snippet indented; with ``why`` a line of each leg's
    rank and score and the query terms the hit holds; the top hit's body with --expand-top."""
    if as_json:
        support.emit_json(result.to_dict())
        return
    out = out or PlainOut()
    if result.degraded:
        support.note(f"{result.degraded.message} ({result.degraded.fix or result.degraded.install})")
    if result.pending_embeddings and not result.degraded:  # degraded: the note above says why none was seen
        them = "it" if result.pending_embeddings == 1 else "them"
        support.note(f"{support.plural(result.pending_embeddings, 'memory has', 'memories have')} no vector yet, so "
                     f"the semantic leg could not see {them} (`kenning index` embeds {them})")
    if not result.hits:
        out.print(result.note or "no memory matches that query")
        return
    fed = getattr(result, "feedback_legs", None)  # a plain (lexical) answer has none
    out.print(f"{support.plural(len(result.hits), 'hit')} · mode {result.mode} · legs {', '.join(result.legs_run)}"
              + (f" ({' and '.join(fed)} with feedback)" if fed else ""))
    for i, hit in enumerate(result.hits, 1):
        stale = "" if hit.staleness_verdict == "fresh" else f"  {hit.staleness_verdict}"
        replaced = hit.trust.get("superseded_by")
        if replaced:
            stale += f"  superseded by {', '.join(replaced)}"
        for outcome in hit.trust.get("recent_negative_outcomes", ()):  # the user rejected it lately
            stale += f"  recently {outcome['outcome']}"
        out.print(f"{i:>2}. {hit.id}  {hit.relevance} ({hit.matched_leg})  {hit.score:.3f}{stale}  "
                  f"{', '.join(hit.scopes)}")
        out.print("   " + short(hit.snippet))
        if why:
            out.print("   why: " + explanation(hit, result.legs_run))
    if result.hits[0].content is not None:
        out.print()
        out.print(result.hits[0].content)


def explanation(hit: Any, legs_run: list[str]) -> str:
    """One line of why ``hit`` ranked: per leg run, its rank and score there or that it did not find
    it; then the query terms the hit holds (none: it was found by meaning alone)."""
    parts = []
    for leg in legs_run:
        found = hit.legs.get(leg)
        parts.append(f"{leg} #{found.rank} ({LEG_SCORES.get(leg, 'score')} {found.score:.3f})" if found
                     else f"{leg} -")
    terms = ", ".join(hit.match_terms) if hit.match_terms else "none of the query's words"
    through = getattr(hit, "feedback_terms", None)  # hybrid's bm25 runs with feedback (retrieval/feedback.py)
    if through:
        terms += f" (bm25 found it by feedback words, which the query's best matches hold: {', '.join(through)})"
    return " · ".join(parts) + f" · holds {terms}"


def parse(args: list[str]) -> dict[str, Any] | None:
    """The search's options from a plain command line, or None for any form the typer app must
    answer. Click's rules for what is accepted: options before or after the query, ``--opt value``
    or ``--opt=value`` (``-s value`` for the short one), the last of a repeated single option wins."""
    store, i = None, 0
    while i < len(args) and args[i] != "search":
        word = args[i]
        if word == "--store" and i + 1 < len(args) and args[i + 1][:1] not in ("", "-"):
            store, i = args[i + 1], i + 2
        elif word.startswith("--store=") and word[8:9] not in ("", "-"):
            store, i = word[8:], i + 1
        else:
            return None
    options: dict[str, Any] = {"store": store, "query": None, "mode": None, "scope": [], "category": None,
                               "limit": 5, **dict.fromkeys(FLAGS.values(), False)}
    words = iter(args[i + 1:])
    for word in words:
        name, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        if word[:1] != "-":
            if options["query"] is not None:
                return None
            options["query"] = word
        elif name in FLAGS and not eq:
            options[FLAGS[name]] = True
        elif name in VALUE_OPTIONS:
            value = attached if eq else next(words, None)
            if value is None or value[:1] == "-" or (eq and not value):
                return None
            if VALUE_OPTIONS[name] == "scope":
                options["scope"].append(value)
            else:
                options[VALUE_OPTIONS[name]] = value
        else:
            return None
    if options["query"] is None or i == len(args):
        return None
    try:
        options["limit"] = int(options["limit"])  # click's INT converts with int() too
    except ValueError:
        return None
    options["scope"] = options["scope"] or None  # typer passes None for a list option not given
    return options


def run_fast(args: list[str]) -> int | None:
    """Run ``kenning search`` from ``args`` and return its exit code, or None when the typer app
    must answer. Errors as the typer command reports them: one line on stderr, exit 2; the store
    closes after the output, as the command context closes it."""
    options = parse(args)
    if options is None:
        return None
    support.quick_process_defaults(args)
    if support.current_folder_gone(args):
        return 2
    store, code = None, 0
    try:
        try:
            check_mode(options["mode"])
            directory = support.located(options["store"], create=False)
            result, store = _plain_search(directory, options)
            if result is None:
                from kenning.memory.facade import Store

                store = Store(directory)
                result = store.search(options["query"], mode=options["mode"], scopes=options["scope"],
                                      limit=options["limit"], category=options["category"],
                                      expand_top=options["expand_top"], auto_scope=not options["no_auto_scope"],
                                      since_prior_session=options["since_prior_session"])
            show_search(result, options["as_json"], why=options["why"])
        except KenningError as exc:
            support.say_error(str(exc))
            code = 2
        finally:
            if store is not None:
                store.close()
    except (KeyboardInterrupt, EOFError):
        sys.stderr.write("\n")  # click's echo on an interrupt, then the CLI's own blank line
        sys.stderr.flush()
        support.err.print()
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _quiet_stdout()  # as click does on a closed pipe: no second error at exit, exit 1
        return 1
    return code


def _plain_search(directory: Any, options: dict[str, Any]) -> tuple[Any, Any]:
    """(the plain answer, its open session), or (None, None) when the models must answer."""
    if options["expand_top"]:
        return None, None
    from kenning.memory.reads import search_plain
    from kenning.memory.session import Session
    from kenning.store.plain import utcnow

    session = Session(directory, utcnow, None, None)
    try:
        result = search_plain(session, options["query"], options["mode"], options["scope"], options["limit"],
                              options["category"], not options["no_auto_scope"], options["since_prior_session"])
    except BaseException:
        session.close()
        raise
    if result is None:
        session.close()
        return None, None
    return result, session


def _quiet_stdout() -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
