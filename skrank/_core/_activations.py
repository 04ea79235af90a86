"""Activations of the networks' units, by name, with their derivatives.

:data:`ACTIVATIONS` (hidden units) and :data:`OUTPUT_ACTIVATIONS` (the output
unit) map the names a ranker's ``activation`` and ``output_activation`` take
to an in-place function and its derivative, written in terms of the
function's output. :func:`_check_activation` validates such a name, and
:func:`_check_combinable` refuses to average networks whose output unit is
not the identity.

The bottom of the networks' modules: it imports NumPy and nothing of skrank.
:mod:`~skrank._core._networks` and :mod:`~skrank._core._pairwise_network` import it.
"""

from typing import NamedTuple

import numpy as np


def _tanh(z):
    return np.tanh(z, out=z)


def _tanh_grad(a, out=None):
    out = np.multiply(a, a, out=out)
    return np.subtract(1.0, out, out=out)


_SCALE = 1.7159  # LeCun's scaled tanh, 1.7159 * tanh(2x / 3)


def _scaled_tanh(z):
    z *= 2.0 / 3.0
    np.tanh(z, out=z)
    z *= _SCALE
    return z


def _scaled_tanh_grad(a, out=None):
    # (2 S / 3) (1 - (a / S)^2) with S = _SCALE
    out = np.multiply(a, a, out=out)
    out *= -2.0 / (3.0 * _SCALE)
    out += 2.0 * _SCALE / 3.0
    return out


def _relu(z):
    return np.maximum(z, 0.0, out=z)


def _relu_grad(a, out=None):
    if out is None:
        return (a > 0).astype(a.dtype)
    return np.greater(a, 0.0, out=out)


def _logistic(z):
    # Stable for any finite z: 1 / (1 + exp(-z)) written through tanh.
    z *= 0.5
    np.tanh(z, out=z)
    z += 1.0
    z *= 0.5
    return z


def _logistic_grad(a, out=None):
    out = np.subtract(1.0, a, out=out)
    out *= a
    return out


def _identity(z):
    return z


def _identity_grad(a, out=None):
    if out is None:
        return np.ones_like(a)
    out[...] = 1.0
    return out


#: Hidden-layer activations: name -> (in-place function, derivative from the
#: output). The derivative ``grad(a, out=None)`` writes into ``out`` when
#: given (an array that does not share memory with ``a``).
ACTIVATIONS = {
    "tanh": (_tanh, _tanh_grad),
    "scaled_tanh": (_scaled_tanh, _scaled_tanh_grad),
    "relu": (_relu, _relu_grad),
    "logistic": (_logistic, _logistic_grad),
}

#: Output-unit activations, as :data:`ACTIVATIONS`: the identity, or a bounded
#: (saturating) function; relu is left out (a unit stuck at 0 gives no score).
OUTPUT_ACTIVATIONS = {
    "identity": (_identity, _identity_grad),
    **{name: funcs for name, funcs in ACTIVATIONS.items() if name != "relu"},
}


class Factored(NamedTuple):
    """An activation of a sum ``z = p + q`` through one exponential per term.

    ``g(z) = offset + slope / (1 + exp(-a z))``, and ``exp(-a z) =
    exp(-a p) exp(-a q)``: where ``p`` and ``q`` each take many values and
    ``z`` every pair of them (the pairwise potential's hidden units), the
    exponentials are taken once per term, and each pair costs a product, a
    sum and a division instead of a transcendental function (whose float64
    kernels are scalar library calls on CPUs without AVX-512). With ``r =
    1 / (1 + exp(-a z))``, ``g'(z) = a slope r (1 - r)``. The result is
    within a few units in the last place of ``np.tanh`` / the logistic,
    absolutely; the caller bounds ``|a p|`` and ``|a q|``
    (:data:`FACTOR_BOUNDS`) so that no factor, nor a product of two, leaves
    the normal range.
    """

    a: float
    offset: float
    slope: float

    def finish(self, d):
        """``g(z)`` from ``d = 1 + exp(-a z)``, in place."""
        np.divide(self.slope, d, out=d)
        if self.offset:
            d += self.offset
        return d


#: Hidden activations with a :class:`Factored` form, by name:
#: ``tanh(z) = 2 / (1 + exp(-2z)) - 1`` and the logistic ``1 / (1 + exp(-z))``.
FACTORED_ACTIVATIONS = {
    "tanh": Factored(a=2.0, offset=-1.0, slope=2.0),
    "logistic": Factored(a=1.0, offset=0.0, slope=1.0),
}

#: Largest ``|a p|`` of a factor ``exp(-a p)`` of a :class:`Factored` activation,
#: by dtype: the product of two factors stays a finite normal number
#: (float64 up to about ``exp(709)``, float32 ``exp(88)``).
FACTOR_BOUNDS = {np.dtype(np.float64): 350.0, np.dtype(np.float32): 43.0}


def _check_activation(name, value, registry):
    if not isinstance(value, str) or value not in registry:
        raise ValueError(f"{name} must be one of {sorted(registry)}; got {value!r}.")


def _check_combinable(output_activation):
    """``combine`` is exact only for a score linear in the output weights."""
    if output_activation != "identity":
        raise ValueError(
            "combining networks needs the identity output (output_activation="
            "'identity'): the average of networks with a nonlinear output unit is no "
            f"such network; got output_activation={output_activation!r}."
        )
