"""Extreme and mismatched inputs found by fuzzing: a clear error or a finite, right result.

One section per problem of the campaign (A to H). Every test drives the
reported input on the same small data (8 queries of 5 documents, 3
features) and checks the error's type and message (naming the parameter
and the value received), or that the result is finite and the one the
input means.
"""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils._param_validation import InvalidParameterError

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from skrank.losses import (
    BoltzRankLoss,
    ListNetLoss,
    LogRankLoss,
    LossState,
    SoftRankLoss,
    query_uniforms,
)
from skrank.utils import QueryLayout

from tests._inputs import LARGEST, THREE_EPOCHS, diverged, fail_to_allocate, loss_id

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


STATE_MESSAGE = r"^state must be the LossState returned by this loss's prepare \({}\.prepare"


@pytest.mark.parametrize("loss", [ListNetLoss(), SoftRankLoss(), LogRankLoss(),
                                  BoltzRankLoss(n_rankings=5)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("state, got", [(None, "got None"), ({}, "got {} of type dict")])
def test_a_state_that_is_no_loss_state_is_a_type_error(loss, state, got, eight_queries_scores):
    name = type(loss).__name__
    for call in (lambda: loss.value_and_grad(eight_queries_scores, state),
                 lambda: loss.sorted_value_and_grad(eight_queries_scores, state),
                 lambda: loss.logit_form(state),
                 lambda: loss.check_state(state)):
        with pytest.raises(TypeError, match=STATE_MESSAGE.format(name) + r".*" + got):
            call()


@pytest.mark.parametrize("loss", [SoftRankLoss(), LogRankLoss(), BoltzRankLoss(n_rankings=5),
                                  LogRankLoss("likelihood", sampler="exact")],
                         ids=lambda v: type(v).__name__)
def test_the_state_of_another_loss_class_is_a_type_error(loss, eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    state = ListNetLoss().prepare(y, qid)
    message = STATE_MESSAGE.format(type(loss).__name__) + r".*got a LossState prepared by ListNetLoss\.$"
    with pytest.raises(TypeError, match=message):
        loss.value_and_grad(eight_queries_scores, state)
    with pytest.raises(TypeError, match=message):
        loss.value_and_grad(eight_queries_scores[:10], state, queries=[0, 1])
    with pytest.raises(TypeError, match=message):
        loss.logit_form(state)


def test_a_loss_state_built_by_hand_is_a_type_error(eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    state = LossState(QueryLayout(qid), per_row={"target": np.zeros(len(y))})
    with pytest.raises(TypeError, match=r"got a LossState that no loss's prepare returned"):
        ListNetLoss().value_and_grad(eight_queries_scores, state)


@pytest.mark.parametrize("prepared, used, differ", [
    (BoltzRankLoss(n_rankings=5, objective="likelihood"), BoltzRankLoss(n_rankings=5),
     "objective='likelihood' where this loss has 'expected_gain'"),
    (BoltzRankLoss(n_rankings=5), BoltzRankLoss(n_rankings=6), "n_rankings=5 where this loss has 6"),
    (LogRankLoss("likelihood", sampler="exact"), LogRankLoss("likelihood", sampler="walk"),
     "sampler='exact' where this loss has 'walk'"),
    (LogRankLoss(n_rankings=5), LogRankLoss(n_rankings=5, metric="map"),
     "metric='ndcg@10' where this loss has 'map'"),
])
def test_the_state_of_another_configuration_is_a_value_error(prepared, used, differ, eight_queries,
                                                              eight_queries_scores):
    X, y, qid = eight_queries
    state = prepared.prepare(y, qid, random_state=0)
    with pytest.raises(ValueError, match=rf"^state must be .*prepared by a \w+ with {differ}, "
                                         r"which this loss cannot use"):
        used.value_and_grad(eight_queries_scores, state)


def test_boltzrank_probabilities_check_the_state(eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    with pytest.raises(TypeError, match=STATE_MESSAGE.format("BoltzRankLoss")):
        BoltzRankLoss(n_rankings=5).probabilities(eight_queries_scores, ListNetLoss().prepare(y, qid))


def test_a_compatible_configuration_and_a_batch_of_the_state_are_accepted(eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    # store_ranks and the objective do not change what the walk prepares
    state = LogRankLoss("l3", n_rankings=5).prepare(y, qid, random_state=0)
    loss = LogRankLoss("convex", n_rankings=5, store_ranks=False)
    full = loss.value_and_grad(eight_queries_scores, state)
    assert np.isfinite(full[0])
    positions, taken = state.take([0, 3])
    assert taken.prepared_by == state.prepared_by
    loss.sorted_value_and_grad(eight_queries_scores[:len(positions)], taken)


@pytest.mark.parametrize("n_draws", [2**60, 2**63, 2**64 - 1, 10**30])
@pytest.mark.parametrize("per_query, n, what", [(False, 40, "rows"), (True, 8, "queries")])
def test_too_many_draws_is_a_value_error_naming_n_draws(eight_queries, n_draws, per_query, n, what):
    X, y, qid = eight_queries
    largest = (2**63 - 1) // (8 * n)
    with pytest.raises(ValueError, match=rf"^n_draws must be at most {largest}: {n} {what} "
                                         rf"times n_draws .* got n_draws={n_draws}\.$"):
        query_uniforms(QueryLayout(qid), 0, n_draws, per_query=per_query)


def test_a_few_draws_still_work(eight_queries):
    X, y, qid = eight_queries
    assert query_uniforms(QueryLayout(qid), 0, 3).shape == (40, 3)
    assert query_uniforms(qid, 0, 2, per_query=True).shape == (8, 2)


@pytest.mark.parametrize("cls, params", [
    (ListNetRanker, {}),
    (SoftRankRanker, {}),
    (BoltzRankRanker, dict(n_rankings=5, n_init=1)),
    (ListNetRanker, dict(solver="lbfgs")),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("weight", [1e308, 1.7976931348623157e308, 1e-300, 5e-324, 3.0])
def test_constant_query_weights_of_any_size_give_the_unweighted_model(cls, params, weight, eight_queries):
    X, y, qid = eight_queries
    plain = cls(**THREE_EPOCHS, **params).fit(X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        weighted = cls(**THREE_EPOCHS, **params).fit(X, y, qid=qid, sample_weight=np.full(40, weight))
    assert_array_equal(weighted.predict(X), plain.predict(X))
    assert weighted.loss_curve_ == plain.loss_curve_


def test_only_the_ratios_of_huge_query_weights_matter(eight_queries):
    X, y, qid = eight_queries
    w = np.repeat([1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0, 1.0], 5)
    small = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid, sample_weight=w)
    huge = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid, sample_weight=w * 5e307)
    assert_allclose(huge.predict(X), small.predict(X), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_query_weights_scale_the_auto_penalty(eight_queries):
    """alpha="auto" is 2 / (total query weight): weights c act as alpha = 2 / (c * n)."""
    X, y, qid = eight_queries
    params = dict(max_iter=50, n_rankings=6, random_state=0)
    weighted = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3))
    assert_allclose(weighted.coef_,
                    LogRankRanker(alpha=2 / (1e3 * 8), **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)
    # a numeric alpha is the other rankers' penalty: constant weights change nothing
    assert_array_equal(
        LogRankRanker(alpha=0.1, **params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3)).coef_,
        LogRankRanker(alpha=0.1, **params).fit(X, y, qid=qid).coef_)
    # weights summing beyond the largest float: no penalty, a finite model
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        huge = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e308))
    assert np.isfinite(huge.coef_).all()
    assert_allclose(huge.coef_, LogRankRanker(alpha=0.0, **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("alpha, weight, blamed", [
    (1e300, None, r"the penalty \(alpha=1e\+300\): an extreme strength .*: lower alpha\.$"),
    ("auto", 1e-300, r"the penalty alpha/2 \|\|w\|\|\^2: alpha='auto' with sample_weight "
                     r"summing to 8e-300 over the training queries gives it the strength 2 / "
                     r"\(total query weight\) = 2\.5e\+299, an extreme strength .*: pass a "
                     r"smaller alpha, or rescale sample_weight \(.*\)\.$"),
])
def test_a_logrank_divergence_blames_alpha_and_the_scale_of_sample_weight(alpha, weight, blamed, eight_queries):
    X, y, qid = eight_queries
    sample_weight = None if weight is None else np.full(40, weight)
    with diverged(LogRankRanker, rf"Likely cause: {blamed}") as info:
        LogRankRanker(max_iter=3, alpha=alpha, random_state=0).fit(X, y, qid=qid, sample_weight=sample_weight)
    # LogRank has neither a learning rate nor a choice of solver
    assert "learning_rate_init" not in str(info.value)
    assert "solver=" not in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("cls, params", [
    # a fixed seed: from about 1 start in 80, L-BFGS's first step lands where
    # every sampled ranking's logit gap saturates, the fit converges without
    # overflowing (to a model that ranks as the scaled fit does) and there is
    # no divergence to blame
    (LogRankRanker, dict(max_iter=3, random_state=0)),
    (ListNetRanker, dict(solver="lbfgs", **THREE_EPOCHS)),
    (ListNetRanker, THREE_EPOCHS),
    (BoltzRankRanker, dict(n_rankings=5, n_init=1, hidden_layer_sizes=(), **THREE_EPOCHS)),
], ids=["LogRank", "ListNet-lbfgs", "ListNet-adam", "BoltzRank-adam"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_divergence_on_huge_features_is_blamed_on_the_scale_of_X(cls, params, sparse, eight_queries):
    import scipy.sparse as sp

    X, y, qid = eight_queries
    X = X * 1e160
    top = f"{np.abs(X).max():.3g}".replace("+", r"\+")
    with diverged(cls, rf"Likely cause: the scale of X \(its largest absolute value is "
                        rf"{top}\): scale the features, e\.g\. with StandardScaler or skrank's "
                        r"QueryNormalizer\.$") as info:
        cls(**params).fit(sp.csr_matrix(X) if sparse else X, y, qid=qid)
    assert "learning_rate_init" not in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("solver", ["lbfgs", "sgd", "adam"])
def test_a_divergence_with_an_extreme_alpha_is_blamed_on_the_penalty(solver, eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, r"Likely cause: the penalty \(alpha=1e\+300\): an extreme "
                                  r"strength .*: lower alpha\.$") as info:
        ListNetRanker(solver=solver, alpha=1e300, **THREE_EPOCHS).fit(X, y, qid=qid)
    assert "learning_rate_init" not in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_divergence_with_a_huge_step_is_blamed_on_the_learning_rate_of_sgd(eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, r"Likely cause: the step size \(learning_rate_init=1e\+200 "
                                  r"with solver='sgd'\): lower learning_rate_init\.$"):
        ListNetRanker(solver="sgd", learning_rate_init=1e200, **THREE_EPOCHS).fit(X, y, qid=qid)


EXTREME_LOSSES = [
    ListNetLoss(), SoftRankLoss(rank_distribution="binomial"),
    SoftRankLoss(rank_distribution="normal"),
    SoftRankLoss(rank_distribution="binomial", sinkhorn_iterations=2),
    *[LogRankLoss(objective, metric=gain, n_rankings=10, normalize_pairs=normalize)
      for objective in ("likelihood", "expected_gain", "l3", "convex") for gain in ("auc", "ndcg")
      for normalize in (True, False)],
    LogRankLoss("likelihood", sampler="walk", n_rankings=10), LogRankLoss("l3", sampler="walk", metric="auc"),
    *[BoltzRankLoss(n_rankings=10, objective="expected_gain", gain_weight=w) for w in (0, 0.9, 1)],
    BoltzRankLoss(n_rankings=10, objective="likelihood"),
]


def _extreme_scores(y, s, m):
    return {
        "pair": np.r_[m, -m, s[2:]],  # the campaign's input
        "against": np.where(y >= 1, -m, m),  # relevant documents at the bottom
        "along": np.where(y >= 1, m, -m),
        "alternate": np.where(np.arange(len(y)) % 2, m, -m),
        "spread": s / np.abs(s).max() * m,
    }


@pytest.mark.parametrize("loss", EXTREME_LOSSES, ids=loss_id)
def test_no_loss_is_nan_for_any_finite_scores(loss, eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    state = loss.prepare(y, qid, random_state=0)
    for m in (1e100, 1e200, 1e300, 1e307, 1.7e308, LARGEST):
        for name, s in _extreme_scores(y, eight_queries_scores, m).items():
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # overflow is handled, not hit
                value, grad = loss.value_and_grad(s, state)
            assert np.isfinite(value) or value == np.inf, (name, m, value)
            assert np.isfinite(grad).all(), (name, m)


@pytest.mark.parametrize("loss", [ListNetLoss(), SoftRankLoss(), LogRankLoss(n_rankings=10),
                                  BoltzRankLoss(n_rankings=10),
                                  BoltzRankLoss(n_rankings=10, objective="likelihood")],
                         ids=loss_id)
@pytest.mark.parametrize("m", [1e100, 1e200, 1e300, 1e307])
def test_two_opposite_huge_scores_give_a_finite_loss_up_to_1e307(loss, m, eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    value, grad = loss.value_and_grad(np.r_[m, -m, eight_queries_scores[2:]], loss.prepare(y, qid,
                                                                            random_state=0))
    assert np.isfinite(value) and np.isfinite(grad).all()


@pytest.mark.parametrize("loss", [LogRankLoss("likelihood", n_rankings=10),
                                  LogRankLoss("likelihood", sampler="exact"),
                                  BoltzRankLoss(n_rankings=10, objective="likelihood")],
                         ids=loss_id)
def test_scores_along_the_labels_lose_nothing_at_the_largest_float(loss, eight_queries):
    """The ideal ranking is among the most probable by a gap beyond the float range."""
    X, y, qid = eight_queries
    state = loss.prepare(y, qid, random_state=0)
    informative = [q for q in range(8) if len(set(y[qid == np.unique(qid)[q]])) > 1]
    # one query at a time, so that the document order within a level (at random
    # in the samples) is the only tie
    for q in informative:
        rows = qid == np.unique(qid)[q]
        _, taken = state.take([q])
        # (a power of two: the samples' energies are exact, and tie exactly)
        s = np.where(y[rows] >= 1, 2.0**1023, -(2.0**1023))
        value, grad = loss.value_and_grad(s, state, queries=[q])
        # -log of the ideal ranking's probability, at most 1 / (samples tied at the top)
        assert np.isfinite(value) and value <= np.log(11)
        assert np.isfinite(grad).all()


def test_the_mean_over_queries_does_not_overflow_where_each_loss_is_finite(eight_queries):
    X, y, qid = eight_queries
    loss = LogRankLoss("likelihood", sampler="exact")
    state = loss.prepare(y, qid)
    s = np.where(y >= 1, -1e307, 1e307)  # every pair out of order by 2e307
    per_query = [loss.value_and_grad(s[qid == q], state, queries=[i])[0]
                 for i, q in enumerate(np.unique(qid))]
    assert np.isfinite(per_query).all() and sum(per_query) == np.inf
    value, _ = loss.value_and_grad(s, state)
    assert_allclose(value, np.sum(np.divide(per_query, 8)), rtol=1e-15)


def test_listnet_takes_the_loss_from_halved_gaps_where_the_sum_overflows(eight_queries):
    X, y, qid = eight_queries
    loss = ListNetLoss()
    state = loss.prepare(y, qid)
    s = np.full(40, LARGEST)  # every score the largest float: the target's sum overflows
    value, grad = loss.value_and_grad(s, state)
    assert np.isfinite(value) and value >= 0
    # the gradient is exact: uniform top-one probabilities minus the target
    assert_allclose(grad, (0.2 - state.layout.to_rows(state.per_row["target"])) / 8, atol=1e-17)


@pytest.mark.parametrize("labels, temperature", [(1.0, 1e-308), (1e300, 1e-10), (1e307, 1.0)])
def test_targets_stay_finite_for_huge_labels_and_tiny_temperatures(
        labels, temperature, eight_queries, eight_queries_scores):
    from skrank.metrics import make_ranking_scorer

    X, y, qid = eight_queries
    loss = BoltzRankLoss(n_rankings=10, target_temperature=temperature,
                         metric=make_ranking_scorer("ndcg", k=10, gain="linear"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        state = loss.prepare(y * labels, qid, random_state=0)
    target = state.per_query["target"]
    assert np.isfinite(target).all()
    assert_allclose(target.sum(axis=1), 1.0, rtol=1e-12)
    value, grad = loss.value_and_grad(eight_queries_scores, state)
    assert np.isfinite(value) and np.isfinite(grad).all()


def test_the_rescued_logits_are_the_usual_ones_shifted(eight_queries, eight_queries_scores):
    from skrank.losses._sampled import _shifted_logits

    X, y, qid = eight_queries
    state = BoltzRankLoss(n_rankings=10).prepare(y, qid, random_state=0)
    block = state.per_row["ranks"][:5].astype(np.float64)
    s = eight_queries_scores[:5] * 1e3
    usual = -0.25 * (s @ block)  # scale -4 / (m - 1)^2 for m = 5
    assert_allclose(_shifted_logits(s, block, -0.25), usual - usual.max(), rtol=1e-12,
                    atol=1e-12)


def _with_nan(values, index):
    values = np.array(values, dtype=np.float64)
    values[index] = np.nan
    return values


@pytest.mark.parametrize("X_val, y_val, qid_val, message", [
    (None, "short", None, r"^y_val must have one label per row of X_val \(40\); got 39\.$"),
    (None, "nan", None, r"^Input y_val contains NaN\.$"),
    (None, "inf", None, r"^Input y_val contains infinity"),
    (None, "2d", None, r"^y_val must be a 1-D array of labels; got shape \(40, 2\)\.$"),
    ("nan", None, None, r"^Input X_val contains NaN"),
    ("empty", "empty", "empty", r"^X_val: Found array with 0 sample\(s\) \(shape=\(0, 3\)\)"),
    ("narrow", None, None, r"^X_val has 2 features, but ListNetRanker is expecting 3 features "
                           r"as input \(those of X\)\.$"),
    ("1d", None, None, r"^X_val: Expected 2D array, got 1D array instead"),
    (None, None, "short", r"^qid_val must have one entry per row: expected 40 entries, got 39"),
], ids=["y_val-short", "y_val-nan", "y_val-inf", "y_val-2d", "X_val-nan", "empty", "X_val-narrow",
        "X_val-1d", "qid_val-short"])
def test_validation_set_errors_name_the_validation_set(X_val, y_val, qid_val, message, eight_queries):
    X, y, qid = eight_queries
    X_val = {None: X, "nan": _with_nan(X, (0, 0)), "empty": X[:0], "narrow": X[:, :2],
             "1d": X[:, 0]}[X_val]
    y_val = {None: y, "short": y[:-1], "nan": _with_nan(y, 0), "empty": y[:0],
             "inf": np.where(y > 0, np.inf, 0.0), "2d": np.c_[y, y]}[y_val]
    qid_val = {None: qid, "short": qid[:-1], "empty": qid[:0]}[qid_val]
    with pytest.raises(ValueError, match=message):
        ListNetRanker(max_iter=2).fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)


def test_a_good_validation_set_still_fits(eight_queries):
    X, y, qid = eight_queries
    ranker = ListNetRanker(max_iter=2, random_state=0)
    ranker.fit(X, y, qid=qid, X_val=X, y_val=list(y.astype(object)), qid_val=qid)
    assert len(ranker.validation_scores_) == 2


@pytest.mark.parametrize("value", [10_001, 10**23])
def test_a_huge_sinkhorn_count_is_refused_with_its_bound(value, eight_queries):
    X, y, qid = eight_queries
    message = (r"^The 'sinkhorn_iterations' parameter of {} must be an int \(not a bool\) in "
               rf"the range \[0, 10000\]\. Got {value} instead\.$")
    with pytest.raises(InvalidParameterError, match=message.format("SoftRankRanker")):
        SoftRankRanker(sinkhorn_iterations=value, max_iter=3).fit(X, y, qid=qid)
    with pytest.raises(InvalidParameterError, match=message.format("SoftRankLoss")):
        SoftRankLoss(sinkhorn_iterations=value)


def test_sinkhorn_keeps_vectors_not_matrices_for_the_gradient(rng):
    import tracemalloc

    s = rng.normal(size=100 * 20)
    qid = np.repeat(np.arange(100), 20)
    y = rng.integers(0, 3, size=s.size)
    loss = SoftRankLoss(sinkhorn_iterations=1000)
    state = loss.prepare(y, qid)
    tracemalloc.start()
    try:
        value, grad = loss.value_and_grad(s, state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(value) and np.isfinite(grad).all()
    # the iterates would be 2 x 1000 x 100 x 20 x 20 floats (640 MB); their sums are
    # 2 x 1000 x 100 x 20 (32 MB)
    assert peak < 80e6


def test_the_gradient_through_many_sinkhorn_iterations_is_exact(rng):
    s = rng.normal(size=6)
    y = np.array([0, 1, 2, 0, 1, 3])
    loss = SoftRankLoss(0.5, sinkhorn_iterations=500)
    state = loss.prepare(y, np.zeros(6, dtype=int))
    _, grad = loss.value_and_grad(s, state)
    step = 1e-6
    numeric = [(loss.value_and_grad(s + step * e, state)[0]
                - loss.value_and_grad(s - step * e, state)[0]) / (2 * step) for e in np.eye(6)]
    assert_allclose(grad, numeric, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("scale", [1e2, 1e10, 1e15, 1e100, 2e307])
def test_logrank_expected_gain_value_keeps_its_log_gain_at_large_gaps(scale):
    """All probability on one ranking of gain 0.8772: the loss is -log 0.8772.

    The value was the difference of two log-softmaxes, which cancelled the
    log G part once the logit gaps grew (0.0 from 1e15 on).
    """
    loss = LogRankLoss("expected_gain", sampler="walk", metric="ndcg@10", n_rankings=6,
                       normalize_pairs=False)
    state = loss.prepare(np.array([2.0, 1, 0, 0, 0]), np.zeros(5), random_state=0)
    reference, _ = loss.value_and_grad(np.array([-1, 0, 0, 0, 1.25]) * 1e2, state)
    value, grad = loss.value_and_grad(np.array([-1, 0, 0, 0, 1.25]) * scale, state)
    assert value == pytest.approx(reference, rel=1e-12)
    assert reference == pytest.approx(0.13100280324511507, rel=1e-9)
    assert np.isfinite(grad).all()


def test_logrank_exact_pair_differences_scaled_before_they_overflow():
    """normalize_pairs scales a difference beyond the largest float back into range."""
    loss = LogRankLoss("likelihood", sampler="exact")
    state = loss.prepare(np.array([1.0, 0, 0, 0, 0]), np.zeros(5))
    value, grad = loss.value_and_grad(np.array([-1e308, 1e308, -1e308, -1e308, -1e308]),
                                      state)
    # one pair at 2 * (1/4) * -2e308 = -1e308, three at 0: 1e308 + 3 log 2
    assert value == pytest.approx(1e308, rel=1e-15)
    assert value < 1.7e308 and np.isfinite(grad).all()


def test_weighted_mean_of_losses_near_the_largest_float():
    """The weighted mean is finite where the unweighted one is."""
    loss = ListNetLoss()
    y, qid = np.array([1.0, 0, 1, 0]), np.array([0, 0, 1, 1])
    eight_queries_scores = np.array([-1e308, 1e308, -1e308, 1e308])
    unweighted, _ = loss.value_and_grad(eight_queries_scores, loss.prepare(y, qid))
    state = loss.prepare(y, qid, sample_weight=[1.5, 1.5, 0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weighted, _ = loss.value_and_grad(eight_queries_scores, state)
    assert np.isfinite(unweighted) and weighted == pytest.approx(unweighted, rel=1e-15)


def test_a_state_prepared_with_an_equal_gain_scorer_is_accepted():
    """A copy of the gain scorer, or one made again, is the same gain."""
    import copy

    from skrank.metrics import get_ranking_scorer

    gain = get_ranking_scorer("ndcg@5")
    state = BoltzRankLoss(metric=gain).prepare(np.array([1.0, 0, 2]), np.zeros(3),
                                             random_state=0)
    eight_queries_scores = np.array([0.1, 0.2, 0.3])
    expected = BoltzRankLoss(metric=gain).value_and_grad(eight_queries_scores, state)[0]
    for other in (copy.deepcopy(gain), get_ranking_scorer("ndcg@5")):
        assert BoltzRankLoss(metric=other).value_and_grad(eight_queries_scores, state)[0] == expected
    with pytest.raises(ValueError, match="prepared by a BoltzRankLoss with metric="):
        BoltzRankLoss(metric=get_ranking_scorer("ndcg@4")).value_and_grad(eight_queries_scores, state)


def test_huge_but_finite_validation_features_do_not_stop_the_fit(eight_queries):
    """Infinite validation scores still rank; only NaN ones are an error."""
    X, y, qid = eight_queries
    model = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid)
    X_val = X.copy()
    X_val[0] = np.sign(model.coef_) * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fitted = ListNetRanker(max_iter=3, random_state=0).fit(
            X, y, qid=qid, X_val=X_val, y_val=y, qid_val=qid
        )
    assert np.isfinite(fitted.coef_).all()


def _nan_metric(y_true, y_score, *, qid, average=True):
    """A metric that returns NaN for every query."""
    return np.nan if average else np.full(len(np.unique(qid)), np.nan)


def test_metric_returning_nan_is_refused_at_prepare(eight_queries):
    """The loss and gradient were NaN without a word.

    One of the 8 queries has equal labels: its gains are never used, so not counted.
    """
    _, y, qid = eight_queries
    with pytest.raises(ValueError, match=r"^metric=<function _nan_metric .*> returned NaN or "
                                         r"infinite values for 35 of 40 \(query, sample\) "
                                         r"pairs, in 7 of 8 queries \(the first: qid=0, e\.g\. "
                                         r"nan\)"):
        BoltzRankLoss(5, metric=_nan_metric).prepare(y, qid, random_state=0)


def test_infinite_gain_of_one_query_is_refused():
    """One infinite gain is named, with its query; finite gains of any size pass."""
    y, qid = np.array([0, 1, 2, 0, 1]), np.array([3, 3, 3, 7, 7])

    def metric(y_true, y_score, *, qid, average=True):
        # one value per pseudo-query: (sample, query) in that order, 2 queries
        out = np.full(len(np.unique(qid)), 1e300)
        out[1::2] = -np.inf  # every sample of the second query
        return out

    with pytest.raises(ValueError, match=r"for 4 of 8 \(query, sample\) pairs, in 1 of 2 "
                                         r"queries \(the first: qid=7, e\.g\. -inf\)"):
        BoltzRankLoss(4, metric=metric).prepare(y, qid, random_state=0)

    def huge(y_true, y_score, *, qid, average=True):
        return np.full(len(np.unique(qid)), -1e300)

    BoltzRankLoss(4, metric=huge).prepare(y, qid, random_state=0)


def test_nan_gains_of_queries_with_equal_labels_are_unused_and_accepted():
    """no_relevant='skip' gives NaN to a query without relevant documents: it contributes 0."""
    from functools import partial

    from skrank.metrics import ndcg_score

    y, qid = np.array([0, 0, 0, 1, 2, 0]), np.array([0, 0, 0, 1, 1, 1])
    loss = BoltzRankLoss(4, metric=partial(ndcg_score, no_relevant="skip"))
    state = loss.prepare(y, qid, random_state=0)
    assert np.isnan(state.per_query["gains"][0]).all()
    value, grad = loss.value_and_grad(np.arange(6.0), state)
    assert np.isfinite(value) and np.isfinite(grad).all() and (grad[:3] == 0).all()


def test_the_ranker_names_the_metric_not_the_step_size(eight_queries):
    """The fit raised a DivergenceError blaming learning_rate_init and X."""
    X, y, qid = eight_queries
    with pytest.raises(ValueError, match=r"^metric=<function _nan_metric .*> returned NaN"):
        BoltzRankRanker(metric=_nan_metric, **THREE_EPOCHS).fit(X, y, qid=qid)


@pytest.mark.parametrize("make", [lambda n: BoltzRankLoss(n),
                                  lambda n: LogRankLoss(n_rankings=n, sampler="walk")])
def test_n_rankings_beyond_an_array_is_a_value_error(make):
    """numpy's 'array is too big' named no parameter (checked before allocating)."""
    with pytest.raises(ValueError, match=r"^n_rankings must be at most \d+: the rank samples "
                                         r"of 2 rows in 1 query \(\d+ bytes per ranking\) "
                                         r".* got n_rankings=4611686018427387904\.$"):
        make(2**62).prepare([0, 1], [0, 0])


@pytest.mark.parametrize("make, target", [
    (lambda n: BoltzRankLoss(n), "skrank.losses._boltzrank._samples"),
    (lambda n: LogRankLoss(n_rankings=n, sampler="walk"), "skrank.losses._logrank._walk_block"),
])
def test_failed_allocation_names_n_rankings(monkeypatch, make, target):
    """A MemoryError named no parameter (the allocation is faked here)."""
    monkeypatch.setattr(target, fail_to_allocate)
    with pytest.raises(MemoryError, match=r"^n_rankings=10 needs about [\d.]+ (bytes|KiB|MiB) for the rank "
                                          r"samples of 8 rows in 1 query \(\d+ bytes per "
                                          r"ranking\); lower n_rankings\.$") as info:
        make(10).prepare([0, 1] * 4, [0] * 8, random_state=0)
    assert "Unable to allocate" in str(info.value.__cause__)


def test_failed_allocation_names_n_draws(monkeypatch, memory_available):
    """query_uniforms(layout, 0, 10**12) gave numpy's MemoryError (faked here)."""
    memory_available(None)  # unknown: the allocation is tried, and fails
    monkeypatch.setattr("skrank.losses._query_random._mix", fail_to_allocate)
    with pytest.raises(MemoryError, match=r"^n_draws=1000000000000 needs about 58\.2 TiB "
                                          r"for 8 rows times n_draws 64-bit draws; lower "
                                          r"n_draws\.$"):
        query_uniforms(QueryLayout(np.zeros(8, dtype=int)), 0, 10**12)


@pytest.mark.parametrize("make", [lambda n: BoltzRankLoss(n),
                                  lambda n: LogRankLoss(n_rankings=n, sampler="walk")])
def test_rank_samples_beyond_the_memory_available_are_refused(memory_available, make):
    """The kernel promised them and killed the process at their first write: refused first."""
    y, qid = [0, 1] * 4, [0] * 8
    memory_available(1_000_000)  # the samples take 16 or 25 bytes a ranking, 1.5 MiB or more
    with pytest.raises(MemoryError, match=r"^n_rankings=100000 needs about [12]\.\d MiB for the "
                                          r"rank samples of 8 rows in 1 query \(\d+ bytes per "
                                          r"ranking\), more than the 976\.6 KiB of memory "
                                          r"available now; lower n_rankings\.$"):
        make(100_000).prepare(y, qid, random_state=0)
    # the samples fit, not the 64-bit draws behind them: n_rankings is still named
    memory_available(3_000_000)
    with pytest.raises(MemoryError, match=r"^n_rankings=100000 \(n_draws=\d+ of its draws\) "
                                          r"needs about [\d.]+ (bytes|KiB|MiB) for \d+ (rows|queries) times "
                                          r"n_draws 64-bit draws, more than the 2\.9 MiB of "
                                          r"memory available now; lower n_rankings\.$"):
        make(100_000).prepare(y, qid, random_state=0)
    memory_available(None)  # unknown: nothing is refused
    make(100_000).prepare(y, qid, random_state=0)


def test_draws_beyond_any_memory_are_refused_before_allocating():
    """1e12 draws of 8 rows take 64 TB: more than any machine has, refused at once."""
    with pytest.raises(MemoryError, match=r"^n_draws=1000000000000 needs about 58\.2 TiB "
                                          r"for 8 rows times n_draws 64-bit draws, more than "
                                          r"the [\d.]+ [KMGT]iB of memory available now; lower "
                                          r"n_draws\.$"):
        query_uniforms(QueryLayout(np.zeros(8, dtype=int)), 0, 10**12)


def test_threshold_above_every_label_warns_at_prepare(eight_queries, eight_queries_scores):
    """The loss was 0 with a zero gradient without a word.

    The loss warns (it is prepared on single queries too, where a query
    without a good document rightly gives 0); the ranker raises.
    """
    X, y, qid = eight_queries
    loss = LogRankLoss(relevance_threshold=100)
    with pytest.warns(UserWarning, match=r"^LogRankLoss: relevance_threshold=100\.0 is above "
                                         r"every label \(largest: 4\.0\): no document is "
                                         r"good, so the loss is 0"):
        state = loss.prepare(y, qid)
    assert loss.value_and_grad(eight_queries_scores, state)[0] == 0.0
    with pytest.raises(ValueError, match=r"^relevance_threshold=100 is above every label"):
        LogRankRanker(relevance_threshold=100, max_iter=3).fit(X, y, qid=qid)


@pytest.mark.parametrize("sigma", [1e-310, 5e-324, 1e308, 2e307])
@pytest.mark.parametrize("make", [SoftRankLoss, lambda sigma: SoftRankRanker(sigma=sigma)
                                  .fit(np.zeros((2, 1)), [0, 1], qid=[0, 0])])
def test_sigma_beyond_the_floats_is_refused(make, sigma):
    """Infinite gradients below a normal float, overflow warnings above 1.5e307."""
    with pytest.raises(InvalidParameterError,
                       match=rf"The 'sigma' parameter of SoftRank\w+ must be a float "
                             rf"\(not a bool\) in the range .* Got {re.escape(repr(sigma))} instead"):
        make(sigma)


@pytest.mark.parametrize("sigma", [2.2250738585072014e-308, 1e-300, 1.4954835366513482e307])
def test_sigma_at_the_ends_of_its_range_gives_finite_values_without_warnings(sigma):
    y, qid = np.array([0, 1, 2, 0, 1]), np.zeros(5)
    loss = SoftRankLoss(sigma=sigma)
    state = loss.prepare(y, qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for s in (np.zeros(5), np.arange(5.0)):
            value, grad = loss.value_and_grad(s, state)
            assert np.isfinite(value) and np.isfinite(grad).all()
