"""Scoring networks: map feature rows to scores and back-propagate dloss/dscores.

A network never knows which loss trains it. Its parameters live in one flat
vector (what the optimizers see); :meth:`ScoringNetwork.unpack` gives views
of the weight matrices and bias vectors inside it.
"""

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

_SCALE = 1.7159  # LeCun's scaled tanh, 1.7159 * tanh(2x / 3)


def _tanh(z):
    return np.tanh(z, out=z)


def _tanh_grad(a):
    return 1.0 - a * a


def _scaled_tanh(z):
    z *= 2.0 / 3.0
    np.tanh(z, out=z)
    z *= _SCALE
    return z


def _scaled_tanh_grad(a):
    u = a / _SCALE
    return (2.0 * _SCALE / 3.0) * (1.0 - u * u)


def _relu(z):
    return np.maximum(z, 0.0, out=z)


def _relu_grad(a):
    return (a > 0).astype(a.dtype)


def _logistic(z):
    # Stable for any finite z: 1 / (1 + exp(-z)) written through tanh.
    z *= 0.5
    np.tanh(z, out=z)
    z += 1.0
    z *= 0.5
    return z


def _logistic_grad(a):
    return a * (1.0 - a)


#: Hidden-layer activations: name -> (in-place function, derivative from the output).
ACTIVATIONS = {
    "tanh": (_tanh, _tanh_grad),
    "scaled_tanh": (_scaled_tanh, _scaled_tanh_grad),
    "relu": (_relu, _relu_grad),
    "logistic": (_logistic, _logistic_grad),
}


class ScoringNetwork:
    """Feed-forward network ``f(x)`` giving one score per row.

    ``hidden_layer_sizes=()`` is the linear model ``f(x) = <w, x>``; otherwise
    every hidden layer is ``a = act(a_prev @ W + b)`` and the output layer is
    ``a_last @ w`` with **no output bias**: listwise losses are invariant to a
    shift of all scores of a query, so an output bias has no gradient.

    Parameters
    ----------
    n_features : int
        Number of input features.
    hidden_layer_sizes : tuple of int, default=()
        Units of each hidden layer.
    activation : {"tanh", "scaled_tanh", "relu", "logistic"}, default="tanh"
        Hidden-layer activation.
    """

    def __init__(self, n_features, hidden_layer_sizes=(), activation="tanh"):
        self.n_features = int(n_features)
        self.hidden_layer_sizes = tuple(int(h) for h in hidden_layer_sizes)
        self.activation = activation
        self._act, self._act_grad = ACTIVATIONS[activation]
        sizes = (self.n_features, *self.hidden_layer_sizes, 1)
        self.coef_shapes = list(zip(sizes[:-1], sizes[1:]))
        self.intercept_shapes = [(h,) for h in self.hidden_layer_sizes]
        # Layout of the flat vector: W_0, b_0, W_1, b_1, ..., W_out.
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
        self.n_params = start
        self._weight_mask = np.zeros(start, dtype=bool)
        for sl, shape in slices:
            if len(shape) == 2:
                self._weight_mask[sl] = True

    # ------------------------------------------------------------------
    # Flat parameter vector
    def unpack(self, params):
        """Views ``(coefs, intercepts)`` of the flat parameter vector."""
        views = [params[sl].reshape(shape) for sl, shape in self._slices]
        return views[0::2], views[1::2]

    def pack(self, coefs, intercepts):
        """Flat parameter vector from weight matrices and hidden biases."""
        coefs, intercepts = list(coefs), list(intercepts)
        if [np.shape(c) for c in coefs] != self.coef_shapes or [
            np.shape(b) for b in intercepts
        ] != self.intercept_shapes:
            raise ValueError(
                "coefs/intercepts do not match the network: expected weight "
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
        logistic = self.activation == "logistic" and self.hidden_layer_sizes
        factor = 2.0 if logistic else 6.0
        for sl, shape in self._slices:
            if len(shape) == 2:
                bound = np.sqrt(factor / (shape[0] + shape[1]))
                params[sl] = random_state.uniform(-bound, bound, size=shape[0] * shape[1])
        return params

    # ------------------------------------------------------------------
    # Forward and backward passes
    def forward(self, params, X, layout=None):
        """Scores of the rows of ``X`` and the cache for :meth:`backward`.

        ``layout`` (the rows' :class:`~skrank._query.QueryLayout`) is part of
        the interface for networks that score documents jointly within a
        query; this network scores rows independently and ignores it.
        """
        coefs, intercepts = self.unpack(params)
        activations = [X]
        a = X
        for W, b in zip(coefs[:-1], intercepts):
            z = safe_sparse_dot(a, W, dense_output=True)
            z += b
            a = self._act(z)
            activations.append(a)
        scores = safe_sparse_dot(a, coefs[-1], dense_output=True).ravel()
        return scores, activations

    def backward(self, params, cache, dscores):
        """Gradient of the loss with respect to the flat parameters."""
        coefs, _ = self.unpack(params)
        grad = np.empty(self.n_params)
        g_coefs, g_intercepts = self.unpack(grad)
        delta = np.asarray(dscores, dtype=np.float64).reshape(-1, 1)
        for i in range(len(coefs) - 1, -1, -1):
            a = cache[i]
            g_coefs[i][...] = safe_sparse_dot(a.T, delta, dense_output=True)
            if i > 0:
                delta = (delta @ coefs[i].T) * self._act_grad(a)
                g_intercepts[i - 1][...] = delta.sum(axis=0)
        return grad

    def penalty(self, params, alpha):
        """L2 penalty ``alpha / 2 * ||W||^2`` on the weights (not biases) and its gradient."""
        w = np.where(self._weight_mask, params, 0.0)
        return 0.5 * alpha * float(w @ w), alpha * w
