"""SoftRankLoss: SoftRank's smoothed NDCG (Taylor, Guiver, Robertson and Minka, WSDM 2008).

The loss of a query is ``1 - SoftNDCG``: every score is smoothed by Gaussian
noise, which gives each document a distribution over ranks, and the expected
NDCG under those distributions is differentiable in the scores.

This module holds the loss, which composes the parts of SoftRank, each in
its own module (in reading order):

- :mod:`._binomial`: the exact rank distribution, the Rank-Binomial
  recursion, and its reverse mode;
- :mod:`._truncation`: that recursion truncated to the first ranks
  (SoftNDCG@R), the documents cut into segments;
- :mod:`._normal`: the normal approximation of the rank
  distributions, and the constants of its contracted path;
- :mod:`._normal_moments`: the means and variances of the ranks,
  each pair of documents once, and their reverse step to the scores;
- :mod:`._normal_contraction`: SoftNDCG from those moments, forward
  and reverse, without the rank distributions;
- :mod:`._sinkhorn`: Sinkhorn scaling of the rank matrices.

Here: the contest probabilities, the choice of rank distribution (with
``"hybrid"`` mixing the exact and the normal ones), the training discount,
the gains and the gradient with respect to the scores. Queries are
processed in padded blocks of similar sizes (:func:`~skrank.utils._query_blocks.query_blocks`),
each within :data:`._binomial.MEMORY_BUDGET`.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ...utils._query_blocks import query_blocks
from ...utils._qid import resolve_qid
from ...utils._query_layout import QueryLayout
from ...utils._sklearn_compat import Float, Integer, StrOptions, validate_parameter_constraints
from ...utils._validation import check_numeric
from .._base import ListwiseLoss, LossState, row_array
from .._checks import _check_finite_vector
from ._binomial import MEMORY_BUDGET, _rank_binomial
from ._normal import _BAND, _SQRT_2PI, _rank_normal
from ._normal_contraction import _contraction_forward, _contraction_reverse
from ._normal_moments import _rank_moments
from ._sinkhorn import MAX_SINKHORN_ITERATIONS, _sinkhorn

RANK_DISTRIBUTIONS = ("binomial", "normal", "hybrid")


@dataclass(eq=False)
class SoftRankState(LossState):
    """The state of a :class:`SoftRankLoss`: the gain of every row.

    Parameters
    ----------
    layout : QueryLayout
        As :class:`~skrank.losses.LossState`.
    gain : ndarray of shape (n_samples,)
        :math:`(2^{y} - 1) / (2^{y_{max}} - 1)`, the row's gain over the
        largest of its query (0 in a query whose labels are all 0), in the
        sorted order of ``layout``.
    query_weight, cache, prepared_by : keyword only
        As :class:`~skrank.losses.LossState`.
    """

    gain: np.ndarray = row_array()

#: The range of ``sigma`` in which the loss's arithmetic stays within the
#: floats: a normal float, so that the density's normaliser
#: ``1 / (sqrt(2 pi) sqrt(2) sigma)`` is finite (below it a tie gave an
#: infinite gradient), and small enough that the band of undecided contests
#: ``_BAND sqrt(2) sigma`` is finite (above it numpy warned of overflows and
#: the gradient was 0).
SIGMA_RANGE = (float(np.finfo(np.float64).tiny),
               float(np.finfo(np.float64).max / (np.sqrt(2.0) * max(_BAND, _SQRT_2PI))))

#: ``truncation`` below this fraction of the median query size warns: from
#: small initial weights every rank is spread around N/2, SoftNDCG@R has almost
#: no gradient, and training failed on OHSUMED (median 138 documents) with
#: R = 10 and 20 but not 50 (``benchmarks/softrank_defaults.py``).
TRUNCATION_MIN_FRACTION = 0.25

#: A query of more documents than this warns with the exact
#: ``rank_distribution="binomial"``, whose cost grows as N^3: an epoch of a
#: few such queries takes seconds (the user guide's SoftRank section has the
#: timings).
EXACT_MAX_DOCS = 500


def _discount(sizes, width, shape, truncation):
    """Training discount ``D[b, r]`` for queries of the given sizes (0 beyond a query).

    ``shape`` is ``discount_shape`` (see :class:`SoftRankLoss`); the discount
    is 0 from rank ``truncation`` on.
    """
    r = np.arange(width, dtype=np.float64)
    u = r / sizes[:, None]
    linear = 1.0 - u
    if shape >= 0:
        D = shape / np.log2(2.0 + r) + (1.0 - shape) * linear
    else:
        D = -shape * (1.0 - u * u) + (1.0 + shape) * linear
    D = np.where(r < sizes[:, None], D, 0.0)
    if truncation is not None:
        D[:, truncation:] = 0.0
    return D


class SoftRankLoss(ListwiseLoss):
    r"""One minus SoftNDCG, the expected NDCG under Gaussian score noise.

    Parameters
    ----------
    sigma : float, default=0.1
        Standard deviation :math:`\sigma` of the noise added to every score,
        a normal float up to about 1.5e307 (beyond either end the loss's
        arithmetic leaves the floats).
    rank_distribution : {"normal", "binomial", "hybrid"}, default="normal"
        How the rank distribution of each document is computed: the normal
        approximation of the Rank-Binomial distribution (:math:`O(N^2)` per
        query of :math:`N` documents); the exact Rank-Binomial recursion
        (:math:`O(N^3)`; a query of more than 500 documents warns); or the
        exact recursion for the ``n_exact`` top-scored and the ``n_exact``
        bottom-scored documents of each query and the normal approximation
        for the others. The default is
        :class:`~skrank.rankers.SoftRankRanker`'s, which trained as well as
        the exact recursion at a fraction of its cost (see its Notes).
    n_exact : int, default=10
        Documents at each end of the current ranking that get the exact
        distribution when ``rank_distribution="hybrid"``.
    sinkhorn_iterations : int, default=0
        Sinkhorn iterations applied to the matrix :math:`[p_j(r)]` (each one
        scales every rank column, then every document row, to sum 1); the
        gradient goes through them, keeping two vectors per query and
        iteration. At most 10,000: there is no tolerance, every iteration
        runs at every evaluation of the loss, and more would take hours
        rather than change the model.
    discount_shape : float, default=1.0
        Shape :math:`\kappa \in [-1, 1]` of the training discount: 1 is
        NDCG's :math:`1/\log_2(2 + r)`, 0 the linear :math:`1 - r/N`, -1 the
        super-linear :math:`1 - (r/N)^2`; values in between blend linearly
        (see Notes). Not to be confused with the L2 penalty ``alpha`` of the
        rankers.
    truncation : int, default=None
        If given, SoftNDCG@R: the discount is 0 from rank ``truncation`` on,
        and only the first ``truncation`` ranks of every distribution are
        computed (:math:`O(N^2 R)` per query for the exact recursion instead
        of :math:`O(N^3)`; :math:`R + 1` bin edges for the normal
        approximation). With ``sinkhorn_iterations > 0`` every rank is still
        computed, since Sinkhorn scales whole rank columns; only the discount
        is cut. None uses all ranks.

    Notes
    -----
    Each score is smoothed, :math:`s_j \sim \mathcal N(\bar s_j, \sigma^2)`
    (eq. 8), so document :math:`i` beats document :math:`j` with probability
    (eq. 9)

    .. math:: \pi_{ij} = \Phi\Big(\frac{\bar s_i - \bar s_j}{\sqrt 2\,\sigma}\Big).

    The rank :math:`R_j \in \{0, \dots, N-1\}` of document :math:`j` (0 is the
    top) counts the documents that beat it, a sum of independent Bernoulli
    variables. Its distribution is built by adding the other documents one at
    a time (eq. 11-12),
    :math:`p_j^{(i)}(r) = p_j^{(i-1)}(r-1)\,\pi_{ij} + p_j^{(i-1)}(r)\,(1-\pi_{ij})`,
    starting from :math:`p_j^{(0)} = \delta_0`. The normal approximation
    (§3.6) gives :math:`R_j` the mean :math:`\sum_{i} \pi_{ij}` and variance
    :math:`\sum_i \pi_{ij}(1 - \pi_{ij})` and the probability of
    :math:`[r - \tfrac12, r + \tfrac12]` to rank :math:`r`, renormalised
    over :math:`0, \dots, N-1`. SoftNDCG (eq. 13-15) is

    .. math:: \mathcal G = G_{\max}^{-1} \sum_j g_j \sum_r D(r)\, p_j(r),
              \qquad g_j = 2^{l_j} - 1,

    with :math:`G_{\max}` the largest value of :math:`\sum_j g_j D(r_j)` over
    rankings, so that a certain, perfect ranking has :math:`\mathcal G = 1`.
    The loss of a query is :math:`1 - \mathcal G`; a query with
    :math:`G_{\max} = 0` (no relevant document) has loss 0 and no gradient.
    Gains are computed relative to the largest of the query, which leaves
    :math:`\mathcal G` unchanged and keeps large labels finite; labels must be
    non-negative. Queries without a relevant document still count in the
    mean over queries, so the loss of a set of queries is the mean of their
    losses, as the mean NDCG is the mean of theirs.

    The training discount (§4.7) is, with :math:`u = r/N` and :math:`\kappa` the
    ``discount_shape``,

    .. math:: D_\kappa(r) = \begin{cases}
              \kappa / \log_2(2 + r) + (1 - \kappa)(1 - u) & \kappa \ge 0,\\
              -\kappa (1 - u^2) + (1 + \kappa)(1 - u) & \kappa < 0,
              \end{cases}

    and ``truncation`` sets it to 0 for :math:`r \ge R`. :math:`G_{\max}` uses
    the same discount.

    *Truncation saves work.* The recursion reads rank :math:`r` only from
    ranks :math:`r` and :math:`r - 1`, so the first :math:`R` ranks of every
    state are computed from the first :math:`R` ranks alone, exactly (the
    mass that leaves rank :math:`R - 1` is never needed by a truncated
    loss), at :math:`O(N^2 R)` per query, forward and reverse. For small
    :math:`R` the documents are also cut into a few segments whose
    recursions run side by side and whose count distributions are then
    convolved (truncated to :math:`R` ranks, exact), which keeps numpy's
    arrays large. A caveat for training: from small initial weights every
    contest is close to a coin toss, the rank of a document of a query of
    :math:`N` documents is spread around :math:`N/2`, and its mass in the
    first :math:`R \ll N/2` ranks, hence the gradient of SoftNDCG@R, is
    vanishingly small (measured on OHSUMED, queries of about 150
    documents: see :class:`~skrank.rankers.SoftRankRanker`).

    *The normal approximation, once per pair.* As
    :math:`\pi_{ji} = 1 - \pi_{ij}`, the variance terms
    :math:`\pi_{ij}(1 - \pi_{ij})` and the densities of a pair are equal, and
    a pair changes the gradients of its two scores by opposite amounts, the
    means, variances and gradient are sums over the :math:`N(N-1)/2` pairs of
    a query: the normal CDF and density are evaluated once per pair, half the
    :math:`N^2` contests (the exact recursion needs every :math:`\pi_{ij}`
    and computes them all). Once training has spread the scores out, most
    contests are decided: two documents more than :math:`8.5 \sqrt 2 \sigma`
    apart have :math:`\pi_{ij}` 0 or 1 to double precision, no variance term
    and no density (below :math:`10^{-15}`). The documents of a block are
    then sorted by score and each one is paired only with the documents that
    follow it within that distance (as many as the widest such band of the
    block holds; the CDF and density are evaluated only on each document's
    own band), and every document above it beyond the band adds 1 to its
    mean rank: about a third of the pairs after one epoch on web-search-like
    data, a fifth at the end of a fit. Without the rank distributions themselves, the
    loss is then contracted against the discount over the bin edges within
    8.5 standard deviations of each mean rank, beyond which the CDF is 0 or
    1 to double precision (and is taken as such). The half-pair arrays of a query take some
    :math:`3 N^2` floats at once; a longer query (more than about 1,450
    documents) takes its pairs by chunks of target documents of at most
    2**20 pairs, in two passes (the means and variances of the ranks, then
    the gradient): memory of one chunk (some 40 MB in all at
    :math:`N = 3000`, instead of 200 MB), for about 1.4 times the time.

    The gradient (eq. 16-23) is obtained in reverse mode through the
    recursion instead of the paper's forward recursion for
    :math:`\partial p_j / \partial \bar s_m` (whose eq. 18 should read
    :math:`\psi^{(i-1)}`): the adjoint of :math:`p_j^{(i)}` is carried back
    one document at a time, at the cost of one more pass over the stored
    states, :math:`O(N^3)` in all rather than :math:`O(N^4)`. The selection
    of exact documents by ``"hybrid"`` depends on the order of the scores
    (exact ties broken by row order within the query) and is held fixed
    when differentiating.

    References
    ----------
    .. [1] M. Taylor, J. Guiver, S. Robertson and T. Minka, "SoftRank:
       optimizing non-smooth rank metrics", WSDM 2008, pp. 77-86.
    """

    name = "softrank"

    #: Constraints of the parameters, shared with :class:`~skrank.rankers.SoftRankRanker`.
    _parameter_constraints = {
        "sigma": [Float(*SIGMA_RANGE, closed="both")],
        "rank_distribution": [StrOptions(set(RANK_DISTRIBUTIONS))],
        "n_exact": [Integer(0, None, closed="left")],
        "sinkhorn_iterations": [Integer(0, MAX_SINKHORN_ITERATIONS, closed="both")],
        "discount_shape": [Float(-1, 1, closed="both")],
        "truncation": [None, Integer(1, None, closed="left")],
    }

    def __init__(
        self,
        sigma=0.1,
        *,
        rank_distribution="normal",
        n_exact=10,
        sinkhorn_iterations=0,
        discount_shape=1.0,
        truncation=None,
    ):
        params = {
            "sigma": sigma, "rank_distribution": rank_distribution, "n_exact": n_exact,
            "sinkhorn_iterations": sinkhorn_iterations, "discount_shape": discount_shape,
            "truncation": truncation,
        }
        validate_parameter_constraints(self._parameter_constraints, params, type(self).__name__)
        self.sigma = float(sigma)
        self.rank_distribution = rank_distribution
        self.n_exact = int(n_exact)
        self.sinkhorn_iterations = int(sinkhorn_iterations)
        self.discount_shape = float(discount_shape)
        self.truncation = truncation

    # ------------------------------------------------------------------
    # The ListwiseLoss protocol
    def _prepare(self, y_sorted, layout, random_state):
        if (y_sorted < 0).any():
            raise ValueError(
                "y must be non-negative for SoftRank's gain 2**y - 1; got "
                f"min(y) = {y_sorted.min()!r}."
            )
        top = layout.expand(layout.max(y_sorted))
        # (2**y - 1) / (2**top - 1), without overflow for large labels
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.exp2(y_sorted - top) * np.expm1(-y_sorted * np.log(2.0)) / np.expm1(
                -top * np.log(2.0)
            )
        gain = np.where(top > 0, gain, 0.0)
        largest = int(layout.sizes.max())
        if self.rank_distribution == "binomial" and largest > EXACT_MAX_DOCS:
            warnings.warn(
                f"rank_distribution='binomial' computes exact rank distributions at a "
                f"cost growing as N^3 per query, and the largest query has N={largest} "
                f"documents (more than {EXACT_MAX_DOCS}): an epoch may take minutes. Use "
                "rank_distribution='hybrid' (exact only for the n_exact documents at "
                "each end) or 'normal' (O(N^2)); if the rows are several queries, pass "
                "qid.",
                UserWarning,
            )
        median = float(np.median(layout.sizes))
        if self.truncation is not None and self.truncation < TRUNCATION_MIN_FRACTION * median:
            warnings.warn(
                f"truncation={self.truncation} is below a quarter of the median query size "
                f"({median:g} documents): from small initial weights every rank is spread "
                "around N/2 and SoftNDCG@R has almost no gradient, so training may not "
                "learn (on OHSUMED, truncation=10 and 20 failed, 50 did not). Use a "
                "larger truncation or None.",
                UserWarning,
            )
        return SoftRankState(layout, gain=gain)

    def _query_losses_and_grad(self, s_sorted, state):
        layout = state.layout
        gain = state.gain
        per_query = np.zeros(layout.n_queries)
        grad = np.zeros(layout.n_samples)
        for queries, slots, valid in self._blocks(layout):
            s = np.where(valid, s_sorted[slots], 0.0)
            g = np.where(valid, gain[slots], 0.0)
            loss, gs = self._block(s, g, valid)
            per_query[queries] = loss
            grad[slots[valid]] = gs[valid]
        return per_query, grad

    # ------------------------------------------------------------------
    # Public helper
    def rank_distributions(self, scores, qid=None):
        """Rank distribution :math:`p_j(r)` of every document of every query.

        Parameters
        ----------
        scores : array-like of shape (n_samples,)
            Mean scores :math:`\\bar s_j`.
        qid : array-like of shape (n_samples,), default=None
            Query ids; None means one query.

        Returns
        -------
        distributions : list of ndarray
            One ``(n_q, n_q)`` array per query, in order of sorted query id:
            row ``j`` is the distribution over ranks ``0 .. n_q - 1`` (0 is the
            top) of the query's ``j``-th row, rows in their original order.
            Sinkhorn scaling is applied if ``sinkhorn_iterations > 0``; all
            ranks are returned whatever ``truncation`` is.
        """
        scores = np.asarray(check_numeric(scores, "scores"), dtype=np.float64)
        layout = QueryLayout(resolve_qid(qid, scores.shape[0],
                                         caller="SoftRankLoss.rank_distributions"))
        s_sorted = layout.to_sorted(_check_finite_vector("scores", scores, layout.n_samples))
        out = [None] * layout.n_queries
        for queries, slots, valid in self._blocks(layout):
            s = np.where(valid, s_sorted[slots], 0.0)
            P = self._distributions(s, valid, s.shape[1], need_grad=False)[0]
            for b, q in enumerate(queries):
                n = layout.sizes[q]
                out[q] = P[b, :n, :n].copy()
        return out

    # ------------------------------------------------------------------
    # Blocks
    def _blocks(self, layout):
        """The queries in padded blocks (:func:`query_blocks`), each within the budget.

        Yields ``(queries, slots, valid)`` with ``slots`` and ``valid`` as
        arrays (also for a block without padding): the recursion of
        :func:`_rank_binomial` relies on the queries of a block coming by
        decreasing size.
        """
        exact = self.rank_distribution == "binomial"
        hybrid = self.rank_distribution == "hybrid"

        def cost(width):
            targets = width if exact else min(width, 2 * self.n_exact) if hybrid else 0
            # stored recursion states (width steps of at most n_ranks ranks)
            # plus the O(width^2) arrays of a query
            states = width * min(self._n_ranks(width), (width + 3) / 2)
            # and the two sums per document and Sinkhorn iteration
            return targets * states + 16 * width * width + 2 * width * self.sinkhorn_iterations

        for queries, slots, _, valid in query_blocks(
            layout, growth=1.6, max_cost=MEMORY_BUDGET, cost=cost
        ):
            if valid is None:
                valid = np.ones(slots.shape, dtype=bool)
            yield queries, slots, valid

    def _n_ranks(self, width):
        """Ranks a block of that width computes: the first ``truncation``, unless Sinkhorn needs all."""
        if self.truncation is None or self.sinkhorn_iterations > 0:
            return width
        return min(self.truncation, width)

    def _contests(self, s, valid):
        """Contest probabilities ``pi[b, i, j]`` of a block, the mask of real pairs and ``z``.

        ``pi[b, i, j] = Phi(z[b, i, j])`` with ``z = (s_i - s_j) / (sqrt(2)
        sigma)`` clipped to +-40 (where the normal CDF and density are
        saturated), 0 on the diagonal and in padding.
        """
        W = s.shape[1]
        pair = valid[:, :, None] & valid[:, None, :]
        pair[:, np.arange(W), np.arange(W)] = False
        with np.errstate(over="ignore"):  # differences beyond 1e308 clip to 40
            z = (s[:, :, None] - s[:, None, :]) / (np.sqrt(2.0) * self.sigma)
        np.clip(z, -40.0, 40.0, out=z)
        pi = ndtr(z)
        pi *= pair
        return pi, pair, z

    def _distributions(self, s, valid, n_ranks, *, need_grad=True):
        """Rank distributions of a block and the function that back-propagates them.

        Returns ``(P, pi, pair, z, backward)``: ``P[b, j, r]`` for the first
        ``n_ranks`` ranks, the contest probabilities ``pi[b, i, j]`` (0 on
        the diagonal and in padding), the mask of real pairs, the
        standardised differences ``z[b, i, j]`` (clipped to +-40, where the
        normal CDF and density are saturated) and ``backward(A) -> dG/dpi``
        for an adjoint ``A = dG/dP`` (only valid with ``need_grad``; without
        it the exact recursion stores no states).
        """
        B, W = s.shape
        sizes = valid.sum(axis=1)
        pi, pair, z = self._contests(s, valid)
        ranks = np.arange(W)
        live = ranks < sizes[:, None]  # ranks a query can take, shape (B, W)

        if self.rank_distribution == "binomial":
            P, back = _rank_binomial(pi, sizes, targets=valid, n_ranks=n_ranks,
                                     need_grad=need_grad)
        elif self.rank_distribution == "normal":
            P, back = _rank_normal(pi, sizes, live, n_ranks)
            P *= valid[:, :, None]
        else:
            P, back = self._rank_hybrid(s, pi, sizes, valid, live, n_ranks, need_grad)
            P *= valid[:, :, None]

        P, sinkhorn_backward = _sinkhorn(P, self.sinkhorn_iterations, need_grad)

        def backward(A):
            A = sinkhorn_backward(A) * valid[:, :, None]
            return back(A)

        return P, pi, pair, z, backward

    def _rank_hybrid(self, s, pi, sizes, valid, live, n_ranks, need_grad):
        """Exact distributions for the top and bottom ``n_exact`` documents, normal elsewhere."""
        B, W = s.shape
        P, back_normal = _rank_normal(pi, sizes, live, n_ranks)
        n_top = self.n_exact
        J = min(W, 2 * n_top)
        if J == 0:
            return P, back_normal
        # columns of the current ranking, best first (padding last)
        order = np.argsort(np.where(valid, -s, np.inf), axis=1, kind="stable")
        c = np.arange(J)
        pos = np.where((sizes[:, None] > J) & (c >= n_top), sizes[:, None] - J + c, c)
        chosen = pos < sizes[:, None]
        sel = np.take_along_axis(order, np.minimum(pos, W - 1), axis=1)
        b_idx = np.broadcast_to(np.arange(B)[:, None], (B, J))
        pi_sel = pi[b_idx[:, None, :], np.arange(W)[None, :, None], sel[:, None, :]]
        P_exact, back_exact = _rank_binomial(pi_sel, sizes, targets=chosen, n_ranks=n_ranks,
                                             need_grad=need_grad)
        rows, cols = b_idx[chosen], sel[chosen]
        is_exact = np.zeros((B, W), dtype=bool)
        is_exact[rows, cols] = True
        P[rows, cols] = P_exact[chosen]

        def backward(A):
            A_exact = np.where(chosen[:, :, None], A[b_idx, sel], 0.0)
            A_normal = np.where(is_exact[:, :, None], 0.0, A)
            grad_pi = back_normal(A_normal)
            exact_part = back_exact(A_exact)
            grad_pi[rows, :, cols] = exact_part.transpose(0, 2, 1)[chosen]
            return grad_pi

        return P, backward

    def _block(self, s, gain, valid):
        """Per-query losses of a block and the gradient of their sum."""
        B, W = s.shape
        sizes = valid.sum(axis=1)
        n_ranks = self._n_ranks(W)
        D = _discount(sizes, W, self.discount_shape, self.truncation)[:, :n_ranks]
        ideal = -np.sort(-gain, axis=1)[:, :n_ranks]
        g_max = (ideal * D).sum(axis=1)
        has_gain = g_max > 0
        weight = gain / np.where(has_gain, g_max, 1.0)[:, None]
        if self.rank_distribution == "normal" and self.sinkhorn_iterations == 0:
            softndcg, grad = self._block_normal(s, weight, D, valid, sizes)
        else:
            softndcg, grad = self._block_general(s, weight, D, valid, n_ranks)
        return np.where(has_gain, 1.0 - softndcg, 0.0), grad

    def _block_general(self, s, weight, D, valid, n_ranks):
        """SoftNDCG ``sum_j w_j sum_r P_j(r) D(r)`` of a block and the gradient of minus it."""
        P, pi, pair, z, backward = self._distributions(s, valid, n_ranks)
        softndcg = np.einsum("bj,bjr,br->b", weight, P, D)
        A = -weight[:, :, None] * D[:, None, :]
        grad_pi = backward(A)
        grad_pi *= pair
        # d pi_ij / d s_i = phi(z_ij) / (sqrt(2) sigma) = -d pi_ij / d s_j
        dpi = np.exp(-0.5 * z * z) / (_SQRT_2PI * np.sqrt(2.0) * self.sigma)
        grad_pi -= grad_pi.transpose(0, 2, 1).copy()
        return softndcg, (grad_pi * dpi).sum(axis=2)

    def _block_normal(self, s, weight, D, valid, sizes):
        """:meth:`_block_general` for the normal approximation without Sinkhorn, contracted.

        The same function as :meth:`_distributions` with :func:`_rank_normal`
        followed by the contraction of :meth:`_block_general`, computed without
        the rank distributions, in three steps: the means and variances of the
        ranks, each pair of documents once (:func:`_rank_moments`); SoftNDCG
        from them, contracted against the discount over the bin edges
        (:func:`_contraction_forward`); and the reverse mode, from SoftNDCG to
        the moments (:func:`_contraction_reverse`) and from the moments to the
        scores (the moments' ``backward``).
        """
        scale = np.sqrt(2.0) * self.sigma
        mean, var, moments_backward = _rank_moments(s, valid, scale)
        softndcg, saved = _contraction_forward(mean, var, weight, D, sizes)
        a, b = _contraction_reverse(saved)  # dL/dmean, dL/dvar of L = -SoftNDCG
        return softndcg, moments_backward(a, b)
