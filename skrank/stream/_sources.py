"""Sources of whole queries: arrays, memory maps, LETOR files and dask collections.

Every streamed computation of skrank (:func:`~skrank.stream.fit_stream`,
:func:`~skrank.stream.predict_stream`, :func:`~skrank.stream.score_stream`)
reads its data through :func:`query_chunks`, which turns a source into a
re-iterable sequence of ``(X, y, qid)`` chunks, each holding whole queries,
and refuses a query whose rows are not contiguous in the source: a stream
cannot regroup them, and training on the two halves of a list is what the
distributed rankers of other libraries do silently.
"""

import mmap
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..datasets._samples import _check_float_dtype
from ..utils._qid import check_qid
from ..utils._validation import is_integer

__all__ = ["query_chunks"]

#: Rows per chunk when the source does not fix them (a memory map, an array).
DEFAULT_CHUNK_ROWS = 100_000


def _shown(qid):
    """A query id as a message shows it (a Python scalar, not ``np.int64(3)``)."""
    return getattr(qid, "item", lambda: qid)()


class _WholeQueries:
    """Checks, chunk after chunk, that every query's rows come together.

    ``where(chunk, row)`` describes row ``row`` of chunk number ``chunk``
    for a message (a file line, a partition and its row, ...). What it keeps
    of the finished queries is compact: per chunk, their sorted ids and the
    row where each ended (two arrays, 16 bytes a query for integer ids); a
    chunk whose ids all exceed every finished one (ids in increasing order,
    as in a sorted file or a DataFrame indexed by qid) is checked without a
    look-up.
    """

    def __init__(self, where):
        self.where = where
        self.parts = []  # (chunk, sorted ids, row where each ended) of finished queries
        self.top = None  # the largest finished id
        self.open = None  # (qid, chunk, row) of the query the last chunk ended with
        self.kind = None  # "integers" or "strings": the ids of every chunk are of one kind

    def _first_stopped(self, runs):
        """``(i, (chunk, row))``: the first of ``runs`` that finished before, and where."""
        first = None
        for chunk, ids, rows in self.parts:  # one vectorised look-up per stored chunk
            k = np.minimum(np.searchsorted(ids, runs), len(ids) - 1)
            hits = np.flatnonzero(ids[k] == runs)
            if hits.size and (first is None or hits[0] < first[0]):
                first = (int(hits[0]), (chunk, int(rows[k[hits[0]]])))
        return first

    def check(self, qid, chunk):
        """Raise unless the queries of ``qid`` (chunk number ``chunk``) are whole.

        The first query of the chunk (in row order) that comes back after
        its rows stopped is named, with the row where they stopped and the
        row where they start again.
        """
        kind = "strings" if qid.dtype.kind in "USO" else "integers"
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:  # ids of two kinds never compare equal, nor in order
            raise ValueError(
                f"The query ids of the chunk starting at {self.where(chunk, 0)} are "
                f"{kind}, but those of the chunks before are {self.kind}: the qid of a "
                "stream must all be integers or all be strings."
            )
        n = len(qid)
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        ends = np.r_[starts[1:], n] - 1
        runs = qid[starts]
        if self.open is not None and runs[0] == self.open[0]:
            raise ValueError(
                f"qid={_shown(runs[0])!r} is split across two chunks: its rows run to "
                f"{self.where(self.open[1], self.open[2])} and go on at "
                f"{self.where(chunk, 0)}. Each chunk (partition, array) must hold whole "
                "queries."
            )
        # the first run of the chunk whose query stopped before: in this chunk,
        # at the previous chunk's end, or in an earlier chunk
        again, before = None, None
        order = np.argsort(runs, kind="stable")
        repeats = np.flatnonzero(runs[order][1:] == runs[order][:-1]) + 1
        if repeats.size:
            k = repeats[np.argmin(order[repeats])]
            again, before = int(order[k]), (chunk, int(ends[order[k - 1]]))
        if self.open is not None:
            hits = np.flatnonzero(runs == self.open[0])
            if hits.size and (again is None or hits[0] < again):
                again, before = int(hits[0]), self.open[1:]
        if self.top is not None and not (runs > self.top).all():
            found = self._first_stopped(runs)
            if found is not None and (again is None or found[0] < again):
                again, before = found
        if again is not None:
            raise ValueError(
                f"qid={_shown(runs[again])!r} is not contiguous: its rows stop at "
                f"{self.where(*before)} and start again at "
                f"{self.where(chunk, int(starts[again]))}. A stream needs each query's "
                "rows together (sort the rows by qid, or set the qid as the index of a "
                "dask DataFrame)."
            )
        if self.open is not None:  # the previous chunk's last query is finished now
            self._finish(self.open[1], np.asarray([self.open[0]]), np.asarray([self.open[2]]))
        if len(runs) > 1:
            keep = np.argsort(runs[:-1], kind="stable")
            self._finish(chunk, runs[:-1][keep], ends[:-1][keep])
        self.open = (runs[-1], chunk, int(ends[-1]))

    def _finish(self, chunk, ids, rows):
        """Keep ``ids`` (sorted) as finished queries of ``chunk`` that ended at ``rows``."""
        self.parts.append((chunk, ids, rows))
        self.top = ids[-1] if self.top is None else max(self.top, ids[-1])


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
            if np.shape(X)[0] == 0:  # an empty partition (after a filter, say)
                continue
            qid = check_qid(qid, np.shape(X)[0])
            checker.check(qid, i)
            yield X, y, qid

    def __repr__(self):
        return f"QueryChunks({self.description})"


def _check_parts(parts, single):
    """Raise unless every part ``(X, y, qid)`` is a 2-D ``X`` with one label per row.

    The ``X`` of every part must have the first part's columns: a chunk
    is one block of rows of one width. ``single``: ``parts`` is the one tuple
    given as the source (named ``source``, not ``source[0]``).
    """
    width = None
    for p, (X, y, _) in enumerate(parts):
        name = "source" if single else f"source[{p}]"
        shape = np.shape(X)
        if len(shape) != 2:
            raise ValueError(
                f"{name}: X must be a 2-D array of shape (n_rows, n_features); got an "
                f"array of shape {shape}."
            )
        if y is not None and np.shape(y)[:1] != shape[:1]:
            raise ValueError(
                f"{name}: y must hold one label per row of X ({shape[0]}); got "
                f"{np.shape(y)[0] if np.ndim(y) else 'a scalar'}."
            )
        if width is None:
            width = shape[1]
        elif shape[1] != width:
            raise ValueError(
                f"{name}: X has {shape[1]} columns, but the X of source[0] has {width}; "
                "every array of a source must have the same features."
            )


def _as_dtype(X, dtype):
    """``X`` (a chunk: an array, a memory map's slice, a sparse matrix) in ``dtype``."""
    if dtype is None or getattr(X, "dtype", None) == dtype:
        return X
    return X.astype(dtype) if sp.issparse(X) else np.asarray(X, dtype=dtype)


def _labelled(chunks, who):
    """The chunks of ``chunks``, raising for one without labels (``y`` None)."""
    for X, y, qid in chunks:
        if y is None:
            raise ValueError(
                f"{who} needs the labels of every row, but the source {chunks!r} gives "
                "y=None: pass (X, y, qid) with the labels y."
            )
        yield X, y, qid


def _part_rows(parts, chunk_rows, dtype=None):
    """``(chunks, where)`` of array parts ``(X, y, qid)``.

    ``chunks()`` cuts every part into chunks of whole queries (:func:`_cut`),
    their ``X`` in ``dtype`` (None: the part's own);
    ``where(chunk, row)`` names a chunk's row by its part and its row there,
    from the (part, first row) of each chunk, recorded as it is cut.
    """
    index = []

    def make():
        index.clear()
        for p, (X, y, qid) in enumerate(parts):
            if np.shape(X)[0] == 0 and len(qid) == 0:  # an empty array: no chunk
                continue
            qid = check_qid(qid, np.shape(X)[0])
            for lo, (X_chunk, y_chunk, q_chunk) in _cut(X, y, qid, chunk_rows):
                yield p, lo, (_as_dtype(X_chunk, dtype), y_chunk, q_chunk)

    def where(chunk, row):
        part, lo = index[chunk]
        return f"row {lo + row} of array {part}" if len(parts) > 1 else f"row {lo + row}"

    def chunks():
        for p, lo, chunk in make():
            index.append((p, lo))
            yield chunk

    return chunks, where


def _cut(X, y, qid, chunk_rows):
    """``(first row, (X, y, qid))`` of chunks of about ``chunk_rows`` rows, whole queries.

    ``y`` may be None (rows to score). The chunks of a memory map are views
    of it; once the next chunk is asked for, the pages of the previous one
    are released (:func:`release`), so that the resident memory stays that
    of a chunk, not of the rows read so far.
    """
    y = None if y is None else np.asarray(y)
    n = len(qid)
    boundaries = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    lo = 0
    while lo < n:
        j = int(np.searchsorted(boundaries, lo + chunk_rows, side="right")) - 1
        hi = int(boundaries[j])
        if hi <= lo:  # one query larger than chunk_rows: a chunk of its own
            hi = int(boundaries[np.searchsorted(boundaries, lo, side="right")])
        chunk = X[lo:hi]
        yield lo, (chunk, None if y is None else y[lo:hi], qid[lo:hi])
        release(chunk)
        lo = hi


def release(view):
    """Drop the resident pages of ``view``, a slice of a read-only memory map.

    A memory map keeps every page it has read resident (counted in the
    process's memory) until the system needs the memory back; advising that
    a chunk's pages are not needed frees them at once. They are read again
    from the file (or the page cache) if used again, so this changes no
    value. Anything else than a read-only ``np.memmap`` is left alone.
    """
    mapped = getattr(view, "_mmap", None)
    if (not isinstance(view, np.memmap) or mapped is None or view.mode != "r"
            or not hasattr(mapped, "madvise") or not hasattr(mmap, "MADV_DONTNEED")
            or view.nbytes == 0):
        return
    base = np.frombuffer(mapped, dtype=np.uint8).__array_interface__["data"][0]
    start = view.__array_interface__["data"][0] - base
    low = start - start % mmap.PAGESIZE  # madvise takes whole pages
    try:
        mapped.madvise(mmap.MADV_DONTNEED, low, start + view.nbytes - low)
    except (OSError, ValueError):  # a platform that refuses: the pages stay
        pass


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


def _check_applies(source, *, label, qid, n_features, zero_based):
    """Raise for an option given with a source it does not apply to.

    ``n_features`` and ``zero_based`` read a file; ``label`` and ``qid`` name
    the columns of a dask DataFrame. Given with another source they would do
    nothing, and a caller who set them would not learn it.
    """
    is_file = isinstance(source, (str, os.PathLike))
    is_frame = _is_dask(source) and hasattr(source, "columns")
    given = [(name, value) for name, value, applies in (
        ("n_features", n_features, is_file or n_features is None),
        ("zero_based", zero_based, is_file or zero_based is False),
        ("label", label, is_frame or label is None),
        ("qid", qid, is_frame or qid is None)) if not applies]
    if given:
        name, value = given[0]
        kind = ("a LETOR file" if is_file else "a dask DataFrame" if is_frame
                else "arrays (X, y, qid)")
        applies_to = ("a LETOR file source" if name in ("n_features", "zero_based")
                      else "a dask DataFrame source (the names of its columns)")
        raise ValueError(
            f"{name}={value!r} applies to {applies_to}; the source is {kind}, for which "
            f"it would be ignored. Leave {name} at its default."
        )


def _check_made(chunks, **options):
    """Raise for an option given beside chunks already made by :func:`query_chunks`.

    Their options were fixed when they were made; one given again would do
    nothing, and a caller who set it would not learn it.
    """
    for name, value in options.items():
        if name == "chunk_rows":
            at_default = is_integer(value) and value == DEFAULT_CHUNK_ROWS
        elif name == "zero_based":
            at_default = value is False or value is np.False_
        else:
            at_default = value is None
        if at_default:
            continue
        raise ValueError(
            f"{name}={value!r} applies when the chunks are made; the source {chunks!r} "
            f"was made by query_chunks already, with its own {name}, and would ignore "
            f"it. Pass {name} to query_chunks when making the chunks, or leave it at "
            "its default here."
        )


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
          computed one at a time (``persist()`` a frame that needed a
          shuffle, such as ``set_index`` of unsorted ids, or every
          partition recomputes it); empty partitions are skipped;
        - what this function returned (returned as it is; every other
          option must then be left at its default, since the chunks were
          made with their own).
    chunk_rows : int, default=100_000
        About how many rows a chunk of a file or of arrays holds (a query
        larger than that is a chunk of its own). A dask source keeps its
        partitions.
    label, qid : str, default=None
        The label and query id columns of a dask DataFrame (only there).
    n_features : int, default=None
        Width of ``X`` for a file (see
        :func:`~skrank.datasets.iter_letor_chunks`; only there).
    dtype : {np.float64, np.float32}, default=None
        dtype of the chunks' ``X`` (a chunk of arrays is converted, a copy);
        None keeps the source's (float64 for a file).
    zero_based : bool, default=False
        Whether a file's feature indices start at 0 (only there).

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
        At once, if an ``X`` of arrays is not 2-D, has another number of
        columns than the first array's, or has another number of rows than
        its ``y``; if ``dtype`` is not float32 or float64; or if an option
        is given for a source it does not apply to (``label`` for a file,
        ``n_features`` for arrays, ...; any option for a ``QueryChunks``).
    """
    if isinstance(source, QueryChunks):
        _check_made(source, chunk_rows=chunk_rows, label=label, qid=qid,
                    n_features=n_features, dtype=dtype, zero_based=zero_based)
        return source
    if not is_integer(chunk_rows) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer; got {chunk_rows!r}.")
    if dtype is not None:
        dtype = _check_float_dtype(dtype)
    _check_applies(source, label=label, qid=qid, n_features=n_features, zero_based=zero_based)
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
    if isinstance(source, tuple) and any(_is_dask(a) for a in source) and not all(
            _is_dask(a) for a in source):
        raise TypeError(
            "A tuple (X, y, qid) with dask arrays must be all dask arrays, chunked alike "
            "along the rows; got " + ", ".join(type(a).__name__ for a in source) + "."
        )
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
    if not parts:
        raise ValueError("source is an empty list: it holds no (X, y, qid) arrays.")
    _check_parts(parts, single=isinstance(source, tuple))
    chunks, where = _part_rows(parts, chunk_rows, dtype)
    n = len(parts)
    return QueryChunks(chunks, f"{n} array{'s' if n > 1 else ''}", where)
