"""The linear and MLP networks of skrank/_core/_networks.py."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from skrank._core._activations import ACTIVATIONS, OUTPUT_ACTIVATIONS
from skrank._core._network_factory import make_network, restore_network
from skrank._core._networks import LinearNetwork, MLPNetwork
from skrank.utils import QueryLayout

from tests._network_helpers import (
    _FORMULAS,
    _X,
    N_FEATURES,
    NONLINEAR_OUTPUTS,
    _numeric_grad,
    _random_params,
)


# ----------------------------------------------------------------------------
# float32
NETWORKS = {
    "linear": dict(hidden_layer_sizes=()),
    "mlp": dict(hidden_layer_sizes=(4, 3)),
    "mlp-scaled_tanh-output": dict(hidden_layer_sizes=(4,), activation="scaled_tanh",
                                   output_activation="scaled_tanh"),
    "pairwise-linear": dict(hidden_layer_sizes=(), pairwise_hidden_layer_sizes=(3,)),
    "pairwise-mlp": dict(hidden_layer_sizes=(4,), pairwise_hidden_layer_sizes=(3,)),
}


def _float32_data(rng, sparse):
    qid = rng.permutation(np.repeat([3, 1, 7], [5, 2, 6]))
    X = rng.normal(size=(len(qid), 6))
    if sparse:
        X *= rng.random(X.shape) < 0.6
        X = sp.csr_matrix(X)
    return X, qid


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_network_runs_in_float32_and_its_gradient_matches_finite_differences(
        rng, name, sparse):
    X64, qid = _float32_data(rng, sparse)
    X32 = X64.astype(np.float32)
    network = make_network(6, **NETWORKS[name])
    layout = QueryLayout(qid) if network.needs_query else None
    params = network.init_params(np.random.RandomState(0))
    params += np.random.RandomState(1).normal(scale=0.3, size=params.shape)
    dscores = rng.normal(size=len(qid))

    scores32, cache = network.forward(params, X32, layout)
    assert scores32.dtype == np.float32
    grad32 = network.backward(params, cache, dscores)
    assert grad32.dtype == np.float64  # the solvers' dtype

    # the same function as in float64, to float32 precision
    scores64, cache64 = network.forward(params, X64.astype(np.float32).astype(np.float64), layout)
    assert scores64.dtype == np.float64
    assert_allclose(scores32, scores64, rtol=1e-5, atol=1e-5)
    grad64 = network.backward(params, cache64, dscores)
    assert_allclose(grad32, grad64, rtol=1e-4, atol=1e-5)

    # central differences of the float32 network, at float32 tolerances
    eps = 1e-3

    def value(p):
        return float(network.forward(p, X32, layout)[0].astype(np.float64) @ dscores)

    numeric = np.array([(value(params + eps * e) - value(params - eps * e)) / (2 * eps)
                        for e in np.eye(len(params))])
    assert_allclose(grad32, numeric, rtol=2e-3, atol=2e-3)


HIDDEN = [(4,), (3, 2)]


def _network(hidden, activation="tanh"):
    return make_network(N_FEATURES, hidden, activation)


# ----------------------------------------------------------------------
# Gradients
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_linear_backward_matches_finite_differences(rng, sparse):
    X = _X(rng, sparse)
    dscores = rng.normal(size=X.shape[0])
    network = LinearNetwork(N_FEATURES)
    params = _random_params(network)

    def value(p):
        return float(network.forward(p, X)[0] @ dscores)

    _, cache = network.forward(params, X)
    grad = network.backward(params, cache, dscores)
    assert grad.shape == (N_FEATURES,)
    assert_allclose(grad, _numeric_grad(value, params), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("hidden", HIDDEN, ids=str)
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_mlp_backward_matches_finite_differences(rng, hidden, activation, sparse):
    X = _X(rng, sparse)
    dscores = rng.normal(size=X.shape[0])
    network = MLPNetwork(N_FEATURES, hidden, activation)
    # relu: positive weights and biases keep pre-activations of the (mostly
    # positive) hidden units away from the kink at 0
    params = _random_params(network, positive=activation == "relu")

    def value(p):
        return float(network.forward(p, X)[0] @ dscores)

    _, cache = network.forward(params, X)
    grad = network.backward(params, cache, dscores)
    assert grad.shape == (network.n_params,)
    assert np.abs(grad).max() > 1e-3  # not trivially zero
    assert_allclose(grad, _numeric_grad(value, params), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("hidden", [(), *HIDDEN], ids=str)
def test_sparse_input_matches_dense(rng, hidden):
    X = _X(rng, sparse=True)
    network = _network(hidden)
    params = _random_params(network)
    dscores = rng.normal(size=X.shape[0])
    dense, dense_cache = network.forward(params, X.toarray())
    sparse, sparse_cache = network.forward(params, X)
    assert isinstance(sparse, np.ndarray) and sparse.shape == (X.shape[0],)
    assert_allclose(sparse, dense, rtol=1e-13)
    assert_allclose(
        network.backward(params, sparse_cache, dscores),
        network.backward(params, dense_cache, dscores),
        rtol=1e-13,
    )


@pytest.mark.parametrize("hidden", [(), *HIDDEN], ids=str)
def test_penalty_gradient_matches_finite_differences(hidden):
    network = _network(hidden)
    params = _random_params(network)
    alpha = 0.3
    value, grad = network.penalty(params, alpha)
    assert value > 0
    assert_allclose(
        grad, _numeric_grad(lambda p: network.penalty(p, alpha)[0], params), rtol=1e-7, atol=1e-9
    )


def test_penalty_covers_weights_not_biases():
    network = MLPNetwork(2, (2,))
    params = np.arange(1.0, network.n_params + 1)
    coefs, intercepts = network.unpack(params)
    value, grad = network.penalty(params, 0.5)
    weights = np.concatenate([c.ravel() for c in coefs])
    assert_allclose(value, 0.25 * (weights**2).sum())
    g_coefs, g_intercepts = network.unpack(grad)
    assert_array_equal(g_intercepts[0], 0.0)
    assert_allclose(g_coefs[0], 0.5 * coefs[0])
    assert_allclose(g_coefs[1], 0.5 * coefs[1])


# ----------------------------------------------------------------------
# The networks themselves
def test_linear_network_is_a_dot_product(rng):
    X = rng.normal(size=(6, N_FEATURES))
    network = LinearNetwork(N_FEATURES)
    params = _random_params(network)
    assert network.n_params == N_FEATURES  # no intercept
    assert not network.needs_query
    scores, cache = network.forward(params, X)
    assert_allclose(scores, X @ params, rtol=1e-14)
    assert_allclose(network.backward(params, cache, np.ones(6)), X.sum(axis=0), rtol=1e-14)


def test_mlp_is_the_layers_composed(rng):
    """tanh(X W0 + b0) W1 + b1 ... w_out, without an output bias."""
    X = rng.normal(size=(7, N_FEATURES))
    network = MLPNetwork(N_FEATURES, (4, 3), "tanh")
    params = _random_params(network)
    (W0, W1, w), (b0, b1) = network.unpack(params)
    expected = (np.tanh(np.tanh(X @ W0 + b0) @ W1 + b1) @ w).ravel()
    assert_allclose(network.forward(params, X)[0], expected, rtol=1e-13)
    assert network.n_params == 5 * 4 + 4 + 4 * 3 + 3 + 3 * 1


def test_pack_unpack_round_trip():
    network = MLPNetwork(N_FEATURES, (4, 3))
    params = _random_params(network)
    coefs, intercepts = network.unpack(params)
    assert [c.shape for c in coefs] == [(5, 4), (4, 3), (3, 1)]
    assert [b.shape for b in intercepts] == [(4,), (3,)]
    assert_array_equal(network.pack(coefs, intercepts), params)
    with pytest.raises(ValueError, match="do not match the network"):
        network.pack(coefs[:-1], intercepts)


def test_init_is_glorot_scaled_and_seeded():
    network = MLPNetwork(50, (20,))
    a = network.init_params(np.random.RandomState(1))
    b = network.init_params(np.random.RandomState(1))
    coefs, intercepts = network.unpack(a)
    assert_array_equal(a, b)
    assert np.abs(coefs[0]).max() <= np.sqrt(6 / 70)
    assert np.abs(coefs[0]).max() > 0.9 * np.sqrt(6 / 70)
    assert np.abs(coefs[1]).max() <= np.sqrt(6 / 21)
    assert_array_equal(intercepts[0], 0.0)
    logistic = MLPNetwork(50, (20,), "logistic").init_params(np.random.RandomState(1))
    assert np.abs(logistic[: 50 * 20]).max() <= np.sqrt(2 / 70)
    linear = LinearNetwork(50).init_params(np.random.RandomState(1))
    assert linear.shape == (50,)
    assert np.abs(linear).max() <= np.sqrt(6 / 51)
    assert np.abs(linear).max() > 0.9 * np.sqrt(6 / 51)


# ----------------------------------------------------------------------
# Fitted attributes
def test_linear_export_restore_round_trip(rng):
    network = LinearNetwork(N_FEATURES)
    params = _random_params(network)
    attributes = network.export(params)
    assert set(attributes) == {"coef_"}
    assert attributes["coef_"].shape == (N_FEATURES,)
    assert attributes["coef_"] is not params  # a copy, not a view of the solver's vector
    for restored, restored_params in (
        LinearNetwork.restore(attributes),
        restore_network(attributes),
    ):
        assert isinstance(restored, LinearNetwork) and restored.n_features == N_FEATURES
        assert_array_equal(restored_params, params)
    X = rng.normal(size=(4, N_FEATURES))
    assert_array_equal(restored.forward(restored_params, X)[0], network.forward(params, X)[0])
    with pytest.raises(ValueError, match=r"coef_ must have shape \(n_features,\); got \(5, 1\)"):
        LinearNetwork.restore({"coef_": params[:, None]})


@pytest.mark.parametrize("hidden", HIDDEN, ids=str)
@pytest.mark.parametrize("activation", ["relu", "logistic"])
def test_mlp_export_restore_round_trip(rng, hidden, activation):
    network = MLPNetwork(N_FEATURES, hidden, activation)
    params = _random_params(network)
    attributes = network.export(params)
    assert set(attributes) == {"coefs_", "intercepts_", "_activation"}
    assert attributes["_activation"] == activation
    sizes = (N_FEATURES, *hidden, 1)
    assert [c.shape for c in attributes["coefs_"]] == list(zip(sizes[:-1], sizes[1:]))
    assert [b.shape for b in attributes["intercepts_"]] == [(h,) for h in hidden]
    params_before = params.copy()
    attributes["coefs_"][0][...] = 0.0  # exported arrays are copies
    assert_array_equal(params, params_before)
    attributes = network.export(params)
    for restored, restored_params in (
        MLPNetwork.restore(attributes),
        restore_network(attributes),
    ):
        assert isinstance(restored, MLPNetwork)
        assert restored.hidden_layer_sizes == hidden and restored.activation == activation
        assert_array_equal(restored_params, params)
    X = rng.normal(size=(4, N_FEATURES))
    assert_array_equal(restored.forward(restored_params, X)[0], network.forward(params, X)[0])


# ----------------------------------------------------------------------
# Combining networks
@pytest.mark.parametrize("hidden", [(), *HIDDEN], ids=str)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_combine_scores_the_weighted_sum_of_the_members(rng, hidden, sparse):
    network = _network(hidden, "tanh")
    members = [_random_params(network, seed) for seed in range(3)]
    weights = np.array([0.5, -1.25, 2.0])
    combined, params = network.combine(members, weights)
    X = _X(rng, sparse, n_samples=11)
    expected = sum(w * network.forward(p, X)[0] for w, p in zip(weights, members))
    assert_allclose(combined.forward(params, X)[0], expected, rtol=1e-12, atol=1e-14)
    assert type(combined) is type(network)
    assert params.shape == (combined.n_params,)
    if hidden:  # the members' hidden units side by side
        assert combined.hidden_layer_sizes == tuple(3 * h for h in hidden)
        assert combined.activation == network.activation
        assert combined.n_features == N_FEATURES
        sizes = (N_FEATURES, *combined.hidden_layer_sizes, 1)
        assert [c.shape for c in combined.export(params)["coefs_"]] == list(
            zip(sizes[:-1], sizes[1:])
        )
    else:
        assert combined.export(params)["coef_"].shape == (N_FEATURES,)
    # the combined network is an ordinary network: it exports and restores
    restored, restored_params = restore_network(combined.export(params))
    assert_array_equal(restored.forward(restored_params, X)[0], combined.forward(params, X)[0])


def test_combine_of_one_member_with_weight_one_is_the_member(rng):
    network = MLPNetwork(N_FEATURES, (3, 2))
    params = _random_params(network)
    combined, combined_params = network.combine([params], np.array([1.0]))
    assert combined.hidden_layer_sizes == (3, 2)
    assert_array_equal(combined_params, params)


# ----------------------------------------------------------------------
# Output activations of the MLP
@pytest.mark.parametrize("output_activation", NONLINEAR_OUTPUTS)
def test_mlp_output_activation_is_applied_with_an_output_bias(rng, output_activation):
    """out(tanh(X W0 + b0) w + c): the output bias is the last intercept."""
    X = rng.normal(size=(7, N_FEATURES))
    network = MLPNetwork(N_FEATURES, (4,), "tanh", output_activation)
    params = _random_params(network)
    (W0, w), (b0, c) = network.unpack(params)
    assert c.shape == (1,)
    assert network.n_params == 5 * 4 + 4 + 4 * 1 + 1
    expected = _FORMULAS[output_activation]((np.tanh(X @ W0 + b0) @ w + c).ravel())
    assert_allclose(network.forward(params, X)[0], expected, rtol=1e-13)
    # the output bias starts at 0, like the hidden biases
    _, (b0, c) = network.unpack(network.init_params(np.random.RandomState(0)))
    assert_array_equal(c, 0.0)


def test_identity_output_has_no_output_bias():
    network = MLPNetwork(N_FEATURES, (4, 3), "tanh", "identity")
    assert network.intercept_shapes == [(4,), (3,)]
    assert network.n_params == MLPNetwork(N_FEATURES, (4, 3)).n_params


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("hidden", HIDDEN, ids=str)
@pytest.mark.parametrize("output_activation", sorted(OUTPUT_ACTIVATIONS))
def test_mlp_output_activation_backward_matches_finite_differences(
    rng, output_activation, hidden, sparse
):
    X = _X(rng, sparse)
    dscores = rng.normal(size=X.shape[0])
    network = MLPNetwork(N_FEATURES, hidden, "tanh", output_activation)
    params = _random_params(network)

    def value(p):
        return float(network.forward(p, X)[0] @ dscores)

    _, cache = network.forward(params, X)
    grad = network.backward(params, cache, dscores)
    assert grad.shape == (network.n_params,)
    if output_activation != "identity":
        assert abs(network.unpack(grad)[1][-1][0]) > 1e-3  # the output bias learns
    assert_allclose(grad, _numeric_grad(value, params), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("hidden", HIDDEN, ids=str)
@pytest.mark.parametrize("output_activation", sorted(OUTPUT_ACTIVATIONS))
def test_mlp_output_activation_export_restore_round_trip(rng, hidden, output_activation):
    network = MLPNetwork(N_FEATURES, hidden, "relu", output_activation)
    params = _random_params(network)
    attributes = network.export(params)
    nonlinear = output_activation != "identity"
    # absent for the identity: models fitted before the option read the same
    assert ("_output_activation" in attributes) == nonlinear
    assert attributes.get("_output_activation", "identity") == output_activation
    assert [b.shape for b in attributes["intercepts_"]] == (
        [(h,) for h in hidden] + [(1,)] * nonlinear
    )
    for restored, restored_params in (MLPNetwork.restore(attributes), restore_network(attributes)):
        assert restored.output_activation == output_activation
        assert restored.activation == "relu"
        assert_array_equal(restored_params, params)
    X = rng.normal(size=(4, N_FEATURES))
    assert_array_equal(restored.forward(restored_params, X)[0], network.forward(params, X)[0])


@pytest.mark.parametrize("output_activation", NONLINEAR_OUTPUTS)
def test_combine_refuses_a_nonlinear_output(output_activation):
    network = MLPNetwork(N_FEATURES, (3,), "tanh", output_activation)
    members = [_random_params(network, seed) for seed in range(2)]
    with pytest.raises(ValueError, match=r"^combining networks needs the identity output .*; got output_activation="):
        network.combine(members, np.array([0.5, 0.5]))
