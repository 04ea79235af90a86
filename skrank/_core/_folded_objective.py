"""The fit's objective of a linear model on a loss of sample logits, folded once per fit.

A sampled loss (LogRank's walk, BoltzRank) is a function of the logits
``a_q C_q^T s_q`` of ``k`` fixed samples per query (integer coefficients
``C_q``, one scale ``a_q`` per query; see
:meth:`skrank.losses.ListwiseLoss.logit_form`). With the linear model
``s = X w`` the logits are linear in the weights,

.. math:: \\mathrm{logits}_q = a_q \\, (C_q^\\top X_q) \\, w = a_q \\Phi_q w,

so :class:`FoldedObjective` builds :math:`\\Phi_q = C_q^\\top X_q` (``k``
rows per query) once per fit, stacked into one ``(n_queries * k,
n_features)`` matrix ``phi`` in ``X``'s dtype, and every evaluation is two
BLAS products, ``phi @ w`` and ``phi.T @ g``, around the loss's vectorised
objective of the ``(n_queries, k)`` logits: no loop over queries, and no
gathered copy of the training rows (``phi`` replaces it). Queries whose
scale is 0 (their logits are 0 whatever the weights, e.g. LogRank's queries
without a (good, bad) pair) get no rows.

:func:`~skrank._core._objective.make_objective` picks it where its
products are cheaper than the unfolded ones (``n_queries * k * n_features`` against ``n_rows *
n_features + n_rows * k`` multiply-adds each way), and
:class:`~skrank._core._objective.Objective` otherwise (e.g. queries shorter than
``k``, many features).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..utils._memory import check_memory, format_bytes
from ._networks import LinearNetwork
from ._solvers import check_finite
from ._types import Loss

#: Cells gathered at once while folding: the chunk's rows of ``X`` and their
#: coefficients, ``rows x (n_features + k)`` (a single larger query is folded
#: on its own); 1 MB of float64. The products run one query at a time, so a
#: larger chunk is not faster; it only adds to the fit's peak memory, which
#: is reached while folding (the reproducing page has a measurement).
MAX_CELLS = 2**17


def fold_cost(form, X):
    """Multiply-adds of one product each way, folded and unfolded.

    Folded: ``n_live * k * n_features`` (``n_live`` queries of nonzero
    scale). Unfolded: the training rows' share of ``X`` (its stored entries
    when sparse) plus the coefficient products, ``n_rows * k``.

    Returns
    -------
    folded, unfolded : float
    """
    n_rows, k = form.coef.shape
    n_features = X.shape[1]
    n_live = int(np.count_nonzero(form.scale))
    if sp.issparse(X):
        x_cost = X.nnz * n_rows / max(X.shape[0], 1)
    else:
        x_cost = n_rows * n_features
    return float(n_live * k * n_features), float(x_cost + n_rows * k)


def fold(coef, layout, X, rows, queries, *, max_cells=None):
    """``C_q^T X_q`` of some queries, stacked: shape ``(len(queries) * k, n_features)``.

    Parameters
    ----------
    coef : ndarray of int, shape (n_rows, k)
        Coefficients of the rows in the sorted order of ``layout``.
    layout : QueryLayout
        Layout of the training rows (``order`` None: grouped).
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        All rows.
    rows : ndarray of int or None
        Row of ``X`` of each training row (None: ``X`` itself).
    queries : ndarray of int
        Numbers of the queries to fold, in the order of their blocks.
    max_cells : int, default=None
        Budget of the rows of ``X`` and coefficients gathered at once
        (:data:`MAX_CELLS` when None); the result does not depend on it.

    Returns
    -------
    phi : ndarray of shape (len(queries) * k, n_features)
        In ``X``'s dtype (float64 for a non-float ``X``); rows ``i * k`` to
        ``(i + 1) * k`` are query ``queries[i]``'s.
    """
    max_cells = MAX_CELLS if max_cells is None else max_cells
    k = coef.shape[1]
    n_features = X.shape[1]
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    # k is the sampling loss's n_rankings (BoltzRank's, LogRank's): phi can
    # be a few times the samples' own size, which the loss checked
    n_bytes = len(queries) * k * n_features * dtype.itemsize
    check_memory(n_bytes, f"n_rankings={k} needs about {format_bytes(n_bytes)} for the "
                 f"{k} rank samples of each of {len(queries)} queries folded with the "
                 f"{n_features} features of X", "lower n_rankings")
    phi = np.empty((len(queries) * k, n_features), dtype=dtype)
    width = max(max_cells // (n_features + k), 1)  # rows gathered at once
    ends = np.cumsum(layout.sizes[queries])
    i = 0
    while i < len(queries):
        # the next queries of the list whose rows fit the budget (at least one)
        done = ends[i - 1] if i > 0 else 0
        j = max(int(np.searchsorted(ends, done + width, side="right")), i + 1)
        chunk = queries[i:j]
        positions, sizes = layout.query_positions(chunk)
        index = positions if rows is None else rows[positions]
        if isinstance(X, np.ndarray):
            X_chunk = np.take(X, index, axis=0, mode="clip")  # in range by construction
        else:
            X_chunk = X[index]
        C_chunk = coef[positions].astype(dtype)
        start = 0
        for n, size in enumerate(sizes.tolist(), i):
            stop = start + size
            out = phi[n * k:(n + 1) * k]
            if isinstance(X_chunk, np.ndarray):
                np.dot(C_chunk[start:stop].T, X_chunk[start:stop], out=out)
            else:
                out[...] = (X_chunk[start:stop].T @ C_chunk[start:stop]).T
            start = stop
        i = j
    return phi


@dataclass
class FoldedBatch:
    """Some whole queries: their numbers, which have rows in ``phi``, and those rows."""

    queries: np.ndarray
    live: np.ndarray
    phi: np.ndarray

    @property
    def n_queries(self):
        return len(self.queries)


class FoldedObjective:
    """:class:`~skrank._core._objective.Objective` of a linear model, on the folded logits.

    The same objective (mean loss per query, weighted as the loss weighs it,
    plus the network's L2 penalty) and the same interface (``n_queries``,
    ``n_params``, ``value_and_grad``, ``value``, ``train_scores``,
    ``batches``), computed from ``phi`` (see the module): memory
    ``n_queries * k * n_features`` in ``X``'s dtype, built once, in place of
    the gathered copy of the training rows. The products run in ``phi``'s
    dtype (``w`` cast to it); the logits, the loss and the returned gradient
    are float64.

    Parameters
    ----------
    network : LinearNetwork
    loss : ListwiseLoss
        A loss whose ``logit_form(state)`` is not None.
    state, y, X, rows, alpha
        As :class:`~skrank._core._objective.Objective`'s.
    form : LogitForm, default=None
        ``loss.logit_form(state)``, if already at hand.
    max_cells : int, default=None
        Budget of the folding (:func:`fold`).
    """

    def __init__(self, network: LinearNetwork, loss: Loss, state, y, X, rows, alpha, *,
                 form=None, max_cells=None):
        if not isinstance(network, LinearNetwork):
            raise TypeError(f"FoldedObjective needs a LinearNetwork; got {network!r}.")
        self.network, self.loss, self.state, self.y = network, loss, state, y
        self.X, self.rows, self.alpha = X, rows, alpha
        self.form = loss.logit_form(state) if form is None else form
        if self.form is None:
            raise ValueError(f"{loss!r} has no logit form on this state: nothing to fold.")
        self.n_queries = state.layout.n_queries
        self.n_params = network.n_params
        self.k = self.form.k
        self.scale = self.form.scale
        self.live = np.flatnonzero(self.scale != 0)
        # row block of each query in phi (-1: none)
        self.slot = np.full(self.n_queries, -1, dtype=np.intp)
        self.slot[self.live] = np.arange(len(self.live))
        self.phi = fold(self.form.coef, state.layout, X, rows, self.live, max_cells=max_cells)

    def _evaluate(self, params, queries, live, phi, with_grad=True):
        """Objective and gradient of the queries ``queries`` (None: all) folded into ``phi``."""
        n_queries = self.n_queries if queries is None else len(queries)
        scale = self.scale if queries is None else self.scale[queries]
        raw = phi @ params.astype(phi.dtype, copy=False)
        check_finite(raw, "scores")
        if len(live) == n_queries:  # every query live: no scatter
            live_scale = scale[:, None]
            logits = raw.reshape(n_queries, self.k) * live_scale
        else:
            live_scale = scale[live][:, None]
            logits = np.zeros((n_queries, self.k))
            logits[live] = raw.reshape(len(live), self.k) * live_scale
        value, dlogits = self.form.mean_value_and_grad(logits, queries)
        penalty, penalty_grad = self.network.penalty(params, self.alpha)
        check_finite(value + penalty, "objective")
        if not with_grad:
            return value + penalty, None
        if len(live) != n_queries:
            dlogits = dlogits[live]
        dlogits *= live_scale
        grad = phi.T @ dlogits.ravel().astype(phi.dtype, copy=False)
        grad = grad.astype(np.float64)
        grad += penalty_grad
        check_finite(grad, "gradient")
        return value + penalty, grad

    def value_and_grad(self, params, batch=None):
        """Objective on a batch (None: all training queries) and its gradient."""
        if batch is None:
            return self._evaluate(params, None, self.live, self.phi)
        return self._evaluate(params, batch.queries, batch.live, batch.phi)

    def value(self, params):
        """The objective on all training queries (without its gradient)."""
        return self._evaluate(params, None, self.live, self.phi, with_grad=False)[0]

    def train_scores(self, params):
        """Scores of the training rows, in the grouped order of ``state.layout``.

        Scored by the network on all of ``X`` (there is no gathered copy),
        the training rows picked from the result.
        """
        scores = self.network.forward(params, self.X)[0]
        return scores if self.rows is None else scores[self.rows]

    def batches(self, batch_size, random_state):
        """One epoch: batches of ``batch_size`` queries in a random order.

        The same single draw as :meth:`~skrank._core._objective.Objective.batches` (a permutation of
        the queries), so both give the same batches. Each batch's rows of
        ``phi`` are gathered into one buffer reused by every batch of the
        epoch (a batch is consumed before the next one is drawn).
        """
        return self.ordered_batches(batch_size, random_state.permutation(self.n_queries))

    def ordered_batches(self, batch_size, perm):
        """Batches of ``batch_size`` queries in the order ``perm``, as
        :meth:`~skrank._core._objective.Objective.ordered_batches`."""
        n_queries, k = self.n_queries, self.k
        n_features = self.phi.shape[1]
        blocks = self.phi.reshape(len(self.live), k, n_features)
        buffer = np.empty((min(batch_size, len(self.live)), k, n_features), dtype=self.phi.dtype)
        for lo in range(0, n_queries, batch_size):
            queries = perm[lo:lo + batch_size]
            slots = self.slot[queries]
            live = np.flatnonzero(slots >= 0)
            phi = np.take(blocks, slots[live], axis=0, out=buffer[:len(live)], mode="clip")
            yield FoldedBatch(queries, live, phi.reshape(len(live) * k, n_features))
