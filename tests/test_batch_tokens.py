"""An import tokenizes each batch at once as codes (retrieval/batch_tokens.py): every text's tokens
and content terms must be ``tokenize`` and ``query_terms`` of it, and the postings grouped from the
codes must be the ones grouped from the token strings (store/lexicon.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kenning.retrieval import batch_tokens
from kenning.retrieval.batch_tokens import BatchTokenizer
from kenning.retrieval.text import query_terms, tokenize
from kenning.store import lexicon

WORDS = ("deploy staging the a of cache warms nightly jenkins runs is not for Über naïve 東京都 c++ x86 v1.2 "
         "api_key zephyr pipeline rotates rotate permission days and or it by . , ! \x00 a.b.c node.js end. "
         "C# ++ _x 3.12.1 Ｆｕｌｌ ﬁle getUserById KESTREL_DB_POOL __init__.py Über_größe").split(" ") + [batch_tokens._SEP, batch_tokens._SEP.upper(), "x" + batch_tokens._SEP]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14))) for _ in range(n)]


def _check(tokenizer: BatchTokenizer, texts: list[str]) -> None:
    coded = tokenizer.encode(texts)
    assert coded.lengths.tolist() == [len(tokenize(t)) for t in texts]
    assert [coded.names[c] for c in coded.codes.tolist()] == [tok for t in texts for tok in tokenize(t)]
    assert coded.terms == [" ".join(query_terms(t)) for t in texts]


@pytest.mark.parametrize("size", [1, 7, 97, 500])
def test_each_text_gets_its_own_tokens_and_terms(size):
    tokenizer = BatchTokenizer()  # one for the import: words learnt in one batch are known in the next
    texts = _texts(2000, seed=size) + ["the a of", "", "!!", "Über the", "the the it", "ASCII only text."]
    for start in range(0, len(texts), size):
        _check(tokenizer, texts[start : start + size])
    _check(tokenizer, [])


def test_ascii_batches_and_a_word_new_twice_in_one_batch():
    _check(BatchTokenizer(), ["alpha beta alpha", "beta gamma alpha", "the gamma", "delta delta delta"] * 50)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_postings_grouped_from_codes_are_those_grouped_from_tokens(seed):
    texts = _texts(300, seed)
    coded = BatchTokenizer().encode(texts)
    owners = np.repeat(np.arange(8000, 8000 + len(texts), dtype=np.int64), coded.lengths)  # across a segment edge
    tokens = [coded.names[c] for c in coded.codes.tolist()]
    from_codes = lexicon._group_codes(coded.codes, coded.names, owners)
    assert list(from_codes.items()) == list(lexicon._group_tokens(tokens, owners).items())  # same order too


@pytest.mark.parametrize("seed", [4, 5])
def test_pieces_of_punctuation_and_word_characters_give_the_regex_words(seed):
    """A batch is cut at the characters no word holds and each piece read as its words (``end.``,
    ``a.b``, ``c++``, ``..``, ``a+b``, ``x#y``): the tokens must be ``tokenize``'s however the word
    characters and ``.+#`` mix, and stay so once a piece is known from an earlier batch."""
    rng = random.Random(seed)
    alphabet = "ab_9.+#.+# -,;:!?\n\t"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16))) for _ in range(3000)]
    tokenizer = BatchTokenizer()
    for start in range(0, len(texts), 250):
        _check(tokenizer, texts[start : start + 250])
    _check(tokenizer, texts[:250])
