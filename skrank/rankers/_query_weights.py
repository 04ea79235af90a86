"""Arithmetic of query weights that neither overflows nor warns.

The total and the mean of non-negative query weights (:func:`_total`,
:func:`_mean_weight`), computed relative to the largest so that weights up
to the largest float add up without overflow, and :func:`_scaled`, the
weights of a ``partial_fit`` call relative to the mean query weight of the
first call, which refuses weights that this would make infinite.
"""

import numpy as np


def _total(weights):
    """The sum of non-negative weights, ``inf`` beyond the largest float (no warning)."""
    top = float(weights.max())
    return top * float((weights / top).sum())


def _mean_weight(weights):
    """The mean of non-negative query weights, without overflow (None: 1, unweighted)."""
    if weights is None:
        return 1.0
    top = float(weights.max())
    return top * float((weights / top).mean())


def _scaled(weights, scale):
    """Query weights divided by ``scale``: the relative weights of :meth:`partial_fit`."""
    with np.errstate(over="ignore"):
        scaled = weights / scale
    if not np.isfinite(scaled).all():
        raise ValueError(
            f"sample_weight: query weights up to {float(weights.max()):.3g} are beyond the "
            f"largest float times the mean query weight of the first partial_fit call "
            f"({scale:.3g}); partial_fit weighs the queries of every call relative to it."
        )
    return scaled
