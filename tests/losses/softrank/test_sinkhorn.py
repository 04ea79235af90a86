"""Sinkhorn scaling of SoftRank's rank distributions (skrank/losses/_softrank/_sinkhorn.py).

Columns then rows; a bounded count of iterations; memory that does not grow as
N^2 x iterations; an exact gradient through many iterations.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.utils._param_validation import InvalidParameterError

from skrank import SoftRankRanker
from skrank.losses import SoftRankLoss


def test_sinkhorn_makes_rank_columns_sum_to_one(rng):
    s = rng.normal(size=25)
    plain = SoftRankLoss(1.0).rank_distributions(s)[0]
    assert np.abs(plain.sum(axis=0) - 1.0).max() > 0.5  # not doubly stochastic yet
    P = SoftRankLoss(1.0, sinkhorn_iterations=200).rank_distributions(s)[0]
    assert (P >= 0).all()
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)  # each iteration ends on rows
    assert_allclose(P.sum(axis=0), 1.0, atol=1e-8)


def test_sinkhorn_alternates_columns_then_rows(rng):
    s = rng.normal(size=8)
    P = SoftRankLoss().rank_distributions(s)[0]
    for _ in range(3):
        P = P / P.sum(axis=0, keepdims=True)
        P = P / P.sum(axis=1, keepdims=True)
    assert_allclose(SoftRankLoss(sinkhorn_iterations=3).rank_distributions(s)[0], P,
                    rtol=1e-13)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", [10_001, 10**23])
def test_a_huge_sinkhorn_count_is_refused_with_its_bound(value, eight_queries):
    X, y, qid = eight_queries
    message = (r"^The 'sinkhorn_iterations' parameter of {} must be an int \(not a bool\) in "
               rf"the range \[0, 10000\]\. Got {value} instead\.$")
    with pytest.raises(InvalidParameterError, match=message.format("SoftRankRanker")):
        SoftRankRanker(sinkhorn_iterations=value, max_iter=3).fit(X, y, qid=qid)
    with pytest.raises(InvalidParameterError, match=message.format("SoftRankLoss")):
        SoftRankLoss(sinkhorn_iterations=value)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sinkhorn_keeps_vectors_not_matrices_for_the_gradient(rng):
    import tracemalloc

    s = rng.normal(size=100 * 20)
    qid = np.repeat(np.arange(100), 20)
    y = rng.integers(0, 3, size=s.size)
    loss = SoftRankLoss(sinkhorn_iterations=1000)
    state = loss.prepare(y, qid)
    tracemalloc.start()
    try:
        value, grad = loss.value_and_grad(s, state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(value) and np.isfinite(grad).all()
    # the iterates would be 2 x 1000 x 100 x 20 x 20 floats (640 MB); their sums are
    # 2 x 1000 x 100 x 20 (32 MB)
    assert peak < 80e6


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_gradient_through_many_sinkhorn_iterations_is_exact(rng):
    s = rng.normal(size=6)
    y = np.array([0, 1, 2, 0, 1, 3])
    loss = SoftRankLoss(0.5, sinkhorn_iterations=500)
    state = loss.prepare(y, np.zeros(6, dtype=int))
    _, grad = loss.value_and_grad(s, state)
    step = 1e-6
    numeric = [(loss.value_and_grad(s + step * e, state)[0]
                - loss.value_and_grad(s - step * e, state)[0]) / (2 * step) for e in np.eye(6)]
    assert_allclose(grad, numeric, rtol=1e-6, atol=1e-10)
