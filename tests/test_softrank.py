"""SoftRank: fidelity of the rank distributions, SoftNDCG and its gradient; the ranker."""

import itertools
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import norm
from sklearn.utils._param_validation import InvalidParameterError

from skrank import SoftRankRanker, make_ranking, ndcg_score
from skrank.losses import SoftRankLoss
from skrank.losses._softrank import _binomial, _loss, _normal, _normal_moments, _truncation
from skrank.utils import QueryLayout

#: The exact Rank-Binomial recursion (the loss defaults to the normal approximation).
EXACT = {"rank_distribution": "binomial"}

OPTIONS = [
    EXACT,
    {"rank_distribution": "normal"},
    {"rank_distribution": "hybrid", "n_exact": 2},
    {"rank_distribution": "hybrid", "n_exact": 0},
    {**EXACT, "sinkhorn_iterations": 3},
    {"rank_distribution": "hybrid", "n_exact": 3, "sinkhorn_iterations": 2},
    {**EXACT, "discount_shape": 0.0},
    {**EXACT, "discount_shape": -1.0},
    {**EXACT, "discount_shape": -0.4, "truncation": 4},
    {**EXACT, "discount_shape": 0.5, "truncation": 1},
    {**EXACT, "truncation": 3},  # the 50-document query's recursion runs in segments
    {"rank_distribution": "hybrid", "n_exact": 2, "truncation": 3},
    {"rank_distribution": "normal", "truncation": 5},
    {**EXACT, "truncation": 3, "sinkhorn_iterations": 2},
    {**EXACT, "sigma": 0.2},
    {},  # the default: the normal approximation, contracted
    {"discount_shape": -0.4, "truncation": 4},
    {"sinkhorn_iterations": 2},  # the normal approximation's distributions, scaled
]


def _mean_loss_and_grad(loss, y, s, qid):
    state = loss.prepare(y, QueryLayout(qid))
    return loss.value_and_grad(s, state)


def _enumerated(s, sigma):
    """Rank distributions by enumerating all 2^(N-1) contest outcomes (the model)."""
    n = len(s)
    P = np.zeros((n, n))
    for j in range(n):
        others = [i for i in range(n) if i != j]
        pi = norm.cdf((s[others] - s[j]) / (np.sqrt(2.0) * sigma))
        for wins in itertools.product([0, 1], repeat=n - 1):
            wins = np.array(wins, dtype=bool)
            P[j, wins.sum()] += np.prod(np.where(wins, pi, 1.0 - pi))
    return P


def _queries(rng, sizes, n_levels=3):
    qid = np.repeat(np.arange(len(sizes)) * 7 + 1, sizes)
    perm = rng.permutation(qid.size)
    y = rng.integers(0, n_levels, size=qid.size).astype(float)
    return y[perm], rng.normal(size=qid.size)[perm], qid[perm]


# ----------------------------------------------------------------------
# Rank distributions
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_binomial_equals_enumeration_of_contests(rng, n, sigma):
    s = rng.normal(size=n)
    expected = _enumerated(s, sigma)
    for loss in (
        SoftRankLoss(sigma, **EXACT),
        # hybrid with every document exact is the exact model too
        SoftRankLoss(sigma, rank_distribution="hybrid", n_exact=3),
    ):
        assert_allclose(loss.rank_distributions(s)[0], expected, atol=1e-14)


def test_several_queries_give_each_querys_distributions(rng):
    """Blocks of padded queries (sizes 1..9, rows shuffled) = one query at a time."""
    sizes = [9, 1, 4, 6, 2, 8, 5, 3, 7]
    y, s, qid = _queries(rng, sizes)
    for options in (EXACT, {"rank_distribution": "normal"},
                    {"rank_distribution": "hybrid", "n_exact": 2},
                    {**EXACT, "sinkhorn_iterations": 4}, {"sinkhorn_iterations": 4}):
        loss = SoftRankLoss(**options)
        together = loss.rank_distributions(s, qid)
        for q, P in zip(np.unique(qid), together):
            rows = qid == q
            assert_allclose(P, loss.rank_distributions(s[rows])[0], atol=1e-14)


@pytest.mark.parametrize("options", OPTIONS[:6], ids=repr)
def test_rank_distributions_are_distributions(rng, options):
    s = 2.0 * rng.normal(size=30)
    P = SoftRankLoss(**options).rank_distributions(s)[0]
    assert P.shape == (30, 30)
    assert (P >= 0).all()
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)


def test_sinkhorn_makes_rank_columns_sum_to_one(rng):
    s = rng.normal(size=25)
    plain = SoftRankLoss(1.0).rank_distributions(s)[0]
    assert np.abs(plain.sum(axis=0) - 1.0).max() > 0.5  # not doubly stochastic yet
    P = SoftRankLoss(1.0, sinkhorn_iterations=200).rank_distributions(s)[0]
    assert (P >= 0).all()
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)  # each iteration ends on rows
    assert_allclose(P.sum(axis=0), 1.0, atol=1e-8)


def test_normal_approximation_close_to_exact_for_200_documents(rng):
    """Stated tolerance (sigma=1, scores of unit spread): entries within 0.05, total
    variation within 0.1, loss within 1e-3."""
    s = rng.normal(size=200)
    y = rng.integers(0, 3, size=200).astype(float)
    exact = SoftRankLoss(1.0, **EXACT).rank_distributions(s)[0]
    approx = SoftRankLoss(1.0, rank_distribution="normal").rank_distributions(s)[0]
    assert np.abs(exact - approx).max() < 0.05
    assert 0.5 * np.abs(exact - approx).sum(axis=1).max() < 0.1
    qid = np.zeros(200)
    value = _mean_loss_and_grad(SoftRankLoss(1.0, **EXACT), y, s, qid)[0]
    value_normal = _mean_loss_and_grad(SoftRankLoss(1.0, rank_distribution="normal"), y, s, qid)[0]
    assert abs(value - value_normal) < 1e-3


def test_hybrid_is_exact_for_the_chosen_documents(rng):
    s = rng.normal(size=40)
    exact = SoftRankLoss(**EXACT).rank_distributions(s)[0]
    hybrid = SoftRankLoss(rank_distribution="hybrid", n_exact=5).rank_distributions(s)[0]
    normal = SoftRankLoss(rank_distribution="normal").rank_distributions(s)[0]
    order = np.argsort(-s)
    ends = np.r_[order[:5], order[-5:]]
    middle = order[5:-5]
    assert_allclose(hybrid[ends], exact[ends], atol=1e-14)
    assert_allclose(hybrid[middle], normal[middle], atol=1e-14)


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("rank_distribution", ["binomial", "normal", "hybrid"])
def test_small_sigma_gives_deterministic_ranks_and_ndcg(rng, rank_distribution):
    n = 12
    s = rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, size=n)
    loss = SoftRankLoss(1e-6, rank_distribution=rank_distribution, n_exact=2)
    P = loss.rank_distributions(s)[0]
    ranks = np.argsort(np.argsort(-s))
    assert_allclose(P, np.eye(n)[ranks], atol=1e-12)
    y, _, qid = _queries(rng, [n, 9, 5])
    s = rng.permutation(y.size) * 0.1
    value = _mean_loss_and_grad(loss, y, s, qid)[0]
    assert_allclose(1.0 - value, ndcg_score(y, s, qid=qid), rtol=1e-12)
    for k in (1, 3):  # SoftNDCG@R tends to NDCG@R
        truncated = SoftRankLoss(1e-6, rank_distribution=rank_distribution, truncation=k)
        value = _mean_loss_and_grad(truncated, y, s, qid)[0]
        assert_allclose(1.0 - value, ndcg_score(y, s, qid=qid, k=k), rtol=1e-12)


# ----------------------------------------------------------------------
# SoftNDCG and its gradient
def test_softndcg_known_value_two_documents():
    """Two documents, labels 1 and 0: G = P(first ranked top) = pi_12 (the exact model)."""
    s = np.array([0.3, -0.2])
    sigma = 0.7
    value, grad = _mean_loss_and_grad(SoftRankLoss(sigma, **EXACT), np.array([1.0, 0.0]), s, [5, 5])
    pi = norm.cdf(0.5 / (np.sqrt(2) * sigma))
    # G = pi * D(0) + (1 - pi) * D(1), D(0) = 1, D(1) = 1 / log2(3)
    g = pi + (1 - pi) / np.log2(3)
    assert_allclose(value, 1.0 - g, rtol=1e-13)
    dpi = norm.pdf(0.5 / (np.sqrt(2) * sigma)) / (np.sqrt(2) * sigma)
    dg = dpi * (1 - 1 / np.log2(3))
    assert_allclose(grad, [-dg, dg], rtol=1e-12)


@pytest.mark.parametrize("shape", [-1.0, -0.5, 0.0, 0.5, 1.0])
def test_discount_family(shape):
    sizes = np.array([8, 5])
    D = _loss._discount(sizes, 8, shape, None)
    r = np.arange(8.0)
    for b, n in enumerate(sizes):
        u = r[:n] / n
        ndcg, linear, square = 1 / np.log2(2 + r[:n]), 1 - u, 1 - u**2
        expected = (shape * ndcg + (1 - shape) * linear if shape >= 0
                    else -shape * square + (1 + shape) * linear)
        assert_allclose(D[b, :n], expected, rtol=1e-15)
        assert (D[b, n:] == 0).all()
        assert (np.diff(D[b, :n]) < 0).all()  # decreasing
    assert_allclose(_loss._discount(sizes, 8, shape, 3)[:, 3:], 0.0)


def test_queries_without_relevant_documents_contribute_nothing(rng):
    y = np.array([0.0, 0.0, 0.0, 2.0, 1.0])
    s = rng.normal(size=5)
    qid = np.array([1, 1, 1, 2, 2])
    value, grad = _mean_loss_and_grad(SoftRankLoss(), y, s, qid)
    alone = _mean_loss_and_grad(SoftRankLoss(), y[3:], s[3:], qid[3:])[0]
    assert_allclose(value, alone / 2, rtol=1e-14)  # mean over both queries
    assert (grad[:3] == 0).all()


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("options", OPTIONS, ids=repr)
def test_gradient_matches_finite_differences(rng, options):
    """Every option, queries up to 50 documents, padded blocks, float64."""
    y, s, qid = _queries(rng, [50, 1, 2, 9, 11, 6])
    loss = SoftRankLoss(**options)
    state = loss.prepare(y, QueryLayout(qid))
    value, grad = loss.value_and_grad(s, state)
    eps = 1e-6
    numeric = np.empty_like(s)
    for i in range(s.size):
        step = np.zeros_like(s)
        step[i] = eps
        numeric[i] = (
            loss.value_and_grad(s + step, state)[0] - loss.value_and_grad(s - step, state)[0]
        ) / (2 * eps)
    assert np.isfinite(value) and 0.0 <= value <= 1.0
    assert np.abs(grad).max() > 1e-4  # not trivially zero
    assert_allclose(grad, numeric, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("options", [EXACT, {"rank_distribution": "hybrid", "n_exact": 4}],
                         ids=repr)
def test_targets_in_chunks_equal_one_pass(rng, monkeypatch, options):
    """A memory budget too small for a query's states processes its targets in chunks."""
    y, s, qid = _queries(rng, [40, 23, 7])
    loss = SoftRankLoss(**options)
    value, grad = _mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(_loss, "MEMORY_BUDGET", 2000)  # the blocks of queries
    monkeypatch.setattr(_binomial, "MEMORY_BUDGET", 2000)  # the chunks of targets
    value_c, grad_c = _mean_loss_and_grad(loss, y, s, qid)
    assert_allclose(value_c, value, rtol=1e-14)
    assert_allclose(grad_c, grad, rtol=1e-12, atol=1e-17)


@pytest.mark.parametrize("chunk_cells", [1, 700, 5000])
@pytest.mark.parametrize("options", [{}, {"truncation": 10}, {"sigma": 0.05}], ids=repr)
def test_normal_path_by_chunks_of_targets_equals_the_half_pairs(rng, monkeypatch, options,
                                                                chunk_cells):
    """Long queries take every ordered pair by chunks of targets: the same loss and gradient."""
    y, s, qid = _queries(rng, [40, 23, 7, 1])
    s[:3] += 1e200  # differences beyond the largest float
    loss = SoftRankLoss(rank_distribution="normal", **options)
    value, grad = _mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(_normal_moments, "NORMAL_PAIR_CELLS", 0)
    monkeypatch.setattr(_normal_moments, "NORMAL_CHUNK_CELLS", chunk_cells)
    value_c, grad_c = _mean_loss_and_grad(loss, y, s, qid)
    assert np.isfinite(value_c) and np.isfinite(grad_c).all()
    assert_allclose(value_c, value, rtol=1e-12)
    assert_allclose(grad_c, grad, rtol=1e-9, atol=1e-14)
    assert np.abs(grad).max() > 1e-4  # not trivially zero


@pytest.mark.parametrize("spread", [0.02, 1.0, 30.0, 1e4])
@pytest.mark.parametrize("options", [{}, {"truncation": 10, "discount_shape": 0.3},
                                     {"sigma": 0.05}], ids=repr)
def test_normal_path_on_a_band_of_sorted_pairs_equals_the_half_pairs(rng, monkeypatch,
                                                                     options, spread):
    """Spread-out scores take only the pairs within the band of each document, sorted by
    score: the same loss and gradient as every pair (to the decided pairs' 1e-17); ties,
    padding, one-document queries and differences beyond the largest float included."""
    y, s, qid = _queries(rng, [40, 33, 23, 19, 1])
    s *= spread
    s[qid == qid[0]] = np.round(s[qid == qid[0]])  # ties within a query
    if spread == 1e4:
        s[np.flatnonzero(qid == 8)[:2]] = [1e308, -1e308]
    loss = SoftRankLoss(rank_distribution="normal", **options)
    calls = []
    banded = _normal_moments._banded_moments
    monkeypatch.setattr(_normal_moments, "_banded_moments",
                        lambda *args: calls.append(args[-1]) or banded(*args))
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", np.inf)
    value_b, grad_b = _mean_loss_and_grad(loss, y, s, qid)
    assert calls and (spread < 1 or min(calls) < 40 // 2)  # a band narrower than a half
    if spread == 1e4:
        assert max(calls) <= 2  # documents far apart: almost no pair is undecided
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", -1.0)
    n_calls = len(calls)
    value, grad = _mean_loss_and_grad(loss, y, s, qid)
    assert len(calls) == n_calls  # the half pairs
    assert np.isfinite(value_b) and np.isfinite(grad_b).all()
    assert_allclose(value_b, value, rtol=1e-13)
    assert_allclose(grad_b, grad, rtol=1e-10, atol=1e-13 * np.abs(grad).max())
    if spread <= 30:
        assert np.abs(grad).max() > 1e-4  # not trivially zero


def test_decided_normal_cdf_is_the_cdf_to_double_precision():
    """The CDF evaluated only within the band: SciPy's value there, 0 or 1 beyond, off by
    less than 1e-17 anywhere; its density 0 exactly where the CDF was decided."""
    from scipy.special import ndtr

    x = np.concatenate([np.linspace(-40.0, 40.0, 8002), [-np.inf, np.inf, -8.5, 8.5,
                                                         np.nextafter(-8.5, 0.0),
                                                         np.nextafter(8.5, 0.0)]])
    x = x.reshape(-1, 7)
    # out a strided view of a larger buffer, as the band's is
    buffer = np.full((x.shape[0] + 3, x.shape[1] + 2), np.nan)
    out = buffer[3:, 2:]
    inside, x_inside = _normal._decided_ndtr(x, out=out)
    assert np.isnan(buffer[:3]).all() and np.isnan(buffer[:, :2]).all()
    assert_array_equal(inside, np.abs(x) < 8.5)
    assert_array_equal(x_inside, x[inside])
    assert_array_equal(out[inside], ndtr(x[inside]))
    assert_array_equal(out[~inside], (x[~inside] > 0).astype(float))
    assert np.abs(out - ndtr(x)).max() < 1e-17
    density = _normal._decided_density(inside, x_inside, out=np.full(x.shape, np.nan))
    assert_allclose(density[inside], np.exp(-0.5 * x[inside] ** 2), rtol=1e-15)
    assert (density[~inside] == 0.0).all() and (density[inside] > 0.0).all()
    # out may be x itself
    y = x.copy()
    _normal._decided_ndtr(y, out=y)
    assert_array_equal(y, out)


def test_score_band_counts_the_undecided_followers(rng, monkeypatch):
    """The widest band of a block: the most documents within ``reach`` after one in
    descending order of score (ties and padding included), brute force."""
    W = 37
    s = np.round(rng.normal(size=(4, W)) * 3, 1)
    sizes = np.array([37, 30, 17, 2])
    valid = np.arange(W) < sizes[:, None]
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", np.inf)
    for reach in [0.0, 0.1, 0.5, 2.0, 100.0]:
        order, t, K = _normal_moments._score_band(s, valid, reach)
        top = [np.sort(s[b, :n])[::-1] for b, n in enumerate(sizes)]
        assert K == max(int((t_[p + 1:] >= t_[p] - reach).sum())
                        for t_ in top for p in range(len(t_)))
        assert_array_equal(t[valid], np.concatenate(top))
        assert_array_equal(np.take_along_axis(s, order, axis=1)[valid], t[valid])
        assert (t[~valid] == -np.inf).all()
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", 0.5)
    # too wide: the half pairs
    assert _normal_moments._score_band(s, valid, 100.0) is None


@pytest.mark.parametrize("budget", [1, 50, 500, 3000])
def test_rank_binomial_chunks_in_a_block_of_several_queries(rng, monkeypatch, budget):
    """Queries of one block finish at different steps; chunks of targets change nothing."""
    sizes = np.array([20, 19, 17, 16])
    B, W = len(sizes), sizes[0]
    pi = rng.uniform(size=(B, W, W))
    real = np.arange(W) < sizes[:, None]
    pi *= real[:, :, None] & real[:, None, :]
    pi[:, np.arange(W), np.arange(W)] = 0.0
    A = rng.normal(size=(B, W, W))
    P, back = _binomial._rank_binomial(pi, sizes)
    grad = back(A)
    monkeypatch.setattr(_binomial, "MEMORY_BUDGET", budget)
    P_c, back_c = _binomial._rank_binomial(pi, sizes)
    assert_allclose(P_c, P, rtol=1e-15, atol=1e-300)
    assert_allclose(back_c(A), grad, rtol=1e-13, atol=1e-300)
    P_v, none = _binomial._rank_binomial(pi, sizes, need_grad=False)
    assert none is None
    assert_allclose(P_v, P, rtol=1e-15, atol=1e-300)
    for b, n in enumerate(sizes):  # each query's distributions stop at its size
        assert_allclose(P[b, :n].sum(axis=1), 1.0, rtol=1e-13)
        assert (P[b, :n, n:] == 0).all()


def _random_block(rng, sizes):
    """Contest probabilities of a block of queries (decreasing sizes), 0 in padding."""
    B, W = len(sizes), sizes[0]
    pi = rng.uniform(size=(B, W, W))
    real = np.arange(W) < sizes[:, None]
    pi *= real[:, :, None] & real[:, None, :]
    pi[:, np.arange(W), np.arange(W)] = 0.0
    return pi, real


# 5, 13: segment counts that are not a power of two (empty segments added); 25, 90:
# segments of 4 and 1 documents, whose distributions and first levels keep fewer ranks
# than n_ranks
@pytest.mark.parametrize("segments", [1, 4, 5, 13, 25, 90])
@pytest.mark.parametrize("n_ranks", [1, 3, 10])
@pytest.mark.parametrize("sizes", [[97], [90, 81, 80, 40]])
def test_truncated_recursion_is_the_first_ranks_of_the_full_one(rng, monkeypatch, sizes,
                                                                n_ranks, segments):
    """Keeping R ranks (in segments or not) gives the full recursion's first R ranks, and
    the reverse mode of the full recursion for an adjoint that is 0 beyond R."""
    sizes = np.array(sizes)
    pi, real = _random_block(rng, sizes)
    A = rng.normal(size=pi.shape) * real[:, :, None]
    P, back = _binomial._rank_binomial(pi, sizes)
    A[:, :, n_ranks:] = 0.0
    grad = back(A)
    monkeypatch.setattr(_binomial, "_n_segments", lambda n_steps, n_ranks: segments)
    P_r, back_r = _binomial._rank_binomial(pi, sizes, n_ranks=n_ranks)
    assert P_r.shape == (len(sizes), sizes[0], n_ranks)
    assert_allclose(P_r, P[:, :, :n_ranks], rtol=1e-12, atol=1e-15)  # probabilities
    assert_allclose(back_r(A[:, :, :n_ranks]), grad, rtol=1e-11, atol=1e-15)
    P_v, none = _binomial._rank_binomial(pi, sizes, n_ranks=n_ranks, need_grad=False)
    assert none is None
    assert_allclose(P_v, P_r, rtol=1e-15, atol=1e-300)


def test_segments_of_a_truncated_recursion():
    """Up to MAX_SEGMENTS segments of at least MIN_SEGMENT_DOCS documents, a power of two,
    none for all ranks."""
    assert _truncation._n_segments(400, 10) == _truncation.MAX_SEGMENTS == 32
    # 97 // MIN_SEGMENT_DOCS = 12, rounded down
    assert _truncation._n_segments(97, 10) == 8
    assert _truncation._n_segments(97, 90) == 8
    assert _truncation._n_segments(128, 90) == 16
    assert _truncation._n_segments(300, 90) == 32
    assert _truncation._n_segments(97, 97) == 1
    assert _truncation._n_segments(12, 3) == 1


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("rank_distribution", ["binomial", "hybrid", "normal"])
@pytest.mark.parametrize("truncation", [1, 4, 12])
def test_truncated_softndcg_equals_full_computation_with_zeroed_discount(
        rng, monkeypatch, rank_distribution, truncation):
    """SoftNDCG@R computing R ranks equals computing every rank with D(r) = 0 from R on."""
    y, s, qid = _queries(rng, [120, 60, 49, 7, 1, 2])
    loss = SoftRankLoss(rank_distribution=rank_distribution, n_exact=3, truncation=truncation,
                        discount_shape=0.3)
    value, grad = _mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(SoftRankLoss, "_n_ranks", lambda self, width: width)
    full_value, full_grad = _mean_loss_and_grad(loss, y, s, qid)
    assert_allclose(value, full_value, rtol=1e-12)
    assert_allclose(grad, full_grad, rtol=1e-10, atol=1e-14)
    assert np.abs(grad).max() > 1e-4


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("truncation", [None, 4])
@pytest.mark.parametrize("sigma, spread", [(1.0, 1.0), (0.05, 1.0), (1.0, 1e4)])
@pytest.mark.parametrize("sizes", [[120, 60, 49, 7, 1, 2], [121, 61, 50, 7, 6, 3]])
def test_normal_contraction_equals_its_rank_distributions(rng, monkeypatch, truncation, sigma,
                                                          spread, sizes):
    """The normal approximation contracted without its rank distributions (the ranker's
    default path) gives the loss and gradient of the distributions themselves, also where
    every contest is decided (spread 1e4); blocks of even and odd widths, with and without
    padding."""
    y, s, qid = _queries(rng, sizes)
    s *= spread
    loss = SoftRankLoss(sigma, rank_distribution="normal", truncation=truncation,
                        discount_shape=0.3)
    value, grad = _mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(SoftRankLoss, "_block_normal",
                        lambda self, s, w, D, valid, sizes:
                        self._block_general(s, w, D, valid, D.shape[1]))
    ref_value, ref_grad = _mean_loss_and_grad(loss, y, s, qid)
    assert np.all(np.isfinite(grad))
    assert_allclose(value, ref_value, rtol=1e-12, atol=1e-15)
    if spread == 1e4 and truncation == 4:
        # every contest within reach of the top 4 ranks decided: the gradient of
        # the distributions keeps densities far below double precision, which the
        # contraction takes as decided
        assert np.abs(ref_grad).max() < 1e-150 and not grad.any()
    else:
        assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-15 * np.abs(ref_grad).max())
    if spread == 1.0:
        assert np.abs(grad).max() > 1e-4


@pytest.mark.parametrize("width", [1, 2, 3, 4, 7, 10])
def test_half_pairs_hold_every_real_pair_once(rng, width):
    """The circulant layout of the normal path: each pair of real documents exactly once,
    with its score difference; -inf elsewhere; the skewed sum adds each pair's value to
    its second document."""
    s = rng.normal(size=(3, width))
    sizes = np.array([width, max(width - 1, 1), max(width // 2, 1)])
    valid = np.arange(width) < sizes[:, None]
    z, n_first = _normal_moments._half_pairs(s, valid, 2.0)
    half = width // 2
    buffer = _normal_moments._skew_buffer(3, width, half)
    X = buffer[:, half:]
    X[...] = rng.normal(size=X.shape)
    second = _normal_moments._skew_sum(buffer, width)
    expected_second = np.zeros((3, width))
    for b in range(3):
        seen = []
        for i, c in itertools.product(range(width), range(half)):
            j = (i + c + 1) % width
            expected_second[b, j] += X[b, i, c]
            if np.isfinite(z[b, i, c]):
                assert z[b, i, c] == pytest.approx((s[b, i] - s[b, j]) / 2.0, rel=1e-15)
                seen.append(frozenset((i, j)))
            else:
                assert z[b, i, c] == -np.inf
        n = valid[b].sum()
        assert sorted(seen, key=sorted) == sorted(
            (frozenset(p) for p in itertools.combinations(range(n), 2)), key=sorted)
        assert_allclose(n_first[b], np.isfinite(z[b]).sum(axis=1))
    assert_allclose(second, expected_second, rtol=1e-13, atol=1e-13)


def test_truncation_with_sinkhorn_computes_every_rank():
    """Sinkhorn scales whole rank columns, so it keeps every rank (only the discount is cut)."""
    assert SoftRankLoss(truncation=3)._n_ranks(10) == 3
    assert SoftRankLoss(truncation=30)._n_ranks(10) == 10
    assert SoftRankLoss(truncation=3, sinkhorn_iterations=1)._n_ranks(10) == 10


def test_truncation_far_below_the_query_size_warns(rng):
    """SoftNDCG@R with R << N/2 has almost no gradient from small weights: say so."""
    y, _, qid = _queries(rng, [120, 100, 80])
    with pytest.warns(UserWarning, match="truncation=10 is below a quarter"):
        SoftRankLoss(truncation=10).prepare(y, QueryLayout(qid))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SoftRankLoss(truncation=25).prepare(y, QueryLayout(qid))
        SoftRankLoss().prepare(y, QueryLayout(qid))


def test_rank_distributions_are_whole_with_truncation(rng):
    s = rng.normal(size=9)
    full = SoftRankLoss(1.0, **EXACT).rank_distributions(s)[0]
    for rd in ("binomial", "hybrid", "normal"):
        P = SoftRankLoss(1.0, rank_distribution=rd, truncation=2, n_exact=2).rank_distributions(s)[0]
        assert P.shape == (9, 9)
        assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
        if rd == "binomial":
            assert_allclose(P, full, rtol=1e-13, atol=1e-300)


def test_sinkhorn_alternates_columns_then_rows(rng):
    s = rng.normal(size=8)
    P = SoftRankLoss().rank_distributions(s)[0]
    for _ in range(3):
        P = P / P.sum(axis=0, keepdims=True)
        P = P / P.sum(axis=1, keepdims=True)
    assert_allclose(SoftRankLoss(sinkhorn_iterations=3).rank_distributions(s)[0], P,
                    rtol=1e-13)


@pytest.mark.parametrize("options", OPTIONS[:6], ids=repr)
@pytest.mark.parametrize("scale", [1e4, 1e300])
def test_extreme_scores_and_labels_stay_finite_without_warnings(rng, options, scale):
    y, s, qid = _queries(rng, [9, 4, 1, 6])
    loss = SoftRankLoss(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for labels in (y, y * 1e4, np.zeros_like(y)):
            value, grad = _mean_loss_and_grad(loss, labels, np.sign(s) * scale, qid)
            assert np.isfinite(value) and np.isfinite(grad).all()
        value, grad = _mean_loss_and_grad(SoftRankLoss(1e-300, **options), y, s, qid)
        assert np.isfinite(value) and np.isfinite(grad).all()


def test_labels_must_be_non_negative():
    with pytest.raises(ValueError, match=r"y must be non-negative.*-1"):
        SoftRankLoss().prepare(np.array([1.0, -1.0]), QueryLayout([0, 0]))


@pytest.mark.parametrize(
    "params, name, got",
    [
        ({"sigma": 0.0}, "sigma", "0.0"),
        ({"sigma": -1.0}, "sigma", "-1.0"),
        ({"sigma": np.inf}, "sigma", "inf"),
        ({"n_exact": -1}, "n_exact", "-1"),
        ({"sinkhorn_iterations": 1.5}, "sinkhorn_iterations", "1.5"),
        ({"discount_shape": 1.5}, "discount_shape", "1.5"),
        ({"discount_shape": -2}, "discount_shape", "-2"),
        ({"truncation": 0}, "truncation", "0"),
        ({"rank_distribution": "poisson"}, "rank_distribution", "'poisson'"),
    ],
)
def test_loss_rejects_bad_parameters(params, name, got):
    """The loss validates its parameters with the constraints it shares with the ranker."""
    with pytest.raises(InvalidParameterError,
                       match=rf"The '{name}' parameter of SoftRankLoss must be .* Got {got} instead"):
        SoftRankLoss(**params)


def test_loss_and_ranker_share_their_defaults():
    """The ranker's loss parameters default to the loss's own: the normal approximation."""
    loss, ranker = SoftRankLoss(), SoftRankRanker()
    assert loss.rank_distribution == "normal"
    for name in SoftRankLoss._parameter_constraints:
        assert getattr(ranker, name) == getattr(loss, name), name


# ----------------------------------------------------------------------
# The ranker
@pytest.fixture(scope="module")
def split_data():
    X, y, qid = make_ranking(n_queries=60, n_docs=12, n_features=6, noise=0.3, random_state=0)
    train = qid < 40
    return (X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train])


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"rank_distribution": "normal"},
        {"rank_distribution": "hybrid", "n_exact": 3, "discount_shape": 0.0},
        # the paper's set-up: small net, SGD one query at a time, x0.8 decay
        {"hidden_layer_sizes": (5,), "solver": "sgd", "batch_size": 1,
         "learning_rate_init": 0.05, "learning_rate_decay": 0.8},
        {"solver": "lbfgs", "sinkhorn_iterations": 2},
    ],
    ids=repr,
)
def test_ranker_learns_to_rank(split_data, params):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    ranker = SoftRankRanker(random_state=0, **params).fit(X, y, qid=qid)
    chance = np.mean([
        ndcg_score(y_test, np.random.default_rng(i).normal(size=y_test.size), qid=qid_test, k=10)
        for i in range(5)
    ])
    assert ranker.score(X_test, y_test, qid=qid_test) > chance + 0.15


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ranker_improves_its_training_softndcg(split_data):
    (X, y, qid), _ = split_data
    ranker = SoftRankRanker(random_state=0, early_stopping=False, max_iter=30).fit(X, y, qid=qid)
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0] - 0.05


@pytest.mark.parametrize(
    "params, name",
    [
        ({"sigma": 0.0}, "sigma"),
        ({"n_exact": -1}, "n_exact"),
        ({"discount_shape": 1.5}, "discount_shape"),
        ({"discount_shape": -1.01}, "discount_shape"),
        ({"truncation": 0}, "truncation"),
        ({"rank_distribution": "exact"}, "rank_distribution"),
        ({"sinkhorn_iterations": -2}, "sinkhorn_iterations"),
    ],
)
def test_ranker_rejects_bad_parameters_by_name(split_data, params, name):
    (X, y, qid), _ = split_data
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        SoftRankRanker(**params).fit(X, y, qid=qid)


def test_ranker_rejects_negative_labels(split_data):
    (X, y, qid), _ = split_data
    with pytest.raises(ValueError, match="non-negative"):
        SoftRankRanker(early_stopping=False).fit(X, y - 1.0, qid=qid)
