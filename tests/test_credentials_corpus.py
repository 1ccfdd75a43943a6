"""The credentials gate over a labelled corpus (tests/data/credentials_corpus.py): at least 98 % of
the fake secrets are caught and at most 1 % of the clean look-alikes are refused."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from kenning.memory.gates.credentials import find_credentials

_SPEC = importlib.util.spec_from_file_location("credentials_corpus", Path(__file__).parent / "data" / "credentials_corpus.py")
corpus_mod = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(corpus_mod)


@pytest.fixture(scope="module")
def corpus():
    items = {item["text"]: item for item in corpus_mod.corpus()}  # a text once, whatever drew it twice
    return list(items.values())


def test_corpus_is_big_and_varied(corpus):
    secrets = [i for i in corpus if i["secret"]]
    clean = [i for i in corpus if not i["secret"]]
    assert len(secrets) >= 300 and len(clean) >= 500
    assert len({i["kind"] for i in secrets}) >= 25
    vendor_kinds = {i["kind"] for i in secrets} & set(corpus_mod.VENDOR)
    assert len(vendor_kinds) >= 25


def test_detection_and_false_positive_rates(corpus):
    secrets = [i for i in corpus if i["secret"]]
    clean = [i for i in corpus if not i["secret"]]
    missed = Counter(i["kind"] for i in secrets if not find_credentials(i["text"]))
    flagged = Counter(i["kind"] for i in clean if find_credentials(i["text"]))
    detection = 1 - sum(missed.values()) / len(secrets)
    false_positives = sum(flagged.values()) / len(clean)
    print(f"\ncredentials corpus: {len(secrets)} secrets, {len(clean)} clean; "
          f"detected {detection:.2%}, false positives {false_positives:.2%}")
    assert detection >= 0.98, f"missed by kind: {dict(missed)}"
    assert false_positives <= 0.01, f"false positives by kind: {dict(flagged)}"
