"""SoftNDCG@R's truncated Rank-Binomial recursion: the documents cut into segments.

With ``truncation=R`` the loss reads only the first ``R`` ranks of every
rank distribution. The recursion of :mod:`._binomial` reads rank
``r`` only from ranks ``r`` and ``r - 1``, so it computes those ranks
exactly from themselves alone (it is given ``n_ranks``). For a few ranks
this module also cuts the documents that beat a target into segments:
the rank of the target, a count of the documents that beat it, is the sum
of the independent counts of the segments, whose recursions run side by
side as one recursion over more columns (numpy's arrays stay large), and
whose distributions are then convolved, truncated to ``R`` ranks, which is
exact for those ranks. The reverse mode goes back through the convolutions.

The recursion that the segments run is passed in (:func:`_segmented_recursion`
takes it as an argument), so that this module does not depend on the one that
calls it. The discount cut at ``R`` is the loss's (:func:`._softrank._discount`);
the normal approximation truncates by evaluating ``R + 1`` bin edges.
"""

import numpy as np

#: Most segments :func:`_segmented_recursion` cuts the documents into.
MAX_SEGMENTS = 32

#: Fewest documents in a segment of :func:`_segmented_recursion`: shorter
#: recursions update too few cells per step for numpy's per-call overhead,
#: and add levels to the combining tree (measured by
#: ``benchmarks/bench_softrank.py``).
MIN_SEGMENT_DOCS = 8


def _n_segments(n_steps, n_ranks):
    """Segments of documents for a truncated recursion: 1 when every rank is kept.

    A segment of ``S`` documents costs its recursion ``S`` steps over at
    most ``min(S + 1, n_ranks)`` ranks, and combining it ``n_ranks^2 / 2``
    multiply-adds or fewer per target (one fused product-sum per rank),
    against ``n_ranks`` elementwise operations per document and target in a
    single recursion; measured, segments pay for every ``n_ranks`` below
    ``n_steps``. As many segments as :data:`MAX_SEGMENTS` allows, each of at
    least :data:`MIN_SEGMENT_DOCS` documents, and a power of two (the
    combining tree pairs halves).
    """
    if n_ranks >= n_steps:
        return 1
    most = max(1, min(MAX_SEGMENTS, n_steps // MIN_SEGMENT_DOCS))
    return 1 << (most.bit_length() - 1)


def _segmented_recursion(recursion, pi, active, n_ranks, n_segments, need_grad):
    """``recursion`` with the documents cut into segments that run side by side.

    ``recursion(pi, active, n_ranks, need_grad)`` is the Rank-Binomial
    recursion over flattened targets (:func:`._binomial._recursion`),
    and the other arguments are its own: ``pi[t, c]`` the probability that
    the ``t``-th document added beats target ``c``, ``active[t]`` the number
    of targets (a prefix) that step ``t`` updates. Returns what it returns,
    the ``(n_ranks, n_targets)`` distributions and ``backward(A) ->
    dG/dpi``.

    The rank of a target counts the documents that beat it. Cut into
    ``n_segments`` consecutive segments of ``S`` documents, that count is
    the sum of independent counts, one per segment, and its distribution
    the convolution of theirs, which truncated to ``n_ranks`` ranks is exact
    for those ranks. The segments' recursions run as one recursion of ``S``
    steps over ``n_segments`` times as many columns, all of them updated at
    every step (documents a query does not have beat nobody: ``pi`` is 0
    there; their gradient is set to 0 with ``active``, as ``recursion``
    leaves it); a segment's count takes ``S + 1`` values, so it keeps
    ``min(S + 1, n_ranks)`` ranks. The segments, as many as a power of two
    ``m`` (those beyond the documents hold documents that beat nobody), are
    convolved level by level, the first half with the second (one
    convolution of contiguous halves per level, ``log2 m`` levels, each
    keeping the ranks its sums can take, at most ``n_ranks``), and the
    reverse mode goes back through those levels.
    """
    n_steps, T = pi.shape
    S = -(-n_steps // n_segments)
    full, rest = divmod(n_steps, S)  # segments of S documents, and the rest
    n_used = full + (rest > 0)
    m = 1 << (n_used - 1).bit_length()  # a power of two, so that the tree pairs halves
    # (step, segment, target): segment g is steps g S .. (g + 1) S - 1; the
    # segments beyond the documents are documents that beat nobody
    pi_seg = np.empty((S, m, T))
    pi_seg.transpose(1, 0, 2)[:full] = pi[: full * S].reshape(full, S, T)
    if rest:
        pi_seg[:rest, full] = pi[full * S:]
        pi_seg[rest:, full] = 0.0
    pi_seg[:, n_used:] = 0.0
    L = min(S + 1, n_ranks)
    P_seg, back_seg = recursion(pi_seg.reshape(S, m * T), np.full(S, m * T), L, need_grad)
    # combine the segments level by level: the first half with the second
    levels = [P_seg.reshape(L, m, T)]
    while levels[-1].shape[1] > 1:
        X = levels[-1]
        h = X.shape[1] // 2
        n_out = min(2 * X.shape[0] - 1, n_ranks)
        levels.append(_truncated_convolve(X[:, :h], X[:, h:], n_out))
    top = levels[-1][:, 0]
    P = np.zeros((n_ranks, T))
    P[: len(top)] = top
    if not need_grad:
        return P, None

    def backward(A):
        adj = A[: len(top), None]
        for X in reversed(levels[:-1]):
            # Z = X_first * X_second: the adjoint of each half is the
            # correlation of adj with the other
            h = X.shape[1] // 2
            up = np.empty(X.shape)
            _truncated_correlate(adj, X[:, h:], out=up[:, :h])
            _truncated_correlate(adj, X[:, :h], out=up[:, h:])
            adj = up
        grad = back_seg(adj.reshape(L, m * T)).reshape(S, m, T)
        grad_flat = np.empty((n_steps, T))
        grad_flat[: full * S].reshape(full, S, T)[...] = grad.transpose(1, 0, 2)[:full]
        if rest:
            grad_flat[full * S:] = grad[:rest, full]
        if active[-1] < T:  # steps of queries that have ended
            grad_flat *= np.arange(T) < active[:, None]
        return grad_flat

    return P, backward


def _truncated_convolve(X, Y, n_out):
    """``Z(r) = sum_u X(u) Y(r - u)`` for the first ``n_out`` ranks ``r`` (axis 0).

    ``X`` and ``Y`` have the same number of ranks. One product-sum per rank
    (no temporaries) over the terms that exist.
    """
    L = X.shape[0]
    Z = np.empty((n_out,) + X.shape[1:])
    for r in range(n_out):
        lo, hi = max(0, r - L + 1), min(r, L - 1)  # u = lo .. hi
        np.einsum("u...,u...->...", X[lo:hi + 1], Y[r - hi:r - lo + 1][::-1], out=Z[r])
    return Z


def _truncated_correlate(A, X, out):
    """``out(u) = sum_v A(u + v) X(v)``, the adjoint of :func:`_truncated_convolve` in ``Y``.

    Ranks on axis 0; ``out`` has the shape of ``X``.
    """
    R, L = A.shape[0], X.shape[0]
    for u in range(L):
        n = min(L, R - u)
        np.einsum("v...,v...->...", A[u:u + n], X[:n], out=out[u])
    return out
