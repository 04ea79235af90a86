"""SoftRank's smoothed NDCG (Taylor, Guiver, Robertson and Minka, WSDM 2008).

The loss of a query is ``1 - SoftNDCG``: every score is smoothed by Gaussian
noise, which gives each document a distribution over ranks, and the expected
NDCG under those distributions is differentiable in the scores.

Queries are processed in padded blocks of similar sizes
(:func:`query_blocks`). The exact Rank-Binomial recursion runs
over all target documents of all queries of a block at once, flattened into
one axis without padding: one array operation per recursion step (one step
per document that is added), never a Python loop over documents. With
``truncation`` it keeps only the ranks the loss reads, and for a few ranks
runs segments of the documents side by side. Its gradient is taken in
reverse mode through the recursion, with the intermediate states stored; the
targets are processed in chunks when the states would not fit in
:data:`MEMORY_BUDGET`.
"""

import itertools
import warnings
from numbers import Real

import numpy as np
from scipy.special import ndtr

from ..utils._query_blocks import query_blocks
from ..utils._query_layout import QueryLayout, default_qid
from ..utils._sklearn_compat import Integer, Interval, StrOptions, validate_parameter_constraints
from ..utils._validation import check_numeric
from ._base import ListwiseLoss, LossState, _check_finite_vector

#: Float64 values the stored recursion states of one block may occupy
#: (128 MiB); beyond it the targets of the recursion are processed in
#: chunks (a single target of a query of N documents stores about N^2/2
#: values, so the budget holds for N up to about 5800).
MEMORY_BUDGET = 2**24

#: Added to the variance of the normal approximation, so that a document
#: whose rank is certain gets a (numerically) one-point distribution with a
#: finite gradient.
_VARIANCE_FLOOR = 1e-12

_SQRT_2PI = np.sqrt(2.0 * np.pi)

#: Standardised distance beyond which the normal CDF is 0 or 1 to double
#: precision (Phi(-8.5) < 1e-17, phi(8.5) < 3e-16): the normal
#: approximation evaluates its bin edges only inside this band.
_BAND = 8.5

RANK_DISTRIBUTIONS = ("binomial", "normal", "hybrid")

#: Most Sinkhorn iterations. They have no tolerance (a matrix with decided
#: contests, hence zeros, is still off by 1e-6 after 1e5 iterations at N =
#: 100), so every one runs at every evaluation of the loss, forward and back,
#: over every query's N x N rank matrix, and keeps two N-vectors per query for
#: the gradient (1.6 MB per query of 10 documents at 10,000 iterations);
#: 1,000 iterations took 1.4 s per evaluation of 100 queries of 50 documents
#: (one core). More would run for hours (10**23 would never end) rather than
#: change the model.
MAX_SINKHORN_ITERATIONS = 10_000

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
#: deviations of the contest (:func:`_normal_banded`), when the widest such
#: band of the block holds at most this fraction of the ``W // 2`` pairs per
#: document of the half-pair path. Every other pair is decided to double
#: precision. Trained scores spread out: on MSLR-shaped data the band holds
#: some 30 % of the pairs after one epoch and 20 % at the end of a fit.
BAND_MAX_FRACTION = 0.75

#: Blocks narrower than this take the half-pair path (sorting would cost more
#: than the pairs it saves).
BAND_MIN_WIDTH = 16

#: ``truncation`` below this fraction of the median query size warns: from
#: small initial weights every rank is spread around N/2, SoftNDCG@R has almost
#: no gradient, and training failed on OHSUMED (median 138 documents) with
#: R = 10 and 20 but not 50 (``benchmarks/softrank_defaults.py``).
TRUNCATION_MIN_FRACTION = 0.25

#: A query of more documents than this warns with the exact
#: ``rank_distribution="binomial"``, whose cost grows as N^3 (about 2 s per
#: epoch for one such query on one core; 19 s at N = 1000).
EXACT_MAX_DOCS = 500


class SoftRankLoss(ListwiseLoss):
    r"""One minus SoftNDCG, the expected NDCG under Gaussian score noise.

    Parameters
    ----------
    sigma : float, default=0.1
        Standard deviation :math:`\sigma` of the noise added to every score.
    rank_distribution : {"binomial", "normal", "hybrid"}, default="binomial"
        How the rank distribution of each document is computed: the exact
        Rank-Binomial recursion (:math:`O(N^3)` per query of :math:`N`
        documents; a query of more than 500 documents warns); its normal approximation (:math:`O(N^2)`); or the exact
        recursion for the ``n_exact`` top-scored and the ``n_exact``
        bottom-scored documents of each query and the normal approximation
        for the others.
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
    discount_alpha : float, default=1.0
        Training discount in :math:`[-1, 1]`: 1 is NDCG's
        :math:`1/\log_2(2 + r)`, 0 the linear :math:`1 - r/N`, -1 the
        super-linear :math:`1 - (r/N)^2`; values in between blend linearly
        (see Notes).
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

    The training discount (§4.7) is, with :math:`u = r/N`,

    .. math:: D_\alpha(r) = \begin{cases}
              \alpha / \log_2(2 + r) + (1 - \alpha)(1 - u) & \alpha \ge 0,\\
              -\alpha (1 - u^2) + (1 + \alpha)(1 - u) & \alpha < 0,
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
    block holds), and every document above it beyond the band adds 1 to its
    mean rank: about a third of the pairs after one epoch on web-search-like
    data, a fifth at the end of a fit. Without the rank distributions themselves, the
    loss is then contracted against the discount over the bin edges within
    8.5 standard deviations of each mean rank, beyond which the CDF is 0 or
    1 to double precision. The half-pair arrays of a query take some
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
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "rank_distribution": [StrOptions(set(RANK_DISTRIBUTIONS))],
        "n_exact": [Integer(0, None, closed="left")],
        "sinkhorn_iterations": [Integer(0, MAX_SINKHORN_ITERATIONS, closed="both")],
        "discount_alpha": [Interval(Real, -1, 1, closed="both")],
        "truncation": [None, Integer(1, None, closed="left")],
    }

    def __init__(
        self,
        sigma=0.1,
        *,
        rank_distribution="binomial",
        n_exact=10,
        sinkhorn_iterations=0,
        discount_alpha=1.0,
        truncation=None,
    ):
        params = {
            "sigma": sigma, "rank_distribution": rank_distribution, "n_exact": n_exact,
            "sinkhorn_iterations": sinkhorn_iterations, "discount_alpha": discount_alpha,
            "truncation": truncation,
        }
        validate_parameter_constraints(self._parameter_constraints, params, type(self).__name__)
        self.sigma = float(sigma)
        self.rank_distribution = rank_distribution
        self.n_exact = int(n_exact)
        self.sinkhorn_iterations = int(sinkhorn_iterations)
        self.discount_alpha = float(discount_alpha)
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
        return LossState(layout, per_row={"gain": gain})

    def _value_and_grad(self, s_sorted, state):
        layout = state.layout
        gain = state.per_row["gain"]
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
        layout = QueryLayout(default_qid(qid, scores.shape[0]))
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

        # Sinkhorn: each iteration divides the rank columns, then the document
        # rows, by their sums. Only the sums are kept (two vectors per query and
        # iteration): the reverse mode rebuilds each step's output from the next
        # by multiplying the sums back, so memory does not grow with N^2 times
        # the iterations.
        sums = []
        for _ in range(self.sinkhorn_iterations):
            P, col = _normalise(P, axis=1)
            P, row = _normalise(P, axis=2)
            if need_grad:
                sums.append((col, row))
        final = P

        def backward(A):
            out = final
            for col, row in reversed(sums):
                A = _normalise_backward(A, out, row, axis=2)
                out = out * row  # the column step's output
                A = _normalise_backward(A, out, col, axis=1)
                out = out * col  # the iteration's input
            A = A * valid[:, :, None]
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
        D = _discount(sizes, W, self.discount_alpha, self.truncation)[:, :n_ranks]
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
        the rank distributions: with ``E(r) = D(r - 1) - D(r)`` (``D(-1) = 0`` and
        0 from the last rank kept), ``sum_r D(r) P_j(r) = sum_r E(r)
        Phi(e_jr) / total_j`` over the bin edges ``e_jr``, so the forward pass
        is one matrix-vector product per query, and the reverse mode, whose
        adjoint ``-w_j D(r)`` has rank one, reduces to two more per query (for
        the mean and the variance of each rank) and two for the scores:
        ``dG/dpi_ij = a_j + b_j (1 - 2 pi_ij)``. The normal CDF and density
        are evaluated only on the edges within :data:`_BAND` standard
        deviations of each target's mean rank (a window as wide as the widest
        target of the block needs); beyond it the CDF is 0 or 1 to double
        precision, and the edges above the window add a suffix sum of ``E``.
        The contests are evaluated once per pair of documents, on half the
        ``W^2`` pairs (:func:`_half_pairs`): ``pi_ji = 1 - pi_ij``, the variance
        term and the density are the same for both, and a pair adds opposite
        amounts to the gradients of its two scores.
        """
        B, W = s.shape
        scale = np.sqrt(2.0) * self.sigma
        if B * W * W > NORMAL_PAIR_CELLS:  # long queries: pairs by chunks of targets
            return _normal_chunked(s, weight, D, valid, sizes, scale, NORMAL_CHUNK_CELLS)
        band = _score_band(s, valid, _BAND * scale)
        if band is not None:  # scores spread out: only the pairs not yet decided
            return _normal_banded(weight, D, valid, sizes, scale, *band)
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
        softndcg, a, b = _normal_softndcg(mean, var, weight, D, sizes)
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
        return softndcg, grad


def _score_band(s, valid, reach):
    """A block's documents by descending score, and the widest band of undecided pairs.

    Returns ``(order, t, K)``: ``t = take_along_axis(s, order)`` with the
    documents of every query by descending score (padding last, ``-inf``)
    and ``K`` the most documents that follow one document within ``reach``
    of its score (its undecided pairs); or None where the band is too wide
    for :func:`_normal_banded` to pay (:data:`BAND_MAX_FRACTION`). The real
    documents of a block's row come first (:func:`query_blocks` pads
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


def _normal_banded(weight, D, valid, sizes, scale, order, t, K):
    """:meth:`SoftRankLoss._block_normal` for scores spread out, on a band of pairs.

    ``order, t, K`` from :func:`_score_band`: the documents of every query by
    descending score ``t``, and the most documents within the band of one.
    Each document ``p`` is paired with the ``K`` that follow it, ``y[b, p, c]
    = (t_{p+c+1} - t_p) / scale <= 0``, and ``R = Phi(y)`` is the probability
    that the lower document wins. The pairs beyond (more than
    :data:`_BAND` standard deviations apart, as the ``K`` cover every
    closer pair) are decided to double precision: the higher document wins
    (``R = 0``, no variance, no density), so the ``p`` documents above
    document ``p`` add ``p`` to its mean rank, less ``R`` of every banded
    pair. Otherwise the same sums as the half-pair path, in sorted order;
    the means and variances go back to the rows' order for
    :func:`_normal_softndcg`, and the gradient after it.
    """
    B, W = t.shape
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.subtract(_partners(t, K, fill=-np.inf), t[:, :, None])
        y /= scale
    np.copyto(y, -np.inf, where=~valid[:, :, None])  # padding rows (-inf - -inf)
    RV = _skew_buffer(2 * B, W, K)
    R = ndtr(y, out=RV[:B, K:])
    V = np.subtract(1.0, R, out=RV[B:, K:])
    V *= R
    as_second = _skew_sum(RV, W, wrap=False)
    as_first = RV[:, K:].sum(axis=2)
    mean = np.arange(W, dtype=np.float64) - as_second[:B] + as_first[:B]
    mean[~valid] = 0.0
    unsorted = np.empty((2, B, W))
    np.put_along_axis(unsorted[0], order, mean, axis=1)
    np.put_along_axis(unsorted[1], order, as_second[B:] + as_first[B:], axis=1)
    softndcg, a, b = _normal_softndcg(unsorted[0], unsorted[1], weight, D, sizes)
    a, b = np.take_along_axis(a, order, axis=1), np.take_along_axis(b, order, axis=1)
    # R = pi_(p+c+1),p enters the mean and variance of p (dL/dR: a_p + b_p (1 -
    # 2R)) and 1 - R those of p+c+1 (minus a_q - b_q + 2R b_q); dR/ds = phi(y)
    # / scale for the lower document, minus it for the higher
    with np.errstate(over="ignore"):
        phi = np.square(y, out=y)
    phi *= -0.5
    np.exp(phi, out=phi)
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
    return softndcg, grad


def _normal_softndcg(mean, var, weight, D, sizes):
    """SoftNDCG of a block under the normal approximation, and its adjoints.

    From the mean and variance of every target's rank (``(B, W)``), returns
    the SoftNDCG of each query and ``a = dL/dmean``, ``b = dL/dvar`` of
    ``L = -SoftNDCG`` (see :meth:`SoftRankLoss._block_normal`).
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
    cdf = ndtr(edges)
    above = tail[np.arange(B)[:, None], lo + K]  # edges beyond the window: Phi = 1
    H = np.einsum("bjk,bjk->bj", E_win, cdf) + above
    first_edge = (-0.5 - mean) * inv_sd
    top = (sizes[:, None] - 0.5 - mean) * inv_sd
    total = ndtr(top) - ndtr(first_edge)
    softndcg = (weight * H / total).sum(axis=1)
    # reverse mode of loss = -sum_j w_j H_j / total_j
    c = -weight / total  # dL/dH_j
    c_total = weight * H / (total * total)  # dL/dtotal_j
    density = np.multiply(edges, -0.5 * edges, out=cdf)  # cdf is not needed again
    np.exp(density, out=density)  # phi(e) * sqrt(2 pi)
    F1 = np.einsum("bjk,bjk->bj", E_win, density) / _SQRT_2PI  # sum_r E(r) phi(e_jr)
    density *= edges
    F2 = np.einsum("bjk,bjk->bj", E_win, density) / _SQRT_2PI  # sum_r E(r) phi(e_jr) e_jr
    first = np.exp(-0.5 * first_edge ** 2) / _SQRT_2PI
    d_top = c_total * np.exp(-0.5 * top * top) / _SQRT_2PI
    sum_edge = c * F1 - c_total * first
    sum_edge_e = c * F2 - c_total * first * first_edge
    a = -(sum_edge + d_top) * inv_sd  # dL/dmean_j
    b = -(sum_edge_e + d_top * top) / (2.0 * sd * sd)  # dL/dvar_j
    return softndcg, a, b


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


def _normal_chunked(s, weight, D, valid, sizes, scale, max_cells):
    """:meth:`SoftRankLoss._block_normal` for long queries, by chunks of target documents.

    Each unordered pair ``(j, i)``, ``i > j``, once (as the fast path does,
    with ``pi_ji = 1 - pi_ij``), for the targets ``j`` of one chunk at a time
    (at most ``max_cells`` pairs), in two passes: the means and variances of
    the ranks, then, once their adjoints are known, the gradient. Memory of
    one chunk instead of the fast path's half-pair arrays, for twice its
    evaluations of the normal CDF.
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
    softndcg, a, b = _normal_softndcg(mean, var, weight, D, sizes)
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
    return softndcg, grad


def _partners(x, K, fill=None):
    """``x[b, (i + c + 1) mod W]`` at ``[b, i, c]``, ``c < K``: a view.

    The value of the second document of each pair of :func:`_half_pairs`;
    with a ``fill``, ``x[b, i + c + 1]`` and ``fill`` beyond the last column
    (the pairs of :func:`_normal_banded`).
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
    :func:`_normal_banded`): the first ``K`` rows hold zeros.
    """
    B, _, K = buffer.shape
    if K == 0:
        return np.zeros((B, W))
    buffer[:, :K] = buffer[:, W:] if wrap else 0.0
    st = buffer.strides
    view = np.ndarray((B, W, K), buffer.dtype, buffer, offset=(K - 1) * st[1],
                      strides=(st[0], st[1], st[2] - st[1]))
    return view.sum(axis=2)


def _discount(sizes, width, alpha, truncation):
    """Training discount ``D[b, r]`` for queries of the given sizes (0 beyond a query)."""
    r = np.arange(width, dtype=np.float64)
    u = r / sizes[:, None]
    linear = 1.0 - u
    if alpha >= 0:
        D = alpha / np.log2(2.0 + r) + (1.0 - alpha) * linear
    else:
        D = -alpha * (1.0 - u * u) + (1.0 + alpha) * linear
    D = np.where(r < sizes[:, None], D, 0.0)
    if truncation is not None:
        D[:, truncation:] = 0.0
    return D


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
    (:func:`_segmented_recursion`).

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
        P_flat, back_flat = _segmented_recursion(pi_flat, active, n_ranks, n_segments,
                                                 need_grad)
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


def _segmented_recursion(pi, active, n_ranks, n_segments, need_grad):
    """:func:`_recursion` with the documents cut into segments that run side by side.

    The rank of a target counts the documents that beat it. Cut into
    ``n_segments`` consecutive segments of ``S`` documents, that count is
    the sum of independent counts, one per segment, and its distribution
    the convolution of theirs, which truncated to ``n_ranks`` ranks is exact
    for those ranks. The segments' recursions run as one recursion of ``S``
    steps over ``n_segments`` times as many columns, all of them updated at
    every step (documents a query does not have beat nobody: ``pi`` is 0
    there; their gradient is set to 0 with ``active``, as :func:`_recursion`
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
    P_seg, back_seg = _recursion(pi_seg.reshape(S, m * T), np.full(S, m * T), L, need_grad)
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


def _normalise(P, axis):
    """``P`` divided by its sums along ``axis`` (empty lines stay 0), and the divisors."""
    total = P.sum(axis=axis, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    return P / safe, safe


def _normalise_backward(A, out, safe, axis):
    """The reverse mode of :func:`_normalise`: the adjoint of its input, from its output's."""
    return (A - (A * out).sum(axis=axis, keepdims=True)) / safe
