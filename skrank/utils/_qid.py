"""Query ids: what a valid ``qid`` is, and what ``qid=None`` means.

:func:`check_qid` validates the query id of each row; :func:`resolve_qid` is
the one place that reads ``qid=None`` (all rows are one query) and warns or
raises where that is likely a forgotten ``qid``. Every public function and
method that takes ``qid`` goes through them; :class:`~skrank.utils.QueryLayout`
groups the rows of the ids they return.
"""

import sys
import warnings

import numpy as np

from ._validation import is_integer

__all__ = ["IMPLICIT_QUERY_MAX_ROWS", "check_qid", "resolve_qid"]

#: A function given ``qid=None`` and more rows than this warns: one query of
#: this many documents is rare in ranking data (LETOR and MSLR queries
#: average 20 to 150 documents), while a forgotten ``qid`` is common.
IMPLICIT_QUERY_MAX_ROWS = 100

_ROUTING_HINT = (
    " (with scikit-learn's cross-validation or search tools, turn on metadata routing, "
    "sklearn.set_config(enable_metadata_routing=True), or use skrank.model_selection)"
)


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
        If ``qid`` is not 1-D (a ragged nested sequence included), has the
        wrong length, is empty, or holds NaN, non-integral floats or integers
        outside the int64 range.
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
    try:
        arr = np.asarray(qid)
    except ValueError as exc:  # a ragged nested sequence, [[1], [2, 3]]
        raise ValueError(
            f"{name} must be a 1-D array of query ids, one per row; got a ragged "
            "nested sequence."
        ) from exc
    if arr.dtype.kind in "US" and not isinstance(qid, np.ndarray):
        # numpy turns [1, 1, "1", "1"] into strings, merging the int 1 and the
        # str "1" into one query: check the values as given
        values = np.asarray(qid, dtype=object).ravel()
        kind = str if arr.dtype.kind == "U" else bytes
        mixed = [v for v in values if not isinstance(v, kind)]
        if mixed:
            _raise_if_missing(values, name)
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
        if all(is_integer(v) for v in values):
            arr = values
    kind = arr.dtype.kind
    if kind == "O":
        first = arr[0]
        if all(isinstance(v, str) for v in arr):
            arr = arr.astype(str)
        elif all(is_integer(v) for v in arr):
            arr = _integer_ids(arr, name)
        else:
            _raise_if_missing(arr, name)
            raise TypeError(
                f"{name} must hold integers or strings of one kind; got an "
                f"object array with values such as {first!r} of type "
                f"{type(first).__name__}."
            )
    elif kind == "f":
        _raise_if_missing(arr, name)
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = arr[(~np.isfinite(arr)) | (arr != np.round(arr))][0]
            raise ValueError(
                f"{name} must hold integer or string ids; got the non-integral "
                f"value {float(bad)!r}."
            )
        # 2**53 overflows in float16 (a spurious warning), whose
        # largest value is far below it: no float16 id is beyond 2**53
        if float(np.finfo(arr.dtype).max) > 2**53 and np.abs(arr).max() > 2**53:
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


def _missing_name(value):
    """The spelling of a missing query id ("None", "NaN", "pd.NA", "pd.NaT"), or None."""
    if value is None:
        return "None"
    if isinstance(value, (float, np.floating)):
        return "NaN" if np.isnan(value) else None
    # no pandas missing value can exist unless pandas was imported
    pandas = sys.modules.get("pandas")
    if pandas is not None and value is pandas.NA:
        return "pd.NA"
    if pandas is not None and value is pandas.NaT:
        return "pd.NaT"
    return None


def _raise_if_missing(values, name):
    """Raise a ValueError naming the first row whose id is missing, if one is.

    A missing id (None or NaN in an object array, pandas' NA in a ``string``
    or nullable column) is the problem to report, not the mix of types or
    the float among integers it makes.
    """
    if values.dtype.kind == "f":
        missing = np.isnan(values)
    else:
        missing = np.array([_missing_name(v) is not None for v in values], dtype=bool)
    if not missing.any():
        return
    row = int(np.argmax(missing))
    what = "NaN" if values.dtype.kind == "f" else _missing_name(values[row])
    raise ValueError(
        f"{name} contains {what} at row {row}: a missing query id ({int(missing.sum())} "
        f"of {len(values)} rows); every row needs a query id."
    )


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


def resolve_qid(qid, n_samples, *, caller, name="qid", fitted_queries=None, strict=False,
                routing_hint=False):
    """The query id of each row: ``qid`` validated, or one query when it is None.

    Every function and method of the package that takes ``qid`` reads
    ``qid=None`` so: all rows are one query. Where that is more likely a
    forgotten ``qid``, it says so:

    * a function, or an estimator's ``fit`` (``fitted_queries=None``), warns
      past :data:`IMPLICIT_QUERY_MAX_ROWS` rows;
    * a method of an estimator fitted on several queries
      (``fitted_queries > 1``) warns for any number of rows above one, or
      raises with ``strict`` (a score, which would be a plausible but wrong
      number).

    Parameters
    ----------
    qid : array-like of shape (n_samples,) or None
        Query id of each row (see :func:`check_qid`).
    n_samples : int
        Number of rows.
    caller : str
        What was given ``qid``, for the messages: a function's name
        (``"ndcg_score"``) or an estimator's ``"Class.method"``.
    name : str, default="qid"
        Name of the parameter, for the messages.
    fitted_queries : int, default=None
        For a method of a fitted estimator: the number of queries it was
        fitted on.
    strict : bool, default=False
        With ``fitted_queries > 1``: raise instead of warning.
    routing_hint : bool, default=False
        Add to the warning how ``qid`` reaches an estimator inside
        scikit-learn's tools.

    Returns
    -------
    qid : ndarray of shape (n_samples,)
        Integer or string ids; zeros when ``qid`` is None.
    """
    if qid is not None:
        return check_qid(qid, n_samples, name=name)
    if fitted_queries is not None:
        if fitted_queries > 1 and n_samples > 1:
            owner, _, method = caller.rpartition(".")
            message = (
                f"{owner} was fitted on {fitted_queries} queries, but {method} got "
                f"{name}=None, which treats all {n_samples} rows as one query. Pass "
                f"{name}=... (with scikit-learn's tools and a Pipeline, turn on metadata "
                "routing: sklearn.set_config(enable_metadata_routing=True))"
            )
            if strict:
                raise ValueError(
                    message + f"; to score the rows as one query, pass {name}=np.zeros(n)."
                )
            warnings.warn(message + ".", UserWarning, stacklevel=_caller_stacklevel())
    elif n_samples > IMPLICIT_QUERY_MAX_ROWS:
        hint = _ROUTING_HINT if routing_hint else ""
        warnings.warn(
            f"{caller} got {name}=None, so all {n_samples} rows are treated as ONE query. "
            f"If they come from several queries, pass {name}=...{hint}. To confirm one "
            f"query, pass {name}=np.zeros(n).",
            UserWarning,
            stacklevel=_caller_stacklevel(),
        )
    return np.zeros(n_samples, dtype=np.int64)


def _caller_stacklevel():
    """The ``stacklevel`` of the first frame outside skrank and scikit-learn.

    For a warning raised by the function calling this one: the warning then
    points at the user's line, however deep the package called it from
    (decorators and helpers included).
    """
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in (
            "skrank", "sklearn"):
        frame, level = frame.f_back, level + 1
    return level
