"""``sample_weight`` in the rankers' fit: query weights, as repeated queries."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    make_ranking,
)
from skrank.losses import LOSSES
from skrank.utils import QueryLayout

RANKERS = {
    "listnet": lambda: ListNetRanker(early_stopping=False, solver="lbfgs", max_iter=60,
                                     random_state=0),
    # closed forms: a repeated query has the same loss as the original (a
    # sampling loss draws other rankings for it, so only its expectation agrees)
    "logrank-convex-auc": lambda: LogRankRanker(objective="convex", metric="auc",
                                                max_iter=200, random_state=0),
    "logrank-mle": lambda: LogRankRanker(objective="likelihood", max_iter=200, random_state=0),
}


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=12, n_docs=(4, 9), n_features=5, noise=0.5,
                             random_state=0)
    weights = np.random.default_rng(0).integers(0, 4, 12)
    weights[:2] = [0, 3]
    unique, inverse = np.unique(qid, return_inverse=True)
    return X, y, qid, weights, weights[inverse], unique


def _repeated(X, y, qid, weights, unique):
    """Each query repeated as often as its weight, under new ids."""
    rows, new_qid = [], []
    for q, w in zip(unique, weights):
        for r in range(w):
            idx = np.flatnonzero(qid == q)
            rows.append(idx)
            new_qid.append(np.full(len(idx), 100 * q + r))
    rows = np.concatenate(rows)
    return X[rows], y[rows], np.concatenate(new_qid)


def _fit(make, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return make().fit(*args, **kwargs)


@pytest.mark.parametrize("name", RANKERS)
def test_integer_query_weights_equal_repeated_queries(data, name):
    X, y, qid, weights, sample_weight, unique = data
    weighted = _fit(RANKERS[name], X, y, qid=qid, sample_weight=sample_weight)
    repeated = _fit(RANKERS[name], *_repeated(X, y, qid, weights, unique)[:2],
                    qid=_repeated(X, y, qid, weights, unique)[2])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", RANKERS)
def test_unit_weights_change_nothing(data, name):
    X, y, qid, *_ = data
    plain = _fit(RANKERS[name], X, y, qid=qid)
    ones = _fit(RANKERS[name], X, y, qid=qid, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(ones.coef_, plain.coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_weighted_loss_is_the_weighted_mean_of_query_losses(data, loss_name):
    X, y, qid, weights, sample_weight, unique = data
    loss = LOSSES[loss_name]()
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    scores = np.random.default_rng(1).normal(size=len(y))
    per_query = []
    for q in range(layout.n_queries):
        positions, _ = layout.select([q])
        rows = positions if layout.order is None else layout.order[positions]
        per_query.append(loss.value_and_grad(scores[rows], state, queries=[q])[0])
    weighted = loss.prepare(y, layout, sample_weight=sample_weight, random_state=0)
    value, grad = loss.value_and_grad(scores, weighted)
    assert value == pytest.approx(np.average(per_query, weights=weights), rel=1e-12)
    # the gradient of each query is scaled by its weight; zero weight, zero gradient
    zero = np.isin(qid, unique[weights == 0])
    assert np.all(grad[zero] == 0.0)


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("weight", [3.0, 1e308, 5e-324])
def test_constant_weights_in_prepare_give_the_unweighted_loss(data, loss_name, weight):
    X, y, qid, *_ = data
    loss = LOSSES[loss_name]()
    scores = np.random.default_rng(1).normal(size=len(y))
    plain = loss.value_and_grad(scores, loss.prepare(y, qid, random_state=0))
    weighted = loss.value_and_grad(
        scores, loss.prepare(y, qid, sample_weight=np.full(len(y), weight), random_state=0))
    assert weighted[0] == plain[0]
    np.testing.assert_array_equal(weighted[1], plain[1])


@pytest.mark.parametrize("bad, error, match", [
    (np.ones(3), ValueError, "sample_weight must be a 1-D array with one weight per row"),
    ("rows", ValueError, "sample_weight must be a 1-D array"),
    (np.linspace(1.0, 2.0, 100), ValueError, "same for all rows of a query"),
    (np.zeros(100), ValueError, "sample_weight is zero for every query"),
    (np.full(100, -1.0), ValueError, "finite and non-negative"),
    (np.full(100, "1"), TypeError, "sample_weight must hold numbers"),
])
def test_prepare_refuses_bad_weights(bad, error, match):
    y, qid = np.tile([1.0, 0.0], 50), np.repeat(np.arange(10), 10)
    with pytest.raises(error, match=match):
        LOSSES["listnet"]().prepare(y, qid, sample_weight=bad)


@pytest.mark.parametrize("make", [
    lambda: ListNetRanker(max_iter=2, random_state=0),
    lambda: SoftRankRanker(max_iter=2, random_state=0),
    lambda: BoltzRankRanker(n_rankings=5, n_init=1, max_iter=2, random_state=0),
    lambda: LogRankRanker(n_rankings=6, max_iter=2, random_state=0),
], ids=["ListNet", "SoftRank", "BoltzRank", "LogRank"])
def test_fit_gives_the_weights_of_its_training_rows_to_prepare(data, make, monkeypatch):
    """The weights reach the loss through ``prepare``; the ranker writes nothing into the state.

    With early stopping, prepare sees only the training queries' rows, and their weights.
    """
    X, y, qid, weights, sample_weight, unique = data
    ranker = make()
    cls = type(ranker._make_loss())
    prepare, calls = cls.prepare, []

    def spy(self, y, layout, **kwargs):
        state = prepare(self, y, layout, **kwargs)
        calls.append((layout, kwargs, state, {k: v.copy() for k, v in state.per_query.items()}))
        return state

    monkeypatch.setattr(cls, "prepare", spy)
    _fit(lambda: ranker, X, y, qid=qid, sample_weight=sample_weight)
    ((layout, kwargs, state, prepared),) = calls
    weight_of = dict(zip(unique, weights))
    np.testing.assert_array_equal(kwargs["sample_weight"], [weight_of[q] for q in layout.qid])
    assert state.per_query.keys() == prepared.keys()
    for key, value in prepared.items():
        np.testing.assert_array_equal(state.per_query[key], value)


def test_weights_varying_within_a_query_are_refused(data):
    X, y, qid, *_ = data
    sample_weight = np.arange(len(y), dtype=float)
    with pytest.raises(ValueError, match="sample_weight .*same for all rows of a query"):
        ListNetRanker().fit(X, y, qid=qid, sample_weight=sample_weight)


@pytest.mark.parametrize("bad, match", [
    (-1.0, "non-negative"), (np.nan, "finite"), (0.0, "zero for every query"),
])
def test_bad_weights_are_refused(data, bad, match):
    X, y, qid, *_ = data
    with pytest.raises(ValueError, match=match):
        ListNetRanker().fit(X, y, qid=qid, sample_weight=np.full(len(y), bad))


def test_boltzrank_and_softrank_accept_query_weights(data):
    X, y, qid, _, sample_weight, _ = data
    for make in (lambda: BoltzRankRanker(n_init=1, max_iter=3, random_state=0),
                 lambda: SoftRankRanker(max_iter=3, early_stopping=False, random_state=0)):
        plain = _fit(make, X, y, qid=qid)
        weighted = _fit(make, X, y, qid=qid, sample_weight=sample_weight)
        assert not np.allclose(weighted.predict(X), plain.predict(X))
