r"""
===================================================================
LogRank's sampled rankings: restart skew, and the exact AUC sums
===================================================================

:class:`~skrank.losses.LogRankLoss` (Dubey et al., ICDM 2009) sums over the
rankings :math:`y` of each query's good and bad documents under the
log-linear model :math:`\Pr(y | x_q) \propto \exp(w \cdot \phi(x_q, y))`
(eq. 3). For the AUC gain the sums have closed forms over the relaxed space
:math:`\{\pm 1\}^{n^+ n^-}` (§2.3); otherwise they run over a fixed set
:math:`\hat Y_q \cup \{y_q\}` of rankings drawn once per fit by the random
walk of §4. This example looks at both:

* **Restart skew.** With ``walk_restart="graded"`` every walk restarts from the
  good documents as one block below :math:`i` bad ones, drawn with
  probability :math:`\propto \exp(\kappa \Delta_i)`, :math:`\Delta_i` the
  loss :math:`1 - G` of that ranking and :math:`\kappa \le 0`
  (``walk_restart_skew``). What does :math:`\kappa` do to the sample, and to the
  test NDCG@10 of :class:`~skrank.rankers.LogRankRanker` with ExpGain-MAP?
* **Closed form against sample.** ExpGain-AUC with ``sampler="exact"`` and
  with ``sampler="walk"`` on the same scores, as the number of sampled
  rankings grows.

Everything runs on the bundled LightGBM sample (201 training and 50 test
queries). LogRank's model is binary: a document is good when its label is at
least ``relevance_threshold=1``.
"""

# %%
# Data and a baseline
# -------------------
# The baseline is a Ridge regression on the graded labels, as in the
# example comparing LogRank's ten models.
import itertools

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import logsumexp
from sklearn.linear_model import Ridge

from skrank import LogRankRanker, load_rank_sample, ndcg_score
from skrank.losses import LogRankLoss
from skrank.utils import QueryLayout  # the loss protocol's query layout

X, y, qid = load_rank_sample(subset="train")
X_test, y_test, qid_test = load_rank_sample(subset="test")
layout = QueryLayout(qid)  # the rows are grouped by query: sorted order is row order
good = y >= 1
n_pos = np.add.reduceat(good.astype(int), layout.offsets[:-1])
n_neg = layout.sizes - n_pos
informative = (n_pos > 0) & (n_neg > 0)
print(f"{informative.sum()} of {layout.n_queries} training queries have a good and a "
      f"bad document; bad documents per such query: median "
      f"{np.median(n_neg[informative]):g}, largest {n_neg.max()}")

ridge = Ridge(alpha=100.0).fit(X, y)
ridge_ndcg = ndcg_score(y_test, ridge.predict(X_test), qid=qid_test, k=10)
print(f"Ridge (baseline): test NDCG@10 {ridge_ndcg:.4f}")

# %%
# The restart distribution
# ------------------------
# A graded restart is the ranking :math:`B^i G^{n^+} B^{n^- - i}`: :math:`i`
# bad documents, then all good ones, then the other bad ones. Its average
# precision is :math:`\frac{1}{n^+}\sum_{r=1}^{n^+} \frac{r}{i + r}`, so
# with ``metric="map"`` the restart is drawn with probability
# :math:`\propto \exp(\kappa (1 - \mathrm{AP}_i))`. With :math:`\kappa = 0`
# every :math:`i` from 0 to :math:`n^-` is equally likely; the more negative
# :math:`\kappa`, the more the restarts concentrate on few bad documents on
# top, close to the ideal ranking. The default is :math:`\kappa = -10`; the
# paper found -10 to -20 best (its Fig. 6).
#
# A check of the walk against this formula: every walk's first state is its
# restart, and the walk records its ``walk_length`` states one after the
# other after the ideal ranking (sample 0), so samples
# :math:`1, 1 + L, 1 + 2L, \dots` are the restarts. For the training query
# with the most bad documents, 1000 walks per :math:`\kappa`:
KAPPAS = [0.0, -5.0, -10.0, -20.0]
SETTINGS = [("graded", k) for k in KAPPAS] + [("two", None)]


def label(restart, kappa):
    return f"graded, κ = {kappa:g}" if restart == "graded" else 'walk_restart="two"'


def bad_above_first_good(ranks, good, layout):
    """Bad documents above the first good one, per query and sampled ranking."""
    top_good = np.where(good[:, None], ranks.astype(np.intp), len(ranks) + 1)
    return np.minimum.reduceat(top_good, layout.offsets[:-1], axis=0) - 1


q = int(np.argmax(n_neg))
rows = slice(layout.offsets[q], layout.offsets[q + 1])
p, m = n_pos[q], n_neg[q]
i = np.arange(m + 1)
ap = np.array([np.mean(np.arange(1, p + 1) / (k + np.arange(1, p + 1))) for k in i])
one_query = QueryLayout(qid[rows])
restart_freq = {}
for kappa in KAPPAS:
    formula = np.exp(kappa * (1.0 - ap))
    formula /= formula.sum()
    loss = LogRankLoss("expected_gain", metric="map", sampler="walk", n_rankings=10_001,
                       walk_restart_skew=kappa)
    state = loss.prepare(y[rows], one_query, random_state=0)
    first = bad_above_first_good(state.rank_samples().ranks, good[rows], one_query)[0]
    restarts = first[1::loss.walk_length]
    walk = np.bincount(restarts, minlength=m + 1) / len(restarts)
    restart_freq[kappa] = formula, walk
    print(f"κ = {kappa:5g}: mean i {formula @ i:5.2f} (formula) {walk @ i:5.2f} "
          f"(walk); P(i <= 1) {formula[:2].sum():.3f}; "
          f"largest difference of frequencies {np.abs(walk - formula).max():.3f}")
print(f"(query {layout.unique_qid[q]}: {p} good, {m} bad documents)")

# %%
# What the restarts do to the sample
# ----------------------------------
# The default sample: 100 rankings per query in walks of 10 states, drawn
# once per fit. For every setting, the average precision of the distinct
# sampled rankings of the training queries (the ideal ranking, always in
# the sample, left out), the fraction with a bad document on top, and the
# number of distinct rankings per query. ``walk_restart="two"`` restarts from the
# ideal ranking with probability 0.9 and from the worst one otherwise.
sample_map = {}
for restart, kappa in SETTINGS:
    loss = LogRankLoss("expected_gain", metric="map", sampler="walk", walk_restart=restart,
                       walk_restart_skew=-10.0 if kappa is None else kappa)
    samples = loss.prepare(y, layout, random_state=0).rank_samples()
    keep = samples.valid[informative, 1:]
    gains = samples.gains[informative, 1:][keep]
    first = bad_above_first_good(samples.ranks, good, layout)
    first = first[informative, 1:][keep]
    sample_map[restart, kappa] = gains
    print(f"{label(restart, kappa):<16}: AP of the sampled rankings mean "
          f"{gains.mean():.3f}, median {np.median(gains):.3f}; "
          f"bad document on top {np.mean(first > 0):.1%}; "
          f"{keep.sum(axis=1).mean():.1f} distinct rankings per query")

# %%
# What the restarts do to the fitted model
# ----------------------------------------
# ExpGain-MAP fitted on the training queries for each setting, with three
# seeds (the seed draws the sample and the initial weights; ExpGain is not
# convex).
SEEDS = [0, 1, 2]
test_ndcg = {}
for restart, kappa in SETTINGS:
    test_ndcg[restart, kappa] = [
        LogRankRanker(objective="expected_gain", metric="map", sampler="walk", walk_restart=restart,
                      walk_restart_skew=-10.0 if kappa is None else kappa, random_state=seed)
        .fit(X, y, qid=qid).score(X_test, y_test, qid=qid_test)
        for seed in SEEDS
    ]
    values = test_ndcg[restart, kappa]
    print(f"{label(restart, kappa):<16}: test NDCG@10 mean {np.mean(values):.4f} "
          f"(seeds: {', '.join(f'{v:.4f}' for v in values)})")
spread = max(max(v) - min(v) for v in test_ndcg.values())
means = [np.mean(v) for v in test_ndcg.values()]
print(f"largest spread over seeds within a setting {spread:.4f}; the settings' means "
      f"differ by at most {max(means) - min(means):.4f}, "
      f"{'less' if max(means) - min(means) < spread else 'more'} than that spread")

# %%
# Left, the restart distribution of the query with the most bad documents
# (lines: the formula; dots: the walk's restarts). Middle, the distribution
# function of the average precision of the sampled rankings. Right, test
# NDCG@10 of ExpGain-MAP (dots: seeds; dashes: their mean).
fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
for c, kappa in enumerate(KAPPAS):
    formula, walk = restart_freq[kappa]
    ax[0].plot(i, formula, color=f"C{c}", label=f"κ = {kappa:g}")
    ax[0].plot(i, walk, "o", color=f"C{c}", ms=3)
ax[0].set(xlabel="bad documents above the good block (i)", ylabel="restart probability",
          title=f"query {layout.unique_qid[q]}: {p} good, {m} bad")
ax[0].legend(fontsize=8)

for c, (key, gains) in enumerate(sample_map.items()):
    ax[1].ecdf(gains, color=f"C{c}", label=label(*key))
ax[1].set(xlabel="AP of a sampled ranking", ylabel="fraction of sampled rankings",
          title="the sample of the training queries")
ax[1].legend(fontsize=8)

for c, (key, values) in enumerate(test_ndcg.items()):
    ax[2].plot([c] * len(values), values, "o", color=f"C{c}")
    ax[2].plot(c, np.mean(values), "_", color=f"C{c}", ms=25, mew=2)
ax[2].axhline(ridge_ndcg, color="grey", ls="--", label="Ridge")
ax[2].set_xticks(range(len(test_ndcg)),
                 [label(*k).replace(", ", "\n") for k in test_ndcg], fontsize=7)
ax[2].set(ylabel="test NDCG@10", title="ExpGain-MAP", xlim=(-0.5, len(test_ndcg) - 0.5))
ax[2].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Closed form against sample: what the walk sums over
# ---------------------------------------------------
# With :math:`d_{gb} = (s_g - s_b) / (n^+ n^-)` (the normalised feature map),
# the closed form of ExpGain-AUC is :math:`-\log \frac{1}{N} \sum_{gb}
# \sigma(2 d_{gb})`, :math:`N = n^+ n^-`: over the relaxed space the pair
# bits are independent. The walk's version is :math:`-\log \mathbb E_S[G]`
# with
#
# .. math:: \mathbb E_S[G] = \frac{\sum_{y \in S} e^{w \cdot \phi(x_q, y)}
#           G(y)}{\sum_{y \in S} e^{w \cdot \phi(x_q, y)}},
#
# the model restricted to the *set* :math:`S` of distinct sampled rankings
# (the ideal one included). It is not an average of draws, and it has two
# reasons to differ from the closed form: :math:`S` is a small part of all
# rankings, chosen by the walk rather than by the model; and even the set of
# all rankings (total orders) is not the relaxed space, which also holds bit
# patterns that are no total order, unless :math:`n^+ = 1` or
# :math:`n^- = 1` (then every bit pattern is one). As :math:`S` grows to
# every total order, :math:`\mathbb E_S[G]` reaches the sum over the total
# orders, not the closed form.
#
# The scores are those of ExpGain-AUC fitted in closed form. For three small
# training queries the sum over all total orders is computed by brute force:
# every permutation of the documents, reduced to its distinct pair bits.
exact_ranker = LogRankRanker(objective="expected_gain", metric="auc", sampler="exact",
                             random_state=0)
exact_ranker.fit(X, y, qid=qid)
scores = exact_ranker.predict(X)


def total_order_auc(s, good):
    """Number of total orders and E[AUC] under the model over all of them."""
    g, b = np.flatnonzero(good), np.flatnonzero(~good)
    rank = np.argsort(np.array(list(itertools.permutations(range(len(s))))), axis=1)
    bits = (rank[:, g][:, :, None] < rank[:, b][:, None, :]).reshape(len(rank), -1)
    _, first = np.unique(bits @ (1 << np.arange(bits.shape[1])), return_index=True)
    bits = bits[first]  # one row per distinct ranking (pattern of pair bits)
    d = ((s[g][:, None] - s[b][None, :]) / bits.shape[1]).ravel()
    logit = np.where(bits, 1.0, -1.0) @ d  # w . phi(x_q, y)
    return len(bits), np.exp(logit - logsumexp(logit)) @ bits.mean(axis=1)


def expected_auc(loss, s, labels, random_state=0):
    """exp(-loss) of one query: the expected AUC the loss sees."""
    one = QueryLayout(np.zeros(len(s), dtype=int))
    state = loss.prepare(labels, one, random_state=random_state)
    return np.exp(-loss.value_and_grad(s, state)[0]), state


N_SAMPLES = [10, 30, 100, 300, 1000, 3000, 10_000, 30_000]
curves = {}
for query in [7, 192, 10]:  # 5, 6 and 8 documents
    r = qid == query
    s, labels = scores[r], y[r]
    n_total, e_total = total_order_auc(s, good[r])
    closed_loss = LogRankLoss("expected_gain", metric="auc", sampler="exact")
    e_closed, _ = expected_auc(closed_loss, s, labels)
    n_p, n_n = good[r].sum(), (~good[r]).sum()
    print(f"query {query}: {n_p} good, {n_n} bad; {n_total} total orders of "
          f"{2 ** (n_p * n_n)} bit patterns; E[AUC] closed form {e_closed:.6f}, "
          f"over the total orders {e_total:.6f}")
    errors = []
    for n in N_SAMPLES:
        loss = LogRankLoss("expected_gain", metric="auc", sampler="walk", n_rankings=n)
        e_walk, state = expected_auc(loss, s, labels)
        n_distinct = int(state.rank_samples().valid.sum())
        errors.append((abs(e_walk - e_total), abs(e_walk - e_closed), n_distinct))
        if n in (100, 30_000):
            print(f"   {n:6d} samples: {n_distinct:5d} distinct rankings, E_S[AUC] "
                  f"{e_walk:.6f}, error {errors[-1][0]:.1e} (total orders) "
                  f"{errors[-1][1]:.1e} (closed form)")
    curves[query] = np.array(errors), n_total

# %%
# The same on all training queries (up to 27 documents): the mean loss over
# queries, as the fit sees it, and the gradient at the same scores, against
# the closed form.
closed = LogRankLoss("expected_gain", metric="auc", sampler="exact")
closed_value, closed_grad = closed.value_and_grad(scores, closed.prepare(y, layout))
print(f"closed form: mean loss {closed_value:.4f}")
walk_values = []
for n in N_SAMPLES[:4]:
    loss = LogRankLoss("expected_gain", metric="auc", sampler="walk", n_rankings=n)
    value, grad = loss.value_and_grad(scores, loss.prepare(y, layout, random_state=0))
    walk_values.append(value)
    cosine = grad @ closed_grad / np.linalg.norm(grad) / np.linalg.norm(closed_grad)
    print(f"walk, {n:5d} samples: mean loss {value:.4f}; "
          f"cosine of the gradients {cosine:.3f}")

walk_ranker = LogRankRanker(objective="expected_gain", metric="auc", sampler="walk",
                            random_state=0)
walk_ranker.fit(X, y, qid=qid)
print(f"ExpGain-AUC test NDCG@10: closed form "
      f"{exact_ranker.score(X_test, y_test, qid=qid_test):.4f}, walk (100 samples) "
      f"{walk_ranker.score(X_test, y_test, qid=qid_test):.4f}")

# %%
# Left, the error of :math:`\mathbb E_S[\mathrm{AUC}]` against the number of
# sampled rankings (solid: against the sum over all total orders; dashed:
# against the closed form); errors below :math:`10^{-15}` are rounding, the
# sample then holds every ranking. Right, the mean ExpGain-AUC loss over the
# training queries.
FLOOR = 1e-16
fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
for c, (query, (errors, n_total)) in enumerate(curves.items()):
    ax[0].loglog(N_SAMPLES, np.maximum(errors[:, 0], FLOOR), "o-", color=f"C{c}",
                 label=f"query {query} ({n_total} rankings)")
    ax[0].loglog(N_SAMPLES, np.maximum(errors[:, 1], FLOOR), "s--", color=f"C{c}", ms=4)
ax[0].plot([], [], "k-", label="against all total orders")
ax[0].plot([], [], "k--", label="against the closed form")
ax[0].set(xlabel="rankings per query (n_rankings)",
          ylabel="|E_S[AUC] - exact|", title="three small queries")
ax[0].legend(fontsize=8)

ax[1].semilogx(N_SAMPLES[:4], walk_values, "o-", label='sampler="walk"')
ax[1].axhline(closed_value, color="k", ls="--", label='sampler="exact"')
ax[1].set(xlabel="rankings per query (n_rankings)",
          ylabel="mean ExpGain-AUC loss", title=f"all {layout.n_queries} training queries",
          ylim=(0, None))
ax[1].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Reading the results
# -------------------
# * The walk's restarts follow :math:`\exp(\kappa \Delta_i)`. The more
#   negative :math:`\kappa`, the more restarts put at most one bad document
#   above the good block (``P(i <= 1)`` above, for the query with the most
#   bad documents), the higher the gain of the sampled rankings and the
#   fewer of them have a bad document on top. Whether that changes the
#   fitted ExpGain-MAP model beyond the spread over seeds is printed above,
#   next to that spread.
# * With ``sampler="walk"`` the sums run over the sampled set, which makes a
#   different objective from the closed form, not a noisy estimate of it.
#   Its error does not fall steadily, as the :math:`1/\sqrt{n}` of an
#   average of draws would, but only as the set covers more of the
#   rankings; it reaches 0 only when every ranking has been drawn, and even
#   then the limit is the sum over the total orders, which differs from the
#   relaxed closed form unless the query has a single good or a single bad
#   document. On the training queries the walk's loss is far below the
#   closed form's at every sample size tried: its expected AUC is taken over
#   rankings near the ideal one.
