r"""SoftRank's normal approximation of the rank distributions (§3.6).

The rank of a document, a sum of independent contests, gets the mean
:math:`\sum_i \pi_{ij}` and variance :math:`\sum_i \pi_{ij}(1 - \pi_{ij})`
of that sum, and rank ``r`` the normal probability of ``[r - 1/2, r + 1/2]``,
renormalised over the ranks of the query. This module holds the
distributions themselves and their reverse mode (:func:`_rank_normal`: used
with Sinkhorn scaling, by ``rank_distribution="hybrid"`` and by
:meth:`~skrank.losses.SoftRankLoss.rank_distributions`), and the constants
shared by the path that contracts the loss without them: the moments of the
ranks (:mod:`._normal_moments`), then SoftNDCG from the moments,
forward and reverse (:mod:`._normal_contraction`).
"""

import numpy as np
from scipy.special import ndtr

#: Added to the variance of the normal approximation, so that a document
#: whose rank is certain gets a (numerically) one-point distribution with a
#: finite gradient.
_VARIANCE_FLOOR = 1e-12

_SQRT_2PI = np.sqrt(2.0 * np.pi)

#: Standardised distance beyond which the normal CDF is 0 or 1 to double
#: precision (Phi(-8.5) < 1e-17, phi(8.5) < 3e-16): the normal
#: approximation evaluates its bin edges only inside this band.
_BAND = 8.5


def _decided_ndtr(x, out):
    """The normal CDF of ``x``, evaluated only where it is not decided.

    ``Phi(x)`` for ``|x| < _BAND``; 0 below ``-_BAND`` and 1 above, as
    ``Phi`` is to double precision there (``Phi(-8.5) < 1e-17``, and
    ``Phi(8.5)`` rounds to 1), and as the pairs and edges outside the band
    already count. SciPy's ``ndtr`` is a scalar loop without a vector
    kernel, far dearer per value than taking the undecided values out and
    putting them back.

    Parameters
    ----------
    x : ndarray
        Standardised values, finite or infinite (never NaN).
    out : ndarray
        Filled with the CDF (same shape as ``x``).

    Returns
    -------
    inside : ndarray of bool
        Where ``|x| < _BAND``: where the density is not 0 either.
    x_inside : ndarray
        ``x[inside]``, for the density of the reverse pass
        (:func:`_decided_density`).
    """
    inside = np.abs(x) < _BAND  # infinite: outside
    x_inside = x[inside]  # before out is written: out may be x itself
    np.greater_equal(x, _BAND, out=out)
    out[inside] = ndtr(x_inside)
    return inside, x_inside


def _decided_density(inside, x_inside, out):
    """``exp(-x^2 / 2)`` (the normal density times ``sqrt(2 pi)``) where ``inside``, 0 elsewhere.

    The derivative of :func:`_decided_ndtr`, from what it returned; ``out``
    has the shape of its ``x``.
    """
    out.fill(0.0)
    density = np.multiply(x_inside, -0.5 * x_inside)
    out[inside] = np.exp(density, out=density)
    return out


def _rank_normal(pi, sizes, live, n_ranks=None):
    """Discretised normal approximation of the rank distributions, and its reverse mode.

    Rank ``r`` of target ``j`` gets the normal probability of
    ``[r - 1/2, r + 1/2]``, renormalised over the ranks ``0 .. n - 1`` of its
    query (``live``); only the first ``n_ranks`` ranks (default: all) are
    returned.
    """
    B, N, J = pi.shape
    W = live.shape[1]
    n_ranks = W if n_ranks is None else min(n_ranks, W)
    live = live[:, :n_ranks]
    mean = pi.sum(axis=1)
    var = (pi * (1.0 - pi)).sum(axis=1)
    sd = np.sqrt(var + _VARIANCE_FLOOR)
    edges = (np.arange(n_ranks + 1) - 0.5 - mean[:, :, None]) / sd[:, :, None]  # (B, J, R + 1)
    cdf = ndtr(edges)
    mass = np.diff(cdf, axis=2) * live[:, None, :]
    top_edge = (sizes[:, None] - 0.5 - mean) / sd  # the upper end of the last rank
    total = ndtr(top_edge) - cdf[:, :, 0]
    P = mass / total[:, :, None]

    def backward(A):
        A = A * live[:, None, :]
        S = (A * P).sum(axis=2)
        dmass = A / total[:, :, None]
        dcdf = np.zeros_like(cdf)
        dcdf[:, :, 1:] += dmass
        dcdf[:, :, :-1] -= dmass
        dtotal = -S / total
        dcdf[:, :, 0] -= dtotal
        dedge = dcdf * np.exp(-0.5 * edges * edges) / _SQRT_2PI
        dtop = dtotal * np.exp(-0.5 * top_edge * top_edge) / _SQRT_2PI
        dmean = -(dedge.sum(axis=2) + dtop) / sd
        dvar = -((dedge * edges).sum(axis=2) + dtop * top_edge) / (2.0 * sd * sd)
        return dmean[:, None, :] + dvar[:, None, :] * (1.0 - 2.0 * pi)

    return P, backward
