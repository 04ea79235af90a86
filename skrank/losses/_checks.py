"""Checks of what a loss is given, with messages that name the argument."""

import numpy as np

from ..utils._validation import check_numeric


def _describe(value):
    """A short description of an unexpected argument, for a message."""
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > 60:
        return f"an object of type {type(value).__name__}"
    return f"{text} of type {type(value).__name__}"


def _check_finite_vector(name, values, n):
    """``values`` as a float64 vector of length ``n``, or an error naming it.

    Text is refused (:func:`~skrank.utils._validation.check_numeric`, a
    TypeError); a wrong shape or a non-finite value is a ValueError.
    """
    values = np.asarray(check_numeric(values, name), dtype=np.float64)
    if values.shape != (n,):
        raise ValueError(
            f"{name} must have shape ({n},) to match the (selected) queries; "
            f"got {values.shape}."
        )
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite; got NaN or infinite values.")
    return values
