"""Shared helpers of the tests of the networks (tests/core/test_activations.py,
test_networks.py, test_pairwise_network.py and test_network_factory.py).

Not a test module: the tests import it as ``tests._network_helpers``.
"""

import numpy as np
import scipy.sparse as sp

from skrank._core._activations import OUTPUT_ACTIVATIONS

N_FEATURES = 5


def _random_params(network, seed=0, positive=False):
    """Parameters of a non-trivial size (biases non-zero too)."""
    params = np.random.RandomState(seed).normal(scale=0.7, size=network.n_params)
    return np.abs(params) if positive else params


def _X(rng, sparse, n_samples=9):
    X = rng.normal(size=(n_samples, N_FEATURES))
    if sparse:
        X *= rng.random(X.shape) < 0.5
        return sp.csr_matrix(X)
    return X


def _numeric_grad(f, params, eps=1e-6):
    """Central differences of a scalar function of the flat parameters."""
    return np.array(
        [(f(params + eps * e) - f(params - eps * e)) / (2 * eps) for e in np.eye(len(params))]
    )


# Output activations other than the identity
NONLINEAR_OUTPUTS = sorted(set(OUTPUT_ACTIVATIONS) - {"identity"})

# plain formulas, independent of the in-place functions of skrank._core._activations
_FORMULAS = {
    "identity": lambda z: z,
    "tanh": np.tanh,
    "scaled_tanh": lambda z: 1.7159 * np.tanh(2 * z / 3),
    "relu": lambda z: np.maximum(z, 0),
    "logistic": lambda z: 1 / (1 + np.exp(-z)),
}
