"""The checks of what a loss is given (skrank/losses/_checks.py), with messages naming it.

Through every registered loss (the ``loss`` fixture), and directly.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skrank.losses._checks import _check_finite_vector, _describe
from skrank.utils import QueryLayout

from tests.losses._random_queries import random_queries


def test_rejects_bad_scores_and_labels(loss, rng):
    y, s, qid = random_queries(rng)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    with pytest.raises(ValueError, match="scores must have shape"):
        loss.value_and_grad(s[:-1], state)
    bad = s.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="scores must be finite"):
        loss.value_and_grad(bad, state)
    with pytest.raises(ValueError, match="y must be finite"):
        loss.prepare(np.where(np.arange(y.size) == 0, np.inf, y), layout)
    with pytest.raises(ValueError, match="y must have shape"):
        loss.prepare(y[:-1], layout)
    with pytest.raises(ValueError, match="queries must be distinct"):
        loss.value_and_grad(s[:3], state, [0, 0])


# ----------------------------------------------------------------------------
# The checks themselves
def test_describe_names_the_value_and_its_type():
    assert _describe(None) == "None"
    assert _describe([1, 2]) == "[1, 2] of type list"
    assert _describe({}) == "{} of type dict"
    # a repr too long for a message: the type alone
    assert _describe("x" * 100) == "an object of type str"


def test_a_finite_vector_comes_back_as_float64():
    values = _check_finite_vector("y", [1, 2, 3], 3)
    assert values.dtype == np.float64
    assert_array_equal(values, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("values, error, match", [
    (["a", "b"], TypeError, r"^y must be numeric, got an array of strings"),
    ([1.0, 2.0, 3.0], ValueError,
     r"^y must have shape \(2,\) to match the \(selected\) queries; got \(3,\)\.$"),
    ([[1.0, 2.0]], ValueError,
     r"^y must have shape \(2,\) to match the \(selected\) queries; got \(1, 2\)\.$"),
    ([1.0, np.inf], ValueError, r"^y must be finite; got NaN or infinite values\.$"),
    ([np.nan, 1.0], ValueError, r"^y must be finite; got NaN or infinite values\.$"),
], ids=["text", "long", "2-d", "inf", "nan"])
def test_what_is_no_finite_vector_of_its_length_is_refused_naming_it(values, error, match):
    with pytest.raises(error, match=match):
        _check_finite_vector("y", values, 2)
