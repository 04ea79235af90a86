"""Ranking metrics evaluated per query, vectorised across queries.

All metrics share one pipeline: rows are ranked inside their query by
descending score (:func:`skrank.metrics._query_ranking.rank_order`), ties
are resolved by the ``ties`` convention, and per-rank contributions are
summed per query with ``np.add.reduceat``. There is no Python loop over
queries (the rankings and the ideal orderings are sorted in the padded
blocks of :func:`skrank.utils._query_blocks.query_blocks`, one sort per
block).
"""

import inspect
import re
import sys
from types import MappingProxyType

import numpy as np

from ..utils._query_blocks import cumprod_before, query_blocks
from ..utils._qid import resolve_qid
from ..utils._query_layout import QueryLayout
from ..utils._sklearn_compat import Float, Integer, RealNumber, StrOptions, validate_params
from ..utils._validation import check_numeric, query_weights, shortened_repr
from ._query_ranking import rank_order, sorted_blocks, tie_runs

__all__ = [
    "CONVENTIONS",
    "average_precision_score",
    "dcg_score",
    "err_score",
    "map_score",
    "mrr_score",
    "ndcg_score",
    "precision_at_k",
    "recall_at_k",
]

# The bundles as written; published read-only as CONVENTIONS.
_PRESETS = {
    # skrank's default: the common NDCG of Jarvelin & Kekalainen / Burges et
    # al. with expected values over random tie-breaking.
    "skrank": {
        "gain": "exponential",
        "discount": "log2",
        "ties": "average",
        "no_relevant": 0.0,
        "short_queries": "truncate",
        "ap_denominator": "relevant_in_k",
    },
    # The official LETOR 3.0 evaluation script (Eval-Score-3.0.pl).
    "letor": {
        "gain": "exponential",
        "discount": "letor",
        "ties": "stable",
        "no_relevant": 0.0,
        "short_queries": "zero",
        "ap_denominator": "relevant_in_k",
    },
    # The LETOR 4.0 script (Eval-Score-4.0.pl): as LETOR 3.0, except that
    # precision pads queries shorter than k (_PER_METRIC below).
    "letor4": {
        "gain": "exponential",
        "discount": "letor",
        "ties": "stable",
        "no_relevant": 0.0,
        "short_queries": "zero",
        "ap_denominator": "relevant_in_k",
    },
    # sklearn.metrics.ndcg_score / dcg_score.
    "sklearn": {
        "gain": "linear",
        "discount": "log2",
        "ties": "average",
        "no_relevant": 0.0,
        "short_queries": "truncate",
        "ap_denominator": "relevant_in_k",
    },
    # trec_eval (ndcg, ndcg_cut, map, map_cut, P, recall, recip_rank), with
    # the rows of tied documents given in trec_eval's order (decreasing
    # docno), which "stable" keeps.
    "trec_eval": {
        "gain": "linear",
        "discount": "log2",
        "ties": "stable",
        "no_relevant": 0.0,
        "short_queries": "pad",
        "ap_denominator": "relevant",
    },
}

#: Named bundles of metric conventions, name -> {parameter: value}: a
#: read-only mapping of read-only mappings (``dict(CONVENTIONS[name])`` is a
#: copy to change).
#:
#: A metric's ``convention=`` selects one; its convention parameters left as
#: ``None`` take their value from it, explicit ones override it. One value
#: depends on the metric: ``"letor4"`` pads the short queries of
#: :func:`precision_at_k` (``short_queries="pad"``), as the LETOR 4.0 script
#: does, and scores those of NDCG 0 (``"zero"``, the value listed here).
CONVENTIONS = MappingProxyType(
    {name: MappingProxyType(values) for name, values in _PRESETS.items()}
)

#: Where a preset's value differs for one metric: preset -> metric -> values.
_PER_METRIC = {"letor4": {"precision_at_k": {"short_queries": "pad"}}}

_CONVENTION_DOC = """\
convention : {"skrank", "letor", "letor4", "sklearn", "trec_eval"}, \
default="skrank"
        Named bundle of defaults for the convention parameters below; any of
        them given explicitly overrides the bundle
        (:data:`~skrank.metrics.CONVENTIONS` lists them). ``"skrank"``:
        exponential gain, ``log2`` discount, ``"average"`` ties, 0.0 for
        queries without relevant documents, ``"truncate"`` short queries.
        ``"letor"``: the official LETOR 3.0 evaluation script — exponential
        gain, ``"letor"`` discount, ``"stable"`` ties, 0.0, ``"zero"``.
        ``"letor4"``: the LETOR 4.0 script — as ``"letor"``, except that
        precision pads short queries (``"pad"``: P@k of a query of n < k
        documents is its hits over k); NDCG@k of such a query is still 0.
        ``"sklearn"``: as :func:`sklearn.metrics.ndcg_score` — linear gain,
        ``log2`` discount, ``"average"`` ties, 0.0, ``"truncate"``.
        ``"trec_eval"``: as trec_eval's ``ndcg``, ``ndcg_cut``, ``map``,
        ``map_cut``, ``P``, ``recall`` and ``recip_rank`` — linear gain,
        ``log2`` discount, ``"stable"`` ties, 0.0, ``"pad"``, AP divided by
        the number of relevant documents. trec_eval orders tied documents by
        decreasing document name, so give the rows of each query in that
        order; it holds scores in single precision, so scores equal as
        float32 tie there: pass ``y_score.astype(np.float32)``. Its NDCG
        counts negative labels as gain 0, where skrank refuses them.

    ties : {"average", "stable", "pessimistic"}, default=None
        Order of documents with equal scores. ``"average"``: the expected
        value of the metric over all orderings of the tied documents (as
        scikit-learn). ``"stable"``: tied documents keep their row order (as
        the LETOR scripts). ``"pessimistic"``: tied documents are ordered
        worst label first. None takes the convention's value.

    no_relevant : float or "skip", default=None
        Value of a query without any relevant document (no positive gain for
        NDCG, DCG and ERR; no label >= ``relevance_threshold`` for AP,
        precision, recall and MRR):
        a number (0.0 in the ``"skrank"`` and ``"letor"`` conventions;
        LightGBM uses 1.0), or ``"skip"`` to leave such queries out of the
        mean (they are NaN in the per-query array: the one place a NaN is
        returned, marking "undefined"). It takes precedence over
        ``short_queries="zero"``. None takes the convention's value.

    short_queries : {"truncate", "zero", "pad"}, default=None
        Queries with fewer than ``k`` documents. ``"truncate"``: evaluate at
        the query's length (NDCG@n; precision divides by n). ``"zero"``: the
        query scores 0 (LETOR 3.0). ``"pad"``: missing positions count as
        irrelevant documents (precision divides by k; NDCG, DCG and AP equal
        ``"truncate"``). Ignored when ``k`` is None. None takes the
        convention's value."""

_GAIN_DOC = """\
gain : {"exponential", "linear"}, default=None
        Gain of a label ``l``: ``"exponential"`` is ``2**l - 1`` (labels must
        be >= 0), ``"linear"`` is ``l``. None takes the convention's value.

    discount : {"log2", "letor"}, default=None
        Discount of rank ``r`` (1-based): ``"log2"`` is ``1 / log2(r + 1)``;
        ``"letor"`` is ``1 / max(1, log2(r))`` as in the LETOR scripts. None
        takes the convention's value."""


_AP_DENOMINATOR_DOC = """\
ap_denominator : {"relevant_in_k", "relevant"}, default=None
        What AP@k divides by, with :math:`R` relevant documents in the query.
        ``"relevant_in_k"``: :math:`\\min(R, k)`, the most relevant documents
        the top ``k`` can hold, so that a perfect ranking scores 1 at every
        ``k`` (skrank's default). ``"relevant"``: :math:`R`, as trec_eval's
        ``map_cut`` and ranx's ``map@k``. The two agree when ``k`` is None
        or :math:`R \\le k`. None takes the convention's value."""


_ROWS_DOC = """\
y_score : array-like of shape (n_samples,)
        Predicted score of each row; higher ranks first. NaN is an error.

    qid : array-like of shape (n_samples,), default=None
        Query id of each row, integers or strings, in any order. None means
        all rows are one query; with more than 100 rows that is more likely
        a forgotten ``qid``, and it warns."""

_THRESHOLD_DOC = """\
relevance_threshold : float, default=1
        Labels at or above this value are relevant."""

_SAMPLE_WEIGHT_DOC = """\
sample_weight : array-like of shape (n_samples,), default=None
        Weight of each row's query, as in LightGBM and XGBoost: the same for
        all rows of a query, finite, non-negative, not zero for every query.
        The mean over queries becomes the weighted mean
        :math:`\\sum_q w_q m_q / \\sum_q w_q` (queries skipped by
        ``no_relevant="skip"`` leave both sums; a query of weight 0 does not
        count). Weights only affect the mean: ``average=False`` returns the
        same unweighted per-query values. None weighs queries equally."""


def _convention_params():
    return {
        "convention": [StrOptions(set(CONVENTIONS))],
        "gain": [StrOptions({"exponential", "linear"}), None],
        "discount": [StrOptions({"log2", "letor"}), None],
        "ties": [StrOptions({"average", "stable", "pessimistic"}), None],
        "no_relevant": [RealNumber(), StrOptions({"skip"}), None],
        "short_queries": [StrOptions({"truncate", "zero", "pad"}), None],
    }


def _common_params(*, graded=True):
    params = {
        "y_true": ["array-like"],
        "y_score": ["array-like"],
        "qid": ["array-like", None],
        "k": [Integer(1, None, closed="left"), None],
        "average": ["boolean"],
        "sample_weight": ["array-like", None],
        **_convention_params(),
    }
    if not graded:
        del params["gain"], params["discount"]
        params["relevance_threshold"] = [RealNumber()]
    return params


def _ap_params():
    return {
        **_common_params(graded=False),
        "ap_denominator": [StrOptions({"relevant_in_k", "relevant"}), None],
    }


def _resolve(convention, metric=None, **given):
    """Fill the convention parameters left as None from the named bundle.

    ``metric`` (a function name) applies the bundle's values for that
    metric (``_PER_METRIC``).
    """
    resolved = dict(CONVENTIONS[convention])
    resolved.update(_PER_METRIC.get(convention, {}).get(metric, {}))
    resolved.update({key: value for key, value in given.items() if value is not None})
    no_relevant = resolved["no_relevant"]
    if isinstance(no_relevant, bool) or (
        not isinstance(no_relevant, str) and not np.isfinite(no_relevant)
    ):
        raise ValueError(
            f"no_relevant must be a finite number or 'skip', got {no_relevant!r}."
        )
    return resolved


def check_relevance_threshold(relevance_threshold):
    """Raise unless ``relevance_threshold`` is a finite number (not a bool)."""
    if isinstance(relevance_threshold, (bool, np.bool_)) or not np.isfinite(
        _as_float(relevance_threshold)
    ):
        raise ValueError(
            "relevance_threshold must be a finite number, got "
            f"{shortened_repr(relevance_threshold)}."
        )


def _as_1d_float(values, name):
    """``values`` as a 1-D float64 array; text is refused (``check_numeric``)."""
    try:
        arr = np.asarray(values)
    except ValueError as exc:  # ragged nested sequences: no array at all
        raise TypeError(f"{name} must be numeric, got {values!r:.80}.") from exc
    arr = check_numeric(arr, name)
    try:
        arr = arr.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:  # e.g. None in an object array
        raise TypeError(f"{name} must be numeric, got {values!r:.80}.") from exc
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}.")
    return arr


def _check_finite_labels(y_true):
    if not np.all(np.isfinite(y_true)):
        raise ValueError(
            f"y_true contains NaN or infinity "
            f"({int((~np.isfinite(y_true)).sum())} of {y_true.shape[0]} "
            "values); labels must be finite."
        )


class _Ranking:
    """Labels of every query in ranked order, with the tie structure.

    Arrays are in "ranked layout": queries in ``layout`` order (the same
    offsets as the layout's sorted order), each by descending score.
    """

    def __init__(self, y_true, y_score, qid, ties, caller):
        y_true = _as_1d_float(y_true, "y_true")
        y_score = _as_1d_float(y_score, "y_score")
        if y_true.shape[0] != y_score.shape[0]:
            raise ValueError(
                "y_true and y_score must have the same length, got "
                f"{y_true.shape[0]} and {y_score.shape[0]}."
            )
        _check_finite_labels(y_true)
        if np.isnan(y_score).any():
            raise ValueError(
                f"y_score contains NaN ({int(np.isnan(y_score).sum())} of "
                f"{y_score.shape[0]} values); scores must be numbers."
            )
        layout = QueryLayout(resolve_qid(qid, y_true.shape[0], caller=caller),
                             n_samples=y_true.shape[0])
        # the padded blocks of the queries, made once for every sort
        self.blocks = query_blocks(layout)
        if ties == "average":
            tiebreak = "arbitrary"
        elif ties == "stable":
            tiebreak = "stable"
        else:  # pessimistic: worst label first among ties, then row order
            tiebreak = y_true
        perm = rank_order(layout, y_score, tiebreak=tiebreak, blocks=self.blocks)
        self.layout = layout
        self.y_true = y_true  # row order, for the ideal ordering
        self.labels = y_true[perm]
        self.rank = layout.index_in_query  # 0-based rank inside the query
        # (starts, sizes) of the runs of tied scores; only "average" uses them
        self.tie_runs = tie_runs(layout, y_score[perm]) if ties == "average" else None

    def expected(self, values):
        """Expected value at each rank under random tie-breaking."""
        if self.tie_runs is None:
            return values
        starts, sizes = self.tie_runs
        return np.repeat(np.add.reduceat(values, starts) / sizes, sizes)

    def at_rank(self, table):
        """``table[r]`` for every ranked row, ``r`` its 0-based rank."""
        return table[self.rank]

    def sum_top(self, contributions, k):
        """Per-query sum of contributions over the top ``k`` ranks."""
        if k is not None and k < self.layout.max_size:
            contributions = contributions * self.at_rank(
                _cutoff_weights(self.layout.max_size, k)
            )
        return self.layout.sum(contributions)


def _cutoff_weights(n, k):
    """1.0 for ranks 1..k, 0.0 beyond, for ranks 1..n."""
    weights = np.ones(n)
    if k is not None:
        weights[k:] = 0.0
    return weights


def _gains(labels, gain, *, allow_negative):
    if gain == "exponential":
        if labels.size and labels.min() < 0:
            raise ValueError(
                "y_true has negative labels (min "
                f"{labels.min():g}); the exponential gain 2**y - 1 needs labels "
                ">= 0. Use gain='linear' or shift the labels."
            )
        if labels.size and labels.max() > 1000:
            raise ValueError(
                f"y_true has labels up to {labels.max():g}; the exponential gain "
                "2**y - 1 overflows past 1000. Use gain='linear'."
            )
        return np.exp2(labels) - 1.0
    if not allow_negative and labels.size and labels.min() < 0:
        raise ValueError(
            f"y_true has negative labels (min {labels.min():g}); NDCG is not "
            "defined for negative gains."
        )
    return labels


def _discounts(n, discount):
    ranks = np.arange(1, n + 1, dtype=np.float64)
    if discount == "log2":
        return 1.0 / np.log2(ranks + 1.0)
    return 1.0 / np.maximum(1.0, np.log2(ranks))


def _finish(
    per_query, no_relevant_mask, short_mask, conv, average, name, *, layout,
    sample_weight=None,
):
    """Apply the no-relevant and short-query conventions, then average.

    ``sample_weight`` (per row, constant within each query of ``layout``)
    weighs the queries in the mean; the per-query values are unweighted.
    """
    weights = None if sample_weight is None else query_weights(sample_weight, layout)
    per_query = np.asarray(per_query, dtype=np.float64)
    if short_mask is not None and conv["short_queries"] == "zero":
        per_query = np.where(short_mask, 0.0, per_query)
    no_relevant = conv["no_relevant"]
    if isinstance(no_relevant, str):  # "skip"
        per_query = np.where(no_relevant_mask, np.nan, per_query)
    else:
        per_query = np.where(no_relevant_mask, float(no_relevant), per_query)
    if not average:
        return per_query
    kept = ~np.isnan(per_query)
    if not kept.any():
        raise ValueError(
            f"{name}: no query has a relevant document and no_relevant='skip', "
            "so the mean is undefined."
        )
    if weights is None:
        return float(per_query[kept].mean())
    if not np.any(weights[kept] > 0):
        raise ValueError(
            f"{name}: every query with a relevant document has sample_weight 0 "
            "and no_relevant='skip', so the weighted mean is undefined."
        )
    kept_weights = weights[kept]
    # the mean does not change with the weights' scale; weights near the
    # largest float would overflow their sum
    return float(np.average(per_query[kept], weights=kept_weights / kept_weights.max()))


def _short_mask(ranking, k):
    return None if k is None else ranking.layout.sizes < _clip_k(ranking, k)


def _as_float(k):
    """``float(k)``, infinity for a ``k`` beyond the largest float (hits / k is 0)."""
    try:
        return float(k)
    except OverflowError:
        return np.inf


def _clip_k(ranking, k):
    """``k``, or one more than the longest query when ``k`` is larger.

    Any ``k`` beyond every query has the same cutoffs and short queries;
    clipping keeps integer arithmetic in int64 for a ``k`` such as 2**63.
    """
    return min(k, ranking.layout.max_size + 1)


def _ideal_dcg(layout, y_true, disc_table, gain, blocks=None):
    """Per-query DCG of the ideal ordering (labels sorted decreasingly).

    Returns the ideal DCG and the largest gain of each query. ``blocks``:
    those of ``layout``, when the caller has them.
    """
    # only ranks with a non-zero discount (at most k) matter
    depth = int(np.flatnonzero(disc_table)[-1]) + 1
    idcg = np.empty(layout.n_queries)
    best = np.empty(layout.n_queries)
    for queries, block, valid in sorted_blocks(layout, y_true, blocks):
        width = min(depth, block.shape[1])
        top = block[:, :width]
        if valid is not None:
            top = np.where(valid[:, :width], top, 0.0)
        top_gains = _gains(top, gain, allow_negative=True)
        idcg[queries] = top_gains @ disc_table[:width]
        best[queries] = top_gains[:, 0]
    return idcg, best


def _dcg_parts(y_true, y_score, qid, k, conv, *, normalize, caller):
    """Per-query DCG@k, ideal DCG@k and the ranking."""
    ranking = _Ranking(y_true, y_score, qid, conv["ties"], caller)
    gains = _gains(ranking.labels, conv["gain"], allow_negative=not normalize)
    max_size = ranking.layout.max_size
    disc_table = _discounts(max_size, conv["discount"]) * _cutoff_weights(max_size, k)
    dcg = ranking.layout.sum(ranking.expected(gains) * ranking.at_rank(disc_table))
    idcg, best_gain = _ideal_dcg(ranking.layout, ranking.y_true, disc_table, conv["gain"],
                                 ranking.blocks)
    # a query has a relevant document when some document has a positive gain
    return ranking, dcg, idcg, best_gain <= 0


def ndcg_of_rankings(y_sorted, order, layout, *, k=None, **conventions):
    """NDCG@k of many rankings of the same queries, shape (n_queries, n_rankings).

    ``order[s, p]`` is the row (sorted order of ``layout``) at place ``p`` of
    ranking ``s``: the places of query ``q``, ``layout.offsets[q]`` to
    ``layout.offsets[q + 1] - 1``, hold its rows from the top down (every
    ranking a permutation of the query's rows). Each value is what
    :func:`ndcg_score` (with ``k`` and the ``conventions`` it takes:
    ``convention``, ``gain``, ``discount``, ``no_relevant``,
    ``short_queries``; ``ties`` plays no part) gives the query ranked in
    that order, to rounding: a ranking's DCG reads only its top ``k``
    places, and the ideal DCG and the conventions, the same for every
    ranking of a query, are computed once per query. For
    :class:`~skrank.losses.BoltzRankLoss`'s gains of its rank samples.
    """
    conv = _resolve(conventions.pop("convention", "skrank"), **conventions)
    y_true = _as_1d_float(y_sorted, "y_true")
    _check_finite_labels(y_true)
    gains = _gains(y_true, conv["gain"], allow_negative=False)
    max_size = layout.max_size
    disc_table = _discounts(max_size, conv["discount"]) * _cutoff_weights(max_size, k)
    depth = max_size if k is None else min(k, max_size)
    top = np.arange(depth)
    real = top < layout.sizes[:, None]  # (n_queries, depth)
    places = np.where(real, layout.starts[:, None] + top, 0)
    discount = np.where(real, disc_table[:depth], 0.0)
    dcg = np.einsum("sqr,qr->qs", gains[order[:, places]], discount)
    idcg, best_gain = _ideal_dcg(layout, layout.to_rows(y_true), disc_table, conv["gain"])
    no_relevant = best_gain <= 0
    per_query = np.divide(dcg, idcg[:, None], out=np.zeros_like(dcg),
                          where=~no_relevant[:, None])
    short = None if k is None else layout.sizes < k
    # _finish's masks run along the last axis: one row per ranking
    return _finish(per_query.T, no_relevant, short, conv, False, "ndcg_score",
                   layout=layout).T


def _doc(func):
    func.__doc__ = (
        func.__doc__.replace("%(gain)s", _GAIN_DOC)
        .replace("%(convention)s", _CONVENTION_DOC)
        .replace("%(sample_weight)s", _SAMPLE_WEIGHT_DOC)
        .replace("%(ap_denominator)s", _AP_DENOMINATOR_DOC)
        .replace("%(rows)s", _ROWS_DOC)
        .replace("%(relevance_threshold)s", _THRESHOLD_DOC)
    )
    return func


@validate_params(_common_params(), prefer_skip_nested_validation=True)
@_doc
def ndcg_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    average=True,
    sample_weight=None,
    convention="skrank",
    gain=None,
    discount=None,
    ties=None,
    no_relevant=None,
    short_queries=None,
):
    r"""Normalized discounted cumulative gain at rank ``k``, per query.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Graded relevance label of each row (document).

    %(rows)s

    k : int, default=None
        Only the top ``k`` ranks of each query count. None uses all.

    average : bool, default=True
        Return the mean over queries; if False, the per-query values in the
        order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    %(gain)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        Mean NDCG@k over queries, or the per-query values.

    See Also
    --------
    dcg_score : The unnormalised DCG.
    sklearn.metrics.ndcg_score : Equal-length queries as rows of a matrix.

    Notes
    -----
    For one query ranked by ``y_score``, with :math:`g` the gain and
    :math:`D` the discount,

    .. math::

        \mathrm{DCG@k} = \sum_{r=1}^{\min(k, n)} g(l_{\pi(r)})\, D(r),
        \qquad
        \mathrm{NDCG@k} = \mathrm{DCG@k} / \mathrm{IDCG@k},

    where IDCG@k is the DCG@k of the labels sorted in decreasing order.
    With ``ties="average"`` the contribution of a run of tied documents is
    the mean gain of the run times the sum of its discounts, which is the
    expectation over uniformly random tie-breaking.

    Labels must be non-negative: with negative gains NDCG is not bounded.

    References
    ----------
    .. [1] K. Jarvelin and J. Kekalainen, "Cumulated gain-based evaluation of
       IR techniques", ACM TOIS 20(4), 2002.
    .. [2] T. Qin, T.-Y. Liu, J. Xu and H. Li, "LETOR: A benchmark collection
       for research on learning to rank for information retrieval",
       Information Retrieval 13(4), 2010.

    Examples
    --------
    >>> from skrank.metrics import ndcg_score
    >>> y_true = [2, 0, 1, 0, 1]
    >>> y_score = [0.9, 0.8, 0.1, 0.5, 0.7]
    >>> qid = [1, 1, 1, 2, 2]
    >>> round(ndcg_score(y_true, y_score, qid=qid), 4)
    0.982
    >>> ndcg_score(y_true, y_score, qid=qid, average=False).round(4)
    array([0.9639, 1.    ])
    """
    conv = _resolve(
        convention,
        gain=gain,
        discount=discount,
        ties=ties,
        no_relevant=no_relevant,
        short_queries=short_queries,
    )
    ranking, dcg, idcg, no_rel = _dcg_parts(
        y_true, y_score, qid, k, conv, normalize=True, caller="ndcg_score"
    )
    per_query = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=~no_rel)
    return _finish(
        per_query, no_rel, _short_mask(ranking, k), conv, average, "ndcg_score",
        layout=ranking.layout, sample_weight=sample_weight,
    )


@validate_params(_common_params(), prefer_skip_nested_validation=True)
@_doc
def dcg_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    average=True,
    sample_weight=None,
    convention="skrank",
    gain=None,
    discount=None,
    ties=None,
    no_relevant=None,
    short_queries=None,
):
    r"""Discounted cumulative gain at rank ``k``, per query.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Graded relevance label of each row (document). Negative labels are
        allowed with ``gain="linear"``.

    %(rows)s

    k : int, default=None
        Only the top ``k`` ranks of each query count. None uses all.

    average : bool, default=True
        Return the mean over queries; if False, the per-query values in the
        order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    %(gain)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        Mean DCG@k over queries, or the per-query values.

    See Also
    --------
    ndcg_score : DCG divided by the DCG of the ideal ordering.

    Notes
    -----
    :math:`\mathrm{DCG@k} = \sum_{r=1}^{\min(k, n)} g(l_{\pi(r)}) D(r)`, with
    the tie, gain and discount conventions of :func:`ndcg_score`.

    Examples
    --------
    >>> from skrank.metrics import dcg_score
    >>> dcg_score([3, 0, 1], [0.3, 0.2, 0.1], qid=[0, 0, 0], gain="linear")
    3.5
    """
    conv = _resolve(
        convention,
        gain=gain,
        discount=discount,
        ties=ties,
        no_relevant=no_relevant,
        short_queries=short_queries,
    )
    ranking, dcg, _, no_rel = _dcg_parts(y_true, y_score, qid, k, conv, normalize=False,
                                         caller="dcg_score")
    return _finish(
        dcg, no_rel, _short_mask(ranking, k), conv, average, "dcg_score",
        layout=ranking.layout, sample_weight=sample_weight,
    )


def _binary_ranking(y_true, y_score, qid, relevance_threshold, ties, caller):
    ranking = _Ranking(y_true, y_score, qid, ties, caller)
    rel = (ranking.labels >= relevance_threshold).astype(np.float64)
    return ranking, rel


@validate_params(_common_params(graded=False), prefer_skip_nested_validation=True)
@_doc
def precision_at_k(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    relevance_threshold=1,
    average=True,
    sample_weight=None,
    convention="skrank",
    ties=None,
    no_relevant=None,
    short_queries=None,
):
    r"""Precision at rank ``k``: the fraction of relevant documents in the top ``k``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance label of each row; relevant means
        ``y_true >= relevance_threshold``.

    %(rows)s

    k : int, default=None
        Cutoff rank. None uses the whole query (precision = R / n).

    %(relevance_threshold)s

    average : bool, default=True
        Return the mean over queries; if False, the per-query values in the
        order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        Mean P@k over queries, or the per-query values.

    Notes
    -----
    :math:`P@k = \frac{1}{k'} \sum_{r=1}^{\min(k,n)} [l_{\pi(r)} \ge t]`,
    with :math:`k' = \min(k, n)` for ``short_queries="truncate"`` and
    :math:`k' = k` for ``"pad"``; ``"zero"`` scores queries shorter than
    ``k`` as 0 (LETOR 3.0). With ``ties="average"`` each rank holds the
    expected relevance of its run of tied documents.

    Examples
    --------
    >>> from skrank.metrics import precision_at_k
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], qid=[0, 0, 0, 0], k=2)
    0.5
    """
    check_relevance_threshold(relevance_threshold)
    conv = _resolve(
        convention, "precision_at_k", ties=ties, no_relevant=no_relevant,
        short_queries=short_queries,
    )
    ranking, rel = _binary_ranking(y_true, y_score, qid, relevance_threshold, conv["ties"],
                                   "precision_at_k")
    sizes = ranking.layout.sizes
    hits = ranking.sum_top(ranking.expected(rel), k)
    if k is None:
        denom = sizes
    elif conv["short_queries"] == "pad":
        denom = np.full(sizes.shape, _as_float(k))
    else:
        denom = np.minimum(sizes, _clip_k(ranking, k))
    per_query = hits / denom
    n_relevant = ranking.layout.sum(rel)
    return _finish(
        per_query,
        n_relevant == 0,
        _short_mask(ranking, k),
        conv,
        average,
        "precision_at_k",
        layout=ranking.layout,
        sample_weight=sample_weight,
    )


@validate_params(_ap_params(), prefer_skip_nested_validation=True)
@_doc
def average_precision_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    relevance_threshold=1,
    average=True,
    sample_weight=None,
    convention="skrank",
    ties=None,
    no_relevant=None,
    short_queries=None,
    ap_denominator=None,
):
    r"""Average precision (AP@k) of each query; their mean is MAP.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance label of each row; relevant means
        ``y_true >= relevance_threshold``.

    %(rows)s

    k : int, default=None
        Only relevant documents in the top ``k`` ranks count. None uses all.

    %(relevance_threshold)s

    average : bool, default=True
        Return the mean over queries (MAP); if False, the per-query AP in the
        order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    %(ap_denominator)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        MAP, or the per-query AP.

    See Also
    --------
    map_score : The same mean under its usual name.

    Notes
    -----
    With :math:`R` relevant documents in the query and :math:`P@r` the
    precision at rank :math:`r`,

    .. math::

        \mathrm{AP@k} = \frac{1}{\min(R, k)}
        \sum_{r \le k,\ \pi(r) \text{ relevant}} P@r ,

    so a perfect ranking scores 1 (with ``k=None`` the normaliser is
    :math:`R`, as in the LETOR scripts and TREC). trec_eval's ``map_cut_k``
    and ranx's ``map@k`` divide by :math:`R` at every ``k`` instead
    (``ap_denominator="relevant"``): a perfect ranking of a query with more
    than ``k`` relevant documents then scores :math:`k / R`. skrank keeps
    :math:`\min(R, k)` by default, so that AP@k, like NDCG@k, measures the
    top ``k`` against the best the top ``k`` can hold. With ``ties="average"`` the
    exact expectation over random tie-breaking is used: a run of :math:`n`
    tied documents holding :math:`m` relevant ones, after :math:`a`
    documents of which :math:`A` are relevant, contributes

    .. math::

        \frac{m}{n} \sum_{j=1}^{n}
        \frac{A + 1 + (j - 1)\frac{m - 1}{n - 1}}{a + j},

    because position :math:`j` of the run is relevant with probability
    :math:`m/n` and, given that, holds on average :math:`(j-1)(m-1)/(n-1)`
    relevant documents before it inside the run.

    Examples
    --------
    >>> from skrank.metrics import average_precision_score
    >>> average_precision_score([1, 0, 1], [0.9, 0.8, 0.7], qid=[0, 0, 0])
    0.8333333333333333
    """
    check_relevance_threshold(relevance_threshold)
    conv = _resolve(
        convention, ties=ties, no_relevant=no_relevant, short_queries=short_queries,
        ap_denominator=ap_denominator,
    )
    ranking, rel = _binary_ranking(y_true, y_score, qid, relevance_threshold, conv["ties"],
                                   "average_precision_score")
    layout = ranking.layout
    rank = ranking.rank + 1.0  # 1-based
    # relevant documents strictly before each rank, inside its query
    before = layout.cumsum(rel) - rel
    if ranking.tie_runs is None:
        contrib = rel * (before + 1.0) / rank
    else:
        starts, sizes = ranking.tie_runs
        m = np.add.reduceat(rel, starts)
        frac = np.divide(m - 1.0, sizes - 1.0, out=np.zeros_like(m), where=sizes > 1)
        j = np.arange(rel.shape[0]) - np.repeat(starts, sizes)  # 0-based in run
        contrib = (
            np.repeat(m / sizes, sizes)
            * (np.repeat(before[starts], sizes) + 1.0 + j * np.repeat(frac, sizes))
            / rank
        )
    n_relevant = layout.sum(rel)
    if k is None or conv["ap_denominator"] == "relevant":
        norm = n_relevant
    else:
        norm = np.minimum(n_relevant, _clip_k(ranking, k))
    total = ranking.sum_top(contrib, k)
    per_query = np.divide(total, norm, out=np.zeros_like(total), where=norm > 0)
    return _finish(
        per_query,
        n_relevant == 0,
        _short_mask(ranking, k),
        conv,
        average,
        "average_precision_score",
        layout=ranking.layout,
        sample_weight=sample_weight,
    )


@validate_params(_ap_params(), prefer_skip_nested_validation=True)
@_doc
def map_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    relevance_threshold=1,
    average=True,
    sample_weight=None,
    convention="skrank",
    ties=None,
    no_relevant=None,
    short_queries=None,
    ap_denominator=None,
):
    """Mean average precision: :func:`average_precision_score` under its usual name.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance label of each row; relevant means
        ``y_true >= relevance_threshold``.

    %(rows)s

    k : int, default=None
        Only relevant documents in the top ``k`` ranks count. None uses all.

    %(relevance_threshold)s

    average : bool, default=True
        Return MAP; if False, the per-query AP.

    %(sample_weight)s

    %(convention)s

    %(ap_denominator)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        MAP, or the per-query AP.

    See Also
    --------
    average_precision_score : Definition and conventions.

    Examples
    --------
    >>> from skrank.metrics import map_score
    >>> map_score([1, 0, 0, 1], [0.9, 0.8, 0.7, 0.1], qid=[0, 0, 1, 1])
    0.75
    """
    if qid is None and np.ndim(y_true) == 1:  # one query, warned about under this name
        qid = resolve_qid(None, len(y_true), caller="map_score")
    return average_precision_score(
        y_true,
        y_score,
        qid=qid,
        k=k,
        relevance_threshold=relevance_threshold,
        average=average,
        sample_weight=sample_weight,
        convention=convention,
        ties=ties,
        no_relevant=no_relevant,
        short_queries=short_queries,
        ap_denominator=ap_denominator,
    )


@validate_params(_common_params(graded=False), prefer_skip_nested_validation=True)
@_doc
def recall_at_k(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    relevance_threshold=1,
    average=True,
    sample_weight=None,
    convention="skrank",
    ties=None,
    no_relevant=None,
    short_queries=None,
):
    r"""Recall at rank ``k``: the fraction of the relevant documents in the top ``k``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance label of each row; relevant means
        ``y_true >= relevance_threshold``.

    %(rows)s

    k : int, default=None
        Cutoff rank. None uses the whole query (recall 1 for every query with
        a relevant document).

    %(relevance_threshold)s

    average : bool, default=True
        Return the mean over queries; if False, the per-query values in the
        order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        Mean recall@k over queries, or the per-query values.

    See Also
    --------
    precision_at_k : The same hits divided by ``k``.

    Notes
    -----
    With :math:`R` relevant documents in the query,
    :math:`\mathrm{recall@k} = \frac{1}{R} \sum_{r=1}^{\min(k,n)}
    [l_{\pi(r)} \ge t]`, as trec_eval's ``recall_k``. A query without
    relevant documents takes ``no_relevant``; ``short_queries="zero"``
    scores queries shorter than ``k`` as 0, ``"truncate"`` and ``"pad"``
    are the same here. With ``ties="average"`` each rank holds the expected
    relevance of its run of tied documents.

    Examples
    --------
    >>> from skrank.metrics import recall_at_k
    >>> recall_at_k([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], qid=[0, 0, 0, 0], k=2)
    0.5
    """
    check_relevance_threshold(relevance_threshold)
    conv = _resolve(
        convention, ties=ties, no_relevant=no_relevant, short_queries=short_queries
    )
    ranking, rel = _binary_ranking(y_true, y_score, qid, relevance_threshold, conv["ties"],
                                   "recall_at_k")
    hits = ranking.sum_top(ranking.expected(rel), k)
    n_relevant = ranking.layout.sum(rel)
    per_query = np.divide(hits, n_relevant, out=np.zeros_like(hits), where=n_relevant > 0)
    return _finish(
        per_query, n_relevant == 0, _short_mask(ranking, k), conv, average,
        "recall_at_k", layout=ranking.layout, sample_weight=sample_weight,
    )


def _cascade(ranking, p, discount, k):
    r"""Per query, :math:`\sum_r D(r)\, p_r \prod_{i<r} (1 - p_i)` over the top ``k``.

    The user of the cascade model examines the ranking from the top and
    stops at rank :math:`r` with probability :math:`p_r`; ``discount[r]``
    (0-based rank) is the utility :math:`D(r+1)` of stopping there. With
    ``ranking.tie_runs`` (``ties="average"``) the value is the expectation
    over every order of each run of tied documents. The product of the
    :math:`q = 1 - p` over a whole run is the same in every order, so runs
    are independent: for a run whose earlier documents have the product
    :math:`P`, the probability to stop at its place :math:`j` is
    :math:`P A_{j-1}`, where :math:`A_t` is the mean of
    :math:`p_x \prod_{i \in T} q_i` over the sets :math:`T` of :math:`t`
    documents of the run and the documents :math:`x` outside :math:`T`.
    With :math:`M_t`, the mean product of :math:`q` over the sets of
    :math:`t` documents, both follow convex recursions over the run's
    documents :math:`m = 1, 2, \ldots`:

    .. math::

        M^{(m)}_t = \tfrac{m-t}{m} M^{(m-1)}_t
        + \tfrac{t}{m} q_m M^{(m-1)}_{t-1}, \qquad
        A^{(m)}_t = \tfrac{m-1-t}{m} A^{(m-1)}_t + \tfrac{1}{m} p_m M^{(m-1)}_t
        + \tfrac{t}{m} q_m A^{(m-1)}_{t-1},

    sums of non-negative terms, so a small stopping probability keeps its
    relative precision. Every run of a size class is done at once; a run
    costs its length times :math:`\min(\text{length}, k)`.
    """
    layout = ranking.layout
    q = 1.0 - p
    before = cumprod_before(layout, q, ranking.blocks)
    stop = p * before
    if ranking.tie_runs is not None:
        starts, sizes = ranking.tie_runs
        depth = layout.max_size if k is None else min(k, layout.max_size)
        # runs of several documents that start within the cutoff
        tied = (sizes > 1) & (ranking.rank[starts] < depth)
        starts, sizes = starts[tied], sizes[tied]
        size_class = np.log2(sizes).astype(np.intp)
        for cls in np.unique(size_class):
            in_class = size_class == cls
            _stop_in_runs(stop, p, q, before, starts[in_class], sizes[in_class], depth)
    return ranking.sum_top(stop * ranking.at_rank(discount), k)


def _stop_in_runs(stop, p, q, before, starts, sizes, depth):
    """Write each run's probabilities of stopping at its places into ``stop``."""
    width = int(sizes.max())
    n_places = min(width, depth)  # A_0 .. A_{T-1} for places 1 .. T
    cols = np.arange(width)
    valid = cols < sizes[:, None]
    places = np.where(valid, starts[:, None] + cols, 0)
    p_run = np.where(valid, p[places], 0.0)
    q_run = np.where(valid, q[places], 1.0)
    t = np.arange(n_places, dtype=np.float64)
    means = np.zeros((starts.shape[0], n_places))  # M_t
    means[:, 0] = 1.0
    stops = np.zeros_like(means)  # A_t
    for m in range(1, width + 1):
        p_m, q_m = p_run[:, m - 1 : m], q_run[:, m - 1 : m]
        means_before = np.zeros_like(means)
        means_before[:, 1:] = means[:, :-1]
        stops_before = np.zeros_like(stops)
        stops_before[:, 1:] = stops[:, :-1]
        # past t = m - 1 (A) and t = m (M) every term is 0
        new_stops = (np.maximum(m - 1 - t, 0.0) * stops + p_m * means
                     + t * q_m * stops_before) / m
        new_means = (np.maximum(m - t, 0.0) * means + t * q_m * means_before) / m
        running = (sizes >= m)[:, None]  # runs shorter than m are finished
        stops = np.where(running, new_stops, stops)
        means = np.where(running, new_means, means)
    keep = valid[:, :n_places]
    probs = stops * before[starts][:, None]
    stop[places[:, :n_places][keep]] = probs[keep]


@validate_params(_common_params(graded=False), prefer_skip_nested_validation=True)
@_doc
def mrr_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    relevance_threshold=1,
    average=True,
    sample_weight=None,
    convention="skrank",
    ties=None,
    no_relevant=None,
    short_queries=None,
):
    r"""Reciprocal rank of the first relevant document; their mean is MRR.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance label of each row; relevant means
        ``y_true >= relevance_threshold``.

    %(rows)s

    k : int, default=None
        A first relevant document below rank ``k`` scores 0 (MRR@k). None
        uses the whole query.

    %(relevance_threshold)s

    average : bool, default=True
        Return the mean over queries (MRR); if False, the per-query
        reciprocal ranks in the order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        MRR, or the per-query reciprocal rank.

    See Also
    --------
    err_score : The cascade model with graded stopping probabilities.

    Notes
    -----
    :math:`\mathrm{RR@k} = 1 / r_1` if the first relevant document is at
    rank :math:`r_1 \le k`, else 0 (trec_eval's ``recip_rank`` for
    ``k=None``). A query without relevant documents takes
    ``no_relevant``; ``short_queries="zero"`` scores queries shorter than
    ``k`` as 0, ``"truncate"`` and ``"pad"`` are the same here. With
    ``ties="average"`` the value is the exact expectation over random
    tie-breaking: for a run of :math:`n` tied documents holding :math:`m`
    relevant ones, the first of them is at place :math:`j` of the run with
    probability :math:`\binom{n-j}{m-1} / \binom{n}{m}`.

    Examples
    --------
    >>> from skrank.metrics import mrr_score
    >>> mrr_score([0, 1, 1, 1, 0], [0.9, 0.8, 0.7, 0.2, 0.1], qid=[0, 0, 0, 1, 1])
    0.75
    """
    check_relevance_threshold(relevance_threshold)
    conv = _resolve(
        convention, ties=ties, no_relevant=no_relevant, short_queries=short_queries
    )
    ranking, rel = _binary_ranking(y_true, y_score, qid, relevance_threshold, conv["ties"],
                                   "mrr_score")
    reciprocal = 1.0 / np.arange(1, ranking.layout.max_size + 1)
    per_query = _cascade(ranking, rel, reciprocal, k)
    return _finish(
        per_query, ranking.layout.sum(rel) == 0, _short_mask(ranking, k), conv,
        average, "mrr_score", layout=ranking.layout, sample_weight=sample_weight,
    )


_err_params = _common_params(graded=False)
del _err_params["relevance_threshold"]
_err_params["max_grade"] = [Float(0, None, closed="left"), None]


@validate_params(_err_params, prefer_skip_nested_validation=True)
@_doc
def err_score(
    y_true,
    y_score,
    *,
    qid=None,
    k=None,
    max_grade=None,
    average=True,
    sample_weight=None,
    convention="skrank",
    ties=None,
    no_relevant=None,
    short_queries=None,
):
    r"""Expected reciprocal rank (ERR@k) of Chapelle et al., per query.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Graded relevance label of each row, from 0 to ``max_grade``.

    %(rows)s

    k : int, default=None
        Only the top ``k`` ranks of each query count. None uses all.

    max_grade : float, default=None
        The highest grade of the relevance scale, :math:`g_{max}` (4 for
        MSLR-WEB and Yahoo!, 2 for LETOR 3.0). None takes the largest label
        of ``y_true``; give it explicitly when comparing ERR across data sets
        or cross-validation folds, whose largest label may differ.

    average : bool, default=True
        Return the mean over queries; if False, the per-query values in the
        order of the sorted unique ``qid``.

    %(sample_weight)s

    %(convention)s

    Returns
    -------
    score : float or ndarray of shape (n_queries,)
        Mean ERR@k over queries, or the per-query values.

    See Also
    --------
    mrr_score : The cascade model with binary relevance.
    ndcg_score : A position model of the same graded labels.

    Notes
    -----
    The cascade model: a user examines the ranking from the top, is
    satisfied by the document at rank :math:`r` with probability
    :math:`R_r = (2^{g_r} - 1) / 2^{g_{max}}` and then stops; ERR is the
    expected reciprocal rank at which the user stops ([1]_, eq. 4 and
    Algorithm 2),

    .. math::

        \mathrm{ERR@k} = \sum_{r=1}^{\min(k, n)} \frac{1}{r}\, R_r
        \prod_{i=1}^{r-1} (1 - R_i).

    ERR has its own gain and discount, so ``gain`` and ``discount`` are not
    parameters. A query whose labels are all 0 has no relevant document and
    takes ``no_relevant``; ``short_queries="zero"`` scores queries shorter
    than ``k`` as 0, ``"truncate"`` and ``"pad"`` are the same here. With
    ``ties="average"`` the value is the exact expectation over random
    tie-breaking (the products over a run of tied documents are averaged
    over its subsets of each size, see :func:`mrr_score`).

    References
    ----------
    .. [1] O. Chapelle, D. Metzler, Y. Zhang and P. Grinspan, "Expected
       reciprocal rank for graded relevance", CIKM 2009.

    Examples
    --------
    >>> from skrank.metrics import err_score
    >>> round(err_score([2, 0, 1], [0.9, 0.8, 0.1], qid=[0, 0, 0]), 4)
    0.7708
    """
    conv = _resolve(
        convention, ties=ties, no_relevant=no_relevant, short_queries=short_queries
    )
    ranking = _Ranking(y_true, y_score, qid, conv["ties"], "err_score")
    labels = ranking.labels
    if max_grade is None:
        top, named = labels.max(), "the top grade (the largest label, as max_grade=None)"
    else:
        top, named = _as_float(max_grade), f"max_grade={shortened_repr(max_grade)}"
    if labels.min() < 0 or labels.max() > top:
        raise ValueError(
            f"err_score needs labels from 0 to max_grade={top:g}; y_true has "
            f"labels from {labels.min():g} to {labels.max():g}."
        )
    if top > 1000:
        raise ValueError(
            f"err_score: {named} is above 1000, where the gain 2**g overflows; "
            "the top grade must be at most 1000."
        )
    satisfied = np.exp2(labels - top) - np.exp2(-top)
    reciprocal = 1.0 / np.arange(1, ranking.layout.max_size + 1)
    per_query = _cascade(ranking, satisfied, reciprocal, k)
    return _finish(
        per_query, ranking.layout.max(labels) <= 0, _short_mask(ranking, k), conv,
        average, "err_score", layout=ranking.layout, sample_weight=sample_weight,
    )


#: The metrics by name (as in ``"ndcg@10"``), name -> function.
METRICS = {
    "ndcg": ndcg_score,
    "dcg": dcg_score,
    "map": map_score,
    "ap": average_precision_score,
    "precision": precision_at_k,
    "p": precision_at_k,
    "recall": recall_at_k,
    "mrr": mrr_score,
    "err": err_score,
}

_NAME_PATTERN = re.compile(r"^(?P<metric>[a-z]+)(?:@(?P<k>\d+))?$")


def parse_metric_name(name):
    """``(metric, k)`` of a name such as ``"ndcg@10"`` (``("ndcg", 10)``) or ``"map"``.

    ``metric`` is a key of :data:`METRICS`, ``k`` an int or None. Raises a
    TypeError for a non-string and a ValueError naming the known metrics for
    anything else, also for a ``k`` of more digits than Python converts to an
    int (``sys.get_int_max_str_digits()``, 4300 by default): such a ``k`` is
    beyond any query, and the name without ``@k`` (no cut-off) means the same.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'ndcg@10', got {name!r}.")
    match = _NAME_PATTERN.match(name.strip().lower())
    expected = (
        f"expected '<metric>' or '<metric>@<k>' (k >= 1) with metric in "
        f"{sorted(METRICS)}, e.g. 'ndcg@10' or 'map'."
    )
    k = None
    if match is not None and match["k"] is not None:
        try:
            k = int(match["k"])
        except ValueError as exc:  # beyond the int conversion limit
            raise ValueError(
                f"Unknown ranking scorer {shortened_repr(name)}: its k has "
                f"{len(match['k'])} digits, more than Python converts to an int "
                f"(sys.get_int_max_str_digits() is {sys.get_int_max_str_digits()}). "
                f"A k beyond every query is no cut-off: use {match['metric']!r}; "
                f"{expected}"
            ) from exc
    if match is None or match["metric"] not in METRICS or (k is not None and k < 1):
        raise ValueError(f"Unknown ranking scorer {shortened_repr(name)}; {expected}")
    return match["metric"], k


def check_takes_average(metric, name, asker):
    """Raise a TypeError unless ``metric`` can be called with ``average=False``.

    Per-query values come from ``metric(..., average=False)``, as every
    metric of this module gives them; a callable of the user's without an
    ``average`` parameter would fail with Python's bare "unexpected keyword
    argument". Read from the signature before any call: a parameter
    ``average`` or ``**kwargs`` passes, and a callable without a signature
    to read is trusted.

    Parameters
    ----------
    metric : callable
        The metric.
    name : str
        Its name, for the message.
    asker : str
        What needs the per-query values, for the message, e.g.
        ``"make_ranking_scorer('top1').score_predictions(..., average=False)"``.
    """
    try:
        signature = inspect.signature(metric)
    except (TypeError, ValueError):  # no signature (some builtins)
        return
    parameters = signature.parameters.values()
    if "average" in signature.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    ):
        return
    raise TypeError(
        f"{asker} needs a metric that accepts an 'average' parameter (average=False: "
        "one value per query, in the order of the sorted unique qid); the metric "
        f"{name!r} does not: {name}{signature}."
    )
