"""LogRank: conditional log-linear models over rankings (Dubey et al., ICDM 2009)."""

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.special import expit

from ..metrics._ranking import check_relevance_threshold
from ..utils._query_blocks import query_blocks
from ..utils._sklearn_compat import (
    MAX_LENGTH,
    Integer,
    Float,
    RealNumber,
    StrOptions,
    validate_parameter_constraints,
)
from ._base import ListwiseLoss, LossState, RankSamples, query_array, row_array
from ._query_random import _mix, _seed, query_bits, query_uniforms
from ._sizing import _samples_text, sized_by
from ._sampled import (
    LogitForm,
    coefficient_dtype,
    log_softmax_rows,
    logsumexp_rows,
    sample_objective,
)

OBJECTIVES = ("likelihood", "expected_gain", "l3", "convex")


@dataclass(eq=False)
class LogRankState(LossState):
    r"""The state of a :class:`LogRankLoss`: good documents, pair scales, sampled rankings.

    Parameters
    ----------
    layout : QueryLayout
        As :class:`~skrank.losses.LossState`.
    good : ndarray of bool of shape (n_samples,)
        Whether each row's label reaches ``relevance_threshold``, in the
        sorted order of ``layout``.
    scale : ndarray of shape (n_queries,)
        The factor of every query's feature map: :math:`1 / (n^+ n^-)` with
        ``normalize_pairs`` (else 1), 0 for a query without both a good and
        a bad document.
    informative : ndarray of bool of shape (n_queries,)
        Whether a query has both a good and a bad document.
    coef : ndarray of int of shape (n_samples, k) or None, default=None
        The coefficient :math:`c_j(y)` of every row in every sampled ranking
        :math:`y` (its feature map is :math:`\sum_j c_j(y) x_j`). None with
        ``sampler="exact"``, which draws no rankings.
    ranks : ndarray of int of shape (n_samples, k) or None, default=None
        The rank of every row in every sampled ranking (what
        :meth:`rank_samples` returns in row order); None with
        ``sampler="exact"`` or ``store_ranks=False``.
    gains : ndarray of shape (n_queries, k) or None, default=None
        The gain of every sampled ranking; None with ``sampler="exact"``.
    valid : ndarray of bool of shape (n_queries, k) or None, default=None
        Whether a sampled ranking enters the loss (the first of its equals);
        None with ``sampler="exact"``.
    query_weight, cache, prepared_by : keyword only
        As :class:`~skrank.losses.LossState`.
    """

    good: np.ndarray = row_array()
    scale: np.ndarray = query_array()
    informative: np.ndarray = query_array()
    coef: np.ndarray | None = row_array(default=None)
    ranks: np.ndarray | None = row_array(default=None)
    gains: np.ndarray | None = query_array(default=None)
    valid: np.ndarray | None = query_array(default=None)

    def rank_samples(self):
        """The rankings drawn for every query; see :meth:`LossState.rank_samples`."""
        if self.valid is None:  # the exact sums draw no rankings
            return super().rank_samples()
        return RankSamples(
            ranks=None if self.ranks is None else self.layout.to_rows(self.ranks),
            gains=self.gains,
            valid=self.valid,
            informative=self.informative,
        )
GAINS = ("auc", "map", "ndcg")
SAMPLERS = ("auto", "exact", "walk")
RESTARTS = ("two", "graded")

#: Probability that a restart of ``walk_restart="two"`` is the ideal ranking (Fig. 5).
IDEAL_RESTART = 0.9
#: Cells of the ``chains x width`` arrays of one block of random walks (some
#: 120 bytes of temporaries each: 16 MB, whatever the data's size). Larger
#: blocks leave the CPU's cache and smaller ones pay numpy's per-call cost
#: more often (the reproducing page has the timings); the fit's peak memory
#: is later, when the samples are folded (:mod:`skrank._core._folded_objective`).
_WALK_CELLS = 2**17
#: An unused entry of a walk's row of boundaries (past any slot; sorts last).
_NO_BOUNDARY = 2**30
#: The largest float, at which the exact forms saturate score differences beyond it.
_LARGEST = np.finfo(np.float64).max


class LogRankLoss(ListwiseLoss):
    r"""LogRank's objectives: conditional log-linear models over rankings.

    Parameters
    ----------
    objective : {"likelihood", "expected_gain", "l3", "convex"}, default="l3"
        ``"likelihood"``: the negative log-likelihood of the ideal ranking
        (the paper's MLE, eq. 10). ``"expected_gain"``: minus the log of the
        expected gain (the paper's ExpGain, eq. 6-7), not convex. ``"l3"``:
        MLE plus the expected loss :math:`1 - G` (eq. 11-12). ``"convex"``:
        ConvexLoss (eq. 14), the log-sum-exp of the log-probability ratios
        plus the loss. See Notes.
    metric : {"auc", "map", "ndcg"} or "ndcg@<k>", default="ndcg@10"
        The gain :math:`G_q(y)` of a ranking (§1.6): the fraction of
        (good, bad) pairs in order, the average precision, or NDCG, at
        ``k`` with ``"ndcg@<k>"`` (binary gain, :math:`1 / \log_2(1 + r)`
        discount, normalised by the ideal ranking). A ``k`` at least the
        size of the largest query cuts nothing: any larger ``k``, however
        large, is the same (as ``k`` of :func:`~skrank.metrics.ndcg_score`).
        Unused by ``"likelihood"`` except for the graded restarts.
    sampler : {"auto", "exact", "walk"}, default="auto"
        ``"exact"``: the sums over rankings run over the whole relaxed space
        :math:`\{\pm 1\}^{n^+ n^-}` in closed form (for ``metric="auc"`` or
        ``objective="likelihood"`` only). ``"walk"``: over a fixed sample of
        rankings drawn once by the random walk of §4. ``"auto"``: exact
        where a closed form exists, otherwise the walk.
    n_rankings : int, default=101
        Rankings per query in the sample, the ideal one included: the ideal
        ranking :math:`y_q` and ``n_rankings - 1`` states of the walk
        (:math:`|\hat Y_q|`, the paper's 100 by default; a ranking drawn
        twice counts once). The walk's samples take ``n_rankings`` times
        (one or two small integers per row and 9 bytes per query): more
        than an array can hold is a ValueError naming ``n_rankings`` at
        :meth:`prepare`, and more than the memory available (or a failed
        allocation) a MemoryError naming it, before the samples are
        allocated.
    walk_length : int, default=10
        States of each walk: its restart state and those after each of the
        next ``walk_length - 1`` accepted swap transitions, all in the
        sample (``(n_rankings - 1) / walk_length`` walks per query). A walk
        longer than that is cut at ``n_rankings - 1`` states: any
        ``walk_length`` from ``n_rankings - 1`` on gives one walk per query
        and the same sample.
    walk_restart : {"two", "graded"}, default="graded"
        Restart states of the walk. ``"two"``: the ideal ranking (with
        probability 0.9) or the worst one (all bad documents above all good
        ones). ``"graded"``: the good documents as one block below
        :math:`i = 0, \dots, n^-` bad ones, drawn with probability
        :math:`\propto \exp(\kappa \Delta)` (``walk_restart_skew`` :math:`\kappa`).
    walk_restart_skew : float, default=-10.0
        :math:`\kappa \le 0` of ``walk_restart="graded"`` (the paper: -10 to -20
        best, Fig. 6).
    normalize_pairs : bool, default=True
        Divide the feature map by the query's number of pairs
        :math:`n^+ n^-` (eq. 2). The paper drops the factor after
        cross-validation; here it measured better for the sampled models
        (see :class:`~skrank.rankers.LogRankRanker`).
    relevance_threshold : float, default=1
        A document is good when its label is at least this (graded labels
        are thresholded), as for MAP in :mod:`skrank.metrics`. Above every
        label (no document good, nothing to rank) :meth:`prepare` warns (the
        loss is 0; :class:`~skrank.rankers.LogRankRanker` raises a
        ValueError).
    store_ranks : bool, default=True
        Keep the rank of every row in every sampled ranking in the prepared
        state (:meth:`LogRankState.rank_samples`, for inspection). The objective
        needs only the coefficients :math:`c_j(y)`; a ranker's fit passes
        False and saves one small integer per row and sample.

    Notes
    -----
    A query with :math:`n^+` good and :math:`n^-` bad documents has the
    rankings :math:`y \in \{\pm 1\}^{n^+ n^-}`, :math:`y_{gb} = +1` when good
    :math:`g` is above bad :math:`b` (§1.2), with the feature map
    :math:`\phi(x_q, y) = \sum_{g,b} y_{gb} (x_g - x_b)` (eq. 2), divided by
    :math:`n^+ n^-` with ``normalize_pairs``. With scores :math:`s` the model
    is :math:`\Pr(y | x_q) \propto \exp(w \cdot \phi(x_q, y))` (eq. 3),

    .. math:: w \cdot \phi(x_q, y) = \sum_j c_j(y) \, s_j,

    where :math:`c_j(y)` is the number of documents of the other class below
    :math:`j` minus those above it: one integer per document and ranking,
    stored like BoltzRank's ranks (``skrank.losses._sampled``). With
    :math:`\delta\phi_q(y) = \phi(x_q, y_q) - \phi(x_q, y)` (§1.3; §3 prints
    the sign flipped, a typo), :math:`y_q` the ideal ranking and
    :math:`\Delta = 1 - G`, the per-query losses are

    .. math::

       \text{MLE (10)}: & \log \sum_{y'} e^{-w \cdot \delta\phi_q(y')} \\
       \text{ExpGain (6-7)}: & -\log \sum_y \Pr(y | x_q) \, G_q(y) \\
       \text{L3 (12)}: & \text{MLE} + \sum_y \Pr(y | x_q) \, \Delta_q(y) \\
       \text{ConvexLoss (14)}: & \log \sum_{y'} e^{-w \cdot \delta\phi_q(y')
       + \Delta_q(y')}

    and by Jensen's inequality ConvexLoss :math:`\ge` L3 (§3). The loss is
    averaged over queries; a query without a good or without a bad document
    has no pair and contributes 0 (the paper drops it, §5.1.1).

    *Exact sums for AUC* (§2.3). Over the relaxed space
    :math:`\{\pm 1\}^{n^+ n^-}` (which includes bit patterns that are no
    total order) the pair bits are independent, :math:`\Pr(y_{gb} = +1) =
    \sigma(2 d_{gb})` with :math:`d_{gb} = s_g - s_b` (over :math:`n^+ n^-`
    when normalised), so with :math:`N = n^+ n^-`: MLE :math:`= \sum_{gb}
    \log(1 + e^{-2 d_{gb}})` (pairwise logistic), ExpGain-AUC :math:`= -\log
    \frac1N \sum_{gb} \sigma(2 d_{gb})`, L2-AUC :math:`= 1 - \frac1N
    \sum_{gb} \sigma(2 d_{gb})` and ConvexLoss-AUC :math:`= \sum_{gb}
    \log(1 + e^{-2 d_{gb} + 1/N})`. (The paper's printed form counts the
    pairs out of order, :math:`h(-1)`, where the gain needs those in order.)

    *The walk* (§4, Fig. 2). A transition picks a (good, bad) pair at
    random and flips it with probability :math:`\theta = (n^- - n_g + n_b +
    1) / (2 + n^+ + n^-)` if :math:`y_{gb} = +1`, :math:`(n^+ + n_g - n_b +
    1) / (2 + n^+ + n^-)` otherwise (:math:`n_g`: bad documents :math:`g`
    beats, :math:`n_b`: good documents :math:`b` beats), rejecting flips that
    give no total order, until one is accepted. A flip is valid exactly when
    :math:`g` and :math:`b` sit in adjacent runs of the ranking's sequence of
    classes (good run directly above bad run or the reverse), and then the
    flip swaps the two classes at that boundary; :math:`\theta` is the same
    for every pair across a boundary. So the accepted flip falls on a
    boundary with probability :math:`\propto` (length of the run above)
    :math:`\times` (length of the run below) :math:`\times \theta`, and the
    walk runs on the class sequence (kept as its boundaries, the slots where
    the class changes: a swap at one keeps it and toggles its two
    neighbours, so a step costs the number of runs, not of documents); since
    every step treats the documents of a class alike, which document sits in
    which slot of its class is uniformly random given the sequence, and is
    drawn once at the end. Every state of a walk is a sample: its restart
    state, then the state after each of ``walk_length - 1`` accepted
    transitions (a walk of length 1 is its restart alone); walks restart
    until ``n_rankings - 1`` states are drawn.
    (Recording the whole walk, not only its end, gives both parities of the
    number of pairs out of order: each transition changes it by one.) The
    ideal ranking :math:`y_q` is sample 0; a ranking drawn
    twice counts once (it is a set, :math:`\hat Y_q \cup \{y_q\}`). The
    sample is drawn once, when the loss is prepared (§4: resampling would give
    L-BFGS inconsistent objectives). Draws come from
    :func:`skrank.losses.query_uniforms`: they depend only on the seed, the
    query id and the order of its rows.

    *Extreme scores.* The objectives depend on a query's logits only through
    their softmax (a constant per query cancels). Where the logits of a
    sampled query overflow (sums of products of coefficients and scores
    beyond about :math:`10^{308}`; scores of :math:`10^{307}` are computed as
    usual with ``normalize_pairs``), they are recomputed from the scores
    divided by a power of two and shifted by their maximum, exactly; a
    ranking whose gap to the most probable one exceeds the largest float has
    probability 0. The closed forms saturate a pair's difference at the
    largest float. The gradient stays finite for any finite scores; the
    loss is finite, or ``+inf`` when it exceeds the largest float (e.g. the
    ideal ranking at probability 0), never NaN. The mean over queries is
    taken without overflowing where each query's loss is finite.

    References
    ----------
    .. [1] A. Dubey, J. Machchhar, C. Bhattacharyya and S. Chakrabarti,
       "Conditional models for non-smooth ranking loss functions", ICDM 2009,
       pp. 129-138.
    """

    name = "logrank"

    _parameter_constraints = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "metric": [str],
        "sampler": [StrOptions(set(SAMPLERS))],
        "n_rankings": [Integer(2, MAX_LENGTH, closed="both")],
        "walk_length": [Integer(1, None, closed="left")],
        "walk_restart": [StrOptions(set(RESTARTS))],
        "walk_restart_skew": [Float(None, 0, closed="right")],
        "normalize_pairs": ["boolean"],
        "relevance_threshold": [RealNumber()],
    }

    def __init__(
        self,
        objective="l3",
        *,
        metric="ndcg@10",
        sampler="auto",
        n_rankings=101,
        walk_length=10,
        walk_restart="graded",
        walk_restart_skew=-10.0,
        normalize_pairs=True,
        relevance_threshold=1,
        store_ranks=True,
    ):
        params = {
            "objective": objective, "metric": metric, "sampler": sampler,
            "n_rankings": n_rankings, "walk_length": walk_length,
            "walk_restart": walk_restart, "walk_restart_skew": walk_restart_skew,
            "normalize_pairs": normalize_pairs,
            "relevance_threshold": relevance_threshold,
        }
        validate_parameter_constraints(
            {**self._parameter_constraints, "store_ranks": ["boolean"]},
            {**params, "store_ranks": store_ranks}, type(self).__name__)
        check_relevance_threshold(relevance_threshold)
        self.store_ranks = bool(store_ranks)
        self.objective, self.metric = objective, metric
        self._gain, self._k = parse_gain(metric)
        self.n_rankings, self.walk_length = int(n_rankings), int(walk_length)
        self.walk_restart, self.walk_restart_skew = walk_restart, float(walk_restart_skew)
        self.normalize_pairs = bool(normalize_pairs)
        self.relevance_threshold = float(relevance_threshold)
        self.exact = resolve_sampler(sampler, objective, self._gain)
        self.sampler = sampler
        # the walk draws per place in the query (see ListwiseLoss.sampling)
        self.sampling = not self.exact

    # ------------------------------------------------------------------
    def _state_signature(self):
        """What the prepared state depends on: the pairs, and the walk's settings."""
        common = (("relevance_threshold", self.relevance_threshold),
                  ("normalize_pairs", self.normalize_pairs),
                  ("sampler", "exact" if self.exact else "walk"))
        if self.exact:
            return common
        return common + tuple((name, getattr(self, name)) for name in (
            "metric", "n_rankings", "walk_length", "walk_restart", "walk_restart_skew"))

    def _prepare(self, y_sorted, layout, random_state):
        good = y_sorted >= self.relevance_threshold
        if not good.any():
            # the loss is 0 with a zero gradient: say so. LogRankRanker
            # raises here; the loss warns, because it is also
            # prepared on subsets of queries (one query, a fold), where a
            # query without a good document rightly contributes 0
            warnings.warn(
                f"LogRankLoss: relevance_threshold={self.relevance_threshold!r} is above "
                f"every label (largest: {float(y_sorted.max())!r}): no document is good, "
                "so the loss is 0 with a zero gradient. Lower relevance_threshold if the "
                "labels are graded below it.",
                UserWarning,
                stacklevel=3,
            )
        n_pos = layout.sum(good.astype(np.intp))
        n_neg = layout.sizes - n_pos
        informative = (n_pos > 0) & (n_neg > 0)
        n_pairs = (n_pos * n_neg).astype(np.float64)
        scale = np.where(informative, 1.0 / np.maximum(n_pairs, 1.0) if self.normalize_pairs
                         else 1.0, 0.0)
        if self.exact:
            return LogRankState(layout, good=good, scale=scale, informative=informative)
        ranks, coef, gains, valid = walk_samples(
            good, layout, n_pos, n_rankings=self.n_rankings, walk_length=self.walk_length,
            restart=self.walk_restart, restart_skew=self.walk_restart_skew, gain=self._gain,
            k=self._k, random_state=random_state, store_ranks=self.store_ranks,
        )
        return LogRankState(layout, good=good, scale=scale, informative=informative, coef=coef,
                            ranks=ranks, gains=gains, valid=valid)

    def _query_losses_and_grad(self, s_sorted, state):
        if self.exact:
            return self._exact_query_losses_and_grad(s_sorted, state)
        return sample_objective(state.coef, state.scale, s_sorted,
                                state.layout, self._logit_objective(state), state.cache)

    def _logit_form(self, state):
        """The sampled objectives as functions of their logits; None for the exact sums.

        See :meth:`ListwiseLoss.logit_form`. The logits of query ``q`` are
        :math:`w \\cdot \\phi(x_q, y)` of its sampled rankings :math:`y`,
        ``scale[q] * coef_q^T s_q`` (``scale`` is 0 for a query without a
        (good, bad) pair). None when the sums over rankings are the closed
        forms (the ``"exact"`` sampler).
        """
        if self.exact:
            return None
        return LogitForm(state.coef, state.scale, self._logit_objective(state),
                         state.query_weight)

    def _logit_objective(self, state):
        """The per-query objective of the sample logits (see :func:`sample_objective`)."""
        return partial(self._sample_losses, state)

    def _sample_losses(self, state, logits, queries):
        """Losses of the queries ``queries`` and their gradients w.r.t. their logits."""
        objective_name = self.objective
        valid = state.valid[queries]
        informative = state.informative[queries]
        masked = np.where(valid, logits, -np.inf)
        if objective_name == "convex":
            masked = masked + (1.0 - state.gains[queries])
        log_prob, prob = log_softmax_rows(masked)
        if objective_name == "expected_gain":
            # -log E[G] = lse(logits) - lse(logits + log G), in log space
            # (G > 0 for the ideal ranking, sample 0)
            gains = state.gains[queries]
            with np.errstate(divide="ignore"):
                log_gain = np.log(gains)
            weighted = np.where(gains > 0, masked + log_gain, -np.inf)
            _, q = log_softmax_rows(weighted)
            # from the normalised log-probabilities, so that large logit gaps
            # do not cancel the log G part away
            value = -logsumexp_rows(np.where(gains > 0, log_prob + log_gain, -np.inf))
            dlogits = prob - q
        else:
            # MLE and ConvexLoss: minus the log-probability of the ideal
            # ranking (sample 0, Delta = 0) under the (loss-augmented) softmax
            value = -log_prob[:, 0]
            dlogits = prob.copy()
            dlogits[:, 0] -= 1.0
            if objective_name == "l3":
                gains = state.gains[queries]
                mean = np.einsum("qk,qk->q", prob, gains)
                value += 1.0 - mean
                dlogits -= prob * (gains - mean[:, None])
        value = np.where(informative, value, 0.0)
        dlogits[~informative] = 0.0
        return value, dlogits

    def _exact_query_losses_and_grad(self, s_sorted, state):
        """The closed forms over the relaxed space (AUC gain, or MLE)."""
        layout = state.layout
        pairs = state.cache.get("pairs")
        if pairs is None:
            pairs = state.cache["pairs"] = query_pairs(state.good, layout)
        g, b, pair_query, starts = pairs
        n_queries = layout.n_queries
        if len(g) == 0:
            return np.zeros(n_queries), np.zeros(layout.n_samples)
        scale = state.scale[pair_query]
        with np.errstate(over="ignore"):
            d2 = 2.0 * scale * (s_sorted[g] - s_sorted[b])
        if not np.isfinite(d2).all():
            # the difference overflowed before the scale (below 1/2 with
            # normalize_pairs) brought it back: halve both terms first
            with np.errstate(over="ignore"):
                d2 = 4.0 * scale * (0.5 * s_sorted[g] - 0.5 * s_sorted[b])
            np.clip(d2, -_LARGEST, _LARGEST, out=d2)  # beyond the largest float: saturate
        n_pairs = np.bincount(pair_query, minlength=n_queries).astype(np.float64)
        objective = self.objective
        if objective in ("likelihood", "l3", "convex"):
            shift = 1.0 / n_pairs[pair_query] if objective == "convex" else 0.0
            # log(1 + exp(-2d + shift)) and its derivative -sigmoid(-2d + shift)
            z = shift - d2
            per_query = np.bincount(pair_query, np.logaddexp(0.0, z), minlength=n_queries)
            dd2 = -expit(z)
        if objective in ("expected_gain", "l3"):
            p = expit(d2)  # Pr(y_gb = +1)
            dp = p * expit(-d2)  # its derivative w.r.t. 2d
            if objective == "l3":
                mean = np.bincount(pair_query, p, minlength=n_queries) / np.maximum(n_pairs, 1.0)
                per_query += np.where(n_pairs > 0, 1.0 - mean, 0.0)
                dd2 -= dp / n_pairs[pair_query]
            else:
                # -log mean sigmoid(2d), with log sigmoid(2d) = -log(1 + exp(-2d))
                log_p = -np.logaddexp(0.0, -d2)
                nonempty = n_pairs > 0
                top = np.zeros(n_queries)
                top[nonempty] = np.maximum.reduceat(log_p, starts[nonempty])
                weight = np.exp(log_p - top[pair_query])
                total = np.bincount(pair_query, weight, minlength=n_queries)
                log_mean = np.where(nonempty, top + np.log(np.where(nonempty, total, 1.0))
                                    - np.log(np.maximum(n_pairs, 1.0)), 0.0)
                per_query = -log_mean
                # d/d(2d_p) of -log sum sigmoid = -sigmoid'(2d_p) / sum sigmoid
                dd2 = -weight / total[pair_query] * expit(-d2)
        dd = 2.0 * scale * dd2
        grad = (np.bincount(g, dd, minlength=layout.n_samples)
                - np.bincount(b, dd, minlength=layout.n_samples))
        return per_query, grad


def parse_gain(metric):
    """``(gain, k)`` of a ``metric`` parameter: ``"ndcg@10"`` is ``("ndcg", 10)``.

    ``k`` is None (no cut-off) unless the metric is NDCG with ``@<k>``.
    Raises a ValueError naming ``metric`` for anything else.
    """
    name, _, cutoff = metric.strip().lower().partition("@")
    if name in GAINS and not cutoff:
        return name, None
    if name == "ndcg" and cutoff.isascii() and cutoff.isdigit() and int(cutoff) >= 1:
        return name, int(cutoff)
    raise ValueError(
        f"metric must be one of {', '.join(map(repr, GAINS))} or 'ndcg@<k>' with an integer "
        f"k >= 1 (e.g. 'ndcg@10'); got {metric!r}."
    )


def resolve_sampler(sampler, objective, gain):
    """Whether the sums over rankings are the exact closed forms."""
    closed_form = gain == "auc" or objective == "likelihood"
    if sampler == "exact" and not closed_form:
        raise ValueError(
            "sampler='exact' has closed forms for metric='auc' (and objective='likelihood') "
            f"only; got objective={objective!r}, metric={gain!r}. Use sampler='walk' or "
            "'auto'."
        )
    return sampler == "exact" or (sampler == "auto" and closed_form)


def query_pairs(good, layout):
    """Every (good, bad) pair of every query.

    Returns
    -------
    g, b : ndarray of int
        Sorted-order positions of the good and of the bad document of each
        pair, pairs grouped by query.
    pair_query : ndarray of int
        Query number of each pair.
    starts : ndarray of int, shape (n_queries,)
        First pair of each query (its number of pairs later for an empty one).
    """
    good_pos = np.flatnonzero(good)
    bad_pos = np.flatnonzero(~good)
    n_pos = np.bincount(layout.sorted_codes[good_pos], minlength=layout.n_queries)
    n_neg = layout.sizes - n_pos
    counts = n_pos * n_neg
    starts = np.cumsum(counts) - counts
    total = int(counts.sum())
    pair_query = np.repeat(np.arange(layout.n_queries), counts)
    local = np.arange(total) - starts[pair_query]
    width = n_neg[pair_query]
    g = good_pos[(np.cumsum(n_pos) - n_pos)[pair_query] + local // width]
    b = bad_pos[(np.cumsum(n_neg) - n_neg)[pair_query] + local % width]
    return g, b, pair_query, starts


# ----------------------------------------------------------------------
# The random walk of §4 over the class sequences of the rankings
def sequence_gains(bits, n_pos, n_neg, gain, k):
    """The gain of class sequences (1 = good, top first), one per row.

    Parameters
    ----------
    bits : ndarray of shape (n_chains, width)
        Class of each slot; slots past a sequence's length are 0.
    n_pos, n_neg : ndarray of shape (n_chains,)
    gain : {"auc", "map", "ndcg"}
    k : int
        NDCG cut-off.
    """
    bits = bits.astype(bool)
    width = bits.shape[1]
    slot = np.arange(width)
    goods_above = np.cumsum(bits, axis=1) - bits  # goods strictly above each slot
    if gain == "auc":
        bads_below = n_neg[:, None] - (slot - goods_above)
        return _row_sums(np.where(bits, bads_below, 0)) / (n_pos * n_neg)
    if gain == "map":
        return _row_sums(np.where(bits, (goods_above + 1) / (slot + 1.0), 0.0)) / n_pos
    discount = np.where(slot < k, 1.0 / np.log2(slot + 2.0), 0.0)
    ideal = np.cumsum(discount)[np.minimum(n_pos, width) - 1]
    return _row_sums(bits * discount) / ideal


def _row_sums(values):
    """Sums along rows, added in order: the trailing padding (zeros) changes nothing.

    (``sum`` adds pairwise, grouped by the row's length, so a query's gains
    would depend in the last bit on the width of its block.)
    """
    return np.cumsum(values, axis=1)[:, -1]


def restart_gains(n_pos, n_neg, gain, k, width):
    """Gain of the graded restarts: the good block below ``i`` bad documents.

    Returns an array of shape (n_queries, width + 1); column ``i`` is the
    sequence ``B^i G^{n+} B^{n- - i}`` (columns past ``n-`` repeat the last).
    """
    i = np.minimum(np.arange(width + 1)[None, :], n_neg[:, None]).astype(np.float64)
    p, m = n_pos[:, None].astype(np.float64), n_neg[:, None].astype(np.float64)
    if gain == "auc":
        return 1.0 - i / m
    if gain == "map":
        # (1/n+) sum_{r=1}^{n+} r / (i + r) = 1 - (i/n+) (H_{i+n+} - H_i)
        harmonic = np.append(0.0, np.cumsum(1.0 / np.arange(1, 2 * width + 2)))
        top = (i + p).astype(np.intp)
        return 1.0 - i / p * (harmonic[top] - harmonic[i.astype(np.intp)])
    slot = np.arange(2 * width + 2)
    cum = np.append(0.0, np.cumsum(np.where(slot < k, 1.0 / np.log2(slot + 2.0), 0.0)))
    ideal = cum[np.minimum(n_pos, k)][:, None]
    lo, hi = i.astype(np.intp), (i + p).astype(np.intp)
    return (cum[hi] - cum[lo]) / ideal


def walk_samples(good, layout, n_pos, *, n_rankings, walk_length, restart, restart_skew, gain,
                 k, random_state, store_ranks=True):
    """The fixed sample of rankings of every query (see :class:`LogRankLoss`).

    ``good`` marks the good rows (sorted order of ``layout``) and ``n_pos``
    counts them per query.

    Returns
    -------
    ranks : ndarray of int, shape (n_rows, n_rankings), or None
        Rank (1 = top) of every row (sorted order) in every ranking; ranking
        0 is the ideal one (good documents first, in random order). None
        with ``store_ranks=False``.
    coef : ndarray of int, shape (n_rows, n_rankings)
        :math:`c_j(y)`: documents of the other class below minus above.
    gains : ndarray of shape (n_queries, n_rankings)
    valid : ndarray of bool, shape (n_queries, n_rankings)
        False for a ranking equal to an earlier one of its query.
    """
    n_chains = n_rankings
    # a cut-off past the longest query cuts nothing, and a walk longer than
    # the sample is cut at the sample (its draws are those of any longer
    # walk): the same samples and gains, for any k and walk_length
    k = layout.max_size if k is None else min(k, layout.max_size)
    walk_length = min(walk_length, n_rankings - 1)
    random_state = _seed(random_state)  # one seed for every block
    n_neg = layout.sizes - n_pos
    informative = (n_pos > 0) & (n_neg > 0)
    dtype = coefficient_dtype(layout.max_size)
    # the state's bytes per ranking: the coefficients (and ranks) of every
    # row, the gain and validity of every query; named in any error of
    # their size
    per_ranking = (layout.n_samples * dtype.itemsize * (2 if store_ranks else 1)
                   + layout.n_queries * 9)
    with sized_by("n_rankings", n_rankings, per_ranking,
                  _samples_text(layout, per_ranking)):
        return _walk_samples(good, layout, n_pos, n_neg, informative, dtype, n_chains=n_chains,
                             walk_length=walk_length, restart=restart,
                             restart_skew=restart_skew, gain=gain, k=k,
                             random_state=random_state, store_ranks=store_ranks)


def _walk_samples(good, layout, n_pos, n_neg, informative, dtype, *, n_chains, walk_length,
                  restart, restart_skew, gain, k, random_state, store_ranks):
    """:func:`walk_samples` once its parameters are resolved."""
    ranks = np.zeros((layout.n_samples, n_chains), dtype=dtype) if store_ranks else None
    coef = np.zeros((layout.n_samples, n_chains), dtype=dtype)
    gains = np.ones((layout.n_queries, n_chains))
    valid = np.zeros((layout.n_queries, n_chains), dtype=bool)
    valid[:, 0] = True
    blocks = query_blocks(layout, max_cost=_WALK_CELLS, cost=lambda width: width * n_chains)
    for block in blocks:
        queries = block.queries[informative[block.queries]]
        if len(queries) == 0:
            continue
        keep = informative[block.queries]
        slots = block.slots[keep]
        cells = None if block.valid is None else block.valid[keep]
        r, c, g, v = _walk_block(
            good, layout, queries, slots, cells, n_pos[queries], n_neg[queries],
            n_chains=n_chains, walk_length=walk_length, restart=restart,
            restart_skew=restart_skew, gain=gain, k=k, random_state=random_state,
            store_ranks=store_ranks,
        )
        where = slots.ravel() if cells is None else slots[cells]
        if store_ranks:
            ranks[where] = r
        coef[where] = c
        gains[queries], valid[queries] = g, v
    return ranks, coef, gains, valid


def _walk_block(good, layout, queries, slots, cells, n_pos, n_neg, *, n_chains, walk_length,
                restart, restart_skew, gain, k, random_state, store_ranks):
    """The samples of one padded block of queries; results of its real cells (no ranks
    without ``store_ranks``)."""
    n_block, width = slots.shape
    sub = type(layout).from_sizes(layout.sizes[queries], layout.unique_qid[queries])
    sizes = layout.sizes[queries]
    bits = _walk_sequences(sub, sizes, n_pos, n_neg, width, n_chains=n_chains,
                           walk_length=walk_length, restart=restart,
                           restart_skew=restart_skew, gain=gain, k=k,
                           random_state=random_state)
    c_pos, c_neg = np.repeat(n_pos, n_chains), np.repeat(n_neg, n_chains)
    chain_gains = sequence_gains(bits, c_pos, c_neg, gain, k).reshape(n_block, n_chains)
    chain_gains[:, 0] = 1.0
    cell_mask = np.ones((n_block, width), dtype=bool) if cells is None else cells
    rank, row_coef = _place_documents(bits, good, sub, slots, cell_mask, sizes, c_pos, c_neg,
                                      n_chains=n_chains, random_state=random_state,
                                      store_ranks=store_ranks)
    chain_valid = _first_occurrences(row_coef.reshape(n_block, n_chains, width))
    # back to cells: (n_block, width, n_chains), real cells only
    if store_ranks:
        rank = rank.reshape(n_block, n_chains, width).transpose(0, 2, 1)[cell_mask] + 1
    row_coef = row_coef.reshape(n_block, n_chains, width).transpose(0, 2, 1)[cell_mask]
    return rank, row_coef, chain_gains, chain_valid


def _walk_sequences(sub, sizes, n_pos, n_neg, width, *, n_chains, walk_length, restart,
                    restart_skew, gain, k, random_state):
    """Class sequences (1 = good, top first) of the samples, (n_block * n_chains, width).

    Sample 0 of each query is the ideal sequence; the others are the states
    of the walks, each its restart and ``walk_length - 1`` transitions.
    """
    n_block = len(sizes)
    n_walks = -(-(n_chains - 1) // walk_length)
    draws = query_uniforms(sub, random_state, n_walks * walk_length, per_query=True)
    # restart states: the good block below i bad documents
    if restart == "two":
        shift = np.where(draws[:, :n_walks] < IDEAL_RESTART, 0, n_neg[:, None])
    else:
        delta = 1.0 - restart_gains(n_pos, n_neg, gain, k, width)
        logit = restart_skew * delta
        logit[np.arange(width + 1)[None, :] > n_neg[:, None]] = -np.inf
        cdf = np.cumsum(np.exp(logit - logit.max(axis=1, keepdims=True)), axis=1)
        shift = (cdf[:, None, :] <= draws[:, :n_walks, None] * cdf[:, None, -1:]).sum(axis=2)
    # the walk runs on each state's boundaries, the slots t whose class
    # differs from slot t + 1's, kept sorted in a row of `capacity` 32-bit
    # entries (unused ones _NO_BOUNDARY): a transition adds at most two
    walks = n_block * n_walks
    size = np.repeat(sizes, n_walks).astype(np.int32)
    w_pos = np.repeat(n_pos, n_walks).astype(np.int32)
    shift = shift.reshape(walks).astype(np.int32)
    capacity = 2 * walk_length + 2
    bounds = np.full((walks, capacity), _NO_BOUNDARY, dtype=np.int32)
    bad_above = shift > 0  # bads above the good block: a boundary at shift - 1
    bad_below = shift + w_pos < size  # and below it: at shift + n+ - 1
    bounds[:, 0] = np.where(bad_above, shift - 1, np.where(bad_below, shift + w_pos - 1,
                                                           _NO_BOUNDARY))
    bounds[:, 1] = np.where(bad_above & bad_below, shift + w_pos - 1, _NO_BOUNDARY)
    n_bounds = bad_above.astype(np.int32) + bad_below
    top_good = (shift == 0).astype(np.int8)  # the class of slot 0
    # every state of a walk is a sample: its restart, then one per transition
    states = np.empty((walk_length, walks, capacity), dtype=np.int32)
    tops = np.empty((walk_length, walks), dtype=np.int8)
    states[0], tops[0] = bounds, top_good
    step_u = draws[:, n_walks:].reshape(walks, walk_length - 1)
    for step in range(1, walk_length):
        _walk_step(bounds, n_bounds, top_good, w_pos, size, step_u[:, step - 1])
        states[step], tops[step] = bounds, top_good
    # the class sequences: slot 0's class, flipped after each boundary
    flips = np.zeros((walk_length, walks, width + 1), dtype=np.int8)
    present = states < _NO_BOUNDARY
    cell = np.arange(walk_length * walks).reshape(walk_length, walks, 1) * (width + 1)
    flips.reshape(-1)[(cell + states + 1)[present]] = 1
    bits = np.cumsum(flips[:, :, :width], axis=2, dtype=np.int8)
    bits += tops[:, :, None]
    bits &= 1
    bits[:, np.arange(width)[None, :] >= size[:, None]] = 0  # past the query: 0
    states = bits.reshape(walk_length, n_block, n_walks, width).transpose(1, 2, 0, 3)
    slot = np.arange(width)
    ideal = (slot < n_pos[:, None]).astype(np.int8)
    states = states.reshape(n_block, n_walks * walk_length, width)[:, :n_chains - 1]
    return np.concatenate([ideal[:, None, :], states], axis=1).reshape(-1, width)


def _place_documents(bits, good, sub, slots, cell_mask, sizes, c_pos, c_neg, *, n_chains,
                     random_state, store_ranks=True):
    """Slot (0-based rank) and coefficient of every cell in every sample.

    The documents of a class take the class's slots in a random order.
    Returns two arrays of shape (n_block * n_chains, width), columns the
    cells of each query (the slots None without ``store_ranks``).
    """
    chains, width = bits.shape
    n_block = len(sizes)
    slot = np.arange(width)
    # the cells of every chain in a random order within their class (good,
    # then bad, then padding): one unsigned 64-bit key per cell, the class
    # in the top two bits, the high bits of the cell's random draw, its
    # column in the lowest bits, sorted by value (distinct keys)
    place_bits = int(width - 1).bit_length()
    draw = query_bits(sub, random_state, n_chains)  # (cells, n_chains)
    draw >>= np.uint64(2 + place_bits)
    draw <<= np.uint64(place_bits)
    row_good = good[slots[cell_mask]]
    draw |= np.where(row_good, 0, 1).astype(np.uint64)[:, None] << np.uint64(62)
    key = np.full((n_block, width, n_chains), np.uint64(2) << np.uint64(62))
    key[cell_mask] = draw
    del draw
    key |= slot.astype(np.uint64)[None, :, None]
    key = key.transpose(0, 2, 1).reshape(chains, width)
    key.sort(axis=1)
    row_order = (key & np.uint64((1 << place_bits) - 1)).astype(np.intp)
    del key
    # the class's slots top down: a good slot's place among the goods is the
    # goods above it, a bad one's n+ plus the bads above it (padding keeps its own)
    goods_above = np.cumsum(bits, axis=1, dtype=np.intp)
    goods_above -= bits
    place = np.where(bits == 1, goods_above, c_pos[:, None] + slot - goods_above)
    place = np.where(slot[None, :] < np.repeat(sizes, n_chains)[:, None], place, slot)
    slot_order = np.empty((chains, width), dtype=np.intp)
    np.put_along_axis(slot_order, place, np.broadcast_to(slot, place.shape), axis=1)
    rank = None
    if store_ranks:
        rank = np.empty((chains, width), dtype=np.intp)
        np.put_along_axis(rank, row_order, slot_order, axis=1)
    # c_j: documents of the other class below minus those above; the i-th
    # good slot has slot - i bads above, the i-th bad one slot - i goods
    i = slot - np.where(slot < c_pos[:, None], 0, c_pos[:, None])
    sorted_coef = np.where(slot < c_pos[:, None], c_neg[:, None], c_pos[:, None])
    sorted_coef -= 2 * (slot_order - i)
    row_coef = np.empty((chains, width), dtype=np.intp)
    np.put_along_axis(row_coef, row_order, sorted_coef, axis=1)
    row_coef[~np.repeat(cell_mask, n_chains, axis=0)] = 0
    return rank, row_coef


def _first_occurrences(coef):
    """Mask of the samples whose ranking no earlier sample of the query has.

    ``coef`` has shape (n_block, n_chains, width); a ranking is identified by
    its coefficients (they determine every pair's sign), through a 64-bit
    hash.
    """
    weights = _mix(np.arange(coef.shape[2], dtype=np.uint64))
    with np.errstate(over="ignore"):
        hashes = (coef.astype(np.int64).view(np.uint64) * weights).sum(axis=2, dtype=np.uint64)
    order = np.argsort(hashes, axis=1, kind="stable")
    sorted_hashes = np.take_along_axis(hashes, order, axis=1)
    repeat = np.zeros(hashes.shape, dtype=bool)
    repeat[:, 1:] = sorted_hashes[:, 1:] == sorted_hashes[:, :-1]
    first = np.empty_like(repeat)
    np.put_along_axis(first, order, ~repeat, axis=1)
    return first


def _walk_step(bounds, n_bounds, top_good, n_pos, size, u):
    """One accepted transition of every walk, in place on its boundaries (see :class:`LogRankLoss`).

    ``bounds`` (walks x capacity, sorted, unused entries ``_NO_BOUNDARY``)
    holds the slots ``t`` whose class differs from slot ``t + 1``'s,
    ``n_bounds`` their number and ``top_good`` slot 0's class. The swap at
    boundary ``t`` falls with probability proportional to the lengths of the
    runs above and below it times theta; it swaps slots ``t`` and ``t + 1``,
    which keeps ``t`` a boundary and toggles ``t - 1`` and ``t + 1`` (where
    they are inside the query).
    """
    walks, capacity = bounds.shape
    index = np.arange(capacity, dtype=np.int32)
    live = index < n_bounds[:, None]
    previous = np.empty_like(bounds)
    previous[:, 0] = -1
    previous[:, 1:] = bounds[:, :-1]
    following = np.empty_like(bounds)
    following[:, :-1] = bounds[:, 1:]
    following = np.where(index + 1 < n_bounds[:, None], following, size[:, None] - 1)
    above = bounds - previous  # the run that ends at t
    below = following - bounds  # the run that starts at t + 1
    upper = top_good[:, None] ^ (index & 1).astype(np.int8)  # its class
    goods_incl = np.cumsum(np.where(live & (upper == 1), above, 0), axis=1, dtype=np.int32)
    goods_above = goods_incl - upper  # in [0, t)
    goods_below = n_pos[:, None] - goods_incl - (1 - upper)  # in (t + 1, n)
    # theta's numerator: bads above the good and goods below the bad for a
    # good over a bad; goods above the bad and bads below the good otherwise
    bads_above = bounds - goods_above
    bads_below = (size[:, None] - bounds - 2) - goods_below
    theta = np.where(upper == 1, bads_above + goods_below, goods_above + bads_below) + 1
    weight = above.astype(np.float64)  # the product, exact in floats (not in int32)
    weight *= below
    weight *= theta
    weight[~live] = 0.0
    cum = np.cumsum(weight, axis=1)
    chosen = (cum <= (u * cum[:, -1])[:, None]).sum(axis=1)
    rows = np.arange(walks)
    t = bounds[rows, chosen]
    short_above = above[rows, chosen] == 1  # t - 1 is a boundary (or t = 0)
    short_below = below[rows, chosen] == 1  # t + 1 is a boundary (or the last slot)
    # t - 1: removed if a boundary, added if inside the query
    drop_left = short_above & (chosen > 0)
    bounds[rows[drop_left], chosen[drop_left] - 1] = _NO_BOUNDARY
    add_left = ~short_above
    # t + 1: likewise
    drop_right = short_below & (chosen + 1 < n_bounds)
    bounds[rows[drop_right], chosen[drop_right] + 1] = _NO_BOUNDARY
    add_right = ~short_below
    free = n_bounds  # the first unused entries, past the last boundary
    bounds[rows[add_left], free[add_left]] = t[add_left] - 1
    second = free + add_left
    bounds[rows[add_right], second[add_right]] = t[add_right] + 1
    bounds.sort(axis=1)
    n_bounds += add_left.astype(np.int32) + add_right - drop_left - drop_right
    top_good ^= (t == 0).astype(np.int8)
