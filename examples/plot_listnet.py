"""
=====================================================
ListNet against a pointwise baseline
=====================================================

Train ListNet (a linear model and a one-hidden-layer network) on synthetic
queries whose relevance depends non-linearly on the features, next to a
Ridge regression baseline, and plot the training curve of the network.
"""

# %%
# Synthetic queries: 150 for training, 50 held out. Queries stay whole.
import numpy as np
from sklearn.linear_model import Ridge

from skrank import ListNetRanker, make_ranking, ndcg_score

X, y, qid = make_ranking(
    n_queries=200, n_docs=20, n_features=8, nonlinear=True, noise=0.1, random_state=0
)
train = qid < 150
X_train, y_train, qid_train = X[train], y[train], qid[train]
X_test, y_test, qid_test = X[~train], y[~train], qid[~train]

# %%
# The baseline scores documents one at a time with a least-squares fit.
ridge = Ridge().fit(X_train, y_train)
print(f"Ridge           NDCG@10 {ndcg_score(y_test, ridge.predict(X_test), qid=qid_test, k=10):.4f}")

# %%
# ListNet fits the softmax of the scores of each query to the softmax of its
# labels. Early stopping holds out 20 % of the training queries.
for hidden in [(), (16,)]:
    ranker = ListNetRanker(hidden_layer_sizes=hidden, random_state=0)
    ranker.fit(X_train, y_train, qid=qid_train)
    print(
        f"ListNet {str(hidden):7s} NDCG@10 {ranker.score(X_test, y_test, qid=qid_test):.4f} "
        f"({ranker.n_iter_} epochs)"
    )

# %%
# Training objective and validation NDCG@10 of the network, per epoch.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(1, 2, figsize=(8, 3))
ax[0].plot(ranker.loss_curve_)
ax[0].set(xlabel="epoch", ylabel="mean ListNet loss + penalty")
ax[1].plot(ranker.validation_scores_)
ax[1].set(xlabel="epoch", ylabel="validation NDCG@10")
fig.tight_layout()
best_epoch = int(np.argmax(ranker.validation_scores_)) + 1
print(f"best validation NDCG@10 {ranker.best_validation_score_:.4f} at epoch {best_epoch}")
