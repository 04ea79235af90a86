"""Padded blocks: queries of similar sizes as the rows of rectangles.

The one padding scheme of the package. Per-query work that is easier on a
rectangle (a sort inside every query, a recursion over documents, the pairs
of a query's documents) runs on blocks of shape ``(n_block, width)``: row
``b`` of a block holds the rows of one query in the sorted order of its
:class:`~skrank.utils.QueryLayout`, followed by padding.
"""

from collections import namedtuple

import numpy as np

from ._query_layout import stable_argsort_codes

__all__ = ["QueryBlock", "cumprod_before", "query_blocks"]


class QueryBlock(namedtuple("QueryBlock", ["queries", "slots", "rows", "valid"])):
    """One padded block of queries of similar sizes (see :func:`query_blocks`).

    Attributes
    ----------
    queries : ndarray of shape (n_block,)
        Query numbers of the block's rows, by decreasing size.
    slots : ndarray of shape (n_block, width)
        Sorted-order position of every cell; 0 in padding.
    rows : ndarray of shape (n_block, width)
        Row index of every cell (``order[slots]``, or ``slots`` itself when
        the rows are grouped), to gather values given in row order.
    valid : ndarray of bool of shape (n_block, width) or None
        Mask of the real cells; None when the block has no padding.
    """

    __slots__ = ()

    def gather(self, values, fill, *, order="rows"):
        """The values of the block's cells, ``fill`` in its padding.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            Values in row order (gathered through ``rows``), or in sorted
            order with ``order="sorted"`` (through ``slots``).
        fill : scalar
            Value of the padding cells.
        order : {"rows", "sorted"}, default="rows"
            The order of ``values``.

        Returns
        -------
        block : ndarray of shape (n_block, width)
            A new array; a view of ``values`` when the block holds all of
            them in their order (grouped rows of queries of one size), which
            the caller must then not write to.
        """
        index = self.rows if order == "rows" else self.slots
        if self._all_rows(values) and index is self.slots:
            return values.reshape(index.shape)
        block = values[index]
        if self.valid is not None:
            block[~self.valid] = fill
        return block

    def scatter(self, out, block):
        """Write the real cells of a block of values to their sorted-order positions.

        Parameters
        ----------
        out : ndarray of shape (n_samples,)
            Written in place, in sorted order.
        block : ndarray of shape (n_block, width)
            A value for every cell of the block.
        """
        if self.valid is not None:
            out[self.slots[self.valid]] = block[self.valid]
        elif self._all_rows(out):
            out[:] = block.reshape(-1)
        else:
            out[self.slots] = block

    def _all_rows(self, values):
        """Whether the block holds every row, without padding: then ``slots`` is
        ``0 .. n_samples - 1`` in order (all queries of one size, by query number)."""
        return self.valid is None and self.slots.size == len(values)


def query_blocks(layout, *, growth=1.25, max_cost=np.inf, cost=None):
    """The queries of a layout packed into padded blocks, largest first.

    Queries are sorted by decreasing size (ties by query number) and cut
    into consecutive blocks whose width is the size of their first (largest)
    query and whose smallest query has at least ``width / growth`` rows, so
    padding multiplies the cells by at most ``growth``; a block also holds
    at most ``max_cost / cost(width)`` queries (always at least one).

    Because the queries of a block come by decreasing size, the queries that
    still have a row at column ``t`` (those with more than ``t`` rows) are a
    prefix ``queries[:k]`` of the block; a recursion over columns (SoftRank's
    Rank-Binomial) can stop at the finished ones.

    Parameters
    ----------
    layout : QueryLayout
        The rows and their queries.
    growth : float, default=1.25
        Largest ratio of a block's width to the size of its smallest query;
        at least 1. Smaller values pad less but make more blocks.
    max_cost : float, default=inf
        Budget of one block, in the units of ``cost``.
    cost : callable, default=None
        ``cost(width)`` of one query in a block of that width; None counts
        cells (``width``). Only called when ``max_cost`` is finite.

    Returns
    -------
    blocks : list of QueryBlock
        Tuples ``(queries, slots, rows, valid)`` covering every query once.
        Padding cells have slot 0 (and its row): callers mask them or
        overwrite their values.
    """
    if not growth >= 1:
        raise ValueError(f"growth must be at least 1; got {growth!r}.")
    budget = bool(np.isfinite(max_cost))
    if budget and cost is None:

        def cost(width):
            return width

    # decreasing size, ties by query number
    by_size = stable_argsort_codes(layout.max_size - layout.sizes, layout.max_size + 1)
    sizes = layout.sizes[by_size]
    neg_sizes = -sizes  # ascending, for searchsorted
    blocks = []
    start = 0
    while start < layout.n_queries:
        width = int(sizes[start])
        # first query of the next block: too small, or over the budget
        stop = int(np.searchsorted(neg_sizes, -width / growth, side="right"))
        if budget:
            stop = min(stop, start + max(1, int(max_cost // cost(width))))
        queries = by_size[start:stop]
        cols = np.arange(width)
        slots = layout.offsets[queries][:, None] + cols
        valid = None
        if int(sizes[stop - 1]) != width:
            valid = cols < sizes[start:stop, None]
            slots = np.where(valid, slots, 0)
        rows = slots if layout.order is None else layout.order[slots]
        blocks.append(QueryBlock(queries, slots, rows, valid))
        start = stop
    return blocks


def cumprod_before(layout, a_sorted, blocks=None):
    """Product of the earlier entries of each query, in sorted order.

    ``out[offsets[i] + r]`` is the product of ``a_sorted[offsets[i]]`` to
    ``a_sorted[offsets[i] + r - 1]`` (1 for a query's first row). Computed
    in the padded blocks, one query per row of a block, so a query's
    products do not depend on the queries before it, and zeros need no
    special case.

    Parameters
    ----------
    layout : QueryLayout
        The rows and their queries.
    a_sorted : array-like of shape (n_samples,)
        Values in sorted order.
    blocks : list of QueryBlock, default=None
        ``query_blocks(layout)``, when the caller has them already.

    Returns
    -------
    out : ndarray of shape (n_samples,)
        The products, float64, in sorted order.
    """
    a_sorted = np.asarray(a_sorted, dtype=np.float64)
    out = np.empty_like(a_sorted)
    for block in query_blocks(layout) if blocks is None else blocks:
        values = block.gather(a_sorted, 1.0, order="sorted")
        products = np.ones_like(values)
        np.cumprod(values[:, :-1], axis=1, out=products[:, 1:])
        block.scatter(out, products)
    return out
