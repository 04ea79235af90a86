"""The softmax of each query's scores, stable for any finite scores."""

import numpy as np


def segment_log_softmax(s_sorted, layout):
    """Per-query log-sum-exp and softmax of scores in sorted order.

    Stable for any finite scores: each query is shifted by its maximum.

    Returns
    -------
    lse : ndarray of shape (n_queries,)
        ``log(sum_j exp(s_j))`` per query.
    prob : ndarray of shape (n_samples,)
        ``exp(s_j - lse)`` in sorted order.
    """
    top = layout.max(s_sorted)
    with np.errstate(over="ignore"):  # gaps beyond the largest float: probability 0
        prob = np.exp(s_sorted - layout.expand(top))
    total = layout.sum(prob)
    prob /= layout.expand(total)
    return top + np.log(total), prob
