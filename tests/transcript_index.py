"""The transcript index of a test's store, ranked by BM25 alone: what a transcript test asserts on then
does not move with the vector leg (imported by the test modules that use it as their ``index``)."""

import pytest

from kenning.recall.transcripts import index_for


@pytest.fixture
def index(store):
    store.configure(persist=False, default_mode="bm25")
    return index_for(store)
