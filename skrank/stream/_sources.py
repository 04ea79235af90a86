"""Sources of whole queries: arrays, memory maps, LETOR files and dask collections.

Every streamed computation of skrank (:func:`~skrank.stream.fit_stream`,
:func:`~skrank.stream.predict_stream`, :func:`~skrank.stream.score_stream`)
reads its data through :func:`query_chunks`, which turns a source into a
re-iterable sequence of ``(X, y, qid)`` chunks, each holding whole queries,
and refuses a query whose rows are not contiguous in the source: a stream
cannot regroup them, and training on the two halves of a list is what the
distributed rankers of other libraries do silently.
"""

import os
from dataclasses import dataclass

import numpy as np

from ..utils._query_layout import check_qid

__all__ = ["query_chunks"]

#: Rows per chunk when the source does not fix them (a memory map, an array).
DEFAULT_CHUNK_ROWS = 100_000


def _shown(qid):
    """A query id as a message shows it (a Python scalar, not ``np.int64(3)``)."""
    return getattr(qid, "item", lambda: qid)()


class _WholeQueries:
    """Checks, chunk after chunk, that every query's rows come together.

    ``where(chunk, row)`` describes row ``row`` of chunk number ``chunk``
    for a message (a file line, a partition and its row, ...).
    """

    def __init__(self, where):
        self.where = where
        self.finished = {}  # qid -> (chunk, row) of its last row
        self.open = None  # (qid, chunk, row) of the query the last chunk ended with

    def check(self, qid, chunk):
        """Raise unless the queries of ``qid`` (chunk number ``chunk``) are whole.

        The first query of the chunk (in row order) that comes back after
        its rows stopped is named, with the row where they stopped and the
        row where they start again.
        """
        n = len(qid)
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        ends = np.r_[starts[1:], n] - 1
        runs = qid[starts].tolist()
        if self.open is not None and runs[0] == self.open[0]:
            raise ValueError(
                f"qid={runs[0]!r} is split across two chunks: its rows run to "
                f"{self.where(self.open[1], self.open[2])} and go on at "
                f"{self.where(chunk, 0)}. Each chunk (partition, array) must hold whole "
                "queries."
            )
        if self.open is not None:
            self.finished[self.open[0]] = (self.open[1], self.open[2])
        # one step per query (not per row): where each query of the chunk ended
        for i, q in enumerate(runs):
            before = self.finished.get(q)
            if before is not None:
                raise ValueError(
                    f"qid={q!r} is not contiguous: its rows stop at "
                    f"{self.where(*before)} and start again at "
                    f"{self.where(chunk, int(starts[i]))}. A stream needs each query's "
                    "rows together (sort the rows by qid, or set the qid as the index "
                    "of a dask DataFrame)."
                )
            if i + 1 < len(runs):
                self.finished[q] = (chunk, int(ends[i]))
        self.open = (runs[-1], chunk, int(ends[-1]))


@dataclass
class QueryChunks:
    """A re-iterable sequence of ``(X, y, qid)`` chunks of whole queries.

    Made by :func:`query_chunks` (build it with that function); iterating it
    reads the source afresh (a file is re-read, a memory map is sliced
    again) and checks that its queries are whole.

    Parameters
    ----------
    make : callable
        Returns a fresh iterator of the source's ``(X, y, qid)`` chunks.
    description : str
        Names the source in messages and in the repr.
    where : callable
        ``where(chunk, row)`` describes row ``row`` of chunk number
        ``chunk`` for a message (a row of an array, of a block, of a
        partition).
    """

    make: object
    description: str
    where: object

    def __iter__(self):
        checker = _WholeQueries(self.where)
        for i, (X, y, qid) in enumerate(self.make()):
            qid = check_qid(qid, np.shape(X)[0])
            checker.check(qid, i)
            yield X, y, qid

    def __repr__(self):
        return f"QueryChunks({self.description})"


def _part_rows(parts, chunk_rows):
    """``where`` of array parts: the part and row of a chunk's row."""
    # chunk -> (part, first row) is recorded as the chunks are cut
    index = []

    def make():
        index.clear()
        for p, (X, y, qid) in enumerate(parts):
            qid = check_qid(qid, np.shape(X)[0])
            yield from ((p, lo, chunk) for lo, chunk in _cut(X, y, qid, chunk_rows))

    def where(chunk, row):
        part, lo = index[chunk]
        return f"row {lo + row} of array {part}" if len(parts) > 1 else f"row {lo + row}"

    def chunks():
        for p, lo, chunk in make():
            index.append((p, lo))
            yield chunk

    return chunks, where


def _cut(X, y, qid, chunk_rows):
    """``(first row, (X, y, qid))`` of chunks of about ``chunk_rows`` rows, whole queries."""
    y = np.asarray(y)
    n = len(qid)
    boundaries = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    lo = 0
    while lo < n:
        j = int(np.searchsorted(boundaries, lo + chunk_rows, side="right")) - 1
        hi = int(boundaries[j])
        if hi <= lo:  # one query larger than chunk_rows: a chunk of its own
            hi = int(boundaries[np.searchsorted(boundaries, lo, side="right")])
        yield lo, (X[lo:hi], y[lo:hi], qid[lo:hi])
        lo = hi


def _is_dask(source):
    module = type(source).__module__
    return module.startswith("dask.") or module.startswith("dask_expr")


def _dask_chunks(source, label, qid, dtype):
    """``(make, where, description)`` of a dask DataFrame's or dask arrays' partitions."""
    import dask  # only for a dask source; an optional dependency

    if isinstance(source, tuple):  # dask arrays (X, y, qid)
        X, y, q = source
        if X.ndim != 2 or X.numblocks[1] != 1:
            raise ValueError(
                "X must be a 2-D dask array chunked along its rows only (one block of "
                f"columns); got chunks {X.chunks[1]!r} along the columns. Rechunk it: "
                "X.rechunk({1: -1})."
            )
        if not (X.chunks[0] == y.chunks[0] == q.chunks[0]):
            raise ValueError(
                "X, y and qid must be chunked alike along the rows (their blocks are "
                "the partitions); got row chunks "
                f"{X.chunks[0]!r}, {y.chunks[0]!r} and {q.chunks[0]!r}."
            )
        starts = np.r_[0, np.cumsum(X.chunks[0])]

        def make():
            blocks = zip(X.to_delayed()[:, 0], y.to_delayed(), q.to_delayed())
            for X_block, y_block, q_block in blocks:  # computed one block at a time
                Xi, yi, qi = dask.compute(X_block, y_block, q_block)
                yield np.asarray(Xi, dtype=dtype), yi, qi

        def where(chunk, row):
            return f"row {row} of block {chunk} (row {starts[chunk] + row} of X)"

        return make, where, f"dask arrays of {X.numblocks[0]} blocks"

    if label is None or qid is None:
        raise ValueError(
            "A dask DataFrame source needs the names of its label and query id columns: "
            f"pass label=... and qid=...; got label={label!r}, qid={qid!r}."
        )
    frame = source
    index_qid = qid not in frame.columns
    if index_qid and frame.index.name != qid:
        raise ValueError(
            f"qid={qid!r} is neither a column nor the index of the dask DataFrame "
            f"(columns {list(frame.columns)!r}, index {frame.index.name!r})."
        )
    if label not in frame.columns:
        raise ValueError(
            f"label={label!r} is not a column of the dask DataFrame (columns "
            f"{list(frame.columns)!r})."
        )
    features = [c for c in frame.columns if c not in (label, qid)]

    def make():
        # one graph for all partitions, each computed when its chunk is needed
        for part in frame.to_delayed():
            part = part.compute()
            q = part.index.to_numpy() if index_qid else part[qid].to_numpy()
            yield part[features].to_numpy(dtype=dtype), part[label].to_numpy(), q

    def where(chunk, row):
        return f"row {row} of partition {chunk}"

    return make, where, f"a dask DataFrame of {frame.npartitions} partitions"


def query_chunks(source, *, chunk_rows=DEFAULT_CHUNK_ROWS, label=None, qid=None,
                 n_features=None, dtype=None, zero_based=False):
    """A re-iterable sequence of ``(X, y, qid)`` chunks of whole queries from ``source``.

    Parameters
    ----------
    source : path, tuple, list of tuples, dask DataFrame or QueryChunks
        Where the rows are:

        - a path (``str`` or ``os.PathLike``) of a LETOR / SVMlight file
          (``.gz`` and ``.bz2`` too), read chunk by chunk at every pass
          (:func:`~skrank.datasets.iter_letor_chunks`);
        - a tuple ``(X, y, qid)`` of arrays, or a list of such tuples (e.g.
          one per file). ``X`` may be an ``np.memmap`` or the result of
          ``np.load(..., mmap_mode="r")``: chunks are slices of it, so only
          the rows of one chunk are read at a time;
        - a tuple ``(X, y, qid)`` of dask arrays chunked alike along the rows,
          or a dask DataFrame with ``label`` and ``qid`` columns (``qid`` may
          be its index, e.g. after ``set_index("qid")``; every other column
          is a feature, in column order): one chunk per block or partition,
          computed one at a time;
        - what this function returned (returned as it is).
    chunk_rows : int, default=100_000
        About how many rows a chunk of a file or of arrays holds (a query
        larger than that is a chunk of its own). A dask source keeps its
        partitions.
    label, qid : str, default=None
        The label and query id columns of a dask DataFrame.
    n_features : int, default=None
        Width of ``X`` for a file (see
        :func:`~skrank.datasets.iter_letor_chunks`).
    dtype : dtype, default=None
        dtype of the chunks' ``X``; None keeps the source's (float64 for a
        file).
    zero_based : bool, default=False
        Whether a file's feature indices start at 0.

    Returns
    -------
    chunks : QueryChunks
        Iterating it yields ``(X, y, qid)``; each iteration reads the source
        afresh.

    Raises
    ------
    ValueError
        While iterating, if a query's rows are not contiguous (within a
        chunk, or a query continued by the next chunk, partition or array):
        the message names the qid and where its rows stop and start again.
    """
    if isinstance(source, QueryChunks):
        return source
    if not isinstance(chunk_rows, (int, np.integer)) or isinstance(chunk_rows, bool) or (
            chunk_rows < 1):
        raise ValueError(f"chunk_rows must be a positive integer; got {chunk_rows!r}.")
    if isinstance(source, (str, os.PathLike)):
        from ..datasets import iter_letor_chunks

        path = os.fspath(source)

        def make():
            # the reader refuses a query whose lines are not together, naming them
            return iter_letor_chunks(path, chunk_rows=chunk_rows, n_features=n_features,
                                     dtype=np.float64 if dtype is None else dtype,
                                     zero_based=zero_based)

        def where(chunk, row):
            return f"row {row} of chunk {chunk} of {path!r}"

        return QueryChunks(make, repr(path), where)
    if _is_dask(source) or (isinstance(source, tuple) and len(source) == 3
                            and any(_is_dask(a) for a in source)):
        make, where, description = _dask_chunks(source, label, qid, dtype)
        return QueryChunks(make, description, where)
    if isinstance(source, tuple):
        parts = [source]
    elif isinstance(source, list) and all(isinstance(p, tuple) for p in source):
        parts = source
    else:
        raise TypeError(
            "source must be a path of a LETOR file, a tuple (X, y, qid) of arrays, a "
            "list of such tuples, dask arrays (X, y, qid) or a dask DataFrame; got "
            f"{type(source).__name__}."
        )
    for p, part in enumerate(parts):
        if len(part) != 3:
            raise ValueError(
                f"source[{p}] must be a tuple (X, y, qid); got a tuple of {len(part)} items."
            )
    chunks, where = _part_rows(parts, chunk_rows)
    n = len(parts)
    return QueryChunks(chunks, f"{n} array{'s' if n > 1 else ''}", where)
