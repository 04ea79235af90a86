"""ListNetRanker (skrank/rankers/_listnet.py): what is particular to ListNet.

The fit that every ranker shares is tested in tests/rankers/test_base.py.
"""

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skrank import ListNetRanker, get_ranking_scorer, make_ranking, ndcg_score
from skrank.model_selection import RankerSearchCV


@pytest.fixture(scope="module")
def all_data():
    """60 queries from one generator: 40 to train on, 20 to test on."""
    X, y, qid = make_ranking(n_queries=60, n_docs=12, n_features=6, noise=0.3, random_state=0)
    return X, y, qid, qid < 40


@pytest.fixture(scope="module")
def listnet_data(all_data):
    X, y, qid, train = all_data
    return X[train], y[train], qid[train]


@pytest.fixture(scope="module")
def held_out_data(all_data):
    X, y, qid, train = all_data
    return X[~train], y[~train], qid[~train]


def _ranker(**params):
    params.setdefault("random_state", 0)
    return ListNetRanker(**params)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"solver": "sgd", "learning_rate_init": 0.1},
        {"solver": "sgd", "learning_rate_init": 0.1, "learning_rate_decay": 0.8},
        {"solver": "lbfgs"},
        {"hidden_layer_sizes": (8,)},
        {"hidden_layer_sizes": (8, 4), "activation": "scaled_tanh"},
        {"hidden_layer_sizes": (8,), "activation": "relu", "solver": "lbfgs"},
        {"early_stopping": False, "max_iter": 300},
    ],
    ids=repr,
)
def test_learns_to_rank(listnet_data, held_out_data, params):
    """Every solver and network ranks held-out queries far better than chance."""
    X, y, qid = listnet_data
    ranker = _ranker(**params).fit(X, y, qid=qid)
    X_test, y_test, qid_test = held_out_data
    shuffled = np.random.default_rng(0).permutation(len(y_test))
    chance = ndcg_score(y_test, shuffled.astype(float), qid=qid_test, k=10)
    assert ranker.score(X_test, y_test, qid=qid_test) > chance + 0.15
    assert ranker.n_iter_ == len(ranker.loss_curve_)
    assert np.isfinite(ranker.loss_curve_).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_training_loss_decreases(listnet_data):
    X, y, qid = listnet_data
    ranker = _ranker(early_stopping=False, max_iter=30, tol=0.0).fit(X, y, qid=qid)
    assert ranker.n_iter_ == 30
    assert ranker.loss_curve_[-1] < 0.8 * ranker.loss_curve_[0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_any_real_labels_train_but_the_default_metric_needs_non_negative_ones(listnet_data):
    X, y, qid = listnet_data
    # the ListNet loss accepts any real labels (a softmax of them is the target) ...
    shifted = _ranker(early_stopping=False, max_iter=5).fit(X, y - 5, qid=qid)
    plain = _ranker(early_stopping=False, max_iter=5).fit(X, y, qid=qid)
    # ... and a shift of all labels of a query leaves that softmax unchanged
    assert_allclose(shifted.coef_, plain.coef_, rtol=1e-10, atol=1e-12)
    # but NDCG's exponential gain, monitored by early stopping, does not
    with pytest.raises(ValueError, match="cannot score the labels y: .*negative"):
        _ranker().fit(X, y - 5, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_linear_model_is_coef_without_intercept(listnet_data):
    X, y, qid = listnet_data
    ranker = _ranker(max_iter=5, n_iter_no_change=5).fit(X, y, qid=qid)
    assert ranker.coef_.shape == (6,)
    assert not hasattr(ranker, "coefs_") and not hasattr(ranker, "intercepts_")
    assert_allclose(ranker.predict(X), X @ ranker.coef_, rtol=1e-13)
    deep = _ranker(hidden_layer_sizes=(4, 3), max_iter=2).fit(X, y, qid=qid)
    assert not hasattr(deep, "coef_")
    assert [c.shape for c in deep.coefs_] == [(6, 4), (4, 3), (3, 1)]  # no output bias
    assert [b.shape for b in deep.intercepts_] == [(4,), (3,)]
    h = np.tanh(np.tanh(X @ deep.coefs_[0] + deep.intercepts_[0]) @ deep.coefs_[1]
                + deep.intercepts_[1])
    assert_allclose(deep.predict(X), (h @ deep.coefs_[2]).ravel(), rtol=1e-12)


def test_ranker_search_cv_routing_off(listnet_data):
    X, y, qid = listnet_data
    search = RankerSearchCV(
        _ranker(n_iter_no_change=3),
        {"hidden_layer_sizes": [(), (5,)], "alpha": [1e-4, 1e-1]},
        cv=3,
        scoring="ndcg@10",
    ).fit(X, y, qid=qid)
    assert set(search.cv_results_["param_alpha"]) == {1e-4, 1e-1}
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_score_ > 0.7
    assert search.score(X, y, qid=qid) == pytest.approx(
        ndcg_score(y, search.predict(X), qid=qid, k=10)
    )


def test_grid_search_pipeline_with_routing(listnet_data, metadata_routing):
    """fit requests qid by default: no set_fit_request inside the Pipeline."""
    X, y, qid = listnet_data
    with metadata_routing():
        pipe = Pipeline(
            [
                ("scale", StandardScaler()),
                ("rank", _ranker(n_iter_no_change=3)),
            ]
        )
        search = GridSearchCV(
            pipe,
            {"rank__alpha": [1e-4, 1e-1]},
            cv=GroupKFold(n_splits=3),
            scoring=get_ranking_scorer("ndcg@10"),
        ).fit(X, y, qid=qid, groups=qid)
        manual = []
        for train, test in GroupKFold(n_splits=3).split(X, y, groups=qid):
            est = sklearn.clone(search.best_estimator_).fit(X[train], y[train], qid=qid[train])
            manual.append(ndcg_score(y[test], est.predict(X[test]), qid=qid[test], k=10))
    assert search.best_score_ == pytest.approx(np.mean(manual), rel=1e-12)


def test_beats_pointwise_ridge_on_listwise_data():
    """Non-linear in-query utility: a listwise MLP ranks better than linear Ridge."""
    X, y, qid = make_ranking(
        n_queries=120, n_docs=15, n_features=5, nonlinear=True, noise=0.05, random_state=3
    )
    test = qid >= 80
    X, y, qid, X_test, y_test, qid_test = X[~test], y[~test], qid[~test], X[test], y[test], qid[test]
    ridge = Ridge().fit(X, y)
    ranker = _ranker(hidden_layer_sizes=(16,), n_init=2).fit(X, y, qid=qid)
    assert ranker.score(X_test, y_test, qid=qid_test) > ndcg_score(
        y_test, ridge.predict(X_test), qid=qid_test, k=10
    )
