"""Which steps take qid (skrank/utils/_routing.py), with metadata routing off.

fit_qid_params names the steps of a pipeline that take qid; steps that take
it out of reach are refused.
"""

import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from skrank.model_selection import RankerSearchCV, cross_validate_ranker
from skrank.preprocessing import QueryNormalizer
from skrank.rankers import ListNetRanker
from skrank.utils._routing import fit_qid_params, takes_qid

from tests._data import scaled_queries

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning"
)


N_FOLDS = 3


@pytest.fixture(scope="module")
def data():
    """30 queries whose feature scales differ by query."""
    return scaled_queries(30, seed=0)


def test_fit_qid_params_names_the_steps_that_take_qid(data):
    qid = data[2]
    assert set(fit_qid_params(make_pipeline(QueryNormalizer(), Ridge()), qid)) == {
        "querynormalizer__qid"
    }
    assert set(fit_qid_params(make_pipeline(QueryNormalizer(), ListNetRanker()), qid)) == {
        "querynormalizer__qid", "listnetranker__qid"
    }
    nested = Pipeline([
        ("prep", make_pipeline(StandardScaler(), QueryNormalizer())),
        ("ranker", ListNetRanker()),
    ])
    assert set(fit_qid_params(nested, qid)) == {"prep__querynormalizer__qid", "ranker__qid"}
    assert fit_qid_params(make_pipeline(StandardScaler(), Ridge()), qid) == {}
    assert fit_qid_params(ListNetRanker(), qid).keys() == {"qid"}


class _TransformOnlyQid(TransformerMixin, BaseEstimator):
    """Takes qid in transform, but inherits a fit_transform that does not."""

    def fit(self, X, y=None):
        return self

    def transform(self, X, *, qid=None):
        return X


@pytest.mark.parametrize(
    "pipe, match",
    [
        (
            make_pipeline(
                ColumnTransformer([("norm", QueryNormalizer(), [0, 1])]), Ridge()
            ),
            (r"step 'columntransformer': ColumnTransformer has steps that take qid "
             r"\(norm\).*metadata routing off"),
        ),
        (
            TransformedTargetRegressor(regressor=ListNetRanker()),
            r"TransformedTargetRegressor has steps that take qid \(regressor\)",
        ),
        (
            make_pipeline(_TransformOnlyQid(), Ridge()),
            r"takes qid in transform but not in fit_transform",
        ),
    ],
    ids=["ColumnTransformer", "TransformedTargetRegressor", "transform-only"],
)
def test_unreachable_qid_consumers_are_refused(data, pipe, match):
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        cross_validate_ranker(pipe, X, y, qid=qid, cv=N_FOLDS)
    with pytest.raises(ValueError, match=match):
        RankerSearchCV(pipe, {}, cv=N_FOLDS).fit(X, y, qid=qid)


class _FitTransformQid(TransformerMixin, BaseEstimator):
    """Takes qid in fit_transform only."""

    def fit(self, X, y=None):
        return self

    def fit_transform(self, X, y=None, *, qid=None):
        return X

    def transform(self, X):
        return X


def test_takes_qid_is_the_rule_of_the_pipeline_steps():
    # One rule for the estimator and its steps: fit_transform counts too.
    assert takes_qid(_FitTransformQid())
    assert takes_qid(make_pipeline(_FitTransformQid(), Ridge()))
    assert takes_qid(ListNetRanker())
    assert not takes_qid(make_pipeline(StandardScaler(), Ridge()))
