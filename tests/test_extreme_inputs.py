"""Extreme and mismatched inputs found by fuzzing: a clear error or a finite, right result.

One section per problem of the campaign (A to H). Every test drives the
reported input on the same small data (8 queries of 5 documents, 3
features) and checks the error's type and message (naming the parameter
and the value received), or that the result is finite and the one the
input means.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

from tests._inputs import THREE_EPOCHS, diverged

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


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


def test_only_the_ratios_of_huge_query_weights_matter(eight_queries):
    X, y, qid = eight_queries
    w = np.repeat([1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0, 1.0], 5)
    small = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid, sample_weight=w)
    huge = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid, sample_weight=w * 5e307)
    assert_allclose(huge.predict(X), small.predict(X), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_query_weights_scale_the_auto_penalty(eight_queries):
    """alpha="auto" is 2 / (total query weight): weights c act as alpha = 2 / (c * n)."""
    X, y, qid = eight_queries
    params = dict(max_iter=50, n_rankings=6, random_state=0)
    weighted = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3))
    assert_allclose(weighted.coef_,
                    LogRankRanker(alpha=2 / (1e3 * 8), **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)
    # a numeric alpha is the other rankers' penalty: constant weights change nothing
    assert_array_equal(
        LogRankRanker(alpha=0.1, **params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3)).coef_,
        LogRankRanker(alpha=0.1, **params).fit(X, y, qid=qid).coef_)
    # weights summing beyond the largest float: no penalty, a finite model
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        huge = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e308))
    assert np.isfinite(huge.coef_).all()
    assert_allclose(huge.coef_, LogRankRanker(alpha=0.0, **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("alpha, weight, blamed", [
    (1e300, None, r"the penalty \(alpha=1e\+300\): an extreme strength .*: lower alpha\.$"),
    ("auto", 1e-300, r"the penalty alpha/2 \|\|w\|\|\^2: alpha='auto' with sample_weight "
                     r"summing to 8e-300 over the training queries gives it the strength 2 / "
                     r"\(total query weight\) = 2\.5e\+299, an extreme strength .*: pass a "
                     r"smaller alpha, or rescale sample_weight \(.*\)\.$"),
])
def test_a_logrank_divergence_blames_alpha_and_the_scale_of_sample_weight(alpha, weight, blamed, eight_queries):
    X, y, qid = eight_queries
    sample_weight = None if weight is None else np.full(40, weight)
    with diverged(LogRankRanker, rf"Likely cause: {blamed}") as info:
        LogRankRanker(max_iter=3, alpha=alpha, random_state=0).fit(X, y, qid=qid, sample_weight=sample_weight)
    # LogRank has neither a learning rate nor a choice of solver
    assert "learning_rate_init" not in str(info.value)
    assert "solver=" not in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("cls, params", [
    # a fixed seed: from about 1 start in 80, L-BFGS's first step lands where
    # every sampled ranking's logit gap saturates, the fit converges without
    # overflowing (to a model that ranks as the scaled fit does) and there is
    # no divergence to blame
    (LogRankRanker, dict(max_iter=3, random_state=0)),
    (ListNetRanker, dict(solver="lbfgs", **THREE_EPOCHS)),
    (ListNetRanker, THREE_EPOCHS),
    (BoltzRankRanker, dict(n_rankings=5, n_init=1, hidden_layer_sizes=(), **THREE_EPOCHS)),
], ids=["LogRank", "ListNet-lbfgs", "ListNet-adam", "BoltzRank-adam"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_divergence_on_huge_features_is_blamed_on_the_scale_of_X(cls, params, sparse, eight_queries):
    import scipy.sparse as sp

    X, y, qid = eight_queries
    X = X * 1e160
    top = f"{np.abs(X).max():.3g}".replace("+", r"\+")
    with diverged(cls, rf"Likely cause: the scale of X \(its largest absolute value is "
                        rf"{top}\): scale the features, e\.g\. with StandardScaler or skrank's "
                        r"QueryNormalizer\.$") as info:
        cls(**params).fit(sp.csr_matrix(X) if sparse else X, y, qid=qid)
    assert "learning_rate_init" not in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("solver", ["lbfgs", "sgd", "adam"])
def test_a_divergence_with_an_extreme_alpha_is_blamed_on_the_penalty(solver, eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, r"Likely cause: the penalty \(alpha=1e\+300\): an extreme "
                                  r"strength .*: lower alpha\.$") as info:
        ListNetRanker(solver=solver, alpha=1e300, **THREE_EPOCHS).fit(X, y, qid=qid)
    assert "learning_rate_init" not in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_divergence_with_a_huge_step_is_blamed_on_the_learning_rate_of_sgd(eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, r"Likely cause: the step size \(learning_rate_init=1e\+200 "
                                  r"with solver='sgd'\): lower learning_rate_init\.$"):
        ListNetRanker(solver="sgd", learning_rate_init=1e200, **THREE_EPOCHS).fit(X, y, qid=qid)


def _with_nan(values, index):
    values = np.array(values, dtype=np.float64)
    values[index] = np.nan
    return values


@pytest.mark.parametrize("X_val, y_val, qid_val, message", [
    (None, "short", None, r"^y_val must have one label per row of X_val \(40\); got 39\.$"),
    (None, "nan", None, r"^Input y_val contains NaN\.$"),
    (None, "inf", None, r"^Input y_val contains infinity"),
    (None, "2d", None, r"^y_val must be a 1-D array of labels; got shape \(40, 2\)\.$"),
    ("nan", None, None, r"^Input X_val contains NaN"),
    ("empty", "empty", "empty", r"^X_val: Found array with 0 sample\(s\) \(shape=\(0, 3\)\)"),
    ("narrow", None, None, r"^X_val has 2 features, but ListNetRanker is expecting 3 features "
                           r"as input \(those of X\)\.$"),
    ("1d", None, None, r"^X_val: Expected 2D array, got 1D array instead"),
    (None, None, "short", r"^qid_val must have one entry per row: expected 40 entries, got 39"),
], ids=["y_val-short", "y_val-nan", "y_val-inf", "y_val-2d", "X_val-nan", "empty", "X_val-narrow",
        "X_val-1d", "qid_val-short"])
def test_validation_set_errors_name_the_validation_set(X_val, y_val, qid_val, message, eight_queries):
    X, y, qid = eight_queries
    X_val = {None: X, "nan": _with_nan(X, (0, 0)), "empty": X[:0], "narrow": X[:, :2],
             "1d": X[:, 0]}[X_val]
    y_val = {None: y, "short": y[:-1], "nan": _with_nan(y, 0), "empty": y[:0],
             "inf": np.where(y > 0, np.inf, 0.0), "2d": np.c_[y, y]}[y_val]
    qid_val = {None: qid, "short": qid[:-1], "empty": qid[:0]}[qid_val]
    with pytest.raises(ValueError, match=message):
        ListNetRanker(max_iter=2).fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)


def test_a_good_validation_set_still_fits(eight_queries):
    X, y, qid = eight_queries
    ranker = ListNetRanker(max_iter=2, random_state=0)
    ranker.fit(X, y, qid=qid, X_val=X, y_val=list(y.astype(object)), qid_val=qid)
    assert len(ranker.validation_scores_) == 2


def test_huge_but_finite_validation_features_do_not_stop_the_fit(eight_queries):
    """Infinite validation scores still rank; only NaN ones are an error."""
    X, y, qid = eight_queries
    model = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid)
    X_val = X.copy()
    X_val[0] = np.sign(model.coef_) * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fitted = ListNetRanker(max_iter=3, random_state=0).fit(
            X, y, qid=qid, X_val=X_val, y_val=y, qid_val=qid
        )
    assert np.isfinite(fitted.coef_).all()
