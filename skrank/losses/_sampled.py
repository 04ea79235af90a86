"""The engine of losses over a fixed sample of rankings per query.

BoltzRank and LogRank both score, for every query, a fixed set of ``k``
rankings drawn once per fit. The log-probability of ranking ``i`` of query
``q`` under the scores is linear in them, up to the normalisation over the
sample:

.. math:: \\log P(R_i \\mid s) = a_q \\, c_i^\\top s_q - \\log \\sum_l \\exp(a_q \\, c_l^\\top s_q),

with one integer coefficient per document and sample (``c_i``; the ranks
themselves for BoltzRank) and one scale per query (``a_q``). A term that is
the same for every sample of a query (the part of an energy that does not
depend on the ranking) cancels in the softmax, so it is never stored.

The coefficients are stored as an ``(n_rows, k)`` integer matrix in the
smallest integer dtype that holds them (:func:`coefficient_dtype`), rows in
the sorted order of the query layout, so a mini-batch takes its rows like
any per-row state. :func:`sample_objective` evaluates an objective of the
per-query log-probabilities and its gradient: the logits of all samples of a
query are one ``(m, k)`` matrix-vector product, and the gradient with
respect to the scores is the transposed product, ``C_q (a_q \\, \\partial L /
\\partial \\mathrm{logits}_q)``: :math:`O(k m)` per query.

:class:`LogitForm` gives the same objective as a function of the ``(n_queries,
k)`` logits themselves (:meth:`ListwiseLoss.logit_form`), for a fit loop that
computes the logits another way (a linear model folds ``C_q^T X_q`` once per
fit: :mod:`skrank._core._folded_objective`).

*Extreme scores.* Every objective here depends on a query's logits only
through their softmax, so shifting them by a constant per query changes
nothing. Where a query's products ``c_i^T s`` overflow (scores beyond about
``1e308 / m``, whose sums of ``m`` terms exceed the largest float), its
logits are recomputed from the scores divided by a power of two (exact) and
shifted by their maximum before they are scaled back: they are then 0 for
the most probable sample and below it, ``-inf`` where the gap itself is
beyond the float range (a probability of exactly 0). The losses then stay
finite, or ``+inf`` where the true value exceeds the largest float, with a
finite gradient: a sample of zero target weight and zero probability adds 0
to the cross entropy (not ``0 * -inf``).
"""

from dataclasses import dataclass

import numpy as np

from ._averaging import query_mean

#: Float64 cells of coefficients converted at once (16 MiB); the queries are
#: processed in chunks of at most this many ``rows x samples`` cells (a
#: single larger query is converted on its own).
MAX_CELLS = 2**21

#: ``rows x samples`` cells of the queries whose samples are drawn at once
#: when a sampling loss is prepared. Drawing takes some 60 bytes of
#: temporaries per cell (16 MiB in all); what stays for the fit is the
#: integer coefficients (1-2 bytes per cell) and per-query arrays.
SETUP_CELLS = 2**18


def coefficient_dtype(max_abs):
    """The smallest signed integer dtype that holds values up to ``max_abs``."""
    for dtype in (np.int8, np.int16, np.int32):
        if max_abs <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def log_softmax_rows(logits):
    """Row-wise log-softmax and softmax, stable for any logits below ``+inf``.

    A row of ``-inf`` only (no sample has a probability within the float
    range) gets probabilities 0 and log-probabilities ``-inf``.

    Returns
    -------
    log_prob, prob : ndarray of the shape of ``logits``
    """
    top = logits.max(axis=1, keepdims=True)
    empty = top == -np.inf
    if empty.any():
        top = np.where(empty, 0.0, top)
    with np.errstate(over="ignore"):  # gaps beyond the largest float: probability 0
        shifted = logits - top
    prob = np.exp(shifted)
    total = prob.sum(axis=1, keepdims=True)
    if empty.any():
        total[empty] = 1.0
    prob /= total
    shifted -= np.log(total)
    return shifted, prob


def logsumexp_rows(logits):
    """Row-wise ``log sum exp``, stable for any logits below ``+inf``."""
    top = logits.max(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):  # a row of -inf only: its sum is -inf
        total = np.exp(logits - top[:, None]).sum(axis=1)
    return np.where(np.isfinite(top), top + np.log(np.where(total > 0, total, 1.0)), top)


def expected_gain(prob, gains):
    """Expected gain ``sum_i p_i G_i`` per query and its gradient w.r.t. the logits.

    With ``p = softmax(logits)``, ``d/dlogit_i sum_l p_l G_l = p_i (G_i - E[G])``.
    """
    mean = np.einsum("qk,qk->q", prob, gains)
    return mean, prob * (gains - mean[:, None])


def cross_entropy(log_prob, prob, target):
    """``-sum_i t_i log p_i`` per query and its gradient ``p_i - t_i`` w.r.t. the logits.

    ``target`` rows sum to one (a distribution over the samples). A sample of
    probability 0 (``log_prob`` ``-inf``: logits further apart than the
    largest float) adds nothing when its target is 0, and makes the loss
    ``+inf`` otherwise.
    """
    value = -np.einsum("qk,qk->q", target, log_prob)
    if not np.isfinite(value).all():
        with np.errstate(invalid="ignore"):  # 0 * -inf, replaced by 0
            value = -np.where(target > 0, target * log_prob, 0.0).sum(axis=1)
    return value, prob - target


@dataclass(frozen=True)
class LogitForm:
    """A sampled loss as an objective of its logits (:meth:`ListwiseLoss.logit_form`).

    The logits of query ``q`` are ``scale[q] * coef_q^T s_q``, with ``coef_q``
    the rows of ``coef`` of the query's documents: linear in the scores, so
    a linear model ``s = X w`` has logits ``scale[q] * (coef_q^T X_q) w``.

    Parameters
    ----------
    coef : ndarray of int, shape (n_rows, k)
        Coefficient of every row (sorted order of the state's layout) in
        every sample.
    scale : ndarray of shape (n_queries,)
        Factor of each query's logits (0: the query's logits are 0 whatever
        the scores).
    objective : callable
        ``objective(logits, queries)``, as :func:`sample_objective` takes it:
        the per-query losses of the ``(len(queries), k)`` logits of the
        queries ``queries`` (a slice or an array of query numbers) and their
        gradients with respect to the logits.
    weight : ndarray of shape (n_queries,) or None
        Query weights of the state (``LossState.query_weight``), or None.
    """

    coef: np.ndarray
    scale: np.ndarray
    objective: object
    weight: np.ndarray = None

    @property
    def k(self):
        """Number of samples per query."""
        return self.coef.shape[1]

    def mean_value_and_grad(self, logits, queries=None):
        """The loss of some queries' logits, averaged over them, and its logit gradient.

        Parameters
        ----------
        logits : ndarray of shape (n_selected, k)
            Float64 logits of the queries ``queries``.
        queries : slice or ndarray of int, default=None
            Which queries of the state the rows of ``logits`` are; None
            means all of them, in order.

        Returns
        -------
        loss : float
            Mean loss over the selected queries, weighted as
            :meth:`ListwiseLoss.sorted_value_and_grad` weighs it.
        grad : ndarray of shape (n_selected, k)
            Its gradient with respect to ``logits``.
        """
        if queries is None:
            queries = slice(0, len(logits))
        per_query, dlogits = self.objective(logits, queries)
        weight = None if self.weight is None else self.weight[queries]
        return query_mean(per_query, dlogits, weight, _column)


def _column(weight):
    return weight[:, None]


def sample_logits(coef, scale, s_sorted, layout):
    """Logits ``a_q C_q^T s_q`` of every sample of every query, shape (n_queries, k)."""
    logits, _ = _sweep(coef, scale, s_sorted, layout, None, None)
    return logits


def sample_objective(coef, scale, s_sorted, layout, objective, cache=None):
    """An objective of the per-query sample logits, and its gradient w.r.t. the scores.

    Parameters
    ----------
    coef : ndarray of int, shape (n_samples, k)
        Coefficient of every row (sorted order of ``layout``) in every sample.
    scale : ndarray of shape (n_queries,)
        Factor of each query's logits.
    s_sorted : ndarray of shape (n_samples,)
        Scores in sorted order.
    layout : QueryLayout
    objective : callable
        ``objective(logits, queries)`` with ``logits`` of shape
        ``(len(queries), k)`` for the query numbers in the slice ``queries``;
        returns the per-query losses and their gradients with respect to the
        logits (same shape). Called once per chunk of queries.
    cache : dict, default=None
        Where the float64 coefficients are kept between calls on the same
        state (e.g. ``LossState.cache``) when they fit :data:`MAX_CELLS`:
        L-BFGS then converts them once per fit, not once per evaluation.

    Returns
    -------
    per_query : ndarray of shape (n_queries,)
    grad : ndarray of shape (n_samples,)
        Gradient of ``per_query.sum()`` w.r.t. the scores, sorted order.
    """
    _, (per_query, grad) = _sweep(coef, scale, s_sorted, layout, objective, cache)
    return per_query, grad


def _pieces(coef, offsets, lo, hi):
    """Each query's row slice and float64 coefficients, queries ``lo:hi``.

    The coefficients of the chunk are converted once; each query's block is
    a view of them.
    """
    base = offsets[lo]
    block = coef[base:offsets[hi]].astype(np.float64)
    bounds = offsets[lo:hi + 1].tolist()
    return [(slice(a, b), block[a - base:b - base]) for a, b in zip(bounds[:-1], bounds[1:])]


def _sweep(coef, scale, s_sorted, layout, objective, cache):
    """Logits of every query; with ``objective``, also its value and score gradient.

    The coefficients of a chunk of queries are converted to float64 once and
    used by both products of each query (one BLAS matrix-vector product
    each way): a loop over queries, never over documents.
    """
    n_queries, k = layout.n_queries, coef.shape[1]
    offsets = layout.offsets
    logits = np.empty((n_queries, k))
    if objective is not None:
        per_query = np.empty(n_queries)
        grad = np.empty(layout.n_samples)
    for lo, hi in layout.ranges(MAX_CELLS // k):
        if cache is not None and hi - lo == n_queries:  # one chunk: keep it
            pieces = cache.get("coef64")
            if pieces is None:
                pieces = cache["coef64"] = _pieces(coef, offsets, lo, hi)
        else:
            pieces = _pieces(coef, offsets, lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):  # (rescued below)
            for q, (rows, block) in enumerate(pieces, lo):
                np.dot(s_sorted[rows], block, out=logits[q])
            logits[lo:hi] *= scale[lo:hi, None]
        overflowed = ~np.isfinite(logits[lo:hi]).all(axis=1)
        if overflowed.any():  # extreme scores: see the module's notes
            for q in np.flatnonzero(overflowed):
                rows, block = pieces[q]
                logits[lo + q] = _shifted_logits(s_sorted[rows], block, scale[lo + q])
        if objective is None:
            continue
        values, dlogits = objective(logits[lo:hi], slice(lo, hi))
        per_query[lo:hi] = values
        dlogits *= scale[lo:hi, None]
        for (rows, block), d in zip(pieces, dlogits):
            np.dot(block, d, out=grad[rows])
    return logits, (None if objective is None else (per_query, grad))


def _shifted_logits(s, block, scale):
    """Logits ``scale * block^T s`` of one query, minus their maximum, when the products overflow.

    ``s`` divided by a power of two (exact) lies in (-1, 1), so the products
    are finite; the logits' gaps to their maximum, multiplied back, are 0
    for the largest and ``-inf`` where they exceed the float range.
    """
    _, exponent = np.frexp(np.abs(s).max())
    small = np.dot(np.ldexp(s, -exponent), block)
    small *= scale
    small -= small.max()
    with np.errstate(over="ignore"):
        return np.ldexp(small, exponent)
