"""``sample_weight`` in the rankers' fit: query weights, as repeated queries."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

WEIGHT_RANKERS = {
    "listnet": lambda: ListNetRanker(early_stopping=False, solver="lbfgs", max_iter=60,
                                     random_state=0),
    # closed forms: a repeated query has the same loss as the original (a
    # sampling loss draws other rankings for it, so only its expectation agrees)
    "logrank-convex-auc": lambda: LogRankRanker(objective="convex", metric="auc",
                                                max_iter=200, random_state=0),
    "logrank-mle": lambda: LogRankRanker(objective="likelihood", max_iter=200, random_state=0),
}


def _repeated_queries(X, y, qid, weights, unique):
    """Each query repeated as often as its weight, under new ids."""
    rows, new_qid = [], []
    for q, w in zip(unique, weights):
        for r in range(w):
            idx = np.flatnonzero(qid == q)
            rows.append(idx)
            new_qid.append(np.full(len(idx), 100 * q + r))
    rows = np.concatenate(rows)
    return X[rows], y[rows], np.concatenate(new_qid)


def _fit_quiet(make, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return make().fit(*args, **kwargs)


@pytest.mark.parametrize("name", WEIGHT_RANKERS)
def test_integer_query_weights_equal_repeated_queries(weighted_queries, name):
    X, y, qid, weights, sample_weight, unique = weighted_queries
    weighted = _fit_quiet(WEIGHT_RANKERS[name], X, y, qid=qid, sample_weight=sample_weight)
    repeated = _fit_quiet(WEIGHT_RANKERS[name], *_repeated_queries(X, y, qid, weights, unique)[:2],
                    qid=_repeated_queries(X, y, qid, weights, unique)[2])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", WEIGHT_RANKERS)
def test_unit_weights_change_nothing(weighted_queries, name):
    X, y, qid, *_ = weighted_queries
    plain = _fit_quiet(WEIGHT_RANKERS[name], X, y, qid=qid)
    ones = _fit_quiet(WEIGHT_RANKERS[name], X, y, qid=qid, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(ones.coef_, plain.coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [
    lambda: ListNetRanker(max_iter=2, random_state=0),
    lambda: SoftRankRanker(max_iter=2, random_state=0),
    lambda: BoltzRankRanker(n_rankings=5, n_init=1, max_iter=2, random_state=0),
    lambda: LogRankRanker(n_rankings=6, max_iter=2, random_state=0),
], ids=["ListNet", "SoftRank", "BoltzRank", "LogRank"])
def test_fit_gives_the_weights_of_its_training_rows_to_prepare(weighted_queries, make, monkeypatch):
    """The weights reach the loss through ``prepare``; the ranker writes nothing into the state.

    With early stopping, prepare sees only the training queries' rows, and their weights.
    """
    X, y, qid, weights, sample_weight, unique = weighted_queries
    ranker = make()
    cls = type(ranker._make_loss())
    prepare, calls = cls.prepare, []

    def spy(self, y, layout, **kwargs):
        state = prepare(self, y, layout, **kwargs)
        calls.append((layout, kwargs, state, {k: v.copy() for k, v in state.per_query.items()}))
        return state

    monkeypatch.setattr(cls, "prepare", spy)
    _fit_quiet(lambda: ranker, X, y, qid=qid, sample_weight=sample_weight)
    ((layout, kwargs, state, prepared),) = calls
    weight_of = dict(zip(unique, weights))
    np.testing.assert_array_equal(kwargs["sample_weight"], [weight_of[q] for q in layout.qid])
    assert state.per_query.keys() == prepared.keys()
    for key, value in prepared.items():
        np.testing.assert_array_equal(state.per_query[key], value)


def test_weights_varying_within_a_query_are_refused(weighted_queries):
    X, y, qid, *_ = weighted_queries
    sample_weight = np.arange(len(y), dtype=float)
    with pytest.raises(ValueError, match="sample_weight .*same for all rows of a query"):
        ListNetRanker().fit(X, y, qid=qid, sample_weight=sample_weight)


@pytest.mark.parametrize("bad, match", [
    (-1.0, "non-negative"), (np.nan, "finite"), (0.0, "zero for every query"),
])
def test_bad_weights_are_refused(weighted_queries, bad, match):
    X, y, qid, *_ = weighted_queries
    with pytest.raises(ValueError, match=match):
        ListNetRanker().fit(X, y, qid=qid, sample_weight=np.full(len(y), bad))


def test_boltzrank_and_softrank_accept_query_weights(weighted_queries):
    X, y, qid, _, sample_weight, _ = weighted_queries
    for make in (lambda: BoltzRankRanker(n_init=1, max_iter=3, random_state=0),
                 lambda: SoftRankRanker(max_iter=3, early_stopping=False, random_state=0)):
        plain = _fit_quiet(make, X, y, qid=qid)
        weighted = _fit_quiet(make, X, y, qid=qid, sample_weight=sample_weight)
        assert not np.allclose(weighted.predict(X), plain.predict(X))
