"""Networks that score every row on its own: the linear model and the MLP.

A network maps feature rows to scores and back-propagates dloss/dscores; it
never knows which loss trains it. Its parameters live in one flat vector
(what the solvers see); each network exports them as the fitted attributes
of its own shape (``coef_`` for :class:`LinearNetwork`, ``coefs_`` and
``intercepts_`` for :class:`MLPNetwork`) and restores itself from them.

Every network, these two and
:class:`~skrank._core._pairwise_network.PairwiseNetwork`, has the same interface
(the protocol :class:`~skrank._core._types.Network`):
``n_params``, ``needs_query`` (whether ``forward`` must be given the query
layout of the rows: a network that scores the documents of a query jointly),
``init_params``, ``forward``, ``backward``, ``penalty``, ``export``, the
class method ``restore`` and ``combine`` (the average of several fitted
networks as one network). Each computes in the dtype :func:`compute_dtype`
gives for its input rows.

Of skrank, it imports :mod:`~skrank._core._activations` only;
:mod:`~skrank._core._pairwise_network` (whose individual potential is one of these
networks) and :mod:`~skrank._core._network_factory` import it.
"""

import numpy as np
from scipy.linalg import block_diag

from ._activations import (
    ACTIVATIONS,
    OUTPUT_ACTIVATIONS,
    _check_activation,
    _check_combinable,
)


class LinearNetwork:
    """The linear scoring function ``f(x) = <w, x>``.

    There is no intercept: listwise losses are invariant to a shift of all
    scores of a query, so an intercept has no gradient.

    Parameters
    ----------
    n_features : int
        Number of input features.
    """

    needs_query = False

    def __init__(self, n_features):
        self.n_features = int(n_features)
        self.n_params = self.n_features

    def init_params(self, random_state):
        """Glorot-uniform weights, ``U(-b, b)`` with ``b = sqrt(6 / (n_features + 1))``."""
        bound = np.sqrt(6.0 / (self.n_features + 1))
        return random_state.uniform(-bound, bound, size=self.n_params)

    def forward(self, params, X, layout=None):
        """Scores of the rows of ``X`` (in its compute dtype) and the cache for :meth:`backward`."""
        dtype = compute_dtype(X)
        return np.asarray(X @ params.astype(dtype, copy=False)).ravel(), X

    def backward(self, params, cache, dscores):
        """Gradient of the loss with respect to the parameters (float64)."""
        dtype = compute_dtype(cache)
        grad = cache.T @ np.asarray(dscores).astype(dtype, copy=False)
        return np.asarray(grad, dtype=np.float64).ravel()

    def penalty(self, params, alpha):
        """L2 penalty ``alpha / 2 * ||w||^2`` and its gradient."""
        return 0.5 * alpha * float(params @ params), alpha * params

    def export(self, params):
        """Fitted attributes: ``coef_`` of shape (n_features,)."""
        return {"coef_": np.array(params, dtype=np.float64)}

    @classmethod
    def restore(cls, attributes):
        """``(network, params)`` from the fitted attributes :meth:`export` gave."""
        coef = np.asarray(attributes["coef_"], dtype=np.float64)
        if coef.ndim != 1:
            raise ValueError(f"coef_ must have shape (n_features,); got {coef.shape}.")
        return cls(coef.shape[0]), coef.copy()

    def combine(self, params_list, weights):
        """The network scoring ``sum_r weights[r] * f_r(x)``: again linear."""
        return self, np.asarray(weights) @ np.vstack(params_list)


class MLPNetwork:
    """Feed-forward network ``f(x)`` giving one score per row.

    Every hidden layer is ``a = act(a_prev @ W + b)``. With the identity
    output the score is ``a_last @ w`` with **no output bias**: listwise
    losses are invariant to a shift of all scores of a query, so an output
    bias has no gradient. With a nonlinear output the score is
    ``out_act(a_last @ w + c)``: the bias ``c`` moves the saturation region,
    so it matters, and ``intercepts_`` then has one entry per layer (as in
    scikit-learn's MLP).

    Parameters
    ----------
    n_features : int
        Number of input features.
    hidden_layer_sizes : tuple of int
        Units of each hidden layer (at least one layer).
    activation : {"tanh", "scaled_tanh", "relu", "logistic"}, default="tanh"
        Hidden-layer activation.
    output_activation : {"identity", "tanh", "scaled_tanh", "logistic"}, \
            default="identity"
        Activation of the output unit (see
        :data:`~skrank._core._activations.OUTPUT_ACTIVATIONS`).
    """

    needs_query = False

    def __init__(self, n_features, hidden_layer_sizes, activation="tanh",
                 output_activation="identity"):
        self.n_features = int(n_features)
        self.hidden_layer_sizes = tuple(int(h) for h in hidden_layer_sizes)
        if not self.hidden_layer_sizes:
            raise ValueError("MLPNetwork needs at least one hidden layer; use LinearNetwork.")
        _check_activation("activation", activation, ACTIVATIONS)
        _check_activation("output_activation", output_activation, OUTPUT_ACTIVATIONS)
        self.activation = activation
        self.output_activation = output_activation
        self._act, self._act_grad = ACTIVATIONS[activation]
        self._out, self._out_grad = OUTPUT_ACTIVATIONS[output_activation]
        self._output_bias = output_activation != "identity"
        sizes = (self.n_features, *self.hidden_layer_sizes, 1)
        self.coef_shapes = list(zip(sizes[:-1], sizes[1:]))
        self.intercept_shapes = [(h,) for h in self.hidden_layer_sizes]
        if self._output_bias:
            self.intercept_shapes.append((1,))
        # Layout of the flat vector: W_0, b_0, W_1, b_1, ..., W_out (, c).
        slices, start = [], 0
        for i, shape in enumerate(self.coef_shapes):
            stop = start + shape[0] * shape[1]
            slices.append((slice(start, stop), shape))
            start = stop
            if i < len(self.intercept_shapes):
                stop = start + shape[1]
                slices.append((slice(start, stop), (shape[1],)))
                start = stop
        self._slices = slices
        # nothing is allocated here: a ranker checks n_params against the
        # memory available before the parameters are drawn
        self.n_params = start

    # ------------------------------------------------------------------
    # Flat parameter vector
    def unpack(self, params):
        """Views ``(coefs, intercepts)`` of the flat parameter vector."""
        views = [params[sl].reshape(shape) for sl, shape in self._slices]
        return views[0::2], views[1::2]

    def pack(self, coefs, intercepts):
        """Flat parameter vector from weight matrices and biases."""
        coefs, intercepts = list(coefs), list(intercepts)
        if [np.shape(c) for c in coefs] != self.coef_shapes or [
            np.shape(b) for b in intercepts
        ] != self.intercept_shapes:
            raise ValueError(
                "coefs_/intercepts_ do not match the network: expected weight "
                f"shapes {self.coef_shapes} and bias shapes {self.intercept_shapes}; "
                f"got {[np.shape(c) for c in coefs]} and "
                f"{[np.shape(b) for b in intercepts]}."
            )
        parts = [None] * (len(coefs) + len(intercepts))
        parts[0::2], parts[1::2] = coefs, intercepts
        return np.concatenate([np.ravel(p) for p in parts]).astype(np.float64)

    def init_params(self, random_state):
        """Glorot-uniform weights, zero biases.

        Weights of a layer are drawn from ``U(-b, b)`` with
        ``b = sqrt(6 / (fan_in + fan_out))`` (``sqrt(2 / (fan_in + fan_out))``
        for logistic hidden units, as in scikit-learn's MLP), so initial
        scores are small and every hidden unit starts in the active range.
        """
        params = np.zeros(self.n_params)
        factor = 2.0 if self.activation == "logistic" else 6.0
        for sl, shape in self._slices:
            if len(shape) == 2:
                bound = np.sqrt(factor / (shape[0] + shape[1]))
                params[sl] = random_state.uniform(-bound, bound, size=shape[0] * shape[1])
        return params

    # ------------------------------------------------------------------
    # Forward and backward passes
    def forward(self, params, X, layout=None):
        """Scores of the rows of ``X`` and the cache for :meth:`backward`.

        Rows are scored independently; ``layout`` is not used. The layers
        run in the compute dtype of ``X`` (:func:`compute_dtype`).
        """
        coefs, intercepts = self.unpack(params.astype(compute_dtype(X), copy=False))
        activations = [X]
        a = X
        for W, b in zip(coefs[:-1], intercepts):
            z = np.asarray(a @ W)
            z += b
            a = self._act(z)
            activations.append(a)
        scores = np.asarray(a @ coefs[-1]).ravel()
        if self._output_bias:
            scores += intercepts[-1]
            scores = self._out(scores)
            activations.append(scores)
        return scores, activations

    def backward(self, params, cache, dscores):
        """Gradient of the loss with respect to the flat parameters (float64).

        The products run in the compute dtype of the input rows (``cache[0]``).
        """
        dtype = compute_dtype(cache[0])
        coefs, _ = self.unpack(params.astype(dtype, copy=False))
        grad = np.empty(self.n_params)
        g_coefs, g_intercepts = self.unpack(grad)
        delta = np.asarray(dscores).astype(dtype, copy=False).reshape(-1, 1)
        if self._output_bias:
            delta = delta * self._out_grad(cache[-1]).reshape(-1, 1)
            g_intercepts[-1][...] = delta.sum()
        for i in range(len(coefs) - 1, -1, -1):
            a = cache[i]
            g_coefs[i][...] = a.T @ delta
            if i > 0:
                delta = (delta @ coefs[i].T) * self._act_grad(a)
                g_intercepts[i - 1][...] = delta.sum(axis=0)
        return grad

    def penalty(self, params, alpha):
        """L2 penalty ``alpha / 2 * ||W||^2`` on the weights (not biases) and its gradient."""
        w = params.copy()
        for sl, shape in self._slices:
            if len(shape) == 1:  # a bias
                w[sl] = 0.0
        return 0.5 * alpha * float(w @ w), alpha * w

    # ------------------------------------------------------------------
    # Fitted attributes
    def export(self, params):
        """Fitted attributes ``coefs_`` and ``intercepts_`` (lists of arrays).

        Also the activations the weights were trained with (a later
        ``set_params(activation=...)`` must not change a fitted model):
        ``_activation``, and ``_output_activation`` for a nonlinear output
        (absent means the identity, as for models fitted before it existed).
        """
        coefs, intercepts = self.unpack(params)
        attributes = {
            "coefs_": [c.copy() for c in coefs],
            "intercepts_": [b.copy() for b in intercepts],
            "_activation": self.activation,
        }
        if self._output_bias:
            attributes["_output_activation"] = self.output_activation
        return attributes

    @classmethod
    def restore(cls, attributes):
        """``(network, params)`` from the fitted attributes :meth:`export` gave."""
        coefs, intercepts = attributes["coefs_"], attributes["intercepts_"]
        hidden = tuple(np.shape(c)[1] for c in coefs[:-1])
        network = cls(
            np.shape(coefs[0])[0],
            hidden,
            attributes["_activation"],
            attributes.get("_output_activation", "identity"),
        )
        return network, network.pack(coefs, intercepts)

    def combine(self, params_list, weights):
        """One network scoring ``sum_r weights[r] * f_r(x)``, exactly.

        The members are placed side by side: the first layers' weights are
        concatenated, deeper hidden layers are block-diagonal, and the output
        weights are scaled by ``weights``. The result is an MLP whose hidden
        layers are ``len(params_list)`` times wider.

        Exact only for the identity output: a nonlinear output raises a
        ValueError.
        """
        _check_combinable(self.output_activation)
        members = [self.unpack(p) for p in params_list]
        coefs = [np.hstack([m[0][0] for m in members])]
        coefs += [block_diag(*[m[0][i] for m in members])
                  for i in range(1, len(self.coef_shapes) - 1)]
        coefs.append(np.vstack([w * m[0][-1] for w, m in zip(weights, members)]))
        intercepts = [np.concatenate([m[1][i] for m in members])
                      for i in range(len(self.intercept_shapes))]
        wide = MLPNetwork(
            self.n_features,
            tuple(h * len(params_list) for h in self.hidden_layer_sizes),
            self.activation,
        )
        return wide, wide.pack(coefs, intercepts)


def compute_dtype(X):
    """The floating dtype a network computes in for input ``X``: float32 stays float32.

    Every other input (float64, and whatever ``validate_data`` converted to
    float64) computes in float64. The flat parameter vector and its gradient
    stay float64 (what the solvers, L-BFGS included, need); the weights are
    cast to this dtype for the products with ``X``, so that a float32 ``X``
    is never copied to float64.
    """
    return np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)


def _restore_unary(attributes):
    """``(network, params)`` of a network of this module, from its fitted attributes.

    :class:`LinearNetwork` if ``coef_`` is there, else an :class:`MLPNetwork`.
    """
    if "coef_" in attributes:
        return LinearNetwork.restore(attributes)
    return MLPNetwork.restore(attributes)
