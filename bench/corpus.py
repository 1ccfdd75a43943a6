"""A deterministic synthetic memory corpus and query set for the speed benchmarks.

Real collections are too small (or licensed) for a 100k-memory timing run, so the benchmark builds
its own: each memory is a templated sentence about people, projects and infrastructure (the kind
of fact an agent writes down) padded with Zipf-distributed filler to about 40 words. The
vocabulary is a few thousand words: common English, technical terms, names, and a long tail of
pronounceable made-up words, so posting lists have the skew of real text (a handful of very long
lists, thousands of short ones). Everything derives from one seed, so two runs time the same data.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

SEED = 20260601
TARGET_WORDS = 40
VOCABULARY_SIZE = 4000
ZIPF_EXPONENT = 1.07
FUNCTION_WORDS = 50  # COMMON's first words keep the top Zipf ranks

COMMON = """
the of and to in is that it for was on are with as be at this have from or by one had not but what
all were when we there can an your which their said if do will each about how up out them then she
many some so these would other into has more her two like him see time could no make than first
been its who now people my made over did down only way find use may water long little very after
words called just where most know get through back much before go good new write our used me man
too any day same right look think also around another came come work three word must because does
part even place well such here take why things help put years different away again off went old
number great tell men say small every found still between name should home big give air line set
own under read last never us left end along while might next sound below saw something thought both
few those always looked show large often together asked house world going want school important
until form food keep children feet land side without boy once animals life enough took sometimes
four head above kind began almost live page got earth need far hand high year mother light parts
country father let night following picture being study second eyes soon times story boys since
white days ever paper hard near sentence better best across during today others however sure means
knew try told young miles sun ways thing whole hear example heard several change answer room sea
against top turned learn point city play toward five using himself usually money seen car morning
team decided meeting agreed prefers wants asked mentioned reported noticed fixed broke changed
moved owns leads reviews approved rejected planned scheduled delayed finished started blocked
""".split()

TECHNICAL = """
api endpoint service server client database postgres sqlite redis kafka queue worker cron job
deploy deployment release rollback migration schema index query cache latency throughput timeout
retry backoff circuit breaker load balancer proxy nginx envoy ingress kubernetes pod node cluster
namespace helm chart docker image container registry build pipeline ci test suite flaky fixture
mock coverage lint formatter typecheck compiler runtime python rust golang typescript javascript
node.js react vue django flask fastapi pydantic numpy pandas torch model embedding vector search
bm25 ranking tokenizer parser lexer config yaml json toml env secret token oauth jwt sso ldap auth
login session cookie csrf cors tls certificate dns domain subnet vpc firewall port socket http grpc
websocket graphql rest webhook callback event stream topic partition offset consumer producer batch
shard replica primary failover backup snapshot restore wal vacuum autovacuum checkpoint lock mutex
deadlock thread async await coroutine future promise goroutine channel heap stack memory leak oom
cpu gpu disk iops ssd bucket s3 object storage blob bandwidth quota limit alert pager oncall
incident postmortem runbook dashboard grafana prometheus metric trace span log logging sentry
feature flag rollout canary staging production dev sandbox branch merge rebase commit tag repo
monorepo submodule dependency package version semver changelog license readme docs wiki ticket
issue bug regression hotfix patch refactor cleanup debt benchmark profile flamegraph allocation
gc pause jit wasm arm64 x86 linux macos windows kernel systemd ssh terraform ansible aws gcp azure
lambda function serverless billing invoice customer tenant user account permission role admin
3.12.1 c++ c# utf-8 p95 p99 sla slo rpo rto ttl lru
""".split()

PEOPLE = """
alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert sybil trent
victor walter yusuf zara priya chen mateo aiko lars ines kofi sven noor tomas hana diego freya
""".split()

PROJECTS = """
atlas borealis cobalt dynamo ember falcon granite helios iris juniper kestrel lumen meridian nimbus
orion pegasus quasar rook sierra tundra umbra vertex willow xenon yarrow zephyr
""".split()

_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr sk sl st tr ch sh th".split()
_VOWELS = "a e i o u ai ea io ou".split()
_CODAS = ["", "", "n", "r", "l", "s", "t", "x", "nd", "rk", "st"]

TEMPLATES = [
    "{person} said the {tech} for {project} runs on {tech} behind the {tech} and {person} owns it",
    "the {project} {tech} moved from {tech} to {tech} after the {tech} incident last {when}",
    "{person} prefers {tech} over {tech} for {project} because the {tech} is simpler to debug",
    "deploy {project} with the {tech} {tech} then check the {tech} dashboard before {when}",
    "{project} uses port {port} for the {tech} and {tech} listens on {port} in staging",
    "the {tech} {tech} in {project} times out after {num} seconds when {tech} is under load",
    "{person} and {person} agreed to replace {tech} with {tech} in {project} by {when}",
    "remember that {project} stores {tech} in {tech} and rotates the {tech} every {num} days",
    "{person} reported a {tech} regression in {project} version {version} affecting the {tech}",
    "to restart {project} run the {tech} runbook then restart the {tech} on node {num}",
]
WHEN = "monday tuesday wednesday thursday friday week month quarter sprint release".split()


def _made_up_words(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    words: list[str] = []
    while len(words) < count:
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.choice((1, 2, 2, 3)))
        ) + rng.choice(_CODAS)
        if len(word) > 3 and word not in taken:
            taken.add(word)
            words.append(word)
    return words


class Corpus:
    """Memories and queries from one seed. ``memories(n)`` is a prefix-stable stream."""

    def __init__(self, seed: int = SEED, vocabulary_size: int = VOCABULARY_SIZE):
        rng = random.Random(seed)
        self.seed = seed
        real = list(dict.fromkeys(COMMON + TECHNICAL + PEOPLE + PROJECTS))
        tail = _made_up_words(rng, max(0, vocabulary_size - len(real)), set(real))
        # rank order: the commonest English words first (mostly stopwords, as in real text), then
        # the other real words shuffled so frequent filler mixes English and technical terms
        head, rest = real[:FUNCTION_WORDS], real[FUNCTION_WORDS:]
        rng.shuffle(rest)
        self.vocabulary = head + rest + tail
        weights = [1.0 / (rank ** ZIPF_EXPONENT) for rank in range(1, len(self.vocabulary) + 1)]
        total = 0.0
        self._cumulative = []
        for w in weights:
            total += w
            self._cumulative.append(total)

    def _zipf_words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.vocabulary, cum_weights=self._cumulative, k=k)

    def memory(self, rng: random.Random) -> str:
        template = rng.choice(TEMPLATES)
        sentence = template.format_map(_Slots(rng))
        words = sentence.split()
        filler = self._zipf_words(rng, max(0, TARGET_WORDS - len(words)))
        # filler as a second clause, so the template keeps its phrase structure
        return f"{sentence}; {' '.join(filler)}."

    def memories(self, n: int, offset: int = 0) -> Iterator[str]:
        """The ``offset``-th to ``offset + n - 1``-th memories (each from its own derived seed)."""
        for i in range(offset, offset + n):
            yield self.memory(random.Random(f"{self.seed}:{i}"))

    def records(self, n: int, offset: int = 0, scope: str = "bench:corpus") -> list[dict]:
        """Import records ``{"id", "content", "scopes"}`` with ids stable across runs."""
        return [
            {"id": f"m{offset + i:07d}", "content": text, "scopes": [scope]}
            for i, text in enumerate(self.memories(n, offset))
        ]

    def queries(self, n: int = 200, corpus_size: int = 1000) -> list[str]:
        """``n`` varied 2-6-word queries: mostly words lifted from a memory (so they match), some
        with stopwords, some of only frequent words, some mixing in a word no memory contains."""
        rng = random.Random(f"{self.seed}:queries")
        out: list[str] = []
        while len(out) < n:
            kind = rng.random()
            length = rng.randint(2, 6)
            if kind < 0.55:  # words of one existing memory, in order: a remembered fact
                text = self.memory(random.Random(f"{self.seed}:{rng.randrange(corpus_size)}"))
                words = [w.strip(".;") for w in text.split()]
                start = rng.randrange(0, max(1, len(words) - length))
                query = words[start : start + length]
            elif kind < 0.75:  # people/projects/tech vocabulary: a question about the domain
                pool = TECHNICAL + PEOPLE + PROJECTS
                query = rng.sample(pool, length)
            elif kind < 0.90:  # frequent content words only: long posting lists, the worst case
                query = rng.sample(self.vocabulary[FUNCTION_WORDS : FUNCTION_WORDS + 100], length)
            else:  # one unknown word among known ones
                query = rng.sample(TECHNICAL, length - 1) + ["zzq" + str(rng.randrange(10**6))]
            out.append(" ".join(query))
        return out


class _Slots(dict):
    """format_map filler: each ``{slot}`` occurrence draws a fresh value."""

    def __init__(self, rng: random.Random):
        super().__init__()
        self.rng = rng

    def __missing__(self, key: str) -> str:
        rng = self.rng
        if key == "person":
            return rng.choice(PEOPLE)
        if key == "project":
            return rng.choice(PROJECTS)
        if key == "tech":
            return rng.choice(TECHNICAL)
        if key == "when":
            return rng.choice(WHEN)
        if key == "port":
            return str(rng.choice((80, 443, 5432, 6379, 8080, 8443, 9090, 9200)))
        if key == "num":
            return str(rng.randint(1, 90))
        if key == "version":
            return f"{rng.randint(0, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
        raise KeyError(key)
