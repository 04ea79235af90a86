"""Arithmetic of query weights (skrank/rankers/_query_weights.py).

Constant weights of any size give the unweighted model; only the ratios of
huge weights matter; partial_fit weighs each call in the unit of the first.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import BoltzRankRanker, ListNetRanker, SoftRankRanker

from tests._inputs import THREE_EPOCHS
from tests._rankers import N_QUERIES, fast_ranker, fit_quietly, fitted_params


def test_partial_fit_weighs_each_call_in_the_first_call_s_unit(forty_queries):
    """Weights 10 in a later call step 10 times as far as weights 1 (SGD, no momentum, no
    penalty): they are not scaled to mean 1 within their call."""
    from skrank import ListNetRanker

    X, y, qid = forty_queries
    params = dict(solver="sgd", momentum=0.0, alpha=0.0, batch_size=N_QUERIES)
    first, second = qid < 20, qid >= 20
    steps = []
    for weight in (1.0, 10.0):
        ranker = fast_ranker(ListNetRanker, **params).partial_fit(
            X[first], y[first], qid=qid[first], sample_weight=np.ones(first.sum()))
        before = fitted_params(ranker)
        ranker.partial_fit(X[second], y[second], qid=qid[second],
                           sample_weight=np.full(second.sum(), weight))
        steps.append(fitted_params(ranker) - before)
    assert_allclose(steps[1], 10 * steps[0], rtol=1e-10)
    # after a weighted fit, the unit is that fit's mean query weight
    ranker = fit_quietly(fast_ranker(ListNetRanker, max_iter=1, early_stopping=False, **params),
                          X[first], y[first], qid=qid[first],
                          sample_weight=np.full(first.sum(), 150.0))
    before = fitted_params(ranker)
    ranker.partial_fit(X[second], y[second], qid=qid[second],
                       sample_weight=np.full(second.sum(), 150.0))
    assert_allclose(fitted_params(ranker) - before, steps[0], rtol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls, params", [
    (ListNetRanker, {}),
    (SoftRankRanker, {}),
    (BoltzRankRanker, dict(n_rankings=5, n_init=1)),
    (ListNetRanker, dict(solver="lbfgs")),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("weight", [1e308, 1.7976931348623157e308, 1e-300, 5e-324, 3.0])
def test_constant_query_weights_of_any_size_give_the_unweighted_model(cls, params, weight, eight_queries):
    X, y, qid = eight_queries
    plain = cls(**THREE_EPOCHS, **params).fit(X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        weighted = cls(**THREE_EPOCHS, **params).fit(X, y, qid=qid, sample_weight=np.full(40, weight))
    assert_array_equal(weighted.predict(X), plain.predict(X))
    assert weighted.loss_curve_ == plain.loss_curve_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_only_the_ratios_of_huge_query_weights_matter(eight_queries):
    X, y, qid = eight_queries
    w = np.repeat([1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0, 1.0], 5)
    small = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid, sample_weight=w)
    huge = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid, sample_weight=w * 5e307)
    assert_allclose(huge.predict(X), small.predict(X), rtol=1e-12)
