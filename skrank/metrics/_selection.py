"""Ranks and top-k selections of rows inside their queries.

Both helpers rank every query by descending score with one call to
:func:`skrank.metrics._query_ranking.rank_order` (no Python loop over queries)
and answer in the caller's row indexing, so the result can index ``X``,
``y`` and ``qid`` directly.
"""

import numpy as np

from ..utils._qid import resolve_qid
from ..utils._query_layout import QueryLayout
from ..utils._validation import is_integer
from ._query_ranking import rank_order, tie_runs
from ._ranking import _as_1d_float

__all__ = ["rank_within_queries", "top_k"]

_METHODS = ("average", "dense", "max", "min", "ordinal")


def _check_scores(scores):
    """``scores`` as a finite, non-empty 1-D float array."""
    scores = _as_1d_float(scores, "scores")
    if scores.shape[0] == 0:
        raise ValueError("scores is empty: at least one row is required.")
    bad = ~np.isfinite(scores)
    if bad.any():
        raise ValueError(
            f"scores contains NaN or infinity ({int(bad.sum())} of "
            f"{scores.shape[0]} values, first {scores[bad][0]!r} at row "
            f"{int(np.flatnonzero(bad)[0])}); scores must be finite."
        )
    return scores


def _layout(scores, qid, caller):
    """The query layout of ``scores``'s rows (``qid=None``: one query, as everywhere)."""
    return QueryLayout(resolve_qid(qid, scores.shape[0], caller=caller), n_samples=scores.shape[0])


def rank_within_queries(scores, *, qid=None, method="ordinal"):
    """Rank of every row inside its query, by descending score.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Finite score of each row; higher ranks first. A column vector of
        shape (n_samples, 1) is accepted.

    qid : array-like of shape (n_samples,), default=None
        Query id of each row, integers or strings, in any order. None means
        all rows are one query, as in every function of the package; with
        more than 100 rows that is more likely a forgotten ``qid``, and it
        warns (for one query, pass ``np.zeros(n_samples)``).

    method : {"ordinal", "min", "max", "average", "dense"}, default="ordinal"
        Rank given to rows of equal score in one query (the methods of
        :func:`scipy.stats.rankdata`, applied to ``-scores``).
        ``"ordinal"``: distinct ranks, ties in row order (the earlier row
        ranks higher); this is the order :func:`top_k` selects in.
        ``"min"``: every tied row gets the best (smallest) rank of the
        group. ``"max"``: the worst (largest). ``"average"``: the mean of
        the group's ordinal ranks. ``"dense"``: as ``"min"``, but the next
        distinct score gets the next integer (no gaps).

    Returns
    -------
    ranks : ndarray of shape (n_samples,)
        1-based rank of each row inside its query (1 is the highest score),
        in the caller's row order. int64, or float64 for
        ``method="average"``.

    Raises
    ------
    ValueError
        If ``scores`` is not 1-D, is empty or holds NaN or infinity; if
        ``qid`` does not have one entry per row; if ``method`` is unknown.
    TypeError
        If ``scores`` is not numeric or ``method`` is not a string.

    See Also
    --------
    top_k : The rows of the ``k`` best ranks of every query.
    scipy.stats.rankdata : The same methods for one array (ascending).

    Notes
    -----
    Rows are sorted once by (query, descending score, row index); tied
    groups are the runs of equal scores inside a query in that order, and
    ``"min"``, ``"max"``, ``"average"`` and ``"dense"`` give every row of a
    run the same rank. No Python loop runs over queries.

    Examples
    --------
    >>> from skrank.metrics import rank_within_queries
    >>> scores = [0.2, 0.9, 0.2, 0.5, 0.1]
    >>> qid = [1, 1, 1, 2, 2]
    >>> rank_within_queries(scores, qid=qid)
    array([2, 1, 3, 1, 2])
    >>> rank_within_queries(scores, qid=qid, method="min")
    array([2, 1, 2, 1, 2])
    >>> rank_within_queries(scores, qid=qid, method="average")
    array([2.5, 1. , 2.5, 1. , 2. ])
    >>> rank_within_queries(scores, qid=[0] * len(scores))  # one query
    array([3, 1, 4, 2, 5])
    """
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(
            f"method must be one of {list(_METHODS)}, got method={method!r}."
        )
    scores = _check_scores(scores)
    layout = _layout(scores, qid, "rank_within_queries")
    if method == "ordinal":
        perm = rank_order(layout, scores, tiebreak="stable")
        ranked = layout.index_in_query.astype(np.int64) + 1
    else:
        # ties share a rank, so their order inside the sort does not matter
        perm = rank_order(layout, scores, tiebreak="arbitrary")
        ranked = _tied_ranks(layout, scores[perm], method)
    ranks = np.empty_like(ranked)
    ranks[perm] = ranked
    return ranks


def _tied_ranks(layout, scores_ranked, method):
    """Ranks of rows in ranked layout (queries in order, scores descending)."""
    ordinal = layout.index_in_query.astype(np.int64) + 1
    runs = tie_runs(layout, scores_ranked)
    if runs is None:  # no ties: every method gives the ordinal rank
        return ordinal.astype(np.float64) if method == "average" else ordinal
    starts, sizes = runs
    if method == "dense":
        new_run = np.zeros(layout.n_samples, dtype=np.int64)
        new_run[starts] = 1
        return layout.cumsum(new_run)
    first = np.repeat(ordinal[starts], sizes)
    if method == "min":
        return first
    if method == "max":
        return first + np.repeat(sizes - 1, sizes)
    return first + np.repeat((sizes - 1) / 2.0, sizes)  # average


def top_k(scores, *, qid=None, k=10):
    """Row indices of the ``k`` highest-scoring rows of every query.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Finite score of each row; higher ranks first. A column vector of
        shape (n_samples, 1) is accepted.

    qid : array-like of shape (n_samples,), default=None
        Query id of each row, integers or strings, in any order. None means
        all rows are one query, as in every function of the package; with
        more than 100 rows that is more likely a forgotten ``qid``, and it
        warns (for one query, pass ``np.zeros(n_samples)``).

    k : int, default=10
        Number of rows kept per query; a query with fewer rows keeps all of
        them.

    Returns
    -------
    indices : ndarray of int of shape (n_selected,)
        Positions of the selected rows in the caller's row order, grouped by
        query in the order of the sorted unique ``qid`` and, inside a query,
        best rank first. ``n_selected`` is the sum over queries of
        ``min(k, n_rows_of_query)``. ``X[indices]``, ``y[indices]`` and
        ``qid[indices]`` are the selected rows in that order.

    Raises
    ------
    ValueError
        If ``scores`` is not 1-D, is empty or holds NaN or infinity; if
        ``qid`` does not have one entry per row; if ``k`` is below 1.
    TypeError
        If ``scores`` is not numeric, or ``k`` is not an integer (a bool,
        a float such as 3.0 and an ``np.timedelta64`` are refused).

    See Also
    --------
    rank_within_queries : The rank of every row.

    Notes
    -----
    Ties are broken by row order: among rows of equal score the earlier row
    ranks higher, so the selection is reproducible and equals the rows whose
    ``rank_within_queries(scores, qid=qid, method="ordinal")`` is at most ``k``.
    A boolean mask in row order is ``mask = np.zeros(n_samples, bool);
    mask[indices] = True``.

    Examples
    --------
    >>> from skrank.metrics import top_k
    >>> scores = [0.2, 0.9, 0.2, 0.5, 0.1, 0.7]
    >>> qid = ["b", "b", "b", "a", "a", "c"]
    >>> top_k(scores, qid=qid, k=2)
    array([3, 4, 1, 0, 5])
    >>> top_k(scores, qid=[0] * len(scores), k=3)  # one query
    array([1, 5, 3])
    """
    if not is_integer(k):
        raise TypeError(f"k must be a positive integer, got k={k!r}.")
    if k < 1:
        raise ValueError(f"k must be a positive integer, got k={k!r}.")
    scores = _check_scores(scores)
    layout = _layout(scores, qid, "top_k")
    perm = rank_order(layout, scores, tiebreak="stable")
    if k >= layout.max_size:
        return perm
    return perm[layout.index_in_query < k]
