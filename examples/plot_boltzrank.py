"""
======================================================
BoltzRank: tuning λ and the network over whole queries
======================================================

BoltzRank trains a scoring network so that the Boltzmann distribution its
scores define over a fixed sample of rankings per query puts its mass on
rankings of high NDCG. Its objective mixes the expected gain with a cross
entropy to the same distribution built from the labels, weighted by
``gain_weight`` (λ in the paper). This example

* tunes λ and the number of hidden units with
  :class:`~skrank.model_selection.RankerSearchCV`, which splits the training
  data by query (GroupKFold), next to a Ridge baseline, and draws the mean
  cross-validated NDCG@10 of every candidate as a heat map;
* draws the paper's Fig. 3b: validation NDCG@10 against λ.

To keep the example quick, every network here is cheaper than
:class:`~skrank.rankers.BoltzRankRanker`'s default: a single run
(``n_init=1``) where the default averages 3 restarts, stopped after 5
epochs without improvement on its validation queries (``n_iter_no_change=5``)
instead of 10. Its scores are those of such single, noisier networks.

It uses fold 1 of OHSUMED (LETOR 3.0) when the data are found (as
``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed`` beside the
repository), and the bundled LightGBM sample otherwise.
"""

# %%
# Data: OHSUMED fold 1 if present, else the bundled sample split by query.
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge

from skrank import BoltzRankRanker, RankerSearchCV, load_letor_fold, load_rank_sample, ndcg_score

candidates = [Path(os.environ.get("SKRANK_SHARED_DATA", "/nonexistent")) / "ohsumed",
              Path.cwd().parent / "shared" / "data" / "ohsumed"]
root = next((p for p in candidates if (p / "Fold1").is_dir()), None)
if root is not None:
    fold = load_letor_fold(root, "Fold1")
    (X, y, qid), (X_val, y_val, qid_val), (X_test, y_test, qid_test) = (
        fold.train, fold.vali, fold.test)
    name = "OHSUMED fold 1"
else:
    X_all, y_all, qid_all = load_rank_sample(subset="train")
    queries = np.unique(qid_all)
    val = np.isin(qid_all, queries[::4])  # a quarter of the queries for validation
    X, y, qid = X_all[~val], y_all[~val], qid_all[~val]
    X_val, y_val, qid_val = X_all[val], y_all[val], qid_all[val]
    X_test, y_test, qid_test = load_rank_sample(subset="test")
    name = "the bundled LightGBM sample"
print(f"{name}: {len(np.unique(qid))} training queries, {len(np.unique(qid_val))} validation")

# %%
# The pointwise baseline.
ridge = Ridge(alpha=10.0).fit(X, y)
print(f"Ridge                 test NDCG@10 "
      f"{ndcg_score(y_test, ridge.predict(X_test), qid=qid_test, k=10):.4f}")

# %%
# Tune λ and the hidden units over whole queries: grouped cross-validation of
# every candidate, then a refit of the best on all training queries. Every
# BoltzRank network of this example uses the cheaper settings below.
cheaper = {"n_init": 1, "n_iter_no_change": 5, "random_state": 0}
lambdas_grid = [0.1, 0.5, 0.9]
hidden_grid = [(3,), (5,), (10,)]
n_folds = 3
search = RankerSearchCV(
    BoltzRankRanker(**cheaper),
    {"gain_weight": lambdas_grid, "hidden_layer_sizes": hidden_grid},
    scoring="ndcg@10", cv=n_folds,
).fit(X, y, qid=qid)
print(f"BoltzRank, tuned      test NDCG@10 {search.score(X_test, y_test, qid=qid_test):.4f}"
      f"  chose {search.best_params_}")

# %%
# The mean NDCG@10 over the validation folds of every candidate, and its
# standard deviation over the folds; the framed cell is the candidate the
# search chose. Differences between cells smaller than that deviation say
# little: each cell is one network per fold, and the folds are small.
mean = np.empty((len(lambdas_grid), len(hidden_grid)))
std = np.empty_like(mean)
results = search.cv_results_
for params, m, s in zip(results["params"], results["mean_test_score"],
                        results["std_test_score"]):
    cell = (lambdas_grid.index(params["gain_weight"]),
            hidden_grid.index(params["hidden_layer_sizes"]))
    mean[cell], std[cell] = m, s
print(f"cross-validated NDCG@10 (mean ± std over {n_folds} folds)")
print("λ \\ hidden" + "".join(f"{str(h):>17s}" for h in hidden_grid))
for lam, row_mean, row_std in zip(lambdas_grid, mean, std):
    print(f"{lam:<11}" + "".join(f"{m:.4f} ± {s:.4f}".rjust(17)
                                 for m, s in zip(row_mean, row_std)))

fig, ax = plt.subplots(figsize=(5, 3.5))
image = ax.imshow(mean, cmap="viridis", origin="lower", aspect="auto")
for (i, j), m in np.ndenumerate(mean):
    ax.text(j, i, f"{m:.3f}\n± {std[i, j]:.3f}", ha="center", va="center", fontsize=8,
            color="black" if m > mean.min() + 0.6 * np.ptp(mean) else "white")
best = search.best_params_
ax.add_patch(plt.Rectangle((hidden_grid.index(best["hidden_layer_sizes"]) - 0.5,
                            lambdas_grid.index(best["gain_weight"]) - 0.5), 1, 1,
                           fill=False, edgecolor="red", linewidth=2))
ax.set_xticks(np.arange(len(hidden_grid)), [str(h) for h in hidden_grid])
ax.set_yticks(np.arange(len(lambdas_grid)), [str(lam) for lam in lambdas_grid])
ax.set(xlabel="hidden_layer_sizes", ylabel="λ (gain_weight)",
       title=f"BoltzRank, cross-validated NDCG@10\non {name}")
fig.colorbar(image, ax=ax)
fig.tight_layout()
plt.show()

# %%
# Fig. 3b of the paper: validation NDCG@10 against λ, here for λ from 0 to 1
# in steps of 0.2. λ = 0 trains on the cross entropy alone, λ = 1 on the
# expected gain alone.
lambdas = np.round(np.linspace(0.0, 1.0, 6), 1)
scores = []
for gain_weight in lambdas:
    ranker = BoltzRankRanker(gain_weight=gain_weight, **cheaper)
    ranker.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    scores.append(ranker.best_validation_score_)
    print(f"λ = {gain_weight:.1f}: validation NDCG@10 {scores[-1]:.4f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(lambdas, scores, marker="o")
ax.set_xlabel("λ (gain_weight)")
ax.set_ylabel("validation NDCG@10")
ax.set_title(f"BoltzRank on {name}")
fig.tight_layout()
plt.show()
