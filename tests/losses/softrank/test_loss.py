"""SoftRankLoss (skrank/losses/_softrank/_loss.py): rank distributions, SoftNDCG, its gradient.

The pieces have their own files (the binomial recursion, the normal
approximation and its moments and contraction, truncation, Sinkhorn); the
ranker is tested in tests/rankers/test_softrank.py.
"""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import norm
from sklearn.utils._param_validation import InvalidParameterError

from skrank import SoftRankRanker, ndcg_score
from skrank.losses import SoftRankLoss
from skrank.losses._softrank import EXACT_MAX_DOCS, _loss
from skrank.utils import QueryLayout

from tests._inputs import HUGE, no_warnings, small_queries
from tests.losses.softrank._queries import EXACT, mean_loss_and_grad, random_queries

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


def test_several_queries_give_each_querys_distributions(rng):
    """Blocks of padded queries (sizes 1..9, rows shuffled) = one query at a time."""
    sizes = [9, 1, 4, 6, 2, 8, 5, 3, 7]
    y, s, qid = random_queries(rng, sizes)
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
    y, _, qid = random_queries(rng, [n, 9, 5])
    s = rng.permutation(y.size) * 0.1
    value = mean_loss_and_grad(loss, y, s, qid)[0]
    assert_allclose(1.0 - value, ndcg_score(y, s, qid=qid), rtol=1e-12)
    for k in (1, 3):  # SoftNDCG@R tends to NDCG@R
        truncated = SoftRankLoss(1e-6, rank_distribution=rank_distribution, truncation=k)
        value = mean_loss_and_grad(truncated, y, s, qid)[0]
        assert_allclose(1.0 - value, ndcg_score(y, s, qid=qid, k=k), rtol=1e-12)


# ----------------------------------------------------------------------
# SoftNDCG and its gradient
def test_softndcg_known_value_two_documents():
    """Two documents, labels 1 and 0: G = P(first ranked top) = pi_12 (the exact model)."""
    s = np.array([0.3, -0.2])
    sigma = 0.7
    value, grad = mean_loss_and_grad(SoftRankLoss(sigma, **EXACT), np.array([1.0, 0.0]), s, [5, 5])
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
    value, grad = mean_loss_and_grad(SoftRankLoss(), y, s, qid)
    alone = mean_loss_and_grad(SoftRankLoss(), y[3:], s[3:], qid[3:])[0]
    assert_allclose(value, alone / 2, rtol=1e-14)  # mean over both queries
    assert (grad[:3] == 0).all()


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("options", OPTIONS, ids=repr)
def test_gradient_matches_finite_differences(rng, options):
    """Every option, queries up to 50 documents, padded blocks, float64."""
    y, s, qid = random_queries(rng, [50, 1, 2, 9, 11, 6])
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


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("rank_distribution", ["binomial", "hybrid", "normal"])
@pytest.mark.parametrize("truncation", [1, 4, 12])
def test_truncated_softndcg_equals_full_computation_with_zeroed_discount(
        rng, monkeypatch, rank_distribution, truncation):
    """SoftNDCG@R computing R ranks equals computing every rank with D(r) = 0 from R on."""
    y, s, qid = random_queries(rng, [120, 60, 49, 7, 1, 2])
    loss = SoftRankLoss(rank_distribution=rank_distribution, n_exact=3, truncation=truncation,
                        discount_shape=0.3)
    value, grad = mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(SoftRankLoss, "_n_ranks", lambda self, width: width)
    full_value, full_grad = mean_loss_and_grad(loss, y, s, qid)
    assert_allclose(value, full_value, rtol=1e-12)
    assert_allclose(grad, full_grad, rtol=1e-10, atol=1e-14)
    assert np.abs(grad).max() > 1e-4


def test_truncation_with_sinkhorn_computes_every_rank():
    """Sinkhorn scales whole rank columns, so it keeps every rank (only the discount is cut)."""
    assert SoftRankLoss(truncation=3)._n_ranks(10) == 3
    assert SoftRankLoss(truncation=30)._n_ranks(10) == 10
    assert SoftRankLoss(truncation=3, sinkhorn_iterations=1)._n_ranks(10) == 10


def test_truncation_far_below_the_query_size_warns(rng):
    """SoftNDCG@R with R << N/2 has almost no gradient from small weights: say so."""
    y, _, qid = random_queries(rng, [120, 100, 80])
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


@pytest.mark.parametrize("options", OPTIONS[:6], ids=repr)
@pytest.mark.parametrize("scale", [1e4, 1e300])
def test_extreme_scores_and_labels_stay_finite_without_warnings(rng, options, scale):
    y, s, qid = random_queries(rng, [9, 4, 1, 6])
    loss = SoftRankLoss(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for labels in (y, y * 1e4, np.zeros_like(y)):
            value, grad = mean_loss_and_grad(loss, labels, np.sign(s) * scale, qid)
            assert np.isfinite(value) and np.isfinite(grad).all()
        value, grad = mean_loss_and_grad(SoftRankLoss(1e-300, **options), y, s, qid)
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


# ----------------------------------------------------------------------------
# Extreme parameters
@pytest.mark.parametrize("value", HUGE)
def test_huge_truncation_and_n_exact_of_softrank_are_no_limit(value, rng):
    qid = np.repeat([0, 1, 2], [4, 7, 2])
    y, scores = small_queries(rng, qid)

    def loss(**params):
        return SoftRankLoss(**params).value_and_grad(scores, SoftRankLoss(**params).prepare(y, qid))

    for distribution in ("binomial", "normal", "hybrid"):
        got = loss(rank_distribution=distribution, truncation=value)
        expected = loss(rank_distribution=distribution, truncation=None)
        assert got[0] == expected[0]
        np.testing.assert_array_equal(got[1], expected[1])
    got = loss(rank_distribution="hybrid", n_exact=value)
    expected = loss(rank_distribution="hybrid", n_exact=7)  # every document of every query
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("sigma", [1e-310, 5e-324, 1e308, 2e307])
@pytest.mark.parametrize("make", [SoftRankLoss, lambda sigma: SoftRankRanker(sigma=sigma)
                                  .fit(np.zeros((2, 1)), [0, 1], qid=[0, 0])])
def test_sigma_beyond_the_floats_is_refused(make, sigma):
    """Infinite gradients below a normal float, overflow warnings above 1.5e307."""
    with pytest.raises(InvalidParameterError,
                       match=rf"The 'sigma' parameter of SoftRank\w+ must be a float "
                             rf"\(not a bool\) in the range .* Got {re.escape(repr(sigma))} instead"):
        make(sigma)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
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


@pytest.mark.parametrize("distribution, n, warns", [
    ("binomial", EXACT_MAX_DOCS + 1, True),
    ("binomial", EXACT_MAX_DOCS, False),
    ("hybrid", EXACT_MAX_DOCS + 1, False),
    ("normal", EXACT_MAX_DOCS + 1, False),
])
def test_softrank_exact_on_a_huge_query_warns(distribution, n, warns):
    y = np.arange(n) % 3
    layout = QueryLayout(np.r_[np.zeros(n, dtype=int), [1, 1]])
    loss = SoftRankLoss(rank_distribution=distribution)
    labels = np.r_[y, [0, 1]]
    if warns:
        with pytest.warns(UserWarning, match="rank_distribution='hybrid'"):
            loss.prepare(labels, layout)
    else:
        context = no_warnings()
        try:
            loss.prepare(labels, layout)
        finally:
            context.__exit__(None, None, None)
