"""BoltzRankLoss (skrank/losses/_boltzrank.py): the energy, the rank samples, the objective.

The loss contract (gradients, order invariance, subsets, seeds) is in
tests/losses/test_base.py and the ranker in tests/rankers/test_boltzrank.py;
here are the checks specific to Volkovs and Zemel (ICML 2009), among them
Fig. 2 of the paper: three documents with mean scores uniform on [0, 2] and
independent Gaussian score noise (sigma = 0.2). The true distribution over the
6 rank vectors is computed by quadrature and checked against Monte Carlo and
the exact pairwise probabilities; it is then approximated by BoltzRank's
Boltzmann distribution (scale fitted on separate score vectors) and by the
normalised product of SoftRank's rank marginals, compared by KL(true ||
approximation). examples/plot_boltzrank_distributions.py runs the same
comparison on 500 score vectors.
"""

import itertools
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, ndtr, softmax, xlogy

from skrank import BoltzRankRanker, get_ranking_scorer, make_ranking, ndcg_score
from skrank.losses import BoltzRankLoss, SoftRankLoss
from skrank.losses._boltzrank import boltzrank_samples, label_levels
from skrank.losses._sampled import coefficient_dtype
from skrank.metrics import make_ranking_scorer
from skrank.utils import QueryLayout

from tests._inputs import THREE_EPOCHS


def _energy_double_sum(s, r):
    """Eq. 4-5 as printed: 2/(m(m-1)) sum over r_j > r_k of g(r_j - r_k)(s_j - s_k)."""
    m = len(s)
    total = 0.0
    for j, k in itertools.permutations(range(m), 2):
        if r[j] > r[k]:
            total += 2.0 * (r[j] - r[k]) / (m - 1) * (s[j] - s[k])
    return 2.0 / (m * (m - 1)) * total


def _dcg_at(labels, ranks, k):
    gains = 2.0 ** labels - 1.0
    return float(np.sum(np.where(ranks <= k, gains / np.log2(1.0 + ranks), 0.0)))


def _ndcg_at(labels, ranks, k):
    ideal = _dcg_at(np.sort(labels)[::-1], np.arange(1, len(labels) + 1), k)
    return _dcg_at(labels, ranks, k) / ideal if ideal > 0 else 0.0


@pytest.fixture
def graded(rng):
    """Three queries of 6, 9 and 4 documents with labels 0-2, rows interleaved."""
    sizes = [6, 9, 4]
    qid = np.repeat([5, 2, 8], sizes)
    y = np.concatenate([rng.permutation(np.arange(n) % 3) for n in sizes]).astype(float)
    perm = rng.permutation(qid.size)
    return y[perm], rng.normal(size=qid.size), qid[perm]


# ----------------------------------------------------------------------
# The energy
@pytest.mark.parametrize("m", [2, 3, 7])
def test_energy_closed_form_equals_the_double_sum(rng, m):
    s = rng.normal(size=m)
    ranks = np.column_stack([rng.permutation(m) + 1 for _ in range(5)])
    closed = BoltzRankLoss.energy(s, ranks)
    assert_allclose(closed, [_energy_double_sum(s, ranks[:, i]) for i in range(5)],
                    rtol=1e-12, atol=1e-15)


def test_energy_is_lowest_for_the_ranking_by_score(rng):
    s = rng.normal(size=5)
    perms = np.array(list(itertools.permutations(range(1, 6)))).T
    energies = BoltzRankLoss.energy(s, perms)
    best = perms[:, np.argmin(energies)]
    np.testing.assert_array_equal(best, np.argsort(np.argsort(-s)) + 1)


def test_probabilities_are_the_boltzmann_distribution_over_the_samples(graded):
    y, s, qid = graded
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=20)
    state = loss.prepare(y, layout, random_state=0)
    prob = loss.probabilities(s, state)
    assert prob.shape == (3, 20)
    assert_allclose(prob.sum(axis=1), 1.0, rtol=1e-12)
    ranks = state.ranks
    s_sorted = layout.to_sorted(s)
    for q, (a, b) in enumerate(zip(layout.offsets[:-1], layout.offsets[1:])):
        energies = np.array([_energy_double_sum(s_sorted[a:b], ranks[a:b, i])
                             for i in range(20)])
        assert_allclose(prob[q], softmax(-energies), rtol=1e-10)


def test_label_sorted_sample_has_the_highest_target_probability(graded):
    y, _, qid = graded
    state = BoltzRankLoss(n_rankings=50).prepare(y, QueryLayout(qid), random_state=1)
    target = state.target
    assert_allclose(target.sum(axis=1), 1.0, rtol=1e-12)
    assert (target[:, 0] >= target.max(axis=1) - 1e-15).all()


def test_target_temperature_sharpens_the_target(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)

    def entropy(temperature):
        t = BoltzRankLoss(n_rankings=30, target_temperature=temperature).prepare(
            y, layout, random_state=0).target
        return -(t * np.log(t)).sum(axis=1)

    assert (entropy(0.1) < entropy(1.0)).all()
    assert (entropy(1.0) < np.log(30)).all()


# ----------------------------------------------------------------------
# Rank samples
def test_samples_are_permutations_and_the_first_sorts_by_label(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)
    y_sorted = layout.to_sorted(y)
    ranks = boltzrank_samples(y_sorted, layout, 40, 0)
    assert ranks.shape == (len(y), 40)
    assert ranks.dtype == coefficient_dtype(layout.max_size)
    for a, b in zip(layout.offsets[:-1], layout.offsets[1:]):
        block = ranks[a:b]
        np.testing.assert_array_equal(np.sort(block, axis=0),
                                      np.arange(1, b - a + 1)[:, None] + 0 * block)
        order = np.argsort(block[:, 0])
        assert (np.diff(y_sorted[a:b][order]) <= 0).all()


def test_queries_of_one_label_get_random_permutations():
    qid = np.repeat([0, 1, 2], [5, 4, 6])
    y = np.r_[np.full(5, 1.0), [0.0, 2.0, 1.0, 0.0], np.zeros(6)]
    layout = QueryLayout(qid)
    ranks = boltzrank_samples(y, layout, 30, 0)
    for a, b in zip(layout.offsets[:-1], layout.offsets[1:]):
        np.testing.assert_array_equal(np.sort(ranks[a:b], axis=0),
                                      np.repeat(np.arange(1, b - a + 1)[:, None], 30, axis=1))
    assert len({tuple(col) for col in ranks[:5].T}) > 10  # ties broken at random


@pytest.mark.parametrize("tie_bits", [0, 3])
def test_samples_with_few_random_bits_still_sort_by_level_then_row(rng, monkeypatch,
                                                                   tie_bits):
    """Fewer random tie-break bits (when a chunk needs them for the query number, the
    level and the place): every sample is still a permutation ordered by its levels, the
    label-sorted one by label, and its ties fall to row order where no bit is left."""
    import skrank.losses._boltzrank as boltzrank

    qid = rng.permutation(np.repeat([4, 9, 1], [30, 17, 12]))
    y = rng.integers(0, 4, size=qid.size).astype(float)
    layout = QueryLayout(qid)
    y_sorted = layout.to_sorted(y)
    key_bits = boltzrank._key_bits
    monkeypatch.setattr(boltzrank, "_key_bits",
                        lambda *args: (key_bits(*args)[0], tie_bits, key_bits(*args)[2]))
    ranks = boltzrank_samples(y_sorted, layout, 25, 0)
    for a, b in zip(layout.offsets[:-1], layout.offsets[1:]):
        np.testing.assert_array_equal(np.sort(ranks[a:b], axis=0),
                                      np.repeat(np.arange(1, b - a + 1)[:, None], 25, axis=1))
        first = np.argsort(ranks[a:b, 0])
        assert (np.diff(y_sorted[a:b][first]) <= 0).all()
        if tie_bits == 0:  # equal labels in row order
            np.testing.assert_array_equal(first, np.lexsort((np.arange(b - a), -y_sorted[a:b])))
    assert key_bits(3000, 5, 900) == (3, 32, 10)
    assert key_bits(2**20, 2**10, 2**14) == (10, 20, 14)  # 20 + 10 + 14 + 20


@pytest.mark.parametrize("sizes", [[1, 2, 130, 257, 600, 3, 3], [5, 5, 5], [300], [1]])
def test_sort_within_queries_is_the_sort_of_keys_led_by_the_query_number(rng, sizes):
    """The padded per-query sort gives the whole row's sort: the keys carry the
    query's number in their highest bits (blocks with and without padding, a
    query of one row, queries past the 256 keys of NumPy's short-row sort)."""
    from skrank.losses._boltzrank import _sort_within_queries

    qid = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    layout = QueryLayout(qid)
    low = rng.integers(0, 2**40, size=(7, layout.n_samples), dtype=np.uint64)
    low[:, ::3] = low[:, :1]  # repeated keys within a row
    key = (layout.sorted_codes.astype(np.uint64) << np.uint64(48))[None, :] | low
    expected = np.sort(key, axis=1)
    _sort_within_queries(key, layout)
    np.testing.assert_array_equal(key, expected)


def test_samples_are_the_same_bit_for_bit_whatever_the_rows_order_in_memory(rng):
    """The ranks written into a caller's buffer (the chunked setup) equal those
    returned; a buffer that is not C-contiguous gets the same values."""
    from skrank.losses._boltzrank import _samples

    qid = rng.permutation(np.repeat(np.arange(6), [1, 40, 300, 7, 7, 90]))
    y = rng.integers(0, 3, size=qid.size).astype(float)
    layout = QueryLayout(qid)
    y_sorted = layout.to_sorted(y)
    ranks, order = _samples(y_sorted, layout, 9, 4)
    buffer = np.zeros((9, layout.n_samples), dtype=ranks.dtype).T  # F-ordered
    written, order2 = _samples(y_sorted, layout, 9, 4, out=buffer)
    assert written is buffer
    np.testing.assert_array_equal(buffer, ranks)
    np.testing.assert_array_equal(order, order2)
    # order[s] lists sample s's rows from the top: ranks are its inverse
    for s in range(9):
        np.testing.assert_array_equal(ranks[order[s], s],
                                      layout.index_in_query + 1)


def test_rank_dtype_is_the_smallest_that_holds_the_query():
    assert coefficient_dtype(100) == np.int8
    assert coefficient_dtype(200) == np.int16
    assert coefficient_dtype(32767) == np.int16
    assert coefficient_dtype(32768) == np.int32


def test_label_levels_are_dense_ranks_per_query():
    layout = QueryLayout(np.array([0, 0, 0, 1, 1, 1, 1]))
    level, n_levels = label_levels(np.array([4.0, 0.0, 4.0, 1.0, 3.0, 2.0, 1.0]), layout)
    np.testing.assert_array_equal(level, [1, 0, 1, 0, 2, 1, 0])
    np.testing.assert_array_equal(n_levels, [2, 3])


def _perturbations(y_sorted, ranks):
    """For every non-first sample of one query: the label pairs it puts out of
    order, and whether the documents of label 1 stay one contiguous run."""
    result = []
    for i in range(1, ranks.shape[1]):
        labels = y_sorted[np.argsort(ranks[:, i])]
        inverted = {(labels[p], lab) for p in range(len(labels))
                    for lab in labels[p + 1:][labels[p + 1:] > labels[p]]}
        ones = np.flatnonzero(labels == 1.0)
        result.append((inverted, ones[-1] - ones[0] == len(ones) - 1))
    return result


def test_three_level_mix_matches_the_paper():
    """§4.2: 35% swap 2 and 1, 20% swap 1 and 0, the rest swap 2 and 0 or permute."""
    y = np.repeat([0.0, 1.0, 2.0], [40, 15, 5])
    layout = QueryLayout(np.zeros(60, dtype=int))
    samples = _perturbations(y, boltzrank_samples(y, layout, 2000, 3))
    share = {
        "2-1": np.mean([inv == {(1.0, 2.0)} for inv, _ in samples]),
        "1-0": np.mean([inv == {(0.0, 1.0)} for inv, _ in samples]),
        # swapping 2 and 0 leaves the 1s in one run between the swapped documents
        "2-0": np.mean([(0.0, 2.0) in inv and run for inv, run in samples]),
        "permuted": np.mean([len(inv) == 3 and not run for inv, run in samples]),
    }
    # a swap can flip nobody (then the sample keeps the label order), so the
    # observed shares of the swaps sit a little below the nominal ones
    assert 0.30 < share["2-1"] <= 0.37
    assert 0.16 < share["1-0"] <= 0.22
    assert 0.18 < share["2-0"] <= 0.25
    assert 0.20 < share["permuted"] <= 0.25


@pytest.mark.parametrize("levels", [2, 5])
def test_other_label_sets_get_a_full_range_of_gains(rng, levels):
    y = rng.integers(0, levels, size=80).astype(float)
    layout = QueryLayout(np.zeros(80, dtype=int))
    state = BoltzRankLoss(n_rankings=400).prepare(y, layout, random_state=0)
    gains = state.gains[0]
    assert gains[0] == pytest.approx(1.0)
    low, high = np.quantile(gains, [0.1, 0.9])
    assert low < 0.4 and high > 0.85 and 0.3 < np.median(gains) < 0.95


def test_gains_are_the_metric_of_each_sample(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)
    for gain, oracle in [("ndcg@3", lambda lab, r: _ndcg_at(lab, r, 3)),
                         ("ndcg", lambda lab, r: _ndcg_at(lab, r, len(lab)))]:
        state = BoltzRankLoss(n_rankings=15, metric=gain).prepare(y, layout, random_state=2)
        ranks, y_sorted = state.ranks, layout.to_sorted(y)
        for q, (a, b) in enumerate(zip(layout.offsets[:-1], layout.offsets[1:])):
            expected = [oracle(y_sorted[a:b], ranks[a:b, i]) for i in range(15)]
            assert_allclose(state.gains[q], expected, rtol=1e-12)


def test_map_gain(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)
    state = BoltzRankLoss(n_rankings=10, metric="map").prepare(y, layout, random_state=0)
    ranks, y_sorted = state.ranks, layout.to_sorted(y)
    a, b = layout.offsets[0], layout.offsets[1]
    for i in range(10):
        relevant = np.sort(ranks[a:b, i][y_sorted[a:b] >= 1])
        ap = np.mean(np.arange(1, len(relevant) + 1) / relevant)
        assert state.gains[0, i] == pytest.approx(ap, rel=1e-12)


# ----------------------------------------------------------------------
# The objective
@pytest.mark.parametrize("gain_weight", [0.0, 0.9, 1.0])
def test_objective_equals_a_direct_implementation(graded, gain_weight):
    y, s, qid = graded
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=12, gain_weight=gain_weight, metric="ndcg@5")
    state = loss.prepare(y, layout, random_state=4)
    value, _ = loss.value_and_grad(s, state)
    ranks = state.ranks
    s_sorted, y_sorted = layout.to_sorted(s), layout.to_sorted(y)
    values = []
    for a, b in zip(layout.offsets[:-1], layout.offsets[1:]):
        r = ranks[a:b]
        log_p = log_softmax(-BoltzRankLoss.energy(s_sorted[a:b], r))
        target = softmax(-BoltzRankLoss.energy(y_sorted[a:b], r))
        gains = [_ndcg_at(y_sorted[a:b], r[:, i], 5) for i in range(12)]
        values.append(-gain_weight * np.exp(log_p) @ gains
                      + (1 - gain_weight) * -(target @ log_p))
    assert_allclose(value, np.mean(values), rtol=1e-10)


def test_likelihood_is_minus_the_log_probability_of_the_label_sorted_sample(graded):
    y, s, qid = graded
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=12, objective="likelihood")
    state = loss.prepare(y, layout, random_state=4)
    value, _ = loss.value_and_grad(s, state)
    prob = loss.probabilities(s, state)
    assert_allclose(value, -np.log(prob[:, 0]).mean(), rtol=1e-12)


def test_queries_with_equal_labels_contribute_nothing(rng):
    qid = np.repeat([0, 1], [5, 4])
    y = np.r_[np.full(5, 2.0), [0.0, 1.0, 2.0, 0.0]]
    s = rng.normal(size=9)
    loss = BoltzRankLoss(n_rankings=8)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=0)
    value, grad = loss.value_and_grad(s, state)
    assert_allclose(grad[:5], 0.0)
    alone = loss.value_and_grad(s[5:], loss.prepare(y[5:], QueryLayout(qid[5:]),
                                                    random_state=0))[0]
    assert value == pytest.approx(alone / 2, rel=1e-12)  # the mean counts both queries


def test_the_objective_favours_scores_that_agree_with_the_labels(graded):
    y, s, qid = graded
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=50)
    state = loss.prepare(y, layout, random_state=0)
    assert loss.value_and_grad(5 * y, state)[0] < loss.value_and_grad(-5 * y, state)[0]
    assert loss.value_and_grad(5 * y, state)[0] < loss.value_and_grad(s, state)[0]


def test_chunks_of_queries_equal_one_pass(graded, monkeypatch):
    import skrank.losses._sampled as sampled

    y, s, qid = graded
    loss = BoltzRankLoss(n_rankings=10)
    state = loss.prepare(y, QueryLayout(qid), random_state=0)
    value, grad = loss.value_and_grad(s, state)
    monkeypatch.setattr(sampled, "MAX_CELLS", 50)  # every query on its own
    value_c, grad_c = loss.value_and_grad(s, state)
    assert_allclose(value_c, value, rtol=1e-13)
    assert_allclose(grad_c, grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("params", [{}, {"objective": "likelihood"}, {"metric": "map"},
                                    {"target_temperature": 0.5}], ids=str)
@pytest.mark.parametrize("seed", [0, np.random.RandomState(4)], ids=["int", "RandomState"])
def test_setup_in_chunks_of_queries_equals_one_pass(graded, monkeypatch, params, seed):
    import skrank.losses._boltzrank as boltzrank

    y, _, qid = graded
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=10, **params)
    state = loss.prepare(y, layout, random_state=clone_seed(seed))
    monkeypatch.setattr(boltzrank, "SETUP_CELLS", 60)  # six rows: one query at a time
    assert len(list(layout.ranges(60 // 10))) == layout.n_queries
    chunked = loss.prepare(y, layout, random_state=clone_seed(seed))
    assert chunked.ranks.dtype == state.ranks.dtype
    np.testing.assert_array_equal(chunked.ranks, state.ranks)
    assert chunked.arrays().keys() == state.arrays().keys()
    for name, value in state.arrays().items():
        np.testing.assert_array_equal(getattr(chunked, name), value, err_msg=name)
    # the samples are not all alike: the comparison could fail
    assert len(np.unique(state.ranks, axis=1)) > 1


def test_setup_memory_is_bounded_by_the_chunk_not_the_data(monkeypatch):
    import tracemalloc

    import skrank.losses._boltzrank as boltzrank

    X, y, qid = make_ranking(n_queries=100, n_docs=(20, 80), n_features=1, random_state=0)
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=50)
    monkeypatch.setattr(boltzrank, "SETUP_CELLS", 2**13)
    tracemalloc.start()
    try:
        state = loss.prepare(y, layout, random_state=0)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n_cells = layout.n_samples * 50  # ~250,000: drawn at once, some 40 MB of temporaries
    assert state.ranks.size == n_cells
    # temporaries of one chunk of 2**13 cells (~60 bytes each), whatever the data's size
    assert peak - kept < 2**13 * 200 + 2**20


def clone_seed(seed):
    """The same seed again (a RandomState is consumed by drawing from it)."""
    if isinstance(seed, np.random.RandomState):
        copy = np.random.RandomState()
        copy.set_state(seed.get_state())
        return copy
    return seed


@pytest.mark.parametrize(
    "params, match",
    [
        ({"gain_weight": 1.5}, "gain_weight"),
        ({"gain_weight": -0.1}, "gain_weight"),
        ({"n_rankings": 1}, "n_rankings"),
        ({"objective": "kl"}, "objective"),
        ({"metric": "ndgc@10"}, "metric"),
        ({"metric": 3}, "metric"),
        ({"target_temperature": 0.0}, "target_temperature"),
    ],
)
def test_loss_rejects_bad_parameters(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BoltzRankLoss(**params)


def test_default_gain_refuses_labels_it_cannot_score():
    layout = QueryLayout(np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="metric=.*cannot score the labels y"):
        BoltzRankLoss(n_rankings=4).prepare(np.array([0.0, 2000.0, 1.0]), layout)
    linear = make_ranking_scorer("ndcg", k=10, gain="linear")
    state = BoltzRankLoss(n_rankings=4, metric=linear).prepare(np.array([0.0, 2000.0, 1.0]),
                                                            layout, random_state=0)
    assert np.isfinite(state.gains).all()


def test_tied_sort_keys_fall_back_to_row_order(rng, monkeypatch):
    """Equal tie-breaks (a 32-bit collision, forced here) order rows by their place in the
    query, as a stable sort does."""
    import skrank.losses._boltzrank as boltzrank

    qid = rng.permutation(np.repeat([3, 1, 2], [150, 90, 40]))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    layout = QueryLayout(qid)
    y_sorted = layout.to_sorted(y)
    monkeypatch.setattr(boltzrank, "query_bits",
                        lambda layout, seed, k, draws_first: np.zeros((k, layout.n_samples),
                                                                      np.uint64))
    ranks = boltzrank_samples(y_sorted, layout, 5, 0)
    # the label-sorted sample: by label, then row order among equal labels
    for lo, hi in zip(layout.offsets[:-1], layout.offsets[1:]):
        order = np.lexsort((np.arange(hi - lo), -y_sorted[lo:hi]))
        expected = np.empty(hi - lo, dtype=int)
        expected[order] = np.arange(1, hi - lo + 1)
        np.testing.assert_array_equal(ranks[lo:hi, 0], expected)


def test_metric_is_a_name_a_function_or_a_scorer():
    """The gains of a metric given by name, as a function and as a scorer are the same."""
    from functools import partial

    from skrank.metrics import precision_at_k

    X, y, qid = make_ranking(n_queries=6, n_docs=(3, 9), n_levels=3, random_state=1)
    gains = {}
    for key, metric in [
        ("ndcg name", "ndcg@3"), ("ndcg function", partial(ndcg_score, k=3)),
        ("ndcg scorer", get_ranking_scorer("ndcg@3")),
        ("p name", "p@3"), ("p function", partial(precision_at_k, k=3)),
        ("p scorer", make_ranking_scorer("precision", k=3)),
    ]:
        state = BoltzRankLoss(8, metric=metric).prepare(y, qid, random_state=0)
        gains[key] = state.rank_samples().gains
    for name in ("ndcg", "p"):
        assert_allclose(gains[f"{name} function"], gains[f"{name} name"], rtol=1e-12)
        assert_allclose(gains[f"{name} scorer"], gains[f"{name} name"], rtol=1e-12)
    assert not np.allclose(gains["ndcg name"], gains["p name"])
    # a function must give one value per query with average=False
    with pytest.raises(ValueError, match=r"^metric=.* must return one value per query"):
        BoltzRankLoss(8, metric=lambda y, s, *, qid, average: np.zeros(3)).prepare(
            y, qid, random_state=0)


def _mean_top_label(y_true, y_score, *, qid):
    """A metric without ``average``: it cannot give the gain of each sampled ranking."""
    return 0.0


@pytest.mark.parametrize("metric, asker", [
    (_mean_top_label, r"metric=_mean_top_label of BoltzRankLoss \(the gain of each sampled "
                      r"ranking, per query\)"),
    (make_ranking_scorer(_mean_top_label),
     r"make_ranking_scorer\('_mean_top_label'\) as a per-query metric"),
], ids=["function", "scorer"])
def test_metric_without_average_is_named_when_the_loss_is_made(metric, asker):
    # the metric's own "unexpected keyword argument 'average'" came out of the fit
    with pytest.raises(TypeError, match=rf"^{asker} needs a metric that accepts an 'average' "
                                        r"parameter .*; the metric '_mean_top_label' does "
                                        r"not: _mean_top_label\(y_true, y_score, \*, qid\)\.$"):
        BoltzRankLoss(8, metric=metric)


# ----------------------------------------------------------------------------
# Fig. 2 of the paper: the Boltzmann distribution against the true distribution of
# the ranks of noisy scores (see _true_distribution)
SIGMA = 0.2


# RANKS[j, k]: rank (1 is the top) of document j in rank vector k.
RANKS = np.array(list(itertools.permutations([1, 2, 3]))).T
ORDERS = np.argsort(RANKS, axis=0)  # ORDERS[i, k]: document at rank i + 1
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / np.sqrt(2.0 * np.pi)
LOG_BETA_BOUNDS = (np.log(0.1), np.log(100.0))
N_SE = 5  # margin of the comparisons, in standard errors of the means


def _true_distribution(S):
    """P(R) for each row of mean scores S (n, 3) -> (n, 6), by Gauss-Hermite quadrature.

    P(s_a > s_b > s_c) = E_x[Phi((mu_a - x)/sigma) Phi((x - mu_c)/sigma)],
    x ~ N(mu_b, sigma^2): given the middle score the other two are independent.
    """
    a, b, c = (S[:, ORDERS[i]][..., None] for i in range(3))
    x = b + SIGMA * NODES
    return (ndtr((a - x) / SIGMA) * ndtr((x - c) / SIGMA)) @ WEIGHTS


def _monte_carlo(s, n_draws, rng):
    """Frequencies of the 6 rank vectors among noisy draws of the scores s."""
    noisy = s + SIGMA * rng.standard_normal((n_draws, 3))
    ranks = np.argsort(np.argsort(-noisy, axis=1), axis=1) + 1
    code = ranks @ np.array([9, 3, 1])
    codes = RANKS.T @ np.array([9, 3, 1])
    return (code[:, None] == codes).mean(axis=0)


def _energies(S):
    return np.stack([BoltzRankLoss.energy(s, RANKS) for s in S])


def _boltzmann(S, beta):
    return log_softmax(-beta * _energies(S), axis=1)


def _softrank(S, kind):
    """log P(R) proportional to prod_j p_j(r_j), SoftRank's marginals p_j."""
    qid = np.repeat(np.arange(len(S)), 3)
    loss = SoftRankLoss(sigma=SIGMA, rank_distribution=kind)
    M = np.stack(loss.rank_distributions(S.ravel(), qid=qid))
    with np.errstate(divide="ignore"):
        logq = np.log(M[:, np.arange(3)[:, None], RANKS - 1]).sum(axis=1)
    return log_softmax(logq, axis=1)


def _kl(P, logQ):
    """KL(P || Q) per row; inf where Q is 0 and P is not."""
    with np.errstate(invalid="ignore"):
        return (xlogy(P, P) - np.where(P > 0, P * logQ, 0.0)).sum(axis=1)


def _fit_beta(S, P):
    fit = minimize_scalar(
        lambda log_beta: _kl(P, _boltzmann(S, np.exp(log_beta))).mean(),
        bounds=LOG_BETA_BOUNDS, method="bounded", options={"xatol": 1e-6},
    )
    return float(np.exp(fit.x))


def _upper(kl):
    return kl.mean() + N_SE * kl.std(ddof=1) / np.sqrt(len(kl))


def _lower(kl):
    # a mean with an infinite term is infinite
    if np.isinf(kl).any():
        return np.inf
    return kl.mean() - N_SE * kl.std(ddof=1) / np.sqrt(len(kl))


APPROXIMATIONS = {
    "boltzmann": lambda S: _boltzmann(S, 5.0),
    "normal": lambda S: _softrank(S, "normal"),
    "binomial": lambda S: _softrank(S, "binomial"),
}


def _energy_by_pairs(s, ranks):
    """E(R|S) of eq. 4-5 pair by pair, with g(x) = 2x/(m-1) (§4.2): not skrank's closed form.

    E = 2/(m(m-1)) sum over ordered pairs with r_j > r_k of g(r_j - r_k)(s_j - s_k).
    """
    m = len(s)
    pairs = [(j, k) for j in range(m) for k in range(m) if ranks[j] > ranks[k]]
    return 2.0 / (m * (m - 1)) * sum(
        2.0 * (ranks[j] - ranks[k]) / (m - 1) * (s[j] - s[k]) for j, k in pairs)


def _boltzmann_weights(S, beta):
    """exp(-beta E(R|S)) for each rank vector, shifted by the smallest energy."""
    E = np.array([[_energy_by_pairs(s, RANKS[:, k]) for k in range(RANKS.shape[1])]
                  for s in S])
    return np.exp(-beta * (E - E.min(axis=1, keepdims=True)))


def _rank_marginals(S, kind):
    """p_j(r) of SoftRank from the contests pi_ij = Phi((s_i - s_j) / (sqrt(2) sigma)).

    The rank of j (0 is the top) counts the independent contests it loses:
    "binomial" adds them one at a time (eq. 11-12), "normal" (§3.6) takes
    the normal of their mean and variance (plus skrank's variance floor,
    1e-12) over [r - 1/2, r + 1/2], renormalised over the ranks.
    """
    n, m = S.shape
    pi = ndtr((S[:, :, None] - S[:, None, :]) / (np.sqrt(2.0) * SIGMA))  # pi[:, i, j]
    P = np.empty((n, m, m))
    for j in range(m):
        p = pi[:, [i for i in range(m) if i != j], j]
        if kind == "binomial":
            dist = np.zeros((n, m))
            dist[:, 0] = 1.0
            for i in range(m - 1):
                beaten = dist * p[:, i:i + 1]
                dist = dist * (1.0 - p[:, i:i + 1])
                dist[:, 1:] += beaten[:, :-1]
        else:
            mean = p.sum(axis=1, keepdims=True)
            sd = np.sqrt((p * (1.0 - p)).sum(axis=1, keepdims=True) + 1e-12)
            r = np.arange(m)
            dist = ndtr((r + 0.5 - mean) / sd) - ndtr((r - 0.5 - mean) / sd)
            dist /= dist.sum(axis=1, keepdims=True)
        P[:, j] = dist
    return P


def _softrank_weights(S, kind):
    """prod_j p_j(r_j) for each rank vector."""
    P = _rank_marginals(S, kind)
    return np.prod(P[:, np.arange(3)[:, None], RANKS - 1], axis=1)


#: Unnormalised weights of each approximation, computed without skrank.
WEIGHTS_BY_HAND = {
    "boltzmann": lambda S: _boltzmann_weights(S, 5.0),
    "normal": lambda S: _softrank_weights(S, "normal"),
    "binomial": lambda S: _softrank_weights(S, "binomial"),
}


@pytest.fixture(scope="module")
def fig2_scores():
    """200 score vectors to fit beta on and 200 others to compare on."""
    rng = np.random.default_rng(2009)
    return rng.uniform(0.0, 2.0, size=(200, 3)), rng.uniform(0.0, 2.0, size=(200, 3))


@pytest.fixture(scope="module")
def comparison(fig2_scores):
    S_fit, S_test = fig2_scores
    beta = _fit_beta(S_fit, _true_distribution(S_fit))
    P = _true_distribution(S_test)
    kl = {
        "boltzmann": _kl(P, _boltzmann(S_test, beta)),
        "normal": _kl(P, _softrank(S_test, "normal")),
        "binomial": _kl(P, _softrank(S_test, "binomial")),
        "uniform": _kl(P, np.full((len(S_test), 6), -np.log(6.0))),
    }
    return beta, kl


# ----------------------------------------------------------------------
# The true distribution
@pytest.mark.parametrize(
    "s", [[1.0, 1.1, 0.9], [0.2, 1.0, 1.9], [1.3, 1.25, 0.4], [0.7, 0.7, 0.7]]
)
def test_true_distribution_matches_monte_carlo(s):
    s = np.asarray(s)
    n_draws = 200_000
    p = _true_distribution(s[None])[0]
    freq = _monte_carlo(s, n_draws, np.random.default_rng(7))
    se = np.sqrt(p * (1.0 - p) / n_draws)
    assert np.all(np.abs(freq - p) <= N_SE * se), (freq, p)


def test_true_distribution_sums_to_one_and_gives_pairwise_probabilities(fig2_scores):
    S = fig2_scores[1]
    P = _true_distribution(S)
    assert np.all(P > 0)
    assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-13)
    for a, b in itertools.permutations(range(3), 2):
        above = RANKS[a] < RANKS[b]
        # the two noisy scores differ by N(mu_a - mu_b, 2 sigma^2)
        exact = ndtr((S[:, a] - S[:, b]) / (np.sqrt(2.0) * SIGMA))
        assert_allclose(P[:, above].sum(axis=1), exact, rtol=0, atol=1e-13)


def test_softrank_sigma_is_the_noise_of_one_score(fig2_scores):
    # A two-document SoftRank query ranks a first with the probability that
    # the noisy score of a exceeds that of b, under the true model's sigma.
    S = fig2_scores[1][:20]
    P = _true_distribution(S)
    above = RANKS[0] < RANKS[1]
    loss = SoftRankLoss(sigma=SIGMA, rank_distribution="binomial")  # the exact model
    for s, p in zip(S, P):
        top = loss.rank_distributions(s[:2])[0][0, 0]
        assert_allclose(top, p[above].sum(), rtol=0, atol=1e-12)


def test_equal_scores_give_the_uniform_distribution():
    P = _true_distribution(np.full((1, 3), 0.7))
    assert_allclose(P, 1.0 / 6.0, rtol=0, atol=1e-14)


# ----------------------------------------------------------------------
# The approximations
@pytest.mark.parametrize("name", APPROXIMATIONS)
def test_approximation_is_a_distribution_over_rank_vectors(name, fig2_scores):
    """Q over the 6 rank vectors is the approximation's weights, normalised.

    The helpers end in a log-softmax, so Q sums to 1 whatever skrank's
    energies or rank marginals are: Q is compared with the weights computed
    by hand from the papers' formulas (:data:`WEIGHTS_BY_HAND`), normalised.
    """
    S = fig2_scores[1]
    Q = np.exp(APPROXIMATIONS[name](S))
    assert Q.shape == (len(S), 6)
    assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    weights = WEIGHTS_BY_HAND[name](S)
    assert np.all(weights >= 0) and np.all(weights.sum(axis=1) > 0)
    assert_allclose(Q, weights / weights.sum(axis=1, keepdims=True), rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
def test_boltzmann_mode_sorts_by_score(beta, fig2_scores):
    S = fig2_scores[1]
    by_score = np.argsort(np.argsort(-S, axis=1), axis=1) + 1  # (n, 3), 1 is the top
    mode = RANKS[:, np.argmax(_boltzmann(S, beta), axis=1)].T
    np.testing.assert_array_equal(mode, by_score)
    np.testing.assert_array_equal(np.argmin(_energies(S), axis=1),
                                  np.argmax(_boltzmann(S, beta), axis=1))


# ----------------------------------------------------------------------
# Fig. 2: KL(true || approximation), beta fitted on separate score vectors
def test_kl_values_are_valid(comparison):
    beta, kl = comparison
    assert LOG_BETA_BOUNDS[0] + 0.1 < np.log(beta) < LOG_BETA_BOUNDS[1] - 0.1
    for name, values in kl.items():
        assert not np.isnan(values).any(), name
        assert np.all(values >= -1e-12), name
    # skrank's Normal masses above the mean are differences of normal CDFs:
    # below about 1e-16 they round to 0, and the KL is infinite there.
    for name in ["boltzmann", "binomial", "uniform"]:
        assert np.all(np.isfinite(kl[name])), name


@pytest.mark.parametrize("other", ["normal", "binomial"])
def test_boltzmann_has_the_smallest_kl(comparison, other):
    _, kl = comparison
    assert _upper(kl["boltzmann"]) < _lower(kl[other])


@pytest.mark.parametrize("name", ["boltzmann", "normal", "binomial"])
def test_uniform_distribution_has_a_larger_kl(comparison, name):
    _, kl = comparison
    finite = np.isfinite(kl[name])  # all but some of the Normal's
    assert finite.mean() > 0.25
    assert _lower(kl["uniform"][finite]) > _upper(kl[name][finite])


def test_fitted_beta_is_best_on_the_comparison_vectors(comparison, fig2_scores):
    beta, kl = comparison
    P = _true_distribution(fig2_scores[1])
    for factor in [0.5, 2.0]:
        worse = _kl(P, _boltzmann(fig2_scores[1], factor * beta))
        assert worse.mean() > _upper(kl["boltzmann"])


# ----------------------------------------------------------------------------
# Extreme gains and labels: a metric returning NaN, infinite gains, huge labels
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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
    target = state.target
    assert np.isfinite(target).all()
    assert_allclose(target.sum(axis=1), 1.0, rtol=1e-12)
    value, grad = loss.value_and_grad(eight_queries_scores, state)
    assert np.isfinite(value) and np.isfinite(grad).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


def _nan_metric(y_true, y_score, *, qid, average=True):
    """A metric that returns NaN for every query."""
    return np.nan if average else np.full(len(np.unique(qid)), np.nan)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_nan_gains_of_queries_with_equal_labels_are_unused_and_accepted():
    """no_relevant='skip' gives NaN to a query without relevant documents: it contributes 0."""
    from functools import partial

    from skrank.metrics import ndcg_score

    y, qid = np.array([0, 0, 0, 1, 2, 0]), np.array([0, 0, 0, 1, 1, 1])
    loss = BoltzRankLoss(4, metric=partial(ndcg_score, no_relevant="skip"))
    state = loss.prepare(y, qid, random_state=0)
    assert np.isnan(state.gains[0]).all()
    value, grad = loss.value_and_grad(np.arange(6.0), state)
    assert np.isfinite(value) and np.isfinite(grad).all() and (grad[:3] == 0).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_ranker_names_the_metric_not_the_step_size(eight_queries):
    """The fit raised a DivergenceError blaming learning_rate_init and X."""
    X, y, qid = eight_queries
    with pytest.raises(ValueError, match=r"^metric=<function _nan_metric .*> returned NaN"):
        BoltzRankRanker(metric=_nan_metric, **THREE_EPOCHS).fit(X, y, qid=qid)
