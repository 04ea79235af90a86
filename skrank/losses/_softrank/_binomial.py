"""SoftRank's exact rank distribution: the Rank-Binomial recursion and its reverse mode.

The rank of a target document (0 is the top) counts the documents that beat
it, a sum of independent contests; its distribution is built by adding the
other documents one at a time (eq. 11-12). This module holds that
recursion, in reading order: the core step over one chunk of targets
(:func:`_rank_binomial_targets`), the chunks of targets that keep its stored
states within :data:`MEMORY_BUDGET` (:func:`_recursion`), and the exact
distributions of a padded block of queries (:func:`_rank_binomial`).

The real targets of all queries of a block are flattened into one axis
without padding: one array operation per recursion step (one step per
document that is added), never a Python loop over documents. With only the
first ranks kept (``truncation``) it computes those alone, and for a few
ranks runs segments of the documents side by side
(:mod:`._truncation`). Its gradient is taken in reverse mode
through the recursion, with the intermediate states stored; the targets are
processed in chunks when the states would not fit in :data:`MEMORY_BUDGET`.
"""

import itertools

import numpy as np

from ._truncation import _n_segments, _segmented_recursion

#: Float64 values the stored recursion states of one block may occupy
#: (128 MiB); beyond it the targets of the recursion are processed in
#: chunks (a single target of a query of N documents stores about N^2/2
#: values, so the budget holds for N up to about 5800).
MEMORY_BUDGET = 2**24


def _rank_binomial_targets(pi, active, n_ranks, store):
    """:func:`_recursion` for one chunk of targets, storing every state if ``store``.

    ``pi[t, c]`` is the probability that document ``t`` of target ``c``'s
    query beats it; ``active[t]`` the number of targets (a prefix) that step
    ``t`` updates. Returns the ``(n_ranks, n_targets)`` distributions and the
    reverse mode ``backward(A) -> dG/dpi[t, c]``.

    States are kept with the rank axis first, ``(rank, target)``, below a
    zero row for rank -1, so that ``d(r) = p(r - 1) - p(r)`` over all the
    ranks a step touches (at most ``t + 2``) is one subtraction; step ``t``
    stores its ``d`` as a slab ``(L_t, k_t)`` of one flat buffer. The reverse
    mode carries one adjoint ``(rank, target)`` back through the steps (with
    a zero row for the first rank not kept) and takes each step's gradient
    ``sum_r a(r) d(r)`` while both are in cache.
    """
    n_steps, T = pi.shape
    ranks = [min(t + 2, n_ranks) for t in range(n_steps)]  # ranks step t touches
    active = [int(k) for k in active]
    offsets = [0, *itertools.accumulate(L * k for L, k in zip(ranks, active))]
    stored = np.empty(offsets[-1] if store else 0)
    scratch = np.empty(n_ranks * T)
    # row 0 is rank -1 (always 0), row r + 1 is rank r
    P = np.zeros((n_ranks + 1, T))
    P[1] = 1.0
    for t, (L, k) in enumerate(zip(ranks, active)):
        d = stored[offsets[t]:offsets[t + 1]].reshape(L, k) if store else \
            scratch[: L * k].reshape(L, k)
        np.subtract(P[:L, :k], P[1:L + 1, :k], out=d)  # d(r) = p(r - 1) - p(r)
        tmp = scratch[: L * k].reshape(L, k) if store else d
        np.multiply(d, pi[t, :k], out=tmp)
        P[1:L + 1, :k] += tmp
    result = P[1:]

    def backward(A):
        grad_pi = np.zeros_like(pi)
        # row r: adjoint of rank r; row n_ranks (a rank never kept) stays 0.
        # Targets whose query has ended keep their adjoint A.
        adj = np.zeros((n_ranks + 1, T))
        adj[:n_ranks] = A
        for t in range(n_steps - 1, -1, -1):
            L, k = ranks[t], active[t]
            d = stored[offsets[t]:offsets[t + 1]].reshape(L, k)
            a = adj[:, :k]
            np.einsum("rc,rc->c", a[:L], d, out=grad_pi[t, :k])
            if t:
                # adjoint of p^(t-1): a(r) + pi * (a(r + 1) - a(r)) for the m
                # ranks step t - 1 touched
                m = ranks[t - 1]
                diff = scratch[: m * k].reshape(m, k)
                np.subtract(a[1:m + 1], a[:m], out=diff)
                diff *= pi[t, :k]
                a[:m] += diff
        return grad_pi

    return result, backward


def _recursion(pi, active, n_ranks, need_grad):
    """The recursion over flattened targets, in chunks of targets within :data:`MEMORY_BUDGET`.

    ``pi[t, c]`` is the probability that the ``t``-th document added beats
    target ``c``; ``active[t]`` (non-increasing) the number of targets, a
    prefix, that step ``t`` updates. The targets are independent, so when
    the states stored for the reverse mode would exceed the budget, they are
    processed in chunks of targets (at least one per chunk). Returns the
    ``(n_ranks, n_targets)`` distributions and ``backward(A) -> dG/dpi``.
    """
    n_steps, T = pi.shape
    largest = int(np.minimum(np.arange(n_steps) + 2, n_ranks).sum())  # values per target
    chunk = T if not need_grad else max(1, min(T, MEMORY_BUDGET // max(largest, 1)))
    bounds = [(lo, min(lo + chunk, T)) for lo in range(0, T, chunk)]
    parts = [
        _rank_binomial_targets(pi[:, lo:hi], np.clip(active - lo, 0, hi - lo), n_ranks,
                               need_grad)
        for lo, hi in bounds
    ]
    if len(parts) == 1:
        return parts[0]
    P = np.concatenate([p for p, _ in parts], axis=1)

    def backward(A):
        return np.concatenate(
            [back(A[:, lo:hi]) for (lo, hi), (_, back) in zip(bounds, parts)], axis=1
        )

    return P, backward


def _rank_binomial(pi, sizes, *, targets=None, n_ranks=None, need_grad=True):
    """Exact Rank-Binomial distributions of a block, and their reverse mode.

    ``pi[b, i, j]`` is the probability that document ``i`` beats target
    ``j`` of query ``b`` (0 where ``i`` is ``j`` or padding); ``sizes``
    (decreasing) are the queries' sizes; ``targets[b, j]`` marks the real
    targets (default: ``j < sizes[b]``). Only the first ``n_ranks`` ranks
    (default: all ``W``) are computed: the recursion never reads a rank from
    a higher one, so they are exactly the first ranks of the full
    distributions, at a cost proportional to ``n_ranks``.

    The real targets of all queries of the block are flattened into one axis,
    query by query; as the queries come by decreasing size, the targets whose
    query still has a document ``t`` to add are a prefix of that axis, and
    step ``t`` of the recursion is one operation on that prefix, with no
    padding (:func:`_recursion`). When only a few ranks are kept, the
    documents are also cut into segments whose recursions run side by side
    (:func:`._truncation._segmented_recursion`).

    Returns ``P[b, j, r]`` (0 for the targets that are not real) and
    ``backward(A) -> dG/dpi`` for ``A = dG/dP`` (None without ``need_grad``).
    """
    B, W, J = pi.shape
    if targets is None:
        targets = np.arange(J) < sizes[:, None]
    n_ranks = W if n_ranks is None else min(n_ranks, W)
    n_steps = int(sizes.max())
    # targets still active at step t: those of the queries with more than t documents
    n_queries = (sizes[None, :] > np.arange(n_steps)[:, None]).sum(axis=1)
    active = np.cumsum(targets.sum(axis=1))[n_queries - 1]
    every = bool(targets.all())  # no padding (one query, or queries of one size)
    by_step = pi.transpose(1, 0, 2)[:n_steps]
    # (step, target), rows contiguous (the mask alone would give columns)
    pi_flat = by_step.reshape(n_steps, B * J) if every else \
        np.ascontiguousarray(by_step[:, targets])
    n_segments = _n_segments(n_steps, n_ranks)
    if n_segments > 1:
        P_flat, back_flat = _segmented_recursion(_recursion, pi_flat, active, n_ranks,
                                                 n_segments, need_grad)
    else:
        P_flat, back_flat = _recursion(pi_flat, active, n_ranks, need_grad)
    if every:
        P = P_flat.T.reshape(B, J, n_ranks)
    else:
        P = np.zeros((B, J, n_ranks))
        P[targets] = P_flat.T
    if not need_grad:
        return P, None

    def backward(A):
        if every:
            grad = back_flat(A.reshape(B * J, n_ranks).T).reshape(n_steps, B, J)
            if n_steps == W:
                return grad.transpose(1, 0, 2)
        grad_pi = np.zeros((W, B, J))
        if every:
            grad_pi[:n_steps] = grad
        else:
            grad_pi[:n_steps, targets] = back_flat(A[targets].T)
        return grad_pi.transpose(1, 0, 2)

    return P, backward
