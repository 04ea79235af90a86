r"""
====================================================
SoftRank: rank distributions, and SoftNDCG as σ → 0
====================================================

SoftRank (Taylor et al., WSDM 2008) smooths every score with Gaussian noise,
:math:`s_j \sim \mathcal N(\bar s_j, \sigma^2)` (eq. 8), so that document
:math:`i` beats document :math:`j` with probability
:math:`\pi_{ij} = \Phi((\bar s_i - \bar s_j) / (\sqrt 2 \sigma))` (eq. 9).
The rank of a document, the number of documents that beat it, then has a
distribution :math:`p_j(r)`, and NDCG becomes its expectation under those
distributions, SoftNDCG (eq. 13-15), a smooth function of the scores.

This example

* draws the rank distributions of a five-document query from
  :meth:`~skrank.losses.SoftRankLoss.rank_distributions`, exact
  (Rank-Binomial, eq. 11-12) and normal approximation (§3.6), at two values
  of :math:`\sigma`, next to a Monte Carlo of the noisy scores themselves;
* follows SoftNDCG as :math:`\sigma \to 0` on synthetic queries and checks
  that it reaches the NDCG of :func:`~skrank.metrics.ndcg_score`.
"""

# %%
# Rank distributions of one query
# -------------------------------
# Five documents; the second and third have close scores. Rank 0 is the top.
# :meth:`~skrank.losses.SoftRankLoss.rank_distributions` returns one
# ``(n, n)`` array per query: row ``j`` is :math:`p_j(r)` over
# :math:`r = 0, \dots, n - 1` for the query's ``j``-th row.
#
# The reference is what eq. 8 describes: draw the noisy scores and count how
# often each document lands at each rank (its standard error is printed).
import matplotlib.pyplot as plt
import numpy as np

from skrank.datasets import make_ranking
from skrank.losses import SoftRankLoss
from skrank.metrics import ndcg_score
from skrank.utils import QueryLayout  # the layout ``prepare`` takes; rankers build it

scores = np.array([2.0, 1.1, 1.0, 0.3, -0.5])
n_docs = len(scores)
SIGMAS = [0.1, 0.5]
KINDS = {"binomial": "Rank-Binomial", "normal": "normal approximation"}

N_DRAWS = 100_000
print(f"Monte Carlo: {N_DRAWS} draws, standard error of a frequency at most "
      f"{0.5 / np.sqrt(N_DRAWS):.4f}")
rng = np.random.default_rng(0)
distributions = {}
for sigma in SIGMAS:
    noisy = scores + sigma * rng.standard_normal((N_DRAWS, n_docs))
    rank = np.argsort(np.argsort(-noisy, axis=1), axis=1)
    distributions["Monte Carlo", sigma] = np.stack(
        [np.bincount(rank[:, j], minlength=n_docs) for j in range(n_docs)]) / len(rank)
    for kind, name in KINDS.items():
        loss = SoftRankLoss(sigma=sigma, rank_distribution=kind)
        (P,) = loss.rank_distributions(scores)  # qid=None: one query
        distributions[name, sigma] = P

for sigma in SIGMAS:
    mc = distributions["Monte Carlo", sigma]
    for name in KINDS.values():
        P = distributions[name, sigma]
        print(f"σ = {sigma}: {name:<20}: largest difference from Monte Carlo "
              f"{np.abs(P - mc).max():.3f}; expected documents per rank "
              f"{np.array2string(P.sum(axis=0), precision=3)}")

# %%
# Each row of a panel is a document (its mean score on the left), each
# column a rank. Under the noise of eq. 8 the ranks are a permutation, so
# every column of the Monte Carlo sums to 1 (one document per rank). The
# Rank-Binomial adds a document's contests as independent Bernoulli
# variables although they share that document's noise, so its columns need
# not sum to 1 (the printed "expected documents per rank"); at the small
# :math:`\sigma` only the close pair is uncertain and it is exact up to the
# Monte Carlo error. The normal approximation turns even a two-point rank
# distribution (the close pair at :math:`\sigma = 0.1`) into a discretised
# bell, with mass at the neighbouring ranks.
fig, ax = plt.subplots(len(SIGMAS), 3, figsize=(11, 6.5), sharex=True, sharey=True)
for row, sigma in enumerate(SIGMAS):
    for col, name in enumerate(["Monte Carlo", *KINDS.values()]):
        P = distributions[name, sigma]
        a = ax[row, col]
        a.imshow(P, cmap="Blues", vmin=0, vmax=1)
        for j, r in np.ndindex(P.shape):
            if P[j, r] >= 0.005:
                a.text(r, j, f"{P[j, r]:.2f}", ha="center", va="center", fontsize=7,
                       color="white" if P[j, r] > 0.6 else "black")
        a.set_title(f"{name}, σ = {sigma}", fontsize=9)
        a.set_xticks(range(n_docs))
        a.set_yticks(range(n_docs), [f"{s:+.1f}" for s in scores])
    ax[row, 0].set_ylabel("document (mean score)")
for a in ax[-1]:
    a.set_xlabel("rank r (0 = top)")
fig.tight_layout()
plt.show()

# %%
# SoftNDCG against σ
# ------------------
# The value of :class:`~skrank.losses.SoftRankLoss` is the mean over queries
# of :math:`1 - \mathcal G`, one minus SoftNDCG, with gains
# :math:`2^{l} - 1` and the discount :math:`1 / \log_2(2 + r)` for ranks
# :math:`r` from 0 (``discount_shape=1``, no truncation). That is the
# ``"skrank"`` convention of :func:`~skrank.metrics.ndcg_score` (exponential
# gain, :math:`1 / \log_2(1 + r)` for ranks from 1, no cut-off), so as
# :math:`\sigma \to 0` SoftNDCG should reach its value.
#
# Ten synthetic queries of 20 documents, scored by the true direction of
# :func:`~skrank.datasets.make_ranking` plus noise, so that the ranking is
# good but not perfect. The baseline is the hard NDCG of these scores. (A
# query without a relevant document would differ: its loss is 0, SoftNDCG 1,
# where :func:`~skrank.metrics.ndcg_score` gives it 0 by default.)
X, y, qid, coef = make_ranking(n_queries=10, n_docs=20, return_coef=True, random_state=0)
s = X @ coef + 0.5 * rng.standard_normal(len(y))
ndcg = ndcg_score(y, s, qid=qid)
n_relevant = np.bincount(qid, weights=y > 0)
print(f"NDCG of the scores (ndcg_score): {ndcg:.6f}; "
      f"{np.sum(n_relevant > 0)} of {len(n_relevant)} queries have a relevant document")
gaps = [np.diff(np.sort(s[qid == q])).min() for q in np.unique(qid)]
print(f"closest two scores of a query: {min(gaps):.2e} apart")

QUERY_LAYOUT = QueryLayout(qid)


def soft_ndcg(sigma, kind, s=s):
    """SoftNDCG averaged over the queries, and the norm of its gradient."""
    loss = SoftRankLoss(sigma=sigma, rank_distribution=kind)
    state = loss.prepare(y, QUERY_LAYOUT)
    value, grad = loss.value_and_grad(s, state)
    return 1.0 - value, np.linalg.norm(grad)


sigma_grid = np.logspace(-4, 2, 49)
curves = {kind: np.array([soft_ndcg(sigma, kind) for sigma in sigma_grid])
          for kind in KINDS}
for kind, name in KINDS.items():
    G = curves[kind][:, 0]
    top = np.argmax(G - ndcg)
    print(f"{name:<20}: SoftNDCG - NDCG at σ = {sigma_grid[0]:g}: {G[0] - ndcg:+.1e}; "
          f"largest {G[top] - ndcg:+.4f} at σ = {sigma_grid[top]:.3g}; "
          f"at σ = {sigma_grid[-1]:g}: {G[-1]:.4f}")

# %%
# The curve has two limits. As :math:`\sigma \to 0` every contest is
# decided and SoftNDCG is the NDCG of the scores (checked above at the
# smallest :math:`\sigma`, well below the closest pair of scores). As
# :math:`\sigma \to \infty` every :math:`\pi_{ij} \to \frac12`, the value
# SoftNDCG takes with all scores equal. That is not the expected NDCG of a
# random ranking (:func:`~skrank.metrics.ndcg_score` of tied scores with its
# default ``ties="average"``): with contests that are coin tosses the
# Rank-Binomial gives every document the rank distribution
# Binomial(:math:`n - 1, \frac12`), concentrated in the middle, not the
# uniform distribution over ranks.
flat = np.zeros_like(s)
limit = {kind: soft_ndcg(1.0, kind, s=flat)[0] for kind in KINDS}  # any σ
random_ndcg = ndcg_score(y, flat, qid=qid)
print(f"σ → ∞: SoftNDCG {limit['binomial']:.4f} (Rank-Binomial), "
      f"{limit['normal']:.4f} (normal approximation); "
      f"NDCG of a random ranking {random_ndcg:.4f}")

# %%
# Left, SoftNDCG against :math:`\sigma`; right, the norm of its gradient
# with respect to the scores. The smoothing moves probability to both orders
# of every close pair, so where close pairs are mostly in the wrong order it
# can raise the expected NDCG above the hard one (the largest excess is
# printed above): SoftNDCG is not a bound on NDCG. As :math:`\sigma`
# decreases, the gradient gathers on the closest pairs of scores, and once
# :math:`\sigma` is well below the closest pair it vanishes, as NDCG is
# piecewise constant in the scores: too small a :math:`\sigma` leaves
# nothing to train on. (Gradients below :math:`10^{-16}` are left off the
# axis; the normal approximation's falls faster than the Rank-Binomial's and
# is exactly 0 at the smallest values of :math:`\sigma`.)
fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
for c, (kind, name) in enumerate(KINDS.items()):
    ax[0].semilogx(sigma_grid, curves[kind][:, 0], color=f"C{c}",
                   label=f"SoftNDCG, {name}")
    ax[0].axhline(limit[kind], color=f"C{c}", ls=":", lw=1)
    ax[1].loglog(sigma_grid, curves[kind][:, 1], color=f"C{c}", label=name)
ax[0].axhline(ndcg, color="k", ls="--", label="NDCG (ndcg_score)")
ax[0].axhline(random_ndcg, color="grey", ls="-.", label="NDCG of a random ranking")
ax[0].set(xlabel="σ", ylabel="mean over 10 queries",
          title="SoftNDCG (dotted: the limits as σ → ∞)")
ax[0].legend(fontsize=8)
ax[1].set(xlabel="σ", ylabel="|gradient| of 1 - SoftNDCG", title="gradient",
          ylim=(1e-16, None))
ax[1].legend(fontsize=8)
fig.tight_layout()
plt.show()
