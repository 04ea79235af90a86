"""The query layout: rows grouped by query id, in the one place that groups them.

Every module that needs per-query work (metrics, losses, per-query
normalisation, splitting checks) builds a :class:`QueryLayout` from ``qid``
and uses its methods instead of grouping rows itself. The padded blocks of
queries live in :mod:`skrank.utils._query_blocks`, the ranking of rows inside
their queries in :mod:`skrank.metrics._query_ranking`.
"""

from collections.abc import Mapping
from functools import cached_property

import numpy as np

from ._qid import check_qid
from ._validation import is_integer

__all__ = ["QueryLayout", "as_layout", "stable_argsort_codes"]


def _check_sizes(sizes):
    """``from_sizes``' sizes as a 1-D intp array of positive integers."""
    try:
        arr = np.asarray(sizes)
    except ValueError as exc:  # a ragged nested sequence
        raise ValueError(
            "sizes must be a 1-D array of query sizes; got a ragged nested sequence."
        ) from exc
    if arr.ndim != 1:
        raise ValueError(
            f"sizes must be a 1-D array of query sizes; got an array of shape {arr.shape}."
        )
    if arr.shape[0] == 0:
        raise ValueError("sizes is empty: a layout needs at least one query.")
    if arr.dtype.kind == "O" and all(is_integer(v) for v in arr):
        try:  # Python integers, e.g. from a pandas object column
            arr = arr.astype(np.int64)
        except OverflowError:  # beyond 64 bits: too large, or negative, anyway
            low, high = min(arr), max(arr)
            bad = low if low < 1 else high
            raise ValueError(
                f"sizes must be positive integers below the largest array length "
                f"{np.iinfo(np.intp).max}; got the size {bad!r}."
            ) from None
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"sizes must hold integers (the number of rows of each query); got dtype "
            f"{arr.dtype} with values such as {_first_non_integer(arr)!r}."
        )
    if arr.dtype.kind == "u" and arr.max() > np.iinfo(np.intp).max:
        raise ValueError(
            f"sizes must be positive integers below the largest array length "
            f"{np.iinfo(np.intp).max}; got the size {int(arr.max())}."
        )
    arr = arr.astype(np.intp, copy=False)
    if arr.min() < 1:
        i = int(np.argmax(arr < 1))
        raise ValueError(
            f"sizes must be positive: every query has at least one row; got the size "
            f"{int(arr[i])} for query {i}."
        )
    return arr


def _first_non_integer(arr):
    """The first entry of ``arr`` that is not an integer, as a Python object."""
    for value in arr.ravel():
        if not is_integer(value):
            return value.item() if isinstance(value, np.generic) else value
    return arr.ravel()[0]  # pragma: no cover - only called on non-integer arrays


def _check_unique_qid(unique_qid, n_queries):
    """``from_sizes``' ids: 1-D, one per query, distinct."""
    try:
        ids = np.asarray(unique_qid)
    except ValueError as exc:  # a ragged nested sequence
        raise ValueError(
            "unique_qid must be a 1-D array of query ids; got a ragged nested sequence."
        ) from exc
    if ids.ndim != 1 or ids.shape[0] != n_queries:
        raise ValueError(
            f"unique_qid must have one id per query: expected shape ({n_queries},) as "
            f"sizes, got shape {ids.shape}."
        )
    if n_queries > 1:
        try:
            increasing = bool(np.all(ids[1:] > ids[:-1]))  # (sorted: distinct)
            values, counts = (None, None) if increasing else np.unique(ids, return_counts=True)
        except TypeError:  # ids of mixed kinds (an object array): not compared
            return ids
        if not increasing and len(values) < n_queries:
            twice = values[counts > 1][0]
            raise ValueError(
                f"unique_qid must hold distinct ids; got "
                f"{twice.item() if isinstance(twice, np.generic) else twice!r} "
                f"{int(counts[counts > 1][0])} times."
            )
    return ids


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


def stable_argsort_codes(codes, n_codes):
    """Stable argsort of small non-negative integer codes (radix where possible)."""
    if n_codes <= np.iinfo(np.uint16).max:
        return np.argsort(codes.astype(np.uint16, copy=False), kind="stable")
    return np.argsort(codes, kind="stable")


class QueryLayout:
    """Rows grouped by query id: what the losses take besides the labels.

    A layout is built once from the query id of every row and then gives the
    per-query bookkeeping: the queries' sizes and offsets, moving arrays
    between the rows' own order and an order grouped by query, and per-query
    reductions. Every public method of :mod:`skrank.losses` that takes a
    layout also takes the query ids themselves; building the layout once and
    passing it saves grouping the rows again.

    Conventions: queries are numbered ``0 .. n_queries - 1`` in the order of
    their sorted distinct ids (``unique_qid``), and every per-query array is
    in that order. *Sorted order* is the rows stably sorted by query,
    ``a[order]``: the rows of query ``i`` are ``offsets[i]:offsets[i + 1]``,
    in their original relative order. Rows of one query need not be
    contiguous or sorted; when they are already grouped in increasing id,
    sorted order is row order and ``order`` is None.

    Parameters
    ----------
    qid : array-like of shape (n_samples,)
        Query id of each row: integers, integral floats or strings (not a
        mix), as a ranker's ``qid``.
    n_samples : int, default=None
        Expected number of rows, checked against ``len(qid)``; None skips
        the check.

    Attributes
    ----------
    qid : ndarray of shape (n_samples,)
        The validated ids, in row order.
    unique_qid : ndarray of shape (n_queries,)
        Sorted distinct ids; query ``i`` is ``unique_qid[i]``.
    order : ndarray of shape (n_samples,) or None
        Stable permutation that sorts the rows by query; None when the rows
        are already sorted (then sorted order is row order).
    offsets : ndarray of shape (n_queries + 1,)
        Query ``i`` occupies ``offsets[i]:offsets[i + 1]`` in sorted order.
    sizes : ndarray of shape (n_queries,)
        Number of rows of each query.
    n_samples : int
        Number of rows.
    n_queries : int
        Number of queries.
    max_size : int
        Number of rows of the largest query.

    Raises
    ------
    ValueError
        If ``qid`` is not 1-D, is empty, does not have ``n_samples`` entries,
        or holds NaN, non-integral floats or integers beyond 64 bits.
    TypeError
        If ``qid`` is None or holds values that are neither integers nor
        strings, or a mix of both.

    See Also
    --------
    skrank.losses.ListwiseLoss.prepare : Takes the query ids or their layout.

    Examples
    --------
    >>> from skrank.utils import QueryLayout
    >>> layout = QueryLayout(["b", "a", "b", "a", "a"])
    >>> layout.unique_qid
    array(['a', 'b'], dtype='<U1')
    >>> layout.sizes
    array([3, 2])
    >>> layout.to_sorted([10, 20, 30, 40, 50])  # the rows of "a", then of "b"
    array([20, 40, 50, 10, 30])
    >>> layout.sum(layout.to_sorted([10, 20, 30, 40, 50]))  # one sum per query
    array([110,  40])
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
            self.order = stable_argsort_codes(codes, len(self.unique_qid))
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

        For bookkeeping inside a fit (e.g. a mini-batch of whole queries): the
        per-row ``qid`` is only built if asked for, and construction costs
        O(n_queries) (O(n_queries log n_queries) with ``unique_qid``, checked
        to be distinct).

        Parameters
        ----------
        sizes : array-like of int, shape (n_queries,)
            Positive number of rows of each query, in row order; at least one
            query, and at most ``np.iinfo(np.intp).max`` rows in all.
        unique_qid : array-like of shape (n_queries,), default=None
            Distinct id of each query, in row order (sorted, as in a layout
            built from ``qid``, unless the caller orders the queries otherwise,
            e.g. by size); None numbers them 0, 1, ... The ids are not
            otherwise validated.

        Returns
        -------
        layout : QueryLayout
            Its ``order`` is None: sorted order is row order.

        Raises
        ------
        ValueError
            If ``sizes`` is not 1-D, is empty, holds a size below 1 or sums
            past the largest array length, or if ``unique_qid`` is not 1-D,
            not of the length of ``sizes``, or holds an id twice.
        TypeError
            If ``sizes`` holds values that are not integers.
        """
        sizes = _check_sizes(sizes)
        if unique_qid is not None:
            unique_qid = _check_unique_qid(unique_qid, sizes.shape[0])
        layout = cls._from_trusted_sizes(sizes, unique_qid)
        # the sizes are positive, so a sum past the largest intp
        # (which wraps around) shows as offsets that do not increase
        if layout.n_queries > 1 and not np.all(layout.offsets[2:] > layout.offsets[1:-1]):
            total = sum(int(v) for v in sizes)
            raise ValueError(
                f"sizes must sum to at most {np.iinfo(np.intp).max} rows (the largest "
                f"array length); got sizes summing to {total}."
            )
        return layout

    @classmethod
    def _from_trusted_sizes(cls, sizes, unique_qid=None):
        """:meth:`from_sizes` without its checks, for sizes taken from a built layout.

        For the fit loop, whose mini-batches are whole queries of a checked
        layout: ``sizes`` must be a 1-D intp array of positive sizes (kept,
        not copied) summing to at most the largest array length, and
        ``unique_qid`` None or distinct ids, one per query. Nothing of that
        is verified.
        """
        layout = cls.__new__(cls)
        n_queries = sizes.shape[0]
        layout.unique_qid = np.arange(n_queries) if unique_qid is None else unique_qid
        layout.order = None
        layout.offsets = np.zeros(n_queries + 1, dtype=np.intp)
        np.cumsum(sizes, out=layout.offsets[1:])
        layout.sizes = sizes
        layout.n_samples = int(layout.offsets[-1])
        layout.n_queries = n_queries
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
        """Start of each query in sorted order, shape (n_queries,): ``offsets[:-1]``."""
        return self.offsets[:-1]

    @cached_property
    def codes(self):
        """Query number of each row, in row order, shape (n_samples,)."""
        return self.to_rows(self.sorted_codes)

    @cached_property
    def sorted_codes(self):
        """Query number of each row in sorted order, shape (n_samples,)."""
        return np.repeat(np.arange(self.n_queries), self.sizes)

    @cached_property
    def index_in_query(self):
        """0-based index of each row inside its query, in sorted order.

        ``index_in_query[offsets[i] + r] == r``; for rows ranked inside their
        query it is the 0-based rank.
        """
        if self.max_size * self.n_queries == self.n_samples:  # equal sizes
            return np.tile(np.arange(self.max_size), self.n_queries)
        return np.arange(self.n_samples) - np.repeat(self.starts, self.sizes)

    def _check_length(self, a, name, per_query=False):
        """``a`` as an array, checked to have one entry per row (or per query)
        along its first axis: a shape comparison, O(1)."""
        a = np.asarray(a)
        expected = self.n_queries if per_query else self.n_samples
        if a.ndim == 0 or a.shape[0] != expected:
            what = "n_queries" if per_query else "n_samples"
            raise ValueError(
                f"{name} must have {what}={expected} entries along its first axis "
                f"(one per {'query' if per_query else 'row'}); got an array of shape "
                f"{a.shape}."
            )
        return a

    def to_sorted(self, a):
        """The rows of an array in sorted order.

        Parameters
        ----------
        a : array-like of shape (n_samples, ...)
            Values in row order (along the first axis).

        Returns
        -------
        a_sorted : ndarray of shape (n_samples, ...)
            ``a[order]``; ``a`` itself (as an array) when ``order`` is None.

        Raises
        ------
        ValueError
            If ``a`` does not have ``n_samples`` entries along its first axis.
        """
        a = self._check_length(a, "a")
        return a if self.order is None else a[self.order]

    def to_rows(self, a_sorted):
        """The rows of an array in sorted order back in row order (the inverse of :meth:`to_sorted`).

        Parameters
        ----------
        a_sorted : array-like of shape (n_samples, ...)
            Values in sorted order (along the first axis).

        Returns
        -------
        a : ndarray of shape (n_samples, ...)
            The values in row order; ``a_sorted`` itself (as an array) when
            ``order`` is None.

        Raises
        ------
        ValueError
            If ``a_sorted`` does not have ``n_samples`` entries along its
            first axis.
        """
        a_sorted = self._check_length(a_sorted, "a_sorted")
        if self.order is None:
            return a_sorted
        out = np.empty_like(a_sorted)
        out[self.order] = a_sorted
        return out

    def expand(self, per_query):
        """A per-query array repeated over the rows of each query, in sorted order.

        Parameters
        ----------
        per_query : array-like of shape (n_queries, ...)
            One value (along the first axis) per query.

        Returns
        -------
        per_row : ndarray of shape (n_samples, ...)
            ``per_query[i]`` at the sorted positions of the rows of query ``i``.

        Raises
        ------
        ValueError
            If ``per_query`` does not have ``n_queries`` entries along its
            first axis.
        """
        per_query = self._check_length(per_query, "per_query", per_query=True)
        return np.repeat(per_query, self.sizes, axis=0)

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

        Raises
        ------
        ValueError
            If ``queries`` is empty, not 1-D integers, or holds a number twice
            or outside ``[0, n_queries)``.
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

        Parameters
        ----------
        lo, hi : int
            The first query and one past the last, ``0 <= lo < hi <= n_queries``.

        Returns
        -------
        layout : QueryLayout
            Its ``order`` is None: sorted order is row order.

        Raises
        ------
        ValueError
            If the range is empty or outside ``[0, n_queries]``.
        TypeError
            If ``lo`` or ``hi`` is not an integer.
        """
        # checked here: numpy fails on an empty range with its own words,
        # and slices a range past the queries short without a word
        for name, value in (("lo", lo), ("hi", hi)):
            if not is_integer(value):
                raise TypeError(f"{name} must be an integer query number; got {value!r}.")
        if not 0 <= lo < hi <= self.n_queries:
            raise ValueError(
                f"lo and hi must be query numbers with 0 <= lo < hi <= n_queries="
                f"{self.n_queries}; got lo={lo!r}, hi={hi!r}."
            )
        return QueryLayout.from_sizes(self.sizes[lo:hi], self.unique_qid[lo:hi])

    def query_positions(self, queries):
        """Sorted-order positions of the rows of some queries, in the order given.

        For callers that draw ``queries`` themselves, such as a permutation of
        all queries per epoch: the query numbers are checked to be 1-D
        integers in ``[0, n_queries)`` (a min and a max), not to be distinct;
        :meth:`select` is the fully checked form.

        Parameters
        ----------
        queries : array-like of int, shape (n_selected,)
            Distinct query numbers, in any order.

        Returns
        -------
        positions : ndarray of shape (n_selected_rows,)
            The rows of ``queries[0]``, then those of ``queries[1]``, ...
        sizes : ndarray of shape (len(queries),)
            The sizes of those queries.

        Raises
        ------
        ValueError
            If ``queries`` is not 1-D or holds a number outside
            ``[0, n_queries)``.
        TypeError
            If ``queries`` does not hold integers.
        """
        queries = np.asarray(queries)
        # checked here: numpy raises a bare IndexError for a number past
        # the queries, and counts a negative one from the end (rows beyond
        # n_samples)
        if queries.ndim != 1:
            raise ValueError(
                f"queries must be a 1-D array of query numbers; got an array of shape "
                f"{queries.shape}."
            )
        if queries.dtype.kind not in "iu":
            raise TypeError(
                f"queries must hold integer query numbers; got dtype {queries.dtype}."
            )
        if queries.shape[0]:
            low, high = queries.min(), queries.max()
            if low < 0 or high >= self.n_queries:
                bad = low if low < 0 else high
                raise ValueError(
                    f"queries must be query numbers in [0, {self.n_queries}); got "
                    f"{int(bad)}."
                )
        sizes = self.sizes[queries]
        new_starts = np.cumsum(sizes) - sizes
        positions = np.arange(int(sizes.sum())) + np.repeat(
            self.offsets[queries] - new_starts, sizes
        )
        return positions, sizes

    # ------------------------------------------------------------------
    # Per-query reductions of arrays in sorted order
    def reduce(self, ufunc, a_sorted):
        """A ufunc's reduction over the rows of each query.

        Parameters
        ----------
        ufunc : numpy.ufunc
            A binary ufunc, such as ``np.add`` or ``np.maximum``.
        a_sorted : array-like of shape (n_samples, ...)
            Values in sorted order (along the first axis).

        Returns
        -------
        per_query : ndarray of shape (n_queries, ...)
            ``ufunc.reduceat`` over each query, along the first axis.

        Raises
        ------
        TypeError
            If ``ufunc`` is not a numpy ufunc.
        ValueError
            If ``a_sorted`` does not have ``n_samples`` entries along its
            first axis.
        """
        if not isinstance(ufunc, np.ufunc):  # a name such as "add" has no .reduceat
            raise TypeError(
                f"ufunc must be a numpy ufunc such as np.add or np.maximum; got "
                f"{type(ufunc).__name__} {ufunc!r:.80}."
            )
        a_sorted = self._check_length(a_sorted, "a_sorted")
        return ufunc.reduceat(a_sorted, self.starts, axis=0)

    _REDUCTION_DOC = """Per-query {} of an array in sorted order.

        Parameters
        ----------
        a_sorted : array-like of shape (n_samples, ...)
            Values in sorted order (along the first axis).

        Returns
        -------
        per_query : ndarray of shape (n_queries, ...)

        Raises
        ------
        ValueError
            If ``a_sorted`` does not have ``n_samples`` entries along its
            first axis.
        """

    def sum(self, a_sorted):
        return self.reduce(np.add, a_sorted)

    def max(self, a_sorted):
        return self.reduce(np.maximum, a_sorted)

    def min(self, a_sorted):
        return self.reduce(np.minimum, a_sorted)

    def mean(self, a_sorted):
        s = self.sum(a_sorted)
        return s / self.sizes.reshape((-1,) + (1,) * (s.ndim - 1))

    sum.__doc__ = _REDUCTION_DOC.format("sum")
    max.__doc__ = _REDUCTION_DOC.format("maximum")
    min.__doc__ = _REDUCTION_DOC.format("minimum")
    mean.__doc__ = _REDUCTION_DOC.format("mean")
    del _REDUCTION_DOC

    def cumsum(self, a_sorted):
        """Cumulative sum inside each query of an array in sorted order.

        Parameters
        ----------
        a_sorted : array-like of shape (n_samples, ...)
            Values in sorted order (along the first axis).

        Returns
        -------
        cumsum : ndarray of shape (n_samples, ...)
            At the sorted position of each row, the sum of the values of its
            query's rows up to and including it.

        Raises
        ------
        ValueError
            If ``a_sorted`` does not have ``n_samples`` entries along its
            first axis.
        """
        a_sorted = self._check_length(a_sorted, "a_sorted")
        total = np.cumsum(a_sorted, axis=0)
        before = total[self.starts] - a_sorted[self.starts]
        return total - self.expand(before)


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
