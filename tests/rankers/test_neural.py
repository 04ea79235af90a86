"""NeuralRanker (skrank/rankers/_neural.py): partial_fit, and the mini-batches.

partial_fit is one pass over whole queries continuing the model: in fit's
order it gives fit, it carries the solver's state over, and it refuses what a
stream cannot do.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import BoltzRankRanker, ListNetRanker, SoftRankRanker

from tests._inputs import HUGE, fast
from tests._rankers import N_QUERIES, fast_ranker, fit_quietly, fitted_params


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


def test_partial_fit_with_another_solver_starts_its_state_afresh(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class, solver="adam").partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(solver="sgd").partial_fit(X[50:], y[50:], qid=qid[50:])
    assert ranker._solver_memory[0] == "sgd" and ranker.n_iter_ == 2


def test_partial_fit_keeps_float32(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X.astype(np.float32), y, qid=qid)
    assert ranker.predict(X.astype(np.float32)).dtype == np.float32


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls", [ListNetRanker, SoftRankRanker, BoltzRankRanker],
                         ids=lambda c: c.__name__)
def test_huge_batch_size_is_one_batch_of_all_queries(cls, value, six_queries):
    X, y, qid = six_queries
    n_queries = len(np.unique(qid))
    got = fast(cls, batch_size=value, early_stopping=False).fit(X, y, qid=qid)
    expected = fast(cls, batch_size=n_queries, early_stopping=False).fit(X, y, qid=qid)
    np.testing.assert_array_equal(got.predict(X, qid=qid), expected.predict(X, qid=qid))
