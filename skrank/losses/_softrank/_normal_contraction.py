"""SoftNDCG from the moments of the ranks under the normal approximation: forward and reverse.

Under SoftRank's normal approximation (:mod:`._normal`) rank ``r``
of target ``j`` has the probability ``P_j(r) = (Phi(e_j,r+1) - Phi(e_jr)) /
total_j`` of the bin between the standardised edges ``e_jr = (r - 1/2 -
mean_j) / sd_j``, renormalised over the query's ranks. Contracted against
the discount, with ``E(r) = D(r - 1) - D(r)`` (``D(-1) = 0``, and 0 from the
last rank kept),

    ``sum_r D(r) P_j(r) = sum_r E(r) Phi(e_jr) / total_j``,

so SoftNDCG is computed from the means and variances of the ranks
(:mod:`._normal_moments`) without the rank distributions: the
forward pass (:func:`_contraction_forward`) is one matrix-vector product per
query, and the reverse pass (:func:`_contraction_reverse`), whose adjoint
``-w_j D(r)`` has rank one, reduces to two more per query, giving ``a =
dL/dmean`` and ``b = dL/dvar`` of ``L = -SoftNDCG``; the moments' own
reverse step takes them to the scores, ``dL/dpi_ij = a_j + b_j (1 - 2
pi_ij)``. The normal CDF and density are evaluated only on the edges within
:data:`._normal._BAND` standard deviations of each target's mean
rank (in a window as wide as the widest target of the block needs, of
which only the edges within the target's own band); beyond it the CDF is 0
or 1 to double precision, and the edges above the window add a suffix sum
of ``E``. Truncation (SoftNDCG@R) is ``R + 1`` edges.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr

from ._normal import (
    _BAND, _SQRT_2PI, _VARIANCE_FLOOR, _decided_density, _decided_ndtr,
)


class _Contraction(NamedTuple):
    """What :func:`_contraction_forward` keeps for :func:`_contraction_reverse`.

    Arrays of shape ``(B, W)``, or ``(B, W, K)`` over the window of edges.
    """

    weight: np.ndarray
    H: np.ndarray  # sum_r E(r) Phi(e_jr)
    total: np.ndarray  # the normal mass of the query's ranks
    edges: np.ndarray  # the window of standardised edges
    cdf: np.ndarray  # Phi of the window (the reverse pass reuses its buffer)
    inside: np.ndarray  # the edges of the window within _BAND
    edges_inside: np.ndarray  # edges[inside]
    E_win: np.ndarray  # E over the window
    first_edge: np.ndarray
    top: np.ndarray
    sd: np.ndarray
    inv_sd: np.ndarray


def _contraction_forward(mean, var, weight, D, sizes):
    """SoftNDCG of a block under the normal approximation, from the moments of the ranks.

    ``mean`` and ``var`` (``(B, W)``) are those of every target's rank,
    ``weight[b, j]`` its gain over the query's largest SoftNDCG, ``D[b, r]``
    the discount of the ranks kept and ``sizes`` the queries' sizes. Returns
    the SoftNDCG of each query and what :func:`_contraction_reverse` needs.
    """
    B = mean.shape[0]
    R = D.shape[1]
    sd = np.sqrt(var + _VARIANCE_FLOOR)
    # E(r) over the edges r = 0 .. R, and its sums from edge r to the last
    E = np.zeros((B, R + 1))
    E[:, :R] -= D
    E[:, 1:] += D
    tail = np.zeros((B, R + 2))
    tail[:, :-1] = np.cumsum(E[:, ::-1], axis=1)[:, ::-1]
    # Phi(e_jr) is 0 or 1 to double precision where |e_jr| >= _BAND: only
    # a window of K edges per target, from edge lo_j, needs it (and phi)
    K = int(min(R + 1, np.floor(2.0 * _BAND * sd.max()) + 1))
    lo = np.clip(np.floor(mean + 0.5 - _BAND * sd) + 1.0, 0, R + 1 - K).astype(np.intp)
    inv_sd = 1.0 / sd
    edges = np.multiply(np.arange(K), inv_sd[:, :, None])  # (B, W, K): e_j,lo_j+k
    edges += ((lo - 0.5 - mean) * inv_sd)[:, :, None]
    if K < R + 1:
        # rows of K consecutive edges of E, the one from lo_j for each target
        st = E.strides
        runs = np.ndarray((B, R + 2 - K, K), E.dtype, E, strides=(st[0], st[1], st[1]))
        E_win = runs[np.arange(B)[:, None], lo]
    else:  # lo is 0: every edge
        E_win = np.broadcast_to(E[:, None, :], edges.shape)
    # the window is as wide as the block's widest target needs: the edges of
    # the others beyond _BAND are decided as well
    cdf = np.empty_like(edges)
    inside, edges_inside = _decided_ndtr(edges, out=cdf)
    above = tail[np.arange(B)[:, None], lo + K]  # edges beyond the window: Phi = 1
    H = np.einsum("bjk,bjk->bj", E_win, cdf) + above
    first_edge = (-0.5 - mean) * inv_sd
    top = (sizes[:, None] - 0.5 - mean) * inv_sd
    total = ndtr(top) - ndtr(first_edge)
    softndcg = (weight * H / total).sum(axis=1)
    return softndcg, _Contraction(weight, H, total, edges, cdf, inside, edges_inside, E_win,
                                  first_edge, top, sd, inv_sd)


def _contraction_reverse(saved):
    """The adjoints ``a = dL/dmean`` and ``b = dL/dvar`` of ``L = -SoftNDCG``.

    ``saved`` is what :func:`_contraction_forward` returned with SoftNDCG;
    its CDF buffer is overwritten (the reverse pass runs once).
    """
    (weight, H, total, edges, cdf, inside, edges_inside, E_win, first_edge, top, sd,
     inv_sd) = saved
    # reverse mode of loss = -sum_j w_j H_j / total_j
    c = -weight / total  # dL/dH_j
    c_total = weight * H / (total * total)  # dL/dtotal_j
    # phi(e) * sqrt(2 pi), 0 where the CDF was decided; cdf is not needed again
    density = _decided_density(inside, edges_inside, out=cdf)
    F1 = np.einsum("bjk,bjk->bj", E_win, density) / _SQRT_2PI  # sum_r E(r) phi(e_jr)
    density *= edges
    F2 = np.einsum("bjk,bjk->bj", E_win, density) / _SQRT_2PI  # sum_r E(r) phi(e_jr) e_jr
    first = np.exp(-0.5 * first_edge ** 2) / _SQRT_2PI
    d_top = c_total * np.exp(-0.5 * top * top) / _SQRT_2PI
    sum_edge = c * F1 - c_total * first
    sum_edge_e = c * F2 - c_total * first * first_edge
    a = -(sum_edge + d_top) * inv_sd  # dL/dmean_j
    b = -(sum_edge_e + d_top * top) / (2.0 * sd * sd)  # dL/dvar_j
    return a, b
