"""Durability gate: a memory should still be true next month; run-state belongs in an episode.

Run-state is what a journal says: the moment it was written ("currently", "this week", "an hour
ago", "until Friday"), work under way ("in the middle of", "60% complete", "next step"), the live
status of a system ("CI is red", "the queue is paused"), a change told as news ("now uses",
"recently switched") and the state of one checkout ("3 unpushed commits", "HEAD is at 9c4e2fa").

The rules were written against a labelled corpus (tests/data/durability/) whose durable half is
mostly near misses, so each rule carries the exceptions that keep durable text passing:
- code spans, quoted labels and calls are ignored: `git branch --show-current`, "In Progress", now();
- a status phrase inside a condition or relative clause describes behaviour, not the present:
  "if the previous run is still in progress", "a request that is still running", "when the build
  is broken";
- relative days in a habitual sentence are generic: "processes yesterday's transactions every
  morning", "torn down every Friday and rebuilt on Monday";
- past dates and versions are durable history: "renamed in 2023", "as of version 2";
- red is a status only of something that has one: "the build is red", "CI on main is red", but
  "stop signs are red" and "error banners are red in the dashboard theme" are colours ("red
  again" is news of a change whatever its subject).
A caller who knows the statement is durable as written passes ``acknowledge_transient=True``.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from functools import lru_cache
from dataclasses import dataclass

from kenning.memory.gates import GateRefusal, prefilter

GATE = "durability"
STATUS = "transient_warning"
OVERRIDE = "acknowledge_transient"

ALWAYS = "always"  # time-bound wherever it appears
STATE = "state"  # a status phrase; generic inside a condition or relative clause
DAY = "day"  # a relative day or weekday; generic in a habitual sentence


@dataclass(frozen=True)
class _Marker:
    label: str
    pattern: re.Pattern[str]
    kind: str = ALWAYS
    # a STATE marker with a subject counts only when it accepts the clause's words before the match
    subject: Callable[[str], bool] | None = None


def _rx(pattern: str, flags: int = re.I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
# Dates and relative days only: "as of 3.12" or "as of version 2" is a durable versioned fact.
_DATE = (
    r"(?:\d{4}-\d{2}(?:-\d{2})?"
    r"|\d{1,2}/\d{1,2}/\d{2,4}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}\s+\d{{4}}"
    r"|today|tonight|yesterday|now|this (?:morning|afternoon|evening|week|month|sprint))"
)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_NUM = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|several|a few|a couple of|an?)"
_STATUS_WORDS = (
    r"red again|green again|down|broken|failing|flaky|blocked|stuck|paused|on hold|frozen|muted|degraded"
    r"|switched off|turned off|busy with|pending|not resolved|unresolved|in read-only mode|under (?:heavy )?load"
    r"|in review|under review|in QA"
)
# what a colour can be the status of: a build, CI, a branch, a check ...
_HAS_STATUS = _rx(
    r"\b(?:builds?|CI|pipelines?|tests?|suites?|specs?|deploys?|deployments?|jobs?|checks?|workflows?|runs?"
    r"|nightly|nightlies|releases?|canary|e2e|lint|linters?|main|master|trunk|branch(?:es)?|PRs?"
    r"|pull requests?|MRs?|merge requests?|prod|production|staging|dashboards?|monitors?|alerts?|status)\s*$")
# ... named by the subject's last word, once a place or owner after it is set aside ("CI on main",
# "the tests for the auth service"; "the error banners in production" is about banners)
_PLACE = _rx(r"\s+(?:on|for|in|of|at)\s+(?:(?:the|my|our|this)\s+)?[\w./-]+(?:\s+[\w./-]+)?\s*$")


@lru_cache(maxsize=4096)  # pure; a long body asks about the same subjects many times
def _has_status(subject: str) -> bool:
    """Whether the words before "is red" name something with a status: "the build", "CI on main",
    "the PR's checks"; not "stop signs" or "the error banners in production"."""
    return bool(_HAS_STATUS.search(_PLACE.sub("", subject)))


# -ing words that name a thing ("the environment is staging") rather than an ongoing action
_ING_EXCEPTIONS = (
    r"(?:using|listening|missing|nothing|something|anything|everything|being used|going to|string|thing|spring"
    r"|morning|evening|ceiling|building|setting|heading|mapping|padding|encoding|wording|ping|staging|billing"
    r"|logging|routing|caching|hosting|pricing|networking|tracing|scheduling|onboarding|streaming|testing"
    # long-running pursuits, not the state of a system: "the user is learning Rust"
    r"|learning|studying|living|teaching)\b")

_MARKERS: list[_Marker] = [
    # -- the moment of writing
    _Marker("currently", _rx(r"\bcurrently\b")),
    _Marker("right now", _rx(r"\bright now\b")),
    _Marker("at the moment", _rx(r"\b(?:at|for) the moment\b(?!\s+(?:of|when|that)\b)")),
    _Marker("at present", _rx(r"\bat present\b")),
    _Marker("for now", _rx(r"\bfor now\b")),
    _Marker("for the time being", _rx(r"\bfor the time being\b")),
    _Marker("as we speak", _rx(r"\bas we speak\b")),
    _Marker("as of <date>", _rx(rf"\bas of\s+{_DATE}\b")),
    _Marker("just now", _rx(r"\bjust now\b")),
    _Marker("… ago", _rx(rf"\b{_NUM}\s+(?:minutes?|hours?|days?|weeks?)\s+ago\b")),
    _Marker("this morning / afternoon", _rx(r"\b(?:this|earlier|later)\s+(?:morning|afternoon|evening|today)\b")),
    _Marker("tonight / tomorrow", _rx(r"\b(?:tonight|tomorrow|last night)(?:'s|’s)?\b")),
    _Marker("this week", _rx(r"\bthis (?:week|weekend|month|sprint|quarter)(?:'s|’s)?\b"
                             r"|\bthis (?:[\w-]+\s+)?(?:iteration|session|run)(?:'s|’s)?\b")),
    _Marker("next week", _rx(rf"\bnext (?:week|weekend|month|sprint|few (?:days|weeks)|{_WEEKDAY})\b")),
    _Marker("last week", _rx(rf"(?<!the )(?<!each )(?<!every )\blast (?:week|weekend|month|sprint|{_WEEKDAY})\b")),
    _Marker("end of day", _rx(r"\b(?:by |until |till )?(?:end of (?:the )?day|EOD|after lunch)\b")),
    _Marker("today", _rx(r"\btoday\b(?!(?:'s|’s)?\s+date\b)(?!\s*\()"), DAY),
    _Marker("yesterday", _rx(r"\byesterday\b(?!\s*\()"), DAY),
    _Marker("<weekday>", _rx(rf"\b(?:until|till|by|for|on|since|before)\s+{_WEEKDAY}\b(?!\s+(?:nights|mornings|evenings|afternoons))"), DAY),
    _Marker("during the <event>", _rx(
        r"\bduring the (?:migration|upgrade|rollout|freeze|outage|incident|launch|backfill|cutover)\b"), DAY),
    _Marker("… left", _rx(rf"\b{_NUM}\s+(?:minutes?|hours?|days?|weeks?)\s+(?:of\s+\w+\s+)?left\b")),
    _Marker("in a row", _rx(r"\bin a row\b")),
    _Marker("for the month", _rx(r"\bfor the (?:day|week|month)\b")),
    # -- a change told as news
    _Marker("now <verb>", _rx(r"(?<![.\w])(?<!the )\bnow\b(?!\s*\()(?!\s+on\b)")),
    _Marker("recently", _rx(r"\brecently\b(?![- ](?:viewed|used|opened|played|added|updated|modified|closed|deleted))")),
    _Marker("just <did>", _rx(r"\bjust\s+(?:\w+ed|been|got|cut|built|made|put|set|lost|broke|found|saw|went|came|left|sent|wrote|ran|took|gave)\b")),
    _Marker("temporarily", _rx(r"\btemporarily\b(?!\s+\w+\s+\w+s\s+(?:are|get|will)\b)")),
    _Marker("since the last …", _rx(r"\bsince (?:the )?(?:last|latest|recent|new)\b"
                                   r"|\bsince (?:the )?(?:morning|afternoon|lunch|noon)\b")),
    _Marker("doubled since", _rx(r"\b(?:doubled|tripled|halved|spiked|jumped|dropped|rose|fell|went (?:up|down))\s+"
                                 r"(?:\w+\s+){0,3}?since\b|\ball-time (?:high|low)\b")),
    # -- work under way and plans
    _Marker("in progress", _rx(r"\b(?:work\s+)?in progress\b"), STATE),
    _Marker("WIP", _rx(r"\bWIP\b(?!\s+limits?\b)", 0)),
    _Marker("TODO", _rx(r"\bTODO\b", 0)),
    _Marker("in the middle of", _rx(r"\bin the (?:middle|process|midst) of\b")),
    _Marker("halfway", _rx(r"\b(?:half-?way|mid-?way) through\b|\bmid-(?:migration|rollout|deploy|refactor|upgrade)\b")),
    _Marker("… done", _rx(
        r"(?:\b(?:half|two thirds|three quarters|mostly|partially|partly|nearly|almost|about)|\d+%)\s+"
        r"(?:done|complete|completed|finished|migrated|through|used up)\b")),
    _Marker("is done", _rx(r"\b(?:is|are)\s+(?:now\s+)?(?:done|finished|complete)\b(?!\s+(?:by|with|in|through|via)\b)"), STATE),
    _Marker("so far", _rx(r"\bso far\b")),
    _Marker("next step", _rx(r"\bnext (?:step|steps|up|I'll|I will|we'll|we will)\b")),
    _Marker("I'll / we'll", _rx(r"\b(?:I|we)(?:'ll|’ll| will| shall)\b")),
    _Marker("going to", _rx(r"\b(?:I|we)(?:'m|’m|'re|’re| am| are)\s+(?:going to|about to)\b")),
    _Marker("about to", _rx(r"\babout to\b")),
    _Marker("attempt N", _rx(
        r"\b(?:iteration|attempt|try|run)\s+#?\d+\b"
        r"|\b(?:first|second|third|fourth|fifth|last|previous|latest)\s+(?:attempt|try|iteration|run)\b"
        rf"|\bafter\s+{_NUM}\s+(?:tries|attempts)\b|\b(?:as an|the) experiment\b")),
    _Marker("done N of M", _rx(
        r"\b(?:has|have)\s+(?:finished|completed|processed|migrated|run|passed|failed|done)\s+\d+\s+of\s+(?:the\s+)?\d+\b")),
    _Marker("the current <task>", _rx(
        r"\b(?:the|our|my) current (?:sprint|iteration|task|milestone|blockers?|focus|plan|priority|incident"
        r"|outage|workaround|hotfix)\b")),
    _Marker("keeps <doing>", _rx(r"\bkeeps?\s+(?:on\s+)?\w+ing\b"), STATE),
    _Marker("epoch N of M", _rx(r"\b(?:epoch|step|batch|shard|page)\s+\d+\s+of\s+\d+\b")),
    _Marker("half of the … have been", _rx(r"\b(?:half|part|some|most)\s+of\s+(?:the|our)\s+[\w ]{1,30}?(?:have|has)\s+been\b")),
    _Marker("the remaining …", _rx(r"\bthe remaining (?:failures|tests|work|items|issues|tasks|errors|bugs)\b")),
    _Marker("open question", _rx(r"\bopen questions?\b")),
    _Marker("heads up", _rx(r"\bheads[- ]up\b")),
    _Marker("one more …", _rx(r"\b(?:one|two|\d+)\s+more\s+(?:approvals?|reviews?|reviewers?|fix(?:es)?|days?)\b")),
    _Marker("until we …", _rx(r"\buntil (?:I|we)\b|\bwhile (?:I|we)(?:'re|’re| are| am)? (?:debug|investigat|wait|fix|test"
                              r"|look|migrat|sort|figur|roll)\w*")),
    _Marker("until it lands", _rx(
        r"\buntil (?:the )?(?:launch|release|cutover|freeze ends)\b"
        r"|\buntil (?:the )?[\w-]+(?: [\w-]+)? (?:lands|ships|is (?:fixed|merged|done|deployed|released|back))\b"), DAY),
    _Marker("but not yet", _rx(r"\bbut (?:still )?(?:waiting|pending|blocked)\b"
                               r"|\bbut not (?:yet )?(?:deployed|rolled out|released|merged|pushed|applied|shipped)\b")),
    _Marker("needs a rerun", _rx(r"\bneeds? (?:a |another )?(?:rerun|re-run|rebase|redeploy)\b")),
    _Marker("as a workaround", _rx(r"\bas a (?:temporary )?(?:workaround|stopgap|quick fix|hack)\b")),
    _Marker("N open PRs", _rx(r"\b(?:\d+|one|two|three|four|five|six|several|a few) open "
                              r"(?:PRs|pull requests|MRs|incidents|tickets|issues|bugs|reviews)\b")),
    _Marker("Did …", _rx(r"(?:^|(?<=[.;!?]\s))(?:[A-Z][a-z]+ed|Ran|Made|Put|Set|Cut|Built|Took|Wrote|Broke|Left|Got"
                         r"|Rolled back|Switched)\s+(?:the|a|an|my|our|it|them|this|that|all|some|\d+)\b", 0)),
    _Marker("blocked on", _rx(r"\bblocked on\b|(?:^|(?<=[.;:]\s))(?:waiting|stuck)\s+(?:on|for)\b")),
    # -- the writer's own session
    _Marker("I'm … -ing", _rx(rf"\b(?:I|we)(?:'m|’m|'re|’re| am| are)\s+(?:\w+ly\s+)?(?!using\b|going to\b)\w+ing\b")),
    _Marker("I'm blocked", _rx(
        r"\b(?:I|we)(?:'m|’m|'re|’re| am| are)\s+(?:still\s+)?(?:blocked|stuck|waiting|back|out|behind)\b")),
    _Marker("I'm on …", _rx(r"\b(?:I|we)(?:'m|’m|'re|’re| am| are)\s+on\b")),
    _Marker("I did …", _rx(
        r"\bI(?:'ve|’ve| have| had)?\s+(?:just\s+|only\s+|also\s+)?"
        r"(?:\w+ed|left|reset|got|made|put|set|ran|built|broke|wrote|took|did|kept|cut)\b")),
    _Marker("I haven't …", _rx(r"\b(?:I|we)\s+(?:haven't|haven’t|have not|hadn't|had not)\b")),
    _Marker("my local …", _rx(
        r"\bmy\s+(?:local|branch|working|laptop|machine|checkout|current|changes|stash|fork|PR|pull request|tree|copy)\b")),
    _Marker("not … yet", _rx(r"(?:\bnot\b|n't\b|n’t\b|\bnever\b)[^.;:]{0,50}?\byet\b"), STATE),
    _Marker("has not … yet", _rx(r"\b(?:hasn't|hasn’t|has not|nobody has)\s+(?:yet\s+)?(?:been\s+)?\w+(?:ed|en)\b"), STATE),
    _Marker("still <status>", _rx(
        r"\bstill\s+(?:need|needs|waiting|open|running|propagating|failing|broken|red|down|blocked"
        r"|pending|in progress|to do|todo|runs)\b"), STATE),
    # -- live status of a system
    _Marker("is <status>", _rx(rf"\b(?:is|are|'s)\s+(?:still\s+|currently\s+|now\s+)?(?:{_STATUS_WORDS})\b"), STATE),
    _Marker("is <status>", _rx(r"\b(?:is|are|'s)\s+(?:still\s+|currently\s+|now\s+)?red\b"), STATE, _has_status),
    _Marker("is <doing>", _rx(
        rf"\b(?:is|are|has been|have been)\s+(?:still\s+)?(?!{_ING_EXCEPTIONS})(?:being\s+\w+|\w+ing)\b(?!-)"), STATE),
    _Marker("is at N%", _rx(r"\b(?:is|are)\s+(?:(?!\w+ed\b)\w+\s+)?at\s+\d+(?:\.\d+)?%")),
    _Marker("draft PR", _rx(r"\bdraft (?:PR|pull request|MR|merge request)\b")),
    # -- the state of one checkout
    _Marker("this branch", _rx(r"\bthis branch\b")),
    _Marker("this PR", _rx(r"\bthis (?:PR|pull request|MR|merge request)\b")),
    _Marker("unpushed", _rx(rf"\b(?:{_NUM}|the|my|our|some)\s+(?:local\s+)?(?:unpushed|uncommitted|unmerged)\b"
                            r"|(?:\bnot|n't|n’t)\s+(?:yet\s+)?(?:pushed|committed)\b")),
    _Marker("commits ahead", _rx(rf"\b{_NUM}\s+commits?\s+(?:ahead|behind)\b|\b(?:ahead|behind)\s+(?:of\s+)?\S+\s+by\s+\d+\s+commits?\b")),
    _Marker("HEAD is at", _rx(r"\bHEAD\s+(?:is|was)\s+(?:at|on)\b")),
    _Marker("stashed", _rx(r"\bstashed\b|\bworking (?:tree|copy) is dirty\b")),
    _Marker("local patch", _rx(r"\blocal (?:changes|patch|patches|edits|commits|hack)\b|\b(?:patched|modified|changed|hacked|edited) locally\b")),
    _Marker("commit SHA", _rx(r"(?<![\w/.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-])", 0)),
]

# A status phrase after a conjunction of condition or time states a condition, not the present:
# "if the previous run is still in progress". A relative pronoun counts only right before it:
# "a request that is still running", but not "the PR that adds OAuth is still open".
_CONDITION = re.compile(r"\b(?:if|when|whenever|while|once|unless|whether|until|means)\b", re.I)
_RELATIVE = re.compile(r"\b(?:that|which|who|whose)\b", re.I)
_RELATIVE_WORDS = 2
# A sentence opening on a condition is generic throughout: "When a migration runs, writes are blocked."
_CONDITIONAL_OPENING = re.compile(r"^\W*(?:when|whenever|if|once|unless|while|until|after|before)\b", re.I)
# ... and so does one followed by a condition, unless the writer is its subject ("when I load it").
_GENERIC_AFTER = re.compile(
    r"^\W*(?:\w+\W+)?(?:(?:when|whenever|if|unless)\b(?!\s+(?:I|we)\b)|automatically\b|by default\b)", re.I)
_HABITUAL = re.compile(
    r"\b(?:every|each|daily|nightly|weekly|monthly|hourly|yearly|always|never|defaults?|usually|routinely)\b", re.I)
# Code, quoted labels and calls name things; their words are not the writer's own. A call's name is
# taken from the start of its run of word characters and dots, and a curly quote ends at the next
# curly quote mark: tried from each word of "a.a.a…" or from each of many “ with no ”, the scan
# reread the rest of the text every time (15 s for 20 KB of "a.", minutes for a 100 KB body).
_NAMES = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^“”]*”|(?<![\w.])[\w.]+\(\)|(?<!\w)--?[a-z][\w-]*")
_CLAUSE_END = re.compile(r"[.;:!?](?:\s|$)")
_LOOKBACK_WORDS = 6


def _blank_names(text: str) -> str:
    return _NAMES.sub(lambda m: " " * len(m.group()), text)


_SPACE = re.compile(r"\s")
_CONDITIONAL_OPENING_AT = re.compile(_CONDITIONAL_OPENING.pattern[1:], re.I)  # matched at a clause's start
_GENERIC_AFTER_AT = re.compile(_GENERIC_AFTER.pattern[1:], re.I)  # ... and right after a marker
_SUBJECT_WORDS = 16  # the words of a clause that can decide a subject test (_PLACE and _HAS_STATUS look at 5)
_TAIL_WIDTH = 256  # the characters before a match first looked at for those words (then 4x, 16x ...)


class _Clauses:
    """Where the clauses of one text start and end, found once: the checks of a marker then look
    at its own clause instead of scanning the text from its start (a 1 MiB body has thousands of
    matches). Each answer is what the original scans gave (tests/test_gate_durability_scan.py
    compares them over the gate corpora and generated texts)."""

    def __init__(self, text: str):
        self.text = text
        ends = list(_CLAUSE_END.finditer(text))
        self.starts = [m.start() for m in ends]  # where each clause end begins ...
        self.ends = [m.end() for m in ends]  # ... and ends (where the next clause starts)
        self._opening: dict[int, bool] = {}
        self._habitual: dict[tuple[int, int], bool] = {}

    def start_before(self, pos: int) -> int:
        """Where the clause holding pos starts: the end of the last clause end in text[:pos]
        (a "." right before pos ends a clause there, since the text is cut at pos)."""
        i = bisect_right(self.ends, pos)
        start = self.ends[i - 1] if i else 0
        if pos and self.text[pos - 1] in ".;:!?":
            start = pos
        return start

    def sentence(self, pos: int) -> tuple[int, int]:
        """The span of _sentence_of: from start_before(pos) to the first clause end at or after pos."""
        i = bisect_left(self.starts, pos)
        return self.start_before(pos), self.starts[i] if i < len(self.starts) else len(self.text)

    def opens_on_condition(self, start: int) -> bool:
        if start not in self._opening:
            self._opening[start] = _CONDITIONAL_OPENING_AT.match(self.text, start) is not None
        return self._opening[start]

    def habitual(self, pos: int) -> bool:
        span = self.sentence(pos)
        if span not in self._habitual:
            self._habitual[span] = _HABITUAL.search(self.text, *span) is not None
        return self._habitual[span]

    def tail(self, start: int, end: int, words: int) -> str:
        """text[start:end], or a suffix of it that begins at a space and still holds at least
        ``words`` words: whatever looks only at the last words of a clause sees the same."""
        text, width = self.text, _TAIL_WIDTH
        while end - width > start:
            space = _SPACE.search(text, end - width, end)
            if space is not None:
                piece = text[space.start():end]
                if len(piece.split()) >= words:
                    return piece
            width *= 4
        return text[start:end]


def _sentence_of(text: str, pos: int) -> str:
    """The sentence (clause) of text holding pos."""
    start, end = _Clauses(text).sentence(pos)
    return text[start:end]


@lru_cache(maxsize=4096)  # a long body repeats its phrasing: the same words before many matches
def _condition_or_relative(before: tuple[str, ...]) -> bool:
    """A conjunction of condition among the last words before a status phrase, or a relative pronoun
    right before it."""
    return bool(_CONDITION.search(" ".join(before)) or _RELATIVE.search(" ".join(before[-_RELATIVE_WORDS:])))


def _is_generic(clauses: _Clauses, marker: _Marker, m: re.Match[str]) -> bool:
    text = clauses.text
    if marker.kind == STATE:
        clause_start = clauses.start_before(m.start())
        if marker.subject is not None and not marker.subject(clauses.tail(clause_start, m.start(), _SUBJECT_WORDS)):
            return True
        before = clauses.tail(clause_start, m.start(), _LOOKBACK_WORDS).split()
        return bool(_condition_or_relative(tuple(before[-_LOOKBACK_WORDS:]))
                    or clauses.opens_on_condition(clause_start)
                    or _GENERIC_AFTER_AT.match(text, m.end()))
    if marker.kind == DAY:
        return clauses.habitual(m.start())
    return False


_SCREEN = prefilter.Screen([marker.pattern for marker in _MARKERS])


def find_transient_markers(text: str, screened: bool = True) -> list[str]:
    """The run-state markers present in text, each with the words it matched, in text order.

    Earlier markers in the table win where two overlap, so a span is reported once. ``screened``
    skips the markers whose literals are absent (the same result; False runs every pattern).
    """
    plain = _blank_names(text)
    may = _SCREEN.may_match(plain) if screened else None
    clauses = _Clauses(plain)
    taken: list[tuple[int, int, str]] = []  # sorted by start, never overlapping (so sorted by end too)
    starts: list[int] = []
    for i, marker in enumerate(_MARKERS):
        if may is not None and not may[i]:
            continue
        added = []  # one pattern's matches never overlap each other: check them against earlier markers'
        for m in marker.pattern.finditer(plain):
            # the one span that could overlap m is the last to start before m ends
            at = bisect_left(starts, m.end())
            if (at and taken[at - 1][1] > m.start()) or _is_generic(clauses, marker, m):
                continue
            words = text[m.start():m.end()]  # the writer's own words: blanking kept every position
            label = marker.label if words.lower() == marker.label.lower() else f"{marker.label}: {words!r}"
            added.append((m.start(), m.end(), label))
        if added:
            taken = sorted(taken + added)  # two sorted runs: merged in one pass
            starts = [start for start, _, _ in taken]
    return [label for _, _, label in taken]


def check(content: str, acknowledge_transient: bool = False) -> GateRefusal | None:
    """Refuse run-state wording unless the caller acknowledges it is durable."""
    if acknowledge_transient:
        return None
    markers = find_transient_markers(content)
    if not markers:
        return None
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason="the text reads as run-state that will go stale (" + ", ".join(markers) + ")",
        hint=(
            "Write run-state as an episode (episode_write) instead. If the fact is durable, restate it "
            "without the time-bound wording, or pass acknowledge_transient=True."
        ),
        matched=markers,
        override=OVERRIDE,
    )
