"""Ranking rows inside their queries: the sorts every metric starts from.

Each query is sorted in the padded blocks of
:func:`skrank.utils._query_blocks.query_blocks` (one sort per block, no Python
loop over queries).
"""

import numpy as np

from ..utils._query_blocks import query_blocks
from ..utils._query_layout import stable_argsort_codes

__all__ = ["rank_order", "sorted_blocks", "tie_runs"]


def rank_order(layout, score, *, tiebreak=None, blocks=None):
    """Permutation of rows: queries in order, each by descending ``score``.

    Parameters
    ----------
    layout : QueryLayout
        The rows and their queries.
    score : ndarray of shape (n_samples,)
        Scores in row order; higher ranks first. May hold infinities.
    tiebreak : {"stable", "arbitrary"} or ndarray, default=None
        How to order rows of equal score. ``"stable"`` (or None) keeps row
        order; an array orders ties by ascending value, then row order;
        ``"arbitrary"`` lets the sort choose (faster; for callers that treat
        tied rows as one group).
    blocks : list of QueryBlock, default=None
        ``query_blocks(layout)``, when the caller has them already.

    Returns
    -------
    perm : ndarray of shape (n_samples,)
        ``score[perm]`` is grouped by query (in ``unique_qid`` order) and
        descending inside each query: ``perm[offsets[i] + r]`` is the row at
        rank ``r`` (0-based) of query ``i``.
    """
    key = -np.asarray(score, dtype=np.float64)
    if isinstance(tiebreak, str):
        if tiebreak not in ("stable", "arbitrary"):
            raise ValueError(f"Unknown tiebreak {tiebreak!r}.")
        secondary = None
    elif tiebreak is None:
        tiebreak, secondary = "stable", None
    else:
        secondary = np.asarray(tiebreak)
    if layout.order is None and layout.n_samples > 1:
        # rows already ranked (scores strictly decreasing inside every
        # query): the identity, whatever the tie-break, in one pass
        ranked = key[1:] > key[:-1]
        ranked[layout.offsets[1:-1] - 1] = True  # across a query boundary
        if ranked.all():
            return np.arange(layout.n_samples)
    if layout.n_queries == 1 or key.max() == np.inf:
        # padding sorts last only if no real key is +inf
        return _rank_order_flat(layout, key, tiebreak, secondary)
    perm = np.empty(layout.n_samples, np.intp)
    for block in query_blocks(layout) if blocks is None else blocks:
        keys = block.gather(key, np.inf)
        order = np.argsort(keys, axis=1)
        if not (secondary is None and tiebreak == "arbitrary"):
            order = _fix_ties(block, keys, order, secondary)
        if layout.order is None:  # row index = sorted position
            order += layout.offsets[block.queries][:, None]
            block.scatter(perm, order)
        else:
            block.scatter(perm, np.take_along_axis(block.rows, order, axis=1))
    return perm


def _fix_ties(block, keys, order, secondary):
    """Re-sort, stably, the rows of a block (``keys`` its values) whose real entries have ties."""
    ranked = np.take_along_axis(keys, order, axis=1)
    tied = ranked[:, 1:] == ranked[:, :-1]
    if block.valid is not None:
        tied &= block.valid[:, 1:]
    tied = tied.any(axis=1)
    if not tied.any():
        return order
    order = order.copy()
    sub = keys[tied]
    if secondary is None:
        order[tied] = np.argsort(sub, axis=1, kind="stable")
    else:
        second = block.gather(secondary.astype(np.float64), np.inf)[tied]
        first = np.argsort(second, axis=1, kind="stable")
        then = np.argsort(np.take_along_axis(sub, first, axis=1), axis=1, kind="stable")
        order[tied] = np.take_along_axis(first, then, axis=1)
    return order


def _rank_order_flat(layout, key, tiebreak, secondary):
    """:func:`rank_order` by global sorts (one query, or infinite scores)."""
    if secondary is not None:
        by_score = np.lexsort((secondary, key))
    elif tiebreak == "arbitrary":
        by_score = np.argsort(key)
    else:
        by_score = np.argsort(key, kind="stable")
    if layout.n_queries == 1:
        return by_score
    by_query = stable_argsort_codes(layout.codes[by_score], layout.n_queries)
    return by_score[by_query]


def sorted_blocks(layout, values, blocks=None):
    """Each query's values in descending order, in the padded blocks of the layout.

    Parameters
    ----------
    layout : QueryLayout
        The rows and their queries.
    values : ndarray of shape (n_samples,)
        Finite values in row order.
    blocks : list of QueryBlock, default=None
        ``query_blocks(layout)``, when the caller has them already.

    Yields
    ------
    queries : ndarray of int
        The query numbers of the block's rows.
    block : ndarray of shape (len(queries), width)
        Row ``j`` holds query ``queries[j]``'s values, largest first,
        followed by ``-inf`` padding.
    valid : ndarray of bool of the block's shape, or None
        Mask of the real entries (None when there is no padding).
    """
    values = np.asarray(values, dtype=np.float64)
    for block in query_blocks(layout) if blocks is None else blocks:
        ranked = np.sort(block.gather(values, -np.inf), axis=1)
        yield block.queries, ranked[:, ::-1], block.valid


def tie_runs(layout, values_sorted):
    """Runs of equal consecutive values inside each query.

    Parameters
    ----------
    layout : QueryLayout
        The rows and their queries.
    values_sorted : ndarray of shape (n_samples,)
        Values in sorted (or ranked) layout.

    Returns
    -------
    runs : tuple of (starts, sizes) or None
        Start and length of every run (a run never crosses a query
        boundary); None when every run has length one.
    """
    new = np.empty(layout.n_samples, dtype=bool)
    new[0] = True
    np.not_equal(values_sorted[1:], values_sorted[:-1], out=new[1:])
    new[layout.starts] = True
    if new.all():
        return None
    starts = np.flatnonzero(new)
    return starts, np.diff(np.append(starts, layout.n_samples))
