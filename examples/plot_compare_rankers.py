"""
====================================================
Comparing the rankers under grouped cross-validation
====================================================

Every ranker of skrank, next to a pointwise Ridge regression, on the
bundled LightGBM sample, scored by NDCG@10 and MAP under grouped
cross-validation (:func:`~skrank.model_selection.cross_validate_ranker`
keeps every query whole in one fold). The rankers are

* :class:`~sklearn.linear_model.Ridge`, the baseline: a least-squares fit
  of the labels, one document at a time;
* :class:`~skrank.rankers.ListNetRanker`: the cross entropy between the
  top-one (softmax) distributions of labels and scores;
* :class:`~skrank.rankers.SoftRankRanker`: the expected NDCG when every
  score is smoothed by Gaussian noise;
* :class:`~skrank.rankers.BoltzRankRanker`: the expected NDCG of a
  Boltzmann distribution over rankings sampled once per query;
* :class:`~skrank.rankers.LogRankRanker`: a log-linear model of the rankings
  of a query's relevant and irrelevant documents.

``python -m skrank compare`` runs the same comparison with each ranker's
defaults. To keep this example quick, BoltzRank trains a single network
(``n_init=1``) where its default averages 3 restarts, so its score here is
that of a cheaper model than the default one. The other skrank rankers keep
their defaults (with a fixed ``random_state``), and Ridge has the penalty
``alpha=10`` of the other examples.
"""

# %%
# The data: the training queries of the bundled sample.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    cross_validate_ranker,
    load_rank_sample,
)

X, y, qid = load_rank_sample(subset="train")
print(f"{X.shape[0]} documents, {X.shape[1]} features, {len(np.unique(qid))} queries, "
      f"labels {np.unique(y)}")

# %%
# Grouped cross-validation of each ranker: GroupKFold over queries, the same
# folds for every ranker, and fixed seeds, so every run gives the same table.
# Three folds rather than the five of ``python -m skrank compare``, again to
# keep the example quick. ``seconds`` is the wall time of the whole
# cross-validation of a ranker.
n_folds = 3
rankers = {
    "Ridge": Ridge(alpha=10.0),
    "ListNet": ListNetRanker(random_state=0),
    "SoftRank": SoftRankRanker(random_state=0),
    "BoltzRank": BoltzRankRanker(n_init=1, random_state=0),
    "LogRank": LogRankRanker(random_state=0),
}
metrics = {"ndcg@10": "NDCG@10", "map": "MAP"}
results, seconds = {}, {}
for name, ranker in rankers.items():
    start = time.perf_counter()
    cv = cross_validate_ranker(ranker, X, y, qid=qid, cv=n_folds, scoring=list(metrics))
    seconds[name] = time.perf_counter() - start
    results[name] = {m: cv[f"test_{m}"] for m in metrics}

print(f"mean ± std over {n_folds} folds")
print(f"{'ranker':10s}" + "".join(f"{label:>17s}" for label in metrics.values())
      + f"{'seconds':>9s}")
for name, res in results.items():
    cells = "".join(f"{res[m].mean():.4f} ± {res[m].std():.4f}".rjust(17)
                    for m in metrics)
    print(f"{name:10s}{cells}{seconds[name]:9.1f}")

# %%
# All rankers see the same folds, so each can be compared with the baseline
# fold by fold. The paired difference removes what makes a fold easy or hard
# for every ranker alike; a mean difference smaller than its standard
# deviation is within the noise of three folds.
print(f"difference to Ridge, mean ± std over the {n_folds} folds")
for name, res in results.items():
    if name == "Ridge":
        continue
    cells = ""
    for m in metrics:
        diff = res[m] - results["Ridge"][m]
        cells += f"{diff.mean():+.4f} ± {diff.std():.4f}".rjust(17)
    print(f"{name:10s}{cells}")
for m, label in metrics.items():
    best = max(results, key=lambda n: results[n][m].mean())
    print(f"highest mean {label}: {best}")

# %%
# Mean test score over the folds, with one standard deviation over the folds
# as error bar; the dashed line marks the Ridge baseline. The vertical axes
# do not start at 0.
names = list(results)
colors = ["0.6"] + [f"C{i}" for i in range(len(names) - 1)]
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
for ax, (metric, label) in zip(axes, metrics.items()):
    means = np.array([results[n][metric].mean() for n in names])
    stds = np.array([results[n][metric].std() for n in names])
    ax.bar(names, means, yerr=stds, capsize=4, color=colors)
    ax.axhline(means[0], color="0.3", linestyle="--", linewidth=1)
    ax.set_ylim((means - stds).min() - 0.05, min(1.0, (means + stds).max() + 0.03))
    ax.set(ylabel=f"test {label}", title=f"{label}, {n_folds}-fold grouped CV")
    ax.tick_params(axis="x", labelrotation=20)
fig.tight_layout()
plt.show()
