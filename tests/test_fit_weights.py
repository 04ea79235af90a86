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
from skrank.losses._base import QUERY_WEIGHT
from skrank.utils import QueryLayout

RANKERS = {
    "listnet": lambda: ListNetRanker(early_stopping=False, solver="lbfgs", max_iter=60,
                                     random_state=0),
    # closed forms: a repeated query has the same loss as the original (a
    # sampling loss draws other rankings for it, so only its expectation agrees)
    "logrank-convex-auc": lambda: LogRankRanker(objective="convex", gain="auc",
                                                max_iter=200, random_state=0),
    "logrank-mle": lambda: LogRankRanker(objective="mle", max_iter=200, random_state=0),
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
    X, y, qid, weights, _, unique = data
    loss = LOSSES[loss_name]()
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    scores = np.random.default_rng(1).normal(size=len(y))
    per_query = []
    for q in range(layout.n_queries):
        positions, _ = layout.select([q])
        rows = positions if layout.order is None else layout.order[positions]
        per_query.append(loss.value_and_grad(scores[rows], state, queries=[q])[0])
    state.per_query[QUERY_WEIGHT] = weights / weights.mean()
    value, grad = loss.value_and_grad(scores, state)
    assert value == pytest.approx(np.average(per_query, weights=weights), rel=1e-12)
    # the gradient of each query is scaled by its weight; zero weight, zero gradient
    zero = np.isin(qid, unique[weights == 0])
    assert np.all(grad[zero] == 0.0)


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
