"""LogRankLoss (skrank/losses/_logrank.py): closed forms, the walk, the objectives.

Dubey et al. (ICDM 2009). The ranker is tested in tests/rankers/test_logrank.py.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import logsumexp, softmax

from skrank import LogRankRanker, average_precision_score, ndcg_score
from skrank.datasets import make_ranking
from skrank.losses import LogRankLoss
from skrank.losses._logrank import restart_gains, sequence_gains
from skrank.utils import QueryLayout

from tests._inputs import HUGE

OBJECTIVES = ["likelihood", "expected_gain", "l3", "convex"]
GAINS = ["auc", "map", "ndcg"]
MODELS = [("likelihood", "auc")] + [(o, g) for o in OBJECTIVES[1:] for g in GAINS]


def _query(n_pos, n_neg, rng):
    """One query: labels (good first, then shuffled), scores."""
    y = np.array([1.0] * n_pos + [0.0] * n_neg)
    perm = rng.permutation(y.size)
    return y[perm], rng.normal(size=y.size)


def _per_query(loss, y, s, qid, seed=0):
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=seed)
    values, _ = loss._query_losses_and_grad(layout.to_sorted(s), state)
    return values, state


# ----------------------------------------------------------------------
# Closed forms over the relaxed space = brute force over all sign vectors
def _brute_force(objective, y, s, normalize):
    good, bad = np.flatnonzero(y >= 1), np.flatnonzero(y < 1)
    d = (s[good][:, None] - s[bad][None, :]).ravel()
    n = d.size
    if normalize:
        d = d / n
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    logits = signs @ d  # w . phi(y)
    ideal = d.sum()
    auc = (signs > 0).mean(axis=1)
    p = softmax(logits)
    mle = logsumexp(logits) - ideal
    if objective == "likelihood":
        return mle
    if objective == "expected_gain":
        return -np.log(p @ auc)
    if objective == "l3":
        return mle + p @ (1.0 - auc)
    return logsumexp(logits + 1.0 - auc) - ideal


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("sizes", [(1, 1), (2, 3), (1, 5), (3, 4), (2, 6)])
@pytest.mark.parametrize("normalize", [False, True])
def test_exact_auc_forms_equal_brute_force(objective, sizes, normalize, rng):
    y, s = _query(*sizes, rng)
    s = 2.0 * s
    loss = LogRankLoss(objective, metric="auc", sampler="exact", normalize_pairs=normalize)
    values, _ = _per_query(loss, y, s, np.zeros(y.size))
    assert_allclose(values[0], _brute_force(objective, y, s, normalize), rtol=1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_walk_equals_exact_when_the_sample_is_every_ranking(objective, rng):
    """With one good document every sign vector is a total order: 2**n- rankings.

    A sample that holds all of them (each once) gives the closed form.
    """
    ys, ss, qids = [], [], []
    for q, n_neg in enumerate([1, 2, 3, 4]):
        y, s = _query(1, n_neg, rng)
        ys.append(y), ss.append(s), qids.append(np.full(y.size, q))
    y, s, qid = map(np.concatenate, (ys, ss, qids))
    walk = LogRankLoss(objective, metric="auc", sampler="walk", n_rankings=300, walk_length=6)
    values, state = _per_query(walk, y, s, qid)
    assert_allclose(state.valid.sum(axis=1), [2, 4, 8, 16])
    exact, _ = _per_query(LogRankLoss(objective, metric="auc", sampler="exact"), y, s, qid)
    assert_allclose(values, exact, rtol=1e-12)


# ----------------------------------------------------------------------
# The walk
def _orders(n_pos, n_neg):
    """Every valid sign vector (as a tuple, good-major) of n+ goods and n- bads."""
    labels = [1] * n_pos + [0] * n_neg
    out = set()
    for perm in itertools.permutations(range(n_pos + n_neg)):
        rank = np.argsort(perm)
        out.add(_signs(np.array(labels), rank))
    return out


def _signs(good, rank):
    """y_gb = +1 when good g is above bad b (smaller rank), good-major order."""
    g, b = np.flatnonzero(good == 1), np.flatnonzero(good == 0)
    return tuple(np.where(rank[g][:, None] < rank[b][None, :], 1, -1).ravel())


def test_samples_are_total_orders_with_their_coefficients(rng):
    sizes = [6, 9, 1, 4, 12, 3]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.integers(0, 3, size=qid.size).astype(float)
    for restart in ("two", "graded"):
        loss = LogRankLoss("convex", metric="ndcg@3", n_rankings=30, walk_length=7,
                           walk_restart=restart)
        layout = QueryLayout(qid)
        state = loss.prepare(y, layout, random_state=3)
        ranks, coef = state.ranks, state.coef
        good = state.good
        for q in range(layout.n_queries):
            a, b = layout.offsets[q], layout.offsets[q + 1]
            if not state.informative[q]:
                assert (coef[a:b] == 0).all()
                continue
            g = good[a:b]
            for i in range(ranks.shape[1]):
                r = ranks[a:b, i].astype(int)
                # a permutation of 1..m: a total order
                assert sorted(r) == list(range(1, b - a + 1))
                # c_j = documents of the other class below j minus those above
                other = g[None, :] != g[:, None]
                below = (r[None, :] > r[:, None]) & other
                above = (r[None, :] < r[:, None]) & other
                assert_allclose(coef[a:b, i], below.sum(1) - above.sum(1))
            # sample 0 is the ideal ranking: every good above every bad
            assert ranks[a:b, 0][g].max() < ranks[a:b, 0][~g].min()


def test_gains_match_the_metrics(rng):
    sizes = [8, 15, 5]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.integers(0, 3, size=qid.size).astype(float)
    y[[0, 8]] = [2, 0]  # both classes in every query
    y[[1, 9]] = [0, 2]
    for gain, k in [("auc", 10), ("map", 10), ("ndcg", 3), ("ndcg", 10)]:
        metric = f"ndcg@{k}" if gain == "ndcg" else gain
        loss = LogRankLoss("l3", metric=metric, sampler="walk", n_rankings=25, walk_length=4)
        layout = QueryLayout(qid)
        state = loss.prepare(y, layout, random_state=0)
        good = state.good.astype(float)
        for q in range(layout.n_queries):
            a, b = layout.offsets[q], layout.offsets[q + 1]
            for i in range(state.ranks.shape[1]):
                score = -state.ranks[a:b, i].astype(float)
                if gain == "auc":
                    g, bd = score[good[a:b] == 1], score[good[a:b] == 0]
                    expected = (g[:, None] > bd[None, :]).mean()
                elif gain == "map":
                    expected = average_precision_score(good[a:b], score, qid=np.zeros(b - a))
                else:
                    expected = ndcg_score(good[a:b], score, qid=np.zeros(b - a), k=k)
                assert_allclose(state.gains[q, i], expected, rtol=1e-12)


@pytest.mark.parametrize("gain", GAINS)
def test_restart_gains_are_the_gains_of_the_restart_sequences(gain):
    n_pos, n_neg, width = np.array([1, 3, 4]), np.array([5, 2, 4]), 8
    table = restart_gains(n_pos, n_neg, gain, 3, width)
    for q in range(3):
        for i in range(n_neg[q] + 1):
            bits = np.zeros((1, width), dtype=np.int8)
            bits[0, i:i + n_pos[q]] = 1
            expected = sequence_gains(bits, n_pos[[q]], n_neg[[q]], gain, 3)[0]
            assert_allclose(table[q, i], expected, rtol=1e-12)
    assert_allclose(table[:, 0], 1.0)  # the ideal ranking


def test_long_walk_visits_every_valid_ranking():
    """n+ = 2, n- = 3: the walk reaches every sign vector that is a total order."""
    y = np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    loss = LogRankLoss("likelihood", sampler="walk", n_rankings=2001, walk_length=50)
    state = loss.prepare(y, QueryLayout(np.zeros(5)), random_state=0)
    seen = {_signs(y, state.ranks[:, i]) for i in range(2001)}
    assert seen == _orders(2, 3)
    assert state.valid.sum() == len(seen)  # each ranking counted once


def _theta(y, good_i, bad_j, n_pos, n_neg):
    """Fig. 2's flip probability of pair (g, b) in sign matrix y (n+ x n-)."""
    n_g = (y[good_i] > 0).sum()  # bads g beats
    n_b = (y[:, bad_j] < 0).sum()  # goods b beats
    if y[good_i, bad_j] > 0:
        return (n_neg - n_g + n_b + 1) / (2 + n_pos + n_neg)
    return (n_pos + n_g - n_b + 1) / (2 + n_pos + n_neg)


@pytest.mark.parametrize("restart", ["two", "graded"])
def test_each_state_of_a_walk_swaps_one_adjacent_good_bad_pair(restart, rng):
    """Long walks on queries of many documents (up to 2 * walk_length class
    boundaries): every state is a class sequence of the query's n+ goods, each
    the previous state with exactly one adjacent (good, bad) pair swapped."""
    sizes = [60, 9, 2, 33]
    qid = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    y = (rng.uniform(size=qid.size) < 0.4).astype(float)
    y[np.flatnonzero(qid == 2)] = [0.0, 1.0]
    walk_length = 25
    loss = LogRankLoss("likelihood", sampler="walk", n_rankings=2 * walk_length + 1,
                       walk_length=walk_length, walk_restart=restart)
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=3)
    good = layout.to_sorted(y) == 1
    for a, b in zip(layout.offsets[:-1], layout.offsets[1:]):
        ranks = state.ranks[a:b]
        sequences = np.zeros((b - a, ranks.shape[1]), dtype=int)
        np.put_along_axis(sequences, ranks - 1, good[a:b, None].astype(int), axis=0)
        assert (sequences.sum(axis=0) == good[a:b].sum()).all()
        walks = sequences[:, 1:].T.reshape(2, walk_length, b - a)
        for walk in walks:
            for before, after in zip(walk[:-1], walk[1:]):
                changed = np.flatnonzero(before != after)
                assert len(changed) == 2 and changed[1] == changed[0] + 1
                assert before[changed[0]] != before[changed[1]]


@pytest.mark.parametrize("restart", ["two", "graded"])
def test_walk_follows_figure_2(restart):
    """The distribution after a few transitions is the literal Fig. 2 chain's.

    The reference picks a (g, b) pair at random, flips it with probability
    theta, rejects flips that leave no total order and repeats until one is
    accepted: the accepted flip is distributed as theta over the valid flips.
    Its distribution over sign vectors is propagated exactly from the restart
    distribution and compared with the sampler's frequencies.
    """
    n_pos, n_neg, steps = 2, 3, 3
    labels = np.array([1, 1, 0, 0, 0])
    valid = sorted(_orders(n_pos, n_neg))
    index = {v: i for i, v in enumerate(valid)}
    transition = np.zeros((len(valid), len(valid)))
    for v in valid:
        y = np.array(v, dtype=float).reshape(n_pos, n_neg)
        moves = []
        for gi, bj in itertools.product(range(n_pos), range(n_neg)):
            flipped = y.copy()
            flipped[gi, bj] *= -1
            key = tuple(flipped.astype(int).ravel())
            if key in index:
                moves.append((index[key], _theta(y, gi, bj, n_pos, n_neg)))
        total = sum(t for _, t in moves)
        for j, t in moves:
            transition[index[v], j] += t / total
    # restart distribution: the good block below i bad documents, documents
    # of a class in random order
    start = np.zeros(len(valid))
    if restart == "two":
        weights = {0: 0.9, n_neg: 0.1}
    else:
        delta = 1.0 - restart_gains(np.array([n_pos]), np.array([n_neg]), "auc", 10, 5)[0, :4]
        w = np.exp(-10.0 * delta)
        weights = dict(enumerate(w / w.sum()))
    # the documents of a class take its slots in a random order
    for i, w in weights.items():
        sequence = [int(i <= r < i + n_pos) for r in range(5)]
        orders = [np.array(p) for p in itertools.permutations(range(5))
                  if [labels[d] for d in p] == sequence]
        for order in orders:
            start[index[_signs(labels, np.argsort(order))]] += w / len(orders)
    n = 20000  # walks, each of its restart and `steps` transitions
    loss = LogRankLoss("likelihood", metric="auc", sampler="walk", n_rankings=n * (steps + 1) + 1,
                       walk_length=steps + 1, walk_restart=restart)
    state = loss.prepare(labels.astype(float), QueryLayout(np.zeros(5)), random_state=1)
    ranks = state.ranks[:, 1:].reshape(5, n, steps + 1)
    for step in range(steps + 1):
        expected = start @ np.linalg.matrix_power(transition, step)
        counts = np.zeros(len(valid))
        for i in range(n):
            counts[index[_signs(labels, ranks[:, i, step])]] += 1
        # a few standard errors of a frequency
        assert np.abs(counts / n - expected).max() < 4 * np.sqrt(0.25 / n), step


# ----------------------------------------------------------------------
# Objectives
@pytest.mark.parametrize("objective, gain", MODELS)
@pytest.mark.parametrize("sampler", ["auto", "walk"])
@pytest.mark.parametrize("normalize", [False, True])
def test_finite_difference_gradient(objective, gain, sampler, normalize, rng):
    sizes = [1, 4, 7, 3, 9]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.integers(0, 3, size=qid.size).astype(float)
    s = rng.normal(size=qid.size)
    metric = "ndcg@3" if gain == "ndcg" else gain
    loss = LogRankLoss(objective, metric=metric, sampler=sampler, normalize_pairs=normalize,
                       n_rankings=20, walk_restart="graded")
    state = loss.prepare(y, QueryLayout(qid), random_state=0)
    value, grad = loss.value_and_grad(s, state)
    eps = 1e-6
    numeric = np.array([
        (loss.value_and_grad(s + eps * e, state)[0] - loss.value_and_grad(s - eps * e, state)[0])
        / (2 * eps) for e in np.eye(s.size)
    ])
    assert np.isfinite(value)
    assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("gain, sampler", [*((g, "walk") for g in GAINS), ("auc", "exact")])
def test_convex_loss_bounds_mle_plus_expected_loss(gain, sampler, rng):
    """Jensen (§3): ConvexLoss >= MLE + L2 = L3, per query, on the same sample."""
    sizes = [5, 8, 3, 11]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.integers(0, 3, size=qid.size).astype(float)
    for _ in range(5):
        s = 3.0 * rng.normal(size=qid.size)
        convex, _ = _per_query(LogRankLoss("convex", metric=gain, sampler=sampler), y, s, qid)
        l3, _ = _per_query(LogRankLoss("l3", metric=gain, sampler=sampler), y, s, qid)
        mle, _ = _per_query(LogRankLoss("likelihood", metric=gain, sampler=sampler), y, s, qid)
        assert (convex >= l3 - 1e-12).all()
        assert (l3 >= mle - 1e-12).all()  # L2 >= 0
        assert (convex > mle).any()


def test_mle_is_minimal_when_the_ideal_ranking_dominates():
    y = np.array([1.0, 0.0, 0.0, 1.0])
    far = np.array([50.0, -50.0, -50.0, 50.0])
    for sampler in ("exact", "walk"):
        loss = LogRankLoss("likelihood", sampler=sampler, normalize_pairs=False)
        assert _per_query(loss, y, far, np.zeros(4))[0][0] < 1e-40
        assert _per_query(loss, y, -far, np.zeros(4))[0][0] > 100


def test_queries_without_pairs_contribute_nothing(rng):
    y = np.array([1.0, 1.0, 0.0, 0.0, 2.0, 0.0])
    qid = np.array([0, 0, 1, 1, 2, 2])
    s = rng.normal(size=6)
    for objective, gain in MODELS:
        for sampler in ("auto", "walk"):
            values, _ = _per_query(LogRankLoss(objective, metric=gain, sampler=sampler), y, s, qid)
            assert values[0] == 0.0 and values[1] == 0.0 and values[2] != 0.0


def test_relevance_threshold_binarises_graded_labels(rng):
    y = np.array([0.0, 1.0, 2.0, 3.0])
    s = rng.normal(size=4)
    high = LogRankLoss("likelihood", sampler="exact", relevance_threshold=2)
    binary = LogRankLoss("likelihood", sampler="exact")
    assert_allclose(_per_query(high, y, s, np.zeros(4))[0],
                    _per_query(binary, (y >= 2).astype(float), s, np.zeros(4))[0], rtol=1e-14)


def test_loss_rejects_bad_parameters():
    with pytest.raises(ValueError, match="sampler='exact' has closed forms"):
        LogRankLoss("convex", metric="ndcg@10", sampler="exact")
    with pytest.raises(ValueError, match="relevance_threshold must be a finite number"):
        LogRankLoss(relevance_threshold=np.nan)
    with pytest.raises(ValueError, match="restart_skew"):
        LogRankLoss(walk_restart_skew=1.0)
    with pytest.raises(ValueError, match="objective"):
        LogRankLoss("mle")  # the paper's name; the package spells it "likelihood"
    with pytest.raises(ValueError, match=r"^metric must be one of 'auc', 'map', 'ndcg' or "
                                         r"'ndcg@<k>' .*got 'map@5'\.$"):
        LogRankLoss(metric="map@5")


def test_store_ranks_false_keeps_the_coefficients_without_the_ranks():
    X, y, qid = make_ranking(n_queries=12, n_docs=(3, 15), n_levels=3, random_state=2)
    layout = QueryLayout(qid)
    full = LogRankLoss().prepare(y, layout, random_state=5)
    lean = LogRankLoss(store_ranks=False).prepare(y, layout, random_state=5)
    assert full.ranks is not None and lean.ranks is None
    np.testing.assert_array_equal(lean.coef, full.coef)
    assert full.arrays().keys() - lean.arrays().keys() == {"ranks"}
    for name, value in lean.arrays().items():
        np.testing.assert_array_equal(value, getattr(full, name))
    s = np.random.default_rng(0).normal(size=len(y))
    assert LogRankLoss(store_ranks=False).value_and_grad(s, lean)[0] == pytest.approx(
        LogRankLoss().value_and_grad(s, full)[0], rel=1e-15)
    with pytest.raises(ValueError, match="store_ranks"):
        LogRankLoss(store_ranks="yes")
    # the ranker's fit asks for no ranks
    assert LogRankRanker()._make_loss().store_ranks is False


def test_metric_cutoff_must_be_ascii_digits():
    # "²".isdigit() is True, but int("²") fails: the message must still name metric
    with pytest.raises(ValueError, match="^metric must be one of"):
        LogRankLoss(metric="ndcg@²")


# ----------------------------------------------------------------------------
# Extreme parameters and scores
@pytest.mark.parametrize("walk_length", [7, 8, *HUGE])
def test_walk_longer_than_the_sample_is_one_walk(walk_length, six_queries):
    _, y, qid = six_queries
    state = LogRankLoss(n_rankings=7, walk_length=walk_length).prepare(y, qid, random_state=0)
    expected = LogRankLoss(n_rankings=7, walk_length=7).prepare(y, qid, random_state=0)
    for key in ("coef", "ranks"):
        np.testing.assert_array_equal(getattr(state, key), getattr(expected, key))
    np.testing.assert_array_equal(state.gains, expected.gains)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_logrank_exact_pair_differences_scaled_before_they_overflow():
    """normalize_pairs scales a difference beyond the largest float back into range."""
    loss = LogRankLoss("likelihood", sampler="exact")
    state = loss.prepare(np.array([1.0, 0, 0, 0, 0]), np.zeros(5))
    value, grad = loss.value_and_grad(np.array([-1e308, 1e308, -1e308, -1e308, -1e308]),
                                      state)
    # one pair at 2 * (1/4) * -2e308 = -1e308, three at 0: 1e308 + 3 log 2
    assert value == pytest.approx(1e308, rel=1e-15)
    assert value < 1.7e308 and np.isfinite(grad).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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
