"""BoltzRank's expected gain over fixed rank samples (Volkovs and Zemel, ICML 2009)."""

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..metrics._ranking import (
    METRICS,
    check_takes_average,
    ndcg_of_rankings,
    ndcg_score,
    parse_metric_name,
)
from ..utils._query_blocks import query_blocks
from ..utils._sklearn_compat import (
    MAX_LENGTH,
    Float,
    Integer,
    StrOptions,
    validate_parameter_constraints,
)
from ._base import ListwiseLoss, LossState, RankSamples, query_array, row_array
from ._query_random import _seed, query_bits, query_uniforms
from ._sizing import _samples_text, sized_by
from ._sampled import (
    SETUP_CELLS,
    LogitForm,
    coefficient_dtype,
    cross_entropy,
    expected_gain,
    log_softmax_rows,
    sample_logits,
    sample_objective,
)

OBJECTIVES = ("expected_gain", "likelihood")


@dataclass(eq=False)
class BoltzRankState(LossState):
    """The state of a :class:`BoltzRankLoss`: the rank samples of every query.

    Parameters
    ----------
    layout : QueryLayout
        As :class:`~skrank.losses.LossState`.
    ranks : ndarray of int of shape (n_samples, k)
        The rank (1 is the top) of every row in every sampled ranking of its
        query, in the sorted order of ``layout``; ranking 0 sorts by label.
    scale : ndarray of shape (n_queries,)
        The factor of every query's logits :math:`-E(R|S)` in the ranks,
        :math:`-4 / (m - 1)^2` (0 for a single-document query).
    informative : ndarray of bool of shape (n_queries,)
        Whether a query has documents of different labels.
    target : ndarray of shape (n_queries, k)
        The target distribution over every query's samples: the tempered
        Boltzmann probabilities of the labels' energies, or all the mass on
        the ideal ranking for ``objective="likelihood"``.
    gains : ndarray of shape (n_queries, k) or None, default=None
        The metric's gain of every sampled ranking; None for
        ``objective="likelihood"``.
    query_weight, cache, prepared_by : keyword only
        As :class:`~skrank.losses.LossState`.
    """

    ranks: np.ndarray = row_array()
    scale: np.ndarray = query_array()
    informative: np.ndarray = query_array()
    target: np.ndarray = query_array()
    gains: np.ndarray | None = query_array(default=None)

    def rank_samples(self):
        """The rankings drawn for every query; see :meth:`LossState.rank_samples`."""
        return RankSamples(
            ranks=self.layout.to_rows(self.ranks),
            gains=self.gains,
            valid=np.ones((self.layout.n_queries, self.ranks.shape[1]), dtype=bool),
            informative=self.informative,
        )

# Shares of the perturbation kinds of the rank samples (§4.2): swap the top two
# label levels, swap a lower pair of adjacent levels, swap two levels at least
# two apart, or a random permutation of the query.
_TOP_PAIR, _LOWER_ADJACENT, _DISTANT_PAIR = 0.35, 0.20, 0.225


class BoltzRankLoss(ListwiseLoss):
    r"""Minus BoltzRank's objective: expected gain and cross entropy over rank samples.

    Parameters
    ----------
    n_rankings : int, default=100
        Rankings per query in the sample, the label-sorted one included (it
        is the first), drawn once when the loss is prepared and never
        resampled. The samples take ``n_rankings`` times (a small
        integer per row, and 8 bytes per query, 16 with
        ``objective="expected_gain"``): more than an array can hold is a
        ValueError naming ``n_rankings`` at :meth:`prepare`, and more than
        the memory available (or a failed allocation) a MemoryError naming
        it, before the samples are allocated.
    gain_weight : float, default=0.9
        :math:`\lambda` in the paper (eq. 15): weight of the expected gain
        against the cross entropy to the target distribution, in [0, 1].
        Unused with ``objective="likelihood"``.
    objective : {"expected_gain", "likelihood"}, default="expected_gain"
        ``"expected_gain"``: the paper's objective (eq. 15),
        :math:`\lambda` times the expected gain minus :math:`1 - \lambda`
        times the cross entropy between :math:`P(R|L)` and :math:`P(R|S)`.
        ``"likelihood"``: the negative log-probability of the label-sorted
        sample under :math:`P(R|S)` (Liu, §4.3).
    metric : str, callable or RankingScorer, default="ndcg@10"
        The gain :math:`G(R, L)` of each sample: a metric name with an
        optional ``@<k>``, e.g. ``"ndcg@10"``, ``"ndcg"`` or ``"map"``, with
        :mod:`skrank.metrics`' default conventions; a metric function
        ``f(y_true, y_score, *, qid, average)`` returning one value per query
        with ``average=False``, such as ``functools.partial(ndcg_score, k=10,
        gain="linear")``; or a :class:`~skrank.metrics.RankingScorer`, whose
        metric is used. Computed once, when the loss is prepared; any finite
        value is a gain, and a NaN or infinite one for a sample of a query
        with documents of different labels is a ValueError naming
        ``metric``.
    target_temperature : float, default=1.0
        Temperature :math:`T` of the target distribution,
        :math:`P(R|L) \propto \exp(-E(R|L)/T)`; 1 is the paper's formula.
        Below 1 the target concentrates on the samples closest to the
        label-sorted ranking.

    Notes
    -----
    The energy of a ranking :math:`R` (ranks :math:`r_j`, 1 at the top) of
    the :math:`m` documents of a query with scores :math:`s` is (eq. 4-5,
    with :math:`g(x) = 2x/(m-1)`, §4.2)

    .. math:: E(R|S) = \frac{2}{m(m-1)} \sum_{r_j > r_k} g(r_j - r_k)(s_j - s_k)
              = \frac{2}{(m-1)^2} \sum_j s_j (2 r_j - m - 1),

    since every unordered pair appears once and :math:`(r_j - r_k)(s_j -
    s_k)` is symmetric: the energy is linear in the scores, one coefficient
    per document, and the energies of :math:`k` samples cost :math:`O(km)`.
    (With :math:`g(x) = c \, \mathrm{sign}(x)` the energy is the same up to a
    constant factor, so that choice is not offered.) Over the fixed sample
    :math:`\mathcal{R}_q` of a query,
    :math:`P(R|S) = \exp(-E(R|S)) / \sum_{R' \in \mathcal{R}_q}
    \exp(-E(R'|S))` (eq. 12), and the target :math:`P(R|L)` is the same
    formula with the labels in place of the scores (eq. 14), divided by
    ``target_temperature``. The loss of a query is minus the paper's
    objective (eq. 11, 14, 15),

    .. math:: L_q = -\lambda \sum_{R} P(R|S) \, G(R, L)
              - (1 - \lambda) \sum_{R} P(R|L) \log P(R|S),

    and the loss is averaged over queries. Its gradient with respect to the
    energies is :math:`\lambda P(R|S)(G(R) - \bar G) + (1 - \lambda)(P(R|L) -
    P(R|S))`, and with respect to the scores the transposed coefficient
    product. The part of the energy that is the same for every sample,
    :math:`-(m+1)\sum_j s_j \cdot 2/(m-1)^2`, cancels in the softmax, so only
    the ranks are stored (``(n_rows, k)`` integers in the smallest dtype
    that holds :math:`m`: int16 up to 32,767 documents). A query whose labels
    are all equal gives every sample the same gain and target: it
    contributes 0.

    *Extreme scores.* The loss depends on a query's energies only through
    their softmax, so a constant per query cancels. Where the energies of a
    query overflow (sums of :math:`m` products of ranks and scores beyond
    about :math:`10^{308}`; measured on queries of 5 documents, scores up to
    :math:`10^{307}` are computed as usual), they are recomputed from the
    scores divided by a power of two and shifted by their maximum, which is
    exact: a sample's probability is then 0 where its gap to the most
    probable one exceeds the largest float. The gradient stays finite for
    any finite scores; the loss is finite, or ``+inf`` when a sample of
    positive target weight has probability 0 (the cross entropy exceeds the
    largest float), never NaN. Huge labels or a tiny ``target_temperature``
    are handled the same way when the target is computed.

    **Rank samples** (§4.2). The first sample sorts the documents by label,
    ties broken at random. Each of the others perturbs the labels, then sorts
    by them, ties at random. With the distinct label levels
    :math:`\ell_0 < \dots < \ell_{L-1}` of the query, a sample swaps the
    levels of a random subset of the documents of two levels :math:`a, b`
    (each document of level :math:`a` or :math:`b` flips, with a probability
    drawn uniformly per sample): with probability 0.35 the top two levels;
    0.20 two adjacent lower levels (:math:`\ell_{j+1}, \ell_j` with
    :math:`j < L - 2` uniform); 0.225 two levels at least two apart
    (:math:`\ell_b` uniform among :math:`b \le L - 3`, then :math:`\ell_a`
    uniform above :math:`\ell_{b+1}`); otherwise (0.225) a uniformly random
    permutation of the query. For labels {0, 1, 2} this is the paper's mix
    (35% swap 2 and 1, 20% swap 1 and 0, the rest swap 2 and 0 or permute at
    random, split evenly); with two levels every swap is of those two; with
    five, most swaps still change the top of the ranking least. The draws
    depend only on the seed, the query's id and its rows' order
    (:func:`skrank.losses.query_uniforms`).

    References
    ----------
    .. [1] M. N. Volkovs and R. S. Zemel, "BoltzRank: learning to maximize
       expected ranking gain", ICML 2009, pp. 1089-1096.
    .. [2] T.-Y. Liu, "Learning to Rank for Information Retrieval",
       Springer 2011, §4.3.
    """

    name = "boltzrank"
    sampling = True
    _state_parameters = ("n_rankings", "objective", "metric", "target_temperature")

    _parameter_constraints = {
        "n_rankings": [Integer(2, MAX_LENGTH, closed="both")],
        "gain_weight": [Float(0, 1, closed="both")],
        "objective": [StrOptions(set(OBJECTIVES))],
        "metric": [str, callable],
        "target_temperature": [Float(0, None, closed="neither")],
    }

    def __init__(
        self,
        n_rankings=100,
        *,
        gain_weight=0.9,
        objective="expected_gain",
        metric="ndcg@10",
        target_temperature=1.0,
    ):
        params = {
            "n_rankings": n_rankings, "gain_weight": gain_weight, "objective": objective,
            "metric": metric, "target_temperature": target_temperature,
        }
        validate_parameter_constraints(self._parameter_constraints, params, type(self).__name__)
        self.n_rankings = int(n_rankings)
        self.gain_weight = float(gain_weight)
        self.objective = objective
        self.metric = metric
        self.target_temperature = float(target_temperature)
        self._metric_function = metric_function(metric)

    # ------------------------------------------------------------------
    @staticmethod
    def energy(scores, ranks):
        """The energy :math:`E(R|S)` of rankings of one query, with every term.

        Parameters
        ----------
        scores : array-like of shape (m,)
            Scores (or labels) of the query's documents.
        ranks : array-like of int, shape (m,) or (m, k)
            Rank of each document (1 is the top) in one or ``k`` rankings.

        Returns
        -------
        energy : float or ndarray of shape (k,)
        """
        scores = np.asarray(scores, dtype=np.float64)
        ranks = np.asarray(ranks, dtype=np.float64)
        m = scores.shape[0]
        if m < 2:
            return np.zeros(ranks.shape[1:]) if ranks.ndim > 1 else 0.0
        return (2.0 * ranks - m - 1).T @ scores * (2.0 / (m - 1) ** 2)

    def probabilities(self, scores, state):
        """:math:`P(R|S)` of the samples of every query, shape (n_queries, k).

        Parameters
        ----------
        scores : array-like of shape (n_rows,)
            Scores of all the rows of ``state.layout``, in its row order.
        state : BoltzRankState
            From :meth:`prepare`: the rank samples of every query.

        Returns
        -------
        probabilities : ndarray of shape (n_queries, n_rankings)
            The Boltzmann probability of each query's samples (rows sum to 1).
        """
        self.check_state(state)
        s_sorted = state.layout.to_sorted(np.asarray(scores, dtype=np.float64))
        logits = sample_logits(state.ranks, state.scale, s_sorted, state.layout)
        return log_softmax_rows(logits)[1]

    # ------------------------------------------------------------------
    def _prepare(self, y_sorted, layout, random_state):
        # one seed for every chunk: a query's draws depend only on it, the
        # query's id and its rows' order (query_uniforms)
        seed = _seed(random_state)
        k = self.n_rankings
        m = layout.sizes.astype(np.float64)
        # E(R|S) = -scale * ranks . s + (a term equal for every sample), so the
        # log-probability's logits are scale * ranks . s with scale = 4/(m-1)^2.
        scale = np.where(m > 1, -4.0 / np.maximum(m - 1.0, 1.0) ** 2, 0.0)
        informative = layout.max(y_sorted) > layout.min(y_sorted)
        dtype = coefficient_dtype(layout.max_size)
        likelihood = self.objective == "likelihood"
        # the state's bytes per ranking: the ranks of every row, the target
        # (and gains) of every query; named in any error of their size
        per_ranking = (layout.n_samples * dtype.itemsize
                       + layout.n_queries * 8 * (1 if likelihood else 2))
        with sized_by("n_rankings", k, per_ranking,
                      _samples_text(layout, per_ranking)):
            ranks, target, gains = self._draw(y_sorted, layout, seed, scale, dtype)
        if gains is not None:
            _check_finite_gains(gains, informative, layout, self.metric)
        return BoltzRankState(layout, ranks=ranks, scale=scale, informative=informative,
                              target=target, gains=gains)

    def _draw(self, y_sorted, layout, seed, scale, dtype):
        """The ranks, targets and gains (None for the likelihood) of every query."""
        k = self.n_rankings
        ranks = np.empty((layout.n_samples, k), dtype=dtype)
        likelihood = self.objective == "likelihood"
        target = np.zeros((layout.n_queries, k))
        gains = None
        if likelihood:
            target[:, 0] = 1.0
        else:
            gains = np.empty((layout.n_queries, k))
        # in chunks of queries, so that the temporaries of the draws and of
        # the gains stay within SETUP_CELLS cells whatever the data's size
        for lo, hi in layout.ranges(SETUP_CELLS // k):
            rows, part = slice(layout.offsets[lo], layout.offsets[hi]), layout.part(lo, hi)
            y_part = y_sorted[rows]
            part_ranks, order = _samples(y_part, part, k, seed, out=ranks[rows])
            if not likelihood:
                label_logits = sample_logits(part_ranks, scale[lo:hi], y_part, part)
                with np.errstate(over="ignore"):
                    tempered = label_logits / self.target_temperature
                if not np.isfinite(tempered).all():  # huge labels or a tiny temperature
                    label_logits -= label_logits.max(axis=1, keepdims=True)
                    with np.errstate(over="ignore"):
                        tempered = label_logits / self.target_temperature
                target[lo:hi] = log_softmax_rows(tempered)[1]
                gains[lo:hi] = sample_gains(y_part, order, part, self._metric_function,
                                            self.metric)
        return ranks, target, gains

    def _query_losses_and_grad(self, s_sorted, state):
        return sample_objective(state.ranks, state.scale, s_sorted,
                                state.layout, self._logit_objective(state), state.cache)

    def _logit_form(self, state):
        """The loss as a function of the samples' logits :math:`-E(R|S)`.

        See :meth:`ListwiseLoss.logit_form`: the logits of query ``q`` are
        ``scale[q] * ranks_q^T s_q`` (the part of the energy common to every
        sample dropped).
        """
        return LogitForm(state.ranks, state.scale, self._logit_objective(state),
                         state.query_weight)

    def _logit_objective(self, state):
        """The per-query objective of the sample logits (see :func:`sample_objective`)."""
        return partial(self._sample_losses, state)

    def _sample_losses(self, state, logits, queries):
        """Losses of the queries ``queries`` and their gradients w.r.t. their logits."""
        weight = 0.0 if self.objective == "likelihood" else self.gain_weight
        log_prob, prob = log_softmax_rows(logits)
        if weight < 1:
            value, dlogits = cross_entropy(log_prob, prob, state.target[queries])
        if weight > 0:
            gain, dgain = expected_gain(prob, state.gains[queries])
            if weight < 1:
                value = (1.0 - weight) * value - weight * gain
                dlogits *= 1.0 - weight
                dlogits -= weight * dgain
            else:  # (no cross entropy: 0 times an infinite one would be NaN)
                value, dlogits = -gain, -dgain
        keep = state.informative[queries]
        if not keep.all():
            value = np.where(keep, value, 0.0)
            dlogits[~keep] = 0.0
        return value, dlogits


def metric_function(metric):
    """The function ``f(y_true, y_score, *, qid, average)`` of a ``metric`` parameter.

    A name such as ``"ndcg@10"`` becomes a :func:`functools.partial` of the
    metric with its ``k``; a :class:`~skrank.metrics.RankingScorer` gives
    its metric; a callable is used as it is. A ValueError names ``metric``,
    and a TypeError a callable (or a scorer's) that takes no ``average``.
    """
    if isinstance(metric, str):
        try:
            name, k = parse_metric_name(metric)
        except ValueError as exc:
            raise ValueError(
                f"metric must be a ranking metric name such as 'ndcg@10' or 'map', a "
                f"metric function or a RankingScorer; got {metric!r} ({exc})"
            ) from None
        return partial(METRICS[name], k=k)
    # a RankingScorer (known by its method, so that the losses need not
    # import the scorers)
    as_function = getattr(metric, "_metric_function", None)
    if as_function is not None:
        return as_function()
    name = getattr(metric, "__name__", repr(metric))
    check_takes_average(metric, name, f"metric={name} of BoltzRankLoss (the gain of "
                                      "each sampled ranking, per query)")
    return metric


def _ndcg_keywords(function):
    """The keywords of ``function`` when it is NDCG (a partial of it, or itself), else None."""
    if function is ndcg_score:
        return {}
    if isinstance(function, partial) and function.func is ndcg_score and not function.args:
        return function.keywords
    return None


def sample_gains(y_sorted, order, layout, function, metric):
    """The metric of every sampled ranking of every query, shape (n_queries, k).

    ``order[s, p]`` is the row at place ``p`` of sample ``s`` (see
    :func:`boltzrank_samples`). NDCG is computed from each sample's top
    places (:func:`~skrank.metrics._ranking.ndcg_of_rankings`); any other
    metric ``function`` scores each (query, sample) as a query of its own,
    with scores ``-rank`` (no ties). ``metric`` is the parameter, for
    messages.
    """
    keywords = _ndcg_keywords(function)
    if keywords is not None:
        try:
            return ndcg_of_rankings(y_sorted, order, layout, **keywords)
        except ValueError as exc:
            raise _cannot_score(metric, exc) from None
    k = order.shape[0]
    # cells in (sample, query, rank) order: the pseudo-queries come sorted and
    # each one's labels ranked, so the metric neither groups nor sorts
    pseudo = (np.arange(k)[:, None] * layout.n_queries + layout.sorted_codes[None, :]).ravel()
    labels = y_sorted[order].ravel()
    scores = np.broadcast_to(-layout.index_in_query.astype(np.float64), order.shape).ravel()
    try:
        values = function(labels, scores, qid=pseudo, average=False)
    except ValueError as exc:
        raise _cannot_score(metric, exc) from None
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (k * layout.n_queries,):
        raise ValueError(
            f"metric={metric!r} must return one value per query with average=False; got "
            f"an array of shape {values.shape} for {k * layout.n_queries} queries."
        )
    return values.reshape(k, layout.n_queries).T.copy()


def _check_finite_gains(gains, informative, layout, metric):
    """Refuse a metric that gave NaN or infinite gains to samples of a query that counts.

    A NaN gain would make the loss and its gradient NaN without a word, and
    a ranker's fit would then blame its step size. Any finite gain is fine;
    the gains of a query whose labels are all equal are never used (it
    contributes 0), so they may be anything (``no_relevant="skip"`` makes
    them NaN).
    """
    bad = ~np.isfinite(gains)
    bad &= informative[:, None]
    if not bad.any():
        return
    queries = np.flatnonzero(bad.any(axis=1))
    first = queries[0]
    values = gains[first][bad[first]]
    raise ValueError(
        f"metric={metric!r} returned NaN or infinite values for {int(bad.sum())} of "
        f"{bad.size} (query, sample) pairs, in {len(queries)} of {layout.n_queries} "
        f"queries (the first: qid={layout.unique_qid[first].item()!r}, e.g. "
        f"{float(values[0])!r}). The gains of BoltzRank's samples must be finite: pass "
        "a metric that gives every ranking of a query with documents of different "
        "labels a finite value."
    )


def _key_bits(n_queries, n_levels, max_size):
    """Bits of the sort key of :func:`boltzrank_samples` below the query's number.

    Returns ``(level_bits, tie_bits, place_bits)``: the query number takes
    the highest bits, then the level, the random tie-break and the row's
    place in its query. The tie-break has 32 random bits unless the other
    three need more than 32 between them (then fewer); row order breaks the
    ties that remain.
    """
    place_bits = int(max_size - 1).bit_length()
    level_bits = int(n_levels - 1).bit_length()
    query_bits_ = int(max(n_queries - 1, 0)).bit_length()
    tie_bits = max(0, min(32, 64 - place_bits - level_bits - query_bits_))
    return level_bits, tie_bits, place_bits


def _sort_within_queries(key, layout):
    """Sort ``key`` (samples x rows, rows grouped by query) along each query's rows, in place.

    The keys carry the query's number in their highest bits, so this is
    ``key.sort(axis=1)``; it sorts each query's span on its own, in padded
    blocks of queries of similar sizes (the padding sorts last), because
    sorting many short rows is several times faster than a few long ones
    (NumPy sorts rows of up to 256 keys with SIMD sorting networks; the
    figures are on the reproducing page).
    """
    top = np.iinfo(np.uint64).max
    for block in query_blocks(layout):
        cells = key[:, block.slots]  # (samples, queries, width)
        if block.valid is None:
            cells.sort(axis=2)
            key[:, block.slots] = cells
        else:
            cells[:, ~block.valid] = top
            cells.sort(axis=2)
            key[:, block.slots[block.valid]] = cells[:, block.valid]


def _cannot_score(metric, exc):
    return ValueError(
        f"metric={metric!r} cannot score the labels y: {exc} Pass a metric with "
        "suitable conventions, e.g. make_ranking_scorer('ndcg', k=10, gain='linear')."
    )


def label_levels(y_sorted, layout):
    """Dense rank of each label among its query's distinct labels, and their count.

    Returns
    -------
    level : ndarray of int, shape (n_rows,)
        0 for the query's lowest label, ..., sorted order of ``layout``.
    n_levels : ndarray of int, shape (n_queries,)
    """
    codes = layout.sorted_codes
    order = np.lexsort((y_sorted, codes))
    y, c = y_sorted[order], codes[order]
    new = np.ones(len(y), dtype=bool)
    new[1:] = (y[1:] != y[:-1]) | (c[1:] != c[:-1])
    dense = np.cumsum(new) - 1
    level = np.empty(len(y), dtype=np.intp)
    level[order] = dense - np.repeat(dense[layout.starts], layout.sizes)
    return level, layout.max(level) + 1


def boltzrank_samples(y_sorted, layout, n_rankings, random_state):
    """Ranks of the §4.2 rank samples of every query (see :class:`BoltzRankLoss`).

    Returns
    -------
    ranks : ndarray of shape (n_rows, n_rankings)
        Rank (1 = top) of every row (sorted order) in every sample, in the
        smallest integer dtype that holds the largest query's size.
    """
    return _samples(y_sorted, layout, n_rankings, random_state)[0]


def _samples(y_sorted, layout, n_rankings, random_state, out=None):
    """:func:`boltzrank_samples`, written to ``out`` if given, and the samples' order.

    Also returns ``order`` of shape (n_rankings, n_rows): ``order[s,
    p]`` is the row at place ``p`` of sample ``s``, the places of each query
    (its rows' span in sorted order) from the top down.
    """
    k = n_rankings
    level, n_levels = label_levels(y_sorted, layout)
    per_query = query_uniforms(layout, random_state, 3 * k, per_query=True)
    kind, pick, share = per_query[:, :k], per_query[:, k:2 * k], per_query[:, 2 * k:]

    top = (n_levels - 1)[:, None]
    lower = np.maximum(n_levels - 2, 1)[:, None]  # choices j in 0..L-3 (>= 1 to stay defined)
    # level pair (a, b) and flip probability of every (query, sample)
    j = np.minimum((pick * lower).astype(np.intp), lower - 1)
    a = np.broadcast_to(top, kind.shape).copy()
    b = a - 1
    three = (n_levels >= 3)[:, None]
    adjacent = three & (kind >= _TOP_PAIR) & (kind < _TOP_PAIR + _LOWER_ADJACENT)
    a[adjacent], b[adjacent] = j[adjacent] + 1, j[adjacent]
    distant = three & (kind >= _TOP_PAIR + _LOWER_ADJACENT) & (
        kind < _TOP_PAIR + _LOWER_ADJACENT + _DISTANT_PAIR)
    # b uniform in 0..L-3 (j), then a uniform in b+2..L-1, drawn from the same
    # uniform's remainder so that both stay per (query, sample)
    span = top - 1 - j  # number of choices b+2..L-1
    frac = pick * lower - j
    up = j + 2 + np.minimum((frac * span).astype(np.intp), span - 1)
    a[distant], b[distant] = up[distant], j[distant]
    permute = kind >= _TOP_PAIR + _LOWER_ADJACENT + _DISTANT_PAIR
    flip = np.broadcast_to(share, kind.shape).copy()
    flip[:, 0] = 0.0  # the label-sorted sample
    flip[n_levels < 2] = 0.0  # one level: nothing to swap (ties are broken at random)
    permute[:, 0] = False

    # every (sample, row) cell from here on, a sample per row of the arrays:
    # one 64-bit hash per cell, its high half draws the flip (below flip *
    # 2**32), its low half breaks the ties
    bits = query_bits(layout, random_state, k, draws_first=True)
    codes = layout.sorted_codes

    def per_cell(values):  # (n_queries, k) -> (k, n_rows)
        return np.repeat(values.T, layout.sizes, axis=1)  # rows grouped by query

    # u < flip for u = high / 2**32 is high < ceil(flip * 2**32), that is bits
    # < ceil(flip * 2**32) * 2**32 (flip < 1; where flip > 1 - 2**-32 the
    # threshold stops at 2**64 - 2**32, which misses the one high half 2**32 - 1)
    threshold = np.minimum(np.ceil(flip * 2.0**32), 2.0**32 - 1).astype(np.uint64)
    flips = bits < per_cell(threshold << np.uint64(32))
    width = int(n_levels.max()) + 1
    level_dtype = coefficient_dtype(width)
    a_cells, b_cells = per_cell(a.astype(level_dtype)), per_cell(b.astype(level_dtype))
    level = level.astype(level_dtype)[None, :]
    new = np.where(flips & (level == a_cells), b_cells, level)
    np.copyto(new, a_cells, where=flips & (level == b_cells))
    new[per_cell(permute)] = 0
    del flips, a_cells, b_cells

    # sort every sample by (query, level descending, 32 random bits, row
    # order): one unsigned 64-bit key per cell, distinct, with the row's
    # place in its query in the lowest bits, so that the sorted keys say
    # which row takes each rank (the values' sort, faster than an argsort)
    level_bits, tie_bits, place_bits = _key_bits(layout.n_queries, width, layout.max_size)
    index = layout.index_in_query.astype(np.uint64)
    key = (width - 1 - new).astype(np.uint64)
    del new
    key <<= np.uint64(tie_bits + place_bits)
    key |= ((codes.astype(np.uint64) << np.uint64(level_bits + tie_bits + place_bits))
            | index)[None, :]
    if tie_bits:  # the low half's top tie_bits bits, just above the row's place
        bits <<= np.uint64(32)
        bits >>= np.uint64(64 - tie_bits)
        bits <<= np.uint64(place_bits)
        key |= bits
    del bits
    _sort_within_queries(key, layout)
    # the cell at sorted position p holds rank index_in_query[p] + 1 of its
    # query; its row is the query's first row plus the key's lowest bits
    first = (np.arange(layout.n_samples, dtype=np.uint64) - index)[None, :]
    key &= np.uint64((1 << place_bits) - 1)
    key += first
    order = key.view(np.int64)
    dtype = coefficient_dtype(layout.max_size)
    shape = (layout.n_samples, k)
    ranks = out if out is not None and out.flags.c_contiguous else np.empty(shape, dtype=dtype)
    # row order[s, p] has rank place[p] in sample s: one scatter into the
    # rows x samples array, at flat index order[s, p] * k + s (no transpose)
    place = (layout.index_in_query + 1).astype(dtype)
    flat = order * k
    flat += np.arange(k)[:, None]
    ranks.reshape(-1)[flat] = place
    if out is not None and ranks is not out:
        out[...] = ranks
    return (ranks if out is None else out), order
