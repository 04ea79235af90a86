"""cross_validate_ranker (skrank/model_selection/_validation.py).

Oracles: scikit-learn's ``cross_validate`` on the same ``GroupKFold`` splits
(pointwise scorers with routing off, ranking scorers with routing on), and
hand-written loops over the splits calling the metric functions directly.
"""

import re

import numpy as np
import pytest
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_score, cross_validate
from sklearn.pipeline import make_pipeline

from skrank.datasets import load_letor
from skrank.metrics import (
    get_ranking_scorer,
    make_ranking_scorer,
    map_score,
    ndcg_score,
    precision_at_k,
)
from skrank.model_selection import RankerRandomizedSearchCV, RankerSearchCV, cross_validate_ranker
from skrank.preprocessing import QueryNormalizer

from tests._folds import GroupKFold  # the folds of skrank's integer cv
from tests._inputs import HUGE
from tests._selection import three_epoch_listnet
from tests.model_selection._estimators import (
    ALPHAS,
    N_QUERIES,
    FailsWithQuery,
    QidRecorder,
    group_splits,
    manual_scores,
)


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
def test_same_keys_and_values_as_sklearn_cross_validate(forty_noisy_queries, scoring, options):
    # Pointwise scorers need no qid, so scikit-learn's cross_validate on the
    # same GroupKFold splits is an oracle for the values too.
    X, y, qid = forty_noisy_queries
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


def test_ranking_scores_equal_manual_group_kfold_loop(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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


def test_default_is_ndcg_at_10_on_five_group_folds(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    got = cross_validate_ranker(Ridge(), X, y, qid=qid)
    assert set(got) == {"fit_time", "score_time", "test_score"}
    expected = manual_scores(X, y, qid, group_splits(X, y, qid), ndcg_score, k=10)
    np.testing.assert_allclose(got["test_score"], expected)


def test_returned_estimators_are_fitted_clones(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    estimator = Ridge(alpha=3.0)
    got = cross_validate_ranker(estimator, X, y, qid=qid, return_estimator=True)
    assert not hasattr(estimator, "coef_")
    assert len({id(e) for e in got["estimator"]}) == 5
    assert all(e is not estimator and e.alpha == 3.0 for e in got["estimator"])


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_folds_keep_queries_whole(forty_noisy_queries, shuffled_queries, order):
    X, y, qid = forty_noisy_queries if order == "sorted" else shuffled_queries
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


def test_row_order_does_not_change_scores_of_a_query_partition(forty_noisy_queries, shuffled_queries):
    # The same queries in each fold give the same fold scores whatever the
    # order of the rows and the spelling of the ids. (GroupKFold's own fold
    # assignment may depend on the ids, so the partition is given explicitly.)
    def splits_by_query(qid):
        fold = np.array([int(str(q).lstrip("q")) % 5 for q in qid])
        return [
            (np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(5)
        ]

    scoring = ["ndcg@10", "map"]
    X, y, qid = forty_noisy_queries
    a = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=splits_by_query(qid), scoring=scoring
    )
    X, y, qid = shuffled_queries
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
def test_splitter_that_splits_queries_raises(forty_noisy_queries, cv):
    X, y, qid = forty_noisy_queries
    assert qid[99] == qid[100]  # the iterable cuts a query in two
    with pytest.raises(ValueError, match="same query"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, cv=cv)


def test_group_aware_splitter_object_gets_qid_as_groups(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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
def test_bad_number_of_folds_raises(forty_noisy_queries, cv, match):
    X, y, qid = forty_noisy_queries
    with pytest.raises(ValueError, match=match):
        cross_validate_ranker(Ridge(), X, y, qid=qid, cv=cv)


def test_as_many_folds_as_queries_is_leave_one_query_out(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    got = cross_validate_ranker(
        Ridge(), X, y, qid=qid, cv=N_QUERIES, return_indices=True
    )
    assert [len(set(qid[t])) for t in got["indices"]["test"]] == [1] * N_QUERIES


def test_qid_of_wrong_length_raises(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    n = len(y)
    with pytest.raises(
        ValueError, match=f"qid must have one entry per row: expected {n} entries, got {n - 1}"
    ):
        cross_validate_ranker(Ridge(), X, y, qid=qid[:-1])


def test_y_of_wrong_length_raises(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    with pytest.raises(ValueError, match="y must have one entry per row of X"):
        cross_validate_ranker(Ridge(), X, y[:-1], qid=qid)


def test_qid_inside_params_raises(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    with pytest.raises(ValueError, match="Pass qid as the qid argument, not inside params"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, params={"qid": qid})


def test_error_score_raise_reraises_fit_error(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    with pytest.raises(RuntimeError, match="query 0 in training"):
        cross_validate_ranker(FailsWithQuery(bad_qid=0), X, y, qid=qid)


@pytest.mark.parametrize("error_score", [np.nan, -1.0])
def test_error_score_number_replaces_failed_folds(forty_noisy_queries, error_score):
    # Query 0 is in the training set of every fold but the one that tests it.
    X, y, qid = forty_noisy_queries
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
def test_groups_instead_of_qid_is_one_type_error(forty_noisy_queries, caller, with_qid):
    # the searches dropped groups= and then reported qid=None
    X, y, qid = forty_noisy_queries
    kwargs = {"groups": qid, **({"qid": qid} if with_qid else {})}
    with pytest.raises(TypeError, match=rf"^{re.escape(caller)} takes the query ids as "
                                        r"qid=\.\.\., not groups=\.\.\.: pass qid=<your groups>; "
                                        r"the folds then keep every query whole\.$"):
        _GROUPS_CALLS[caller](X, y, **kwargs)


def test_bad_error_score_raises(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    with pytest.raises(ValueError, match="error_score"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, error_score="ignore")


@pytest.mark.parametrize("error_score", [True, np.False_])
def test_bool_error_score_is_refused(forty_noisy_queries, error_score):
    # a bool is a numbers.Real; as a score of a failed fold it would read as 1.0 or 0.0
    X, y, qid = forty_noisy_queries
    with pytest.raises(ValueError, match=rf"^error_score must be 'raise' or a number \(not a "
                                         rf"bool\), got {error_score!r}\.$"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, error_score=error_score)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_fit_taking_qid_receives_training_qid(forty_noisy_queries, shuffled_queries, order):
    X, y, qid = forty_noisy_queries if order == "sorted" else shuffled_queries
    got = cross_validate_ranker(
        QidRecorder(), X, y, qid=qid, return_estimator=True, return_indices=True
    )
    for est, train in zip(got["estimator"], got["indices"]["train"]):
        np.testing.assert_array_equal(est.fit_qid_, qid[train])


def test_row_params_are_sliced_with_the_rows(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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


def test_mixed_list_of_ranking_and_sklearn_names(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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


def test_dict_scoring(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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
def test_single_callable_scoring(forty_noisy_queries, scoring, metric, kwargs):
    X, y, qid = forty_noisy_queries
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
def test_bad_scoring_raises(forty_noisy_queries, scoring, error, match):
    X, y, qid = forty_noisy_queries
    with pytest.raises(error, match=match):
        cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring)


def test_scorer_returning_a_non_number_raises(forty_noisy_queries):
    X, y, qid = forty_noisy_queries

    def bad(estimator, X, y, *, qid):
        return "high"

    with pytest.raises(ValueError, match="a number is required"):
        cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=bad)


def test_pipeline_with_routing_on(forty_noisy_queries, metadata_routing):
    # With routing on, a Pipeline routes qid to QueryNormalizer in fit and in
    # predict: the scores equal per-query normalisation done by hand.
    X, y, qid = forty_noisy_queries
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
    # With routing off skrank hands qid to the steps itself (more in
    # tests/test_pipelines.py): the same scores.
    np.testing.assert_allclose(
        cross_validate_ranker(pipe, X, y, qid=qid)["test_score"], expected, rtol=1e-12
    )


def test_cross_val_score_with_routing_equals_cross_validate_ranker(forty_noisy_queries, metadata_routing):
    X, y, qid = forty_noisy_queries
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


def test_cross_validate_ranker_on_dask(forty_noisy_queries, dask_client):
    import joblib

    X, y, qid = forty_noisy_queries
    scoring = ["ndcg@10", "map"]
    serial = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scoring)
    with joblib.parallel_backend("dask"):
        parallel = cross_validate_ranker(
            Ridge(), X, y, qid=qid, scoring=scoring, n_jobs=-1
        )
    for name in scoring:
        np.testing.assert_allclose(parallel[f"test_{name}"], serial[f"test_{name}"])


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


def test_error_score_covers_scoring_failures(forty_noisy_queries):
    X, y, qid = forty_noisy_queries

    def failing_scorer(estimator, X, y, *, qid):
        raise ZeroDivisionError("boom")

    with pytest.raises(ZeroDivisionError):
        cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=failing_scorer)
    with pytest.warns(UserWarning, match="Scoring failed"):
        result = cross_validate_ranker(
            Ridge(), X, y, qid=qid, scoring=failing_scorer, error_score=-1.0
        )
    np.testing.assert_array_equal(result["test_score"], -1.0)


def test_sklearn_scorer_objects_work_with_routing_off(forty_noisy_queries):
    from sklearn.metrics import get_scorer, make_scorer, r2_score

    X, y, qid = forty_noisy_queries
    expected = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring="r2")["test_score"]
    for scorer in (get_scorer("r2"), make_scorer(r2_score)):
        got = cross_validate_ranker(Ridge(), X, y, qid=qid, scoring=scorer)
        np.testing.assert_allclose(got["test_score"], expected)
    search = RankerSearchCV(
        Ridge(), {"alpha": ALPHAS}, scoring={"r2": get_scorer("r2"), "ndcg": "ndcg@3"},
        refit="ndcg",
    ).fit(X, y, qid=qid)
    assert np.all(np.isfinite(search.cv_results_["mean_test_r2"]))


# ----------------------------------------------------------------------------
# groups instead of qid
def test_cross_validate_ranker_with_groups_says_pass_qid(thirty_queries):
    X, y, qid = thirty_queries
    with pytest.raises(TypeError, match="pass qid="):
        cross_validate_ranker(Ridge(), X, y, groups=qid)
    with pytest.raises(ValueError, match=r"^cross_validate_ranker got qid=None, which means all "
                                         r"rows are one query.*one query cannot be split"):
        cross_validate_ranker(Ridge(), X, y)
    with pytest.raises(ValueError, match=r"^RankerSearchCV.fit got qid=None, which means all "
                                         r"rows are one query"):
        RankerSearchCV(Ridge(), {"alpha": [1.0]}).fit(X, y)


# ----------------------------------------------------------------------------
# n_jobs beyond joblib's range
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
def test_huge_n_jobs_of_cross_validate_ranker_is_one_worker_per_fold(value, eight_queries):
    X, y, qid = eight_queries
    got = cross_validate_ranker(three_epoch_listnet(), X, y, qid=qid, cv=2, n_jobs=value)
    expected = cross_validate_ranker(three_epoch_listnet(), X, y, qid=qid, cv=2)
    np.testing.assert_array_equal(got["test_score"], expected["test_score"])
