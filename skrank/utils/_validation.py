"""Input checks shared by the estimators, the losses and the metrics."""

import numbers
from contextlib import contextmanager

import numpy as np

__all__ = ["check_n_jobs", "check_numeric", "keep_fitted_state_on_error"]

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
        ``check_array``).
    """
    arr = np.asarray(values)
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
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral):
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
