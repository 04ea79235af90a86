"""Random queries for the tests of the losses, and a loss evaluated on them."""

import numpy as np

from skrank.utils import QueryLayout


def random_queries(rng, sizes=(1, 2, 5, 7, 3), n_levels=3, shuffle=True):
    """Labels, scores and qid for queries of the given sizes, rows shuffled."""
    qid = np.repeat(np.arange(len(sizes)) * 10 + 3, sizes)
    y = rng.integers(0, n_levels, size=qid.size).astype(float)
    s = rng.normal(size=qid.size)
    if shuffle:
        perm = rng.permutation(qid.size)
        qid, y, s = qid[perm], y[perm], s[perm]
    return y, s, qid


def evaluate(loss, y, s, qid, seed=0):
    """The loss and its gradient at scores ``s``, prepared with ``seed``."""
    layout = QueryLayout(qid)
    state = loss.prepare(y, layout, random_state=seed)
    return loss.value_and_grad(s, state)
