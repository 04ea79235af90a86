"""RankerRandomizedSearchCV: the randomised counterpart of RankerSearchCV."""

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import ParameterSampler

from skrank import ListNetRanker, make_ranking, ndcg_score
from skrank.model_selection import RankerRandomizedSearchCV, RankerSearchCV

from tests._folds import GroupKFold  # the folds of skrank's integer cv

DISTRIBUTIONS = {"alpha": loguniform(1e-3, 1e3)}


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=40, n_docs=(5, 12), n_features=5, noise=1.0,
                             random_state=0)
    perm = np.random.default_rng(1).permutation(len(y))
    return X[perm], y[perm], np.array([f"q{q}" for q in qid])[perm]


@pytest.mark.parametrize("routing", [False, True])
def test_randomized_search_equals_a_manual_loop_over_grouped_folds(data, routing,
                                                                   metadata_routing):
    X, y, qid = data
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


def test_randomized_search_passes_qid_to_a_ranker(data):
    X, y, qid = data
    search = RankerRandomizedSearchCV(
        ListNetRanker(early_stopping=False, max_iter=300, random_state=0),
        {"alpha": loguniform(1e-5, 1e-1)}, n_iter=2, cv=3, random_state=0,
    ).fit(X, y, qid=qid)
    # the refit ranker saw every query: its score needs qid, and agrees with the metric
    assert search.best_estimator_._n_fit_queries == len(np.unique(qid))
    assert search.score(X, y, qid=qid) == pytest.approx(
        ndcg_score(y, search.predict(X), qid=qid, k=10))


def test_randomized_search_agrees_with_grid_search_on_the_same_points(data):
    X, y, qid = data
    grid = RankerSearchCV(Ridge(), {"alpha": [0.1, 10.0]}).fit(X, y, qid=qid)
    rand = RankerRandomizedSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, n_iter=2,
                                    random_state=0).fit(X, y, qid=qid)
    order = np.argsort([p["alpha"] for p in rand.cv_results_["params"]])
    np.testing.assert_allclose(rand.cv_results_["mean_test_score"][order],
                               grid.cv_results_["mean_test_score"])


def test_randomized_search_refuses_a_split_query(data):
    X, y, qid = data
    rows = np.arange(len(y))
    cv = [(rows[: len(y) // 2 + 1], rows[len(y) // 2:])]
    with pytest.raises(ValueError, match="quer"):
        RankerRandomizedSearchCV(clone(Ridge()), DISTRIBUTIONS, n_iter=1, cv=cv).fit(
            X, y, qid=qid)
