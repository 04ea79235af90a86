"""Query bookkeeping: the one place where rows are grouped by query id.

Every other module that needs per-query work (metrics, losses, per-query
normalisation, splitting checks) builds a :class:`QueryLayout` from ``qid`` and
uses its methods instead of grouping rows itself.

Conventions
-----------
* ``qid`` is a per-row array of integer or string ids; rows of one query need
  not be contiguous or sorted.
* Queries are numbered ``0 .. n_queries - 1`` in the order of the sorted unique
  ids (``layout.unique_qid``). Every per-query result is in that order.
* "Sorted order" means rows stably sorted by query: ``a[layout.order]``. Inside
  a query, rows keep their original relative order.
"""

import numbers
import warnings
from collections import namedtuple
from collections.abc import Mapping
from functools import cached_property

import numpy as np

__all__ = ["QueryBlock", "QueryLayout", "as_layout", "check_qid", "default_qid",
           "fitted_qid", "query_weights", "warn_implicit_query"]


def check_qid(qid, n_samples=None, *, name="qid"):
    """Validate a per-row array of query ids.

    Parameters
    ----------
    qid : array-like of shape (n_samples,)
        Query id of each row: integers, integral floats or strings.
    n_samples : int, default=None
        Expected number of rows. ``None`` skips the length check.
    name : str, default="qid"
        Name used in error messages.

    Returns
    -------
    qid : ndarray of shape (n_samples,)
        The ids as an integer or string array.

    Raises
    ------
    ValueError
        If ``qid`` is not 1-D, has the wrong length, is empty, or holds NaN,
        non-integral floats or integers outside the int64 range.
    TypeError
        If ``qid`` is None or holds values that are neither integers nor
        strings.
    """
    if qid is None:
        raise TypeError(
            f"{name} is required: pass one query id per row, got {name}=None."
        )
    if isinstance(qid, (str, bytes)) or np.isscalar(qid):
        raise ValueError(
            f"{name} must be a 1-D array with one query id per row, "
            f"got the scalar {qid!r}."
        )
    arr = np.asarray(qid)
    if arr.dtype.kind in "US" and not isinstance(qid, np.ndarray):
        # numpy turns [1, 1, "1", "1"] into strings, merging the int 1 and the
        # str "1" into one query: check the values as given
        values = np.asarray(qid, dtype=object).ravel()
        kind = str if arr.dtype.kind == "U" else bytes
        mixed = [v for v in values if not isinstance(v, kind)]
        if mixed:
            raise TypeError(
                f"{name} must hold integers or strings of one kind; got a mix, with "
                f"{mixed[0]!r} of type {type(mixed[0]).__name__} beside "
                f"{kind.__name__} values."
            )
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array with one query id per row, "
            f"got an array of shape {arr.shape}."
        )
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"{name} must have one entry per row: expected {n_samples} entries, "
            f"got {arr.shape[0]}."
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: at least one row is required.")

    if arr.dtype.kind == "f" and not isinstance(qid, np.ndarray):
        # numpy turns a list of Python ints beyond int64 ([2**64 - 1, 1]) into
        # floats: check the values as given
        values = np.asarray(qid, dtype=object)
        if all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
               for v in values):
            arr = values
    kind = arr.dtype.kind
    if kind == "O":
        first = arr[0]
        if all(isinstance(v, str) for v in arr):
            arr = arr.astype(str)
        elif all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr
        ):
            arr = _integer_ids(arr, name)
        else:
            raise TypeError(
                f"{name} must hold integers or strings of one kind; got an "
                f"object array with values such as {first!r} of type "
                f"{type(first).__name__}."
            )
    elif kind == "f":
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN; every row needs a query id.")
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = arr[(~np.isfinite(arr)) | (arr != np.round(arr))][0]
            raise ValueError(
                f"{name} must hold integer or string ids; got the non-integral "
                f"value {float(bad)!r}."
            )
        if np.abs(arr).max() > 2**53:
            bad = arr[np.abs(arr) > 2**53][0]
            raise ValueError(
                f"{name} holds the float {float(bad)!r}, beyond 2**53 where "
                "floats no longer represent integer ids exactly; pass integer "
                "ids."
            )
        arr = arr.astype(np.int64)
    elif kind == "b" or (kind == "i" and arr.dtype.itemsize < 8):
        arr = arr.astype(np.int64)
    elif kind == "u" and arr.dtype.itemsize < 8:
        arr = arr.astype(np.uint64)
    elif kind not in "iuUS":
        raise TypeError(
            f"{name} must hold integer or string ids, got dtype {arr.dtype}."
        )
    return arr


def _integer_ids(values, name):
    """Python integers as an int64 array (uint64 if they need it), or a ValueError."""
    low, high = min(values), max(values)
    if -(2**63) <= low and high < 2**63:
        return values.astype(np.int64)
    if 0 <= low and high < 2**64:
        return values.astype(np.uint64)
    if low < -(2**63) or high >= 2**64:
        bad = low if low < -(2**63) else high
        problem = f"the integer {bad!r}, beyond the 64-bit integers"
    else:
        problem = f"both {low!r} and {high!r}, which no one 64-bit integer type holds"
    raise ValueError(
        f"{name} holds {problem} (int64: [-2**63, 2**63), uint64: [0, 2**64)); "
        "pass smaller integers or strings."
    )


def default_qid(qid, n_samples, *, name="qid"):
    """``qid`` validated, or one query for all rows when it is None.

    The one place where "qid=None means one query" is spelled out.

    Parameters
    ----------
    qid : array-like of shape (n_samples,) or None
        Query id of each row.
    n_samples : int
        Number of rows.
    name : str, default="qid"
        Name used in error messages.

    Returns
    -------
    qid : ndarray of shape (n_samples,)
    """
    if qid is None:
        return np.zeros(n_samples, dtype=np.int64)
    return check_qid(qid, n_samples, name=name)


#: ``fit`` with ``qid=None`` on more rows than this warns: one query of
#: this many documents is rare in ranking data (LETOR and MSLR queries
#: average 20 to 150 documents), while a forgotten ``qid`` is common.
IMPLICIT_QUERY_MAX_ROWS = 100


def warn_implicit_query(qid, n_samples, owner):
    """Warn when ``fit`` got ``qid=None`` and more rows than one query usually has.

    See :data:`IMPLICIT_QUERY_MAX_ROWS`.
    """
    if qid is None and n_samples > IMPLICIT_QUERY_MAX_ROWS:
        warnings.warn(
            f"{owner}.fit got qid=None, so all {n_samples} rows are treated as ONE "
            "query. If they come from several queries, pass qid=... (with "
            "scikit-learn's cross-validation or search tools, turn on metadata "
            "routing, sklearn.set_config(enable_metadata_routing=True), or use "
            "skrank.model_selection). To confirm one query, pass qid=np.zeros(n).",
            UserWarning,
            stacklevel=3,
        )


def fitted_qid(qid, n_samples, n_fit_queries, *, owner, method, strict):
    """``qid`` validated for a method of an estimator fitted on ``n_fit_queries`` queries.

    ``qid=None`` means one query (:func:`default_qid`). After a fit on
    several queries that is almost always a forgotten ``qid``: with
    ``strict`` (a score, which would be a plausible but wrong number) it
    raises; otherwise (scores or features of a batch, which may be one
    query) it warns.
    """
    if qid is None and n_fit_queries > 1 and n_samples > 1:
        message = (
            f"{owner} was fitted on {n_fit_queries} queries, but {method} got "
            f"qid=None, which treats all {n_samples} rows as one query. Pass "
            "qid=... (with scikit-learn's tools and a Pipeline, turn on metadata "
            "routing: sklearn.set_config(enable_metadata_routing=True))"
        )
        if strict:
            raise ValueError(
                message + "; to score the rows as one query, pass qid=np.zeros(n)."
            )
        warnings.warn(message + ".", UserWarning, stacklevel=3)
    return default_qid(qid, n_samples)


def query_weights(sample_weight, layout, *, name="sample_weight"):
    """Per-query weights from per-row weights that are constant within each query.

    Ranking weights are query weights (as in LightGBM and XGBoost): every
    row of a query carries its query's weight, so that scikit-learn's tools,
    which slice per-row arrays with the rows, can pass them on.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,)
        Weight of each row, in the row order of ``layout``: finite,
        non-negative, the same for all rows of a query, not all zero.
    layout : QueryLayout
    name : str, default="sample_weight"
        Name used in error messages.

    Returns
    -------
    weights : ndarray of shape (n_queries,)
        Weight of each query, in query order.
    """
    weight = np.asarray(sample_weight)
    if weight.ndim != 1 or weight.shape[0] != layout.n_samples:
        raise ValueError(
            f"{name} must be a 1-D array with one weight per row ({layout.n_samples}); "
            f"got shape {weight.shape}."
        )
    if weight.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers; got dtype {weight.dtype}.")
    weight = weight.astype(np.float64)
    if not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise ValueError(f"{name} must be finite and non-negative; got values from "
                         f"{float(weight.min())!r} to {float(weight.max())!r}.")
    sorted_weight = layout.to_sorted(weight)
    per_query = layout.max(sorted_weight)
    lowest = layout.min(sorted_weight)
    varying = np.flatnonzero(lowest != per_query)
    if varying.size:
        q = int(varying[0])
        raise ValueError(
            f"{name} weighs whole queries, so it must be the same for all rows of a "
            f"query; query {layout.unique_qid[q].item()!r} has weights from "
            f"{float(lowest[q])!r} to {float(per_query[q])!r}."
        )
    if not np.any(per_query > 0):
        raise ValueError(f"{name} is zero for every query: nothing would count.")
    return per_query


def _encode(qid):
    """Sorted unique ids and the index of each row's id among them.

    Integer ids spanning a range not much larger than the number of rows are
    encoded with a lookup table in linear time; other ids go through
    ``np.unique``.
    """
    if qid.dtype.kind in "iu":
        # (64-bit ids: check_qid upcasts; qid >= lo so qid - lo cannot wrap)
        lo, hi = qid.min(), qid.max()
        if int(hi) - int(lo) <= 4 * qid.shape[0]:
            offset = (qid - lo).astype(np.intp)
            present = np.zeros(int(hi) - int(lo) + 1, dtype=bool)
            present[offset] = True
            lookup = np.cumsum(present) - 1
            return np.flatnonzero(present).astype(qid.dtype) + lo, lookup[offset]
    unique, codes = np.unique(qid, return_inverse=True)
    return unique, codes.reshape(-1)


def _stable_argsort_codes(codes, n_codes):
    """Stable argsort of small non-negative integer codes (radix where possible)."""
    if n_codes <= np.iinfo(np.uint16).max:
        return np.argsort(codes.astype(np.uint16, copy=False), kind="stable")
    return np.argsort(codes, kind="stable")


class QueryBlock(namedtuple("QueryBlock", ["queries", "slots", "rows", "valid"])):
    """One padded block of queries of similar sizes (see :meth:`QueryLayout.blocks`).

    Attributes
    ----------
    queries : ndarray of shape (n_block,)
        Query numbers of the block's rows, by decreasing size.
    slots : ndarray of shape (n_block, width) or None
        Sorted-order position of every cell; 0 in padding.
    rows : ndarray of shape (n_block, width) or None
        Row index of every cell (``order[slots]``, or ``slots`` when the
        rows are grouped), to gather values given in row order.
    valid : ndarray of bool of shape (n_block, width) or None
        Mask of the real cells; None when the block has no padding.
    """

    __slots__ = ()


class QueryLayout:
    """Rows grouped by query id.

    Parameters
    ----------
    qid : array-like of shape (n_samples,)
        Query id of each row (see :func:`check_qid`).
    n_samples : int, default=None
        Expected number of rows, checked against ``len(qid)``.

    Attributes
    ----------
    qid : ndarray of shape (n_samples,)
        The validated ids, in row order.
    unique_qid : ndarray of shape (n_queries,)
        Sorted distinct ids; query ``i`` is ``unique_qid[i]``.
    codes : ndarray of shape (n_samples,)
        Query number of each row, in row order.
    order : ndarray of shape (n_samples,) or None
        Stable permutation that sorts rows by query; ``None`` when the rows are
        already sorted (then sorted order is row order).
    offsets : ndarray of shape (n_queries + 1,)
        Query ``i`` occupies ``offsets[i]:offsets[i + 1]`` in sorted order.
    sizes : ndarray of shape (n_queries,)
        Number of rows of each query.
    n_samples, n_queries, max_size : int
        Number of rows, of queries, and the size of the largest query.
    """

    def __init__(self, qid, n_samples=None):
        qid = check_qid(qid, n_samples)
        self.qid = qid
        n = qid.shape[0]
        if n == 1 or np.all(qid[1:] >= qid[:-1]):
            # Already sorted: no sort needed (the common case for LETOR files).
            new = np.empty(n, dtype=bool)
            new[0] = True
            np.not_equal(qid[1:], qid[:-1], out=new[1:])
            starts = np.flatnonzero(new)
            self.unique_qid = qid[starts]
            self.order = None
        else:
            self.unique_qid, codes = _encode(qid)
            self.__dict__["codes"] = codes  # seeds the cached property
            self.order = _stable_argsort_codes(codes, len(self.unique_qid))
            sizes = np.bincount(codes, minlength=len(self.unique_qid))
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        self.n_samples = n
        self.n_queries = len(self.unique_qid)
        self.offsets = np.append(starts, n).astype(np.intp)
        self.sizes = np.diff(self.offsets)
        self.max_size = int(self.sizes.max())

    @classmethod
    def from_sizes(cls, sizes, unique_qid=None):
        """Layout of rows already grouped by query, from the sizes of the queries.

        For internal bookkeeping (e.g. a mini-batch of whole queries): the ids
        are not validated and the per-row ``qid`` is only built if asked for,
        so construction costs O(n_queries).

        Parameters
        ----------
        sizes : array-like of int, shape (n_queries,)
            Positive number of rows of each query, in row order.
        unique_qid : ndarray of shape (n_queries,), default=None
            Id of each query (sorted and distinct); None numbers them 0, 1, ...

        Returns
        -------
        layout : QueryLayout
            Its ``order`` is None: sorted order is row order.
        """
        layout = cls.__new__(cls)
        sizes = np.asarray(sizes, dtype=np.intp)
        layout.unique_qid = np.arange(len(sizes)) if unique_qid is None else unique_qid
        layout.order = None
        layout.offsets = np.zeros(len(sizes) + 1, dtype=np.intp)
        np.cumsum(sizes, out=layout.offsets[1:])
        layout.sizes = sizes
        layout.n_samples = int(layout.offsets[-1])
        layout.n_queries = len(sizes)
        layout.max_size = int(sizes.max())
        return layout

    @cached_property
    def qid(self):
        """The query id of each row, in row order."""
        return self.expand(self.unique_qid)

    # ------------------------------------------------------------------
    # Moving between row order and sorted order
    @property
    def starts(self):
        """Start of each query in sorted order, shape (n_queries,)."""
        return self.offsets[:-1]

    @cached_property
    def codes(self):
        """Query number of each row, in row order."""
        return self.to_rows(self.sorted_codes)

    @cached_property
    def sorted_codes(self):
        """Query number of each row in sorted order, shape (n_samples,)."""
        return np.repeat(np.arange(self.n_queries), self.sizes)

    @cached_property
    def index_in_query(self):
        """0-based index of each row inside its query, in sorted order.

        ``index_in_query[offsets[i] + r] == r``; for rows ranked inside their
        query (:meth:`rank_order`) it is the 0-based rank.
        """
        if self.max_size * self.n_queries == self.n_samples:  # equal sizes
            return np.tile(np.arange(self.max_size), self.n_queries)
        return np.arange(self.n_samples) - np.repeat(self.starts, self.sizes)

    def to_sorted(self, a):
        """Rows of ``a`` (first axis) in sorted order."""
        a = np.asarray(a)
        return a if self.order is None else a[self.order]

    def to_rows(self, a_sorted):
        """Inverse of :meth:`to_sorted`: scatter sorted rows back to row order."""
        a_sorted = np.asarray(a_sorted)
        if self.order is None:
            return a_sorted
        out = np.empty_like(a_sorted)
        out[self.order] = a_sorted
        return out

    def expand(self, per_query):
        """Repeat a per-query array (first axis) over each query's sorted rows."""
        return np.repeat(np.asarray(per_query), self.sizes, axis=0)

    def select(self, queries):
        """The rows of some queries, grouped, and their layout.

        Parameters
        ----------
        queries : array-like of int
            Distinct query numbers (indices into ``unique_qid``), in any order.

        Returns
        -------
        positions : ndarray of shape (n_selected_rows,)
            Sorted-order positions of the selected rows, query by query in
            increasing query number (within a query, in sorted order).
        layout : QueryLayout
            Layout of those rows taken in that order (already grouped, so its
            ``order`` is None); its ids are the selected ``unique_qid``.
        """
        queries = np.asarray(queries)
        if queries.ndim != 1 or queries.size == 0 or queries.dtype.kind not in "iu":
            raise ValueError(
                f"queries must be a non-empty 1-D array of query numbers; got {queries!r}."
            )
        queries = np.sort(queries)
        if queries[0] < 0 or queries[-1] >= self.n_queries or np.any(
            queries[1:] == queries[:-1]
        ):
            raise ValueError(
                f"queries must be distinct query numbers in [0, {self.n_queries}); "
                f"got {queries!r}."
            )
        positions, sizes = self.query_positions(queries)
        return positions, QueryLayout.from_sizes(sizes, self.unique_qid[queries])

    def ranges(self, max_rows):
        """Consecutive query ranges of at most ``max_rows`` rows each.

        For work done in chunks of queries within a memory budget: the
        ranges ``(lo, hi)`` cover queries ``0 .. n_queries - 1`` in order,
        each holding the rows ``offsets[lo]:offsets[hi]`` of sorted order; a
        query larger than ``max_rows`` is a range of its own.

        Parameters
        ----------
        max_rows : int
            Most rows of a range (at least 1).

        Yields
        ------
        lo, hi : int
            Queries ``lo .. hi - 1``.
        """
        max_rows = max(int(max_rows), 1)
        if self.n_samples <= max_rows:  # the common case: one range
            yield 0, self.n_queries
            return
        offsets, lo = self.offsets, 0
        while lo < self.n_queries:
            hi = int(np.searchsorted(offsets, offsets[lo] + max_rows, side="right")) - 1
            hi = min(max(hi, lo + 1), self.n_queries)
            yield lo, hi
            lo = hi

    def part(self, lo, hi):
        """Layout of the consecutive queries ``lo .. hi - 1`` (a range of :meth:`ranges`).

        Its rows are ``offsets[lo]:offsets[hi]`` of sorted order, grouped; its
        ids are those queries' ids, so per-query draws
        (:func:`skrank.losses.query_uniforms`) are the same on the part as on
        the whole layout.
        """
        return QueryLayout.from_sizes(self.sizes[lo:hi], self.unique_qid[lo:hi])

    def query_positions(self, queries):
        """Sorted-order positions of the rows of some queries, in the order given.

        Unchecked (for internal callers that draw ``queries`` themselves, such
        as a permutation of all queries per epoch); :meth:`select` is the
        checked form.

        Parameters
        ----------
        queries : ndarray of int
            Distinct query numbers, in any order.

        Returns
        -------
        positions : ndarray of shape (n_selected_rows,)
            The rows of ``queries[0]``, then those of ``queries[1]``, ...
        sizes : ndarray of shape (len(queries),)
            The sizes of those queries.
        """
        sizes = self.sizes[queries]
        new_starts = np.cumsum(sizes) - sizes
        positions = np.arange(int(sizes.sum())) + np.repeat(
            self.offsets[queries] - new_starts, sizes
        )
        return positions, sizes

    # ------------------------------------------------------------------
    # Per-query reductions of arrays in sorted order
    def reduce(self, ufunc, a_sorted):
        """``ufunc.reduceat`` over each query, along the first axis."""
        return ufunc.reduceat(np.asarray(a_sorted), self.starts, axis=0)

    def sum(self, a_sorted):
        """Per-query sum of an array in sorted order."""
        return self.reduce(np.add, a_sorted)

    def max(self, a_sorted):
        """Per-query maximum of an array in sorted order."""
        return self.reduce(np.maximum, a_sorted)

    def min(self, a_sorted):
        """Per-query minimum of an array in sorted order."""
        return self.reduce(np.minimum, a_sorted)

    def mean(self, a_sorted):
        """Per-query mean of an array in sorted order."""
        s = self.sum(a_sorted)
        return s / self.sizes.reshape((-1,) + (1,) * (s.ndim - 1))

    # ------------------------------------------------------------------
    # Padded blocks
    def blocks(self, *, growth=1.25, max_cost=np.inf, cost=None):
        """Queries of similar sizes packed into padded blocks, largest first.

        The one padding scheme of the package: per-query work that is easier
        on a rectangle (a sort inside every query, a recursion over
        documents) runs on blocks of shape ``(n_block, width)``, row ``b``
        holding the rows of query ``queries[b]`` in sorted order, followed by
        padding. Queries are sorted by decreasing size (ties by query number)
        and cut into consecutive blocks whose width is the size of their
        first (largest) query and whose smallest query has at least
        ``width / growth`` rows, so padding multiplies the cells by at most
        ``growth``; a block also holds at most ``max_cost / cost(width)``
        queries (always at least one).

        Because the queries of a block come by decreasing size, the queries
        that still have a row at column ``t`` (those with more than ``t``
        rows) are a prefix ``queries[:k]`` of the block; a recursion over
        columns (SoftRank's Rank-Binomial) can stop at the finished ones.

        When the rows are grouped (``order`` is None), every query has the
        same size and one block fits the budget, the single block is the data
        itself: ``block = values.reshape(n_queries, max_size)``, and
        ``slots``, ``rows`` and ``valid`` are None.

        The blocks for the default arguments are computed once and cached.

        Parameters
        ----------
        growth : float, default=1.25
            Largest ratio of a block's width to the size of its smallest
            query; at least 1. Smaller values pad less but make more blocks.
        max_cost : float, default=inf
            Budget of one block, in the units of ``cost``.
        cost : callable, default=None
            ``cost(width)`` of one query in a block of that width; None
            counts cells (``width``). Only called when ``max_cost`` is finite.

        Returns
        -------
        blocks : list of QueryBlock
            Tuples ``(queries, slots, rows, valid)`` covering every query
            once. Padding cells have slot 0 (and its row): callers mask them
            or overwrite their values.
        """
        if growth == 1.25 and max_cost == np.inf and cost is None:
            return self._default_blocks
        return self._make_blocks(growth, max_cost, cost)

    @cached_property
    def _default_blocks(self):
        """:meth:`blocks` for the default arguments (the metrics' blocks)."""
        return self._make_blocks(1.25, np.inf, None)

    def _make_blocks(self, growth, max_cost, cost):
        """:meth:`blocks`, not cached."""
        if not growth >= 1:
            raise ValueError(f"growth must be at least 1; got {growth!r}.")
        budget = bool(np.isfinite(max_cost))
        if budget and cost is None:

            def cost(width):
                return width

        width = self.max_size
        if (
            self.order is None
            and width * self.n_queries == self.n_samples
            and (not budget or self.n_queries * cost(width) <= max_cost)
        ):
            # equal sizes, rows grouped: the data itself is the one block
            return [QueryBlock(np.arange(self.n_queries), None, None, None)]
        # decreasing size, ties by query number
        by_size = _stable_argsort_codes(self.max_size - self.sizes, self.max_size + 1)
        sizes = self.sizes[by_size]
        neg_sizes = -sizes  # ascending, for searchsorted
        blocks = []
        start = 0
        while start < self.n_queries:
            width = int(sizes[start])
            # first query of the next block: too small, or over the budget
            stop = int(np.searchsorted(neg_sizes, -width / growth, side="right"))
            if budget:
                stop = min(stop, start + max(1, int(max_cost // cost(width))))
            queries = by_size[start:stop]
            cols = np.arange(width)
            slots = self.offsets[queries][:, None] + cols
            valid = None
            if int(sizes[stop - 1]) != width:
                valid = cols < sizes[start:stop, None]
                slots = np.where(valid, slots, 0)
            rows = slots if self.order is None else self.order[slots]
            blocks.append(QueryBlock(queries, slots, rows, valid))
            start = stop
        return blocks

    # ------------------------------------------------------------------
    # Sorting inside queries, in the blocks
    def _block_values(self, values, rows, valid, fill):
        """Values (row order) of the cells of a block; ``fill`` in padding."""
        if rows is None:
            return values.reshape(self.n_queries, self.max_size)
        block = values[rows]
        if valid is not None:
            block[~valid] = fill
        return block

    @staticmethod
    def _scatter(out, slots, valid, block):
        """Write the real cells of a block to their sorted-order positions."""
        if slots is None:
            out[:] = block.ravel()
        elif valid is None:
            out[slots.ravel()] = block.ravel()
        else:
            out[slots[valid]] = block[valid]

    def rank_order(self, score, *, tiebreak=None):
        """Permutation of rows: queries in order, each by descending ``score``.

        Parameters
        ----------
        score : ndarray of shape (n_samples,)
            Scores in row order; higher ranks first. May hold infinities.
        tiebreak : {"stable", "arbitrary"} or ndarray, default=None
            How to order rows of equal score. ``"stable"`` (or None) keeps row
            order; an array orders ties by ascending value, then row order;
            ``"arbitrary"`` lets the sort choose (faster; for callers that
            treat tied rows as one group).

        Returns
        -------
        perm : ndarray of shape (n_samples,)
            ``score[perm]`` is grouped by query (in ``unique_qid`` order) and
            descending inside each query: ``perm[offsets[i] + r]`` is the row
            at rank ``r`` (0-based) of query ``i``.
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
        if self.order is None and self.n_samples > 1:
            # rows already ranked (scores strictly decreasing inside every
            # query): the identity, whatever the tie-break, in one pass
            ranked = key[1:] > key[:-1]
            ranked[self.offsets[1:-1] - 1] = True  # across a query boundary
            if ranked.all():
                return np.arange(self.n_samples)
        if self.n_queries == 1 or key.max() == np.inf:
            # padding sorts last only if no real key is +inf
            return self._rank_order_flat(key, tiebreak, secondary)
        blocks = self.blocks()
        perm = None if blocks[0].slots is None else np.empty(self.n_samples, np.intp)
        for queries, slots, rows, valid in blocks:
            block = self._block_values(key, rows, valid, np.inf)
            order = np.argsort(block, axis=1)
            if not (secondary is None and tiebreak == "arbitrary"):
                order = self._fix_ties(block, order, valid, rows, secondary)
            if self.order is None:  # row index = sorted position
                order += self.offsets[queries][:, None]
                if slots is None:  # the whole data in one block
                    return order.ravel()
                self._scatter(perm, slots, valid, order)
            else:
                self._scatter(
                    perm, slots, valid, np.take_along_axis(rows, order, axis=1)
                )
        return perm

    def _fix_ties(self, block, order, valid, rows, secondary):
        """Re-sort, stably, the block rows whose real entries have ties."""
        ranked = np.take_along_axis(block, order, axis=1)
        tied = ranked[:, 1:] == ranked[:, :-1]
        if valid is not None:
            tied &= valid[:, 1:]
        tied = tied.any(axis=1)
        if not tied.any():
            return order
        order = order.copy()
        sub = block[tied]
        if secondary is None:
            order[tied] = np.argsort(sub, axis=1, kind="stable")
        else:
            second = self._block_values(
                secondary.astype(np.float64), rows, valid, np.inf
            )[tied]
            first = np.argsort(second, axis=1, kind="stable")
            then = np.argsort(
                np.take_along_axis(sub, first, axis=1), axis=1, kind="stable"
            )
            order[tied] = np.take_along_axis(first, then, axis=1)
        return order

    def _rank_order_flat(self, key, tiebreak, secondary):
        """:meth:`rank_order` by global sorts (one query, or infinite scores)."""
        if secondary is not None:
            by_score = np.lexsort((secondary, key))
        elif tiebreak == "arbitrary":
            by_score = np.argsort(key)
        else:
            by_score = np.argsort(key, kind="stable")
        if self.n_queries == 1:
            return by_score
        by_query = _stable_argsort_codes(self.codes[by_score], self.n_queries)
        return by_score[by_query]

    def sorted_blocks(self, values):
        """Each query's values in descending order, in the blocks of :meth:`blocks`.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            Finite values in row order.

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
        for queries, _, rows, valid in self.blocks():
            block = np.sort(self._block_values(values, rows, valid, -np.inf), axis=1)
            yield queries, block[:, ::-1], valid

    def runs(self, values_sorted):
        """Runs of equal consecutive values inside each query.

        Parameters
        ----------
        values_sorted : ndarray of shape (n_samples,)
            Values in sorted (or ranked) layout.

        Returns
        -------
        runs : tuple of (starts, sizes) or None
            Start and length of every run (a run never crosses a query
            boundary); None when every run has length one.
        """
        new = np.empty(self.n_samples, dtype=bool)
        new[0] = True
        np.not_equal(values_sorted[1:], values_sorted[:-1], out=new[1:])
        new[self.starts] = True
        if new.all():
            return None
        starts = np.flatnonzero(new)
        return starts, np.diff(np.append(starts, self.n_samples))

    def cumsum(self, a_sorted):
        """Cumulative sum inside each query of an array in sorted order."""
        total = np.cumsum(a_sorted, axis=0)
        before = total[self.starts] - np.asarray(a_sorted)[self.starts]
        return total - self.expand(before)

    def cumprod_before(self, a_sorted):
        """Product of the earlier entries of each query, in sorted order.

        ``out[offsets[i] + r]`` is the product of ``a_sorted[offsets[i]]``
        to ``a_sorted[offsets[i] + r - 1]`` (1 for a query's first row).
        Computed in the padded blocks, one query per row of a block, so a
        query's products do not depend on the queries before it, and zeros
        need no special case.
        """
        a_sorted = np.asarray(a_sorted, dtype=np.float64)
        out = np.empty_like(a_sorted)
        for _, slots, _, valid in self.blocks():
            block = self._block_values(a_sorted, slots, valid, 1.0)
            products = np.ones_like(block)
            np.cumprod(block[:, :-1], axis=1, out=products[:, 1:])
            self._scatter(out, slots, valid, products)
        return out


def as_layout(layout, n_samples=None, *, name="layout"):
    """A :class:`QueryLayout`, given one or the per-row query ids to build it from.

    What the public functions that group rows by query (the losses'
    ``prepare``, :func:`~skrank.losses.query_uniforms`) accept: the query
    ids, as ``fit``'s ``qid``, or a layout built from them once and reused.

    Parameters
    ----------
    layout : array-like of shape (n_samples,) or QueryLayout
        Query id of each row (see :func:`check_qid`), or their layout.
    n_samples : int, default=None
        Expected number of ids (e.g. ``len(y)``); None skips the check. A
        QueryLayout is returned as it is: its users check their arrays
        against its ``n_samples``.
    name : str, default="layout"
        Name used in error messages.

    Returns
    -------
    layout : QueryLayout
        ``layout`` itself when it is one.

    Raises
    ------
    TypeError
        If ``layout`` is neither a QueryLayout nor an array-like of ids
        (e.g. None, a dict, a string or a number).
    ValueError
        If the number of ids is not ``n_samples``, or the ids are invalid.
    """
    if isinstance(layout, QueryLayout):
        return layout
    if (layout is None or isinstance(layout, (str, bytes, Mapping))
            or np.ndim(layout) == 0):
        raise TypeError(
            f"{name} must be an array of query ids (one per row) or a QueryLayout; "
            f"got {type(layout).__name__} {layout!r:.80}."
        )
    return QueryLayout(check_qid(layout, n_samples, name=name))
