r"""
========================================
The NDCG of BoltzRank's sampled rankings
========================================

Fig. 3a of Volkovs and Zemel (BoltzRank, ICML 2009). BoltzRank never sums
over all :math:`m!` rankings of a query: it draws a fixed set of rankings
once per fit, and its Boltzmann distribution :math:`P(R|S)` lives on that
set. The first ranking sorts the documents by label; each of the others
swaps some documents between two label levels, or permutes the query at
random (the mix is given in :class:`~skrank.losses.BoltzRankLoss`). For the
expected gain to teach anything, the set must hold good and bad rankings
alike; the paper reports that about 55% of the sampled rankings on OHSUMED
have an NDCG above 0.5.

This example draws the sample set with
:meth:`~skrank.losses.BoltzRankLoss.prepare`, as
:class:`~skrank.rankers.BoltzRankRanker` does at the start of a fit (100
rankings per query; the ranker draws them for its training queries only,
with a seed taken from its ``random_state``), and plots the histogram of
the NDCG of the sampled rankings. It uses the training queries of fold 1
of OHSUMED (LETOR 3.0) when the data are found (as
``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed`` beside the
repository), and the training queries of the bundled LightGBM sample
otherwise.
"""

# %%
# Data: OHSUMED fold 1 if present, else the bundled sample.
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skrank import load_letor_fold, load_rank_sample, ndcg_score
from skrank.losses import BoltzRankLoss
from skrank.utils import QueryLayout

candidates = [Path(os.environ.get("SKRANK_SHARED_DATA", "/nonexistent")) / "ohsumed",
              Path.cwd().parent / "shared" / "data" / "ohsumed"]
root = next((p for p in candidates if (p / "Fold1").is_dir()), None)
if root is not None:
    X, y, qid = load_letor_fold(root, "Fold1").train
    name = "OHSUMED fold 1"
else:
    X, y, qid = load_rank_sample(subset="train")
    name = "the bundled LightGBM sample"
layout = QueryLayout(qid)
print(f"{name}: {layout.n_queries} training queries of {layout.sizes.min()} to "
      f"{layout.sizes.max()} documents, labels {np.unique(y)}")

# %%
# The sample set
# --------------
# ``prepare`` takes the labels and their query ids, or their
# :class:`~skrank.utils.QueryLayout` built once (as here), draws the rankings
# and scores each of them once: the ``gains`` of the state's
# :meth:`~skrank.losses.LossState.rank_samples` hold the metric
# :math:`G(R, L)` of every sampled ranking, shape (queries, 100), the
# label-sorted ranking first. The samples depend on
# the seed and the labels, not on the gain, so the two losses below, which
# differ only in their gain (NDCG@5, and NDCG@10, BoltzRank's default), draw
# the same rankings. A query whose labels are all equal gives every ranking
# the same NDCG (it adds nothing to the loss); those queries are left out.
K = (5, 10)
states = {k: BoltzRankLoss(metric=f"ndcg@{k}").prepare(y, layout, random_state=0)
          for k in K}
samples = {k: state.rank_samples() for k, state in states.items()}
assert np.array_equal(samples[5].ranks, samples[10].ranks)
informative = samples[10].informative
print(f"{informative.sum()} of {layout.n_queries} queries have more than one label")
sampled = {k: s.gains[informative] for k, s in samples.items()}
print(f"NDCG@10 of the label-sorted ranking: min {sampled[10][:, 0].min():.3f}")

# %%
# A baseline: the NDCG of uniformly random rankings of the same queries,
# 99 per query, as many as the sample set holds besides the label-sorted
# ranking (random scores have no ties).
rng = np.random.default_rng(0)
keep = np.isin(qid, layout.unique_qid[informative])
shuffled = {k: np.stack([
    ndcg_score(y[keep], rng.random(keep.sum()), qid=qid[keep], k=k, average=False)
    for _ in range(99)], axis=1) for k in K}

for k in K:
    print(f"NDCG@{k:<2d} above 0.5: "
          f"sampled rankings {np.mean(sampled[k][:, 1:] > 0.5):6.1%}, "
          f"random rankings {np.mean(shuffled[k] > 0.5):6.1%}")

# %%
# Histograms of the NDCG of all sampled rankings but the label-sorted one,
# pooled over the queries, next to that of the random rankings. The dotted line is
# 0.5.
bins = np.linspace(0.0, 1.0, 21)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
for ax, k in zip(axes, K):
    share = np.mean(sampled[k][:, 1:] > 0.5)
    ax.hist(sampled[k][:, 1:].ravel(), bins=bins, density=True, alpha=0.7,
            label=f"BoltzRank samples ({share:.0%} above 0.5)")
    ax.hist(shuffled[k].ravel(), bins=bins, density=True, histtype="step",
            color="0.2", linewidth=1.5, label="random rankings")
    ax.axvline(0.5, color="0.4", linestyle=":")
    ax.set(xlabel=f"NDCG@{k} of a ranking", title=f"NDCG@{k}, {name}")
    ax.legend(fontsize=8, loc="upper left")
axes[0].set_ylabel("density")
fig.tight_layout()
plt.show()
