"""The listwise loss protocol shared by every ranker.

A loss is set up once per fit with :meth:`ListwiseLoss.prepare` (targets,
and for sampling losses the fixed rank samples) and then evaluated many
times with :meth:`ListwiseLoss.value_and_grad` on all queries or on a
mini-batch of whole queries. Losses know nothing of networks, optimizers or
estimators: they map scores to a value and the gradient with respect to the
scores.
"""

from dataclasses import dataclass, field

import numpy as np

from .._query import QueryLayout


@dataclass
class LossState:
    """Per-fit state of a loss.

    Attributes
    ----------
    layout : QueryLayout
        Layout of the rows the loss was prepared on.
    per_row : dict of str to ndarray
        Arrays whose first axis runs over rows in *sorted* order of ``layout``.
    per_query : dict of str to ndarray
        Arrays whose first axis runs over queries.
    """

    layout: QueryLayout
    per_row: dict = field(default_factory=dict)
    per_query: dict = field(default_factory=dict)

    def take(self, queries):
        """The state restricted to some queries, and the selected positions."""
        positions, layout = self.layout.select(queries)
        queries = np.sort(np.asarray(queries))
        return positions, LossState(
            layout,
            {k: v[positions] for k, v in self.per_row.items()},
            {k: v[queries] for k, v in self.per_query.items()},
        )


class ListwiseLoss:
    """Base class of listwise losses.

    Subclasses implement ``_prepare(y_sorted, layout, random_state)``, which
    returns a :class:`LossState`, and ``_value_and_grad(s_sorted, state)``,
    which returns the per-query losses and the gradient of their *sum* with
    respect to the scores, both in sorted order. This class does the
    bookkeeping: validation, row order, query subsets and averaging.

    Every loss is averaged over queries, so the objective of a fit does not
    grow with the number of queries and mini-batch gradients are unbiased
    estimates of the full gradient.
    """

    #: Name under which the loss is registered in :data:`skrank.losses.LOSSES`.
    name = None

    def prepare(self, y, layout, *, random_state=None):
        """Set the loss up for one fit.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Relevance labels, in row order of ``layout``.
        layout : QueryLayout
            Query layout of the rows.
        random_state : int, RandomState instance or None, default=None
            Seed of any sampling done here (fixed for the whole fit, so that
            the objective is deterministic).

        Returns
        -------
        state : LossState
        """
        y = _check_finite_vector("y", y, layout.n_samples)
        return self._prepare(layout.to_sorted(y), layout, random_state)

    def value_and_grad(self, scores, state, queries=None):
        """Loss averaged over queries and its gradient with respect to the scores.

        Parameters
        ----------
        scores : array-like of shape (n_rows,)
            With ``queries=None``, the scores of all rows of the prepared
            layout, in its row order. Otherwise the scores of the selected
            queries' rows, grouped by query in increasing query number, as
            given by ``state.layout.select(queries)``.
        state : LossState
            What :meth:`prepare` returned.
        queries : array-like of int, default=None
            Distinct query numbers of a mini-batch; None means all queries.

        Returns
        -------
        loss : float
            Mean loss over the (selected) queries.
        grad : ndarray of shape (n_rows,)
            Gradient of ``loss`` with respect to ``scores``, same order.
        """
        if queries is not None:
            _, state = state.take(queries)
        layout = state.layout
        scores = _check_finite_vector("scores", scores, layout.n_samples)
        per_query, grad = self._value_and_grad(layout.to_sorted(scores), state)
        n = layout.n_queries
        return float(per_query.sum() / n), layout.to_rows(grad / n)

    def _prepare(self, y_sorted, layout, random_state):
        raise NotImplementedError

    def _value_and_grad(self, s_sorted, state):
        raise NotImplementedError


def _check_finite_vector(name, values, n):
    """``values`` as a float64 vector of length ``n``, or a ValueError naming it."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (n,):
        raise ValueError(
            f"{name} must have shape ({n},) to match the (selected) queries; "
            f"got {values.shape}."
        )
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite; got NaN or infinite values.")
    return values


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
    prob = np.exp(s_sorted - layout.expand(top))
    total = layout.sum(prob)
    prob /= layout.expand(total)
    return top + np.log(total), prob
