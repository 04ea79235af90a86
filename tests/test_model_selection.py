"""Grouped cross-validation and search: cross_validate_ranker, RankerSearchCV.

Oracles: scikit-learn's ``cross_validate`` / ``GridSearchCV`` on the same
``GroupKFold`` splits (pointwise scorers with routing off, ranking scorers with
routing on), and hand-written loops over the splits calling the metric
functions directly.
"""

import re

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import GroupKFold as SklearnGroupKFold
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import make_pipeline

from skrank.datasets import load_letor, make_ranking
from skrank.metrics import (
    get_ranking_scorer,
    make_ranking_scorer,
    map_score,
    ndcg_score,
    precision_at_k,
)
from skrank.model_selection import (
    RankerRandomizedSearchCV,
    RankerSearchCV,
    cross_validate_ranker,
)
from skrank.model_selection._common import group_folds
from skrank.preprocessing import QueryNormalizer
from skrank.utils import QueryLayout

from tests._folds import GroupKFold  # the folds of skrank's integer cv

N_QUERIES = 40
ALPHAS = [0.01, 1000.0]


@pytest.fixture(scope="module")
def data():
    """40 queries of 5 to 12 documents; noisy labels so metrics are not saturated."""
    return make_ranking(
        n_queries=N_QUERIES, n_docs=(5, 12), n_features=5, noise=1.0, random_state=0
    )


@pytest.fixture(scope="module")
def shuffled(data):
    """The same rows in random order, with string query ids."""
    X, y, qid = data
    perm = np.random.default_rng(1).permutation(len(y))
    return X[perm], y[perm], np.array([f"q{q}" for q in qid])[perm]


class QidRecorder(RegressorMixin, BaseEstimator):
    """Ridge-like least squares whose ``fit`` takes ``qid`` and records it."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y, *, qid=None):
        self.fit_qid_ = None if qid is None else np.array(qid, copy=True)
        self.ridge_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.ridge_.predict(X)


class FailsWithQuery(RegressorMixin, BaseEstimator):
    """Raises in ``fit`` whenever query ``bad_qid`` is in the training rows."""

    def __init__(self, bad_qid=0):
        self.bad_qid = bad_qid

    def fit(self, X, y, *, qid):
        if np.any(np.asarray(qid) == self.bad_qid):
            raise RuntimeError(f"query {self.bad_qid} in training")
        self.ridge_ = Ridge().fit(X, y)
        return self

    def predict(self, X):
        return self.ridge_.predict(X)


def group_splits(X, y, qid, n_splits=5):
    return list(GroupKFold(n_splits=n_splits).split(X, y, groups=qid))


def manual_scores(X, y, qid, splits, metric, *, alpha=1.0, side="test", **kwargs):
    """``metric`` of Ridge(alpha) on one side of each split."""
    scores = []
    for train, test in splits:
        rows = test if side == "test" else train
        pred = Ridge(alpha=alpha).fit(X[train], y[train]).predict(X[rows])
        scores.append(metric(y[rows], pred, qid=qid[rows], **kwargs))
    return np.array(scores)


def assert_queries_whole(qid, train, test):
    assert not set(qid[train]) & set(qid[test])
    np.testing.assert_array_equal(
        np.sort(np.concatenate([train, test])), np.arange(len(qid))
    )


# ----------------------------------------------------------------------------
# cross_validate_ranker: output layout and values
@pytest.mark.parametrize(
    "scoring", ["r2", ["r2"], ["r2", "neg_mean_squared_error"]], ids=str
)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"return_train_score": True},
        {"return_estimator": True, "return_indices": True},
        {"return_train_score": True, "return_estimator": True, "return_indices": True},
    ],
    ids=lambda o: "+".join(o) or "default",
)
def test_same_keys_and_values_as_sklearn_cross_validate(data, scoring, options):
    # Pointwise scorers need no qid, so scikit-learn's cross_validate on the
    # same GroupKFold splits is an oracle for the values too.
    X, y, qid = data
    ours = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring, **options)
    theirs = cross_validate(
        Ridge(), X, y, groups=qid, cv=GroupKFold(5), scoring=scoring, **options
    )
    assert set(ours) == set(theirs)
    for key in theirs:
        if key.startswith(("test_", "train_")):
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-12)
        elif key in ("fit_time", "score_time"):
            assert ours[key].shape == (5,)
            assert np.all(np.isfinite(ours[key])) and np.all(ours[key] >= 0)
    if options.get("return_indices"):
        for side in ("train", "test"):
            for a, b in zip(ours["indices"][side], theirs["indices"][side]):
                np.testing.assert_array_equal(a, b)
    if options.get("return_estimator"):
        for a, b in zip(ours["estimator"], theirs["estimator"]):
            np.testing.assert_allclose(a.coef_, b.coef_)


def test_ranking_scores_equal_manual_group_kfold_loop(data):
    X, y, qid = data
    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, scoring=["ndcg@10", "map"], return_train_score=True
    )
    splits = group_splits(X, y, qid)
    for side in ("test", "train"):
        np.testing.assert_allclose(
            got[f"{side}_ndcg@10"],
            manual_scores(X, y, qid, splits, ndcg_score, side=side, k=10),
        )
        np.testing.assert_allclose(
            got[f"{side}_map"], manual_scores(X, y, qid, splits, map_score, side=side)
        )


def test_default_is_ndcg_at_10_on_five_group_folds(data):
    X, y, qid = data
    got = cross_validate_ranker(Ridge(), X, y, qid=qid)
    assert set(got) == {"fit_time", "score_time", "test_score"}
    expected = manual_scores(X, y, qid, group_splits(X, y, qid), ndcg_score, k=10)
    np.testing.assert_allclose(got["test_score"], expected)


def test_returned_estimators_are_fitted_clones(data):
    X, y, qid = data
    estimator = Ridge(alpha=3.0)
    got = cross_validate_ranker(estimator, X, y, qid=qid, return_estimator=True)
    assert not hasattr(estimator, "coef_")
    assert len({id(e) for e in got["estimator"]}) == 5
    assert all(e is not estimator and e.alpha == 3.0 for e in got["estimator"])


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_folds_keep_queries_whole(data, shuffled, order):
    X, y, qid = data if order == "sorted" else shuffled
    got = cross_validate_ranker(Ridge(), X, y, qid=qid, return_indices=True)
    trains, tests = got["indices"]["train"], got["indices"]["test"]
    assert len(tests) == 5
    for train, test in zip(trains, tests):
        assert_queries_whole(qid, train, test)
    # Every row is tested exactly once.
    np.testing.assert_array_equal(np.sort(np.concatenate(tests)), np.arange(len(y)))
    splits = group_splits(X, y, qid)
    np.testing.assert_allclose(
        got["test_score"], manual_scores(X, y, qid, splits, ndcg_score, k=10)
    )


def test_row_order_does_not_change_scores_of_a_query_partition(data, shuffled):
    # The same queries in each fold give the same fold scores whatever the
    # order of the rows and the spelling of the ids. (GroupKFold's own fold
    # assignment may depend on the ids, so the partition is given explicitly.)
    def splits_by_query(qid):
        fold = np.array([int(str(q).lstrip("q")) % 5 for q in qid])
        return [
            (np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(5)
        ]

    scoring = ["ndcg@10", "map"]
    X, y, qid = data
    a = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=splits_by_query(qid), scoring=scoring
    )
    X, y, qid = shuffled
    b = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=splits_by_query(qid), scoring=scoring
    )
    for name in scoring:
        np.testing.assert_allclose(a[f"test_{name}"], b[f"test_{name}"], rtol=1e-10)


# ----------------------------------------------------------------------------
# cross_validate_ranker: checks and errors
@pytest.mark.filterwarnings("ignore:The groups parameter is ignored")
@pytest.mark.parametrize(
    "cv",
    [
        KFold(5, shuffle=True, random_state=0),
        KFold(3),
        [(np.arange(0, 100), np.arange(100, 200))],
    ],
    ids=["KFold-shuffled", "KFold-3", "iterable"],
)
def test_splitter_that_splits_queries_raises(data, cv):
    X, y, qid = data
    assert qid[99] == qid[100]  # the iterable cuts a query in two
    with pytest.raises(ValueError, match="same query"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, cv=cv)


def test_group_aware_splitter_object_gets_qid_as_groups(data):
    X, y, qid = data
    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=GroupKFold(4), return_indices=True
    )
    expected = list(GroupKFold(4).split(X, y, groups=qid))
    assert len(got["indices"]["test"]) == 4
    for test, (_, expected_test) in zip(got["indices"]["test"], expected):
        np.testing.assert_array_equal(test, expected_test)


@pytest.mark.parametrize(
    "cv, match", [(1, "at least 2"), (0, "at least 2"), (N_QUERIES + 1, "41")]
)
def test_bad_number_of_folds_raises(data, cv, match):
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        cross_validate_ranker(Ridge(), X, y, qid=qid, cv=cv)


def test_as_many_folds_as_queries_is_leave_one_query_out(data):
    X, y, qid = data
    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=N_QUERIES, return_indices=True
    )
    assert [len(set(qid[t])) for t in got["indices"]["test"]] == [1] * N_QUERIES


def test_qid_of_wrong_length_raises(data):
    X, y, qid = data
    n = len(y)
    with pytest.raises(
        ValueError, match=f"qid must have one entry per row: expected {n} entries, got {n - 1}"
    ):
        cross_validate_ranker(Ridge(), X, y, qid=qid[:-1])


def test_y_of_wrong_length_raises(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="y must have one entry per row of X"):
        cross_validate_ranker(Ridge(), X, y[:-1], qid=qid)


def test_qid_inside_params_raises(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="Pass qid as the qid argument, not inside params"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, params={"qid": qid})


def test_error_score_raise_reraises_fit_error(data):
    X, y, qid = data
    with pytest.raises(RuntimeError, match="query 0 in training"):
        cross_validate_ranker(FailsWithQuery(bad_qid=0), X, y, qid=qid)


@pytest.mark.parametrize("error_score", [np.nan, -1.0])
def test_error_score_number_replaces_failed_folds(data, error_score):
    # Query 0 is in the training set of every fold but the one that tests it.
    X, y, qid = data
    with pytest.warns(FitFailedWarning, match="query 0 in training"):
        got = cross_validate_ranker(
            FailsWithQuery(bad_qid=0),
            X,
            y,
            qid=qid,
            error_score=error_score,
            return_indices=True,
            return_train_score=True,
        )
    ok = np.array([0 in qid[test] for test in got["indices"]["test"]])
    assert ok.sum() == 1
    for key in ("test_score", "train_score"):
        np.testing.assert_array_equal(got[key][~ok], np.full(4, error_score))
        assert np.isfinite(got[key][ok]).all()


_GROUPS_CALLS = {
    "cross_validate_ranker": lambda X, y, **kw: cross_validate_ranker(Ridge(), X, y, **kw),
    "RankerSearchCV.fit": lambda X, y, **kw: RankerSearchCV(
        Ridge(), {"alpha": ALPHAS}).fit(X, y, **kw),
    "RankerRandomizedSearchCV.fit": lambda X, y, **kw: RankerRandomizedSearchCV(
        Ridge(), {"alpha": ALPHAS}, n_iter=2, random_state=0).fit(X, y, **kw),
}


@pytest.mark.parametrize("with_qid", [False, True])
@pytest.mark.parametrize("caller", sorted(_GROUPS_CALLS))
def test_groups_instead_of_qid_is_one_type_error(data, caller, with_qid):
    # the searches dropped groups= and then reported qid=None
    X, y, qid = data
    kwargs = {"groups": qid, **({"qid": qid} if with_qid else {})}
    with pytest.raises(TypeError, match=rf"^{re.escape(caller)} takes the query ids as "
                                        r"qid=\.\.\., not groups=\.\.\.: pass qid=<your groups>; "
                                        r"the folds then keep every query whole\.$"):
        _GROUPS_CALLS[caller](X, y, **kwargs)


def test_bad_error_score_raises(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="error_score"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, error_score="ignore")


@pytest.mark.parametrize("error_score", [True, np.False_])
def test_bool_error_score_is_refused(data, error_score):
    # a bool is a numbers.Real; as a score of a failed fold it would read as 1.0 or 0.0
    X, y, qid = data
    with pytest.raises(ValueError, match=rf"^error_score must be 'raise' or a number \(not a "
                                         rf"bool\), got {error_score!r}\.$"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, error_score=error_score)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_fit_taking_qid_receives_training_qid(data, shuffled, order):
    X, y, qid = data if order == "sorted" else shuffled
    got = cross_validate_ranker(
        QidRecorder(), X, y, qid=qid, return_estimator=True, return_indices=True
    )
    for est, train in zip(got["estimator"], got["indices"]["train"]):
        np.testing.assert_array_equal(est.fit_qid_, qid[train])


def test_row_params_are_sliced_with_the_rows(data):
    X, y, qid = data
    weights = np.random.default_rng(2).uniform(0.1, 2.0, len(y))
    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, scoring="r2", params={"sample_weight": weights}
    )
    expected = []
    for train, test in group_splits(X, y, qid):
        est = Ridge().fit(X[train], y[train], sample_weight=weights[train])
        expected.append(r2_score(y[test], est.predict(X[test])))
    np.testing.assert_allclose(got["test_score"], expected)
    unweighted = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring="r2")
    assert not np.allclose(got["test_score"], unweighted["test_score"])


# ----------------------------------------------------------------------------
# cross_validate_ranker: scoring
def ranking_callable(estimator, X, y, *, qid):
    return ndcg_score(y, estimator.predict(X), qid=qid, k=3)


def pointwise_callable(estimator, X, y):
    return r2_score(y, estimator.predict(X))


def test_mixed_list_of_ranking_and_sklearn_names(data):
    X, y, qid = data
    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, scoring=["ndcg@10", "map", "r2"]
    )
    splits = group_splits(X, y, qid)
    assert {k for k in got if k.startswith("test_")} == {
        "test_ndcg@10",
        "test_map",
        "test_r2",
    }
    np.testing.assert_allclose(
        got["test_ndcg@10"], manual_scores(X, y, qid, splits, ndcg_score, k=10)
    )
    np.testing.assert_allclose(
        got["test_map"], manual_scores(X, y, qid, splits, map_score)
    )
    r2 = cross_validate(Ridge(), X, y, groups=qid, cv=GroupKFold(5), scoring="r2")
    np.testing.assert_allclose(got["test_r2"], r2["test_score"])


def test_dict_scoring(data):
    X, y, qid = data
    scoring = {
        "top": "ndcg@5",
        "strict_map": make_ranking_scorer("map", relevance_threshold=2),
        "joint": ranking_callable,
    }
    got = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring)
    splits = group_splits(X, y, qid)
    assert {k for k in got if k.startswith("test_")} == {
        "test_top",
        "test_strict_map",
        "test_joint",
    }
    np.testing.assert_allclose(
        got["test_top"], manual_scores(X, y, qid, splits, ndcg_score, k=5)
    )
    np.testing.assert_allclose(
        got["test_strict_map"],
        manual_scores(X, y, qid, splits, map_score, relevance_threshold=2),
    )
    np.testing.assert_allclose(
        got["test_joint"], manual_scores(X, y, qid, splits, ndcg_score, k=3)
    )


@pytest.mark.parametrize(
    "scoring, metric, kwargs",
    [
        (ranking_callable, ndcg_score, {"k": 3}),
        (pointwise_callable, lambda y, p, qid: r2_score(y, p), {}),
        (get_ranking_scorer("precision@3"), precision_at_k, {"k": 3}),
    ],
    ids=["callable-with-qid", "callable-without-qid", "RankingScorer"],
)
def test_single_callable_scoring(data, scoring, metric, kwargs):
    X, y, qid = data
    got = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring)
    splits = group_splits(X, y, qid)
    np.testing.assert_allclose(
        got["test_score"], manual_scores(X, y, qid, splits, metric, **kwargs)
    )


@pytest.mark.parametrize(
    "scoring, error, match",
    [
        ("bogus", ValueError, "bogus"),
        (["ndcg@10", "bogus"], ValueError, "bogus"),
        ([], ValueError, "one or more"),
        (["map", "map"], ValueError, "duplicate"),
        ({}, ValueError, "empty"),
        (42, TypeError, "42"),
    ],
    ids=str,
)
def test_bad_scoring_raises(data, scoring, error, match):
    X, y, qid = data
    with pytest.raises(error, match=match):
        cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring)


def test_scorer_returning_a_non_number_raises(data):
    X, y, qid = data

    def bad(estimator, X, y, *, qid):
        return "high"

    with pytest.raises(ValueError, match="a number is required"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=bad)


def test_pipeline_with_routing_on(data, metadata_routing):
    # With routing on, a Pipeline routes qid to QueryNormalizer in fit and in
    # predict: the scores equal per-query normalisation done by hand.
    X, y, qid = data
    pipe = make_pipeline(QueryNormalizer(), Ridge())
    with metadata_routing():
        got = cross_validate_ranker(pipe, X, y, qid=qid)
    expected = []
    for train, test in group_splits(X, y, qid):
        ridge = Ridge().fit(
            QueryNormalizer().fit_transform(X[train], qid=qid[train]), y[train]
        )
        X_test = QueryNormalizer().fit_transform(X[test], qid=qid[test])
        expected.append(ndcg_score(y[test], ridge.predict(X_test), qid=qid[test], k=10))
    np.testing.assert_allclose(got["test_score"], expected)
    # With routing off skrank hands qid to the steps itself (issue 29; more in
    # tests/test_pipelines.py): the same scores.
    np.testing.assert_allclose(
        cross_validate_ranker(pipe, X, y, qid=qid)["test_score"], expected, rtol=1e-12
    )


# ----------------------------------------------------------------------------
# RankerSearchCV
def manual_search(X, y, qid, metric, **kwargs):
    splits = group_splits(X, y, qid)
    return np.array(
        [manual_scores(X, y, qid, splits, metric, alpha=a, **kwargs) for a in ALPHAS]
    )


@pytest.mark.parametrize("routing", [False, True])
def test_search_equals_manual_group_kfold(data, routing, metadata_routing):
    X, y, qid = data
    with metadata_routing(routing):
        search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}).fit(X, y, qid=qid)
    expected = manual_search(X, y, qid, ndcg_score, k=10)
    assert expected[0].mean() != pytest.approx(expected[1].mean())
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"], expected.mean(axis=1)
    )
    for i in range(5):
        np.testing.assert_allclose(
            search.cv_results_[f"split{i}_test_score"], expected[:, i]
        )
    best = int(np.argmax(expected.mean(axis=1)))
    assert search.best_params_ == {"alpha": ALPHAS[best]}
    assert search.best_score_ == pytest.approx(expected[best].mean())
    assert search.best_estimator_.alpha == ALPHAS[best]
    assert search.n_splits_ == 5


def test_search_multimetric_refit_map(data):
    X, y, qid = data
    search = RankerSearchCV(
        Ridge(),
        {"alpha": ALPHAS},
        scoring=["ndcg@10", "map"],
        refit="map",
        return_train_score=True,
    ).fit(X, y, qid=qid)
    ndcg = manual_search(X, y, qid, ndcg_score, k=10)
    maps = manual_search(X, y, qid, map_score)
    np.testing.assert_allclose(
        search.cv_results_["mean_test_ndcg@10"], ndcg.mean(axis=1)
    )
    np.testing.assert_allclose(search.cv_results_["mean_test_map"], maps.mean(axis=1))
    assert "mean_train_map" in search.cv_results_
    assert search.best_params_ == {"alpha": ALPHAS[int(np.argmax(maps.mean(axis=1)))]}
    # score uses the refit metric (MAP), not the first one.
    expected = get_ranking_scorer("map")(search.best_estimator_, X, y, qid=qid)
    assert search.score(X, y, qid=qid) == pytest.approx(expected)
    other = get_ranking_scorer("ndcg@10")(search.best_estimator_, X, y, qid=qid)
    assert expected != pytest.approx(other)


@pytest.mark.parametrize(
    "scoring", ["ndcg@5", make_ranking_scorer("map", relevance_threshold=2)]
)
def test_search_score_and_predict_use_best_estimator(data, scoring):
    X, y, qid = data
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring=scoring).fit(
        X, y, qid=qid
    )
    scorer = get_ranking_scorer(scoring)
    assert search.score(X, y, qid=qid) == pytest.approx(
        scorer(search.best_estimator_, X, y, qid=qid)
    )
    np.testing.assert_array_equal(search.predict(X), search.best_estimator_.predict(X))


def test_search_with_sklearn_scorer_name(data):
    X, y, qid = data
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring="r2").fit(X, y, qid=qid)
    grid = GridSearchCV(Ridge(), {"alpha": ALPHAS}, scoring="r2", cv=GroupKFold(5))
    grid.fit(X, y, groups=qid)
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"], grid.cv_results_["mean_test_score"]
    )
    assert search.score(X, y, qid=qid) == pytest.approx(grid.score(X, y))


def test_search_with_sklearn_scorer_name_and_routing_on(data, metadata_routing):
    X, y, qid = data
    with metadata_routing():
        search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring="r2").fit(
            X, y, qid=qid
        )
    routing_off = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring="r2").fit(
        X, y, qid=qid
    )
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"],
        routing_off.cv_results_["mean_test_score"],
    )


@pytest.mark.filterwarnings("ignore:The groups parameter is ignored")
def test_search_splitter_that_splits_queries_raises(data):
    X, y, qid = data
    cv = KFold(5, shuffle=True, random_state=0)
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, cv=cv)
    with pytest.raises(ValueError, match="same query"):
        search.fit(X, y, qid=qid)
    assert search.cv is cv


class LoggingQidRecorder(QidRecorder):
    """QidRecorder that also appends every qid it is fitted with to ``log``."""

    log = []

    def fit(self, X, y, *, qid=None):
        LoggingQidRecorder.log.append(np.array(qid, copy=True))
        return super().fit(X, y, qid=qid)


def test_search_folds_get_training_qid_and_refit_gets_full_qid(shuffled):
    X, y, qid = shuffled
    LoggingQidRecorder.log.clear()
    search = RankerSearchCV(LoggingQidRecorder(), {"alpha": ALPHAS}, n_jobs=None)
    search.fit(X, y, qid=qid)
    splits = group_splits(X, y, qid)
    # n_jobs=None runs the fits in order: candidates x splits, then the refit.
    log = LoggingQidRecorder.log
    assert len(log) == len(ALPHAS) * 5 + 1
    for c in range(len(ALPHAS)):
        for i, (train, _) in enumerate(splits):
            np.testing.assert_array_equal(log[c * 5 + i], qid[train])
    np.testing.assert_array_equal(log[-1], qid)
    np.testing.assert_array_equal(search.best_estimator_.fit_qid_, qid)


@pytest.mark.parametrize("cv", [3, GroupKFold(4)], ids=["int", "GroupKFold"])
def test_search_restores_cv(data, cv):
    X, y, qid = data
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, cv=cv)
    params = search.get_params()
    search.fit(X, y, qid=qid)
    assert search.cv is cv
    assert search.get_params() == params
    assert search.n_splits_ == (cv if isinstance(cv, int) else 4)
    clone(search)  # fitted searches stay cloneable


def test_search_restores_cv_when_fit_fails(data):
    X, y, qid = data
    search = RankerSearchCV(FailsWithQuery(), {"bad_qid": [0, 1]}, cv=4)
    with pytest.raises(RuntimeError, match="in training"):
        search.fit(X, y, qid=qid)
    assert search.cv == 4


# ----------------------------------------------------------------------------
# Routing on: scikit-learn's own tools agree with ours on the same splits
def test_grid_search_with_routing_equals_ranker_search(data, metadata_routing):
    X, y, qid = data
    scorer = get_ranking_scorer("ndcg@10")
    with metadata_routing():
        grid = GridSearchCV(
            Ridge(), {"alpha": ALPHAS}, cv=GroupKFold(5), scoring=scorer
        )
        grid.fit(X, y, qid=qid, groups=qid)
    ours = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring=scorer).fit(X, y, qid=qid)
    for key in ["mean_test_score"] + [f"split{i}_test_score" for i in range(5)]:
        np.testing.assert_allclose(ours.cv_results_[key], grid.cv_results_[key])
    assert ours.best_params_ == grid.best_params_


def test_cross_val_score_with_routing_equals_cross_validate_ranker(data, metadata_routing):
    X, y, qid = data
    scorer = get_ranking_scorer("map")
    with metadata_routing():
        theirs = cross_val_score(
            Ridge(),
            X,
            y,
            cv=GroupKFold(5),
            scoring=scorer,
            params={"qid": qid, "groups": qid},
        )
    ours = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scorer)
    np.testing.assert_allclose(ours["test_score"], theirs)


# ----------------------------------------------------------------------------
# Dask: joblib's dask backend on an in-process cluster (no network needed)
@pytest.fixture(scope="module")
def dask_client(installed):
    distributed = installed("distributed", "dask")
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_cross_validate_ranker_on_dask(data, dask_client):
    import joblib

    X, y, qid = data
    scoring = ["ndcg@10", "map"]
    serial = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring)
    with joblib.parallel_backend("dask"):
        parallel = cross_validate_ranker(
            Ridge(), X, y, qid=qid, scoring=scoring, n_jobs=-1
        )
    for name in scoring:
        np.testing.assert_allclose(parallel[f"test_{name}"], serial[f"test_{name}"])


def test_ranker_search_on_dask(data, dask_client):
    import joblib

    X, y, qid = data
    serial = RankerSearchCV(Ridge(), {"alpha": ALPHAS}).fit(X, y, qid=qid)
    with joblib.parallel_backend("dask"):
        parallel = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, n_jobs=-1).fit(
            X, y, qid=qid
        )
    np.testing.assert_allclose(
        parallel.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )
    assert parallel.best_params_ == serial.best_params_


# ----------------------------------------------------------------------------
# Acceptance: OHSUMED, all 106 queries pooled
def test_ohsumed_pooled_cross_validation(shared_data):
    parts = [
        load_letor(shared_data / "ohsumed" / f"Fold{i}" / "test.txt.gz")
        for i in range(1, 6)
    ]
    qids = [set(p[2]) for p in parts]
    assert all(not a & b for i, a in enumerate(qids) for b in qids[i + 1 :])
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    qid = np.concatenate([p[2] for p in parts])
    assert X.shape == (16140, 45)
    assert len(np.unique(qid)) == 106

    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=5, scoring=["ndcg@10", "map"], return_indices=True
    )
    for name in ("ndcg@10", "map"):
        scores = got[f"test_{name}"]
        assert scores.shape == (5,)
        assert np.all(np.isfinite(scores))
        assert np.all((scores > 0) & (scores <= 1))
    for train, test in zip(got["indices"]["train"], got["indices"]["test"]):
        assert_queries_whole(qid, train, test)


def test_error_score_covers_scoring_failures(data):
    X, y, qid = data

    def failing_scorer(estimator, X, y, *, qid):
        raise ZeroDivisionError("boom")

    with pytest.raises(ZeroDivisionError):
        cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=failing_scorer)
    with pytest.warns(UserWarning, match="Scoring failed"):
        result = cross_validate_ranker(
            Ridge(), X, y, qid=qid, scoring=failing_scorer, error_score=-1.0
        )
    np.testing.assert_array_equal(result["test_score"], -1.0)


def test_sklearn_scorer_objects_work_with_routing_off(data):
    from sklearn.metrics import get_scorer, make_scorer, r2_score

    X, y, qid = data
    expected = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring="r2")["test_score"]
    for scorer in (get_scorer("r2"), make_scorer(r2_score)):
        got = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scorer)
        np.testing.assert_allclose(got["test_score"], expected)
    search = RankerSearchCV(
        Ridge(), {"alpha": ALPHAS}, scoring={"r2": get_scorer("r2"), "ndcg": "ndcg@3"},
        refit="ndcg",
    ).fit(X, y, qid=qid)
    assert np.all(np.isfinite(search.cv_results_["mean_test_r2"]))


def test_boolean_mask_splits_are_accepted(data):
    X, y, qid = data
    first = np.isin(qid, np.unique(qid)[:10])
    result = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=[(~first, first)])
    assert result["test_score"].shape == (1,)


def test_check_disjoint():
    from skrank.utils import QueryLayout
    from skrank.model_selection._common import _check_disjoint

    layout = QueryLayout([1, 1, 2, 2, 3])
    assert _check_disjoint(layout, [0, 1], [2, 3, 4])
    assert not _check_disjoint(layout, [0, 2], [1])


def test_check_disjoint_accepts_boolean_masks():
    from skrank.utils import QueryLayout
    from skrank.model_selection._common import _check_disjoint

    layout = QueryLayout([1, 1, 2, 2, 3])
    train = np.array([True, True, False, False, False])
    assert _check_disjoint(layout, train, ~train)
    other = np.array([False, True, True, False, False])
    assert not _check_disjoint(layout, train, other)


# ----------------------------------------------------------------------
# An integer cv: GroupKFold's folds, the same on every machine
def test_integer_cv_deals_equal_queries_in_a_fixed_order():
    # queries "a", "b", "c" of 2 rows and "d" of 1: largest first, equal sizes
    # in the reverse order of their ids, each to the lightest fold; an
    # unstable sort of the sizes (GroupKFold before scikit-learn sorted
    # stably) could deal "a", "b", "c" in any order, depending on the machine
    qid = np.array(["b", "d", "a", "c", "a", "b", "c"])
    folds = list(group_folds(QueryLayout(qid), 3))
    assert [sorted(set(qid[test])) for _, test in folds] == [["c", "d"], ["b"], ["a"]]
    for train, test in folds:
        assert np.array_equal(np.sort(np.r_[train, test]), np.arange(len(qid)))
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)


@pytest.mark.parametrize("seed", range(20))
def test_integer_cv_gives_groupkfolds_folds_without_ties(seed):
    # with every query of its own size, every GroupKFold deals them alike
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(2, 30))
    sizes = rng.permutation(np.arange(1, n_queries + 1))
    qid = np.repeat(rng.permutation(10 * n_queries)[:n_queries], sizes)
    qid = qid[rng.permutation(len(qid))]
    n_splits = int(rng.integers(2, n_queries + 1))
    ours = list(group_folds(QueryLayout(qid), n_splits))
    theirs = list(SklearnGroupKFold(n_splits).split(np.zeros(len(qid)), groups=qid))
    assert len(ours) == len(theirs) == n_splits
    for (train, test), (train_sk, test_sk) in zip(ours, theirs):
        assert np.array_equal(train, train_sk) and np.array_equal(test, test_sk)


def test_integer_cv_of_the_tools_uses_the_fixed_folds(monkeypatch):
    # not scikit-learn's GroupKFold, whose order of equal queries may vary
    X, y, qid = make_ranking(n_queries=9, n_docs=4, n_features=3, random_state=0)
    expected = cross_validate_ranker(Ridge(), X, y, qid=qid,
                                     cv=list(group_folds(QueryLayout(qid), 3)))

    def unstable(*args, **kwargs):
        raise AssertionError("GroupKFold.split called")

    monkeypatch.setattr(SklearnGroupKFold, "split", unstable)
    result = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=3)
    assert np.array_equal(result["test_score"], expected["test_score"])
    search = RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=3).fit(X, y, qid=qid)
    assert np.array_equal(
        [search.cv_results_[f"split{i}_test_score"][0] for i in range(3)],
        expected["test_score"])


def test_search_takes_groups_none_as_not_given():
    # groups=None (what a caller passing groups=groups may hold) is no grouping
    X, y, qid = make_ranking(n_queries=9, n_docs=4, n_features=3, random_state=0)
    given = RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=3).fit(X, y, qid=qid, groups=None)
    plain = RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=3).fit(X, y, qid=qid)
    assert given.best_score_ == plain.best_score_
