"""Activations of the networks' units (skrank/_core/_activations.py)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank._core._activations import ACTIVATIONS, OUTPUT_ACTIVATIONS

from tests._network_helpers import NONLINEAR_OUTPUTS


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_activation_values(activation):
    z = np.array([-30.0, -1.0, 0.0, 0.5, 30.0])
    expected = {
        "tanh": np.tanh(z),
        "scaled_tanh": 1.7159 * np.tanh(2 * z / 3),
        "relu": np.maximum(z, 0),
        "logistic": 1 / (1 + np.exp(-z)),
    }[activation]
    func, _ = ACTIVATIONS[activation]
    assert_allclose(func(z.copy()), expected, rtol=1e-12, atol=1e-15)


def test_output_activations_are_identity_and_the_bounded_activations():
    assert set(OUTPUT_ACTIVATIONS) == {"identity", "tanh", "scaled_tanh", "logistic"}
    for name in NONLINEAR_OUTPUTS:
        assert OUTPUT_ACTIVATIONS[name] == ACTIVATIONS[name]
    func, grad = OUTPUT_ACTIVATIONS["identity"]
    z = np.array([-2.0, 0.0, 3.0])
    assert_array_equal(func(z.copy()), z)
    assert_array_equal(grad(z), 1.0)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_activation_derivative_writes_into_out(rng, activation):
    func, grad = ACTIVATIONS[activation]
    a = func(rng.normal(size=(3, 4)))
    out = np.full_like(a, np.nan)
    assert grad(a, out=out) is out
    assert_allclose(out, grad(a), rtol=1e-15)
