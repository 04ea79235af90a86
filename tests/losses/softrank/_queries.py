"""Random queries for the tests of SoftRank, and the mean loss and gradient on them."""

import numpy as np

from skrank.utils import QueryLayout


#: The exact Rank-Binomial recursion (the loss defaults to the normal approximation).
EXACT = {"rank_distribution": "binomial"}


def mean_loss_and_grad(loss, y, s, qid):
    """The loss (the mean over the queries) and its gradient at scores ``s``."""
    state = loss.prepare(y, QueryLayout(qid))
    return loss.value_and_grad(s, state)


def random_queries(rng, sizes, n_levels=3):
    """Labels, scores and qid of queries of the given sizes, rows shuffled."""
    qid = np.repeat(np.arange(len(sizes)) * 7 + 1, sizes)
    perm = rng.permutation(qid.size)
    y = rng.integers(0, n_levels, size=qid.size).astype(float)
    return y[perm], rng.normal(size=qid.size)[perm], qid[perm]
