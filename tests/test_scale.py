"""Every ranker fits queries of thousands of documents within a memory budget."""

import tracemalloc
import warnings

import numpy as np
import pytest

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

#: Peak bytes traced by a fit on two queries of 3,000 documents (X is 0.24 MB):
#: the per-fit state and the fixed-size work buffers of the losses and the
#: pairwise potential. SoftRank's half-pair arrays alone would take 200 MB.
BUDGET = 100 * 2**20

RANKERS = {
    "ListNet": ListNetRanker(max_iter=1),
    "SoftRank": SoftRankRanker(max_iter=1),
    "BoltzRank": BoltzRankRanker(n_init=1, max_iter=1),
    "BoltzRank2": BoltzRankRanker(n_init=1, max_iter=1, hidden_layer_sizes=(3,),
                                  pairwise_hidden_layer_sizes=(5,)),
    "LogRank": LogRankRanker(max_iter=1),
}


@pytest.mark.parametrize("name", sorted(RANKERS))
def test_queries_of_3000_documents_fit_within_a_memory_budget(name):
    rng = np.random.default_rng(0)
    n_docs, n_queries = 3000, 2
    X = rng.standard_normal((n_docs * n_queries, 5))
    y = (X[:, 0] + rng.standard_normal(len(X)) > 1).astype(float) + (X[:, 1] > 1.5)
    qid = rng.permutation(np.repeat([4, 9], n_docs))
    ranker = RANKERS[name].set_params(random_state=0)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one epoch: not converged
            ranker.fit(X, y, qid=qid)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    scores = ranker.predict(X, qid=qid)
    assert np.isfinite(scores).all() and np.ptp(scores) > 0
    assert peak < BUDGET, f"{name} traced {peak / 2**20:.0f} MiB"
