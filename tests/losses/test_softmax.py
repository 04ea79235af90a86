"""The softmax of each query's scores (skrank/losses/_softmax.py), against scipy's."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp, softmax

from skrank.losses._softmax import segment_log_softmax
from skrank.utils import QueryLayout


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e300])
def test_each_query_gets_the_log_sum_exp_and_softmax_of_its_own_scores(rng, scale):
    sizes = [1, 2, 5, 7, 3]
    qid = rng.permutation(np.repeat(np.arange(len(sizes)) * 10 + 3, sizes))
    s = rng.normal(size=qid.size) * scale
    layout = QueryLayout(qid)
    lse, prob = segment_log_softmax(layout.to_sorted(s), layout)
    prob = layout.to_rows(prob)
    assert lse.shape == (len(sizes),)
    for i, q in enumerate(layout.unique_qid):
        rows = qid == q
        assert_allclose(lse[i], logsumexp(s[rows]), rtol=1e-15)
        assert_allclose(prob[rows], softmax(s[rows]), rtol=1e-12, atol=1e-300)


def test_gaps_beyond_the_largest_float_give_probability_zero_without_a_warning():
    layout = QueryLayout([0, 0, 1, 1, 1])
    s = np.array([1.7e308, -1.7e308, 3.0, 4.0, 5.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lse, prob = segment_log_softmax(s, layout)
    assert lse[0] == 1.7e308
    assert_array_equal(prob[:2], [1.0, 0.0])
    assert_allclose(lse[1], logsumexp([3.0, 4.0, 5.0]), rtol=1e-15)
    assert_allclose(prob[2:], softmax([3.0, 4.0, 5.0]), rtol=1e-15)
