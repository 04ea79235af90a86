"""ListNetLoss (skrank/losses/_listnet.py): known values, and overflow."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import log_softmax, softmax

from skrank.losses import ListNetLoss

from tests._inputs import LARGEST
from tests.losses._random_queries import evaluate, random_queries


# ----------------------------------------------------------------------
# ListNet: known values
def test_listnet_known_value():
    """Two documents: hand-computed cross entropy and P_s - P_y (eq. 2-3)."""
    y = np.array([1.0, 0.0])
    s = np.array([0.0, 0.0])
    value, grad = evaluate(ListNetLoss(), y, s, [7, 7])
    p_y = np.array([np.e, 1.0]) / (np.e + 1.0)
    assert_allclose(value, np.log(2.0), rtol=1e-14)  # -sum p_y log(1/2)
    assert_allclose(grad, 0.5 - p_y, rtol=1e-14)


def test_listnet_matches_scipy_softmax(rng):
    y, s, qid = random_queries(rng)
    value, grad = evaluate(ListNetLoss(), y, s, qid)
    values, expected = [], np.empty_like(s)
    queries = np.unique(qid)
    for q in queries:
        rows = qid == q
        p_y = softmax(y[rows])
        values.append(-(p_y * log_softmax(s[rows])).sum())
        expected[rows] = (softmax(s[rows]) - p_y) / len(queries)
    assert_allclose(value, np.mean(values), rtol=1e-12)
    assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)


def test_listnet_minimum_at_labels():
    """The loss is smallest when the scores equal the labels (up to a shift)."""
    y = np.array([2.0, 1.0, 0.0, 0.0])
    loss = ListNetLoss()
    at_labels, grad = evaluate(loss, y, y + 3.0, np.zeros(4))
    assert_allclose(grad, 0.0, atol=1e-15)
    assert evaluate(loss, y, y[::-1], np.zeros(4))[0] > at_labels


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_listnet_takes_the_loss_from_halved_gaps_where_the_sum_overflows(eight_queries):
    X, y, qid = eight_queries
    loss = ListNetLoss()
    state = loss.prepare(y, qid)
    s = np.full(40, LARGEST)  # every score the largest float: the target's sum overflows
    value, grad = loss.value_and_grad(s, state)
    assert np.isfinite(value) and value >= 0
    # the gradient is exact: uniform top-one probabilities minus the target
    assert_allclose(grad, (0.2 - state.layout.to_rows(state.target)) / 8, atol=1e-17)
