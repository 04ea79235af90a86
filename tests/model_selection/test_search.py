"""RankerSearchCV and RankerRandomizedSearchCV (skrank/model_selection/_search.py).

Oracles: scikit-learn's ``GridSearchCV`` on the same ``GroupKFold`` splits, and
hand-written loops over the splits calling the metric functions directly.
"""

import re

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.base import clone
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, ParameterSampler
from sklearn.utils._param_validation import InvalidParameterError

from skrank import ListNetRanker
from skrank.datasets import make_ranking
from skrank.metrics import get_ranking_scorer, make_ranking_scorer, map_score, ndcg_score
from skrank.model_selection import RankerRandomizedSearchCV, RankerSearchCV

from tests._folds import GroupKFold  # the folds of skrank's integer cv
from tests._inputs import HUGE, TWENTY_EPOCHS, no_warnings
from tests._selection import SEARCHES, grid_search
from tests.model_selection._estimators import (
    ALPHAS,
    FailsWithQuery,
    QidRecorder,
    group_splits,
    manual_scores,
)


# ----------------------------------------------------------------------------
# RankerSearchCV
def manual_search(X, y, qid, metric, **kwargs):
    splits = group_splits(X, y, qid)
    return np.array(
        [manual_scores(X, y, qid, splits, metric, alpha=a, **kwargs) for a in ALPHAS]
    )


@pytest.mark.parametrize("routing", [False, True])
def test_search_equals_manual_group_kfold(forty_noisy_queries, routing, metadata_routing):
    X, y, qid = forty_noisy_queries
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


def test_search_multimetric_refit_map(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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
def test_search_score_and_predict_use_best_estimator(forty_noisy_queries, scoring):
    X, y, qid = forty_noisy_queries
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring=scoring).fit(
        X, y, qid=qid
    )
    scorer = get_ranking_scorer(scoring)
    assert search.score(X, y, qid=qid) == pytest.approx(
        scorer(search.best_estimator_, X, y, qid=qid)
    )
    np.testing.assert_array_equal(search.predict(X), search.best_estimator_.predict(X))


def test_search_with_sklearn_scorer_name(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, scoring="r2").fit(X, y, qid=qid)
    grid = GridSearchCV(Ridge(), {"alpha": ALPHAS}, scoring="r2", cv=GroupKFold(5))
    grid.fit(X, y, groups=qid)
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"], grid.cv_results_["mean_test_score"]
    )
    assert search.score(X, y, qid=qid) == pytest.approx(grid.score(X, y))


def test_search_with_sklearn_scorer_name_and_routing_on(forty_noisy_queries, metadata_routing):
    X, y, qid = forty_noisy_queries
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
def test_search_splitter_that_splits_queries_raises(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
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


def test_search_folds_get_training_qid_and_refit_gets_full_qid(shuffled_queries):
    X, y, qid = shuffled_queries
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
def test_search_restores_cv(forty_noisy_queries, cv):
    X, y, qid = forty_noisy_queries
    search = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, cv=cv)
    params = search.get_params()
    search.fit(X, y, qid=qid)
    assert search.cv is cv
    assert search.get_params() == params
    assert search.n_splits_ == (cv if isinstance(cv, int) else 4)
    clone(search)  # fitted searches stay cloneable


def test_search_restores_cv_when_fit_fails(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    search = RankerSearchCV(FailsWithQuery(), {"bad_qid": [0, 1]}, cv=4)
    with pytest.raises(RuntimeError, match="in training"):
        search.fit(X, y, qid=qid)
    assert search.cv == 4


# ----------------------------------------------------------------------------
# Routing on: scikit-learn's own tools agree with ours on the same splits
def test_grid_search_with_routing_equals_ranker_search(forty_noisy_queries, metadata_routing):
    X, y, qid = forty_noisy_queries
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


def test_ranker_search_on_dask(forty_noisy_queries, dask_client):
    import joblib

    X, y, qid = forty_noisy_queries
    serial = RankerSearchCV(Ridge(), {"alpha": ALPHAS}).fit(X, y, qid=qid)
    with joblib.parallel_backend("dask"):
        parallel = RankerSearchCV(Ridge(), {"alpha": ALPHAS}, n_jobs=-1).fit(
            X, y, qid=qid
        )
    np.testing.assert_allclose(
        parallel.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )
    assert parallel.best_params_ == serial.best_params_


def test_search_takes_groups_none_as_not_given():
    # groups=None (what a caller passing groups=groups may hold) is no grouping
    X, y, qid = make_ranking(n_queries=9, n_docs=4, n_features=3, random_state=0)
    given = RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=3).fit(X, y, qid=qid, groups=None)
    plain = RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=3).fit(X, y, qid=qid)
    assert given.best_score_ == plain.best_score_


# ----------------------------------------------------------------------------
# RankerRandomizedSearchCV
DISTRIBUTIONS = {"alpha": loguniform(1e-3, 1e3)}


@pytest.fixture(scope="module")
def search_data():
    X, y, qid = make_ranking(n_queries=40, n_docs=(5, 12), n_features=5, noise=1.0,
                             random_state=0)
    perm = np.random.default_rng(1).permutation(len(y))
    return X[perm], y[perm], np.array([f"q{q}" for q in qid])[perm]


@pytest.mark.parametrize("routing", [False, True])
def test_randomized_search_equals_a_manual_loop_over_grouped_folds(search_data, routing,
                                                                   metadata_routing):
    X, y, qid = search_data
    with metadata_routing(routing):
        search = RankerRandomizedSearchCV(Ridge(), DISTRIBUTIONS, n_iter=4, random_state=0)
        search.fit(X, y, qid=qid)
    candidates = list(ParameterSampler(DISTRIBUTIONS, 4, random_state=0))
    assert search.cv_results_["params"] == candidates
    splits = list(GroupKFold(5).split(X, y, groups=qid))
    for c, params in enumerate(candidates):
        scores = []
        for train, test in splits:
            assert not set(qid[train]) & set(qid[test])
            pred = Ridge(**params).fit(X[train], y[train]).predict(X[test])
            scores.append(ndcg_score(y[test], pred, qid=qid[test], k=10))
        assert search.cv_results_["mean_test_score"][c] == pytest.approx(np.mean(scores))
    best = int(np.argmax(search.cv_results_["mean_test_score"]))
    assert search.best_params_ == candidates[best]


def test_randomized_search_passes_qid_to_a_ranker(search_data):
    X, y, qid = search_data
    search = RankerRandomizedSearchCV(
        ListNetRanker(early_stopping=False, max_iter=300, random_state=0),
        {"alpha": loguniform(1e-5, 1e-1)}, n_iter=2, cv=3, random_state=0,
    ).fit(X, y, qid=qid)
    # the refit ranker saw every query: its score needs qid, and agrees with the metric
    assert search.best_estimator_._n_fit_queries == len(np.unique(qid))
    assert search.score(X, y, qid=qid) == pytest.approx(
        ndcg_score(y, search.predict(X), qid=qid, k=10))


def test_randomized_search_agrees_with_grid_search_on_the_same_points(search_data):
    X, y, qid = search_data
    grid = RankerSearchCV(Ridge(), {"alpha": [0.1, 10.0]}).fit(X, y, qid=qid)
    rand = RankerRandomizedSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, n_iter=2,
                                    random_state=0).fit(X, y, qid=qid)
    order = np.argsort([p["alpha"] for p in rand.cv_results_["params"]])
    np.testing.assert_allclose(rand.cv_results_["mean_test_score"][order],
                               grid.cv_results_["mean_test_score"])


def test_randomized_search_refuses_a_split_query(search_data):
    X, y, qid = search_data
    rows = np.arange(len(y))
    cv = [(rows[: len(y) // 2 + 1], rows[len(y) // 2:])]
    with pytest.raises(ValueError, match="quer"):
        RankerRandomizedSearchCV(clone(Ridge()), DISTRIBUTIONS, n_iter=1, cv=cv).fit(
            X, y, qid=qid)


# ----------------------------------------------------------------------------
# Routing on with pointwise scorers
def test_search_with_unset_fit_request_raises_instead_of_dropping_qid(thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    with metadata_routing():
        ranker = ListNetRanker(**TWENTY_EPOCHS).set_fit_request(qid=None)
        with pytest.raises(UnsetMetadataPassedError, match="qid"):
            RankerSearchCV(ranker, {"alpha": [1e-4]}, scoring="r2", cv=3).fit(X, y, qid=qid)
        # a pointwise model with a pointwise scorer still needs no qid request
        search = RankerSearchCV(Ridge(), {"alpha": [1.0]}, scoring="r2", cv=3).fit(X, y,
                                                                                 qid=qid)
    assert np.isfinite(search.best_score_)


def test_search_with_requested_qid_and_pointwise_scorer_trains_per_query(
        thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    context = no_warnings()
    try:
        with metadata_routing():
            RankerSearchCV(ListNetRanker(early_stopping=False, max_iter=500, random_state=0),
                           {"alpha": [1e-4]}, scoring="r2", cv=3).fit(X, y, qid=qid)
    finally:
        context.__exit__(None, None, None)


# ----------------------------------------------------------------------------
# n_jobs, cv, and the methods of a search fitted with refit=False
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("search", SEARCHES)
def test_huge_n_jobs_of_the_searches_is_one_worker_per_fit(search, value, eight_queries):
    X, y, qid = eight_queries
    got = SEARCHES[search](cv=2, n_jobs=value).fit(X, y, qid=qid)
    expected = SEARCHES[search](cv=2).fit(X, y, qid=qid)
    assert got.n_jobs == value  # the parameter is given back after the fit
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"],
                                  expected.cv_results_["mean_test_score"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("search", SEARCHES)
def test_n_jobs_0_of_the_searches_is_refused_naming_n_jobs(search, eight_queries):
    X, y, qid = eight_queries
    message = rf"^The 'n_jobs' parameter of {search} must be .* or None\. Got 0 instead\.$"
    with pytest.raises(InvalidParameterError, match=message):
        SEARCHES[search](cv=2, n_jobs=0).fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("search", SEARCHES)
def test_cv_true_of_the_searches_is_refused_naming_cv(search, eight_queries):
    X, y, qid = eight_queries
    message = rf"^The 'cv' parameter of {search} must be .*\. Got True instead\.$"
    with pytest.raises(InvalidParameterError, match=message):
        SEARCHES[search](cv=True).fit(X, y, qid=qid)


@pytest.fixture(scope="module", params=list(SEARCHES))
def unrefitted(request, eight_queries):
    X, y, qid = eight_queries
    return SEARCHES[request.param](cv=2, refit=False).fit(X, y, qid=qid)


def _refit_message(search, attr):
    return (rf"^This {search} instance was initialized with `refit=False`\. {attr} is "
            r"available only after refitting on the best parameters\. You can refit an "
            r"estimator manually using the `best_params_` attribute$")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_predict_after_refit_false_is_scikit_learns_attribute_error(unrefitted, eight_queries):
    X, _, qid = eight_queries
    name = type(unrefitted).__name__
    assert not hasattr(unrefitted, "predict")
    with pytest.raises(AttributeError, match=rf"^This '{name}' has no attribute "
                                             r"'predict'$") as raised:
        unrefitted.predict(X, qid=qid)
    assert isinstance(raised.value.__cause__, AttributeError)
    assert re.match(_refit_message(name, "predict"), str(raised.value.__cause__))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_score_after_refit_false_is_scikit_learns_attribute_error(unrefitted, eight_queries):
    X, y, qid = eight_queries
    with pytest.raises(AttributeError,
                       match=_refit_message(type(unrefitted).__name__, "score")):
        unrefitted.score(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refit_false_errors_are_those_of_grid_search_cv(eight_queries):
    """The oracle: scikit-learn's GridSearchCV fitted with refit=False."""
    X, y, qid = eight_queries
    ours = grid_search(cv=2, refit=False).fit(X, y, qid=qid)
    theirs = GridSearchCV(Ridge(), {"alpha": [1e-3, 1.0]}, cv=2, refit=False).fit(X, y)

    def errors(search, call):
        with pytest.raises(AttributeError) as raised:
            call(search)
        return [str(e).replace(type(search).__name__, "SEARCH")
                for e in (raised.value, raised.value.__cause__) if e is not None]

    assert errors(ours, lambda s: s.predict(X, qid=qid)) == errors(theirs,
                                                                   lambda s: s.predict(X))
    assert errors(ours, lambda s: s.score(X, y, qid=qid)) == errors(theirs,
                                                                    lambda s: s.score(X, y))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refit_false_search_finds_the_parameters_of_a_refitted_one(unrefitted, eight_queries):
    X, y, qid = eight_queries
    refitted = SEARCHES[type(unrefitted).__name__](cv=2).fit(X, y, qid=qid)
    assert unrefitted.best_params_ == refitted.best_params_
    assert not hasattr(unrefitted, "best_estimator_")
