"""Digests of fits, to show that a change of the code leaves every fit bit for bit.

Fits the four rankers over a set of configurations (networks, solvers, early
stopping, restarts, sample weights, float32, sparse X, BoltzRank2's pairwise
potential, LogRank's objectives and samplers) on small synthetic data and the
metrics on their predictions, and prints one SHA-256 digest per configuration
of the predictions, ``loss_curve_``, ``n_iter_``, ``validation_scores_`` and
the metrics' values, bytes as computed. Run it on two checkouts and compare::

    PYTHONPATH=/path/to/old/checkout python benchmarks/fit_digests.py > old.txt
    python benchmarks/fit_digests.py > new.txt
    diff old.txt new.txt

Only public API is used. About a minute on two cores.
"""

import hashlib
import sys
import warnings

import numpy as np
import scipy.sparse as sp

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    make_ranking,
)
from skrank.metrics import (
    average_precision_score,
    dcg_score,
    ndcg_score,
    precision_at_k,
    mrr_score,
    err_score,
)

CONFIGS = [
    (ListNetRanker, {}),
    (ListNetRanker, {"hidden_layer_sizes": (5,)}),
    (ListNetRanker, {"solver": "sgd", "momentum": 0.5}),
    (ListNetRanker, {"solver": "lbfgs", "hidden_layer_sizes": (4,)}),
    (ListNetRanker, {"early_stopping": False, "batch_size": 3}),
    (ListNetRanker, {"n_init": 3, "restarts": "average", "hidden_layer_sizes": (3,)}),
    (ListNetRanker, {"n_init": 2, "restarts": "best"}),
    (SoftRankRanker, {}),
    (SoftRankRanker, {"hidden_layer_sizes": (4,), "rank_distribution": "binomial"}),
    (SoftRankRanker, {"rank_distribution": "hybrid", "truncation": 5}),
    (SoftRankRanker, {"learning_rate_decay": 0.5, "early_stopping": False}),
    (BoltzRankRanker, {}),
    (BoltzRankRanker, {"pairwise_hidden_layer_sizes": (3,), "n_init": 1}),
    (BoltzRankRanker, {"hidden_layer_sizes": (), "metric": "map", "n_init": 2}),
    (LogRankRanker, {}),
    (LogRankRanker, {"objective": "likelihood"}),
    (LogRankRanker, {"objective": "expected_gain", "metric": "auc", "hidden_layer_sizes": (3,)}),
    (LogRankRanker, {"objective": "convex", "sampler": "walk"}),
]

VARIANTS = ["float64", "float32", "weighted", "sparse"]


def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]


def main():
    print(f"skrank from {__import__('skrank').__file__}", file=sys.stderr)
    X, y, qid = make_ranking(n_queries=40, n_docs=(3, 25), n_features=6, random_state=0)
    perm = np.random.RandomState(1).permutation(len(y))
    X, y, qid = X[perm], y[perm], qid[perm]
    weight = np.random.RandomState(2).uniform(0.5, 2.0, size=qid.max() + 1)[qid]
    for cls, params in CONFIGS:
        for variant in VARIANTS:
            if variant == "sparse" and params.get("pairwise_hidden_layer_sizes"):
                continue
            Xv = {"float32": X.astype(np.float32), "sparse": sp.csr_matrix(X)}.get(variant, X)
            fit_params = {"sample_weight": weight} if variant == "weighted" else {}
            ranker = cls(**params, random_state=0)
            if "max_iter" in ranker.get_params():
                ranker.set_params(max_iter=15)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ranker.fit(Xv, y, qid=qid, **fit_params)
            scores = (ranker.predict(Xv, qid=qid) if params.get("pairwise_hidden_layer_sizes")
                      else ranker.predict(Xv))
            metrics = [f(y, scores, qid=qid) for f in
                       (ndcg_score, dcg_score, average_precision_score, precision_at_k,
                        mrr_score, err_score)]
            curve = getattr(ranker, "loss_curve_", None) or []
            val = getattr(ranker, "validation_scores_", None) or []
            name = f"{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"
            print(f"{name:<90} {variant:<9} n_iter={getattr(ranker, 'n_iter_', '-')!s:<4} "
                  f"{digest(scores)} {digest(curve, val)} {digest(metrics)}")


if __name__ == "__main__":
    main()
