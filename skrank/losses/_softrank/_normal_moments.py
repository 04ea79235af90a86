"""The moments of the ranks under SoftRank's normal approximation, each pair once.

The normal approximation (:mod:`._normal`) needs of each target
document only the mean and the variance of its rank, sums over the other
documents of the contest probabilities ``pi_ij`` and of ``pi_ij (1 -
pi_ij)``. As ``pi_ji = 1 - pi_ij``, the variance terms and the densities of
a pair are equal, and a pair changes the gradients of its two scores by
opposite amounts: this module evaluates the normal CDF and density once per
unordered pair, and returns the moments with their reverse step, from the
adjoints ``a = dL/dmean`` and ``b = dL/dvar`` (of
:mod:`._normal_contraction`) to the gradient of the scores.

The pairs come in one of three layouts (:func:`_rank_moments` picks one per
block), in reading order:

- half pairs: every pair of a block once, in circulant order
  (:func:`_half_pair_moments`);
- a band: once training has spread the scores out, most contests are
  decided to double precision, and each document is paired only with the
  documents that follow it in score within :data:`._normal._BAND`
  standard deviations of the contest (:func:`_banded_moments`);
- chunks of targets, for long queries whose half-pair arrays would not fit
  (:func:`_chunked_moments`): two passes over the pairs, memory of one chunk.
"""

import numpy as np
from scipy.special import ndtr

from ._normal import _BAND, _SQRT_2PI, _decided_density, _decided_ndtr

#: Pairs of documents (``queries x W^2``) of a block beyond which the normal
#: approximation evaluates the pairs by chunks of targets (a query of more
#: than about 1,450 documents): the fast path holds some six arrays of half
#: the pairs at once (48 MiB at this size, growing as W^2).
NORMAL_PAIR_CELLS = 2**21

#: Pairs evaluated at once by the chunked path of the normal approximation
#: (8 MiB per array).
NORMAL_CHUNK_CELLS = 2**20

#: The normal approximation sorts a block's documents by score and takes,
#: for each, only the documents below it within :data:`_BAND` standard
#: deviations of the contest (:func:`_banded_moments`), when the widest such
#: band of the block holds at most this fraction of the ``W // 2`` pairs per
#: document of the half-pair path. Every other pair is decided to double
#: precision. Trained scores spread out: on MSLR-shaped data the band holds
#: some 30 % of the pairs after one epoch and 20 % at the end of a fit.
BAND_MAX_FRACTION = 0.75

#: Blocks narrower than this take the half-pair path (sorting would cost more
#: than the pairs it saves).
BAND_MIN_WIDTH = 16


def _partners(x, K, fill=None):
    """``x[b, (i + c + 1) mod W]`` at ``[b, i, c]``, ``c < K``: a view.

    The value of the second document of each pair of :func:`_half_pairs`;
    with a ``fill``, ``x[b, i + c + 1]`` and ``fill`` beyond the last column
    (the pairs of :func:`_banded_moments`).
    """
    B, W = x.shape
    beyond = x[:, :K] if fill is None else np.full((B, K), fill)
    extended = np.concatenate([x, beyond], axis=1)
    step = extended.strides[1]
    return np.ndarray((B, W, K), extended.dtype, extended, offset=step,
                      strides=(extended.strides[0], step, step))


def _half_pairs(s, valid, scale):
    """Each pair of documents of a block once, in circulant order.

    ``z[b, i, c] = (s_i - s_j) / scale`` for ``j = (i + c + 1) mod W`` and
    ``c < K = W // 2``: every unordered pair of the ``W`` slots appears once
    (for even ``W`` the pairs ``W / 2`` apart are kept in rows ``i < K``
    only), so a function of ``z`` odd or even in it is evaluated on half the
    ``W^2`` pairs. ``z`` is ``-inf`` where the pair is not one of two real
    documents (padding, or the duplicates), so that ``ndtr`` and the density
    are 0 there without a mask. Also returns ``n_first[b, i]``, the number of
    real pairs in row ``i`` (those in which document ``i`` is first).
    Differences beyond the largest float are infinite, where ``ndtr`` and the
    density are saturated.
    """
    B, W = s.shape
    K = W // 2
    z = np.empty((B, W, K))
    with np.errstate(over="ignore"):
        np.subtract(s[:, :, None], _partners(s, K), out=z)
        z /= scale
    if valid.all():  # only the duplicates of even W
        n_first = np.full((B, W), K)
        if W % 2 == 0 and K:
            z[:, K:, K - 1] = -np.inf
            n_first[:, K:] -= 1
        return z, n_first
    real = valid[:, :, None] & _partners(valid, K)
    if W % 2 == 0 and K:
        real[:, K:, K - 1] = False
    np.copyto(z, -np.inf, where=~real)
    return z, real.sum(axis=2)


def _skew_buffer(B, W, K):
    """A buffer for :func:`_skew_sum`: the array ``(B, W, K)`` is its ``[:, K:]``."""
    return np.empty((B, W + K, K))


def _skew_sum(buffer, W, wrap=True):
    """``S[b, j] = sum_c X[b, (j - c - 1) mod W, c]`` for ``X = buffer[:, K:]``.

    The sums, over the pairs of :func:`_half_pairs` in which ``j`` is the
    second document, of a quantity ``X`` of each pair: a strided view of the
    buffer once its first ``K`` rows hold the last ``K`` rows of ``X`` again.
    With ``wrap=False`` the sum is over ``c < j`` only (the pairs of
    :func:`_banded_moments`): the first ``K`` rows hold zeros.
    """
    B, _, K = buffer.shape
    if K == 0:
        return np.zeros((B, W))
    buffer[:, :K] = buffer[:, W:] if wrap else 0.0
    st = buffer.strides
    view = np.ndarray((B, W, K), buffer.dtype, buffer, offset=(K - 1) * st[1],
                      strides=(st[0], st[1], st[2] - st[1]))
    return view.sum(axis=2)


def _half_pair_moments(s, valid, scale):
    """Means and variances of the ranks of a block from half its pairs, and their reverse step.

    ``z = (s_i - s_j) / scale`` of every pair of documents once
    (:func:`_half_pairs`): ``Q = pi_i,i+c+1 = Phi(z[b, i, c])`` and
    ``pi_i+c+1,i = 1 - Q``. Returns ``mean``, ``var`` (``(B, W)``) and
    ``backward(a, b) -> dL/ds`` for ``a = dL/dmean``, ``b = dL/dvar``;
    ``backward`` reuses the pairs' buffers and runs once.
    """
    B, W = s.shape
    # every pair of documents once: z[b, i, c] for documents i and i + c + 1
    # (mod W), -inf where the pair is not real; Q = pi_i,i+c+1, and
    # pi_i+c+1,i = 1 - Q
    z, n_first = _half_pairs(s, valid, scale)
    half = z.shape[2]
    # Q and V = Q (1 - Q) in one buffer, summed over the pairs where each
    # document is first and where it is second: mean_j = sum_i pi_ij (over
    # the pairs where j is first, 1 - Q each) and var_j = sum_i V_ij
    QV = _skew_buffer(2 * B, W, half)
    Q = ndtr(z, out=QV[:B, half:])
    V = np.subtract(1.0, Q, out=QV[B:, half:])
    V *= Q
    as_second = _skew_sum(QV, W)
    as_first = QV[:, half:].sum(axis=2)
    mean = as_second[:B] + n_first - as_first[:B]
    var = as_second[B:] + as_first[B:]

    def backward(a, b):
        # dL/dpi_ij = a_j + b_j (1 - 2 pi_ij) and d pi_ij / d s_i = phi(z_ij) /
        # (sqrt(2) sigma) = -d pi_ij / d s_j. A pair (i, j) (pi_ij = Q, pi_ji =
        # 1 - Q) adds T = (dL/dpi_ij - dL/dpi_ji) phi(z_ij) to the gradient of
        # s_i and -T to that of s_j; phi's constant is applied to the result
        with np.errstate(over="ignore"):  # squares beyond the largest float: density 0
            phi = np.square(z, out=z)  # z is not needed again
        phi *= -0.5
        np.exp(phi, out=phi)  # 0 where the pair is not real (z = -inf)
        ab, ab_2b = a + b, a - b
        T_buf = _skew_buffer(B, W, half)
        T = np.subtract(_partners(ab, half), ab_2b[:, :, None], out=T_buf[:, half:])
        b2 = 2.0 * b
        both = np.add(_partners(b2, half), b2[:, :, None], out=V)  # V is not needed again
        both *= Q
        T -= both
        T *= phi
        grad = T.sum(axis=2) - _skew_sum(T_buf, W)
        grad /= _SQRT_2PI * scale
        return grad

    return mean, var, backward


def _score_band(s, valid, reach):
    """A block's documents by descending score, and the widest band of undecided pairs.

    Returns ``(order, t, K)``: ``t = take_along_axis(s, order)`` with the
    documents of every query by descending score (padding last, ``-inf``)
    and ``K`` the most documents that follow one document within ``reach``
    of its score (its undecided pairs); or None where the band is too wide
    for :func:`_banded_moments` to pay (:data:`BAND_MAX_FRACTION`). The real
    documents of a block's row come first (:meth:`QueryLayout.blocks` pads
    at the end), so ``valid`` is also their mask in sorted order.
    """
    B, W = s.shape
    if W < BAND_MIN_WIDTH:
        return None
    t = np.where(valid, s, -np.inf)
    order = np.argsort(-t, axis=1)
    t = np.take_along_axis(t, order, axis=1)
    # first position whose score is below t_p - reach, by bisection on every
    # row at once (the rows are descending; t[p] itself is within reach)
    flat, floor = t.ravel(), (t - reach).ravel()
    sizes = valid.sum(axis=1)
    start = np.repeat(np.arange(0, B * W, W), W)  # of each cell's row
    next_ = np.arange(1, B * W + 1)
    lo = np.minimum(next_, np.repeat(start[::W] + sizes, W))  # flat[lo - 1] is within reach
    end = np.repeat(start[::W] + sizes, W)  # flat[end] is not (or ends the query)
    for _ in range(int(W).bit_length()):
        mid = (lo + end) >> 1
        inside = flat[np.minimum(mid, B * W - 1)] >= floor
        np.copyto(lo, mid + 1, where=inside & (lo < end))
        np.copyto(end, mid, where=~inside)
    followers = np.where(valid.ravel(), lo - next_, 0)
    K = int(followers.max()) if followers.size else 0
    if K > BAND_MAX_FRACTION * (W // 2):
        return None
    return order, t, K


def _banded_moments(valid, scale, order, t, K):
    """:func:`_half_pair_moments` for scores spread out, on a band of pairs.

    ``order, t, K`` from :func:`_score_band`: the documents of every query by
    descending score ``t``, and the most documents within the band of one.
    Each document ``p`` is paired with the ``K`` that follow it, ``y[b, p, c]
    = (t_{p+c+1} - t_p) / scale <= 0``, and ``R = Phi(y)`` is the probability
    that the lower document wins. The pairs beyond (more than
    :data:`._normal._BAND` standard deviations apart, as the ``K``
    cover every closer pair; inside the ``K`` too, in the rows of documents
    that need fewer) are decided to double precision: the higher
    document wins (``R = 0``, no variance, no density), so the ``p``
    documents above document ``p`` add ``p`` to its mean rank, less ``R`` of
    every banded pair. Otherwise the same sums as the half-pair path, in
    sorted order; the means and variances go back to the rows' order, and
    ``backward(a, b)`` takes their adjoints in the rows' order and returns
    the gradient in it (once: it reuses the pairs' buffers).
    """
    B, W = t.shape
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.subtract(_partners(t, K, fill=-np.inf), t[:, :, None])
        y /= scale
    np.copyto(y, -np.inf, where=~valid[:, :, None])  # padding rows (-inf - -inf)
    RV = _skew_buffer(2 * B, W, K)
    # the band is as wide as its widest document needs: in the rows of the
    # others, pairs beyond _BAND are decided as well (R = 0, no density)
    R = RV[:B, K:]
    inside, y_inside = _decided_ndtr(y, out=R)
    V = np.subtract(1.0, R, out=RV[B:, K:])
    V *= R
    as_second = _skew_sum(RV, W, wrap=False)
    as_first = RV[:, K:].sum(axis=2)
    mean = np.arange(W, dtype=np.float64) - as_second[:B] + as_first[:B]
    mean[~valid] = 0.0
    unsorted = np.empty((2, B, W))
    np.put_along_axis(unsorted[0], order, mean, axis=1)
    np.put_along_axis(unsorted[1], order, as_second[B:] + as_first[B:], axis=1)

    def backward(a, b):
        a, b = np.take_along_axis(a, order, axis=1), np.take_along_axis(b, order, axis=1)
        # R = pi_(p+c+1),p enters the mean and variance of p (dL/dR: a_p + b_p (1 -
        # 2R)) and 1 - R those of p+c+1 (minus a_q - b_q + 2R b_q); dR/ds = phi(y)
        # / scale for the lower document, minus it for the higher
        phi = _decided_density(inside, y_inside, out=y)  # y is not needed again
        T_buf = _skew_buffer(B, W, K)
        T = np.subtract((a + b)[:, :, None], _partners(a - b, K, fill=0.0), out=T_buf[:, K:])
        b2 = 2.0 * b
        both = np.add(_partners(b2, K, fill=0.0), b2[:, :, None], out=V)
        both *= R
        T -= both
        T *= phi
        grad_sorted = _skew_sum(T_buf, W, wrap=False) - T.sum(axis=2)
        grad_sorted /= _SQRT_2PI * scale
        grad = np.empty((B, W))
        np.put_along_axis(grad, order, grad_sorted, axis=1)
        return grad

    return unsorted[0], unsorted[1], backward


def _lower_pairs(s, valid, start, stop, scale):
    """``z[b, j - start, i - start] = (s_i - s_j) / scale`` for targets ``j`` in [start, stop).

    Over the documents ``i >= start``; ``-inf`` unless ``i > j`` and both are
    real documents, so that every unordered pair appears once over the
    chunks and the normal CDF and density are 0 elsewhere without a mask.
    Also returns the mask of the real pairs.
    """
    B, W = s.shape
    z = np.empty((B, stop - start, W - start))
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(s[:, None, start:], s[:, start:stop, None], out=z)
        z /= scale
    later = np.arange(start, W)[None, :] > np.arange(start, stop)[:, None]
    real = valid[:, start:stop, None] & valid[:, None, start:] & later
    np.copyto(z, -np.inf, where=~real)
    return z, real


def _chunked_moments(s, valid, scale, max_cells):
    """:func:`_half_pair_moments` for long queries, by chunks of target documents.

    Each unordered pair ``(j, i)``, ``i > j``, once (as the half-pair path
    does, with ``pi_ji = 1 - pi_ij``), for the targets ``j`` of one chunk at a
    time (at most ``max_cells`` pairs), in two passes: the means and
    variances of the ranks here, then, once their adjoints are known, the
    gradient in ``backward(a, b)``. Memory of one chunk instead of the
    half-pair arrays, for twice their evaluations of the normal CDF.
    """
    B, W = s.shape
    step = max(1, max_cells // max(B * W, 1))
    chunks = [(j, min(j + step, W)) for j in range(0, W, step)]
    mean = np.zeros((B, W))
    var = np.zeros((B, W))
    for start, stop in chunks:
        z, real = _lower_pairs(s, valid, start, stop, scale)
        P = ndtr(z)  # pi_ij: i beats j
        mean[:, start:stop] += P.sum(axis=2)
        mean[:, start:] += real.sum(axis=1) - P.sum(axis=1)  # pi_ji = 1 - pi_ij
        P -= P * P  # the variance term, the same for both
        var[:, start:stop] += P.sum(axis=2)
        var[:, start:] += P.sum(axis=1)

    def backward(a, b):
        # a pair adds T = (dL/dpi_ij - dL/dpi_ji) phi(z_ij) to the gradient of s_i
        # and -T to that of s_j, with dL/dpi_ij = a_j + b_j (1 - 2 pi_ij) and
        # pi_ji = 1 - pi_ij; phi's constant and 1 / scale are applied at the end
        grad = np.zeros((B, W))
        for start, stop in chunks:
            z, _ = _lower_pairs(s, valid, start, stop, scale)
            T = ndtr(z)
            T *= -2.0 * (b[:, start:stop, None] + b[:, None, start:])
            T += (a + b)[:, start:stop, None]
            T -= (a - b)[:, None, start:]
            with np.errstate(over="ignore"):  # squares beyond the largest float: density 0
                phi = np.square(z, out=z)
            phi *= -0.5
            np.exp(phi, out=phi)  # 0 where the pair is not real (z = -inf)
            T *= phi
            grad[:, start:] += T.sum(axis=1)
            grad[:, start:stop] -= T.sum(axis=2)
        grad /= _SQRT_2PI * scale
        return grad

    return mean, var, backward


def _rank_moments(s, valid, scale):
    """Means and variances of the ranks of a block, and their reverse step to the scores.

    ``s[b, j]`` are the scores of a padded block (``valid`` marks the real
    documents, first in each row) and ``scale = sqrt(2) sigma``. Returns
    ``mean``, ``var`` of shape ``(B, W)`` and ``backward(a, b) -> dL/ds`` for
    the adjoints ``a = dL/dmean``, ``b = dL/dvar``, to be called once. The
    pairs are taken by chunks of targets for long queries
    (:data:`NORMAL_PAIR_CELLS`), on a band of sorted pairs where the scores
    are spread out (:func:`_score_band`), and as half pairs otherwise.
    """
    B, W = s.shape
    if B * W * W > NORMAL_PAIR_CELLS:  # long queries: pairs by chunks of targets
        return _chunked_moments(s, valid, scale, NORMAL_CHUNK_CELLS)
    band = _score_band(s, valid, _BAND * scale)
    if band is not None:  # scores spread out: only the pairs not yet decided
        return _banded_moments(valid, scale, *band)
    return _half_pair_moments(s, valid, scale)
