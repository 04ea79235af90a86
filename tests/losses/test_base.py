"""The contract every registered listwise loss honours (skrank/losses/_base.py).

Finite-difference gradients, invariance to the order of rows and queries, the
flat loss equal to a per-query loop, query subsets, single-document queries,
extreme scores and labels, the seed alone fixing a sampling loss's state, the
rank samples; the state check; the loss API on a plain qid; the typed state, its
fields cut per row and per query.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from skrank.losses import (
    LOSSES,
    BoltzRankLoss,
    BoltzRankState,
    ListNetLoss,
    ListNetState,
    ListwiseLoss,
    LogRankLoss,
    LogRankState,
    LossState,
    SoftRankLoss,
    SoftRankState,
    query_array,
    row_array,
)
from skrank import make_ranking
from skrank.metrics import make_ranking_scorer
from skrank.utils import QueryLayout

from tests._inputs import (
    LARGEST,
    PUBLIC_LOSSES,
    RAGGED,
    TEXT_LABELS,
    loss_id,
    ragged_message,
    small_queries,
    text_message,
)
from tests.losses._random_queries import evaluate, random_queries


def test_finite_difference_gradient(loss, rng):
    y, s, qid = random_queries(rng)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    value, grad = loss.value_and_grad(s, state)
    eps = 1e-6
    numeric = np.empty_like(s)
    for i in range(s.size):
        up, down = s.copy(), s.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (
            loss.value_and_grad(up, state)[0] - loss.value_and_grad(down, state)[0]
        ) / (2 * eps)
    assert np.isfinite(value)
    assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def _interleaving(qid, rng):
    """A random reordering of the rows that keeps the order of each query's rows."""
    slots = qid[rng.permutation(qid.size)]
    perm = np.empty(qid.size, dtype=int)
    for q in np.unique(qid):
        perm[slots == q] = np.flatnonzero(qid == q)
    return perm


def test_invariant_to_row_and_query_order(loss, rng):
    y, s, qid = random_queries(rng, shuffle=False)
    value, grad = evaluate(loss, y, s, qid)
    # a sampling loss draws per place in the query: reorder across queries only
    perm = _interleaving(qid, rng) if loss.sampling else rng.permutation(qid.size)
    value_p, grad_p = evaluate(loss, y[perm], s[perm], qid[perm])
    assert_allclose(value_p, value, rtol=1e-12)
    assert_allclose(grad_p, grad[perm], rtol=1e-12, atol=1e-15)
    if loss.sampling:
        return  # its draws are keyed on the query ids: relabelling draws anew
    # relabel the queries so that their sorted order is reversed
    value_r, grad_r = evaluate(loss, y, s, -qid)
    assert_allclose(value_r, value, rtol=1e-12)
    assert_allclose(grad_r, grad, rtol=1e-12, atol=1e-15)


# a query of the loop may have no good document, which LogRankLoss warns of;
# its loss of 0 is what the flat loss counts for it
@pytest.mark.filterwarnings("ignore:LogRankLoss. relevance_threshold=.* is above every label")
def test_flat_equals_per_query_loop(loss, rng):
    y, s, qid = random_queries(rng)
    value, grad = evaluate(loss, y, s, qid)
    queries = np.unique(qid)
    values, expected = [], np.empty_like(grad)
    for q in queries:
        rows = qid == q
        v, g = evaluate(loss, y[rows], s[rows], qid[rows])
        values.append(v)
        expected[rows] = g / len(queries)
    assert_allclose(value, np.mean(values), rtol=1e-12)
    assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)


def test_query_subset_equals_loss_of_those_queries(loss, rng):
    y, s, qid = random_queries(rng)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    queries = np.array([3, 1])  # query numbers, any order
    rows = np.isin(qid, layout.unique_qid[queries])
    positions, _ = layout.select(queries)
    value, grad = loss.value_and_grad(layout.to_sorted(s)[positions], state, queries)
    expected_value, expected_grad = evaluate(loss, y[rows], s[rows], qid[rows])
    assert_allclose(value, expected_value, rtol=1e-12)
    # the subset comes grouped by query, rows in their original relative order
    grouped = QueryLayout(qid[rows]).to_sorted(expected_grad)
    assert_allclose(grad, grouped, rtol=1e-12, atol=1e-15)


def test_single_document_queries_have_zero_loss(loss):
    y = np.array([2.0, 0.0, 1.0])
    s = np.array([5.0, -3.0, 0.0])
    value, grad = evaluate(loss, y, s, [1, 2, 3])
    assert value == 0.0
    assert_allclose(grad, 0.0)


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_finite_for_extreme_scores_and_equal_labels(loss, rng, scale):
    y, s, qid = random_queries(rng)
    s = np.sign(s) * scale
    for labels in (y, np.ones_like(y)):
        value, grad = evaluate(loss, labels, s, qid)
        assert np.isfinite(value)
        assert np.isfinite(grad).all()


def test_extreme_labels_are_finite(loss, rng):
    y, s, qid = random_queries(rng)
    if loss.name == "boltzrank":  # its default gain, 2**y - 1, refuses such labels
        loss = BoltzRankLoss(metric=make_ranking_scorer("ndcg", k=10, gain="linear"))
    value, grad = evaluate(loss, y * 1e4, s, qid)
    assert np.isfinite(value) and np.isfinite(grad).all()


# ----------------------------------------------------------------------------
# Sampling losses: draws fixed by the seed, per query
def _prepared_arrays(state):
    return state.arrays()


def test_the_seed_alone_fixes_the_state(loss, rng):
    """The same seed, the same state; another seed, another state if the loss samples.

    A loss that does not sample (``sampling`` False) has a state that no seed
    changes; one that does draws it from the seed, not from global state.
    """
    y, _, qid = random_queries(rng)
    layout = QueryLayout(qid)
    a = _prepared_arrays(loss.prepare(y, layout, random_state=7))
    b = _prepared_arrays(loss.prepare(y, layout, random_state=7))
    other = _prepared_arrays(loss.prepare(y, layout, random_state=8))
    assert a.keys() == b.keys() == other.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    changed = [key for key in a if not np.array_equal(a[key], other[key])]
    assert bool(changed) == loss.sampling, changed


def test_query_subset_same_state_for_those_queries(loss, rng):
    """Preparing on some queries gives them the state they get among all queries."""
    y, _, qid = random_queries(rng)
    keep = np.isin(qid, [3, 23, 43])
    full = loss.prepare(y, QueryLayout(qid), random_state=7)
    sub = loss.prepare(y[keep], QueryLayout(qid[keep]), random_state=7)
    queries = np.searchsorted(full.layout.unique_qid, sub.layout.unique_qid)
    _, taken = full.take(queries)
    a, b = _prepared_arrays(taken), _prepared_arrays(sub)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12, err_msg=key)


@pytest.mark.parametrize("make, has", [
    (lambda: BoltzRankLoss(6, metric="ndcg"), {"ranks", "gains"}),
    (lambda: BoltzRankLoss(6, objective="likelihood"), {"ranks"}),
    (lambda: LOSSES["logrank"](n_rankings=7), {"ranks", "gains"}),
    (lambda: LOSSES["logrank"](n_rankings=7, store_ranks=False), {"gains"}),
], ids=["boltzrank", "boltzrank-likelihood", "logrank", "logrank-no-ranks"])
def test_rank_samples_of_a_sampling_loss(rng, make, has):
    """Ranks in the rows' own order, ranking 0 ideal; the gains of every ranking."""
    y, _, qid = random_queries(rng, sizes=(1, 4, 6, 5))
    y[qid == 13] = 1.0  # a query of equal labels
    loss = make()
    state = loss.prepare(y, qid, random_state=0)
    samples = state.rank_samples()
    layout, k = state.layout, samples.valid.shape[1]
    assert samples.valid.shape == (layout.n_queries, k) and samples.valid.dtype == bool
    good = (y >= 1).astype(float) if isinstance(loss, LOSSES["logrank"]) else y
    good_sorted = layout.to_sorted(good)
    np.testing.assert_array_equal(samples.informative,
                                  layout.max(good_sorted) > layout.min(good_sorted))
    assert (samples.ranks is not None) == ("ranks" in has)
    if samples.ranks is not None:
        assert samples.ranks.shape == (len(y), k)
        for i, q in enumerate(layout.unique_qid):
            ranks = samples.ranks[qid == q]
            if not samples.informative[i] and not isinstance(loss, BoltzRankLoss):
                assert (ranks == 0).all()  # LogRank draws no ranking of such a query
                continue
            # each ranking of a query is a permutation of its ranks
            np.testing.assert_array_equal(np.sort(ranks, axis=0),
                                          np.arange(1, len(ranks) + 1)[:, None].repeat(k, 1))
            # ranking 0 is ideal: no row ranks above a row of a better label
            first = ranks[:, 0]
            assert np.all(np.diff(good[qid == q][np.argsort(first)]) <= 0)
    assert (samples.gains is not None) == ("gains" in has)
    if samples.gains is not None:
        assert samples.gains.shape == (layout.n_queries, k)
        np.testing.assert_array_equal(samples.gains[samples.informative, 0], 1.0)
    if isinstance(loss, BoltzRankLoss):
        assert samples.valid.all()  # BoltzRank counts every sample


@pytest.mark.parametrize("loss", [ListNetLoss(), LOSSES["softrank"](),
                                  LOSSES["logrank"](objective="expected_gain", metric="auc")],
                         ids=["listnet", "softrank", "logrank-exact"])
def test_rank_samples_of_a_loss_without_samples_raise(loss):
    state = loss.prepare([1.0, 0.0, 1.0], [0, 0, 0])
    with pytest.raises(ValueError, match="draws no rank samples"):
        state.rank_samples()


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("bad, got", [
    (lambda s: s.tolist(), ".*of type list"),
    (lambda s: s[:-1], r"an array of float64 and shape \(9,\)"),
    (lambda s: s.astype(np.float32), r"an array of float32 and shape \(10,\)"),
], ids=["list", "short", "float32"])
def test_sorted_value_and_grad_refuses_scores_of_another_form(name, bad, got):
    """The unchecked entry still checks the form of its scores (O(1)), not their values."""
    y = np.array([0, 1, 2, 0, 1, 0, 2, 1, 0, 1], dtype=float)
    loss = LOSSES[name]()
    state = loss.prepare(y, np.repeat([0, 1], 5), random_state=0)
    s = np.linspace(-1.0, 1.0, 10)
    loss.sorted_value_and_grad(s, state)  # the right form is accepted
    with pytest.raises(ValueError, match=r"^s_sorted must be a float64 array of shape \(10,\).*"
                                         rf"got {got}"):
        loss.sorted_value_and_grad(bad(s), state)


# ----------------------------------------------------------------------------
# Query weights given to prepare
@pytest.mark.parametrize("bad, error, match", [
    (np.ones(3), ValueError, "sample_weight must be a 1-D array with one weight per row"),
    ("rows", ValueError, "sample_weight must be a 1-D array"),
    (np.linspace(1.0, 2.0, 100), ValueError, "same for all rows of a query"),
    (np.zeros(100), ValueError, "sample_weight is zero for every query"),
    (np.full(100, -1.0), ValueError, "finite and non-negative"),
    (np.full(100, "1"), TypeError, "sample_weight must hold numbers"),
])
def test_prepare_refuses_bad_weights(bad, error, match):
    y, qid = np.tile([1.0, 0.0], 50), np.repeat(np.arange(10), 10)
    with pytest.raises(error, match=match):
        LOSSES["listnet"]().prepare(y, qid, sample_weight=bad)


# ----------------------------------------------------------------------------
# The loss API on a plain qid; text and ragged labels
def test_text_labels_are_refused_by_the_losses():
    loss = ListNetLoss()
    to_text, got = TEXT_LABELS["str"]
    y, layout = np.array([2.0, 0.0, 1.0]), QueryLayout([0, 0, 0])
    with pytest.raises(TypeError, match=text_message("y", got)):
        loss.prepare(to_text(y), layout)
    with pytest.raises(TypeError, match=text_message("scores", got)):
        loss.value_and_grad(to_text(y), loss.prepare(y, layout))


@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("as_ids", [np.asarray, list, lambda q: q.astype(str)],
                         ids=["array", "list", "str-ids"])
def test_loss_on_a_plain_qid_equals_the_loss_on_its_layout(cls, as_ids, rng):
    qid = rng.permutation(np.repeat([7, 3, 11, 5], [4, 1, 6, 3]))
    y, scores = small_queries(rng, qid)
    loss = cls()
    by_layout = loss.prepare(y, QueryLayout(as_ids(qid)), random_state=0)
    by_ids = loss.prepare(y, as_ids(qid), random_state=0)
    np.testing.assert_array_equal(by_ids.layout.qid, by_layout.layout.qid)
    # all queries, and a mini-batch of two (its rows grouped by query)
    positions, _ = by_layout.layout.select([0, 2])
    batch = by_layout.layout.to_sorted(scores)[positions]
    for s, queries in ((scores, None), (batch, [0, 2])):
        value, grad = loss.value_and_grad(s, by_ids, queries)
        expected_value, expected_grad = loss.value_and_grad(s, by_layout, queries)
        assert value == expected_value
        np.testing.assert_array_equal(grad, expected_grad)


@settings(max_examples=25, deadline=None)
@given(qid=st.lists(st.integers(-3, 3), min_size=1, max_size=12), seed=st.integers(0, 2**16))
@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
# random labels may leave no good document, which LogRankLoss warns of
@pytest.mark.filterwarnings("ignore:LogRankLoss. relevance_threshold=.* is above every label")
def test_loss_on_any_qid_equals_the_loss_on_its_layout(cls, qid, seed):
    y, scores = small_queries(np.random.default_rng(seed), qid)
    loss = cls()
    value, grad = loss.value_and_grad(scores, loss.prepare(y, qid, random_state=seed))
    expected = loss.value_and_grad(scores, loss.prepare(y, QueryLayout(qid), random_state=seed))
    assert value == expected[0]
    np.testing.assert_array_equal(grad, expected[1])


@pytest.mark.parametrize("bad", [{"qid": [0, 0, 0]}, "000", 1.5, 0, None],
                         ids=["dict", "str", "float", "int", "None"])
@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
def test_loss_refuses_a_qid_of_the_wrong_type(cls, bad):
    message = (r"^layout must be an array of query ids \(one per row\) or a QueryLayout; "
               rf"got {type(bad).__name__} ")
    with pytest.raises(TypeError, match=message):
        cls().prepare([2.0, 0.0, 1.0], bad)


@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
def test_loss_checks_the_length_of_a_qid_against_y(cls):
    with pytest.raises(ValueError,
                       match=r"^layout must have one entry per row: expected 3 entries, got 2\."):
        cls().prepare([2.0, 0.0, 1.0], [0, 0])
    # a layout keeps its own check, of y against its rows
    with pytest.raises(ValueError, match=r"^y must have shape \(2,\)"):
        cls().prepare([2.0, 0.0, 1.0], QueryLayout([0, 0]))


def test_ragged_labels_are_named_by_the_losses():
    with pytest.raises(ValueError, match=ragged_message("y")) as info:
        ListNetLoss().prepare(RAGGED, [0, 0])
    assert "inhomogeneous" in str(info.value.__cause__)  # numpy's message is the cause


# ----------------------------------------------------------------------------
# A loss checks the state it is given; every loss stays finite (or +inf with a
# finite gradient) for any finite scores
STATE_MESSAGE = r"^state must be the LossState returned by this loss's prepare \({}\.prepare"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_loss_state_built_by_hand_is_a_type_error(eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    state = ListNetState(QueryLayout(qid), target=np.zeros(len(y)))
    with pytest.raises(TypeError, match=r"got a LossState that no loss's prepare returned"):
        ListNetLoss().value_and_grad(eight_queries_scores, state)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_boltzrank_probabilities_check_the_state(eight_queries, eight_queries_scores):
    X, y, qid = eight_queries
    with pytest.raises(TypeError, match=STATE_MESSAGE.format("BoltzRankLoss")):
        BoltzRankLoss(n_rankings=5).probabilities(eight_queries_scores, ListNetLoss().prepare(y, qid))


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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


# ----------------------------------------------------------------------------
# The typed state: fields per row and per query, cut by take and subset
STATE_CLASSES = {"boltzrank": BoltzRankState, "listnet": ListNetState,
                 "logrank": LogRankState, "softrank": SoftRankState}


@pytest.fixture
def nine_graded_queries():
    # queries of different sizes, so that no array has as many queries as rows
    _, y, qid = make_ranking(n_queries=9, n_docs=(2, 9), n_levels=3, random_state=4)
    return y, qid


@dataclass(eq=False)
class _ScaledErrorState(LossState):
    y: np.ndarray = row_array()
    size: np.ndarray = query_array()
    factor: float = 1.0  # a constant of the fit: shared by every cut


class _ScaledError(ListwiseLoss):
    name = "scaled_error"

    def _prepare(self, y_sorted, layout, random_state):
        return _ScaledErrorState(layout, y=y_sorted, size=layout.sizes.astype(float),
                                 factor=3.0)

    def _query_losses_and_grad(self, s_sorted, state):
        diff = state.factor * (s_sorted - state.y) / state.layout.expand(state.size)
        return state.layout.sum(0.5 * diff * (s_sorted - state.y)), diff


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_each_loss_prepares_a_state_of_its_own_class(name, nine_graded_queries):
    y, qid = nine_graded_queries
    layout = QueryLayout(qid)
    state = LOSSES[name]().prepare(y, layout, random_state=0)
    assert type(state) is STATE_CLASSES[name]
    arrays = state.arrays()
    assert arrays and "query_weight" not in arrays  # None without sample_weight
    for array in arrays.values():
        assert len(array) in (layout.n_samples, layout.n_queries)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_take_cuts_every_array_of_every_loss_by_its_axis(name, nine_graded_queries):
    y, qid = nine_graded_queries
    layout = QueryLayout(qid)
    weight = 1.0 + np.unique(qid, return_inverse=True)[1] % 3  # one weight per query
    state = LOSSES[name]().prepare(y, layout, sample_weight=weight, random_state=0)
    state.cache["something"] = object()
    queries = np.array([7, 2, 4])
    positions, cut = state.take(queries)
    assert type(cut) is type(state)
    assert cut.prepared_by == state.prepared_by and cut.cache == {}
    assert cut.layout.n_queries == 3 and cut.layout.n_samples == len(positions)
    assert "query_weight" in state.arrays()
    for name_, array in state.arrays().items():
        index = positions if len(array) == layout.n_samples else np.sort(queries)
        np.testing.assert_array_equal(getattr(cut, name_), array[index], err_msg=name_)
    # subset, given the same rows and queries, is the same cut
    same = state.subset(cut.layout, positions, np.sort(queries))
    assert same.arrays().keys() == cut.arrays().keys()
    for name_, array in cut.arrays().items():
        np.testing.assert_array_equal(getattr(same, name_), array, err_msg=name_)


def test_a_loss_of_ones_own_is_cut_by_its_field_declarations(nine_graded_queries):
    y, qid = nine_graded_queries
    loss = _ScaledError()
    state = loss.prepare(y, qid)
    assert set(state.arrays()) == {"y", "size"}
    queries = [5, 0]
    positions, cut = state.take(queries)
    np.testing.assert_array_equal(cut.y, state.y[positions])
    np.testing.assert_array_equal(cut.size, state.size[[0, 5]])
    assert cut.factor == 3.0
    # the mean loss of a cut is that of its queries: the fields were cut alike
    scores = np.random.default_rng(0).normal(size=len(y))
    per_query, _ = loss._query_losses_and_grad(state.layout.to_sorted(scores), state)
    rows = np.isin(qid, np.unique(qid)[queries])
    value, _ = loss.value_and_grad(scores[rows][np.argsort(qid[rows], kind="stable")],
                                   state, queries=queries)
    assert value == pytest.approx(per_query[[0, 5]].mean(), rel=1e-12)


def test_query_weights_are_a_field_of_mean_one(nine_graded_queries):
    y, qid = nine_graded_queries
    _, inverse = np.unique(qid, return_inverse=True)
    state = ListNetLoss().prepare(y, qid, sample_weight=2.0 + inverse)
    np.testing.assert_allclose(state.query_weight, (2.0 + np.arange(9)) / 6.0, rtol=1e-15)
    assert ListNetLoss().prepare(y, qid).query_weight is None


def test_logrank_keeps_only_what_its_sampler_uses(nine_graded_queries):
    y, qid = nine_graded_queries
    exact = LogRankLoss("likelihood", sampler="exact").prepare(y, qid)
    assert set(exact.arrays()) == {"good", "scale", "informative"}
    with pytest.raises(ValueError, match="draws no rank samples"):
        exact.rank_samples()
    walk = LogRankLoss(n_rankings=6).prepare(y, qid, random_state=0)
    assert set(walk.arrays()) == {"good", "scale", "informative", "coef", "ranks", "gains",
                                  "valid"}
    np.testing.assert_array_equal(walk.rank_samples().ranks, walk.layout.to_rows(walk.ranks))
