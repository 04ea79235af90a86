"""
=====================================================
LogRank: ten conditional models of rankings
=====================================================

LogRank (Dubey et al., ICDM 2009) puts a log-linear distribution on the
rankings of each query's good and bad documents and fits a linear model by
L-BFGS under one of four objectives (MLE, ExpGain, L3, ConvexLoss) and one
of three gains (AUC, MAP, NDCG@10): MLE ignores the gain, so there are ten
models. Here all ten are fitted on the bundled LightGBM sample with the
default ``C`` and feature map (normalised by the number of pairs) and
compared on its test queries, next to a Ridge regression baseline.
"""

# %%
# The bundled sample: 201 training queries and 50 test queries, graded
# labels 0..4. LogRank's models are binary: a document is good when its label
# is at least ``relevance_threshold=1``; the test metric uses the graded
# labels.
from sklearn.linear_model import Ridge

from skrank import LogRankRanker, load_rank_sample, ndcg_score

X, y, qid = load_rank_sample(subset="train")
X_test, y_test, qid_test = load_rank_sample(subset="test")

ridge = Ridge(alpha=100.0).fit(X, y)
results = {"Ridge": ndcg_score(y_test, ridge.predict(X_test), qid=qid_test, k=10)}

# %%
# The ten models. AUC (and MLE) sums run over all rankings in closed form;
# MAP and NDCG sums over 100 rankings per query drawn once by the paper's
# random walk, restarted from rankings with bad documents on top
# (``sampler="auto"`` picks). ExpGain is not convex; the others are, for the
# linear model.
models = [("likelihood", "auc")] + [(o, g) for o in ("expected_gain", "l3", "convex")
                             for g in ("auc", "map", "ndcg")]
for objective, gain in models:
    metric = "ndcg@10" if gain == "ndcg" else gain
    ranker = LogRankRanker(objective=objective, metric=metric, random_state=0)
    ranker.fit(X, y, qid=qid)
    name = "MLE" if objective == "likelihood" else f"{objective}-{gain}"
    results[name] = ranker.score(X_test, y_test, qid=qid_test)
    print(f"{name:<14} test NDCG@10 {results[name]:.4f} ({ranker.n_iter_} L-BFGS iterations)")

# %%
# Test NDCG@10 of each model.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(8, 3))
ax.bar(list(results), list(results.values()), color=["grey"] + ["C0"] * len(models))
ax.set(ylabel="test NDCG@10", ylim=(min(results.values()) - 0.05, max(results.values()) + 0.02))
ax.tick_params(axis="x", labelrotation=60)
fig.tight_layout()
