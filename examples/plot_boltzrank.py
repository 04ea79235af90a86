"""
=====================================================
BoltzRank: tuning λ and the network over whole queries
=====================================================

BoltzRank trains a scoring network so that the Boltzmann distribution its
scores define over a fixed sample of rankings per query puts its mass on
rankings of high NDCG. Its objective mixes the expected gain with a cross
entropy to the same distribution built from the labels, weighted by
``gain_weight`` (λ in the paper). This example

* tunes λ and the number of hidden units with
  :class:`~skrank.model_selection.RankerSearchCV`, which splits the training
  data by query (GroupKFold), next to a Ridge baseline;
* draws the paper's Fig. 3b: validation NDCG@10 against λ.

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
# Tune λ and the hidden units over whole queries. Each candidate is one
# network (``n_init=1``) to keep the example quick; the default keeps the best
# of several restarts on validation queries.
search = RankerSearchCV(
    BoltzRankRanker(n_init=1, random_state=0),
    {"gain_weight": [0.5, 0.9], "hidden_layer_sizes": [(3,), (5,)]},
    scoring="ndcg@10", cv=3,
).fit(X, y, qid=qid)
print(f"BoltzRank, tuned      test NDCG@10 {search.score(X_test, y_test, qid=qid_test):.4f}"
      f"  chose {search.best_params_}")

# %%
# Fig. 3b of the paper: validation NDCG@10 against λ. λ = 0 trains on the
# cross entropy alone, λ = 1 on the expected gain alone.
lambdas = np.round(np.linspace(0.0, 1.0, 11), 1)
scores = []
for gain_weight in lambdas:
    ranker = BoltzRankRanker(gain_weight=gain_weight, n_init=2, random_state=0)
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
