"""Loaders for learning-to-rank files in the LETOR / SVMlight text format.

A LETOR file holds one query-document pair per line::

    <label> qid:<qid> 1:<v> 2:<v> ... <d>:<v> #docid = <id> ...

Parsing of the numeric part is left to :func:`sklearn.datasets.load_svmlight_file`;
this module adds what a ranking task needs on top of it: a mandatory per-row
``qid``, the document ids kept in the ``#docid = <id>`` comments, and the
five-fold ``Fold1`` .. ``Fold5`` layout of the LETOR benchmarks.
"""

import bz2
import codecs
import errno
import gzip
import io
import os
import re
import stat
import sys
import time
import warnings
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.utils import Bunch

from ..utils._memory import NotEnoughMemoryError, check_memory, format_bytes
from ..utils._sklearn_compat import MAX_LENGTH, Integer, StrOptions, validate_params
from ._dense_text import parse_dense_block
from ._samples import _check_float_dtype

__all__ = ["iter_letor_chunks", "load_letor", "load_letor_fold"]

# ``docid = <id>`` as a whole word anywhere in the comment of a line.
_DOCID_PATTERN = re.compile(rb"(?:^|\s)docid\s*=\s*(\S+)")

_FOLD_NAMES = [f"Fold{k}" for k in range(1, 6)]
_SPLITS = ("train", "vali", "test")
_SPLIT_SUFFIXES = (".txt", ".txt.gz")

# A line ending other than "\n": "\r\n" (Windows) or a lone "\r" (old Mac).
_CR_LINE_END = re.compile(rb"\r\n?")

_INT64 = np.iinfo(np.int64)


class FeatureWidthError(ValueError):
    """A file with a feature beyond the width asked for (``n_features``, or a stream's).

    A ValueError whose fields let a caller that chose the width (the command
    line, from a model) say so in its own terms: ``path``, ``line`` (the
    first line with such a feature; None when the whole file was read),
    ``column`` (the columns that feature needs) and ``width``.
    """

    def __init__(self, message, *, path, line, column, width):
        super().__init__(message)
        self.path, self.line, self.column, self.width = path, line, column, width


def _open_binary(path):
    """Open ``path`` for binary reading, decompressing as scikit-learn does.

    :func:`sklearn.datasets.load_svmlight_file` picks the decompressor from the
    extension (``.gz``, ``.bz2``); the docid reader must see the same bytes.
    """
    ext = os.path.splitext(path)[1]
    if ext == ".gz":
        return gzip.open(path, "rb")
    if ext == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


# The signature a compressed file starts with, by extension.
_COMPRESSED = {".gz": ("gzip", b"\x1f\x8b"), ".bz2": ("bzip2", b"BZh")}


def _decompression_problem(path, exc):
    """What is wrong with the compressed file ``path``, whose reading raised ``exc``.

    The file's first bytes tell a file that is no such file at all (plain
    text named ``.gz``) from a damaged one; the messages of ``gzip``
    tell a failed CRC or length check from other damage.
    """
    ext = os.path.splitext(path)[1]
    kind, signature = _COMPRESSED[ext]
    with open(path, "rb") as f:
        head = f.read(len(signature))
    message = str(exc)
    if isinstance(exc, EOFError) or (
        len(head) < len(signature) and signature.startswith(head)
    ):
        return f"is truncated: its {kind} data end before the end-of-stream marker"
    if head != signature:
        return (
            f"is not a valid {kind} file: its name ends in {ext!r} but it does "
            f"not start with the {kind} signature {signature!r} (it starts "
            f"with {head!r}; a plain-text file must not be named {ext!r})"
        )
    if message.startswith("CRC check failed"):
        return f"failed its CRC check: its {kind} data are corrupt ({message})"
    if message.startswith("Incorrect length"):
        return f"failed its length check: its {kind} data are corrupt ({message})"
    if message.startswith("Not a gzipped file"):
        return (
            f"is a corrupt {kind} file: bytes that are not {kind} follow its "
            f"first {kind} stream ({message})"
        )
    return f"is a corrupt {kind} file ({type(exc).__name__}: {message})"


def _read_checked(f, path, size=-1):
    """``f.read(size)``, a decompression failure raised as a ValueError naming ``path``.

    The errors of the decompressors (``EOFError``, ``gzip.BadGzipFile``,
    ``zlib.error``, ``OSError``) name no file. An ``OSError`` with an
    ``errno`` is a failure of the disk, not of the data, and is left as it is.
    """
    try:
        return f.read(size)
    except (EOFError, OSError, zlib.error) as exc:
        compressed = os.path.splitext(path)[1] in _COMPRESSED
        if not compressed or isinstance(exc, OSError) and exc.errno is not None:
            raise
        raise ValueError(
            f"The file {os.fspath(path)!r} {_decompression_problem(path, exc)}."
        ) from exc


def _read_text(path):
    """The bytes of ``path``, decompressed, with every line ending ``"\\n"``.

    A UTF-8 byte order mark at the start of the text is dropped.

    scikit-learn's parser and the docid reader split lines at ``"\\n"``
    only; a file that ends its lines with a lone ``"\\r"`` would otherwise be
    one line, its ``#docid`` comment hiding every row after the first.

    A compressed file that cannot be decompressed raises a ``ValueError``
    naming it (see :func:`_read_checked`).
    """
    with _open_binary(path) as f:
        text = _read_checked(f, path)
    if text.startswith(codecs.BOM_UTF8):
        # Some editors start a UTF-8 file with a byte order mark, which
        # scikit-learn's parser would read as part of the first label.
        text = text[len(codecs.BOM_UTF8):]
    if b"\r" in text:
        text = _CR_LINE_END.sub(b"\n", text)
    return text


# Bytes of text read and parsed at a time: the buffer of a load, besides X.
_BLOCK_SIZE = 4 * 2**20


def _iter_blocks(path, block_size=None):
    """Yield the text of ``path`` in blocks of whole lines, with their first line number.

    Each block is about ``block_size`` bytes (more when one line is longer)
    of whole lines, each ending in ``"\n"``: the text :func:`_read_text`
    returns, cut at line ends, without holding it all. A ``"\r\n"`` split
    between two reads is one line end; the last line gets a ``"\n"`` if it
    has none. Yields ``(text, first_line)``, ``first_line`` 1-based.
    """
    block_size = _BLOCK_SIZE if block_size is None else block_size
    with _open_binary(path) as f:
        head = b""  # a partial last line, and a "\r" held back
        first_line = 1
        raw = _read_checked(f, path, block_size)
        if raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8):]
        while raw:
            data = head + raw
            held = b""
            if data.endswith(b"\r"):  # its "\n" may come with the next read
                data, held = data[:-1], b"\r"
            if b"\r" in data:
                data = _CR_LINE_END.sub(b"\n", data)
            cut = data.rfind(b"\n") + 1
            head = data[cut:] + held
            if cut:
                block = data[:cut] if cut < len(data) else data
                yield block, first_line
                first_line += block.count(b"\n")
            raw = _read_checked(f, path, block_size)
        if head:
            head = _CR_LINE_END.sub(b"\n", head)
            yield head if head.endswith(b"\n") else head + b"\n", first_line


def _parsed_blocks(path, parser, n_threads):
    """Yield ``(text, first_line, parsed)`` for the blocks of ``path``, in order.

    ``parsed`` is what :func:`parse_dense_block` returns for the block with
    ``parser``'s keywords: a tuple, or None for a block that is not regular
    dense lines. Up to ``n_threads`` blocks are parsed at once in threads
    (NumPy's and pandas' loops release the GIL) while the next is read, so at
    most ``n_threads + 1`` blocks are held.
    """
    blocks = _iter_blocks(path)
    # The first block alone first: a file of irregular lines (most sparse
    # files) is then given up on before any other block is read.
    for text, first_line in islice(blocks, 1):
        yield text, first_line, parse_dense_block(text, **parser)
    if n_threads <= 1:
        for text, first_line in blocks:
            yield text, first_line, parse_dense_block(text, **parser)
        return
    with ThreadPoolExecutor(n_threads) as pool:
        pending = deque()
        for text, first_line in blocks:
            pending.append((text, first_line, pool.submit(parse_dense_block, text, **parser)))
            if len(pending) > n_threads:
                text, first_line, future = pending.popleft()
                yield text, first_line, future.result()
        while pending:
            text, first_line, future = pending.popleft()
            yield text, first_line, future.result()


def _line_number(text, row, first_line=1):
    """The line number of data line ``row`` (0-based) of ``text``, whose first line is ``first_line``."""
    match = next(islice(_DATA_LINE.finditer(text), row, None))
    return text.count(b"\n", 0, match.start()) + first_line


def _data_line_numbers(text, first_line, n_rows=None):
    """The line number of every data line of ``text``, whose first line is ``first_line``.

    ``n_rows``, the number of data lines if known: when every line is one,
    the numbers follow without a search.
    """
    n_lines = text.count(b"\n") + (not text.endswith(b"\n") and len(text) > 0)
    if n_rows == n_lines:  # no blank or comment line
        return np.arange(first_line, first_line + n_lines)
    starts = np.fromiter((m.start() for m in _DATA_LINE.finditer(text)), dtype=np.int64)
    ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord("\n"))
    return np.searchsorted(ends, starts) + first_line


def _read_docids(text, path, first_line=1):
    """The ``#docid = <id>`` of every data line of ``path``, in file order.

    A line counts as a data line exactly when scikit-learn's SVMlight parser
    keeps it: the text before the first ``#`` is not blank. Blank lines and
    comment-only lines are therefore skipped, and entry ``i`` of the result
    belongs to row ``i`` of the matrix.
    """
    docids = []
    with io.BytesIO(text) as f:
        for lineno, line in enumerate(f, start=first_line):
            data, hash_, comment = line.partition(b"#")
            if not data.split():
                continue
            match = _DOCID_PATTERN.search(comment) if hash_ else None
            if match is None:
                raise ValueError(
                    f"Line {lineno} of {os.fspath(path)!r} has no '#docid = <id>' "
                    "comment; load it with return_docids=False."
                )
            docids.append(match.group(1).decode("utf-8", errors="replace"))
    return np.asarray(docids, dtype=str)


# A data line (its text before any "#" is not blank) and its qid field.
_DATA_LINE = re.compile(rb"^[ \t]*[^\s#]", re.M)
_QID_FIELD = re.compile(rb"^(?=[ \t]*[^\s#])[^#\n]*?(?<!\S)qid:([^\s#]*)", re.M)


def _read_qid(text, path, n_rows, first_line=None):
    """The ``qid:<id>`` of every data line of ``text``, as int64.

    scikit-learn's parser builds its qid array in time quadratic in the
    number of lines (20 s for 200,000 lines), so the ids are read here with
    two whole-file regular expressions instead, in linear time.

    ``text`` is the whole file when ``first_line`` is None; otherwise a block
    of it starting at line ``first_line``, and a data line without a qid is
    named, since the counts of a block say nothing of the file.
    """
    path = os.fspath(path)
    found = _QID_FIELD.findall(text)
    n_lines = len(_DATA_LINE.findall(text))
    if first_line is not None and len(found) != n_lines:  # name the first line without
        starts = {match.start() for match in _QID_FIELD.finditer(text)}
        for match in _DATA_LINE.finditer(text):
            if match.start() not in starts:
                lineno = text.count(b"\n", 0, match.start()) + first_line
                raise ValueError(
                    f"Line {lineno} of {path!r} has no 'qid:<id>' field; a "
                    "ranking data set needs one query id per row."
                )
    if n_rows == 0 or n_lines == 0:
        raise ValueError(f"The file {path!r} has no data lines.")
    if not found:
        raise ValueError(
            f"The file {path!r} has no qid: none of its lines has a 'qid:<id>' "
            "field. A ranking data set needs one query id per row; for "
            "SVMlight files without queries use "
            "sklearn.datasets.load_svmlight_file."
        )
    if len(found) != n_lines or n_lines != n_rows:
        raise ValueError(
            f"The file {path!r} has a qid on only {len(found)} of its "
            f"{n_lines} data lines; every line needs a 'qid:<id>' field."
        )
    try:
        return np.array(found).astype(np.int64)
    except (ValueError, OverflowError):
        # Every data line has one qid: entry ``row`` is on data line ``row``.
        row, problem = next(
            (row, problem)
            for row, value in enumerate(found)
            if (problem := _qid_problem(value)) is not None
        )
        lineno = _line_number(text, row, first_line or 1)
        raise ValueError(f"Line {lineno} of {path!r} has {problem}.") from None


def _qid_problem(value):
    """Why the bytes ``value`` of a ``qid:`` field are no int64, or None."""
    shown = value.decode(errors="replace")
    try:
        number = int(value)
    except ValueError:
        return f"a non-integer qid {shown!r}"
    if not _INT64.min <= number <= _INT64.max:
        return (
            f"qid {shown}, beyond the int64 range [{_INT64.min}, "
            f"{_INT64.max}] in which query ids are read"
        )
    return None


# What scikit-learn's parser raises on a line it cannot read: ValueError
# (float(), int(), a field without ":"), OverflowError (an index beyond C int).
_PARSE_ERRORS = (ValueError, OverflowError)
# The largest feature index scikit-learn's parser holds (a C int).
_MAX_INDEX = np.iinfo(np.intc).max
# How much of a bad line an error message shows.
_SHOWN_LINE_LENGTH = 80


def _parse(text, dtype=np.float64):
    """``X, y`` of the LETOR text ``text``, its indices as written, no qid."""
    return load_svmlight_file(
        io.BytesIO(text), dtype=dtype, zero_based=True, query_id=False
    )


def _first_unparsable_line(text):
    """The 1-based number of the first line of ``text`` :func:`_parse` rejects.

    scikit-learn's parser reads every line on its own, so the lines it
    rejects are found by bisection over halves of the text: the first half
    is parsed, and the search goes on in it if it fails, in the second half
    otherwise. That parses about the whole text once more, in C, with no
    Python loop over lines. Returns None if the line found parses after all
    (the error was not in one line).
    """
    ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord("\n")) + 1
    # Line i (0-based) is text[bounds[i]:bounds[i + 1]].
    bounds = np.concatenate(([0], ends, [len(text)] if text[-1:] != b"\n" else []))
    bounds = bounds.astype(np.int64)

    def fails(first, stop):
        try:
            _parse(text[bounds[first] : bounds[stop]])
        except _PARSE_ERRORS:
            return True
        return False

    low, high = 0, len(bounds) - 1  # the bad line is in lines [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        if fails(low, middle):
            high = middle
        else:
            low = middle
    return low + 1 if high > low and fails(low, high) else None


def _shown(data, limit=None):
    """The bytes ``data`` quoted for a message, cut to ``limit`` bytes."""
    if limit is not None and len(data) > limit:
        return repr(data[: limit - 3] + b"...")[1:]
    return repr(data)[1:]


def _not_a_number(field):
    """Why the bytes ``field`` are no number (a non-UTF-8 byte, or simply not)."""
    try:
        field.decode("utf-8")
    except UnicodeDecodeError:
        return "is not a number: it holds a byte that is not UTF-8"
    return "is not a number"


def _line_problem(line):
    """Why scikit-learn's parser rejects the line ``line``, in words, or None.

    The checks follow the parser's: a label that ``float()`` reads, an
    optional ``qid:`` field right after it, then ``<index>:<value>`` fields
    with ``int()`` indices, increasing, and ``float()`` values.
    """
    fields = line.partition(b"#")[0].split()
    if not fields:
        return None
    label, features = fields[0], fields[1:]
    try:
        float(label)
    except ValueError:
        if b":" in label:
            return f"has no label: its first field {_shown(label)} is not a number"
        return f"has a label {_shown(label)} that {_not_a_number(label)}"
    n_qid = sum(field.startswith(b"qid:") for field in fields)
    if n_qid > 1:
        return f"has {n_qid} 'qid:' fields, where one is expected"
    if features and features[0].startswith(b"qid:"):
        features = features[1:]
    previous = -1
    for field in features:
        written, colon, value = field.partition(b":")
        if field.startswith(b"qid:"):
            return (
                f"has its qid field {_shown(field)} after a feature; it must "
                "come right after the label"
            )
        if not colon:
            return f"has a field {_shown(field)} that is not '<index>:<value>'"
        try:
            index = int(written)
        except ValueError:
            return (
                f"has a feature index {_shown(written)} that is not an integer "
                f"(in {_shown(field)})"
            )
        if index < 0 or index > _MAX_INDEX:
            return (
                f"has a feature index {index} out of the range 0 .. {_MAX_INDEX} "
                f"that scikit-learn's parser reads (in {_shown(field)})"
            )
        if index <= previous:
            return (
                f"has feature indices that do not increase ({previous} then "
                f"{index}); the indices of a line must be sorted and unique"
            )
        if not value:
            return f"has a feature {_shown(field)} without a value"
        try:
            float(value)
        except ValueError:
            return (
                f"has a feature value {_shown(value)} that {_not_a_number(value)} "
                f"(in {_shown(field)})"
            )
        previous = index
    return None


def _parse_error(text, path, exc, first_line=1):
    """The ValueError for ``exc``, raised by scikit-learn's parser on ``text``.

    It names the file, and the first line the parser rejects with the reason
    in words (scikit-learn's own message when none is found) and the start of
    the line. Only called once parsing has failed: the search for the line
    costs about one more parse.
    """
    path = os.fspath(path)
    lineno = _first_unparsable_line(text)
    if lineno is None:  # pragma: no cover - the parser reads lines one by one
        return ValueError(
            f"The file {path!r} cannot be parsed as LETOR / SVMlight text: {exc}"
        )
    line = text.split(b"\n", lineno)[lineno - 1]
    problem = _line_problem(line) or f"cannot be parsed ({exc})"
    return ValueError(
        f"Line {lineno + first_line - 1} of {path!r} {problem}; the line reads "
        f"{_shown(line, _SHOWN_LINE_LENGTH)}."
    )


def _non_finite(X, y, line_of_row):
    """Where labels ``y`` or values of ``X`` are NaN or infinite, as a 4-tuple.

    ``(n_labels, label_line, n_values, value_line)``: the number of
    non-finite labels and feature values (the stored values of a sparse
    ``X``), and the line of the first of each (None if there is none);
    ``line_of_row(row)`` gives the line of a row. A sum is finite only when
    all its terms are, so data without such values cost two sums; an
    overflowing sum is then counted exactly and finds nothing.
    """
    values = X.data if sp.issparse(X) else X.reshape(-1)
    # inf + (-inf) is NaN: numpy's "invalid value" warning is not the user's
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(y.sum()) and np.isfinite(values.sum()):
            return (0, None, 0, None)
    bad_labels = np.flatnonzero(~np.isfinite(y))
    bad_values = np.flatnonzero(~np.isfinite(values))
    label_line = line_of_row(bad_labels[0]) if bad_labels.size else None
    value_line = None
    if bad_values.size:
        if sp.issparse(X):
            row = np.searchsorted(X.indptr, bad_values[0], side="right") - 1
        else:
            row = bad_values[0] // max(X.shape[1], 1)
        value_line = line_of_row(row)
    return (bad_labels.size, label_line, bad_values.size, value_line)


def _add_non_finite(first, second):
    """The counts of :func:`_non_finite` of two consecutive parts of a file."""
    n_labels, label_line, n_values, value_line = first
    return (
        n_labels + second[0],
        label_line if label_line is not None else second[1],
        n_values + second[2],
        value_line if value_line is not None else second[3],
    )


def _warn_non_finite(path, found, stacklevel):
    """Warn of the non-finite labels and values ``found`` by :func:`_non_finite`.

    ``stacklevel`` counts from the caller of this function, so that the
    warning points at the user's call.
    """
    n_labels, label_line, n_values, value_line = found
    parts = []
    if n_labels:
        parts.append(
            f"{n_labels} non-finite label{'s' * (n_labels > 1)} "
            f"(the first on line {label_line})"
        )
    if n_values:
        parts.append(
            f"{n_values} non-finite feature value{'s' * (n_values > 1)} "
            f"(the first on line {value_line})"
        )
    if parts:
        warnings.warn(
            f"The file {os.fspath(path)!r} has {' and '.join(parts)}: NaN or "
            "infinity, loaded as they are.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def _shift_to_one_based(X, text, path, first_line=1):
    """Turn the columns of ``X``, parsed as zero-based, to one-based, in place.

    A feature index 0 has no column in a one-based file; it is a stored entry
    of column 0 whatever its value, since scikit-learn's parser keeps explicit
    zeros (``0:0.0``). Indices are unique and increasing within a row, so the
    first stored 0 belongs to the first offending row.
    """
    if X.nnz and X.indices.min() == 0:
        row = np.searchsorted(X.indptr, np.argmin(X.indices), side="right") - 1
        raise ValueError(
            f"Line {_line_number(text, row, first_line)} of {os.fspath(path)!r} has the "
            "feature index 0, but zero_based=False reads one-based indices "
            "(LETOR's convention). If the file is zero-based, as written by "
            "sklearn.datasets.dump_svmlight_file(..., zero_based=True), pass "
            "zero_based=True."
        )
    X.indices -= 1


def _check_no_nul(path, name):
    """Refuse a path holding a NUL character, which no file name can.

    open() says only "embedded null byte", naming nothing; os.path.exists()
    says False, which would read as a missing file.
    """
    if "\0" in os.fspath(path):
        raise ValueError(f"{name} must not contain a NUL character; got {path!r}.")


# What a path is when it is not a regular file, by the type in its stat.
_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _file_kind(path):
    """What ``path`` is when it is not a regular file (``"a named pipe"``, ...), else None.

    Symbolic links are followed. The ``OSError`` of :func:`os.stat` is
    raised as it is: ``FileNotFoundError`` when nothing is at ``path``.
    """
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return None
    return next((kind for is_kind, kind in _FILE_KINDS if is_kind(mode)), "a special file")


def _check_regular_file(path, reader):
    """Raise unless ``path`` is a regular file, before anything opens it.

    Opening a named pipe waits until a program opens it for writing, which
    may never happen; a loader that reads the file twice (the fast parser,
    then the careful one) or at every epoch cannot read a pipe anyway, and a
    device or a socket is no data file. A folder raises
    ``IsADirectoryError``, as opening it would; a missing path
    ``FileNotFoundError``. ``reader`` names the function in the message.
    """
    kind = _file_kind(path)
    if kind is None:
        return
    if kind == "a folder":
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    raise ValueError(
        f"{os.fspath(path)!r} is {kind}, not a regular file; {reader} reads regular "
        "files only. Save the data to a file and pass its path."
    )


def _lines_of_rows(path, rows):
    """The line numbers (1-based) of the data rows ``rows`` (0-based, increasing) of ``path``.

    A row is a data line as the loaders count them (blank and comment-only
    lines are none), so the rows of :func:`load_letor`'s arrays, or of the
    chunks of :func:`iter_letor_chunks` one after the other, are found on
    the lines of the file. The file is read until the last of ``rows``; rows
    beyond its end (a file changed since it was loaded) have no line and are
    left out.
    """
    rows = np.asarray(rows, dtype=np.int64)
    lines = np.empty(rows.size, dtype=np.int64)
    done = seen = 0
    for text, first_line in _iter_blocks(path):
        numbers = _data_line_numbers(text, first_line)
        stop = done + int(np.searchsorted(rows[done:], seen + numbers.size))
        lines[done:stop] = numbers[rows[done:stop] - seen]
        done, seen = stop, seen + numbers.size
        if done == rows.size:
            break
    return lines[:done]


_ENGINES = ("auto", "numpy", "pandas", "sklearn")
# Threads that parse blocks at once; each holds a block and its temporaries.
_MAX_THREADS = 4


def _pandas_float_precision(pandas):
    """The ``float_precision`` that makes pandas' C reader round correctly.

    Since pandas 3.1 every mode is correctly rounded (fast_float) and the
    argument is deprecated; before, only ``"round_trip"`` (Python's own
    string-to-double) is.
    """
    major, minor = re.match(r"(\d+)\.(\d+)", pandas.__version__).groups()
    return None if (int(major), int(minor)) >= (3, 1) else "round_trip"


def _block_parser(engine):
    """Keywords of :func:`parse_dense_block` for ``engine``, or None (scikit-learn only).

    ``"auto"`` takes pandas' C reader where pandas is installed, NumPy
    otherwise; pandas is imported here, never by ``import skrank``.
    """
    if engine == "sklearn":
        return None
    if engine == "numpy":
        return {}
    try:
        import pandas
    except ImportError:
        if engine == "pandas":
            raise ImportError(
                "engine='pandas' needs pandas, which could not be imported; "
                "install it (pip install 'skrank[fast]') or pass engine='auto' "
                "or engine='numpy'."
            ) from None
        return {}
    return {"pandas": (pandas, _pandas_float_precision(pandas))}


def _n_threads():
    """Threads for parsing blocks: the usable cores, at most :data:`_MAX_THREADS`."""
    from joblib import cpu_count

    return max(1, min(_MAX_THREADS, cpu_count()))


class _Progress:
    """The ``verbose`` lines of a read: rows, MB read and MB/s, on stderr.

    A line at most every ``every`` seconds while reading, and one at the end.
    """

    def __init__(self, name, path, total, verbose, every=1.0):
        self.prefix = f"{name}: {os.fspath(path)}"
        self.total = total
        self.verbose = verbose
        self.every = every
        self.start = self.last = time.perf_counter()
        self.n_bytes = 0
        self.rows = 0

    def _print(self, message):
        if sys.stderr is None:  # (pythonw, a closed stderr): print(file=None) is stdout
            return
        print(f"{self.prefix}: {message}", file=sys.stderr, flush=True)

    def update(self, rows, n_bytes, final=False):
        self.rows += rows
        self.n_bytes += n_bytes
        now = time.perf_counter()
        if not self.verbose or not final and now - self.last < self.every:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        read = self.n_bytes / 1e6
        of = "" if self.total is None else f" of {self.total / 1e6:.1f}"
        self._print(
            f"{self.rows:,} rows, {read:.1f}{of} MB read in {elapsed:.1f} s "
            f"({read / elapsed:.1f} MB/s){' - done' if final else ''}"
        )

    def note(self, message):
        if self.verbose:
            self._print(message)


def _positive_zeros(X):
    """Make the ``-0.0`` of ``X`` ``0.0``, in place, as scipy's ``toarray`` does.

    The careful path builds a sparse matrix, whose ``toarray`` adds each
    stored value to a zero: ``0.0 + -0.0`` is ``0.0``. Adding ``0.0`` changes
    no other value.
    """
    np.add(X, 0.0, out=X)


def _check_dense_fits(path, shape, dtype, widest, *, advice, held=0):
    """Refuse a dense ``X`` of ``shape`` that does not fit in the memory available.

    ``widest`` is ``(file, line, index)``, the line of a file (``path``, or
    another file of a fold) whose feature index ``index`` (as written) sets
    the width, ``("n_features", value)`` when the caller's ``n_features``
    does, or None when nothing does (no line has a feature: one column, for
    rows whose labels are held already; not checked). ``held``: bytes of
    the ``X`` being grown, already written and so no longer available; the
    growth is what must fit. The kernel promises a large array without a MemoryError and
    kills the process when it is written (see :mod:`skrank.utils._memory`),
    so this comes before the array is allocated. A size no array can hold
    is left to numpy's ValueError, which the loaders report naming
    ``n_features``. ``advice`` is the caller's way out.
    """
    rows, columns = shape
    n_bytes = rows * columns * np.dtype(dtype).itemsize
    if widest is None or n_bytes > MAX_LENGTH:
        return
    size = (f"{rows} rows x {columns} columns of {np.dtype(dtype).name}, "
            f"{format_bytes(n_bytes)}")
    if widest[0] == "n_features":
        what = f"n_features={widest[1]} makes the dense X of {os.fspath(path)!r} {size}"
    else:
        where, line, index = widest
        made = ("a dense X of" if os.fspath(where) == os.fspath(path)
                else f"the dense X of {os.fspath(path)!r}")
        what = (f"Line {line} of {os.fspath(where)!r} has the feature index {index}, the "
                f"largest, which makes {made} {size}")
    check_memory(n_bytes - held, what, advice)


#: The way out of :func:`_check_dense_fits` for :func:`load_letor`.
_DENSE_ADVICE = (
    "pass dense=False for a sparse X, which holds only the values written, or "
    "n_features=<the data set's width> to have a feature beyond it refused"
)


class _Rows:
    """The rows of a file, read block by block into one ``X`` of ``dtype``.

    ``X`` is allocated at the first block, its rows estimated from a plain
    file's size and that block's, and grows by a quarter at a time when the
    estimate falls short (a compressed file's: ``ndarray.resize``, a
    ``realloc`` that moves pages rather than copying them); it is widened (a
    copy) when a block needs more columns. Each allocation is first checked
    against the memory available (:func:`_check_dense_fits`, naming
    ``widest``, what sets the width). :meth:`result` trims it and returns
    what the loaders return.
    """

    def __init__(self, path, dtype, return_docids):
        self.path = path
        self.total = None if os.path.splitext(path)[1] in _COMPRESSED else os.path.getsize(path)
        self.dtype, self.X, self.n = dtype, None, 0
        self.labels, self.qids, self.docids = [], [], [] if return_docids else None
        self.found = (0, None, 0, None)
        self.widest = None

    def _check(self, shape, held=0):
        _check_dense_fits(self.path, shape, self.dtype, self.widest, advice=_DENSE_ADVICE,
                          held=held)

    def block(self, n, width, n_bytes, widest):
        """The ``n`` rows of ``X`` for the next block (of ``n_bytes``), at least ``width`` wide.

        ``widest``: what sets ``width`` (see :func:`_check_dense_fits`),
        kept when it widens ``X``.
        """
        X = self.X
        if X is None or width > X.shape[1]:
            self.widest = widest
        if X is None:
            whole = self.total is None or n_bytes >= self.total
            capacity = n if whole else int(n * self.total / n_bytes * 1.02) + 1
            self._check((capacity, width))
            X = self.X = np.empty((capacity, width), dtype=self.dtype)
        elif width > X.shape[1]:  # a later row needs more columns than the rows before
            # the old X is held while the new one is filled: the new one must fit
            self._check((X.shape[0], width))
            wider = np.empty((X.shape[0], width), dtype=self.dtype)
            wider[: self.n, : X.shape[1]] = X[: self.n]
            wider[: self.n, X.shape[1] :] = 0
            X = self.X = wider
        if self.n + n > X.shape[0]:
            shape = (max(self.n + n, X.shape[0] * 5 // 4), X.shape[1])
            self._check(shape, held=X.nbytes)
            X.resize(shape, refcheck=False)
        return X[self.n : self.n + n]

    def add(self, y, qid, found, docids=None):
        """Count the block's rows, written into :meth:`block`, with their labels and ids."""
        self.labels.append(y)
        self.qids.append(qid)
        if self.docids is not None:
            self.docids.append(docids)
        self.found = _add_non_finite(self.found, found)
        self.n += y.size

    def result(self):
        """``out``, the list ``[X, y, qid]`` (and docids); None if no block had rows."""
        if self.X is None:
            return None
        self.X.resize((self.n, self.X.shape[1]), refcheck=False)
        out = [self.X, np.concatenate(self.labels), np.concatenate(self.qids)]
        if self.docids is not None:
            out.append(np.concatenate(self.docids))
        return out


def _load_regular(path, *, n_features, dtype, zero_based, return_docids, parser, progress):
    """Load ``path`` block by block with the fast parser; None if a block is not regular.

    ``X`` is filled in place, block after block, in ``dtype`` (:class:`_Rows`).
    None, for the careful parser to read the file again, whenever a block is
    not regular dense lines or the file raises anything: then every message
    is that of the careful parser, with its file and line.

    Returns ``(out, n_needed, found, widest)``: ``out`` the list ``[X, y,
    qid]`` (and docids), ``n_needed`` the columns the file needs, ``found``
    the non-finite counts of :func:`_non_finite`, ``widest`` the ``(path,
    line, index)`` of the largest feature index (as :func:`_check_dense_fits`
    takes it; ``("n_features", n_features)`` when ``n_features`` set the
    width of ``X``, None for a file without features).
    """
    rows = _Rows(path, dtype, return_docids)
    layout = None
    for text, first_line, parsed in _parsed_blocks(path, parser, _n_threads()):
        if parsed is None:
            return None
        values, y, qid, first_index = parsed
        n, d = values.shape
        if layout is None:
            layout = (first_index, d)
            offset = first_index if zero_based else first_index - 1
            width = offset + d if n_features is None else n_features
            if offset < 0 or offset + d > width:
                return None
            # every line lists the same features: the first has the largest index
            widest = ((path, first_line, first_index + d - 1) if n_features is None
                      else ("n_features", n_features))
        elif (first_index, d) != layout:
            return None
        try:
            part = rows.block(n, width, len(text), widest)
        except NotEnoughMemoryError:  # the careful path would refuse the same X
            raise
        except (ValueError, MemoryError):  # the careful path names n_features
            return None
        with np.errstate(over="ignore"):  # a double beyond float32 is inf, as a cast makes it
            part[:, offset : offset + d] = values
        part[:, :offset] = 0
        part[:, offset + d :] = 0
        _positive_zeros(part)
        found = _non_finite(part, y, lambda row: first_line + row)
        del part  # a view of X, which the next resize may move
        docids = None
        if return_docids:
            try:
                docids = _read_docids(text, path, first_line)
            except ValueError:
                return None
        rows.add(y, qid, found, docids)
        progress.update(n, len(text))
    out = rows.result()
    return None if out is None else (out, offset + d, rows.found, rows.widest)


def _load_careful(path, *, dtype, return_docids, zero_based, progress, dense):
    """Load ``path`` with scikit-learn's parser and every check; ``_load_regular``'s returns.

    The whole text is held: a bad line is found by bisection over it, and
    the messages count lines over the whole file. ``widest`` is found only
    for a ``dense`` ``X``: it costs a search of the text.
    """
    text = _read_text(path)
    try:
        X, y = _parse(text, dtype)
    except _PARSE_ERRORS as exc:
        raise _parse_error(text, path, exc) from exc
    qid = _read_qid(text, path, X.shape[0])
    if not zero_based:
        _shift_to_one_based(X, text, path)
    out = [X, np.asarray(y, dtype=np.float64), qid]
    if return_docids:
        docids = _read_docids(text, path)
        if docids.shape[0] != X.shape[0]:  # pragma: no cover - defensive
            raise RuntimeError(
                f"Read {docids.shape[0]} docids but {X.shape[0]} rows from "
                f"{os.fspath(path)!r}."
            )
        out.append(docids)
    found = _non_finite(X, y, lambda row: _line_number(text, row))
    progress.update(X.shape[0], len(text), final=True)
    # Columns the file needs: its largest column index plus one.
    n_needed = int(X.indices.max()) + 1 if X.nnz else 0
    widest = None
    if dense and X.nnz:
        row = int(np.searchsorted(X.indptr, np.argmax(X.indices), side="right")) - 1
        widest = (path, _line_number(text, row), n_needed - int(zero_based))
    return out, n_needed, found, widest


def _load_careful_blocks(path, *, n_features, dtype, return_docids, zero_based, progress):
    """Dense ``X`` from blocks of whole lines, each parsed by :func:`_careful_block`.

    The careful parser's checks and messages (lines counted from the start
    of the file), in the memory of ``X`` plus one block (:class:`_Rows`):
    ``n_features`` columns wide if given, else as wide as the rows read
    need, widened when a later row needs more. A block's rows stay sparse
    until they are written into ``X``. Returns what :func:`_load_regular`
    returns, or None for a file without data lines (which
    :func:`_load_careful` reads as before).
    """
    rows = _Rows(path, dtype, return_docids)
    n_needed = 0
    for text, first_line in _iter_blocks(path):
        values, y, qid, lines, needed = _careful_block(
            text, path, first_line, dtype=dtype, zero_based=zero_based)
        n, d = values.shape
        progress.update(n, len(text))
        if not n:
            continue
        if n_features is None:
            row = int(np.argmax(needed))
            part = rows.block(n, d, len(text),
                              (path, int(lines[row]), int(needed[row]) - int(zero_based)))
        else:
            # features beyond n_features are an error once the file is read
            # (_load_files names the largest); X is never made wider for them
            part = rows.block(n, n_features, len(text), ("n_features", n_features))
            if d > n_features:
                values = values[:, :n_features]
        values.resize(part.shape)  # in place; no entry is dropped
        values.toarray(out=part)  # zeros the rest of the rows, as a dense copy would
        del part  # a view of X, which the next block may move
        found = _non_finite(values, y, lambda row: int(lines[row]))
        n_needed = max(n_needed, int(needed.max()))
        rows.add(y, qid, found, _read_docids(text, path, first_line) if return_docids else None)
    out = rows.result()
    return None if out is None else (out, n_needed, rows.found, rows.widest)


def _load_files(
    paths, *, n_features, dense, return_docids, zero_based, dtype=np.float64,
    engine="auto", verbose=False, name="load_letor",
):
    """Load several LETOR files to matrices of one width.

    Returns one ``(X, y, qid)`` or ``(X, y, qid, docids)`` tuple per path.
    Every file is parsed with its indices taken as they are written
    (``zero_based=True``), and shifted afterwards when ``zero_based=False``,
    so that both conventions are decided by the caller, never by the file.
    A dense file of regular lines is read block by block by the fast parser
    of ``engine``; any other file, or one the fast parser gives up on, by the
    careful one, block by block for a dense ``X`` and whole for a sparse one
    or to raise an error with the whole file's message. Only one file is
    held at a time.
    """
    for path in paths:
        _check_no_nul(path, "path")
        _check_regular_file(path, name)
    dtype = _check_float_dtype(dtype)
    parser = _block_parser(engine) if dense else None
    results, needed, widests = [], [], []
    for path in paths:
        loaded = None
        if parser is not None:
            total = None if os.path.splitext(path)[1] in _COMPRESSED else os.path.getsize(path)
            progress = _Progress(name, path, total, verbose)
            loaded = _load_regular(
                path, n_features=n_features, dtype=dtype, zero_based=zero_based,
                return_docids=return_docids, parser=parser, progress=progress,
            )
            if loaded is None:
                progress.note(
                    "not every line lists the same features in order; reading "
                    "the file again with scikit-learn's parser"
                )
            else:
                progress.update(0, 0, final=True)
        if loaded is None and dense:
            total = None if os.path.splitext(path)[1] in _COMPRESSED else os.path.getsize(path)
            progress = _Progress(name, path, total, verbose)
            try:
                loaded = _load_careful_blocks(
                    path, n_features=n_features, dtype=dtype, return_docids=return_docids,
                    zero_based=zero_based, progress=progress,
                )
            except ValueError:
                # the whole file's reading below raises it with the file's own
                # message (a file without any qid, a qid on some lines only)
                loaded = None
            else:
                if loaded is not None:
                    progress.update(0, 0, final=True)
        if loaded is None:
            progress = _Progress(name, path, None, verbose)
            loaded = _load_careful(
                path, dtype=dtype, return_docids=return_docids,
                zero_based=zero_based, progress=progress, dense=dense,
            )
        out, n_needed, found, widest = loaded
        # Last, so that a file the checks above reject does not warn first;
        # the warning points at the caller of load_letor(_fold).
        _warn_non_finite(path, found, stacklevel=4)
        results.append(out)
        needed.append(n_needed)
        widests.append(widest)

    if n_features is None:
        n_features = max(max(needed), 1)
        # the width of a dense X made here: the file of the largest index
        widest = widests[int(np.argmax(needed))]
    else:
        widest = ("n_features", n_features)
    for path, n_needed in zip(paths, needed):
        if n_needed > n_features:
            largest = n_needed if not zero_based else n_needed - 1
            raise FeatureWidthError(
                f"n_features was set to {n_features}, but {os.fspath(path)!r} "
                f"has {n_needed} features (its largest feature index is "
                f"{largest}, zero_based={zero_based}).",
                path=os.fspath(path), line=None, column=n_needed, width=n_features,
            )
    for path, out in zip(paths, results):
        X = out[0]
        if dense and (sp.issparse(X) or X.shape[1] != n_features):  # a dense X made here
            _check_dense_fits(path, (X.shape[0], n_features), X.dtype, widest,
                              advice=_DENSE_ADVICE)
        if not sp.issparse(X):  # read block by block, as wide as its file needs
            if X.shape[1] != n_features:
                out[0] = np.zeros((X.shape[0], n_features), dtype=X.dtype)
                out[0][:, : X.shape[1]] = X
            continue
        try:
            X.resize((X.shape[0], n_features))  # in place; no entry is dropped
            if dense:
                out[0] = X.toarray()
        except (ValueError, MemoryError) as exc:  # scipy's or numpy's size limits
            shape = f"{X.shape[0]} rows x {n_features} columns"
            raise ValueError(
                f"n_features={n_features} is too large for {os.fspath(path)!r}: "
                f"{shape}{' as a dense array' if dense else ''} cannot be built "
                f"({type(exc).__name__}: {exc}). Pass a smaller n_features"
                f"{', or dense=False' if dense else ''}."
            ) from exc
    return [tuple(out) for out in results]


@validate_params(
    {
        "path": [str, os.PathLike],
        "n_features": [Integer(1, None, closed="left"), None],
        "dense": ["boolean"],
        "return_docids": ["boolean"],
        "zero_based": ["boolean"],
        "dtype": "no_validation",  # checked by _check_float_dtype
        "engine": [StrOptions(set(_ENGINES))],
        "verbose": ["verbose"],
    },
    prefer_skip_nested_validation=True,
)
def load_letor(
    path, *, n_features=None, dense=True, return_docids=False, zero_based=False,
    dtype=np.float64, engine="auto", verbose=False,
):
    """Load a learning-to-rank file in the LETOR / SVMlight format.

    Each line of the file is one query-document pair,
    ``<label> qid:<qid> <index>:<value> ... #docid = <id>``; feature indices
    are one-based as in the LETOR distributions, unless ``zero_based=True``.

    Parameters
    ----------
    path : str or os.PathLike
        Path of the file, a regular file (see Notes). A name ending in
        ``.gz`` (or ``.bz2``) is decompressed on the fly; any other name is
        read as plain text.

    n_features : int, default=None
        Number of columns of ``X``. ``None`` takes the largest feature index
        found in the file (plus one when ``zero_based=True``). Pass the data
        set's width (45 for OHSUMED, 46 for MQ2007/MQ2008, 136 for MSLR-WEB)
        so that separately loaded files agree.

    dense : bool, default=True
        Return ``X`` as a dense array. With ``False`` it is the scipy sparse
        CSR matrix built by scikit-learn, whose sparse container follows
        scikit-learn's ``sparse_interface`` setting.

    return_docids : bool, default=False
        Also return the document id read from the ``#docid = <id>`` comment
        of every line.

    zero_based : bool, default=False
        Whether the feature indices of the file start at 0. ``False`` reads
        them as one-based, LETOR's convention: feature ``1:`` is column 0,
        and a feature ``0:`` raises a ``ValueError``. ``True`` reads them as
        zero-based, as :func:`sklearn.datasets.dump_svmlight_file` writes
        them by default: feature ``0:`` is column 0.

    dtype : {np.float64, np.float32}, default=np.float64
        Data type of ``X``. A float32 ``X`` is parsed straight into float32,
        never through a float64 copy of ``X``; its values are those of the
        float64 parse cast to float32 (``X64.astype(np.float32)``), each the
        float32 nearest to the double nearest to the decimal string.

    engine : {"auto", "numpy", "pandas", "sklearn"}, default="auto"
        Parser of files whose lines all list the same features in order
        (``1:<v> 2:<v> ... d:<v>`` on every line, as in the LETOR, MSLR-WEB
        and Yahoo! files). ``"pandas"`` parses them with pandas' C reader
        (the ``fast`` extra: ``pip install 'skrank[fast]'``), ``"numpy"``
        with NumPy alone, ``"auto"`` with pandas when it can be imported and
        NumPy otherwise. Any other file (missing features, comment lines,
        ``nan``, a bad line, ...) and every file with ``"sklearn"`` is read
        with :func:`sklearn.datasets.load_svmlight_file` and skrank's checks.
        Every engine returns the same arrays, to the last bit, and the same
        errors and warnings.

    verbose : bool or int, default=False
        Print the progress of the read (rows, MB read, MB/s) to stderr,
        about once a second, and a last line when it is done.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features) or sparse CSR matrix
        Feature values, of type ``dtype``.

    y : ndarray of shape (n_samples,)
        Relevance labels, float64.

    qid : ndarray of shape (n_samples,)
        Query id of each row, int64.

    docids : ndarray of shape (n_samples,)
        Document ids as strings. Only returned when ``return_docids=True``.

    Raises
    ------
    ValueError
        If the file has no ``qid:`` fields (or only some of its lines have
        one), a qid that is not an integer in the int64 range, a feature
        ``0:`` while ``zero_based=False``, more features than ``n_features``,
        or if ``return_docids=True`` and a data line has no docid.

        If scikit-learn's parser rejects a line (a feature without a value, a
        line without a label, two ``qid:`` fields, a feature index or value
        that is not a number, indices that do not increase, ...), the
        message names the first such line, says what is wrong with it and
        shows its start; scikit-learn's error is chained as the cause.

        If a ``.gz`` or ``.bz2`` file cannot be decompressed: it is
        truncated, is not compressed at all, fails its CRC or length check or
        is otherwise corrupt; the error of ``gzip``, ``bz2`` or
        ``zlib`` is chained as the cause.

        Every message names the file and, for a bad line, its line number.

        If ``path`` holds a NUL character (which no file name can).

        If ``path`` is a named pipe, a socket or a device (``/dev/null``
        among them), not a regular file: raised before it is opened.
    MemoryError
        If a dense ``X`` would not fit in the memory available, before it is
        allocated: the message names the largest feature index with its
        file and line (or ``n_features`` when it sets the width), the size
        of ``X`` and the way out, ``dense=False`` or ``n_features`` (see
        Notes).
    FileNotFoundError
        If ``path`` does not exist.
    IsADirectoryError
        If ``path`` is a folder.

    Warns
    -----
    UserWarning
        If labels or feature values of the file are NaN or infinite
        (``nan``, ``inf``, ``-inf`` in the file). The message names the file,
        counts the non-finite labels and feature values and gives the line
        of the first of each; the values are loaded as they are.

    ImportError
        If ``engine="pandas"`` and pandas cannot be imported.

    See Also
    --------
    load_letor_fold : Load the train, validation and test files of one fold.
    iter_letor_chunks : Read a file in chunks of whole queries.
    sklearn.datasets.load_svmlight_file : The careful parser of the numbers.

    Notes
    -----
    Blank lines and lines holding only a comment are skipped, as scikit-learn
    skips them, so ``docids[i]`` always belongs to row ``i``. The docid is
    found anywhere in the comment, which covers both the LETOR 3.0 form
    (``#docid = 244338``) and the LETOR 4.0 form
    (``#docid = GX000-00-0000000 inc = 1 prob = 0.02``).

    The query ids are read by skrank in linear time (scikit-learn's own
    ``query_id=True`` parsing is quadratic in the number of lines), so files
    of millions of lines load in seconds.

    Lines may end in ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files);
    their line endings are made ``\\n`` before parsing, so rows, qids and
    docids agree in every case and a line number in an error message counts
    every kind of line end. A UTF-8 byte order mark at the start of the
    file, which some editors write, is dropped.

    Only regular files are read. A named pipe (FIFO), a socket or a device
    is refused with a ``ValueError`` naming the path and what it is, before
    it is opened: opening a pipe waits for a program to write to it, forever
    if none does, and a file whose lines turn out irregular is read twice
    (below), which a pipe cannot be. Data that come through a pipe are saved
    to a file first.

    Memory. A file whose lines all list the same features in order is read
    in blocks of whole lines of about 4 MiB, decompressed on the fly for
    ``.gz`` and ``.bz2``, and each block is parsed straight into ``X``: the
    peak is ``X`` (allocated once for a plain file, from its size; grown by a
    quarter at a time for a compressed one) plus ``y`` and ``qid`` plus a
    bounded buffer per parsing thread (a block and the positions and numbers
    of its tokens; up to 4 threads, one per core), which does not grow with
    the file (the user guide's reproducing page gives measured peaks). Any
    other file (lines that list different features, or ``engine="sklearn"``)
    is parsed by scikit-learn in the same blocks, each block's rows copied
    into ``X``: the peak is again ``X`` plus one block's text and its parsed
    rows (``X`` is widened, a copy, when a late line needs more columns than
    the lines before it and ``n_features`` is None). With ``dense=False`` the
    whole text is read and parsed into one sparse matrix. When the first
    irregular line comes late in a file, the blocks before it were read for
    nothing, and the file is read again by the careful parser; every error
    of a file, whatever its engine, is raised by the careful parser reading
    the whole file, so that it names the file and the line.

    A dense ``X`` is as wide as the largest feature index of the file (or
    ``n_features``), whatever the indices below it: a file of two lines, one
    of them ``1 qid:1 1000000000:0.5``, makes an ``X`` of two rows of 8 GB
    each. Each time ``X`` is allocated, grown or widened, its size is first
    compared with the memory available (``MemAvailable`` of
    ``/proc/meminfo`` on Linux, the free pages of ``os.sysconf`` elsewhere,
    and no more than a ``ulimit -v`` leaves to the process); an ``X`` that
    does not fit raises a ``MemoryError`` naming the line of the largest
    feature index, rather than an allocation the operating system would
    promise and then end the process for once it is written. With
    ``dense=False`` the file is a sparse matrix, whose memory follows the
    values written; ``n_features``, the data set's width, turns a stray
    large index into an error naming the file. Where the available memory
    cannot be read, nothing is refused.

    There is no ``zero_based="auto"``, unlike
    :func:`sklearn.datasets.load_svmlight_file`: that heuristic decides per
    file, shifting every column of a file that has no ``0:`` feature. Two
    files of one data set can then disagree, a training file without ``0:``
    loading one column to the left of a test file with one, and a
    zero-based file whose first column is all zero (a column
    ``dump_svmlight_file`` writes no entry for) loading shifted. The
    convention is therefore the caller's: ``False`` for LETOR files, ``True``
    for files written by ``dump_svmlight_file(..., zero_based=True)``. A
    ``0:`` in a file read as one-based is detected; a zero-based file
    without any ``0:`` read as one-based cannot be, and loads one column to
    the left.

    Examples
    --------
    >>> import os, tempfile
    >>> from skrank.datasets import load_letor
    >>> text = (
    ...     "2 qid:1 1:0.5 2:0.1 #docid = d1\\n"
    ...     "0 qid:1 1:0.2 2:0.3 #docid = d2\\n"
    ...     "1 qid:2 1:0.9 2:0.7 #docid = d3\\n"
    ... )
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "tiny.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write(text)
    ...     X, y, qid, docids = load_letor(path, n_features=3, return_docids=True)
    >>> X.shape
    (3, 3)
    >>> y
    array([2., 0., 1.])
    >>> qid
    array([1, 1, 2])
    >>> docids.tolist()
    ['d1', 'd2', 'd3']
    """
    (result,) = _load_files(
        [path],
        n_features=n_features,
        dense=dense,
        return_docids=return_docids,
        zero_based=zero_based,
        dtype=dtype,
        engine=engine,
        verbose=verbose,
    )
    return result


def _careful_block(text, path, first_line, *, dtype, zero_based):
    """A block of text parsed by scikit-learn with every check, as a pending piece.

    Returns ``(X, y, qid, lines, needed)``: ``X`` sparse CSR, as wide as
    the block needs (a dense copy is the caller's, once it knows the width
    fits in memory), ``lines`` the line number of each row and ``needed``
    the columns each row needs. Errors and messages are those of
    :func:`load_letor`, their lines counted from the start of the file. A
    block without data lines gives zero rows.
    """
    if _DATA_LINE.search(text) is None:
        empty = np.zeros(0, dtype=np.int64)
        return sp.csr_matrix((0, 0), dtype=dtype), np.zeros(0), empty, empty, empty
    try:
        X, y = _parse(text, dtype)
    except _PARSE_ERRORS as exc:
        raise _parse_error(text, path, exc, first_line) from exc
    qid = _read_qid(text, path, X.shape[0], first_line)
    if not zero_based:
        _shift_to_one_based(X, text, path, first_line)
    # Indices increase along a row: its last one is its largest.
    has_entries = np.diff(X.indptr) > 0
    needed = np.zeros(X.shape[0], dtype=np.int64)
    needed[has_entries] = X.indices[X.indptr[1:][has_entries] - 1] + 1
    X.resize((X.shape[0], int(needed.max())))
    lines = _data_line_numbers(text, first_line, X.shape[0])
    return X, np.asarray(y, dtype=np.float64), qid, lines, needed


def _check_runs(qid, lines, path, finished, current):
    """Check that no query of a block comes back after its run of lines ended.

    ``finished`` maps each query whose run has ended to the last line of the
    run; ``current`` is ``(qid, last line)`` of the run the previous block
    ended in, or None. Returns the ``current`` of this block's last run.
    """
    bounds = [0, *(np.flatnonzero(np.diff(qid)) + 1).tolist(), qid.size]
    for start, stop in zip(bounds[:-1], bounds[1:]):  # one step per query
        q = int(qid[start])
        if current is not None and current[0] != q:
            finished[current[0]] = current[1]
            if q in finished:
                raise ValueError(
                    f"Line {int(lines[start])} of {os.fspath(path)!r} has qid "
                    f"{q}, whose earlier lines end on line {finished[q]}: the "
                    "lines of a query must be contiguous for the file to be read "
                    "in chunks of whole queries. Sort the file by qid (keeping "
                    "the order of the lines of each query), or read it whole "
                    "with load_letor."
                )
        current = (q, int(lines[stop - 1]))
    return current


class _Pending:
    """Rows read but not yet yielded, as pieces ``(X, y, qid, lines, needed)``.

    A piece's ``X`` is dense (a regular block's, as wide as its lines) or
    sparse CSR (a block of the careful parser): no piece holds columns of
    zeros, whatever its largest feature index; only a chunk is dense.
    """

    def __init__(self, path, dtype):
        self.path = path
        self.dtype = dtype
        self.pieces = []
        self.n_rows = 0

    def add(self, piece):
        self.pieces.append(piece)
        self.n_rows += piece[1].size

    def ready(self, chunk_rows, final):
        """Rows of whole queries to yield now: about ``chunk_rows``, or 0 to read on.

        The last query read may go on in the next block, so it counts only
        at the end of the file (``final``).
        """
        if not self.n_rows:
            return 0
        qid = np.concatenate([piece[2] for piece in self.pieces])
        bounds = np.flatnonzero(np.diff(qid)) + 1  # where a query starts
        if final:
            bounds = np.append(bounds, qid.size)
        if not bounds.size or not final and bounds[-1] < chunk_rows:
            return 0
        fitting = bounds[bounds <= chunk_rows]
        return int(fitting[-1]) if fitting.size else int(bounds[0])

    def width(self, n_rows):
        """Columns the first ``n_rows`` rows need (at least 1), and the line that needs the most.

        The line is None when no row has a feature.
        """
        width, line, done = 1, None, 0
        for _, y, _, lines, needed in self.pieces:
            n = min(n_rows - done, y.size)
            if n:
                row = int(np.argmax(needed[:n]))
                if needed[row] > width:
                    width, line = int(needed[row]), int(lines[row])
            done += n
        return width, line

    def take(self, n_rows, width, widest):
        """The first ``n_rows`` rows as one chunk ``(X, y, qid)`` of ``width`` columns.

        ``widest``: what sets ``width``, as :func:`_check_dense_fits` takes
        it, which refuses a chunk that does not fit in memory.
        """
        _check_dense_fits(self.path, (n_rows, width), self.dtype, widest, advice=(
            "pass n_features=<the data set's width>, beyond which a feature is an "
            "error naming its line, or a smaller chunk_rows"))
        X = np.zeros((n_rows, width), dtype=self.dtype)
        ys, qids = [], []
        done = 0
        while done < n_rows:
            piece_X, piece_y, piece_qid, lines, needed = self.pieces[0]
            n = min(n_rows - done, piece_y.size)
            beyond = np.flatnonzero(needed[:n] > width)
            if beyond.size:
                raise FeatureWidthError(
                    f"Line {int(lines[beyond[0]])} of {os.fspath(self.path)!r} has "
                    f"a feature in column {int(needed[beyond[0]])}, beyond the "
                    f"{width} columns of the chunks (n_features, or with "
                    "n_features=None the width of the first chunk). Pass "
                    "n_features, the width of the data set.",
                    path=os.fspath(self.path), line=int(lines[beyond[0]]),
                    column=int(needed[beyond[0]]), width=width,
                )
            if sp.issparse(piece_X):
                rows = piece_X[:n]  # its entries are within width (checked above)
                rows.resize((n, width))
                rows.toarray(out=X[done : done + n])
            else:
                columns = min(width, piece_X.shape[1])
                X[done : done + n, :columns] = piece_X[:n, :columns]
            ys.append(piece_y[:n])
            qids.append(piece_qid[:n])
            if n == piece_y.size:
                self.pieces.pop(0)
            else:
                self.pieces[0] = tuple(part[n:] for part in self.pieces[0])
            done += n
        self.n_rows -= n_rows
        return X, np.concatenate(ys), np.concatenate(qids)


def _chunk_width(pending, n_rows, width, widest, zero_based):
    """``(width, widest)`` of the chunks: as given, or fixed by the first ``n_rows`` rows.

    ``widest`` as :func:`_check_dense_fits` takes it: ``n_features``, or
    the line of the first chunk with the largest feature index.
    """
    if width is not None:
        return width, widest
    width, line = pending.width(n_rows)
    return width, (None if line is None else (pending.path, line, width - int(zero_based)))


def _iter_chunks(path, *, chunk_rows, n_features, dtype, zero_based, engine):
    """The generator of :func:`iter_letor_chunks`, its arguments checked."""
    parser = _block_parser(engine)
    if parser is None:
        blocks = ((text, first_line, None) for text, first_line in _iter_blocks(path))
    else:
        blocks = _parsed_blocks(path, parser, _n_threads())
    finished, current = {}, None
    width = n_features
    widest = None if n_features is None else ("n_features", n_features)
    pending = _Pending(path, dtype)
    for text, first_line, parsed in blocks:
        if parsed is not None:
            values, y, qid, first_index = parsed
            offset = first_index if zero_based else first_index - 1
        if parsed is None or offset != 0:
            # lines that start past the first column are read as sparse rows
            # by the careful parser, never padded with columns of zeros
            piece = _careful_block(text, path, first_line, dtype=dtype, zero_based=zero_based)
        else:
            with np.errstate(over="ignore"):  # beyond float32: inf, as a cast
                X = values.astype(dtype)
            _positive_zeros(X)
            lines = np.arange(first_line, first_line + y.size)
            piece = (X, y, qid, lines, np.full(y.size, X.shape[1]))
        X, y, qid, lines, _ = piece
        if not y.size:
            continue
        _warn_non_finite(path, _non_finite(X, y, lambda row: int(lines[row])), stacklevel=2)
        current = _check_runs(qid, lines, path, finished, current)
        pending.add(piece)
        while n_rows := pending.ready(chunk_rows, final=False):
            width, widest = _chunk_width(pending, n_rows, width, widest, zero_based)
            yield pending.take(n_rows, width, widest)
    while n_rows := pending.ready(chunk_rows, final=True):
        width, widest = _chunk_width(pending, n_rows, width, widest, zero_based)
        yield pending.take(n_rows, width, widest)
    if current is None:
        raise ValueError(f"The file {os.fspath(path)!r} has no data lines.")


@validate_params(
    {
        "path": [str, os.PathLike],
        "chunk_rows": [Integer(1, None, closed="left")],
        "n_features": [Integer(1, None, closed="left"), None],
        "dtype": "no_validation",  # checked by _check_float_dtype
        "zero_based": ["boolean"],
        "engine": [StrOptions(set(_ENGINES))],
    },
    prefer_skip_nested_validation=True,
)
def iter_letor_chunks(
    path, *, chunk_rows=100_000, n_features=None, dtype=np.float64, zero_based=False,
    engine="auto",
):
    """Read a LETOR file in chunks of whole queries, without holding it all.

    The file is read block by block (decompressed on the fly for ``.gz`` and
    ``.bz2``), and its rows are yielded in chunks of about ``chunk_rows``
    rows, each made of whole queries: what a streamed fit or a scoring loop
    needs for data larger than memory.

    Parameters
    ----------
    path : str or os.PathLike
        Path of the file, a regular file (see Notes), as in
        :func:`load_letor`.

    chunk_rows : int, default=100_000
        Number of rows to aim at in each chunk. A chunk holds the most whole
        queries whose rows do not exceed ``chunk_rows``, or one query when it
        alone is larger; the last chunk holds what is left.

    n_features : int, default=None
        Number of columns of every ``X``. A stream cannot know the width of
        the file before reading it all, so ``None`` fixes it from the first
        chunk (its largest feature index, plus one when ``zero_based=True``)
        and a later line with a larger index raises a ``ValueError`` naming
        the file and the line. Pass the data set's width (136 for MSLR-WEB)
        to read any file.

    dtype : {np.float64, np.float32}, default=np.float64
        Data type of ``X``, as in :func:`load_letor`.

    zero_based : bool, default=False
        Whether the feature indices of the file start at 0, as in
        :func:`load_letor`.

    engine : {"auto", "numpy", "pandas", "sklearn"}, default="auto"
        Parser of blocks whose lines all list the same features in order, as
        in :func:`load_letor`; other blocks are read by scikit-learn's parser.

    Yields
    ------
    X : ndarray of shape (n_chunk_rows, n_features)
        Feature values of the chunk's rows, of type ``dtype``.

    y : ndarray of shape (n_chunk_rows,)
        Relevance labels, float64.

    qid : ndarray of shape (n_chunk_rows,)
        Query id of each row, int64; every query of the chunk is whole.

    Raises
    ------
    ValueError
        If a query's lines are not contiguous (qid 1, then 2, then 1 again):
        the message names the file, the qid, the last line of its earlier run
        and the line where it comes back. If a line has a feature beyond
        the width (``n_features``, or the first chunk's). If a line is
        rejected as :func:`load_letor` rejects it (a line the parser cannot
        read, a line without a qid, a qid that is not an int64, a feature
        ``0:`` with ``zero_based=False``, a corrupt compressed file, a file
        without data lines): every message names the file and the line,
        counted from the start of the file.

        If ``path`` is a named pipe, a socket or a device, not a regular
        file (raised by the call, before any chunk).
    MemoryError
        If a chunk's dense ``X`` would not fit in the memory available,
        before it is allocated: the message names the line of the largest
        feature index of the first chunk (or ``n_features``), the size and
        the way out, ``n_features`` or a smaller ``chunk_rows``.
    FileNotFoundError
        If ``path`` does not exist (raised by the call, before any chunk).
    IsADirectoryError
        If ``path`` is a folder (raised by the call, before any chunk).

    Warns
    -----
    UserWarning
        If labels or feature values are NaN or infinite, as
        :func:`load_letor` warns, once for each block of lines (about 4 MiB)
        that holds such values, counting that block's.

    See Also
    --------
    load_letor : Load a whole file at once.

    Notes
    -----
    Memory is bounded by the chunk (its ``X`` and the rows read beyond it up
    to the end of a block) plus a buffer of a few blocks of about 4 MiB of
    text, whatever the size of the file; the qid of each finished query is
    kept to detect a query that comes back, which grows with the number of
    queries, not of rows. The rows read beyond a chunk hold only the values
    written (a block of lines that do not all list the same features is kept
    sparse); a chunk is as wide as its largest feature index, and is
    compared with the memory available before it is allocated, as
    :func:`load_letor` compares its ``X``.

    Concatenating the chunks gives the arrays :func:`load_letor` returns
    for the file, to the last bit, when their widths agree (``n_features``
    given, or the first chunk as wide as the file).

    A missing qid is reported on its line, where :func:`load_letor` counts
    the lines with a qid in the whole file; a block of a file, not the
    file, is what the reader has seen when it finds one.

    Only regular files are read, as by :func:`load_letor`. A stream could
    read a pipe once, but opening a named pipe (FIFO) waits for a program to
    write to it, forever if none does, and a streamed fit
    (:func:`skrank.stream.fit_stream`) reads its file again at every epoch;
    a named pipe, a socket or a device is therefore refused with a
    ``ValueError`` when the function is called. The function takes a path,
    not an open file object: data that come through a pipe are saved to a
    file first.

    Examples
    --------
    >>> import os, tempfile
    >>> from skrank.datasets import iter_letor_chunks
    >>> text = "".join(
    ...     f"{rel} qid:{q} 1:0.{q}{rel} 2:0.5\\n" for q in range(1, 4) for rel in (2, 1, 0)
    ... )
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "tiny.txt")
    ...     with open(path, "w") as f:
    ...         _ = f.write(text)
    ...     chunks = list(iter_letor_chunks(path, chunk_rows=5))
    >>> [qid.tolist() for _, _, qid in chunks]
    [[1, 1, 1], [2, 2, 2], [3, 3, 3]]
    >>> chunks[0][0].shape
    (3, 2)
    """
    _check_no_nul(path, "path")
    dtype = _check_float_dtype(dtype)
    # a missing file or a named pipe raises here, not at the first chunk
    _check_regular_file(path, "iter_letor_chunks")
    return _iter_chunks(
        path, chunk_rows=chunk_rows, n_features=n_features, dtype=dtype,
        zero_based=zero_based, engine=engine,
    )


def _fold_name(fold):
    """``"FoldK"`` for ``fold=K`` or ``fold="FoldK"``."""
    if isinstance(fold, str):
        return fold
    return f"Fold{int(fold)}"


def _find_split_file(folder, split):
    """The file of ``split`` in ``folder``, and every candidate looked for."""
    candidates = [folder / f"{split}{suffix}" for suffix in _SPLIT_SUFFIXES]
    for candidate in candidates:
        # anything by that name, which the loader refuses unless it is a file
        if candidate.exists():
            return candidate, candidates
    return None, candidates


@validate_params(
    {
        "root": [str, os.PathLike],
        "fold": [
            Integer(1, 5, closed="both"),
            StrOptions(set(_FOLD_NAMES)),
        ],
        "n_features": [Integer(1, None, closed="left"), None],
        "dense": ["boolean"],
        "return_docids": ["boolean"],
        "zero_based": ["boolean"],
        "dtype": "no_validation",  # checked by _check_float_dtype
        "engine": [StrOptions(set(_ENGINES))],
        "verbose": ["verbose"],
    },
    prefer_skip_nested_validation=True,
)
def load_letor_fold(
    root, fold, *, n_features=None, dense=True, return_docids=False, zero_based=False,
    dtype=np.float64, engine="auto", verbose=False,
):
    """Load the train, validation and test files of one LETOR fold.

    The LETOR benchmarks split their queries into five subsets and ship five
    cyclic folds, each a folder ``Fold1`` .. ``Fold5`` holding ``train.txt``,
    ``vali.txt`` and ``test.txt``. This function loads the three files of one
    fold to matrices of the same width.

    Parameters
    ----------
    root : str or os.PathLike
        Folder of the data set, the one that holds ``Fold1`` .. ``Fold5``.

    fold : int or str
        Fold to load: an int from 1 to 5, or the folder name ``"Fold1"`` ..
        ``"Fold5"``.

    n_features : int, default=None
        Number of columns of every ``X``. ``None`` takes the largest feature
        index found in the three files (plus one when ``zero_based=True``).

    dense : bool, default=True
        Return every ``X`` as a dense array rather than sparse CSR.

    return_docids : bool, default=False
        Also return the document ids of every split, as in
        :func:`load_letor`.

    zero_based : bool, default=False
        Whether the feature indices of the three files start at 0, as in
        :func:`load_letor`. ``False`` (one-based, LETOR's convention) raises
        a ``ValueError`` on a feature ``0:`` in any of them.

    dtype : {np.float64, np.float32}, default=np.float64
        Data type of every ``X``, as in :func:`load_letor`.

    engine : {"auto", "numpy", "pandas", "sklearn"}, default="auto"
        Parser of files whose lines all list the same features in order, as
        in :func:`load_letor`.

    verbose : bool or int, default=False
        Print the progress of each read to stderr, as in :func:`load_letor`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes

        train : tuple
            ``(X, y, qid)``, or ``(X, y, qid, docids)`` when
            ``return_docids=True``, as returned by :func:`load_letor`.
        vali : tuple
            The validation split, in the same form.
        test : tuple
            The test split, in the same form.

    Raises
    ------
    FileNotFoundError
        If one of the three files is missing; the message lists every path
        that was tried.
    IsADirectoryError
        If ``train.txt`` (or another split's name) is a folder.
    ValueError
        If ``fold`` is not one of 1 .. 5 or ``"Fold1"`` .. ``"Fold5"`` (a
        bool is neither: ``fold=True`` is not ``Fold1``), or a
        file is rejected by :func:`load_letor` (no ``qid:`` fields, a feature
        ``0:`` with ``zero_based=False``, a line scikit-learn's parser
        rejects, a corrupt ``.gz`` file, ...); the message names the file.
        If ``root`` holds a NUL character (which no folder name can).
        If a split's file is a named pipe, a socket or a device, not a
        regular file (see :func:`load_letor`).
    MemoryError
        If a dense ``X`` would not fit in the memory available, as in
        :func:`load_letor`; the message names the file and line of the
        largest feature index of the three files (or ``n_features``).

    Warns
    -----
    UserWarning
        If labels or feature values of a file are NaN or infinite, as
        :func:`load_letor` warns; one warning per such file.

    See Also
    --------
    load_letor : Load a single file.

    Notes
    -----
    Each split is read from ``<split>.txt`` if present, otherwise from
    ``<split>.txt.gz``; the three splits may mix both forms. Each must be a
    regular file: a named pipe, a socket or a device by that name is refused
    before any file is read, as :func:`load_letor` refuses it.

    The three files are read with one convention, ``zero_based``, never one
    guessed per file (see :func:`load_letor`), so their columns agree.

    Examples
    --------
    >>> import os, tempfile
    >>> from skrank.datasets import load_letor_fold
    >>> with tempfile.TemporaryDirectory() as root:
    ...     os.makedirs(os.path.join(root, "Fold1"))
    ...     for split, qid in [("train", 1), ("vali", 2), ("test", 3)]:
    ...         path = os.path.join(root, "Fold1", split + ".txt")
    ...         with open(path, "w") as f:
    ...             _ = f.write(f"1 qid:{qid} 1:0.5\\n0 qid:{qid} 2:0.5\\n")
    ...     data = load_letor_fold(root, 1)
    >>> X_train, y_train, qid_train = data.train
    >>> X_train.shape
    (2, 2)
    >>> data.test[2]
    array([3, 3])
    """
    _check_no_nul(root, "root")
    folder = Path(root) / _fold_name(fold)
    paths = []
    missing = []
    for split in _SPLITS:
        path, candidates = _find_split_file(folder, split)
        if path is None:
            tried = " or ".join(repr(os.fspath(c)) for c in candidates)
            missing.append(f"{split} ({tried})")
        paths.append(path)
    if missing:
        raise FileNotFoundError(
            f"{folder.name} of {os.fspath(root)!r} is incomplete; no file found "
            f"for {'; '.join(missing)}."
        )
    results = _load_files(
        paths,
        n_features=n_features,
        dense=dense,
        return_docids=return_docids,
        zero_based=zero_based,
        dtype=dtype,
        engine=engine,
        verbose=verbose,
        name="load_letor_fold",
    )
    return Bunch(**dict(zip(_SPLITS, results)))
