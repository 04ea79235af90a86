r"""
=========================================================================
How well BoltzRank and SoftRank fit the rank distribution of noisy scores
=========================================================================

Fig. 2 of Volkovs and Zemel (BoltzRank, ICML 2009). Three documents get
mean scores drawn uniformly on :math:`[0, 2]`, and each score gets
independent Gaussian noise of standard deviation :math:`\sigma_s = 0.2`.
The *true* distribution over the 6 rank vectors :math:`R` is the
probability that the noisy scores sort into :math:`R` (rank 1 is the
highest noisy score). Three approximations of it are compared by
:math:`\mathrm{KL}(\text{true} \,\|\, \text{approximation})`, averaged
over 500 score vectors:

* **Boltzmann** (BoltzRank): :math:`P(R|S) \propto \exp(-\beta E(R|S))`
  over the 6 permutations, with the energy of
  :meth:`skrank.losses.BoltzRankLoss.energy`. The scale :math:`\beta` is
  the only fitted quantity; it minimises the mean KL on 500 *other* score
  vectors.
* **SoftRank Normal** and **SoftRank Rank-Binomial**: the rank
  distribution :math:`p_j(r)` of every document from
  :meth:`skrank.losses.SoftRankLoss.rank_distributions` with
  ``sigma=0.2``. SoftRank's contest probability is
  :math:`\pi_{ij} = \Phi((s_i - s_j)/(\sqrt 2 \sigma))`, so its
  ``sigma`` is the noise of one score, the same as :math:`\sigma_s`.

SoftRank gives one distribution over ranks per document, not a
distribution over rank vectors. Our reading of the paper turns them into
one by the normalised product,
:math:`P(R) \propto \prod_j p_j(r_j)` over the 6 permutations.
"""

# %%
# The true distribution
# ---------------------
# Given the noisy score :math:`x` of the document ranked second, the other
# two are independent, so with :math:`\phi, \Phi` the standard normal
# density and distribution function
#
# .. math:: P(s_a > s_b > s_c) = \int \frac{1}{\sigma}
#           \phi\Big(\frac{x - \bar s_b}{\sigma}\Big)
#           \Phi\Big(\frac{\bar s_a - x}{\sigma}\Big)
#           \Phi\Big(\frac{x - \bar s_c}{\sigma}\Big)\, dx,
#
# a Gaussian integral computed by 80-node Gauss-Hermite quadrature. Its
# error is at the level of float64 rounding (it agrees with adaptive
# quadrature to 1e-15, and test_boltzrank_fig2.py checks it against Monte
# Carlo and against the exact pairwise probabilities). Monte Carlo would be
# costly: the best KL values are a few 1e-3, and the KL from an empirical
# distribution of :math:`n` draws is biased by about :math:`5/(2n)`, so it
# would take some 1e6 draws per score vector to make that bias negligible.
import itertools

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, log_softmax, ndtr, xlogy

from skrank.losses import BoltzRankLoss, SoftRankLoss

SIGMA = 0.2
# RANKS[j, k]: rank (1 is the top) of document j in rank vector k.
RANKS = np.array(list(itertools.permutations([1, 2, 3]))).T
ORDERS = np.argsort(RANKS, axis=0)  # ORDERS[i, k]: document at rank i + 1
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / np.sqrt(2.0 * np.pi)


def true_distribution(S):
    """P(R) for each row of mean scores S, shape (n, 3) -> (n, 6)."""
    a, b, c = (S[:, ORDERS[i]][..., None] for i in range(3))
    x = b + SIGMA * NODES
    return (ndtr((a - x) / SIGMA) * ndtr((x - c) / SIGMA)) @ WEIGHTS


rng = np.random.default_rng(0)
S_fit = rng.uniform(0.0, 2.0, size=(500, 3))  # for beta only
S_test = rng.uniform(0.0, 2.0, size=(500, 3))
P_fit, P_test = true_distribution(S_fit), true_distribution(S_test)
print(f"true distributions sum to 1 within {np.abs(P_test.sum(axis=1) - 1).max():.1e}")

# %%
# The approximations
# ------------------
# Each returns the log-probabilities of the 6 rank vectors, shape (n, 6).
# The KL is :math:`\sum_R p(R) (\log p(R) - \log q(R))`, infinite where
# an approximation gives probability 0 to a rank vector of positive true
# probability.


def energies(S):
    return np.stack([BoltzRankLoss.energy(s, RANKS) for s in S])


def boltzmann(E, beta):
    return log_softmax(-beta * E, axis=1)


def product_of_marginals(M):
    """log P(R) proportional to prod_j M[:, j, r_j] for marginals M (n, 3, 3)."""
    with np.errstate(divide="ignore"):
        logq = np.log(M[:, np.arange(3)[:, None], RANKS - 1]).sum(axis=1)
    return log_softmax(logq, axis=1)


def softrank(S, kind):
    qid = np.repeat(np.arange(len(S)), 3)
    loss = SoftRankLoss(sigma=SIGMA, rank_distribution=kind)
    return product_of_marginals(np.stack(loss.rank_distributions(S.ravel(), qid=qid)))


def kl(P, logQ):
    with np.errstate(invalid="ignore"):
        return (xlogy(P, P) - np.where(P > 0, P * logQ, 0.0)).sum(axis=1)


def summary(name, values):
    n_inf = int(np.isinf(values).sum())
    if n_inf:
        print(f"{name:28s} mean KL inf  ({n_inf} of {len(values)} infinite)")
    else:
        se = values.std(ddof=1) / np.sqrt(len(values))
        print(f"{name:28s} mean KL {values.mean():.5f} +- {se:.5f}")


# %%
# A baseline first: the uniform distribution over the 6 rank vectors knows
# nothing of the scores.
KL = {"uniform (baseline)": kl(P_test, np.full((len(S_test), 6), -np.log(6.0)))}
summary("uniform (baseline)", KL["uniform (baseline)"])

# %%
# The Boltzmann scale :math:`\beta`, fitted on the other 500 score vectors
# (a bounded search over :math:`\log\beta`), then evaluated on the test
# vectors.
E_fit, E_test = energies(S_fit), energies(S_test)
fit = minimize_scalar(
    lambda log_beta: kl(P_fit, boltzmann(E_fit, np.exp(log_beta))).mean(),
    bounds=(np.log(0.1), np.log(100.0)), method="bounded", options={"xatol": 1e-6},
)
beta = float(np.exp(fit.x))
print(f"fitted beta = {beta:.3f} (mean KL {fit.fun:.4f} on the fitting vectors)")

KL["Boltzmann"] = kl(P_test, boltzmann(E_test, beta))
KL["SoftRank Normal"] = kl(P_test, softrank(S_test, "normal"))
KL["SoftRank Rank-Binomial"] = kl(P_test, softrank(S_test, "binomial"))
for name in ["Boltzmann", "SoftRank Normal", "SoftRank Rank-Binomial"]:
    summary(name, KL[name])

# %%
# The product of marginals
# ------------------------
# Two things separate SoftRank from the true distribution: its rank
# marginals (the Rank-Binomial treats a document's contests as independent,
# though they share its noise) and the product that turns marginals into a
# distribution over rank vectors. The product of the *exact* marginals
# shows what the product alone costs.
exact_marginals = np.zeros((len(S_test), 3, 3))
for k in range(6):
    exact_marginals[:, np.arange(3), RANKS[:, k] - 1] += P_test[:, k, None]
KL["product of exact marginals"] = kl(P_test, product_of_marginals(exact_marginals))
summary("product of exact marginals", KL["product of exact marginals"])

# %%
# Where the Normal approximation is infinite
# ------------------------------------------
# When one document is far from another, the normal approximation puts a
# mass far below 1e-16 on its other ranks. skrank computes the mass of
# :math:`[r - \frac12, r + \frac12]` as a difference of normal
# distribution functions, which rounds such masses to exactly 0 above the
# mean, and the KL is then infinite. The same approximation with the masses
# computed from log tail probabilities (the same mean, the same variance
# and the same variance floor) is finite everywhere:


def log_interval(lo, hi):
    """log(Phi(hi) - Phi(lo)) without cancellation."""
    upper = lo > 0  # both above the mean: reflect, so the tails are lower
    lo, hi = np.where(upper, -hi, lo), np.where(upper, -lo, hi)
    a, b = log_ndtr(hi), log_ndtr(lo)
    return a + np.log1p(-np.exp(b - a))


def normal_log_space(S):
    pi = ndtr((S[:, :, None] - S[:, None, :]) / (np.sqrt(2.0) * SIGMA))
    pi[:, np.arange(3), np.arange(3)] = 0.0
    mean = pi.sum(axis=1)[..., None]
    sd = np.sqrt((pi * (1.0 - pi)).sum(axis=1) + 1e-12)[..., None]
    r = np.arange(3)
    logM = log_interval((r - 0.5 - mean) / sd, (r + 0.5 - mean) / sd)
    logM = log_softmax(logM, axis=2)  # renormalised over the 3 ranks
    return log_softmax(logM[:, np.arange(3)[:, None], RANKS - 1].sum(axis=1), axis=1)


KL["SoftRank Normal, log tails"] = kl(P_test, normal_log_space(S_test))
summary("SoftRank Normal, log tails", KL["SoftRank Normal, log tails"])
finite = np.isfinite(KL["SoftRank Normal"])
gap = np.abs(KL["SoftRank Normal"] - KL["SoftRank Normal, log tails"])[finite].max()
print(f"where skrank's Normal KL is finite, the two differ by at most {gap:.1e}")

# %%
# The distributions for one score vector
# --------------------------------------
# Two close documents and a third below them. Ticks are the rank vectors
# :math:`(r_1, r_2, r_3)`; left, the distributions; right, the KL of every
# test vector (log scale, the finite values only).
import matplotlib.pyplot as plt

s = np.array([[1.2, 1.05, 0.75]])
shown = {
    "true": true_distribution(s)[0],
    "Boltzmann": np.exp(boltzmann(energies(s), beta))[0],
    "SoftRank Normal": np.exp(softrank(s, "normal"))[0],
    "SoftRank Rank-Binomial": np.exp(softrank(s, "binomial"))[0],
}
fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
width = 0.2
for i, (name, q) in enumerate(shown.items()):
    ax[0].bar(np.arange(6) + (i - 1.5) * width, q, width, label=name)
ax[0].set_xticks(np.arange(6), ["".join(map(str, RANKS[:, k])) for k in range(6)])
ax[0].set(xlabel="rank vector", ylabel="probability", title=f"scores {s[0]}")
ax[0].legend(fontsize=8)

names = ["Boltzmann", "SoftRank Normal, log tails", "SoftRank Rank-Binomial",
         "product of exact marginals", "uniform (baseline)"]
ax[1].boxplot([KL[n][np.isfinite(KL[n])] for n in names], whis=(0, 100))
ax[1].set_xticks(np.arange(1, len(names) + 1), [n.replace(" ", "\n", 1) for n in names],
                 fontsize=7)
ax[1].set(yscale="log", ylabel="KL(true || approximation)",
          title=f"{len(S_test)} score vectors, beta = {beta:.2f}")
fig.tight_layout()
