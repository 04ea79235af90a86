"""
=====================================================
Grouped cross-validation of a pointwise baseline
=====================================================

Cross-validate a Ridge regression used as a ranker on the bundled LightGBM
ranking sample, keeping every query whole, and compare metric conventions.
"""

# %%
# Load the bundled sample: 201 training queries, labels 0-4.
import numpy as np
from sklearn.linear_model import Ridge

from skrank.datasets import load_rank_sample
from skrank.metrics import make_ranking_scorer
from skrank.model_selection import RankerSearchCV, cross_validate_ranker

X, y, qid = load_rank_sample(subset="train")
print(X.shape, len(np.unique(qid)), "queries")

# %%
# A baseline: Ridge scores documents one at a time. Folds are GroupKFold over
# queries, and the scorers receive qid without metadata routing.
scoring = {
    "ndcg@10": "ndcg@10",
    "ndcg@10 (LETOR)": make_ranking_scorer("ndcg", k=10, convention="letor"),
    "map": "map",
}
result = cross_validate_ranker(Ridge(alpha=10.0), X, y, qid=qid, cv=5, scoring=scoring)
for name in scoring:
    scores = result[f"test_{name}"]
    print(f"{name:16s} {scores.mean():.4f} +- {scores.std():.4f}")

# %%
# Tune the regularisation with a grouped grid search.
search = RankerSearchCV(Ridge(), {"alpha": [0.1, 10.0, 1000.0]}, cv=5)
search.fit(X, y, qid=qid)
print("best alpha:", search.best_params_["alpha"], "NDCG@10:", round(search.best_score_, 4))

# %%
# Held-out test queries.
X_test, y_test, qid_test = load_rank_sample(subset="test")
print("test NDCG@10:", round(search.score(X_test, y_test, qid=qid_test), 4))
