"""The objective a solver minimises: the mean loss per query plus the L2 penalty.

:class:`Objective` holds the network, the prepared loss, the training rows
(addressed through row indices into ``X``) and the L2 strength; it gives the
objective and its gradient on all training queries or on a mini-batch
(:class:`Batch`), and the epoch's mini-batches. :func:`make_objective`
builds the objective of a fit: a
:class:`~skrank._core._folded_objective.FoldedObjective` where a linear
model on a loss of sample logits is cheaper folded, and the copy of the
training rows the solver's kind calls for.

The training queries are addressed through an array of row indices into
``X``. A stochastic solver takes the rows of each mini-batch from ``X``
(a view for a batch of one query when its rows are a range of ``X``, else a
copy into a buffer reused by the epoch's batches: a block per query where
the queries are ranges of ``X`` and large, else one indexing operation).
A full-batch solver copies the training rows once, grouped
(:meth:`Objective.gather`); so does a stochastic solver when a query's rows
are scattered over ``X`` and the copy fits comfortably in the memory
available (:meth:`Objective.gather_scattered`), since a batch then copies
contiguous blocks instead of waiting on the memory's latency row by row.
Each epoch draws a permutation of the queries; the loss state of a batch is
taken from the fit's state the same way as its rows, without
re-validation.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..losses import LossState
from ..utils._memory import available_memory
from ..utils._query_layout import QueryLayout
from ._folded_objective import FoldedObjective, fold_cost
from ._networks import LinearNetwork
from ._solvers import check_finite
from ._types import Loss, Network

#: Fold when the folded products cost at most this many times the unfolded
#: ones (:func:`make_objective`; a private switch: 0 never folds, ``np.inf``
#: always does).
FOLD_RATIO = 1.0

#: Largest share of the memory available that a stochastic fit's grouped
#: copy of scattered training rows may take (:meth:`Objective.gather_scattered`).
GATHER_MEMORY_SHARE = 0.5

#: Mean bytes of a training query's rows from which a mini-batch whose
#: queries are ranges of a dense ``X`` is copied a block per query (one slice
#: and copy each) rather than row by row (one indexing operation): below it
#: the slices cost more in Python than the block copies save.
BLOCK_COPY_MIN_BYTES = 2**15

#: Rows of whole queries scored at once by :meth:`Objective.train_scores` for
#: a network that scores a query's rows jointly (gathered from ``X``).
TRAIN_CHUNK_ROWS = 2**14


@dataclass
class Batch:
    """The rows of some whole queries (gathered from ``X``) and their loss state."""

    X: object
    state: LossState

    @property
    def n_queries(self):
        return self.state.layout.n_queries


class Objective:
    """Mean loss per query plus the L2 penalty, over the training queries.

    Parameters
    ----------
    network : network
        A scoring network, such as :func:`~skrank._core._network_factory.make_network`
        makes (:mod:`skrank._core._networks` describes the interface of every
        network).
    loss : ListwiseLoss
        The loss; ``state`` is what its ``prepare`` returned.
    state : LossState
        Prepared on the training rows, grouped by query (``state.layout`` has
        no row permutation).
    y : ndarray of shape (n_train_rows,)
        Labels of the training rows, grouped as ``state.layout`` (for the
        training metric).
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        All rows (training rows are addressed through ``rows``).
    rows : ndarray of shape (n_train_rows,) or None
        Row of ``X`` of each training row in the grouped order of
        ``state.layout``; None when that is ``X`` itself.
    alpha : float
        Strength of the network's L2 penalty.
    """

    def __init__(self, network: Network, loss: Loss, state: LossState, y: np.ndarray, X,
                 rows: np.ndarray | None, alpha: float):
        self.network, self.loss, self.state, self.y = network, loss, state, y
        self.X, self.rows, self.alpha = X, rows, alpha
        self.n_queries = state.layout.n_queries
        self.n_params = network.n_params
        self._X_train = None
        self._blocks = False  # not computed yet: _query_blocks

    @property
    def X_train(self):
        """The training rows in grouped order (gathered once, on first use)."""
        if self._X_train is None:
            if self.rows is None:
                self._X_train = self.X
            elif isinstance(self.X, np.ndarray):  # in range: no bounds check, no temporary
                self._X_train = np.take(self.X, self.rows, axis=0, mode="clip")
            else:
                self._X_train = self.X[self.rows]
        return self._X_train

    def value_and_grad(self, params, batch=None):
        """Objective on a batch (None: all training queries) and its gradient."""
        if batch is None:
            X, state = self.X_train, self.state
        else:
            X, state = batch.X, batch.state
        scores, cache = self.network.forward(params, X, state.layout)
        check_finite(scores, "scores")
        # the network runs in X's dtype; the loss on float64 scores (one per row).
        # A batch's state is cut from self.state, checked once per pass over the batches.
        value, dscores = self.loss.sorted_value_and_grad(
            scores.astype(np.float64, copy=False), state, check_state=batch is None)
        grad = self.network.backward(params, cache, dscores)
        penalty, penalty_grad = self.network.penalty(params, self.alpha)
        grad += penalty_grad
        check_finite(value + penalty, "objective")
        check_finite(grad, "gradient")
        return value + penalty, grad

    def train_scores(self, params):
        """Scores of the training rows, in the grouped order of ``state.layout``.

        A network that scores rows independently scores all of ``X`` and the
        training rows are picked from the result (cheaper than gathering them);
        one that scores a query's rows jointly is given the rows of a chunk of
        whole queries at a time (:data:`TRAIN_CHUNK_ROWS`), so that no copy
        of the training rows is made.
        """
        layout = self.state.layout
        if self._X_train is not None or self.rows is None:
            scores = self.network.forward(params, self.X_train, layout)[0]
        elif not self.network.needs_query:
            scores = self.network.forward(params, self.X)[0][self.rows]
        else:
            scores = np.empty(layout.n_samples, dtype=self.X.dtype)
            for lo, hi in layout.ranges(TRAIN_CHUNK_ROWS):
                part = slice(layout.offsets[lo], layout.offsets[hi])
                scores[part] = self.network.forward(
                    params, self.X[self.rows[part]], layout.part(lo, hi))[0]
        return scores.astype(np.float64, copy=False)

    def gather(self):
        """Copy the training rows once, grouped by query, and train on the copy.

        For a full-batch solver, which evaluates every training row at every
        iteration (one copy shared by the workers, instead of one gather per
        evaluation). Stochastic solvers take each mini-batch's rows from
        ``X`` (:meth:`batches`) and copy them only as
        :meth:`gather_scattered` decides.
        """
        self.X, self.rows = self.X_train, None
        self._blocks = False  # not computed yet: _query_blocks

    def gather_scattered(self, memory_share=GATHER_MEMORY_SHARE):
        """:meth:`gather` for a stochastic solver, where it makes epochs faster.

        Each mini-batch copies its rows from ``X``. When every query's
        training rows are one contiguous range of ``X`` (rows grouped by
        query, as LETOR files keep them), that copy streams a few blocks;
        when they are scattered, every row is a separate fetch that waits on
        the memory's latency, costing about twice the epoch's arithmetic on
        its own. A grouped copy of the training rows, made once, turns every
        later epoch's fetches into blocks. It is made only when the rows are
        scattered and the copy takes at most ``memory_share`` of the memory
        available now (:func:`~skrank.utils.available_memory`; none where
        that is unknown), so that it never decides whether a fit fits; the
        batches and their values are the same either way.

        Returns
        -------
        gathered : bool
            Whether the rows were copied.
        """
        if self.rows is None or not self._rows_scattered():
            return False
        X = self.X
        if sp.issparse(X):
            n_bytes = (X.nnz * (X.data.itemsize + X.indices.itemsize)
                       * len(self.rows) / max(X.shape[0], 1)
                       + (len(self.rows) + 1) * X.indptr.itemsize)
        else:
            n_bytes = len(self.rows) * np.prod(X.shape[1:]) * X.dtype.itemsize
        available = available_memory()  # unknown: no copy, which is never needed
        if available is None or n_bytes > memory_share * available:
            return False
        self.gather()
        return True

    def _query_blocks(self):
        """The first row of ``X`` of each training query, where batches copy a block per query.

        For a dense ``X`` in which every training query is one range of
        rows; None where some query's rows are scattered over ``X``, or the
        queries are too small for block copies to pay
        (:data:`BLOCK_COPY_MIN_BYTES`). Computed once.
        """
        if self._blocks is False:
            layout, X = self.state.layout, self.X
            starts = layout.offsets[:-1]
            row_bytes = X.shape[1] * X.dtype.itemsize if isinstance(X, np.ndarray) else 0
            large = row_bytes * layout.n_samples >= BLOCK_COPY_MIN_BYTES * max(layout.n_queries, 1)
            if not large:
                self._blocks = None
            elif self.rows is None:
                self._blocks = starts
            else:
                self._blocks = None if self._rows_scattered() else self.rows[starts]
        return self._blocks

    def _rows_scattered(self):
        """Whether some query's training rows are not one contiguous range of ``X``."""
        breaks = np.diff(self.rows) != 1
        breaks[self.state.layout.offsets[1:-1] - 1] = False  # a query may start anywhere
        return bool(breaks.any())

    def value(self, params):
        """The objective on all training queries (without its gradient)."""
        scores = self.train_scores(params)
        check_finite(scores, "scores")
        value, _ = self.loss.sorted_value_and_grad(scores, self.state)
        return value + self.network.penalty(params, self.alpha)[0]

    def batches(self, batch_size, random_state):
        """One epoch: batches of ``batch_size`` queries in a random order.

        The permutation of the queries is the only random draw. Each batch
        takes its rows of the per-row loss state (and of ``X``, when its
        rows are grouped) as views when it is one query, and gathers them
        otherwise; the rows of a dense ``X`` are gathered into one buffer
        reused by every batch of the epoch (a batch is consumed before the
        next one is drawn), a block per query where each query is one range
        of ``X``. Nothing of the size of the training rows is
        copied per epoch beyond one index array.
        """
        return self.ordered_batches(batch_size, random_state.permutation(self.n_queries))

    def ordered_batches(self, batch_size, perm):
        """Batches of ``batch_size`` queries taken in the order ``perm``.

        ``perm`` is a permutation of the training query numbers: batch ``i``
        holds queries ``perm[i * batch_size:(i + 1) * batch_size]``.
        :meth:`batches` draws it at random; a ranker's ``partial_fit`` passes
        the order in which its queries came.
        """
        layout, state = self.state.layout, self.state
        self.loss.check_state(state)  # once for every batch cut from it
        n_queries, offsets = self.n_queries, layout.offsets
        batch_size = min(batch_size, n_queries)  # (any larger size: one batch)
        positions, sizes = layout.query_positions(perm)
        ends = np.cumsum(sizes)
        # the per-query arrays in batch order, once, so that each batch's are a
        # slice (this state keeps the unpermuted layout: it is cut, never evaluated)
        permuted = state.subset(layout, slice(None), perm)
        cuts = np.append(0, ends[np.minimum(np.arange(batch_size, n_queries + batch_size,
                                                      batch_size), n_queries) - 1])
        buffer = ranges = rows = None
        if isinstance(self.X, np.ndarray):
            buffer = np.empty((int(np.diff(cuts).max()), self.X.shape[1]), dtype=self.X.dtype)
        blocks = self._query_blocks()
        if blocks is not None:  # the rows of X of each query, as Python ints
            first = blocks[perm]
            ranges = list(zip(first.tolist(), (first + sizes).tolist()))
        else:
            rows = positions if self.rows is None else self.rows[positions]
        for i, lo in enumerate(range(0, n_queries, batch_size)):
            hi = min(lo + batch_size, n_queries)
            a, b = cuts[i], cuts[i + 1]
            if hi - lo == 1:  # one query: its rows are a range of sorted order
                q = perm[lo]
                take = slice(offsets[q], offsets[q + 1])
            else:
                take = positions[a:b]
            if self.rows is None and isinstance(take, slice):
                X = self.X[take]
            elif ranges is not None:
                # each query's rows are one range of X: a view for one query,
                # else one copy per query instead of one per row
                X = (self.X[slice(*ranges[lo])] if hi - lo == 1 else
                     np.concatenate([self.X[lo_:hi_] for lo_, hi_ in ranges[lo:hi]],
                                    out=buffer[: b - a]))
            elif buffer is None:
                X = self.X[rows[a:b]]
            else:
                # rows are in range by construction; mode='clip' avoids a temporary
                X = np.take(self.X, rows[a:b], axis=0, out=buffer[: b - a], mode="clip")
            yield Batch(X, permuted.subset(QueryLayout._from_trusted_sizes(sizes[lo:hi]), take,
                                           slice(lo, hi)))


def make_objective(network: Network, loss: Loss, state: LossState, y, X, rows, alpha, *,
                   full_batch: bool | None = None) -> "Objective | FoldedObjective":
    """The objective of a fit, with the copy of the training rows its solver calls for.

    Parameters are those of :class:`Objective`. A
    :class:`~skrank._core._folded_objective.FoldedObjective` when
    ``network`` is a :class:`~skrank._core._networks.LinearNetwork`, the
    loss has a logit form on ``state`` and
    :func:`~skrank._core._folded_objective.fold_cost` is at most
    :data:`FOLD_RATIO` times the unfolded
    cost (it needs no copy of the rows); an :class:`Objective` otherwise,
    whose rows are copied as ``full_batch`` says: True for a full-batch
    solver (:meth:`Objective.gather`), False for a stochastic one
    (:meth:`Objective.gather_scattered`), None for none (the single pass of
    a ``partial_fit``).

    Returns
    -------
    objective : Objective or FoldedObjective
    """
    if isinstance(network, LinearNetwork):
        form = loss.logit_form(state)
        if form is not None:
            folded, unfolded = fold_cost(form, X)
            if folded <= FOLD_RATIO * unfolded:
                return FoldedObjective(network, loss, state, y, X, rows, alpha, form=form)
    objective = Objective(network, loss, state, y, X, rows, alpha)
    if full_batch:
        objective.gather()
    elif full_batch is not None:
        objective.gather_scattered()
    return objective
