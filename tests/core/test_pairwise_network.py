"""The pairwise network of BoltzRank2 (skrank/_core/_pairwise_network.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from skrank._core._activations import ACTIVATIONS, OUTPUT_ACTIVATIONS
from skrank._core._network_factory import FITTED_ATTRIBUTES, make_network, restore_network
from skrank._core._networks import LinearNetwork, MLPNetwork
from skrank._core._pairwise_network import PairwiseNetwork
from skrank.utils import QueryLayout

from tests._network_helpers import _FORMULAS, N_FEATURES, _numeric_grad, _random_params, _X

PAIR_HIDDEN = (3,)
# (query id, size) of the queries of the pairwise tests: sizes differ, one
# query has a single document
QUERY_SIZES = {7: 5, 3: 1, 11: 3, 5: 4, 2: 2, 8: 4}


def _pairwise(hidden=(), output_activation="identity", activation="tanh", **kwargs):
    unary = (
        MLPNetwork(N_FEATURES, hidden, activation, output_activation)
        if hidden
        else LinearNetwork(N_FEATURES)
    )
    return PairwiseNetwork(
        unary, PAIR_HIDDEN, activation=activation, output_activation=output_activation, **kwargs
    )


def _queries(rng, kind="shuffled", sparse=False):
    """``(X, qid)``: rows shuffled across queries, grouped, or grouped of one size."""
    if kind == "equal":
        qid = np.repeat([1, 4, 6], 4)
    else:
        qid = np.repeat(list(QUERY_SIZES), list(QUERY_SIZES.values()))
        if kind == "shuffled":
            qid = rng.permutation(qid)
        else:
            qid = np.sort(qid)
    return _X(rng, sparse, n_samples=len(qid)), qid


def _naive_pairwise_scores(network, params, X, qid):
    """phi(x_j) plus a one-hidden-layer network on [x_j; x_k] for the other k of j's query.

    Built from the exported attributes, one pair at a time.
    """
    attributes = network.export(params)
    W, v = attributes["pairwise_coefs_"]
    b, *c = attributes["pairwise_intercepts_"]
    act, out = _FORMULAS[network.activation], _FORMULAS[network.output_activation]
    X = X.toarray() if sp.issparse(X) else X
    scores = network.unary.forward(params[: network.unary.n_params], X)[0]
    for j in range(len(qid)):
        for k in range(len(qid)):
            if k != j and qid[k] == qid[j]:
                hidden = act(np.concatenate([X[j], X[k]]) @ W + b)
                scores[j] += out(hidden @ v + sum(c)).item()
    return scores


def _forward(network, params, X, qid):
    return network.forward(params, X, QueryLayout(qid))[0]


@pytest.mark.parametrize("kind", ["shuffled", "grouped", "equal"])
@pytest.mark.parametrize("output_activation", sorted(OUTPUT_ACTIVATIONS))
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_scores_match_naive_pairs(rng, hidden, activation, output_activation, kind):
    network = _pairwise(hidden, output_activation, activation)
    params = _random_params(network)
    X, qid = _queries(rng, kind)
    scores = _forward(network, params, X, qid)
    assert scores.shape == (len(qid),)
    expected = _naive_pairwise_scores(network, params, X, qid)
    assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)
    # the pairwise potentials are not trivially zero
    unary = network.unary.forward(params[: network.unary.n_params], X)[0]
    assert np.abs(expected - unary).max() > 1e-2


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("output_activation", ["identity", "scaled_tanh"])
@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_backward_matches_finite_differences(rng, hidden, output_activation, sparse):
    network = _pairwise(hidden, output_activation)
    params = _random_params(network)
    X, qid = _queries(rng, sparse=sparse)
    layout = QueryLayout(qid)
    dscores = rng.normal(size=len(qid))

    def value(p):
        return float(network.forward(p, X, layout)[0] @ dscores)

    _, cache = network.forward(params, X, layout)
    grad = network.backward(params, cache, dscores)
    assert grad.shape == (network.n_params,)
    assert np.abs(grad[network.unary.n_params:]).min() > 0  # every pairwise parameter learns
    assert_allclose(grad, _numeric_grad(value, params), rtol=1e-6, atol=1e-8)
    # the cache can be used again
    assert_array_equal(network.backward(params, cache, dscores), grad)


@pytest.mark.parametrize("output_activation", ["identity", "logistic"])
@pytest.mark.parametrize("activation", ["tanh", "scaled_tanh", "logistic"])
def test_pairwise_factored_activation_equals_the_direct_one(rng, activation, output_activation):
    """Hidden units of pairs through one exponential per document and unit (see the
    class's Notes) give the scores and gradients of the activation applied to each pair."""
    from skrank._core._activations import FACTORED_ACTIVATIONS

    X, qid = _queries(rng)
    layout = QueryLayout(qid)
    dscores = rng.normal(size=len(qid))
    results = []
    for factored in (True, False):
        network = _pairwise((4,), output_activation, activation)
        if not factored:
            network._factored = None  # the activation on every pair, as np.tanh gives it
        params = _random_params(network)
        scores, cache = network.forward(params, X, layout)
        spec = FACTORED_ACTIVATIONS["logistic" if activation == "logistic" else "tanh"]
        # the path taken: the identity output sums the pairs' r (the summed path)
        summed = {block.diag is not None for block in cache[2][0]}
        assert summed == {factored and output_activation == "identity"}
        assert {block.activate == network._act for block in cache[2][0]} == {not factored}
        if factored and output_activation != "identity":
            assert {block.activate for block in cache[2][0]} == {spec.finish}
        results.append((scores, network.backward(params, cache, dscores)))
    assert_allclose(results[0][0], results[1][0], rtol=0, atol=1e-13)
    assert_allclose(results[0][1], results[1][1], rtol=0, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("activation", ["tanh", "logistic"])
def test_pairwise_large_pre_activations_take_the_direct_activation(rng, activation, dtype):
    """Beyond FACTOR_BOUNDS a product of two factors would overflow (or meet 0 * inf):
    such a pass applies the activation to the sums, and stays finite and exact."""
    import warnings

    from skrank._core._activations import ACTIVATIONS as ACTS
    from skrank._core._activations import FACTOR_BOUNDS

    X, qid = _queries(rng)
    layout = QueryLayout(qid)
    network = _pairwise((), "identity", activation)
    params = _random_params(network)
    _, W, _, _, _ = network.unpack(params)
    a = 2.0 if activation == "tanh" else 1.0
    # pre-activations of row terms past the bound, of opposite signs in A and B, whose
    # sums over pairs stay moderate
    scale = 3 * FACTOR_BOUNDS[np.dtype(dtype)] / a / np.abs(
        X @ np.hstack([W[:N_FEATURES], W[N_FEATURES:]])).max()
    big = params.copy()
    big[network._W] *= scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # factors that overflow are never used: no warning
        scores, cache = network.forward(big, X.astype(dtype), layout)
    assert {block.activate for block in cache[2][0]} == {ACTS[activation][0]}  # direct
    assert np.isfinite(scores).all()
    with np.errstate(over="ignore"):  # exp(-z) of the plain logistic formula
        expected = _naive_pairwise_scores(network, big, X, qid)
    assert_allclose(scores, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                    atol=1e-3 if dtype == np.float32 else 1e-9)
    # a row whose p and q are far beyond the bound with opposite signs: one factor
    # is 0 and the other inf, and their product (never used) no warning either
    opposite = params.copy()
    W2 = opposite[network._W].reshape(2 * N_FEATURES, -1)
    W2[:] = 0.0
    s = 3 * FACTOR_BOUNDS[np.dtype(dtype)] / a / abs(X[0, 0])
    W2[0], W2[N_FEATURES] = s, -s
    opposite[network._W] = W2.ravel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores, cache = network.forward(opposite, X.astype(dtype), layout)
    assert {block.activate for block in cache[2][0]} >= {ACTS[activation][0]}
    with np.errstate(over="ignore"):
        expected = _naive_pairwise_scores(network, opposite, X, qid)
    assert_allclose(scores, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                    atol=1e-3 if dtype == np.float32 else 1e-9)
    # just within the bound: the factored path, also finite and exact
    inside = params.copy()
    inside[network._W] *= 0.2 * scale
    scores, cache = network.forward(inside, X.astype(dtype), layout)
    assert ACTS[activation][0] not in {block.activate for block in cache[2][0]}
    assert_allclose(scores, _naive_pairwise_scores(network, inside, X, qid),
                    rtol=1e-5 if dtype == np.float32 else 1e-12,
                    atol=1e-4 if dtype == np.float32 else 1e-11)
    # one document beyond: only its block of queries takes the direct activation
    outlier = X.copy()
    outlier[np.flatnonzero(qid == 7)[0]] *= 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores, cache = network.forward(inside, outlier.astype(dtype), layout)
    direct = [ACTS[activation][0] is block.activate for block in cache[2][0]]
    assert any(direct) and not all(direct)
    assert any(7 in qid[block.rows] for block, d in zip(cache[2][0], direct) if d)
    with np.errstate(over="ignore"):
        expected = _naive_pairwise_scores(network, inside, outlier, qid)
    assert_allclose(scores, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                    atol=1e-3 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("keep", [True, False], ids=["kept", "recomputed"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_pairwise_potential_computes_in_float32_for_float32_X(rng, monkeypatch, activation,
                                                              keep):
    """float32 X: float32 pair arrays, hidden units and products in forward and backward,
    with gradients matching finite differences at float32 tolerances and float64's."""
    X, qid = _queries(rng)
    X32 = X.astype(np.float32)
    layout = QueryLayout(qid)
    dscores = rng.normal(size=len(qid))
    network = _pairwise((4,), "identity", activation, max_cells=None if keep else 1)
    params = _random_params(network)
    dtypes = []
    hidden, pair_output = network._hidden, network._pair_output
    act_grad = network._act_grad

    def spy(record):
        def call(*args, **kwargs):
            out = record(*args, **kwargs)
            arrays = out if isinstance(out, tuple) else (out,)
            dtypes.extend(a.dtype for a in arrays if isinstance(a, np.ndarray))
            dtypes.extend(a.dtype for a in args if isinstance(a, np.ndarray))
            return out
        return call

    monkeypatch.setattr(network, "_hidden", spy(hidden))
    monkeypatch.setattr(network, "_pair_output", spy(pair_output))
    monkeypatch.setattr(network, "_act_grad", spy(act_grad))
    summed = network._summed_units

    def summed_backward(*args):  # (its gradient of v is float64, the parameters')
        d_rows, d_cols, g_v = network.__class__._summed_backward(network, *args)
        dtypes.extend([d_rows.dtype, d_cols.dtype])
        return d_rows, d_cols, g_v

    monkeypatch.setattr(network, "_summed_units", spy(summed))
    monkeypatch.setattr(network, "_summed_backward", summed_backward)
    scores, cache = network.forward(params, X32, layout)
    grad = network.backward(params, cache, dscores)
    assert scores.dtype == np.float32 and grad.dtype == np.float64
    assert len(dtypes) > 10 and set(dtypes) == {np.dtype(np.float32)}
    scores64, cache64 = network.forward(params, X32.astype(np.float64), layout)
    grad64 = network.backward(params, cache64, dscores)
    assert_allclose(scores, scores64, rtol=1e-5, atol=1e-5)
    assert_allclose(grad, grad64, rtol=1e-4, atol=1e-4)

    def value(p):
        return float(network.forward(p, X32, layout)[0].astype(np.float64) @ dscores)

    if activation != "relu":  # (whose kinks finite differences of float32 steps meet)
        assert_allclose(grad, _numeric_grad(value, params, eps=1e-2), rtol=2e-2, atol=2e-2)


def test_pairwise_padded_blocks_stay_finite_in_both_dtypes():
    """Queries of different sizes share padded blocks; the padding must not reach the
    pairs' products (an inf there meets the zeros some BLAS kernels pad with: NaN)."""
    import warnings

    rng = np.random.default_rng(0)
    network = PairwiseNetwork(MLPNetwork(136, (3,), "scaled_tanh", "identity"), (5,))
    params = _random_params(network) * 0.1
    for _ in range(20):
        sizes = np.clip(np.round(np.exp(rng.normal(4.6, 0.6, size=4))), 2, 900).astype(int)
        qid = np.repeat(np.arange(4), sizes)
        X = rng.normal(size=(len(qid), 136))
        layout = QueryLayout(qid)
        dscores = rng.normal(size=len(qid))
        results = []
        for dtype in (np.float64, np.float32):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no invalid value or overflow
                scores, cache = network.forward(params, X.astype(dtype), layout)
                grad = network.backward(params, cache, dscores)
            assert np.isfinite(scores).all() and np.isfinite(grad).all()
            results.append((scores, grad))
        assert_allclose(results[1][0], results[0][0], rtol=1e-4, atol=1e-4)
        assert_allclose(results[1][1], results[0][1], rtol=1e-3, atol=1e-3)


def test_pairwise_query_alone_equals_query_among_others(rng):
    network = _pairwise((4,), "scaled_tanh")
    params = _random_params(network)
    X, qid = _queries(rng)
    scores = _forward(network, params, X, qid)
    for q in QUERY_SIZES:
        rows = np.flatnonzero(qid == q)
        assert_allclose(
            _forward(network, params, X[rows], qid[rows]), scores[rows], rtol=1e-13, atol=1e-14
        )


@pytest.mark.parametrize("kind", ["shuffled", "grouped"])
def test_pairwise_permuting_rows_permutes_scores(rng, kind):
    network = _pairwise((4,), "tanh")
    params = _random_params(network)
    X, qid = _queries(rng, kind)
    scores = _forward(network, params, X, qid)
    perm = rng.permutation(len(qid))
    assert_allclose(_forward(network, params, X[perm], qid[perm]), scores[perm], rtol=1e-13)


@pytest.mark.parametrize("max_cells", [1, 40, 200])
@pytest.mark.parametrize("output_activation", ["identity", "logistic"])
def test_pairwise_small_budget_gives_the_same_scores_and_gradients(
    rng, monkeypatch, output_activation, max_cells
):
    """Chunks of documents j, blocks of one query, and hidden units recomputed in backward."""
    X, qid = _queries(rng)
    X, qid = np.vstack([X, rng.normal(size=(9, N_FEATURES))]), np.append(qid, [99] * 9)
    layout = QueryLayout(qid)
    dscores = rng.normal(size=len(qid))
    results, calls = [], []
    for budget in (None, max_cells):
        network = _pairwise((4,), output_activation, max_cells=budget)
        params = _random_params(network)
        count = {"forward": 0, "backward": 0}
        phase = "forward"

        def counting(*args, _hidden=network._hidden, _count=count):
            _count[phase] += 1  # calls computing hidden units of pairs
            return _hidden(*args)

        monkeypatch.setattr(network, "_hidden", counting)
        scores, cache = network.forward(params, X, layout)
        phase = "backward"
        results.append((scores, network.backward(params, cache, dscores)))
        calls.append(count)
    assert_allclose(results[1][0], results[0][0], rtol=1e-12, atol=1e-13)
    assert_allclose(results[1][1], results[0][1], rtol=1e-12, atol=1e-13)
    # the default budget keeps the hidden units; the small one recomputes them
    assert calls[0]["backward"] == 0
    assert calls[1]["backward"] == calls[1]["forward"] > calls[0]["forward"]
    if max_cells == 1:  # one document j at a time
        sizes = np.unique(qid, return_counts=True)[1]
        assert calls[1]["forward"] == sizes[sizes > 1].sum()


def test_pairwise_single_document_query_gets_its_unary_score(rng):
    network = _pairwise((4,), "scaled_tanh")
    params = _random_params(network)
    X, qid = _queries(rng)
    (alone,) = np.flatnonzero(qid == 3)  # the one-document query
    unary_params = params[: network.unary.n_params]
    scores, cache = network.forward(params, X, QueryLayout(qid))
    assert_allclose(
        scores[alone], network.unary.forward(unary_params, X[[alone]])[0][0], rtol=1e-14
    )
    dscores = np.zeros(len(qid))
    dscores[alone] = 1.0
    grad = network.backward(params, cache, dscores)
    assert_array_equal(grad[network.unary.n_params:], 0.0)
    _, unary_cache = network.unary.forward(unary_params, X)
    assert_allclose(
        grad[: network.unary.n_params],
        network.unary.backward(unary_params, unary_cache, dscores),
        rtol=1e-14,
    )
    # a query of one document alone, and only one-document queries
    assert_allclose(
        _forward(network, params, X[[alone]], qid[[alone]]), scores[[alone]], rtol=1e-14
    )
    singles = np.arange(len(qid))
    scores, cache = network.forward(params, X, QueryLayout(singles))
    assert_allclose(scores, network.unary.forward(unary_params, X)[0], rtol=1e-14)
    assert_array_equal(network.backward(params, cache, np.ones(len(qid)))[
        network.unary.n_params:], 0.0)


@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_sparse_input_matches_dense(rng, hidden):
    network = _pairwise(hidden, "tanh")
    params = _random_params(network)
    X, qid = _queries(rng, sparse=True)
    layout = QueryLayout(qid)
    dscores = rng.normal(size=len(qid))
    sparse, sparse_cache = network.forward(params, X, layout)
    dense, dense_cache = network.forward(params, X.toarray(), layout)
    assert isinstance(sparse, np.ndarray) and sparse.shape == (len(qid),)
    assert_allclose(sparse, dense, rtol=1e-13)
    assert_allclose(
        network.backward(params, sparse_cache, dscores),
        network.backward(params, dense_cache, dscores),
        rtol=1e-13,
        atol=1e-15,
    )


@pytest.mark.parametrize("output_activation", ["identity", "tanh"])
@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_penalty_covers_weights_not_biases(hidden, output_activation):
    network = _pairwise(hidden, output_activation)
    params = _random_params(network)
    alpha = 0.3
    value, grad = network.penalty(params, alpha)
    assert_allclose(
        grad, _numeric_grad(lambda p: network.penalty(p, alpha)[0], params), rtol=1e-7, atol=1e-9
    )
    unary_params, W, b, v, c = network.unpack(params)
    unary_value, unary_grad = network.unary.penalty(unary_params, alpha)
    assert_allclose(value, unary_value + 0.5 * alpha * ((W**2).sum() + (v**2).sum()))
    g_unary, g_W, g_b, g_v, g_c = network.unpack(grad)
    assert_array_equal(g_unary, unary_grad)
    assert_allclose(g_W, alpha * W)
    assert_allclose(g_v, alpha * v)
    assert_array_equal(g_b, 0.0)
    assert (c is None) == (output_activation == "identity")
    if c is not None:
        assert_array_equal(g_c, 0.0)


@pytest.mark.parametrize("activation", ["tanh", "logistic"])
def test_pairwise_init_is_glorot_scaled_and_seeded(activation):
    network = PairwiseNetwork(MLPNetwork(50, (4,), activation, "tanh"), (20,))
    a = network.init_params(np.random.RandomState(1))
    assert_array_equal(a, network.init_params(np.random.RandomState(1)))
    unary_params, W, b, v, c = network.unpack(a)
    assert_array_equal(unary_params, network.unary.init_params(np.random.RandomState(1)))
    factor = 2 if activation == "logistic" else 6
    for weights, bound in ((W, np.sqrt(factor / 120)), (v, np.sqrt(factor / 21))):
        assert np.abs(weights).max() <= bound
        assert np.abs(weights).max() > 0.8 * bound
    assert_array_equal(b, 0.0)
    assert_array_equal(c, 0.0)


@pytest.mark.parametrize("output_activation", ["identity", "scaled_tanh"])
@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_export_restore_round_trip(rng, hidden, output_activation):
    network = _pairwise(hidden, output_activation, "logistic")
    params = _random_params(network)
    attributes = network.export(params)
    nonlinear = output_activation != "identity"
    unary_keys = {"coefs_", "intercepts_"} if hidden else {"coef_"}
    assert set(attributes) == unary_keys | {
        "_activation", "pairwise_coefs_", "pairwise_intercepts_"
    } | ({"_output_activation"} if nonlinear else set())
    assert set(attributes) <= set(FITTED_ATTRIBUTES)
    assert attributes["_activation"] == "logistic"
    assert [w.shape for w in attributes["pairwise_coefs_"]] == [(2 * N_FEATURES, 3), (3, 1)]
    assert [w.shape for w in attributes["pairwise_intercepts_"]] == [(3,)] + [(1,)] * nonlinear
    attributes["pairwise_coefs_"][0][...] = 0.0  # exported arrays are copies
    assert np.abs(network.unpack(params)[1]).max() > 0
    attributes = network.export(params)
    for restored, restored_params in (
        PairwiseNetwork.restore(attributes),
        restore_network(attributes),
    ):
        assert isinstance(restored, PairwiseNetwork) and restored.needs_query
        assert type(restored.unary) is type(network.unary)
        assert restored.pairwise_hidden_layer_sizes == PAIR_HIDDEN
        assert restored.activation == "logistic"
        assert restored.output_activation == output_activation
        assert_array_equal(restored_params, params)
    X, qid = _queries(rng)
    assert_array_equal(
        _forward(restored, restored_params, X, qid), _forward(network, params, X, qid)
    )
    attributes["pairwise_intercepts_"] = attributes["pairwise_intercepts_"][:1] + [np.zeros(2)]
    with pytest.raises(ValueError, match="do not match the network"):
        PairwiseNetwork.restore(attributes)


@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_combine_scores_the_weighted_sum_of_the_members(rng, hidden):
    network = _pairwise(hidden, "identity", max_cells=10**6)
    members = [_random_params(network, seed) for seed in range(3)]
    weights = np.array([0.5, -1.25, 2.0])
    combined, params = network.combine(members, weights)
    X, qid = _queries(rng)
    expected = sum(w * _forward(network, p, X, qid) for w, p in zip(weights, members))
    assert_allclose(_forward(combined, params, X, qid), expected, rtol=1e-12, atol=1e-13)
    assert isinstance(combined, PairwiseNetwork)
    assert combined.pairwise_hidden_layer_sizes == (9,)
    assert combined.max_cells == 10**6
    assert type(combined.unary) is type(network.unary)
    restored, restored_params = restore_network(combined.export(params))
    assert_array_equal(
        _forward(restored, restored_params, X, qid), _forward(combined, params, X, qid)
    )


@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
def test_pairwise_combine_refuses_a_nonlinear_output(hidden):
    network = _pairwise(hidden, "scaled_tanh")
    members = [_random_params(network, seed) for seed in range(2)]
    with pytest.raises(ValueError, match=r"^combining networks needs the identity output .*; got output_activation="):
        network.combine(members, np.array([0.5, 0.5]))


def test_pairwise_errors(rng):
    network = _pairwise((4,))
    params = _random_params(network)
    X, qid = _queries(rng)
    with pytest.raises(ValueError, match="needs the query layout.*got layout=None"):
        network.forward(params, X)
    with pytest.raises(ValueError, match="layout has 19 rows but X has 18"):
        network.forward(params, X[1:], QueryLayout(qid))
    for sizes in [(3, 2), (), 4, (0,)]:
        with pytest.raises(ValueError, match="pairwise_hidden_layer_sizes must be one hidden"):
            PairwiseNetwork(LinearNetwork(N_FEATURES), sizes)
    with pytest.raises(ValueError, match="pairwise_hidden_layer_sizes must be one hidden"):
        make_network(N_FEATURES, (4,), pairwise_hidden_layer_sizes=(3, 2))
    with pytest.raises(ValueError, match="shares the unary network's activation: got "
                       "activation='relu' with a unary network of activation='tanh'"):
        PairwiseNetwork(MLPNetwork(N_FEATURES, (4,)), (2,), activation="relu")
    with pytest.raises(ValueError, match="output_activation must be one of"):
        PairwiseNetwork(LinearNetwork(N_FEATURES), (2,), output_activation="relu")
