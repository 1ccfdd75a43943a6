"""Which kind of value a query word asks for, and whether a text holds one (retrieval/answer_types.py)."""

import pytest

from kenning.retrieval.answer_types import ATTRIBUTES, VALUES, answers_missing, asks_quantity, kind_of
from kenning.retrieval.text import search_tokens


def _missing(words):
    return [t for w in words.split() for t in search_tokens(w)]


@pytest.mark.parametrize("words, text", [
    ("version", "Kestrel runs on Apache Airflow 2.8.1."),
    ("dates", "Family holiday in Lisbon booked for 18–25 October 2025."),
    ("birthday", "Priya's birthday is on March 3."),
    ("deadline", "Expense claims must be filed by 2025-01-31."),
    ("time", "Weekly operations meeting: Mondays 10:00 in the Kilbray Room."),
    ("schedule", "Tally's monthly invoice run starts on the 1st."),
    ("value", "Heather & Hearth contract value: £1.1 million a year."),
    ("budget", "The marketing budget for 2025 is 40,000 euros."),
    ("salary", "On-call pay is GBP 220 per week plus GBP 40 per call-out."),
    ("capacity", "MV Inchmorra Lass is certified for 120 passengers."),
    ("weight", "Biscuit weighs 12 kg."),
    ("height", "MV Corran car deck headroom is 4.6 m."),
    ("length", "The trailer deck is 13.6 m long."),
    ("population", "Kilbray island has a population of about 4,300 people."),
    ("headcount", "Skerrow Line employs 220 staff."),
    ("port", "Chime listens on port 3005 in production."),
    ("port", "The read replica is at pawprint-ro.kvp.internal:1433."),
    ("address", "The Fernhollow office is at Rua da Prata 118, Lisbon."),
    ("hostname", "Berthboard address: berthboard.skerrow.local."),
    ("path", "The signing key is stored in Vault at secret/gatehouse/signing."),
    ("email", "Send invoices to billing@fernhollow.com."),
    ("mobile number", "Callum Reid's mobile is 07700 900118."),
    ("phone", "The Lisbon office's phone is +351 213 4567."),
    ("phone", "Call the harbour office on (555) 123-4567."),
    ("retention", "Backups are kept for 30 days."),
    ("percentage", "Ridley Haulage has a 12% volume discount."),
    ("discount", "Staff travel free on every route."),
    ("id", "Tenant ids: Halvard is t_0007."),
])
def test_a_text_holding_the_value_a_missing_attribute_word_asks_for_answers_it(words, text):
    assert answers_missing(_missing(words), text)


@pytest.mark.parametrize("words, text", [
    ("budget", "The Heron redesign kicks off on 2024-07-01."),  # a date, no sum of money
    ("version", "Tallyho's production API runs on port 8080."),  # a port, no version
    ("version", "Database migrations for kestrel-api use Flyway."),
    ("port", "Mistletoe processes roughly 9,500 HL7 messages a month."),  # a count, no port
    ("email", "Lena Vogt is the product owner for Lantern."),
    ("dates", "I got 8 marks out of 10."),  # "marks" is no month
    ("mobile", "The Heron redesign kicks off on 2024-07-01."),  # a date, no phone number
    ("phone", "MV Corran's IMO number is 9412237 and her call sign is MCRN4."),  # seven digits: a code
    ("capacity", "MV Corran was built in 2009 at Gdansk, engines 6L32, certified 1 March."),  # a year, a code, a date
    ("length", "Vessel MV Brannock: gross tonnage 6,300; built 2004."),  # numbers, none of them a length
    ("length", "Rossness check-in closes 60 minutes before departure."),  # a length is a distance, not a wait
    ("weight", "The WeatherWatch subscription costs £14,000 a year."),
    ("population", "Storm Brianna cancelled all sailings for two days."),
    ("path", "Reviews happen on Mondays and/or Thursdays."),
    ("address", "Credentials reach the containers via Vault."),
    ("retention", "The trailer deck is 13.6 m long."),  # metres, not minutes
    ("staging", "Chime listens on port 3005 in production."),  # names no attribute
    ("owner", "Kestrel runs on Apache Airflow 2.8.1."),
    ("version owner", "Kestrel runs on Apache Airflow 2.8.1."),  # one missing word names no attribute
])
def test_a_text_without_such_a_value_or_a_word_naming_no_attribute_does_not(words, text):
    assert not answers_missing(_missing(words), text)


def test_nothing_missing_is_not_answered_this_way():
    assert not answers_missing([], "Kestrel runs on Apache Airflow 2.8.1.")


def test_every_attribute_word_maps_through_the_search_tokenizer_to_a_kind_with_a_pattern():
    assert set(ATTRIBUTES.values()) <= set(VALUES)
    for word, kind in ATTRIBUTES.items():
        tokens = search_tokens(word)
        assert tokens and kind_of(tokens[0]) is not None, word
    assert kind_of(search_tokens("dates")[0]) == kind_of(search_tokens("date")[0]) == "date"
    assert kind_of(search_tokens("staging")[0]) is None


def test_a_quantity_word_is_asked_even_where_no_text_holds_it_and_other_attributes_are_not():
    assert all(asks_quantity(search_tokens(w)[0]) for w in ("width", "length", "population", "weight", "capacity"))
    assert not any(asks_quantity(search_tokens(w)[0]) for w in ("deadline", "version", "port", "interval"))
