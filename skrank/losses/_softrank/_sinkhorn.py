"""Sinkhorn scaling of SoftRank's rank matrices (§3.2), and its reverse mode.

The matrix ``[p_j(r)]`` of a query has rows that sum to 1 (each document's
rank distribution) but columns that need not (the expected number of
documents at each rank). Each Sinkhorn iteration divides the rank columns,
then the document rows, by their sums, bringing the matrix closer to doubly
stochastic. The iterations have no tolerance: ``sinkhorn_iterations`` of
them run at every evaluation of the loss, and the gradient goes through
them all.
"""

import numpy as np

#: Most Sinkhorn iterations. They have no tolerance (a matrix with decided
#: contests, hence zeros, is still off by 1e-6 after 1e5 iterations at N =
#: 100), so every one runs at every evaluation of the loss, forward and back,
#: over every query's N x N rank matrix, and keeps two N-vectors per query for
#: the gradient (1.6 MB per query of 10 documents at 10,000 iterations). The
#: cost grows linearly with the iterations (the reproducing page times them),
#: so more would run for hours (10**23 would never end) rather than change
#: the model.
MAX_SINKHORN_ITERATIONS = 10_000


def _normalise(P, axis):
    """``P`` divided by its sums along ``axis`` (empty lines stay 0), and the divisors."""
    total = P.sum(axis=axis, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    return P / safe, safe


def _normalise_backward(A, out, safe, axis):
    """The reverse mode of :func:`_normalise`: the adjoint of its input, from its output's."""
    return (A - (A * out).sum(axis=axis, keepdims=True)) / safe


def _sinkhorn(P, n_iterations, need_grad=True):
    """``n_iterations`` Sinkhorn iterations on the rank matrices ``P[b, j, r]``.

    Each iteration divides the rank columns (axis 1), then the document rows
    (axis 2), by their sums. Returns the scaled ``P`` and ``backward(A)``,
    the adjoint of the input ``P`` from that of the output (None without
    ``need_grad``). Only the sums are kept (two vectors per query and
    iteration): the reverse mode rebuilds each step's output from the next
    by multiplying the sums back, so memory does not grow with N^2 times the
    iterations.
    """
    sums = []
    for _ in range(n_iterations):
        P, col = _normalise(P, axis=1)
        P, row = _normalise(P, axis=2)
        if need_grad:
            sums.append((col, row))
    if not need_grad:
        return P, None
    final = P

    def backward(A):
        out = final
        for col, row in reversed(sums):
            A = _normalise_backward(A, out, row, axis=2)
            out = out * row  # the column step's output
            A = _normalise_backward(A, out, col, axis=1)
            out = out * col  # the iteration's input
        return A

    return P, backward
