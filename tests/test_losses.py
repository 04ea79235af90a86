"""The contract every registered listwise loss honours, plus known values."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import log_softmax, softmax

from skrank.losses import (
    LOSSES, BoltzRankLoss, ListNetLoss, LogRankLoss, SoftRankLoss, query_uniforms,
)
from skrank.losses._query_random import query_bits
from skrank.metrics import make_ranking_scorer
from skrank.rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from skrank.utils import QueryLayout

LOSS_NAMES = sorted(LOSSES)
#: Every registered loss with its defaults, and other configurations whose
#: computation differs (LogRank's default samples; the AUC closed form does
#: not; restarts "two" and the unnormalised map take other paths).
CONFIGS = {
    **{name: {} for name in LOSS_NAMES},
    "logrank-exact-expgain-auc": ("logrank", {"objective": "expected_gain", "metric": "auc",
                                              "normalize_pairs": False}),
    "logrank-walk-convex-map-two": ("logrank", {"objective": "convex", "metric": "map",
                                                "walk_restart": "two", "normalize_pairs": False}),
}


@pytest.fixture(params=sorted(CONFIGS))
def loss(request):
    config = CONFIGS[request.param]
    if isinstance(config, tuple):
        name, params = config
        return LOSSES[name](**params)
    return LOSSES[request.param]()


def _data(rng, sizes=(1, 2, 5, 7, 3), n_levels=3, shuffle=True):
    """Labels, scores and qid for queries of the given sizes, rows shuffled."""
    qid = np.repeat(np.arange(len(sizes)) * 10 + 3, sizes)
    y = rng.integers(0, n_levels, size=qid.size).astype(float)
    s = rng.normal(size=qid.size)
    if shuffle:
        perm = rng.permutation(qid.size)
        qid, y, s = qid[perm], y[perm], s[perm]
    return y, s, qid


def _evaluate(loss, y, s, qid, seed=0):
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=seed)
    return loss.value_and_grad(s, state)


def test_each_ranker_builds_the_loss_of_its_algorithm():
    """A ranker looks its loss up in LOSSES by name: it gets the loss of its algorithm.

    That every loss class is registered is test_bad_input's
    test_every_registered_loss_is_public.
    """
    expected = {ListNetRanker: ListNetLoss, SoftRankRanker: SoftRankLoss,
                BoltzRankRanker: BoltzRankLoss, LogRankRanker: LogRankLoss}
    assert set(expected.values()) == set(LOSSES.values())  # every loss has its ranker
    for ranker_class, loss_class in expected.items():
        assert type(ranker_class()._make_loss()) is loss_class, ranker_class.__name__


def test_finite_difference_gradient(loss, rng):
    y, s, qid = _data(rng)
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
    y, s, qid = _data(rng, shuffle=False)
    value, grad = _evaluate(loss, y, s, qid)
    # a sampling loss draws per place in the query: reorder across queries only
    perm = _interleaving(qid, rng) if loss.sampling else rng.permutation(qid.size)
    value_p, grad_p = _evaluate(loss, y[perm], s[perm], qid[perm])
    assert_allclose(value_p, value, rtol=1e-12)
    assert_allclose(grad_p, grad[perm], rtol=1e-12, atol=1e-15)
    if loss.sampling:
        return  # its draws are keyed on the query ids: relabelling draws anew
    # relabel the queries so that their sorted order is reversed
    value_r, grad_r = _evaluate(loss, y, s, -qid)
    assert_allclose(value_r, value, rtol=1e-12)
    assert_allclose(grad_r, grad, rtol=1e-12, atol=1e-15)


# a query of the loop may have no good document, which LogRankLoss warns of
# (issue 27); its loss of 0 is what the flat loss counts for it
@pytest.mark.filterwarnings("ignore:LogRankLoss. relevance_threshold=.* is above every label")
def test_flat_equals_per_query_loop(loss, rng):
    y, s, qid = _data(rng)
    value, grad = _evaluate(loss, y, s, qid)
    queries = np.unique(qid)
    values, expected = [], np.empty_like(grad)
    for q in queries:
        rows = qid == q
        v, g = _evaluate(loss, y[rows], s[rows], qid[rows])
        values.append(v)
        expected[rows] = g / len(queries)
    assert_allclose(value, np.mean(values), rtol=1e-12)
    assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)


def test_query_subset_equals_loss_of_those_queries(loss, rng):
    y, s, qid = _data(rng)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    queries = np.array([3, 1])  # query numbers, any order
    rows = np.isin(qid, layout.unique_qid[queries])
    positions, _ = layout.select(queries)
    value, grad = loss.value_and_grad(layout.to_sorted(s)[positions], state, queries)
    expected_value, expected_grad = _evaluate(loss, y[rows], s[rows], qid[rows])
    assert_allclose(value, expected_value, rtol=1e-12)
    # the subset comes grouped by query, rows in their original relative order
    grouped = QueryLayout(qid[rows]).to_sorted(expected_grad)
    assert_allclose(grad, grouped, rtol=1e-12, atol=1e-15)


def test_single_document_queries_have_zero_loss(loss):
    y = np.array([2.0, 0.0, 1.0])
    s = np.array([5.0, -3.0, 0.0])
    value, grad = _evaluate(loss, y, s, [1, 2, 3])
    assert value == 0.0
    assert_allclose(grad, 0.0)


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_finite_for_extreme_scores_and_equal_labels(loss, rng, scale):
    y, s, qid = _data(rng)
    s = np.sign(s) * scale
    for labels in (y, np.ones_like(y)):
        value, grad = _evaluate(loss, labels, s, qid)
        assert np.isfinite(value)
        assert np.isfinite(grad).all()


def test_extreme_labels_are_finite(loss, rng):
    y, s, qid = _data(rng)
    if loss.name == "boltzrank":  # its default gain, 2**y - 1, refuses such labels
        loss = BoltzRankLoss(metric=make_ranking_scorer("ndcg", k=10, gain="linear"))
    value, grad = _evaluate(loss, y * 1e4, s, qid)
    assert np.isfinite(value) and np.isfinite(grad).all()


def test_rejects_bad_scores_and_labels(loss, rng):
    y, s, qid = _data(rng)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    with pytest.raises(ValueError, match="scores must have shape"):
        loss.value_and_grad(s[:-1], state)
    bad = s.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="scores must be finite"):
        loss.value_and_grad(bad, state)
    with pytest.raises(ValueError, match="y must be finite"):
        loss.prepare(np.where(np.arange(y.size) == 0, np.inf, y), layout)
    with pytest.raises(ValueError, match="y must have shape"):
        loss.prepare(y[:-1], layout)
    with pytest.raises(ValueError, match="queries must be distinct"):
        loss.value_and_grad(s[:3], state, [0, 0])


# ----------------------------------------------------------------------
# ListNet: known values
def test_listnet_known_value():
    """Two documents: hand-computed cross entropy and P_s - P_y (eq. 2-3)."""
    y = np.array([1.0, 0.0])
    s = np.array([0.0, 0.0])
    value, grad = _evaluate(ListNetLoss(), y, s, [7, 7])
    p_y = np.array([np.e, 1.0]) / (np.e + 1.0)
    assert_allclose(value, np.log(2.0), rtol=1e-14)  # -sum p_y log(1/2)
    assert_allclose(grad, 0.5 - p_y, rtol=1e-14)


def test_listnet_matches_scipy_softmax(rng):
    y, s, qid = _data(rng)
    value, grad = _evaluate(ListNetLoss(), y, s, qid)
    values, expected = [], np.empty_like(s)
    queries = np.unique(qid)
    for q in queries:
        rows = qid == q
        p_y = softmax(y[rows])
        values.append(-(p_y * log_softmax(s[rows])).sum())
        expected[rows] = (softmax(s[rows]) - p_y) / len(queries)
    assert_allclose(value, np.mean(values), rtol=1e-12)
    assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)


def test_listnet_minimum_at_labels():
    """The loss is smallest when the scores equal the labels (up to a shift)."""
    y = np.array([2.0, 1.0, 0.0, 0.0])
    loss = ListNetLoss()
    at_labels, grad = _evaluate(loss, y, y + 3.0, np.zeros(4))
    assert_allclose(grad, 0.0, atol=1e-15)
    assert _evaluate(loss, y, y[::-1], np.zeros(4))[0] > at_labels


# ----------------------------------------------------------------------------
# Sampling losses: draws fixed by the seed, per query
def _prepared_arrays(state):
    return {**{f"row:{k}": v for k, v in state.per_row.items()},
            **{f"query:{k}": v for k, v in state.per_query.items()}}


def test_the_seed_alone_fixes_the_state(loss, rng):
    """The same seed, the same state; another seed, another state if the loss samples.

    A loss that does not sample (``sampling`` False) has a state that no seed
    changes; one that does draws it from the seed, not from global state.
    """
    y, _, qid = _data(rng)
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
    y, _, qid = _data(rng)
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
    y, _, qid = _data(rng, sizes=(1, 4, 6, 5))
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


@pytest.mark.parametrize("ids", ["int", "str"])
def test_query_uniforms_depend_only_on_seed_query_and_place(rng, ids):
    sizes = [3, 1, 4, 2]
    names = np.array([11, 5, 42, 7]) if ids == "int" else np.array(["b", "a", "zz", "c"])
    qid = np.repeat(names, sizes)
    base = query_uniforms(QueryLayout(qid), 3, n_draws=4)
    assert base.shape == (qid.size, 4)
    assert ((base >= 0) & (base < 1)).all()  # true of any bits, so also:
    # spread over [0, 1) as uniforms are: 40 distinct values that pass a
    # Kolmogorov-Smirnov test at 1e-3 (p = 0.73 and 0.12 for the two kinds of id)
    from scipy.stats import kstest

    assert np.unique(base).size == base.size
    assert kstest(base.ravel(), "uniform").pvalue > 1e-3
    # interleaving the queries' rows (each query's rows are interchangeable here,
    # all drawn per place in the query) changes nothing: results are in sorted order
    shuffled = qid[rng.permutation(qid.size)]
    np.testing.assert_array_equal(query_uniforms(QueryLayout(shuffled), 3, 4), base)
    # a subset of the queries gets the same draws
    keep = np.isin(qid, names[[0, 2]])
    np.testing.assert_array_equal(query_uniforms(QueryLayout(qid[keep]), 3, 4),
                                  base[np.isin(QueryLayout(qid).to_sorted(qid), names[[0, 2]])])
    # the bits behind them, transposed on request (one draw per row of the result)
    bits = query_bits(QueryLayout(shuffled), 3, 4)
    np.testing.assert_array_equal((bits >> np.uint64(11)) * 2.0**-53, base)
    np.testing.assert_array_equal(query_bits(QueryLayout(shuffled), 3, 4, draws_first=True),
                                  bits.T)
    # another seed, other draws; a RandomState seed is one draw from it
    assert not np.allclose(query_uniforms(QueryLayout(qid), 4, 4), base)
    seed = np.random.RandomState(0).randint(np.iinfo(np.int32).max)
    np.testing.assert_array_equal(
        query_uniforms(QueryLayout(qid), np.random.RandomState(0), 4),
        query_uniforms(QueryLayout(qid), seed, 4),
    )


def test_query_uniforms_are_uniform_and_independent():
    layout = QueryLayout(np.repeat(np.arange(200), 50))
    u = query_uniforms(layout, 0, n_draws=3)
    from scipy.stats import kstest

    for d in range(3):
        assert kstest(u[:, d], "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(u[:-1, 0], u[1:, 0])[0, 1]) < 0.05
    assert abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.05


@pytest.mark.parametrize("n_draws", [0, -1, 2.5, True])
def test_query_uniforms_rejects_bad_n_draws(n_draws):
    with pytest.raises(ValueError, match=f"n_draws must be a positive integer; got {n_draws!r}"):
        query_uniforms(QueryLayout(np.array([0, 0, 1])), 0, n_draws)


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
