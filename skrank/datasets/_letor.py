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
import gzip
import io
import os
import re
import warnings
import zlib
from itertools import islice
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.utils import Bunch

from ..utils._sklearn_compat import Integer, StrOptions, validate_params

__all__ = ["load_letor", "load_letor_fold"]

# ``docid = <id>`` as a whole word anywhere in the comment of a line.
_DOCID_PATTERN = re.compile(rb"(?:^|\s)docid\s*=\s*(\S+)")

_FOLD_NAMES = [f"Fold{k}" for k in range(1, 6)]
_SPLITS = ("train", "vali", "test")
_SPLIT_SUFFIXES = (".txt", ".txt.gz")

# A line ending other than "\n": "\r\n" (Windows) or a lone "\r" (old Mac).
_CR_LINE_END = re.compile(rb"\r\n?")

_INT64 = np.iinfo(np.int64)


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


def _read_text(path):
    """The bytes of ``path``, decompressed, with every line ending ``"\\n"``.

    A UTF-8 byte order mark at the start of the text is dropped.

    scikit-learn's parser and the docid reader split lines at ``"\\n"``
    only; a file that ends its lines with a lone ``"\\r"`` would otherwise be
    one line, its ``#docid`` comment hiding every row after the first.

    A compressed file that cannot be decompressed raises a ``ValueError``
    naming it; the errors of the decompressors (``EOFError``,
    ``gzip.BadGzipFile``, ``zlib.error``, ``OSError``) name no file. An
    ``OSError`` with an ``errno`` is a failure of the disk, not of the data,
    and is left as it is.
    """
    with _open_binary(path) as f:
        try:
            text = f.read()
        except (EOFError, OSError, zlib.error) as exc:
            compressed = os.path.splitext(path)[1] in _COMPRESSED
            if not compressed or isinstance(exc, OSError) and exc.errno is not None:
                raise
            raise ValueError(
                f"The file {os.fspath(path)!r} {_decompression_problem(path, exc)}."
            ) from exc
    if text.startswith(codecs.BOM_UTF8):
        # Some editors start a UTF-8 file with a byte order mark, which
        # scikit-learn's parser would read as part of the first label.
        text = text[len(codecs.BOM_UTF8):]
    if b"\r" in text:
        text = _CR_LINE_END.sub(b"\n", text)
    return text


def _line_number(text, row):
    """The 1-based line number in ``text`` of data line ``row`` (0-based)."""
    match = next(islice(_DATA_LINE.finditer(text), row, None))
    return text.count(b"\n", 0, match.start()) + 1


def _read_docids(text, path):
    """The ``#docid = <id>`` of every data line of ``path``, in file order.

    A line counts as a data line exactly when scikit-learn's SVMlight parser
    keeps it: the text before the first ``#`` is not blank. Blank lines and
    comment-only lines are therefore skipped, and entry ``i`` of the result
    belongs to row ``i`` of the matrix.
    """
    docids = []
    with io.BytesIO(text) as f:
        for lineno, line in enumerate(f, start=1):
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


def _read_qid(text, path, n_rows):
    """The ``qid:<id>`` of every data line of ``text``, as int64.

    scikit-learn's parser builds its qid array in time quadratic in the
    number of lines (20 s for 200,000 lines), so the ids are read here with
    two whole-file regular expressions instead, in linear time.
    """
    path = os.fspath(path)
    n_lines = len(_DATA_LINE.findall(text))
    if n_rows == 0 or n_lines == 0:
        raise ValueError(f"The file {path!r} has no data lines.")
    found = _QID_FIELD.findall(text)
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
        raise ValueError(
            f"Line {_line_number(text, row)} of {path!r} has {problem}."
        ) from None


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


def _parse(text):
    """``X, y`` of the LETOR text ``text``, its indices as written, no qid."""
    return load_svmlight_file(
        io.BytesIO(text), dtype=np.float64, zero_based=True, query_id=False
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


def _parse_error(text, path, exc):
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
        f"Line {lineno} of {path!r} {problem}; the line reads "
        f"{_shown(line, _SHOWN_LINE_LENGTH)}."
    )


def _warn_non_finite(X, y, text, path):
    """Warn if labels ``y`` or stored values of ``X`` are NaN or infinite.

    Both are counted, and the line of the first of each is named. A sum is
    finite only when all its terms are, so a file without such values costs
    two sums; an overflowing sum is then counted exactly and warns of nothing.
    """
    if np.isfinite(y.sum()) and np.isfinite(X.data.sum()):
        return
    bad_labels = np.flatnonzero(~np.isfinite(y))
    bad_values = np.flatnonzero(~np.isfinite(X.data))
    found = []
    if bad_labels.size:
        row = bad_labels[0]
        found.append(
            f"{bad_labels.size} non-finite label{'s' * (bad_labels.size > 1)} "
            f"(the first on line {_line_number(text, row)})"
        )
    if bad_values.size:
        row = np.searchsorted(X.indptr, bad_values[0], side="right") - 1
        found.append(
            f"{bad_values.size} non-finite feature value"
            f"{'s' * (bad_values.size > 1)} (the first on line "
            f"{_line_number(text, row)})"
        )
    if found:
        warnings.warn(
            f"The file {os.fspath(path)!r} has {' and '.join(found)}: NaN or "
            "infinity, loaded as they are.",
            UserWarning,
            # _load_files, load_letor(_fold), validate_params' wrapper, caller
            stacklevel=5,
        )


def _shift_to_one_based(X, text, path):
    """Turn the columns of ``X``, parsed as zero-based, to one-based, in place.

    A feature index 0 has no column in a one-based file; it is a stored entry
    of column 0 whatever its value, since scikit-learn's parser keeps explicit
    zeros (``0:0.0``). Indices are unique and increasing within a row, so the
    first stored 0 belongs to the first offending row.
    """
    if X.nnz and X.indices.min() == 0:
        row = np.searchsorted(X.indptr, np.argmin(X.indices), side="right") - 1
        raise ValueError(
            f"Line {_line_number(text, row)} of {os.fspath(path)!r} has the "
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


def _load_files(paths, *, n_features, dense, return_docids, zero_based):
    """Load several LETOR files to matrices of one width.

    Returns one ``(X, y, qid)`` or ``(X, y, qid, docids)`` tuple per path.
    Every file is parsed with its indices taken as they are written
    (``zero_based=True``), and shifted afterwards when ``zero_based=False``,
    so that both conventions are decided by the caller, never by the file.
    Only one file's text is held at a time.
    """
    for path in paths:
        _check_no_nul(path, "path")
    results = []
    for path in paths:
        text = _read_text(path)
        try:
            X, y = _parse(text)
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
        # Last, so that a file the checks above reject does not warn first.
        _warn_non_finite(X, y, text, path)
        results.append(out)
        del text

    # Columns each file needs: its largest column index plus one.
    needed = [int(out[0].indices.max()) + 1 if out[0].nnz else 0 for out in results]
    if n_features is None:
        n_features = max(max(needed), 1)
    for path, n_needed in zip(paths, needed):
        if n_needed > n_features:
            largest = n_needed if not zero_based else n_needed - 1
            raise ValueError(
                f"n_features was set to {n_features}, but {os.fspath(path)!r} "
                f"has {n_needed} features (its largest feature index is "
                f"{largest}, zero_based={zero_based})."
            )
    for path, out in zip(paths, results):
        X = out[0]
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
    },
    prefer_skip_nested_validation=True,
)
def load_letor(
    path, *, n_features=None, dense=True, return_docids=False, zero_based=False
):
    """Load a learning-to-rank file in the LETOR / SVMlight format.

    Each line of the file is one query-document pair,
    ``<label> qid:<qid> <index>:<value> ... #docid = <id>``; feature indices
    are one-based as in the LETOR distributions, unless ``zero_based=True``.

    Parameters
    ----------
    path : str or os.PathLike
        Path of the file. A name ending in ``.gz`` (or ``.bz2``) is
        decompressed on the fly; any other name is read as plain text.

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

    Returns
    -------
    X : ndarray of shape (n_samples, n_features) or sparse CSR matrix
        Feature values, float64.

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
    FileNotFoundError
        If ``path`` does not exist.

    Warns
    -----
    UserWarning
        If labels or feature values of the file are NaN or infinite
        (``nan``, ``inf``, ``-inf`` in the file). The message names the file,
        counts the non-finite labels and feature values and gives the line
        of the first of each; the values are loaded as they are.

    See Also
    --------
    load_letor_fold : Load the train, validation and test files of one fold.
    sklearn.datasets.load_svmlight_file : The parser used for the numbers.

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
    the file is read into memory once and its line endings are made
    ``\\n`` before parsing, so rows, qids and docids agree in every case and
    a line number in an error message counts every kind of line end. A UTF-8
    byte order mark at the start of the file, which some editors write, is
    dropped.

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
    )
    return result


def _fold_name(fold):
    """``"FoldK"`` for ``fold=K`` or ``fold="FoldK"``."""
    if isinstance(fold, str):
        return fold
    return f"Fold{int(fold)}"


def _find_split_file(folder, split):
    """The file of ``split`` in ``folder``, and every candidate looked for."""
    candidates = [folder / f"{split}{suffix}" for suffix in _SPLIT_SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
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
    },
    prefer_skip_nested_validation=True,
)
def load_letor_fold(
    root, fold, *, n_features=None, dense=True, return_docids=False, zero_based=False
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
    ValueError
        If ``fold`` is not one of 1 .. 5 or ``"Fold1"`` .. ``"Fold5"`` (a
        bool is neither: ``fold=True`` is not ``Fold1``), or a
        file is rejected by :func:`load_letor` (no ``qid:`` fields, a feature
        ``0:`` with ``zero_based=False``, a line scikit-learn's parser
        rejects, a corrupt ``.gz`` file, ...); the message names the file.
        If ``root`` holds a NUL character (which no folder name can).

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
    ``<split>.txt.gz``; the three splits may mix both forms.

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
            f"Fold {fold!r} of {os.fspath(root)!r} is incomplete; no file found "
            f"for {'; '.join(missing)}."
        )
    results = _load_files(
        paths,
        n_features=n_features,
        dense=dense,
        return_docids=return_docids,
        zero_based=zero_based,
    )
    return Bunch(**dict(zip(_SPLITS, results)))
