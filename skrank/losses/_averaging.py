"""The mean over queries of a loss: the one spelling of how queries are weighed."""

import numpy as np


def query_mean(per_query, grad, weight=None, expand=None):
    """Mean of per-query losses (weighted) and their gradient scaled alike.

    The one spelling of the averaging of
    :meth:`~skrank.losses.ListwiseLoss.sorted_value_and_grad`.

    Parameters
    ----------
    per_query : ndarray of shape (n_queries,)
        Loss of each query.
    grad : ndarray
        Gradient of ``per_query.sum()``; scaled in place.
    weight : ndarray of shape (n_queries,), default=None
        Query weights (``state.query_weight``); None weighs
        queries equally.
    expand : callable, default=None
        Maps ``weight`` to an array that broadcasts against ``grad`` (e.g.
        :meth:`~skrank.utils.QueryLayout.expand` for a gradient over rows); needed with
        ``weight``.

    Returns
    -------
    loss : float
        ``sum(weight * per_query) / n_queries``.
    grad : ndarray
        ``grad`` times ``weight / n_queries``, the same array.
    """
    n = len(per_query)
    if weight is None:
        weight = 1.0
    else:  # query weights of mean 1 over the fit's queries
        # a query of weight 0 adds 0, also where its loss is +inf
        per_query = np.where(weight > 0, per_query, 0.0)
        grad *= expand(weight)
    grad /= n
    with np.errstate(over="ignore"):  # a loss beyond the largest float is inf
        value = float((per_query * weight).sum() / n)
        if value == np.inf and np.isfinite(per_query).all():
            # a product or the sum overflowed, not necessarily the mean
            value = float((per_query / n * weight).sum())
    return value, grad


def _unit_mean(weights):
    """Query weights divided by their mean, exactly 1 where they are all equal.

    Divided by their largest value first, so that no sum overflows (weights
    of 1e308) or loses its precision (weights of 1e-320): a weighted mean of
    the query losses does not depend on the scale of the weights, and
    constant weights of any size give the unweighted fit exactly.
    """
    weights = weights / weights.max()
    return weights / weights.mean()
