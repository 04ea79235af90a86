"""Loaders for learning-to-rank files in the LETOR / SVMlight text format.

A LETOR file holds one query-document pair per line::

    <label> qid:<qid> 1:<v> 2:<v> ... <d>:<v> #docid = <id> ...

Parsing of the numeric part is left to :func:`sklearn.datasets.load_svmlight_file`;
this module adds what a ranking task needs on top of it: a mandatory per-row
``qid``, the document ids kept in the ``#docid = <id>`` comments, and the
five-fold ``Fold1`` .. ``Fold5`` layout of the LETOR benchmarks.
"""

import bz2
import gzip
import os
import re
from numbers import Integral
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_files
from sklearn.utils import Bunch

from ..utils._sklearn_compat import Interval, StrOptions, validate_params

__all__ = ["load_letor", "load_letor_fold"]

# ``docid = <id>`` as a whole word anywhere in the comment of a line.
_DOCID_PATTERN = re.compile(rb"(?:^|\s)docid\s*=\s*(\S+)")

_FOLD_NAMES = [f"Fold{k}" for k in range(1, 6)]
_SPLITS = ("train", "vali", "test")
_SPLIT_SUFFIXES = (".txt", ".txt.gz")


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


def _read_docids(path):
    """The ``#docid = <id>`` of every data line of ``path``, in file order.

    A line counts as a data line exactly when scikit-learn's SVMlight parser
    keeps it: the text before the first ``#`` is not blank. Blank lines and
    comment-only lines are therefore skipped, and entry ``i`` of the result
    belongs to row ``i`` of the matrix.
    """
    docids = []
    with _open_binary(path) as f:
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


def _read_qid(path, n_rows):
    """The ``qid:<id>`` of every data line of ``path``, as int64.

    scikit-learn's parser builds its qid array in time quadratic in the
    number of lines (20 s for 200,000 lines), so the ids are read here with
    two whole-file regular expressions instead, in linear time.
    """
    with _open_binary(path) as f:
        text = f.read()
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
    except ValueError:
        bad = next(v for v in found if not v.strip().lstrip(b"+-").isdigit())
        raise ValueError(
            f"The file {path!r} has a non-integer qid {bad.decode(errors='replace')!r}."
        ) from None


def _load_files(paths, *, n_features, dense, return_docids):
    """Load several LETOR files to matrices of one width.

    Returns one ``(X, y, qid)`` or ``(X, y, qid, docids)`` tuple per path.
    """
    flat = load_svmlight_files(
        [os.fspath(p) for p in paths],
        n_features=n_features,
        dtype=np.float64,
        query_id=False,
    )
    results = []
    for i, path in enumerate(paths):
        X, y = flat[2 * i : 2 * i + 2]
        qid = _read_qid(path, X.shape[0])
        y = np.asarray(y, dtype=np.float64)
        if dense:
            X = X.toarray()
        out = (X, y, qid)
        if return_docids:
            docids = _read_docids(path)
            if docids.shape[0] != X.shape[0]:  # pragma: no cover - defensive
                raise RuntimeError(
                    f"Read {docids.shape[0]} docids but {X.shape[0]} rows from "
                    f"{os.fspath(path)!r}."
                )
            out = out + (docids,)
        results.append(out)
    return results


@validate_params(
    {
        "path": [str, os.PathLike],
        "n_features": [Interval(Integral, 1, None, closed="left"), None],
        "dense": ["boolean"],
        "return_docids": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_letor(path, *, n_features=None, dense=True, return_docids=False):
    """Load a learning-to-rank file in the LETOR / SVMlight format.

    Each line of the file is one query-document pair,
    ``<label> qid:<qid> <index>:<value> ... #docid = <id>``; feature indices
    are one-based as in the LETOR distributions.

    Parameters
    ----------
    path : str or os.PathLike
        Path of the file. A name ending in ``.gz`` (or ``.bz2``) is
        decompressed on the fly; any other name is read as plain text.

    n_features : int, default=None
        Number of columns of ``X``. ``None`` takes the largest feature index
        found in the file. Pass the data set's width (45 for OHSUMED, 46 for
        MQ2007/MQ2008, 136 for MSLR-WEB) so that separately loaded files agree.

    dense : bool, default=True
        Return ``X`` as a dense array. With ``False`` it is the scipy sparse
        CSR matrix built by scikit-learn, whose sparse container follows
        scikit-learn's ``sparse_interface`` setting.

    return_docids : bool, default=False
        Also return the document id read from the ``#docid = <id>`` comment
        of every line.

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
        one), or if ``return_docids=True`` and a data line has no docid.
    FileNotFoundError
        If ``path`` does not exist.

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
        [path], n_features=n_features, dense=dense, return_docids=return_docids
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
            Interval(Integral, 1, 5, closed="both"),
            StrOptions(set(_FOLD_NAMES)),
        ],
        "n_features": [Interval(Integral, 1, None, closed="left"), None],
        "dense": ["boolean"],
        "return_docids": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_letor_fold(root, fold, *, n_features=None, dense=True, return_docids=False):
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
        index found in the three files.

    dense : bool, default=True
        Return every ``X`` as a dense array rather than sparse CSR.

    return_docids : bool, default=False
        Also return the document ids of every split, as in
        :func:`load_letor`.

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
        If ``fold`` is not one of 1 .. 5 or ``"Fold1"`` .. ``"Fold5"``, or a
        file has no ``qid:`` fields.

    See Also
    --------
    load_letor : Load a single file.

    Notes
    -----
    Each split is read from ``<split>.txt`` if present, otherwise from
    ``<split>.txt.gz``; the three splits may mix both forms.

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
        paths, n_features=n_features, dense=dense, return_docids=return_docids
    )
    return Bunch(**dict(zip(_SPLITS, results)))
