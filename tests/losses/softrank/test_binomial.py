"""The exact Rank-Binomial recursion (skrank/losses/_softrank/_binomial.py).

Against the enumeration of all contest outcomes; chunks of targets and blocks
of queries equal one pass.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import norm

from skrank.losses import SoftRankLoss
from skrank.losses._softrank import _binomial, _loss

from tests.losses.softrank._queries import EXACT, mean_loss_and_grad, random_queries


def _enumerated(s, sigma):
    """Rank distributions by enumerating all 2^(N-1) contest outcomes (the model)."""
    n = len(s)
    P = np.zeros((n, n))
    for j in range(n):
        others = [i for i in range(n) if i != j]
        pi = norm.cdf((s[others] - s[j]) / (np.sqrt(2.0) * sigma))
        for wins in itertools.product([0, 1], repeat=n - 1):
            wins = np.array(wins, dtype=bool)
            P[j, wins.sum()] += np.prod(np.where(wins, pi, 1.0 - pi))
    return P


# ----------------------------------------------------------------------
# Rank distributions
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_binomial_equals_enumeration_of_contests(rng, n, sigma):
    s = rng.normal(size=n)
    expected = _enumerated(s, sigma)
    for loss in (
        SoftRankLoss(sigma, **EXACT),
        # hybrid with every document exact is the exact model too
        SoftRankLoss(sigma, rank_distribution="hybrid", n_exact=3),
    ):
        assert_allclose(loss.rank_distributions(s)[0], expected, atol=1e-14)


@pytest.mark.parametrize("options", [EXACT, {"rank_distribution": "hybrid", "n_exact": 4}],
                         ids=repr)
def test_targets_in_chunks_equal_one_pass(rng, monkeypatch, options):
    """A memory budget too small for a query's states processes its targets in chunks."""
    y, s, qid = random_queries(rng, [40, 23, 7])
    loss = SoftRankLoss(**options)
    value, grad = mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(_loss, "MEMORY_BUDGET", 2000)  # the blocks of queries
    monkeypatch.setattr(_binomial, "MEMORY_BUDGET", 2000)  # the chunks of targets
    value_c, grad_c = mean_loss_and_grad(loss, y, s, qid)
    assert_allclose(value_c, value, rtol=1e-14)
    assert_allclose(grad_c, grad, rtol=1e-12, atol=1e-17)


@pytest.mark.parametrize("budget", [1, 50, 500, 3000])
def test_rank_binomial_chunks_in_a_block_of_several_queries(rng, monkeypatch, budget):
    """Queries of one block finish at different steps; chunks of targets change nothing."""
    sizes = np.array([20, 19, 17, 16])
    B, W = len(sizes), sizes[0]
    pi = rng.uniform(size=(B, W, W))
    real = np.arange(W) < sizes[:, None]
    pi *= real[:, :, None] & real[:, None, :]
    pi[:, np.arange(W), np.arange(W)] = 0.0
    A = rng.normal(size=(B, W, W))
    P, back = _binomial._rank_binomial(pi, sizes)
    grad = back(A)
    monkeypatch.setattr(_binomial, "MEMORY_BUDGET", budget)
    P_c, back_c = _binomial._rank_binomial(pi, sizes)
    assert_allclose(P_c, P, rtol=1e-15, atol=1e-300)
    assert_allclose(back_c(A), grad, rtol=1e-13, atol=1e-300)
    P_v, none = _binomial._rank_binomial(pi, sizes, need_grad=False)
    assert none is None
    assert_allclose(P_v, P, rtol=1e-15, atol=1e-300)
    for b, n in enumerate(sizes):  # each query's distributions stop at its size
        assert_allclose(P[b, :n].sum(axis=1), 1.0, rtol=1e-13)
        assert (P[b, :n, n:] == 0).all()
