"""What continues a fitted network (skrank/rankers/_continuation.py).

warm_start continues from the current weights, a partial_fit call from the
previous one; a network the parameters cannot continue, or a query split
across two calls, is refused.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from tests._rankers import fast_ranker, fit_quietly, fitted_params


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


def test_partial_fit_refuses_another_number_of_features(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X[:20], y[:20], qid=qid[:20])
    with pytest.raises(ValueError, match=r"X has 4 features, but \w+ is expecting 5"):
        ranker.partial_fit(X[20:, :4], y[20:], qid=qid[20:])


def test_partial_fit_refuses_another_network(stochastic_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(stochastic_class).partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(hidden_layer_sizes=(3,))
    # partial_fit continues whatever warm_start says: the message must not blame it
    with pytest.raises(ValueError, match=r"partial_fit continues the fitted .*hidden_layer_sizes"
                                         r"=\(3,\) .*call fit, or partial_fit on "
                                         r"sklearn\.base\.clone\(ranker\)"):
        ranker.partial_fit(X[50:], y[50:], qid=qid[50:])
