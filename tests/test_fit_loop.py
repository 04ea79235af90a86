"""The fit loop every ranker shares: early stopping, restarts, warm start, solvers, I/O.

Each test runs over every ranker of :mod:`skrank.rankers`; what is particular
to one loss stays in that ranker's own test module.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GroupKFold as SklearnGroupKFold
from sklearn.model_selection import cross_val_score

import skrank.rankers
from skrank import get_ranking_scorer, ndcg_score

from tests._rankers import (
    ALL_RANKERS,
    N_QUERIES,
    NDCG10,
    fast_ranker,
    fit_quietly,
    fitted_params,
    requires,
    validation_rows,
)


@pytest.fixture
def routing_on():
    """Switch scikit-learn's metadata routing on for one test (restored afterwards)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_single_query_early_stopping_warns_and_uses_training_loss(ranker_class, forty_queries):
    requires(ranker_class, "early_stopping")
    X, y, qid = forty_queries
    X, y = X[qid < 3], y[qid < 3]  # qid=None: one query of 30 documents
    with pytest.warns(UserWarning, match="needs at least 2 queries; got 1"):
        ranker = fast_ranker(ranker_class, max_iter=5).fit(X, y)
    assert ranker.validation_scores_ is None and ranker.best_validation_score_ is None


def test_scoring_names_the_monitored_metric(ranker_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, scoring="map").fit(X, y, qid=qid)
    rows = validation_rows(qid)
    assert ranker.best_validation_score_ == pytest.approx(
        get_ranking_scorer("map")(ranker, X[rows], y[rows], qid=qid[rows]), rel=1e-12
    )
    assert ranker.best_validation_score_ != pytest.approx(NDCG10(ranker, X[rows], y[rows],
                                                                 qid=qid[rows]))


# ----------------------------------------------------------------------
# Warm start
def test_warm_start_continues_from_the_current_weights(ranker_class, forty_queries, captured_runs):
    X, y, qid = forty_queries
    ranker = fit_quietly(fast_ranker(ranker_class, early_stopping=False, max_iter=5, warm_start=True),
                          X, y, qid=qid)
    before, first_curve = fitted_params(ranker), ranker.loss_curve_
    fit_quietly(ranker.set_params(max_iter=1, n_init=3), X, y, qid=qid)
    (start,) = captured_runs["starts"]  # one run (n_init is ignored), from the fitted weights
    assert_array_equal(start, before)
    step = np.linalg.norm(fitted_params(ranker) - before)
    assert 0 < step < 0.2 * np.linalg.norm(before)  # one more epoch: a small change
    assert ranker.loss_curve_[0] < first_curve[-1]  # the objective goes on decreasing
    cold = fit_quietly(fast_ranker(ranker_class, early_stopping=False, max_iter=1), X, y, qid=qid)
    assert np.linalg.norm(fitted_params(cold) - before) > 3 * step


def test_warm_start_after_averaged_restarts_keeps_the_wide_network(ranker_class, forty_queries, captured_runs):
    X, y, qid = forty_queries
    ranker = fit_quietly(
        fast_ranker(ranker_class, hidden_layer_sizes=(3,), n_init=2, restarts="average",
              early_stopping=False, max_iter=5, warm_start=True),
        X, y, qid=qid,
    )
    assert [c.shape for c in ranker.coefs_] == [(5, 6), (6, 1)]
    before, scores_before = fitted_params(ranker), ranker.predict(X)
    fit_quietly(ranker.set_params(max_iter=1), X, y, qid=qid)
    assert [c.shape for c in ranker.coefs_] == [(5, 6), (6, 1)]
    assert_array_equal(captured_runs["starts"][0], before)
    assert 0 < np.abs(ranker.predict(X) - scores_before).max() < 0.2 * np.ptp(scores_before)


@pytest.mark.parametrize(
    "fitted, asked, match",
    [
        ((), (2,),
         r"continues the fitted linear network, but hidden_layer_sizes=\(2,\) asks for an MLP"),
        ((3,), (),
         r"continues the fitted MLP network, but hidden_layer_sizes=\(\) asks for a linear"),
    ],
    ids=["linear to MLP", "MLP to linear"],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_warm_start_with_another_kind_of_network_raises(ranker_class, forty_queries, fitted, asked, match):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, hidden_layer_sizes=fitted, early_stopping=False, max_iter=2,
                   warm_start=True)
    ranker.fit(X, y, qid=qid).set_params(hidden_layer_sizes=asked)
    with pytest.raises(ValueError, match=match):
        ranker.fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refit_with_another_network_drops_the_old_attributes(ranker_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, hidden_layer_sizes=(3,), early_stopping=False, max_iter=2)
    ranker.fit(X, y, qid=qid).set_params(hidden_layer_sizes=()).fit(X, y, qid=qid)
    assert ranker.coef_.shape == (5,)
    assert not hasattr(ranker, "coefs_") and not hasattr(ranker, "intercepts_")
    ranker.set_params(hidden_layer_sizes=(2,)).fit(X, y, qid=qid)
    assert [c.shape for c in ranker.coefs_] == [(5, 2), (2, 1)]
    assert not hasattr(ranker, "coef_")


# ----------------------------------------------------------------------
# An explicit validation set
def test_explicit_validation_set(ranker_class, forty_queries, other_queries, captured_runs):
    """X_val replaces the query holdout: all queries of X train, validation_fraction is ignored."""
    X, y, qid = forty_queries
    X_val, y_val, qid_val = other_queries
    ranker = fast_ranker(ranker_class, validation_fraction=0.5)
    ranker.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    assert captured_runs["objective"].n_queries == N_QUERIES
    assert captured_runs["objective"].state.layout.n_samples == len(y)
    assert len(ranker.validation_scores_) == ranker.n_iter_
    assert ranker.best_validation_score_ == max(ranker.validation_scores_)
    assert ranker.best_validation_score_ == pytest.approx(
        NDCG10(ranker, X_val, y_val, qid=qid_val), rel=1e-12
    )


@pytest.mark.parametrize(
    "params, given, match",
    [
        ({}, ["X_val"], "X_val and y_val must be given together; got only X_val."),
        ({}, ["y_val"], "X_val and y_val must be given together; got only y_val."),
        ({}, ["qid_val"], "X_val and y_val must be given together; got only qid_val."),
        ({}, ["X_val", "qid_val"], "got only X_val, qid_val."),
        ({"early_stopping": False}, ["X_val", "y_val"],
         r"X_val/y_val are used for early stopping only; got them with early_stopping=False."),
        ({}, ["X_val", "y_val", "short qid_val"],
         "qid_val must have one entry per row: expected 100 entries, got 99."),
        ({}, ["narrow X_val", "y_val"],
         r"^X_val has 1 features, but .* is expecting 5 features as input \(those of X\)\.$"),
    ],
)
def test_bad_validation_set_raises(ranker_class, forty_queries, other_queries, params, given, match):
    requires(ranker_class, "early_stopping")
    X, y, qid = forty_queries
    X_val, y_val, qid_val = other_queries
    values = {
        "X_val": ("X_val", X_val), "y_val": ("y_val", y_val), "qid_val": ("qid_val", qid_val),
        "short qid_val": ("qid_val", qid_val[:-1]), "narrow X_val": ("X_val", X_val[:, :1]),
    }
    kwargs = dict(values[name] for name in given)
    with pytest.raises(ValueError, match=match):
        fast_ranker(ranker_class, **params).fit(X, y, qid=qid, **kwargs)


def test_validation_labels_the_metric_cannot_score(ranker_class, forty_queries, other_queries):
    requires(ranker_class, "early_stopping")
    X, y, qid = forty_queries
    X_val, y_val, qid_val = other_queries
    match = "cannot score the labels y_val: y_true has negative labels"
    with pytest.raises(ValueError, match=match):
        fast_ranker(ranker_class).fit(X, y, qid=qid, X_val=X_val, y_val=y_val - 5, qid_val=qid_val)


# ----------------------------------------------------------------------
# Same input, same model
@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_same_random_state_same_model(ranker_class, forty_queries, hidden):
    X, y, qid = forty_queries
    a = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    b = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    assert_array_equal(fitted_params(a), fitted_params(b))
    assert a.loss_curve_ == b.loss_curve_
    other = fast_ranker(ranker_class, hidden_layer_sizes=hidden, random_state=1).fit(X, y, qid=qid)
    assert not np.allclose(fitted_params(other), fitted_params(a))


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_row_order_does_not_matter(ranker_class, forty_queries, hidden):
    """Rows are grouped by a stable sort, so shuffled rows give the same model."""
    X, y, qid = forty_queries
    perm = np.random.RandomState(1).permutation(len(y))
    if ranker_class()._make_loss().sampling:
        # a sampling loss draws per place in the query: keep each query's row
        # order and interleave the queries (reordering a query draws anew)
        slots = qid[perm]  # the query of each new place; its rows fill them in order
        perm = np.empty(len(y), dtype=int)
        for q in np.unique(qid):
            perm[slots == q] = np.flatnonzero(qid == q)
    a = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    b = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X[perm], y[perm], qid=qid[perm])
    assert a.n_iter_ == b.n_iter_
    # the order of the rows inside a query changes sums at the rounding level only
    assert_allclose(fitted_params(b), fitted_params(a), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_sparse_X_gives_the_dense_model(ranker_class, forty_queries, hidden):
    X, y, qid = forty_queries
    X = X * (np.random.RandomState(0).random_sample(X.shape) < 0.6)
    dense = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    sparse = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(sp.csr_matrix(X), y, qid=qid)
    assert sparse.n_iter_ == dense.n_iter_
    assert_allclose(fitted_params(sparse), fitted_params(dense), rtol=1e-10, atol=1e-13)
    assert_allclose(sparse.predict(sp.csr_matrix(X)), dense.predict(X), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_pickle_round_trip(ranker_class, forty_queries, hidden):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    clone = pickle.loads(pickle.dumps(ranker))
    assert_array_equal(clone.predict(X), ranker.predict(X))
    assert clone.get_params() == ranker.get_params()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_qid_none_is_one_query(ranker_class, forty_queries):
    X, y, qid = forty_queries
    rows = qid == qid[0]
    a = fast_ranker(ranker_class, early_stopping=False, max_iter=10).fit(X[rows], y[rows])
    b = fast_ranker(ranker_class, early_stopping=False, max_iter=10).fit(X[rows], y[rows],
                                                                   qid=qid[rows])
    assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X[rows], y[rows]) == b.score(X[rows], y[rows], qid=qid[rows])


# ----------------------------------------------------------------------
# Predict and score
@pytest.fixture(scope="module")
def fitted(forty_queries):
    """One fitted ranker of each class (scoring only; do not refit)."""
    X, y, qid = forty_queries
    return {cls: fast_ranker(cls).fit(X, y, qid=qid) for cls in ALL_RANKERS}


def test_predict_checks_qid_and_scores_rows_independently(ranker_class, forty_queries, fitted):
    X, y, qid = forty_queries
    ranker = fitted[ranker_class]
    with pytest.raises(ValueError, match="qid must have one entry per row: expected 400"):
        ranker.predict(X, qid=qid[:-1])
    assert_array_equal(ranker.predict(X, qid=qid), ranker.predict(X))
    assert_array_equal(ranker.predict(X[:7]), ranker.predict(X)[:7])


def test_score_is_mean_ndcg_at_10(ranker_class, forty_queries, fitted):
    X, y, qid = forty_queries
    ranker = fitted[ranker_class]
    assert ranker.score(X, y, qid=qid) == pytest.approx(
        np.mean(ndcg_score(y, ranker.predict(X), qid=qid, k=10, average=False)), rel=1e-12
    )


def test_score_weighs_queries_by_sample_weight(ranker_class, forty_queries, fitted):
    X, y, qid = forty_queries
    ranker = fitted[ranker_class]
    perm = np.random.RandomState(2).permutation(len(y))  # rows of a query need not be together
    X, y, qid = X[perm], y[perm], qid[perm]
    unique = np.unique(qid)
    query_weight = 1.0 + (unique % 4)
    sample_weight = query_weight[np.searchsorted(unique, qid)]
    per_query = ndcg_score(y, ranker.predict(X), qid=qid, k=10, average=False)
    expected = np.sum(query_weight * per_query) / np.sum(query_weight)
    assert expected != pytest.approx(np.mean(per_query), rel=1e-6)
    assert ranker.score(X, y, qid=qid, sample_weight=sample_weight) == pytest.approx(
        expected, rel=1e-12
    )
    varying = sample_weight.copy()
    varying[np.flatnonzero(qid == unique[3])[0]] += 1.0
    with pytest.raises(ValueError, match="must be the same for all rows of a query"):
        ranker.score(X, y, qid=qid, sample_weight=varying)


def test_cross_validation_routes_qid_by_default(ranker_class, forty_queries, routing_on):
    """With routing on, fit and score request qid without set_*_request calls."""
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, max_iter=10)
    routing = ranker.get_metadata_routing()
    assert routing.fit.requests["qid"] is True
    assert routing.score.requests["qid"] is True
    # requested only by rankers that may score the documents of a query jointly
    assert routing.predict.requests["qid"] is (ranker_class is skrank.rankers.BoltzRankRanker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(ranker, X, y, cv=SklearnGroupKFold(3), scoring=NDCG10,
                                 params={"qid": qid, "groups": qid})
        manual = []
        for train, test in SklearnGroupKFold(3).split(X, y, groups=qid):
            est = sklearn.clone(ranker).fit(X[train], y[train], qid=qid[train])
            manual.append(ndcg_score(y[test], est.predict(X[test]), qid=qid[test], k=10))
    assert_allclose(scores, manual, rtol=1e-12)


# ----------------------------------------------------------------------
# Bad input
@pytest.mark.parametrize(
    "params, match",
    [
        ({"hidden_layer_sizes": (3, 0)},
         r"hidden_layer_sizes must hold positive integers; got \(3, 0\)"),
        ({"scoring": "ndcg@x"}, "scoring='ndcg@x' is not a ranking scorer name"),
        ({"learning_rate_init": 0.0}, "'learning_rate_init' parameter"),
        ({"learning_rate_decay": 1.5}, "'learning_rate_decay' parameter"),
        ({"restarts": "mean"}, "'restarts' parameter"),
        ({"n_init": 0}, "'n_init' parameter"),
    ],
)
def test_bad_parameters_raise(ranker_class, forty_queries, params, match):
    requires(ranker_class, *params)
    X, y, qid = forty_queries
    with pytest.raises(ValueError, match=match):
        ranker_class(**params).fit(X, y, qid=qid)


def test_bad_qid_raises(ranker_class, forty_queries):
    X, y, qid = forty_queries
    with pytest.raises(ValueError, match="qid must have one entry per row: expected 400"):
        ranker_class().fit(X, y, qid=qid[:-1])


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_divergence_raises_a_clear_error(ranker_class, forty_queries):
    """A huge step blows the weights up (through the L2 penalty too) until the scores overflow."""
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, solver="sgd", learning_rate_init=1e8, momentum=1.0,
                   hidden_layer_sizes=(5, 5), activation="relu", max_iter=50,
                   n_iter_no_change=50)  # patience must not stop it first
    with pytest.raises(ValueError, match=r"overflowed to inf or NaN: the optimisation diverged\. "
                                         r"Likely cause: the step size \(learning_rate_init="
                                         r"100000000\.0 with solver='sgd'\): lower "
                                         r"learning_rate_init\.$"):
        ranker.fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_extreme_features_stay_finite(ranker_class, forty_queries):
    """Features 1e4 times larger: ListNet's and SoftRank's scores reach 1e4 and beyond.

    A fit that returns has finite scores and losses (the loop raises
    otherwise), so what is checked is that the loss and its gradient stay
    useful out there: the training loss goes down, and the model ranks the
    training queries better than chance (all scores tied: the mean NDCG over
    random orders, 0.60; random scores give 0.60 +- 0.02) by a margin.
    """
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, learning_rate_init=1.0, max_iter=5).fit(X * 1e4, y, qid=qid)
    scores = ranker.predict(X * 1e4)
    assert np.isfinite(scores).all()
    assert np.isfinite(ranker.loss_curve_).all()
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0], ranker.loss_curve_
    chance = ndcg_score(y, np.zeros_like(scores), qid=qid, k=10)  # about 0.60
    ndcg = ndcg_score(y, scores, qid=qid, k=10)
    assert ndcg > chance + 0.08, (ndcg, chance)


def _epoch_order(ranker, X, y, qid, monkeypatch, **fit_params):
    """``ranker`` fitted for one epoch; the query ids in the order of its mini-batches."""
    from skrank._core import _folded_objective, _objective

    orders = []
    for cls in (_objective.Objective, _folded_objective.FoldedObjective):
        def spy(self, batch_size, perm, _original=cls.ordered_batches):
            orders.append(perm.copy())
            return _original(self, batch_size, perm)
        monkeypatch.setattr(cls, "ordered_batches", spy)
    fit_quietly(ranker, X, y, qid=qid, **fit_params)
    monkeypatch.undo()
    (order,) = orders
    return np.unique(qid)[order]


def _rows_of(qid, queries):
    """Rows of ``queries``, query by query in that order (each query's rows in file order)."""
    return np.concatenate([np.flatnonzero(qid == q) for q in queries])


@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
@pytest.mark.parametrize("solver", ["adam", "sgd"])
def test_partial_fit_in_fit_order_gives_the_fit(stochastic_class, scattered, hidden, solver,
                                                 monkeypatch):
    """Chunks of whole queries in the order of fit's batches: the weights of a 1-epoch fit."""
    X, y, qid = scattered
    params = dict(hidden_layer_sizes=hidden, solver=solver, batch_size=3, max_iter=1,
                  early_stopping=False)
    fitted = fast_ranker(stochastic_class, **params)
    order = _epoch_order(fitted, X, y, qid, monkeypatch)
    streamed = fast_ranker(stochastic_class, **params)
    for lo in range(0, len(order), 6):  # 4 calls of 2 batches each
        rows = _rows_of(qid, order[lo:lo + 6])
        streamed.partial_fit(X[rows], y[rows], qid=qid[rows])
    assert_allclose(fitted_params(streamed), fitted_params(fitted), rtol=0, atol=1e-12)
    assert streamed.n_iter_ == 4 and len(streamed.loss_curve_) == 4
    assert streamed.t_ == fitted.t_ == 24
    # and not by chance: another order of the same chunks gives other weights
    other = fast_ranker(stochastic_class, **params)
    for lo in reversed(range(0, len(order), 6)):
        rows = _rows_of(qid, order[lo:lo + 6])
        other.partial_fit(X[rows], y[rows], qid=qid[rows])
    assert np.abs(fitted_params(other) - fitted_params(fitted)).max() > 1e-6


def test_partial_fit_weights_of_one_call_are_fit_weights(stochastic_class, scattered, monkeypatch):
    """One call with all queries weighs them as fit does (relative to their mean)."""
    X, y, qid = scattered
    weight = np.unique(qid, return_inverse=True)[1] % 3 + 1.0
    params = dict(batch_size=4, max_iter=1, early_stopping=False)
    fitted = fast_ranker(stochastic_class, **params)
    order = _epoch_order(fitted, X, y, qid, monkeypatch, sample_weight=weight)
    rows = _rows_of(qid, order)
    streamed = fast_ranker(stochastic_class, **params).partial_fit(
        X[rows], y[rows], qid=qid[rows], sample_weight=weight[rows])
    assert_allclose(fitted_params(streamed), fitted_params(fitted), rtol=0, atol=1e-12)
    # weights are relative to the first call's mean: constant ones change nothing
    plain = fast_ranker(stochastic_class, **params).partial_fit(X[rows], y[rows], qid=qid[rows])
    constant = fast_ranker(stochastic_class, **params).partial_fit(
        X[rows], y[rows], qid=qid[rows], sample_weight=np.full(len(rows), 7.0))
    assert_array_equal(fitted_params(constant), fitted_params(plain))


def test_partial_fit_carries_the_solver_state_over(stochastic_class, scattered):
    """Two calls of whole batches are one call over both: the moments carry over."""
    X, y, qid = scattered
    queries = pd_unique(qid)
    whole = fast_ranker(stochastic_class, batch_size=4).partial_fit(X, y, qid=qid)
    halves = fast_ranker(stochastic_class, batch_size=4)
    for part in (queries[:12], queries[12:]):
        rows = np.isin(qid, part)
        halves.partial_fit(X[rows], y[rows], qid=qid[rows])
    assert_allclose(fitted_params(halves), fitted_params(whole), rtol=0, atol=1e-12)
    assert halves.t_ == whole.t_ == 24 and halves.n_iter_ == 2 and whole.n_iter_ == 1
    # a solver state started afresh at the second call would step otherwise
    fresh = fast_ranker(stochastic_class, batch_size=4)
    rows = np.isin(qid, queries[:12])
    fresh.partial_fit(X[rows], y[rows], qid=qid[rows])
    del fresh._solver_memory
    fresh.partial_fit(X[~rows], y[~rows], qid=qid[~rows])
    assert np.abs(fitted_params(fresh) - fitted_params(whole)).max() > 1e-6


def pd_unique(values):
    """The distinct values in the order of their first appearance."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def test_partial_fit_continues_a_fit_and_fit_starts_afresh(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fit_quietly(fast_ranker(stochastic_class, max_iter=2, early_stopping=False), X, y,
                          qid=qid)
    before = fitted_params(ranker)
    last = qid == qid[-1]
    ranker.partial_fit(X[last], y[last], qid=qid[last])
    assert ranker.n_iter_ == 3 and ranker.t_ == 2 * N_QUERIES + 1
    assert np.abs(fitted_params(ranker) - before).max() > 0
    # a new fit forgets the stream: its last query may open the next call
    fit_quietly(ranker, X, y, qid=qid)
    ranker.partial_fit(X[last], y[last], qid=qid[last])
    assert ranker.n_iter_ == 3


def test_partial_fit_refuses_a_query_split_across_calls(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class)
    first = np.flatnonzero(qid == qid[0])
    ranker.partial_fit(X[:first[-1]], y[:first[-1]], qid=qid[:first[-1]])
    fitted = fitted_params(ranker)
    with pytest.raises(ValueError, match=rf"qid={qid[0].item()!r} continues a query of the previous "
                                         rf"partial_fit call \(its last row there was row "
                                         rf"{first[-2]}; here it starts at row 0\)"):
        ranker.partial_fit(X[first[-1]:], y[first[-1]:], qid=qid[first[-1]:])
    assert_array_equal(fitted_params(ranker), fitted)  # the failed call changed nothing


def test_partial_fit_without_qid_twice_names_qid_none(stochastic_class, forty_queries):
    # qid=None is one query of id 0 in every call: the message must not show an id never given
    X, y, _ = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X[:20], y[:20])
    with pytest.raises(ValueError, match=r"qid=None makes the rows of a call one query, and "
                                         r"the previous partial_fit call's last query had the "
                                         r"same id \(0\).* Pass qid"):
        ranker.partial_fit(X[20:40], y[20:40])


@pytest.mark.parametrize("params, match", [
    ({"learning_rate_decay": 0.5}, r"learning_rate_decay=0\.5 decays the step size .* "
                                   r"partial_fit sees no epochs"),
])
def test_partial_fit_refuses_what_a_stream_cannot_do(stochastic_class, forty_queries, params, match):
    X, y, qid = forty_queries
    with pytest.raises(ValueError, match=match):
        fast_ranker(stochastic_class, **params).partial_fit(X, y, qid=qid)


def test_partial_fit_trains_one_network_whatever_n_init(stochastic_class, scattered):
    """Restarts are fit's: partial_fit continues the first of its initialisations."""
    X, y, qid = scattered
    one = fast_ranker(stochastic_class, n_init=1).partial_fit(X, y, qid=qid)
    three = fast_ranker(stochastic_class, n_init=3, restarts="average").partial_fit(X, y, qid=qid)
    assert_array_equal(fitted_params(three), fitted_params(one))


def test_partial_fit_refuses_another_number_of_features(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X[:20], y[:20], qid=qid[:20])
    with pytest.raises(ValueError, match=r"X has 4 features, but \w+ is expecting 5"):
        ranker.partial_fit(X[20:, :4], y[20:], qid=qid[20:])


def test_partial_fit_is_not_there_for_full_batch_fits(ranker_class):
    """solver="lbfgs" hides partial_fit and says why, as scikit-learn's MLP does;
    LogRank, whose fit is L-BFGS only, has none at all (as Ridge has none)."""
    if ranker_class.__name__ == "LogRankRanker":
        assert "partial_fit" not in dir(ranker_class)
        assert not hasattr(ranker_class(), "partial_fit")
        return
    ranker = ranker_class(solver="lbfgs")
    assert not hasattr(ranker, "partial_fit")
    with pytest.raises(AttributeError, match="has no attribute 'partial_fit'") as raised:
        ranker.partial_fit
    assert "only available for the stochastic solvers" in str(raised.value.__cause__)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_partial_fit_divergence_leaves_the_model_as_it_was(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class, solver="sgd", momentum=1.0, hidden_layer_sizes=(5, 5),
                   activation="relu").partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(learning_rate_init=1e8)
    with pytest.raises(ValueError, match=r"diverged\. Likely cause: the step size"):
        for _ in range(20):
            fitted, memory = fitted_params(ranker), ranker._solver_memory[1].copy()
            n_iter, t = ranker.n_iter_, ranker.t_
            ranker.partial_fit(X[50:], y[50:], qid=qid[50:])
    # the model and the solver state are those of the last call that succeeded
    assert_array_equal(fitted_params(ranker), fitted)
    assert_array_equal(ranker._solver_memory[1], memory)
    assert (ranker.n_iter_, ranker.t_) == (n_iter, t)


def test_partial_fit_repeated_over_the_same_queries(stochastic_class, forty_queries):
    """The scikit-learn loop over epochs: every call a new pass over the same queries."""
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class)
    for _ in range(3):
        ranker.partial_fit(X, y, qid=qid)
    assert ranker.n_iter_ == 3 and ranker.t_ == 3 * N_QUERIES


def test_partial_fit_weighs_each_call_in_the_first_call_s_unit(forty_queries):
    """Weights 10 in a later call step 10 times as far as weights 1 (SGD, no momentum, no
    penalty): they are not scaled to mean 1 within their call."""
    from skrank import ListNetRanker

    X, y, qid = forty_queries
    params = dict(solver="sgd", momentum=0.0, alpha=0.0, batch_size=N_QUERIES)
    first, second = qid < 20, qid >= 20
    steps = []
    for weight in (1.0, 10.0):
        ranker = fast_ranker(ListNetRanker, **params).partial_fit(
            X[first], y[first], qid=qid[first], sample_weight=np.ones(first.sum()))
        before = fitted_params(ranker)
        ranker.partial_fit(X[second], y[second], qid=qid[second],
                           sample_weight=np.full(second.sum(), weight))
        steps.append(fitted_params(ranker) - before)
    assert_allclose(steps[1], 10 * steps[0], rtol=1e-10)
    # after a weighted fit, the unit is that fit's mean query weight
    ranker = fit_quietly(fast_ranker(ListNetRanker, max_iter=1, early_stopping=False, **params),
                          X[first], y[first], qid=qid[first],
                          sample_weight=np.full(first.sum(), 150.0))
    before = fitted_params(ranker)
    ranker.partial_fit(X[second], y[second], qid=qid[second],
                       sample_weight=np.full(second.sum(), 150.0))
    assert_allclose(fitted_params(ranker) - before, steps[0], rtol=1e-10)


def test_partial_fit_with_another_solver_starts_its_state_afresh(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class, solver="adam").partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(solver="sgd").partial_fit(X[50:], y[50:], qid=qid[50:])
    assert ranker._solver_memory[0] == "sgd" and ranker.n_iter_ == 2


def test_partial_fit_refuses_another_network(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(hidden_layer_sizes=(3,))
    # partial_fit continues whatever warm_start says: the message must not blame it
    with pytest.raises(ValueError, match=r"partial_fit continues the fitted .*hidden_layer_sizes"
                                         r"=\(3,\) .*call fit, or partial_fit on "
                                         r"sklearn\.base\.clone\(ranker\)"):
        ranker.partial_fit(X[50:], y[50:], qid=qid[50:])


def test_partial_fit_keeps_float32(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X.astype(np.float32), y, qid=qid)
    assert ranker.predict(X.astype(np.float32)).dtype == np.float32
