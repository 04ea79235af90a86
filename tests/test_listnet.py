"""ListNetRanker and the shared neural fit loop."""

import pickle
import warnings

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
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
def data(all_data):
    X, y, qid, train = all_data
    return X[train], y[train], qid[train]


@pytest.fixture(scope="module")
def test_data(all_data):
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
def test_learns_to_rank(data, test_data, params):
    """Every solver and network ranks held-out queries far better than chance."""
    X, y, qid = data
    ranker = _ranker(**params).fit(X, y, qid=qid)
    X_test, y_test, qid_test = test_data
    shuffled = np.random.default_rng(0).permutation(len(y_test))
    chance = ndcg_score(y_test, shuffled.astype(float), qid=qid_test, k=10)
    assert ranker.score(X_test, y_test, qid=qid_test) > chance + 0.15
    assert ranker.n_iter_ == len(ranker.loss_curve_)
    assert np.isfinite(ranker.loss_curve_).all()


def test_training_loss_decreases(data):
    X, y, qid = data
    ranker = _ranker(early_stopping=False, max_iter=30, tol=0.0)
    with pytest.warns(ConvergenceWarning, match="maximum iterations"):
        ranker.fit(X, y, qid=qid)
    assert ranker.loss_curve_[-1] < 0.8 * ranker.loss_curve_[0]
    assert ranker.validation_scores_ is None
    assert ranker.best_validation_score_ is None


def test_early_stopping_keeps_best_epoch(data):
    X, y, qid = data
    ranker = _ranker(n_iter_no_change=3).fit(X, y, qid=qid)
    assert len(ranker.validation_scores_) == ranker.n_iter_
    assert ranker.best_validation_score_ == max(ranker.validation_scores_)
    # the kept weights are those of the best epoch: re-score the held-out queries
    rng = np.random.RandomState(0)
    n_val = round(0.2 * 40)
    val_queries = np.sort(rng.permutation(40)[:n_val])
    rows = np.isin(qid, np.unique(qid)[val_queries])
    scorer = get_ranking_scorer("ndcg@10")
    assert scorer(ranker, X[rows], y[rows], qid=qid[rows]) == pytest.approx(
        ranker.best_validation_score_, rel=1e-12
    )


def test_lbfgs_with_early_stopping_records_each_iteration(data):
    X, y, qid = data
    ranker = _ranker(solver="lbfgs", n_iter_no_change=2).fit(X, y, qid=qid)
    assert len(ranker.validation_scores_) == ranker.n_iter_ == len(ranker.loss_curve_)
    scores = ranker.validation_scores_
    assert ranker.best_validation_score_ == max(scores)
    # either patience ran out after the best iteration, or L-BFGS converged first
    best = int(np.argmax(scores)) + 1
    assert ranker.n_iter_ == best + 2 or ranker.n_iter_ < best + 2
    val_queries = np.sort(np.random.RandomState(0).permutation(40)[: round(0.2 * 40)])
    rows = np.isin(qid, np.unique(qid)[val_queries])
    scorer = get_ranking_scorer("ndcg@10")
    assert scorer(ranker, X[rows], y[rows], qid=qid[rows]) == pytest.approx(
        ranker.best_validation_score_, rel=1e-12
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_lbfgs_converged_at_start_records_one_point(data):
    X, y, qid = data
    ranker = _ranker(solver="lbfgs", early_stopping=False, warm_start=True).fit(X, y, qid=qid)
    ranker.set_params(tol=1e3).fit(X, y, qid=qid)  # already optimal for this tolerance
    assert ranker.n_iter_ == 1 and len(ranker.loss_curve_) == 1
    assert np.isfinite(ranker.loss_curve_[0])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_single_query_early_stopping_warns_and_uses_training_loss(data):
    X, y, qid = data
    with pytest.warns(UserWarning, match="needs at least 2 queries; got 1"):
        ranker = _ranker().fit(X, y)
    assert ranker.validation_scores_ is None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_labels_the_validation_metric_cannot_score(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="cannot score the labels y: .*negative"):
        _ranker().fit(X, y - 5, qid=qid)
    with pytest.raises(ValueError, match="cannot score the labels y_val"):
        _ranker().fit(X, y, qid=qid, X_val=X, y_val=y - 5, qid_val=qid)
    # ListNet itself accepts any real labels; without early stopping they train
    _ranker(early_stopping=False, max_iter=5).fit(X, y - 5, qid=qid)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_divergence_raises_a_clear_error(data):
    X, y, qid = data
    ranker = _ranker(solver="sgd", learning_rate_init=1e8, momentum=1.0,
                     hidden_layer_sizes=(5, 5), activation="relu")
    with pytest.raises(ValueError, match="diverged. Lower learning_rate_init"):
        ranker.fit(X * 1e50, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_linear_model_has_no_output_bias(data):
    X, y, qid = data
    ranker = _ranker(max_iter=5, n_iter_no_change=5).fit(X, y, qid=qid)
    assert [c.shape for c in ranker.coefs_] == [(6, 1)]
    assert ranker.intercepts_ == []
    assert_allclose(ranker.predict(X), X @ ranker.coefs_[0].ravel())
    deep = _ranker(hidden_layer_sizes=(4, 3), max_iter=2).fit(X, y, qid=qid)
    assert [c.shape for c in deep.coefs_] == [(6, 4), (4, 3), (3, 1)]
    assert [b.shape for b in deep.intercepts_] == [(4,), (3,)]


def test_row_order_does_not_matter(data):
    """Rows are grouped by a stable sort, so shuffling them gives the same model."""
    X, y, qid = data
    perm = np.random.default_rng(1).permutation(len(y))
    a = _ranker(hidden_layer_sizes=(3,)).fit(X, y, qid=qid)
    b = _ranker(hidden_layer_sizes=(3,)).fit(X[perm], y[perm], qid=qid[perm])
    assert_allclose(b.predict(X), a.predict(X), rtol=1e-12)


def test_same_seed_same_model_also_in_parallel(data):
    X, y, qid = data
    params = {"hidden_layer_sizes": (4,), "n_restarts": 3, "random_state": 7}
    a = ListNetRanker(**params).fit(X, y, qid=qid)
    b = ListNetRanker(**params).fit(X, y, qid=qid)
    c = ListNetRanker(**params, n_jobs=2).fit(X, y, qid=qid)
    assert_array_equal(a.predict(X), b.predict(X))
    assert_array_equal(a.predict(X), c.predict(X))
    assert a.loss_curve_ == c.loss_curve_
    other = ListNetRanker(**{**params, "random_state": 8}).fit(X, y, qid=qid)
    assert not np.allclose(other.predict(X), a.predict(X))


def test_restarts_keep_best_validation_score(data, capsys):
    """The kept restart is the one with the best validation score of all runs."""
    X, y, qid = data
    ranker = _ranker(hidden_layer_sizes=(4,), n_restarts=4, n_iter_no_change=3, verbose=1)
    ranker.fit(X, y, qid=qid)
    best = {}
    for line in capsys.readouterr().out.splitlines():
        restart = int(line.split(",")[0].split()[1])
        score = float(line.split("validation ndcg@10 = ")[1].split(",")[0])
        best[restart] = max(best.get(restart, -1.0), score)
    assert sorted(best) == [0, 1, 2, 3]
    assert len(set(best.values())) > 1  # the restarts really differ
    assert ranker.best_validation_score_ == pytest.approx(max(best.values()), abs=1e-4)


def test_pickle_round_trip(data):
    X, y, qid = data
    ranker = _ranker(hidden_layer_sizes=(5,)).fit(X, y, qid=qid)
    clone = pickle.loads(pickle.dumps(ranker))
    assert_array_equal(clone.predict(X), ranker.predict(X))


def test_warm_start_continues_from_current_weights(data):
    X, y, qid = data
    ranker = _ranker(early_stopping=False, max_iter=3, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ranker.fit(X, y, qid=qid)
        first = ranker.loss_curve_
        ranker.fit(X, y, qid=qid)
    assert ranker.loss_curve_[0] < first[0]
    cold = _ranker(early_stopping=False, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold.fit(X, y, qid=qid)
    assert cold.loss_curve_ == first
    ranker.set_params(hidden_layer_sizes=(2,))
    with pytest.raises(ValueError, match="do not match the network"):
        ranker.fit(X, y, qid=qid)


def test_verbose_prints_one_line_per_epoch(data, capsys):
    X, y, qid = data
    ranker = _ranker(verbose=1, max_iter=4, n_iter_no_change=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ranker.fit(X, y, qid=qid)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4
    assert "loss = " in lines[0] and "train ndcg@10" in lines[0]
    assert "validation ndcg@10" in lines[0] and lines[0].endswith(" s")


def test_validation_scoring_map(data):
    X, y, qid = data
    ranker = _ranker(validation_scoring="map", n_iter_no_change=3).fit(X, y, qid=qid)
    assert 0.0 < ranker.best_validation_score_ <= 1.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_qid_none_is_one_query(data):
    X, y, qid = data
    rows = qid == qid[0]
    a = _ranker(early_stopping=False, max_iter=50).fit(X[rows], y[rows])
    b = _ranker(early_stopping=False, max_iter=50).fit(X[rows], y[rows], qid=qid[rows])
    assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X[rows], y[rows]) == b.score(X[rows], y[rows], qid=qid[rows])


@pytest.mark.parametrize(
    "params, fit_qid, match",
    [
        ({"hidden_layer_sizes": (3, 0)}, True, "hidden_layer_sizes must hold positive"),
        ({"validation_scoring": "ndcg@x"}, True, "validation_scoring='ndcg@x'"),
        ({"learning_rate_init": 0.0}, True, "learning_rate_init"),
        ({"learning_rate_decay": 1.5}, True, "learning_rate_decay"),
    ],
)
def test_bad_parameters_raise(data, params, fit_qid, match):
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        ListNetRanker(**params).fit(X, y, qid=qid if fit_qid else None)


def test_bad_qid_raises(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="qid"):
        ListNetRanker().fit(X, y, qid=qid[:-1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_extreme_features_stay_finite(data):
    X, y, qid = data
    ranker = _ranker(learning_rate_init=1.0, max_iter=5).fit(X * 1e4, y, qid=qid)
    assert np.isfinite(ranker.predict(X * 1e4)).all()
    assert np.isfinite(ranker.loss_curve_).all()


def test_ranker_search_cv_routing_off(data):
    X, y, qid = data
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


def test_grid_search_pipeline_with_routing(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline(
            [
                ("scale", StandardScaler()),
                ("rank", _ranker(n_iter_no_change=3).set_fit_request(qid=True)),
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
    ranker = _ranker(hidden_layer_sizes=(16,), n_restarts=2).fit(X, y, qid=qid)
    assert ranker.score(X_test, y_test, qid=qid_test) > ndcg_score(
        y_test, ridge.predict(X_test), qid=qid_test, k=10
    )


def test_explicit_validation_set(data, test_data):
    """X_val replaces the query holdout: all training queries are used."""
    X, y, qid = data
    X_val, y_val, qid_val = test_data
    ranker = _ranker(n_iter_no_change=3).fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    scorer = get_ranking_scorer("ndcg@10")
    assert ranker.best_validation_score_ == pytest.approx(
        scorer(ranker, X_val, y_val, qid=qid_val), rel=1e-12
    )
    holdout = _ranker(n_iter_no_change=3).fit(X, y, qid=qid)
    assert ranker.best_validation_score_ != holdout.best_validation_score_


@pytest.mark.parametrize(
    "params, kwargs, match",
    [
        ({}, {"X_val": "X"}, "X_val and y_val must be given together; got only X_val"),
        ({}, {"qid_val": "short"}, "got only qid_val"),
        ({"early_stopping": False}, {"X_val": "X", "y_val": "y"}, "early_stopping=False"),
        ({}, {"X_val": "X", "y_val": "y", "qid_val": "short"}, "qid_val"),
        ({}, {"X_val": "X1", "y_val": "y"}, "features"),
    ],
)
def test_bad_validation_set_raises(data, params, kwargs, match):
    X, y, qid = data
    values = {"X": X, "y": y, "short": qid[:-1], "X1": X[:, :1]}
    with pytest.raises(ValueError, match=match):
        ListNetRanker(**params).fit(X, y, qid=qid, **{k: values[v] for k, v in kwargs.items()})
