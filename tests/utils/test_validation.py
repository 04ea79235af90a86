"""Checks of the input (skrank/utils/_validation.py), through every entry point.

Dates and durations as features are named (column, dtype); n_jobs is checked
by check_n_jobs; a failed refit keeps the fitted estimator whole.
"""

import re

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import skrank
from skrank import ListNetRanker, LogRankRanker, QueryNormalizer

from tests._inputs import RANKERS, TWENTY_EPOCHS, fast
from tests._selection import run_tool


# Dates as features
# numpy's DTypePromotionError (a DataFrame with a datetime column) named
# neither X nor the column; a datetime64 array was cast to a count of days.
def _dated(X):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["t"] = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(len(X)), unit="D")
    return frame


def _numeric(X):
    frame = _dated(X)
    frame["t"] = 0.0
    return frame


_DATED = r"^X must hold numbers, but its column 't' has dtype datetime64\[\w+\]\. Dates, times"


def _fitted_on_numbers(cls, X, y, qid):
    return fast(cls).fit(_numeric(X), y, qid=qid)


_RANKER_METHODS = [(cls, method) for cls in RANKERS
                   for method in ("fit", "partial_fit", "predict", "score")
                   if hasattr(fast(cls), method)]  # LogRank has no partial_fit


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls, method", _RANKER_METHODS,
                         ids=[f"{c.__name__}.{m}" for c, m in _RANKER_METHODS])
def test_a_date_column_is_named_by_the_rankers(cls, method, six_queries):
    X, y, qid = six_queries
    with pytest.raises(TypeError, match=_DATED):
        if method in ("fit", "partial_fit"):
            getattr(fast(cls), method)(_dated(X), y, qid=qid)
        elif method == "predict":
            _fitted_on_numbers(cls, X, y, qid).predict(_dated(X), qid=qid)
        else:
            _fitted_on_numbers(cls, X, y, qid).score(_dated(X), y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_date_column_of_the_validation_set_is_named(six_queries):
    X, y, qid = six_queries
    with pytest.raises(TypeError, match=r"^X_val must hold numbers, but its column 't' has "
                                        r"dtype datetime64"):
        fast(ListNetRanker).fit(_numeric(X), y, qid=qid, X_val=_dated(X), y_val=y,
                                 qid_val=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("call", ["QueryNormalizer.fit", "QueryNormalizer.transform",
                                  "cross_validate_ranker", "RankerSearchCV.fit",
                                  "permutation_importance"])
def test_a_date_column_is_named_by_the_other_entry_points(call, six_queries):
    # with an estimator from outside skrank too (Ridge): the check is skrank's own
    X, y, qid = six_queries
    dated = _dated(X)
    calls = {
        "QueryNormalizer.fit": lambda: skrank.QueryNormalizer().fit(dated, qid=qid),
        "QueryNormalizer.transform": lambda: skrank.QueryNormalizer().fit(
            _numeric(X), qid=qid).transform(dated, qid=qid),
        "cross_validate_ranker": lambda: skrank.cross_validate_ranker(
            Ridge(), dated, y, qid=qid, cv=2),
        "RankerSearchCV.fit": lambda: skrank.RankerSearchCV(
            Ridge(), {"alpha": [1.0]}, cv=2).fit(dated, y, qid=qid),
        "permutation_importance": lambda: skrank.inspection.permutation_importance(
            Ridge().fit(_numeric(X), y), dated, y, qid=qid),
    }
    with pytest.raises(TypeError, match=_DATED):
        calls[call]()


def test_date_and_duration_columns_and_arrays_are_named(six_queries):
    X, y, qid = six_queries
    frame = _dated(X)
    frame["d"] = frame["t"] - frame["t"].iloc[0]
    frame["t"] = frame["t"].dt.tz_localize("UTC")
    with pytest.raises(TypeError, match=r"^X must hold numbers, but its columns 't' "
                                        r"\(datetime64\[\w+, UTC\]\), 'd' \(timedelta64\[\w+\]\) "
                                        r"have date, time or duration dtypes\."):
        fast(ListNetRanker).fit(frame, y, qid=qid)
    days = np.datetime64("2020-01-01") + np.arange(len(y)).reshape(-1, 1)
    with pytest.raises(TypeError, match=r"^X must hold numbers, but it is an array of dtype "
                                        r"datetime64\[D\]\."):
        fast(ListNetRanker).fit(days, y, qid=qid)


@pytest.mark.parametrize("kind", ["list", "object array", "timedelta list"])
def test_numpy_dates_in_a_list_or_object_array_are_named(kind, six_queries):
    # scikit-learn would turn them into a count of days without a word
    _, y, qid = six_queries
    if kind == "timedelta list":
        values = [[np.timedelta64(i, "D")] for i in range(len(y))]
    else:
        values = [[np.datetime64("2020-01-01") + i] for i in range(len(y))]
    X = np.array(values, dtype=object) if kind == "object array" else values
    with pytest.raises(TypeError, match=r"^X must hold numbers, but (it holds numpy datetime64 "
                                        r"or timedelta64 values|it is an array of dtype)"):
        fast(ListNetRanker).fit(X, y, qid=qid)


# ----------------------------------------------------------------------------
# keep_fitted_state_on_error: a failed refit keeps the fitted model whole
@pytest.mark.parametrize("make, bad_fit", [
    (lambda: ListNetRanker(**TWENTY_EPOCHS), lambda r, X, y, q: r.fit(X[:, :3], y, qid=q[:-1])),
    (lambda: ListNetRanker(**TWENTY_EPOCHS), lambda r, X, y, q: r.fit(X[:, :3], y, qid=list(q[:-1]) + ["x"])),
    (lambda: LogRankRanker(max_iter=20),
     lambda r, X, y, q: r.set_params(relevance_threshold=99).fit(X[:, :3], y, qid=q)),
    (lambda: QueryNormalizer(), lambda r, X, y, q: r.fit(X[:, :3], qid=q[:-1])),
])
def test_failed_refit_leaves_the_fitted_estimator_intact(thirty_queries, make, bad_fit):
    X, y, qid = thirty_queries
    estimator = make()
    estimator.fit(X, y, qid=qid)
    before = dict(vars(estimator))
    with pytest.raises((ValueError, TypeError)):
        bad_fit(estimator, X, y, qid)
    assert estimator.n_features_in_ == X.shape[1]
    for name, value in before.items():
        if name.endswith("_"):
            np.testing.assert_equal(getattr(estimator, name), value)
    out = estimator.transform(X, qid=qid) if hasattr(estimator, "transform") else\
        estimator.predict(X)
    assert out.shape[0] == X.shape[0]


# ----------------------------------------------------------------------------
# check_n_jobs, through the tools that take n_jobs
def _n_jobs_message(value):
    return (r"^n_jobs must be None or a nonzero int( \(not a bool\))?: the number of "
            rf"joblib workers, or -1 for all CPUs; got n_jobs={re.escape(repr(value))}\.$")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("tool", ["permutation_importance", "cross_validate_ranker"])
def test_huge_negative_n_jobs_is_joblibs_one_worker(tool, eight_queries):
    got = run_tool(tool, eight_queries, n_jobs=-(2**63))
    expected = run_tool(tool, eight_queries)
    key = "importances" if tool == "permutation_importance" else "test_score"
    np.testing.assert_array_equal(got[key], expected[key])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("tool", ["permutation_importance", "cross_validate_ranker"])
def test_n_jobs_0_is_refused_naming_n_jobs(tool, eight_queries):
    with pytest.raises(ValueError, match=_n_jobs_message(0)):
        run_tool(tool, eight_queries, n_jobs=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", [True, False, np.True_, 2.0, "2"])
@pytest.mark.parametrize("tool", ["permutation_importance", "cross_validate_ranker"])
def test_n_jobs_that_is_not_an_int_is_refused_naming_n_jobs(tool, value, eight_queries):
    with pytest.raises(TypeError, match=_n_jobs_message(value)):
        run_tool(tool, eight_queries, n_jobs=value)
