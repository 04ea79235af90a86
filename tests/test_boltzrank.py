"""BoltzRank: the energy, the rank samples, the objective, and the ranker.

The loss contract (gradients, order invariance, subsets, seeds) is in
test_losses.py and the shared fit loop in test_fit_loop.py; here are the
checks specific to Volkovs and Zemel (ICML 2009).
"""

import itertools
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import log_softmax, softmax

from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrank import BoltzRankRanker, RankerSearchCV, get_ranking_scorer, make_ranking, ndcg_score
from skrank.losses import BoltzRankLoss
from skrank.losses._boltzrank import boltzrank_samples, label_levels
from skrank.losses._sampled import coefficient_dtype
from skrank.metrics import make_ranking_scorer
from skrank.utils import QueryLayout


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
    ranks = state.per_row["ranks"]
    s_sorted = layout.to_sorted(s)
    for q, (a, b) in enumerate(zip(layout.offsets[:-1], layout.offsets[1:])):
        energies = np.array([_energy_double_sum(s_sorted[a:b], ranks[a:b, i])
                             for i in range(20)])
        assert_allclose(prob[q], softmax(-energies), rtol=1e-10)


def test_label_sorted_sample_has_the_highest_target_probability(graded):
    y, _, qid = graded
    state = BoltzRankLoss(n_rankings=50).prepare(y, QueryLayout(qid), random_state=1)
    target = state.per_query["target"]
    assert_allclose(target.sum(axis=1), 1.0, rtol=1e-12)
    assert (target[:, 0] >= target.max(axis=1) - 1e-15).all()


def test_target_temperature_sharpens_the_target(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)

    def entropy(temperature):
        t = BoltzRankLoss(n_rankings=30, target_temperature=temperature).prepare(
            y, layout, random_state=0).per_query["target"]
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
    gains = state.per_query["gains"][0]
    assert gains[0] == pytest.approx(1.0)
    low, high = np.quantile(gains, [0.1, 0.9])
    assert low < 0.4 and high > 0.85 and 0.3 < np.median(gains) < 0.95


def test_gains_are_the_metric_of_each_sample(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)
    for gain, oracle in [("ndcg@3", lambda lab, r: _ndcg_at(lab, r, 3)),
                         ("ndcg", lambda lab, r: _ndcg_at(lab, r, len(lab)))]:
        state = BoltzRankLoss(n_rankings=15, metric=gain).prepare(y, layout, random_state=2)
        ranks, y_sorted = state.per_row["ranks"], layout.to_sorted(y)
        for q, (a, b) in enumerate(zip(layout.offsets[:-1], layout.offsets[1:])):
            expected = [oracle(y_sorted[a:b], ranks[a:b, i]) for i in range(15)]
            assert_allclose(state.per_query["gains"][q], expected, rtol=1e-12)


def test_map_gain(graded):
    y, _, qid = graded
    layout = QueryLayout(qid)
    state = BoltzRankLoss(n_rankings=10, metric="map").prepare(y, layout, random_state=0)
    ranks, y_sorted = state.per_row["ranks"], layout.to_sorted(y)
    a, b = layout.offsets[0], layout.offsets[1]
    for i in range(10):
        relevant = np.sort(ranks[a:b, i][y_sorted[a:b] >= 1])
        ap = np.mean(np.arange(1, len(relevant) + 1) / relevant)
        assert state.per_query["gains"][0, i] == pytest.approx(ap, rel=1e-12)


# ----------------------------------------------------------------------
# The objective
@pytest.mark.parametrize("gain_weight", [0.0, 0.9, 1.0])
def test_objective_equals_a_direct_implementation(graded, gain_weight):
    y, s, qid = graded
    layout = QueryLayout(qid)
    loss = BoltzRankLoss(n_rankings=12, gain_weight=gain_weight, metric="ndcg@5")
    state = loss.prepare(y, layout, random_state=4)
    value, _ = loss.value_and_grad(s, state)
    ranks = state.per_row["ranks"]
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
    assert chunked.per_row["ranks"].dtype == state.per_row["ranks"].dtype
    np.testing.assert_array_equal(chunked.per_row["ranks"], state.per_row["ranks"])
    assert chunked.per_query.keys() == state.per_query.keys()
    for name, value in state.per_query.items():
        np.testing.assert_array_equal(chunked.per_query[name], value, err_msg=name)
    # the samples are not all alike: the comparison could fail
    assert len(np.unique(state.per_row["ranks"], axis=1)) > 1


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
    assert state.per_row["ranks"].size == n_cells
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
    assert np.isfinite(state.per_query["gains"]).all()


# ----------------------------------------------------------------------
# The ranker
@pytest.fixture(scope="module")
def split_data():
    X, y, qid = make_ranking(n_queries=60, n_docs=12, n_features=6, noise=0.3, random_state=0)
    train = qid < 40
    return (X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train])


def _chance(y, qid):
    return np.mean([ndcg_score(y, np.random.default_rng(i).normal(size=y.size), qid=qid, k=10)
                    for i in range(5)])


@pytest.mark.parametrize(
    "params",
    [
        {},  # BoltzRank1
        {"output_activation": "scaled_tanh", "restarts": "best"},  # the paper's set-up
        {"hidden_layer_sizes": (3,), "pairwise_hidden_layer_sizes": (5,)},  # BoltzRank2
        {"hidden_layer_sizes": (), "output_activation": "identity", "restarts": "average"},
        {"objective": "likelihood", "metric": "map"},
        {"solver": "sgd", "batch_size": 1, "learning_rate_init": 0.01, "momentum": 0.0},
    ],
    ids=repr,
)
def test_ranker_learns_to_rank(split_data, params):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    ranker = BoltzRankRanker(n_init=2, random_state=0, **params).fit(X, y, qid=qid)
    assert ranker.score(X_test, y_test, qid=qid_test) > _chance(y_test, qid_test) + 0.15


@pytest.fixture(scope="module")
def pairwise_ranker(split_data):
    (X, y, qid), _ = split_data
    return BoltzRankRanker(hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(4,),
                           n_init=1, max_iter=5, random_state=0).fit(X, y, qid=qid)


def test_pairwise_fit_with_the_factored_activation_is_the_direct_one(
        split_data, pairwise_ranker, monkeypatch):
    """BoltzRank2's pairwise tanh through one exponential per document (see
    PairwiseNetwork's Notes): the same fit, to within 1e-10, as tanh on every pair."""
    from skrank._core import _pairwise_network

    (X, y, qid), (X_test, _, qid_test) = split_data
    scores = pairwise_ranker.predict(X_test, qid=qid_test)  # factored
    assert np.ptp(scores) > 0.1
    monkeypatch.setattr(_pairwise_network, "FACTORED_ACTIVATIONS", {})  # np.tanh on every pair
    direct = clone(pairwise_ranker).fit(X, y, qid=qid)
    assert direct.n_iter_ == pairwise_ranker.n_iter_ == 5
    assert_allclose(direct.predict(X_test, qid=qid_test), scores, rtol=0, atol=1e-10)
    assert not np.array_equal(direct.predict(X_test, qid=qid_test), scores)  # two paths


def test_pairwise_predict_scores_each_query_alone(split_data, pairwise_ranker, rng):
    _, (X, y, qid) = split_data
    scores = pairwise_ranker.predict(X, qid=qid)
    first = qid == qid[0]
    assert_allclose(pairwise_ranker.predict(X[first], qid=qid[first]), scores[first],
                    rtol=1e-12)
    perm = rng.permutation(len(qid))
    assert_allclose(pairwise_ranker.predict(X[perm], qid=qid[perm]), scores[perm], rtol=1e-12)
    # without qid all rows are one query: the other documents change the scores,
    # and after a fit on several queries that earns a warning
    with pytest.warns(UserWarning, match=f"predict got qid=None, which treats all {len(y)} rows as one"):
        assert not np.allclose(pairwise_ranker.predict(X), scores)
    with pytest.warns(UserWarning, match="was fitted on 40 queries, but predict got qid=None"):
        assert_allclose(pairwise_ranker.predict(X[first]), scores[first], rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one_query = clone(pairwise_ranker).fit(X[first], y[first])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairwise_ranker.predict(X[:1])  # one row: nothing to mix up
        one_query.predict(X[first])  # fitted on one query: qid=None is that query


def test_individual_potential_ignores_qid(split_data):
    (X, y, qid), (X_test, _, qid_test) = split_data
    ranker = BoltzRankRanker(n_init=1, max_iter=3, random_state=0).fit(X, y, qid=qid)
    assert_allclose(ranker.predict(X_test, qid=qid_test), ranker.predict(X_test))


def test_routing_pipeline_passes_qid_to_predict(split_data, pairwise_ranker, metadata_routing):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    with metadata_routing():
        pipe = make_pipeline(StandardScaler(), clone(pairwise_ranker)).fit(X, y, qid=qid)
        scaled = pipe[0].transform(X_test)
        expected = pipe[-1].predict(scaled, qid=qid_test)
        # no set_predict_request: the ranker requests qid for predict by default
        assert_allclose(pipe.predict(X_test, qid=qid_test), expected, rtol=1e-12)
        with pytest.warns(UserWarning, match="predict got qid=None"):
            assert not np.allclose(pipe[-1].predict(scaled), expected)
        scores = cross_val_score(pipe, X, y, cv=GroupKFold(3),
                                 scoring=get_ranking_scorer("ndcg@10"),
                                 params={"qid": qid, "groups": qid})
        search = GridSearchCV(pipe, {"boltzrankranker__gain_weight": [0.5, 0.9]},
                              cv=GroupKFold(2), scoring=get_ranking_scorer("ndcg@10"))
        search.fit(X, y, qid=qid, groups=qid)
        best = search.best_estimator_
        assert_allclose(best.predict(X_test, qid=qid_test),
                        best[-1].predict(best[0].transform(X_test), qid=qid_test), rtol=1e-12)
    assert np.isfinite(scores).all()
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_search_over_gain_weight_and_hidden_units(split_data):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    search = RankerSearchCV(
        BoltzRankRanker(n_init=1, max_iter=20, random_state=0),
        {"gain_weight": [0.5, 0.9], "hidden_layer_sizes": [(3,), (5,)]},
        scoring="ndcg@10", cv=3,
    ).fit(X, y, qid=qid)
    assert set(search.best_params_) == {"gain_weight", "hidden_layer_sizes"}
    assert len(search.cv_results_["mean_test_score"]) == 4
    assert search.score(X_test, y_test, qid=qid_test) > _chance(y_test, qid_test) + 0.1


@pytest.mark.parametrize(
    "params, match",
    [
        ({"gain_weight": 1.5}, "'gain_weight' parameter"),
        ({"n_rankings": 1}, "'n_rankings' parameter"),
        ({"objective": "kl"}, "'objective' parameter"),
        ({"output_activation": "relu"}, "'output_activation' parameter"),
        ({"metric": "ndgc@10"}, "metric must be a ranking metric name"),
        ({"pairwise_hidden_layer_sizes": (5, 5)}, "pairwise_hidden_layer_sizes must be"),
        ({"hidden_layer_sizes": (), "output_activation": "scaled_tanh"},
         "output_activation must be 'identity'"),
        ({"output_activation": "scaled_tanh", "n_init": 2}, "restarts='average' averages"),
    ],
)
def test_ranker_rejects_bad_parameters_by_name(split_data, params, match):
    (X, y, qid), _ = split_data
    with pytest.raises(ValueError, match=match):
        BoltzRankRanker(**params).fit(X, y, qid=qid)


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
