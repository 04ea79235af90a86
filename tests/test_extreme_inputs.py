"""Extreme and mismatched inputs found by fuzzing: a clear error or a finite, right result.

One section per problem of the campaign (A to H). Every test drives the
reported input on the same small data (8 queries of 5 documents, 3
features) and checks the error's type and message (naming the parameter
and the value received), or that the result is finite and the one the
input means.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker, make_ranking
from skrank._query import QueryLayout
from skrank.losses import (
    BoltzRankLoss,
    ListNetLoss,
    LogRankLoss,
    LossState,
    SoftRankLoss,
    query_uniforms,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

#: Settings of a fit of three epochs without a held-out split.
F = dict(max_iter=3, early_stopping=False, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=8, n_docs=5, n_features=3, random_state=0)


@pytest.fixture(scope="module")
def scores(data):
    return np.random.default_rng(0).normal(size=len(data[1]))


# A. A loss checks the state it is given -------------------------------------
STATE_MESSAGE = r"^state must be the LossState returned by this loss's prepare \({}\.prepare"


@pytest.mark.parametrize("loss", [ListNetLoss(), SoftRankLoss(), LogRankLoss(),
                                  BoltzRankLoss(n_samples=5)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("state, got", [(None, "got None"), ({}, "got {} of type dict")])
def test_A_a_state_that_is_no_loss_state_is_a_type_error(loss, state, got, scores):
    name = type(loss).__name__
    for call in (lambda: loss.value_and_grad(scores, state),
                 lambda: loss.mean_value_and_grad(scores, state),
                 lambda: loss.logit_form(state)):
        with pytest.raises(TypeError, match=STATE_MESSAGE.format(name) + r".*" + got):
            call()


@pytest.mark.parametrize("loss", [SoftRankLoss(), LogRankLoss(), BoltzRankLoss(n_samples=5),
                                  LogRankLoss("mle", sampler="exact")],
                         ids=lambda v: type(v).__name__)
def test_A_the_state_of_another_loss_class_is_a_type_error(loss, data, scores):
    X, y, qid = data
    state = ListNetLoss().prepare(y, qid)
    message = STATE_MESSAGE.format(type(loss).__name__) + r".*got a LossState prepared by ListNetLoss\.$"
    with pytest.raises(TypeError, match=message):
        loss.value_and_grad(scores, state)
    with pytest.raises(TypeError, match=message):
        loss.value_and_grad(scores[:10], state, queries=[0, 1])
    with pytest.raises(TypeError, match=message):
        loss.logit_form(state)


def test_A_a_loss_state_built_by_hand_is_a_type_error(data, scores):
    X, y, qid = data
    state = LossState(QueryLayout(qid), per_row={"target": np.zeros(len(y))})
    with pytest.raises(TypeError, match=r"got a LossState that no loss's prepare returned"):
        ListNetLoss().value_and_grad(scores, state)


@pytest.mark.parametrize("prepared, used, differ", [
    (BoltzRankLoss(n_samples=5, objective="likelihood"), BoltzRankLoss(n_samples=5),
     "objective='likelihood' where this loss has 'expected_gain'"),
    (BoltzRankLoss(n_samples=5), BoltzRankLoss(n_samples=6), "n_samples=5 where this loss has 6"),
    (LogRankLoss("mle", sampler="exact"), LogRankLoss("mle", sampler="walk"),
     "sampler='exact' where this loss has 'walk'"),
    (LogRankLoss(n_samples=5), LogRankLoss(n_samples=5, gain="map"),
     "gain='ndcg' where this loss has 'map'"),
])
def test_A_the_state_of_another_configuration_is_a_value_error(prepared, used, differ, data,
                                                              scores):
    X, y, qid = data
    state = prepared.prepare(y, qid, random_state=0)
    with pytest.raises(ValueError, match=rf"^state must be .*prepared by a \w+ with {differ}, "
                                         r"which this loss cannot use"):
        used.value_and_grad(scores, state)


def test_A_boltzrank_probabilities_check_the_state(data, scores):
    X, y, qid = data
    with pytest.raises(TypeError, match=STATE_MESSAGE.format("BoltzRankLoss")):
        BoltzRankLoss(n_samples=5).probabilities(scores, ListNetLoss().prepare(y, qid))


def test_A_a_compatible_configuration_and_a_batch_of_the_state_are_accepted(data, scores):
    X, y, qid = data
    # store_ranks and the objective do not change what the walk prepares
    state = LogRankLoss("l3", n_samples=5).prepare(y, qid, random_state=0)
    loss = LogRankLoss("convex", n_samples=5, store_ranks=False)
    full = loss.value_and_grad(scores, state)
    assert np.isfinite(full[0])
    positions, taken = state.take([0, 3])
    assert taken.prepared_by == state.prepared_by
    loss.mean_value_and_grad(scores[:len(positions)], taken)


# B. query_uniforms refuses a number of draws no array can hold ---------------
@pytest.mark.parametrize("n_draws", [2**60, 2**63, 2**64 - 1, 10**30])
@pytest.mark.parametrize("per_query, n, what", [(False, 40, "rows"), (True, 8, "queries")])
def test_B_too_many_draws_is_a_value_error_naming_n_draws(data, n_draws, per_query, n, what):
    X, y, qid = data
    largest = (2**63 - 1) // (8 * n)
    with pytest.raises(ValueError, match=rf"^n_draws must be at most {largest}: {n} {what} "
                                         rf"times n_draws .* got n_draws={n_draws}\.$"):
        query_uniforms(QueryLayout(qid), 0, n_draws, per_query=per_query)


def test_B_a_few_draws_still_work(data):
    X, y, qid = data
    assert query_uniforms(QueryLayout(qid), 0, 3).shape == (40, 3)
    assert query_uniforms(qid, 0, 2, per_query=True).shape == (8, 2)


# H. Constant query weights of any size give the unweighted fit ---------------
@pytest.mark.parametrize("cls, params", [
    (ListNetRanker, {}),
    (SoftRankRanker, {}),
    (BoltzRankRanker, dict(n_samples=5, n_init=1)),
    (ListNetRanker, dict(solver="lbfgs")),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("weight", [1e308, 1.7976931348623157e308, 1e-300, 5e-324, 3.0])
def test_H_constant_query_weights_give_the_unweighted_model(cls, params, weight, data):
    X, y, qid = data
    plain = cls(**F, **params).fit(X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        weighted = cls(**F, **params).fit(X, y, qid=qid, sample_weight=np.full(40, weight))
    assert_array_equal(weighted.predict(X), plain.predict(X))
    assert weighted.loss_curve_ == plain.loss_curve_


def test_H_only_the_ratios_of_huge_query_weights_matter(data):
    X, y, qid = data
    w = np.repeat([1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0, 1.0], 5)
    small = ListNetRanker(**F).fit(X, y, qid=qid, sample_weight=w)
    huge = ListNetRanker(**F).fit(X, y, qid=qid, sample_weight=w * 5e307)
    assert_allclose(huge.predict(X), small.predict(X), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_H_logrank_weights_scale_its_penalty_like_C(data):
    """LogRank adds ||w||^2 / C to the weighted *sum* of the losses: weights c act as C * c."""
    X, y, qid = data
    params = dict(max_iter=50, n_samples=5, random_state=0)
    weighted = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3))
    assert_allclose(weighted.coef_, LogRankRanker(C=1e3, **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)
    # weights summing beyond the largest float: no penalty, a finite model
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        huge = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e308))
    assert np.isfinite(huge.coef_).all()
    assert_allclose(huge.coef_, LogRankRanker(C=1e300, **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)
