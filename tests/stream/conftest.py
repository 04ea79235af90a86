"""Fixtures of the stream tests: 80 queries, the 60 of training, a ListNet fitted on them."""

import pytest

from skrank import ListNetRanker, make_ranking

from tests.stream._rankers import quiet, stream_ranker


@pytest.fixture(scope="module")
def stream_data():
    """80 queries of 10 documents (the first 60 for training, the last 20 for validation)."""
    return make_ranking(n_queries=80, n_docs=10, n_features=5, noise=0.5, random_state=0)


@pytest.fixture(scope="module")
def train(stream_data):
    """The first 60 queries."""
    X, y, qid = stream_data
    return X[:600], y[:600], qid[:600]


@pytest.fixture(scope="module")
def fitted_listnet(train):
    """A ListNet of 5 epochs fitted on ``train``."""
    return quiet(stream_ranker(ListNetRanker, max_iter=5).fit, *train[:2], qid=train[2])
