"""Input checks shared by the estimators, the losses and the metrics."""

import numbers
from contextlib import contextmanager

import numpy as np

__all__ = [
    "check_feature_dtypes",
    "check_n_jobs",
    "check_numeric",
    "is_integer",
    "is_real",
    "keep_fitted_state_on_error",
    "query_weights",
]

#: What ``validate_data(..., reset=True)`` writes before a fit has succeeded.
_RESET_ATTRIBUTES = ("n_features_in_", "feature_names_in_")


@contextmanager
def keep_fitted_state_on_error(estimator):
    """Undo ``validate_data``'s resets if the fit in the block raises.

    ``validate_data(reset=True)`` records ``n_features_in_`` and
    ``feature_names_in_`` as soon as ``X`` passes; a later check failing
    (``qid``, the labels, a parameter) would leave a fitted estimator whose
    recorded input no longer matches its model. Fitted attributes proper are
    written only at the end of a successful fit.
    """
    saved = {name: estimator.__dict__[name] for name in _RESET_ATTRIBUTES
             if name in estimator.__dict__}
    try:
        yield
    except BaseException:
        for name in _RESET_ATTRIBUTES:
            estimator.__dict__.pop(name, None)
        estimator.__dict__.update(saved)
        raise


def check_numeric(values, name):
    """``values`` as an array, or a TypeError if they are text.

    Labels and scores must be real numbers: strings (``"1"``) and bytes are
    refused, also inside an object array, rather than parsed, as
    scikit-learn's ``check_array(dtype="numeric")`` refuses them; complex
    numbers are refused rather than cut to their real part. Object
    arrays of Python numbers are accepted. The one spelling of that rule
    for the rankers' ``y``, the losses' ``y`` and the metrics' ``y_true``
    and ``y_score``.

    Parameters
    ----------
    values : array-like
        The values to check.
    name : str
        The parameter's name, for the message.

    Returns
    -------
    values : ndarray
        ``np.asarray(values)`` (no copy of an array).

    Raises
    ------
    TypeError
        If ``values`` holds strings or bytes.
    ValueError
        If ``values`` holds complex numbers (as scikit-learn's
        ``check_array``), or is a ragged nested sequence that numpy cannot
        make an array of.
    """
    arr = _as_array(values, name)
    kind = arr.dtype.kind
    if kind in "US":
        got = f"an array of {'strings' if kind == 'U' else 'bytes'} (dtype {arr.dtype})"
    elif kind == "O":
        text = next((v for v in arr.ravel() if isinstance(v, (str, bytes))), None)
        if text is None:
            return arr
        got = f"an object array holding {text!r} of type {type(text).__name__}"
    elif kind == "c":
        # a ValueError with scikit-learn's words, as its check_array raises
        raise ValueError(
            f"Complex data not supported: {name} must be real numbers, got an array "
            f"of complex numbers (dtype {arr.dtype}); the imaginary part is not "
            f"dropped silently: take {name}.real explicitly if that is meant."
        )
    else:
        return arr
    raise TypeError(
        f"{name} must be numeric, got {got}. Text is not parsed as numbers (as "
        "scikit-learn's check_array(dtype='numeric')): convert it explicitly, e.g. "
        f"{name}.astype(float)."
    )


def _is_time(dtype):
    """Whether a column or array dtype holds dates, times or durations."""
    kind = getattr(dtype, "kind", None)
    # str() of a dtype is slow: only an object-kind dtype can be pandas' period
    return kind in ("M", "m") or (kind == "O" and str(dtype).startswith("period"))


def _holds_numpy_times(X):
    """Whether a list, tuple or object array holds numpy datetime64 / timedelta64 values.

    scikit-learn turns such values into floats (a count of days or of
    nanoseconds) without a word; an array of a datetime dtype is found by
    its dtype. Other inputs are not looked into.
    """
    if isinstance(X, (list, tuple)):
        try:
            X = np.asarray(X)
        except (ValueError, TypeError):  # ragged rows: scikit-learn refuses them
            return False
        if _is_time(X.dtype):
            return True
    if not (isinstance(X, np.ndarray) and X.dtype == object):
        return False
    return any(isinstance(v, (np.datetime64, np.timedelta64)) for v in X.flat)


def check_feature_dtypes(X, name="X"):
    """Refuse features that are dates, times or durations, naming the columns.

    numpy cannot put a datetime64 or timedelta64 column beside numbers in
    one float array: a DataFrame with one failed inside scikit-learn's
    ``check_array`` with numpy's ``DTypePromotionError``, which names
    neither ``X`` nor the column, and a datetime64 array was silently cast
    to a count of days or nanoseconds. A date is no feature until the user
    says which number it stands for. The one check for every entry point
    that takes ``X``: the estimators' ``validate_data``, the grouped
    cross-validation and search, permutation importance.

    Parameters
    ----------
    X : object
        The features: a DataFrame (each column's dtype is read), an array,
        or anything else (left to the caller's own checks).
    name : str, default="X"
        The parameter's name, for the message.

    Raises
    ------
    TypeError
        If a column of a DataFrame, or the array, has a datetime (time zone
        or not), timedelta or period dtype.
    """
    columns, dtypes = getattr(X, "columns", None), getattr(X, "dtypes", None)
    if columns is not None and dtypes is not None and np.ndim(dtypes) == 1:
        bad = [(column, dtype) for column, dtype in zip(columns, dtypes) if _is_time(dtype)]
        if not bad:
            return
        if len(bad) == 1:
            got = f"its column {bad[0][0]!r} has dtype {bad[0][1]}"
        else:
            listed = ", ".join(f"{column!r} ({dtype})" for column, dtype in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            got = f"its columns {listed}{more} have date, time or duration dtypes"
        column = f"{name}[{bad[0][0]!r}]"
        how = (f"e.g. {column}.dt.dayofweek or {column}.dt.year for a date, "
               f"{column}.dt.total_seconds() for a duration")
    elif _is_time(getattr(X, "dtype", None)):
        got = f"it is an array of dtype {X.dtype}"
        how = "e.g. the days since a reference date"
    elif _holds_numpy_times(X):
        got = "it holds numpy datetime64 or timedelta64 values"
        how = "e.g. the days since a reference date"
    else:
        return
    raise TypeError(
        f"{name} must hold numbers, but {got}. Dates, times and durations are not "
        f"features until turned into the numbers they stand for: convert them ({how}) "
        "or drop them."
    )


def is_integer(value):
    """Whether ``value`` is an integer scalar: a Python or numpy int, not a bool or a timedelta.

    ``bool`` subclasses ``int`` and numpy registers ``np.timedelta64`` as a
    ``numbers.Integral`` (it subclasses ``np.signedinteger``), yet ``True``
    is no count and a duration is no number: comparing one with a bound
    raises numpy's ``UFuncTypeError``. The one test of "an integer" for every
    integer argument of the package (:class:`~skrank.utils._sklearn_compat.Integer`
    and the checks written by hand).

    Parameters
    ----------
    value : object
        The value to test.

    Returns
    -------
    is_integer : bool
    """
    return isinstance(value, numbers.Integral) and not isinstance(
        value, (bool, np.bool_, np.timedelta64))


def is_real(value):
    """Whether ``value`` is a real scalar (an int or a float), not a bool or a timedelta.

    As :func:`is_integer`, for the float arguments: ``numbers.Real`` holds
    ``True`` and ``np.timedelta64`` too.

    Parameters
    ----------
    value : object
        The value to test.

    Returns
    -------
    is_real : bool
    """
    return isinstance(value, numbers.Real) and not isinstance(
        value, (bool, np.bool_, np.timedelta64))


def shortened_repr(value, limit=40):
    """``repr(value)`` for a message, its middle cut out past ``limit`` characters.

    A huge int, a long list or name stays readable; the length says how much
    was cut.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    half = max((limit - 4) // 2, 1)
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


def _as_array(values, name):
    """``np.asarray(values)``, or a ValueError naming ``name``.

    numpy refuses a ragged nested sequence such as ``[[1], [2, 3]]`` with a
    message that does not say which parameter it was; it stays the cause.
    """
    try:
        return np.asarray(values)
    except ValueError as exc:
        if isinstance(values, (list, tuple)):
            got = f"a ragged nested sequence ({shortened_repr(values, 60)})"
        else:
            got = f"an object of type {type(values).__name__} that numpy cannot make an array of"
        raise ValueError(f"{name} must be a 1-D array of numbers; got {got}.") from exc


def check_n_jobs(n_jobs, n_tasks):
    """``n_jobs`` checked, and capped at the ``n_tasks`` tasks run in parallel.

    More workers than tasks would idle, so any larger count (however large:
    joblib fails from about a million workers, and with an OverflowError
    beyond the C int) means one worker per task; the results do not depend
    on it. None (joblib's default, or the active ``parallel_backend``) and
    negative counts (-1 for all CPUs, joblib's meaning) are kept.

    Parameters
    ----------
    n_jobs : int or None
        The number of joblib workers asked for.
    n_tasks : int
        The number of tasks to run.

    Returns
    -------
    n_jobs : int or None

    Raises
    ------
    TypeError
        If ``n_jobs`` is not an int or None (a bool is refused).
    ValueError
        If ``n_jobs`` is 0, which joblib rejects.
    """
    if n_jobs is None:
        return None
    if not is_integer(n_jobs):
        raise TypeError(
            f"n_jobs must be None or a nonzero int (not a bool): the number of "
            f"joblib workers, or -1 for all CPUs; got n_jobs={n_jobs!r}."
        )
    if n_jobs == 0:
        raise ValueError(
            "n_jobs must be None or a nonzero int: the number of joblib workers, "
            "or -1 for all CPUs; got n_jobs=0."
        )
    return int(min(n_jobs, max(n_tasks, 1)))


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
        The queries of the rows.
    name : str, default="sample_weight"
        Name used in error messages.

    Returns
    -------
    weights : ndarray of shape (n_queries,)
        Weight of each query, in query order.

    Raises
    ------
    ValueError
        If ``sample_weight`` is not a 1-D array with one weight per row (a
        ragged nested sequence included), holds a negative or non-finite
        weight, varies within a query, or is zero for every query.
    TypeError
        If ``sample_weight`` does not hold numbers.
    """
    weight = _as_array(sample_weight, name)
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
