"""Fig. 2 of BoltzRank (Volkovs and Zemel, ICML 2009): ranks of noisy scores.

Three documents with mean scores uniform on [0, 2] and independent Gaussian
score noise (sigma = 0.2). The true distribution over the 6 rank vectors is
computed by quadrature and checked against Monte Carlo and the exact pairwise
probabilities; it is then approximated by BoltzRank's Boltzmann distribution
(scale fitted on separate score vectors) and by the normalised product of
SoftRank's rank marginals, compared by KL(true || approximation).
examples/plot_boltzrank_distributions.py runs the same comparison on 500
score vectors.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, ndtr, xlogy

from skrank.losses import BoltzRankLoss, SoftRankLoss

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
def scores():
    """200 score vectors to fit beta on and 200 others to compare on."""
    rng = np.random.default_rng(2009)
    return rng.uniform(0.0, 2.0, size=(200, 3)), rng.uniform(0.0, 2.0, size=(200, 3))


@pytest.fixture(scope="module")
def comparison(scores):
    S_fit, S_test = scores
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


def test_true_distribution_sums_to_one_and_gives_pairwise_probabilities(scores):
    S = scores[1]
    P = _true_distribution(S)
    assert np.all(P > 0)
    assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-13)
    for a, b in itertools.permutations(range(3), 2):
        above = RANKS[a] < RANKS[b]
        # the two noisy scores differ by N(mu_a - mu_b, 2 sigma^2)
        exact = ndtr((S[:, a] - S[:, b]) / (np.sqrt(2.0) * SIGMA))
        assert_allclose(P[:, above].sum(axis=1), exact, rtol=0, atol=1e-13)


def test_softrank_sigma_is_the_noise_of_one_score(scores):
    # A two-document SoftRank query ranks a first with the probability that
    # the noisy score of a exceeds that of b, under the true model's sigma.
    S = scores[1][:20]
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
def test_approximation_is_a_distribution_over_rank_vectors(name, scores):
    """Q over the 6 rank vectors is the approximation's weights, normalised.

    The helpers end in a log-softmax, so Q sums to 1 whatever skrank's
    energies or rank marginals are: Q is compared with the weights computed
    by hand from the papers' formulas (:data:`WEIGHTS_BY_HAND`), normalised.
    """
    S = scores[1]
    Q = np.exp(APPROXIMATIONS[name](S))
    assert Q.shape == (len(S), 6)
    assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    weights = WEIGHTS_BY_HAND[name](S)
    assert np.all(weights >= 0) and np.all(weights.sum(axis=1) > 0)
    assert_allclose(Q, weights / weights.sum(axis=1, keepdims=True), rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
def test_boltzmann_mode_sorts_by_score(beta, scores):
    S = scores[1]
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


def test_fitted_beta_is_best_on_the_comparison_vectors(comparison, scores):
    beta, kl = comparison
    P = _true_distribution(scores[1])
    for factor in [0.5, 2.0]:
        worse = _kl(P, _boltzmann(scores[1], factor * beta))
        assert worse.mean() > _upper(kl["boltzmann"])
