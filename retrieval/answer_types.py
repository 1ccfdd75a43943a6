"""Whether a text holds the kind of value a query word asks for: "Kestrel Airflow version" is
answered by "Kestrel runs on Apache Airflow 2.8.1." although the text lacks the word "version",
because it holds a version number; "the budget for the Heron redesign" is not answered by "The
Heron redesign kicks off on 2024-07-01.", which holds no sum of money.

An agent's questions about its memories mostly name the thing and the attribute asked (a date, a
version, a port, a price): the memory answering them holds the thing's words and the attribute's
value, rarely the attribute's own word, while the near miss that holds the thing's words lacks the
value. ``labels`` reads this for a hit that misses some of the query's words (``answers_missing``).
The attribute words are general English, grouped by the value that answers them; a word missing
from the list is no attribute, so its absence from the hit still counts against it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from .text import search_tokens

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?")
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_DATE = (rf"\b\d{{1,2}}(?:st|nd|rd|th)?(?:\s*[-–]\s*\d{{1,2}}(?:st|nd|rd|th)?)?\s+(?:of\s+)?{_MONTH}"
         rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b{_MONTH}\s+\d{{4}}\b"
         r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")
_TIME = r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b|\b(?:noon|midnight)\b"
_CURRENCY = r"eur|gbp|usd|aud|cad|nzd|chf|jpy|cny|inr|sek|nok|dkk|pln|czk|brl|zar"
# a number, and a space that may follow it. Here and below a value is tried from the first place in its
# run of characters that can start it, not from each digit or word after a dot or hyphen of the run,
# or is bounded (a host name's labels as DNS bounds them, and 21 of them at most, as no real one has
# more): each such start reread the rest of the run, and a hit holding 10 KB of "0.0.0…" took 23 s to label
_AMOUNT = r"(?<![\d,.][,.])\b\d[\d,.]*\s?"
_MONEY = (rf"[£$€¥₹]\s?\d|\b(?:{_CURRENCY})\s?\d|{_AMOUNT}(?:k|m|bn|million|billion|thousand)?\s?"
          rf"(?:{_CURRENCY}|euros?|dollars?|pounds?|pence|cents?|francs?|yen|kr|rupees?)\b")
_PERCENT = r"\d\s?%|\bper\s?cent\b"
_DURATION = (r"\b\d+(?:\.\d+)?\s*(?:seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|d|weeks?|wks?|"
             r"months?|years?|yrs?)\b")

_DISTANCE = rf"{_AMOUNT}(?:mm|cm|m|km|metres?|meters?|ft|feet|foot|inch|inches|miles?|yards?|nautical miles?|nm)\b"

# value kind -> the pattern of a value of that kind
VALUES: dict[str, re.Pattern[str]] = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in {
    "date": _DATE,
    "year": rf"{_DATE}|\b(?:19|20)\d{{2}}\b",
    "time": _TIME,
    "schedule": rf"{_TIME}|{_DATE}|\b{_WEEKDAY}\b|\b(?:hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually|every)\b",
    "version": r"\b\d+\.\d+(?:\.\d+)*\b|\bv\d+\b",
    "money": _MONEY,
    "percent": _PERCENT,
    "discount": rf"{_PERCENT}|{_MONEY}|\bfree\b",
    "number": r"\b\d[\d,.]*\b",
    # a quantity of its own kind: a number with the unit that measures it
    "weight": rf"{_AMOUNT}(?:kg|kgs|kilos?|kilograms?|g|grams?|tonnes?|tons?|t|lbs?|pounds|stone)\b",
    "distance": _DISTANCE,
    "people": rf"{_AMOUNT}(?:people|persons?|residents?|inhabitants?|staff|employees?|members?|workers?|users?|pupils?|students?)\b",
    "port": r"\bports?\s+\d{2,5}\b|:\d{2,5}\b",
    "address": (r"https?://|\b[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,20}\.[a-z]{2,63}\b|\b\d+\s+\w+\s+(?:street|st|road|rd|avenue|ave|lane|ln|way|drive|dr)\b"
                r"|\b(?:street|road|avenue|lane|rua|calle|strasse|straße|straat|gade|gatan|vej)\b"),
    "path": r"(?:^|[\s(`'\"])~?/[\w.-]+|(?<![\w.-])[.-]*(?=\w)[\w.-]+/[\w.-]+/|[a-z]:\\\w",
    "email": r"[\w.+-]{1,64}@[\w-]+\.[\w.-]+",  # no address has a longer local part (and its last 64 are one)
    # eight digits or more (a separator of up to two characters between them), or seven after a "+": a
    # seven-digit code (an IMO number, "9412237") is no phone number, nor is an ISO date
    "phone": r"(?<![\w.-])(?!\d{4}-\d{2}-\d{2}\b)(?:\+\(?\d(?:[\s().-]{0,2}\d){6,}|\(?\d(?:[\s().-]{0,2}\d){7,})",
    "duration": _DURATION,
    "identifier": r"(?<![\w-])-*\b(?=[\w-]*\d)(?=[\w-]*[a-z])[\w-]{3,}\b",
}.items()}

# a date, a time, a version, a year or a code holding digits ("HL7", "t_0007") is no quantity: it is
# taken out of the text before a "number" is looked for
_NOT_A_QUANTITY = re.compile(rf"{_DATE}|{_TIME}|\b\d+\.\d+\.\d+\b|\b(?:19|20)\d{{2}}\b|\b\w*(?:[a-z_]\d|\d[a-z_])\w*\b",
                             re.IGNORECASE)

# attribute word -> the value kind that answers it
ATTRIBUTES: dict[str, str] = {word: kind for kind, words in {
    "date": "date dates deadline deadlines birthday anniversary expiry expiration",
    "year": "year",
    "time": "time times hour",
    "schedule": "schedule timetable frequency day",
    "version": "version versions release",
    "money": "budget cost costs price prices fee fees salary revenue value amount fare fares tariff charge wage pay spend",
    "percent": "percentage percent",
    "discount": "discount",
    "number": "number count capacity size limit quantity total",
    "weight": "weight",
    "distance": "height width depth length",
    "people": "population headcount",
    "port": "port ports",
    "address": "address url hostname host domain website endpoint",
    "path": "path folder directory",
    "email": "email",
    "phone": "phone mobile telephone",
    "duration": "retention duration ttl lifetime timeout",
    "identifier": "id identifier",
}.items() for word in words.split()}


@cache
def _kinds() -> dict[str, str]:
    """Attribute stems -> value kind, through the search tokenizer (so "dates" and "date" are one)."""
    kinds: dict[str, str] = {}
    for word, kind in ATTRIBUTES.items():
        for token in search_tokens(word):
            kinds.setdefault(token, kind)
    return kinds


def kind_of(term: str) -> str | None:
    """The value kind a query term (a search token) asks for, None when it names no attribute."""
    return _kinds().get(term)


def answers_missing(missing: Iterable[str], text: str) -> bool:
    """Whether ``text`` holds a value of the kind each of the ``missing`` query terms asks for: every
    one of them must name an attribute (``ATTRIBUTES``) and the text must hold such a value. False
    when nothing is missing (there is nothing to answer this way)."""
    kinds = [kind_of(term) for term in missing]
    return bool(kinds) and None not in kinds and all(holds(kind, text) for kind in dict.fromkeys(kinds))


# kinds whose word, when no stored text holds it, still counts against a hit lacking it
# (``asks_quantity``)
QUANTITIES = frozenset({"number", "weight", "distance", "people"})


def asks_quantity(term: str) -> bool:
    """Whether a query term asks for a quantity ("length", "population", "capacity"). ``labels``'
    known-term coverage lets a query word no stored text holds pass as the question's own wording
    ("interval" in "scraping interval of Prometheus"); a word asking for a quantity the store never
    mentions is the question itself, and the memory naming the thing without that quantity does
    not answer it ("Waypoint OSRM width" -> "Waypoint gets travel times from a self-hosted OSRM
    instance"). Other kinds keep the pass: "postmortem publishing deadline" is answered by "within
    five working days", no date."""
    return kind_of(term) in QUANTITIES


AMOUNTS = QUANTITIES | {"money"}
_ASKS_ANOTHER_KIND = frozenset({"when", "where", "who", "whom", "whose", "why"})
_FIRST_WORD = re.compile(r"\W*(\w+)")


def amounts_asked(query: str, terms: Iterable[str]) -> list[str]:
    """The query terms asking for an amount (a sum of money or a quantity: "budget", "capacity"), which
    a hit lacking the word must hold a value of to be ``high`` (``labels``): "the budget for the Heron
    redesign" is not answered by "The Heron redesign started on 3 February", however close in meaning.
    None of them when the question opens with a word that asks for another kind ("When did clients pay two
    times by mistake?" asks a date; "pay" is its verb)."""
    first = _FIRST_WORD.match(query)
    if first is not None and first.group(1).casefold() in _ASKS_ANOTHER_KIND:
        return []
    return [term for term in terms if kind_of(term) in AMOUNTS]


def lacks_amount(missing: Iterable[str], text: str) -> bool:
    """Whether ``text`` holds no value for one of the ``missing`` amount terms (``amounts_asked``)."""
    return any(not holds(kind, text) for kind in dict.fromkeys(kind_of(term) for term in missing))


def holds(kind: str, text: str) -> bool:
    """Whether ``text`` holds a value of ``kind`` (a number only outside dates, times, versions,
    years and codes: "built 2009" holds no capacity)."""
    if kind == "number":
        text = _NOT_A_QUANTITY.sub(" ", text)
    return VALUES[kind].search(text) is not None
