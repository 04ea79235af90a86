"""Scoring networks and optimizers: gradients, packing, activations."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from skrank.neural._networks import ACTIVATIONS, ScoringNetwork
from skrank.neural._optimizers import SGD, Adam, lbfgs

ARCHITECTURES = [(), (4,), (3, 2)]


def _random_params(network, seed=0):
    """Parameters of a non-trivial size (biases non-zero too)."""
    return np.random.RandomState(seed).normal(scale=0.7, size=network.n_params)


@pytest.mark.parametrize("hidden", ARCHITECTURES)
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_backward_matches_finite_differences(hidden, activation, rng):
    X = rng.normal(size=(9, 5))
    dscores = rng.normal(size=9)
    network = ScoringNetwork(5, hidden, activation)
    params = _random_params(network)
    if activation == "relu":  # keep pre-activations away from the kink
        params = np.abs(params)

    def value(p):
        return float(network.forward(p, X)[0] @ dscores)

    scores, cache = network.forward(params, X)
    grad = network.backward(params, cache, dscores)
    eps = 1e-6
    numeric = np.array(
        [
            (value(params + eps * e) - value(params - eps * e)) / (2 * eps)
            for e in np.eye(network.n_params)
        ]
    )
    assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


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


def test_linear_network_is_a_dot_product(rng):
    X = rng.normal(size=(6, 4))
    network = ScoringNetwork(4)
    params = _random_params(network)
    assert network.n_params == 4  # no output bias
    assert_allclose(network.forward(params, X)[0], X @ params)
    assert_allclose(network.backward(params, [X], np.ones(6)), X.sum(axis=0))


def test_sparse_input_matches_dense(rng):
    X = rng.normal(size=(8, 5)) * (rng.random((8, 5)) < 0.4)
    network = ScoringNetwork(5, (3,))
    params = _random_params(network)
    dense, cache = network.forward(params, X)
    sparse, sparse_cache = network.forward(params, sp.csr_matrix(X))
    assert_allclose(sparse, dense)
    dscores = rng.normal(size=8)
    assert_allclose(
        network.backward(params, sparse_cache, dscores),
        network.backward(params, cache, dscores),
    )


def test_pack_unpack_round_trip():
    network = ScoringNetwork(5, (4, 3))
    params = _random_params(network)
    coefs, intercepts = network.unpack(params)
    assert [c.shape for c in coefs] == [(5, 4), (4, 3), (3, 1)]
    assert [b.shape for b in intercepts] == [(4,), (3,)]
    assert_allclose(network.pack(coefs, intercepts), params)
    with pytest.raises(ValueError, match="do not match the network"):
        network.pack(coefs[:-1], intercepts)


def test_penalty_covers_weights_not_biases():
    network = ScoringNetwork(2, (2,))
    params = np.arange(1.0, network.n_params + 1)
    coefs, intercepts = network.unpack(params)
    value, grad = network.penalty(params, 0.5)
    weights = np.concatenate([c.ravel() for c in coefs])
    assert_allclose(value, 0.25 * (weights**2).sum())
    g_coefs, g_intercepts = network.unpack(grad)
    assert_allclose(g_intercepts[0], 0.0)
    assert_allclose(g_coefs[0], 0.5 * coefs[0])


def test_init_is_glorot_scaled_and_seeded():
    network = ScoringNetwork(50, (20,))
    a = network.init_params(np.random.RandomState(1))
    b = network.init_params(np.random.RandomState(1))
    coefs, intercepts = network.unpack(a)
    assert_allclose(a, b)
    assert np.abs(coefs[0]).max() <= np.sqrt(6 / 70)
    assert np.abs(coefs[0]).max() > 0.5 * np.sqrt(6 / 70)
    assert_allclose(intercepts[0], 0.0)
    logistic = ScoringNetwork(50, (20,), "logistic").init_params(np.random.RandomState(1))
    assert np.abs(logistic[: 50 * 20]).max() <= np.sqrt(2 / 70)
    # the activation plays no part in a linear model
    assert_allclose(
        ScoringNetwork(50, (), "logistic").init_params(np.random.RandomState(1)),
        ScoringNetwork(50, ()).init_params(np.random.RandomState(1)),
    )


@pytest.mark.parametrize("optimizer", [Adam(2, 0.1), SGD(2, 0.05, momentum=0.5)])
def test_stochastic_optimizers_minimise_a_quadratic(optimizer):
    target = np.array([1.0, -2.0])
    params = np.zeros(2)
    for _ in range(500):
        optimizer.step(params, 2 * (params - target))
    assert_allclose(params, target, atol=1e-3)
    rate = optimizer.learning_rate
    optimizer.decay(0.8)
    assert optimizer.learning_rate == pytest.approx(0.8 * rate)


def test_lbfgs_minimises_and_stops_on_request():
    target = np.array([3.0, -1.0, 0.5])

    def fun(x):
        return float(((x - target) ** 2).sum()), 2 * (x - target)

    result = lbfgs(fun, np.zeros(3), max_iter=100, tol=1e-10)
    assert_allclose(result.x, target, atol=1e-6)
    calls = []

    def stop(intermediate_result):
        calls.append(intermediate_result.fun)
        raise StopIteration

    result = lbfgs(fun, np.zeros(3), max_iter=100, tol=1e-10, callback=stop)
    assert len(calls) == 1 and result.nit == 1
