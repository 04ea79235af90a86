"""The (weighted) mean of the losses of the queries (skrank/losses/_averaging.py).

Query weights give the weighted mean of the per-query losses; constant weights
of any size the unweighted loss; near the largest float the mean overflows
only where a query's loss does.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skrank.losses import LOSSES, ListNetLoss, LogRankLoss
from skrank.utils import QueryLayout


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_weighted_loss_is_the_weighted_mean_of_query_losses(weighted_queries, loss_name):
    X, y, qid, weights, sample_weight, unique = weighted_queries
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
def test_constant_weights_in_prepare_give_the_unweighted_loss(weighted_queries, loss_name, weight):
    X, y, qid, *_ = weighted_queries
    loss = LOSSES[loss_name]()
    scores = np.random.default_rng(1).normal(size=len(y))
    plain = loss.value_and_grad(scores, loss.prepare(y, qid, random_state=0))
    weighted = loss.value_and_grad(
        scores, loss.prepare(y, qid, sample_weight=np.full(len(y), weight), random_state=0))
    assert weighted[0] == plain[0]
    np.testing.assert_array_equal(weighted[1], plain[1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_mean_over_queries_does_not_overflow_where_each_loss_is_finite(eight_queries):
    X, y, qid = eight_queries
    loss = LogRankLoss("likelihood", sampler="exact")
    state = loss.prepare(y, qid)
    s = np.where(y >= 1, -1e307, 1e307)  # every pair out of order by 2e307
    per_query = [loss.value_and_grad(s[qid == q], state, queries=[i])[0]
                 for i, q in enumerate(np.unique(qid))]
    assert np.isfinite(per_query).all() and sum(per_query) == np.inf
    value, _ = loss.value_and_grad(s, state)
    assert_allclose(value, np.sum(np.divide(per_query, 8)), rtol=1e-15)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_weighted_mean_of_losses_near_the_largest_float():
    """The weighted mean is finite where the unweighted one is."""
    loss = ListNetLoss()
    y, qid = np.array([1.0, 0, 1, 0]), np.array([0, 0, 1, 1])
    eight_queries_scores = np.array([-1e308, 1e308, -1e308, 1e308])
    unweighted, _ = loss.value_and_grad(eight_queries_scores, loss.prepare(y, qid))
    state = loss.prepare(y, qid, sample_weight=[1.5, 1.5, 0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weighted, _ = loss.value_and_grad(eight_queries_scores, state)
    assert np.isfinite(unweighted) and weighted == pytest.approx(unweighted, rel=1e-15)
