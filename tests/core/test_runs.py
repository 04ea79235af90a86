"""Restarts (skrank/_core/_runs.py): the best run, the average of runs, n_jobs.

Through every ranker's fit (``restarts="best"`` or ``"average"``, the runs
caught as fit_runs returns them) and directly on average_runs.
"""

import joblib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import skrank
import skrank.rankers
from skrank import ListNetRanker
from skrank._core._network_factory import make_network
from skrank._core._networks import LinearNetwork
from skrank._core._objective import Objective
from skrank._core._runs import RunResult, average_runs
from skrank.losses import LOSSES
from skrank.utils import QueryLayout

from tests._inputs import HUGE, fast
from tests._rankers import N_QUERIES, NDCG10, fast_ranker, fitted_params, validation_rows


# ----------------------------------------------------------------------
# Restarts
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_restarts_best_keeps_the_run_with_the_best_validation_score(ranker_class, forty_queries, captured_runs):
    X, y, qid = forty_queries
    # seeds whose best run is the middle one
    seed = 8 if ranker_class is skrank.rankers.BoltzRankRanker else 3
    ranker = fast_ranker(ranker_class, n_init=3, restarts="best", random_state=seed).fit(X, y, qid=qid)
    runs = captured_runs["runs"]
    scores = [run.best_validation_score for run in runs]
    best = int(np.argmax(scores))
    assert len(set(scores)) == 3 and best not in (0, 2)  # neither the first nor the last run
    assert_array_equal(fitted_params(ranker), runs[best].params)
    assert ranker.best_validation_score_ == scores[best]
    assert ranker.n_iter_ == runs[best].n_iter
    assert ranker.loss_curve_ == runs[best].loss_curve
    assert ranker.validation_scores_ == runs[best].validation_scores


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_restarts_best_without_validation_keeps_the_lowest_objective(ranker_class, forty_queries,
                                                                      captured_runs):
    X, y, qid = forty_queries
    # a seed whose lowest objective is the middle run: neither the first nor
    # the last run kept by mistake would pass
    for seed in range(1, 30):
        ranker = fast_ranker(ranker_class, n_init=3, restarts="best", early_stopping=False,
                       max_iter=10, random_state=seed).fit(X, y, qid=qid)
        runs, objective = captured_runs["runs"], captured_runs["objective"]
        values = [objective.value(run.params) for run in runs]
        best = int(np.argmin(values))
        if best == 1:
            break
    assert best == 1
    assert_array_equal(fitted_params(ranker), runs[best].params)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_restarts_average_is_the_mean_of_the_standardised_runs(ranker_class, forty_queries, captured_runs,
                                                               hidden):
    """Each run's scores divided by their pooled within-query std on the training rows."""
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, hidden_layer_sizes=hidden, n_init=3, restarts="average")
    ranker.fit(X, y, qid=qid)
    runs = captured_runs["runs"]
    network = make_network(5, hidden, ranker.activation)
    train = ~validation_rows(qid)
    standardised, scales = [], []
    for run in runs:
        scores = network.forward(run.params, X)[0]
        s, q = scores[train], qid[train]
        means = {k: s[q == k].mean() for k in np.unique(q)}
        centred = s - np.array([means[k] for k in q])
        scales.append(np.sqrt(np.mean(centred**2)))
        standardised.append(scores / scales[-1])
    assert np.ptp(scales) > 0.05 * np.mean(scales)  # a plain mean would differ
    # the mean of the standardised runs, at the runs' mean scale
    assert_allclose(ranker.predict(X), np.mean(scales) * np.mean(standardised, axis=0),
                    rtol=1e-10, atol=1e-12)
    if hidden:
        assert [c.shape for c in ranker.coefs_] == [(5, 9), (9, 1)]
        assert not hasattr(ranker, "coef_")
    else:
        assert ranker.coef_.shape == (5,)
        assert not hasattr(ranker, "coefs_")
    # the validation score is that of the averaged model; the curves of the best run
    rows = ~train
    assert ranker.best_validation_score_ == pytest.approx(
        NDCG10(ranker, X[rows], y[rows], qid=qid[rows]), rel=1e-12
    )
    best = int(np.argmax([run.best_validation_score for run in runs]))
    assert ranker.validation_scores_ == runs[best].validation_scores


def test_average_runs_gives_no_weight_to_a_run_with_constant_scores(forty_queries):
    """Scale 0 (every document of a query scored alike): weight 0; all such: equal weights."""
    X, y, qid = forty_queries
    X = np.column_stack([X, QueryLayout(qid).expand(np.arange(N_QUERIES, dtype=float))])
    loss = LOSSES["listnet"]()
    objective = Objective(LinearNetwork(6), loss, loss.prepare(y, QueryLayout(qid)), y, X,
                          None, 0.0)

    def run(params):
        return RunResult(np.asarray(params, dtype=float), 1, [0.0], None, None, True)

    w = np.array([1.0, -2.0, 0.5, 0.0, 3.0, 0.0])
    constant = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # the per-query constant column
    network, params = average_runs(objective, [run(w), run(constant)])
    assert isinstance(network, LinearNetwork)
    # the live run alone, standardised and brought back to its own (the mean live) scale
    assert_allclose(params, w / 2, rtol=1e-12)
    network, params = average_runs(objective, [run(constant), run(2 * constant)])
    assert_allclose(params, 1.5 * constant, rtol=1e-15)


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_n_jobs_does_not_change_the_model(ranker_class, forty_queries, backend):
    X, y, qid = forty_queries
    params = {"hidden_layer_sizes": (3,), "n_init": 4, "restarts": "average"}
    serial = fast_ranker(ranker_class, **params).fit(X, y, qid=qid)
    with joblib.parallel_backend(backend):
        parallel = fast_ranker(ranker_class, n_jobs=2, **params).fit(X, y, qid=qid)
    for a, b in zip(serial.coefs_ + serial.intercepts_, parallel.coefs_ + parallel.intercepts_):
        assert_array_equal(a, b)
    assert serial.loss_curve_ == parallel.loss_curve_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
def test_huge_n_jobs_runs_every_run_at_once(value, six_queries):
    X, y, qid = six_queries
    got = fast(ListNetRanker, n_init=2, n_jobs=value).fit(X, y, qid=qid)
    expected = fast(ListNetRanker, n_init=2).fit(X, y, qid=qid)
    np.testing.assert_array_equal(got.coef_, expected.coef_)
    fast(ListNetRanker, n_init=2, n_jobs=-value).fit(X, y, qid=qid)  # joblib: one worker
