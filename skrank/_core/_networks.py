"""Scoring networks: map feature rows to scores and back-propagate dloss/dscores.

A network never knows which loss trains it. Its parameters live in one flat
vector (what the solvers see); each network exports them as the fitted
attributes of its own shape (``coef_`` for the linear model, ``coefs_`` and
``intercepts_`` for a multi-layer network) and restores itself from them.

Every network has the same interface: ``n_params``, ``needs_query`` (whether
``forward`` must be given the query layout of the rows: a network that scores
the documents of a query jointly), ``init_params``, ``forward``,
``backward``, ``penalty``, ``export``, the class method ``restore`` and
``combine`` (the average of several fitted networks as one network).

:class:`LinearNetwork` and :class:`MLPNetwork` score every row on its own;
:class:`PairwiseNetwork` adds to such a network pairwise potentials with the
other documents of the query (BoltzRank), so it needs the query layout.
"""

from collections import namedtuple
from math import prod

import numpy as np
from scipy.linalg import block_diag

from ..utils._query_blocks import query_blocks

_SCALE = 1.7159  # LeCun's scaled tanh, 1.7159 * tanh(2x / 3)


def compute_dtype(X):
    """The floating dtype a network computes in for input ``X``: float32 stays float32.

    Every other input (float64, and whatever ``validate_data`` converted to
    float64) computes in float64. The flat parameter vector and its gradient
    stay float64 (what the solvers, L-BFGS included, need); the weights are
    cast to this dtype for the products with ``X``, so that a float32 ``X``
    is never copied to float64.
    """
    return np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)


def _tanh(z):
    return np.tanh(z, out=z)


def _tanh_grad(a, out=None):
    out = np.multiply(a, a, out=out)
    return np.subtract(1.0, out, out=out)


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


def _check_activation(name, value, registry):
    if not isinstance(value, str) or value not in registry:
        raise ValueError(f"{name} must be one of {sorted(registry)}; got {value!r}.")


def _check_combinable(output_activation):
    """``combine`` is exact only for a score linear in the output weights."""
    if output_activation != "identity":
        raise ValueError(
            "combining networks (averaging restarts) needs output_activation='identity': "
            "the average of networks with a nonlinear output unit is no such network; "
            f"got output_activation={output_activation!r}. Use restarts='best'."
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
        Activation of the output unit (see :data:`OUTPUT_ACTIVATIONS`).
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
        w = np.where(self._weight_mask, params, 0.0)
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


#: Default memory budget of :class:`PairwiseNetwork`, in float64 cells of its
#: arrays over the pairs of documents (2**20 cells: 8 MiB): a forward pass
#: whose hidden units of all pairs fit keeps them for the backward pass (a
#: mini-batch of a few queries of ordinary size); a larger one recomputes
#: them there.
PAIRWISE_MAX_CELLS = 2**20

# Most cells of the pair arrays computed at once: small enough for the CPU
# caches (1 MiB an array), large enough that numpy's per-call overhead is small.
_CHUNK_CELLS = 2**17


def _shared_activation(unary, name, value, default, registry):
    """The pairwise potential's activation ``name``: the unary network's, if it has one."""
    own = getattr(unary, name, None)  # a linear network has none
    if value is None:
        value = default if own is None else own
    elif own is not None and value != own:
        raise ValueError(
            f"the pairwise potential shares the unary network's {name}: got "
            f"{name}={value!r} with a unary network of {name}={own!r}."
        )
    _check_activation(name, value, registry)
    return value


class _PairBlock(
    namedtuple("_PairBlock", ["rows", "valid", "left", "right", "chunks", "targets", "cells"])
):
    """Queries of similar sizes whose pairs :class:`PairwiseNetwork` scores together.

    ``rows`` and ``valid`` are those of a
    :class:`~skrank.utils._query_blocks.QueryBlock`. ``left @ right`` is the
    pre-activation of the pairs, of shape (hidden units, queries, j, k). ``chunks`` lists
    ``(start, stop, shape, size)``: the documents j in ``[start, stop)`` are
    computed at once, in pair arrays of that shape and number of cells.
    ``targets`` are the rows of the real cells of the block, ``cells`` their
    flat positions in it (None without padding).
    """

    __slots__ = ()

    def scatter(self, out, values):
        """Write the real cells of ``values`` (block shape last) to their rows of ``out``."""
        flat = values.reshape(values.shape[:-2] + (-1,))
        out[..., self.targets] = flat if self.cells is None else flat[..., self.cells]


class PairwiseNetwork:
    r"""Individual plus pairwise potentials: a score that depends on the query.

    The score of document :math:`j` of a query is its individual potential
    plus its pairwise potentials with every other document :math:`k` of the
    same query (BoltzRank2, Volkovs and Zemel 2009, §3.3 eq. 9):

    .. math::

        f(x_j) = \phi(x_j) + \sum_{k \neq j} \varphi(x_j, x_k), \qquad
        \varphi(x_j, x_k) = \sigma\Big(v^\top g\big(W^\top [x_j; x_k] + b\big)
        \,[+\, c]\Big),

    where :math:`\phi` is ``unary`` (a :class:`LinearNetwork` or an
    :class:`MLPNetwork`), :math:`g` the hidden activation and :math:`\sigma`
    the output activation, both shared with an MLP ``unary``. The output
    bias :math:`c` exists only for a nonlinear :math:`\sigma`. Documents of
    other queries and the document itself do not enter.

    Parameters
    ----------
    unary : LinearNetwork or MLPNetwork
        The individual potential :math:`\phi`.
    pairwise_hidden_layer_sizes : tuple of int
        Hidden units of :math:`\varphi`: exactly one layer, such as ``(5,)``.
    activation : {"tanh", "scaled_tanh", "relu", "logistic"}, default=None
        Hidden activation :math:`g`. None takes the unary network's (``"tanh"``
        for a linear one); an MLP ``unary`` admits only its own.
    output_activation : {"identity", "tanh", "scaled_tanh", "logistic"}, \
            default=None
        Output activation :math:`\sigma`. None takes the unary network's
        (``"identity"`` for a linear one, whose own output stays linear); an
        MLP ``unary`` admits only its own.
    max_cells : int, default=None
        Memory budget in float64 cells for the arrays over pairs of
        documents; None means :data:`PAIRWISE_MAX_CELLS`.

    Attributes
    ----------
    n_features, n_hidden, n_params : int
        Input features, hidden units of :math:`\varphi`, flat parameters.

    Notes
    -----
    The flat parameter vector holds the unary parameters, then
    :math:`W = [A; B]` of shape ``(2 * n_features, n_hidden)`` (row-major:
    :math:`A` acts on :math:`x_j`, :math:`B` on :math:`x_k`), :math:`b`,
    :math:`v` and, for a nonlinear output, :math:`c`. Exported:
    ``pairwise_coefs_ = [W, v[:, None]]`` and ``pairwise_intercepts_ = [b]``
    (``[b, c]`` with a nonlinear output), beside the unary network's
    attributes and ``_activation`` (and ``_output_activation`` when it is
    not the identity).

    The pre-activations of all pairs of a query are
    :math:`(XA)_j + (XB + b)_k`, so a query of :math:`m` documents costs
    :math:`O(m d h + m^2 h)`; no array of pairs times features is built. The
    pair arrays have shape (hidden units, queries, j, k), so that the sums
    over hidden units, j and k are single BLAS products. They are computed
    over padded blocks of queries of similar sizes
    (:func:`~skrank.utils._query_blocks.query_blocks`) of at most ``2**17`` cells
    (or ``max_cells`` if smaller), which stay in the CPU caches; a larger
    query is done in chunks of documents j (at least one j a chunk). The
    term :math:`k = j` and the padding of a block are masked on the
    (queries, j, k) arrays, never on the :math:`h` times larger ones. If the
    hidden activations of all pairs fit within ``max_cells`` cells,
    :meth:`forward` keeps them for :meth:`backward`; otherwise
    :meth:`backward` recomputes them chunk by chunk, at the cost of one more
    pass of the activation, and the pair arrays never take more than a few
    chunks of memory.

    References
    ----------
    .. [1] M. N. Volkovs and R. S. Zemel, "BoltzRank: learning to maximize
       expected ranking gain", ICML 2009.
    """

    needs_query = True

    def __init__(self, unary, pairwise_hidden_layer_sizes, *, activation=None,
                 output_activation=None, max_cells=None):
        sizes = pairwise_hidden_layer_sizes
        if np.ndim(sizes) != 1 or len(sizes) != 1 or int(sizes[0]) < 1:
            raise ValueError(
                "pairwise_hidden_layer_sizes must be one hidden layer of at least one "
                f"unit, such as (5,); got {pairwise_hidden_layer_sizes!r}."
            )
        self.unary = unary
        self.n_features = unary.n_features
        self.pairwise_hidden_layer_sizes = (int(sizes[0]),)
        self.n_hidden = int(sizes[0])
        self.activation = _shared_activation(
            unary, "activation", activation, "tanh", ACTIVATIONS)
        self.output_activation = _shared_activation(
            unary, "output_activation", output_activation, "identity", OUTPUT_ACTIVATIONS)
        self.max_cells = PAIRWISE_MAX_CELLS if max_cells is None else int(max_cells)
        # The scaled tanh S tanh(2z/3) runs as tanh on pre-activations scaled
        # by 2/3 per row (m h values), its factor S folded into v: the m^2 h
        # pair arrays then see one tanh and no scaling passes.
        if self.activation == "scaled_tanh":
            self._inner, self._outer = 2.0 / 3.0, _SCALE
            self._act, self._act_grad = ACTIVATIONS["tanh"]
        else:
            self._inner, self._outer = 1.0, 1.0
            self._act, self._act_grad = ACTIVATIONS[self.activation]
        self._out, self._out_grad = OUTPUT_ACTIVATIONS[self.output_activation]
        self._output_bias = self.output_activation != "identity"
        # Layout of the flat vector: unary parameters, W = [A; B], b, v (, c).
        n_weights = 2 * self.n_features * self.n_hidden
        self._n_unary = unary.n_params
        self._W = slice(self._n_unary, self._n_unary + n_weights)
        self._b = slice(self._W.stop, self._W.stop + self.n_hidden)
        self._v = slice(self._b.stop, self._b.stop + self.n_hidden)
        self._c = slice(self._v.stop, self._v.stop + int(self._output_bias))
        self.n_params = self._c.stop

    # ------------------------------------------------------------------
    # Flat parameter vector
    def unpack(self, params):
        """Views ``(unary_params, W, b, v, c)`` of the flat parameter vector.

        ``W`` has shape ``(2 * n_features, n_hidden)``; ``c`` is None for
        the identity output.
        """
        W = params[self._W].reshape(2 * self.n_features, self.n_hidden)
        c = params[self._c] if self._output_bias else None
        return params[: self._n_unary], W, params[self._b], params[self._v], c

    def pack(self, unary_params, W, b, v, c=None):
        """Flat parameter vector from its parts (``v`` of shape (h,) or (h, 1))."""
        h = self.n_hidden
        expected = [(2 * self.n_features, h), (h,), (h,)] + [(1,)] * self._output_bias
        shapes = [np.shape(W), np.shape(b), (np.size(v),)]
        shapes += [] if c is None else [np.shape(c)]
        if np.size(unary_params) != self._n_unary or shapes != expected:
            raise ValueError(
                "pairwise_coefs_/pairwise_intercepts_ do not match the network: expected "
                f"W, b, v{', c' if self._output_bias else ''} of shapes {expected} "
                f"(output_activation={self.output_activation!r}); got {shapes}."
            )
        parts = [unary_params, W, b, v] + ([c] if self._output_bias else [])
        return np.concatenate([np.ravel(p) for p in parts]).astype(np.float64)

    def init_params(self, random_state):
        """The unary network's initialisation, then Glorot-uniform ``W`` and ``v``, zero biases.

        As for :class:`MLPNetwork`: ``U(-r, r)`` with
        ``r = sqrt(6 / (fan_in + fan_out))`` (``sqrt(2 / ...)`` for logistic
        hidden units); ``W`` has fan-in ``2 * n_features``.
        """
        params = np.zeros(self.n_params)
        params[: self._n_unary] = self.unary.init_params(random_state)
        factor = 2.0 if self.activation == "logistic" else 6.0
        n_in, h = 2 * self.n_features, self.n_hidden
        bound = np.sqrt(factor / (n_in + h))
        params[self._W] = random_state.uniform(-bound, bound, size=n_in * h)
        bound = np.sqrt(factor / (h + 1))
        params[self._v] = random_state.uniform(-bound, bound, size=h)
        return params

    # ------------------------------------------------------------------
    # Forward and backward passes
    def forward(self, params, X, layout=None):
        """Scores of the rows of ``X`` (in their order) and the cache for :meth:`backward`.

        ``layout`` (required) is the :class:`~skrank.utils.QueryLayout` of
        the rows of ``X``, which may come in any order.
        """
        if layout is None:
            raise ValueError(
                "PairwiseNetwork scores the documents of a query jointly: forward needs "
                "the query layout of the rows of X; got layout=None."
            )
        if layout.n_samples != X.shape[0]:
            raise ValueError(
                f"layout has {layout.n_samples} rows but X has {X.shape[0]}."
            )
        unary_params, W, b, v, c = self.unpack(params)
        unary_scores, unary_cache = self.unary.forward(unary_params, X)
        d, h = self.n_features, self.n_hidden
        # [X A, X B] in X's compute dtype; the (h, n) factors and the pair
        # arrays (bounded by max_cells) in float64
        XW = np.asarray(X @ np.hstack([W[:d], W[d:]]).astype(compute_dtype(X)))
        P, Q = XW[:, :h].T.astype(np.float64), (XW[:, h:] + b).T  # shape (h, n_samples)
        if self._inner != 1.0:
            P, Q = P * self._inner, Q * self._inner
        pair_scores, pair_cache = self._pair_forward(P, Q, self._outer * v, c, layout)
        scores = (unary_scores + pair_scores).astype(unary_scores.dtype, copy=False)
        return scores, (unary_cache, X, pair_cache)

    def backward(self, params, cache, dscores):
        """Gradient of the loss with respect to the flat parameters."""
        unary_params, _, _, v, c = self.unpack(params)
        unary_cache, X, pair_cache = cache
        dscores = np.asarray(dscores, dtype=np.float64).ravel()
        grad = np.empty(self.n_params)
        grad[: self._n_unary] = self.unary.backward(unary_params, unary_cache, dscores)
        dP, dQ, g_v, g_c = self._pair_backward(self._outer * v, c, pair_cache, dscores)
        grad[self._v] = self._outer * g_v
        if self._inner != 1.0:
            dP *= self._inner
            dQ *= self._inner
        h = self.n_hidden
        dPQ = np.vstack([dP, dQ]).T.astype(compute_dtype(X))
        g_AB = np.asarray(X.T @ dPQ, dtype=np.float64)  # [dA, dB], shape (d, 2h)
        grad[self._W] = np.vstack([g_AB[:, :h], g_AB[:, h:]]).ravel()
        grad[self._b] = dQ.sum(axis=1)
        grad[self._c] = g_c
        return grad

    def _plan(self, P, Q, layout):
        """The blocks of queries, their pair factors and chunks (see Notes)."""
        h = self.n_hidden
        budget = min(self.max_cells, _CHUNK_CELLS)
        plan = []
        for block in query_blocks(layout, max_cost=budget, cost=lambda w: w * w * h):
            rows = block.rows
            n_block, width = rows.shape
            if width == 1:
                continue  # single-document queries have no pairs
            # [P_j, 1] @ [1; Q_k] = P_j + Q_k, exactly: the broadcast sum
            # written by BLAS, faster than np.add's broadcasting
            left = np.ones((h, n_block, width, 2))
            left[..., 0] = P[:, rows]
            right = np.ones((h, n_block, 2, width))
            right[:, :, 1] = Q[:, rows]
            step = max(1, budget // (h * n_block * width))
            chunks = []
            for start in range(0, width, step):
                stop = min(start + step, width)
                shape = (h, n_block, stop - start, width)
                chunks.append((start, stop, shape, prod(shape)))
            if block.valid is None:
                targets, cells = rows.ravel(), None
            else:
                targets, cells = rows[block.valid], np.flatnonzero(block.valid)
            plan.append(_PairBlock(rows, block.valid, left, right, chunks, targets, cells))
        return plan

    def _hidden(self, block, start, stop, out):
        """Hidden activations ``out[:, b, j, k]`` of the pairs of rows j in [start, stop)."""
        np.matmul(block.left[:, :, start:stop], block.right, out=out)
        return self._act(out)

    def _pair_output(self, H, v, c):
        """Outputs of the pairs (queries, j, k) and their derivative (None for the identity)."""
        u = (v @ H.reshape(len(v), -1)).reshape(H.shape[1:])
        if c is None:
            return u, None
        u += c
        phi = self._out(u)
        return phi, self._out_grad(phi)

    @staticmethod
    def _mask_pairs(a, start, valid):
        """Zero, in place, the cells (queries, j, k) of k = j and of padding documents k."""
        j = np.arange(a.shape[1])
        a[:, j, start + j] = 0.0
        if valid is not None:
            a *= valid[:, None, :]

    def _pair_forward(self, P, Q, v, c, layout):
        """Pairwise part of the scores (row order) and its cache."""
        plan = self._plan(P, Q, layout)
        sizes = [chunk[3] for block in plan for chunk in block.chunks]
        keep = sum(sizes) <= self.max_cells  # keep H for backward
        buffer = np.empty(sum(sizes) if keep else max(sizes, default=0))
        stored = [] if keep else None
        scores = np.zeros(layout.n_samples)
        offset = 0
        for block in plan:
            block_scores = np.empty(block.rows.shape)
            ones = np.ones(block.rows.shape[1])
            for start, stop, shape, size in block.chunks:
                H = self._hidden(block, start, stop, buffer[offset:offset + size].reshape(shape))
                phi, dphi = self._pair_output(H, v, c)
                if keep:
                    offset += size
                    stored.append((H, dphi))
                self._mask_pairs(phi, start, block.valid)
                # sums over k written as products with ones (one BLAS call)
                block_scores[:, start:stop] = (phi.reshape(-1, shape[3]) @ ones).reshape(
                    shape[1:3])
            block.scatter(scores, block_scores)
        return scores, (plan, stored)

    def _pair_backward(self, v, c, pair_cache, dscores):
        """Gradients with respect to ``P = (X A).T``, ``Q = (X B + b).T``, ``v`` and ``c``."""
        plan, stored = pair_cache
        h = self.n_hidden
        dP = np.zeros((h, len(dscores)))
        dQ = np.zeros((h, len(dscores)))
        g_v = np.zeros(h)
        g_c = 0.0
        max_size = max((chunk[3] for block in plan for chunk in block.chunks), default=0)
        scratch = np.empty(max_size)  # derivative of the hidden units
        hidden = np.empty(max_size) if stored is None else None
        pairs = iter(stored or ())
        for block in plan:
            n_block, width = block.rows.shape
            ds = dscores[block.rows]
            if block.valid is not None:
                ds *= block.valid  # padding documents j
            block_dP = np.empty((h, n_block, width))
            block_dQ = np.zeros((h, n_block, width))
            ones = np.ones(width)
            for start, stop, shape, size in block.chunks:
                if stored is None:
                    H = self._hidden(block, start, stop, hidden[:size].reshape(shape))
                    dphi = None if c is None else self._pair_output(H, v, c)[1]
                else:
                    H, dphi = next(pairs)
                # du[b, j, k]: dL/d(output of the pair (j, k)) = dL/dscore_j (times sigma')
                if dphi is None:
                    du = np.repeat(ds[:, start:stop, None], width, axis=2)
                else:
                    du = dphi * ds[:, start:stop, None]
                self._mask_pairs(du, start, block.valid)
                if c is not None:
                    g_c += du.sum()
                g_v += H.reshape(h, -1) @ du.ravel()
                G = self._act_grad(H, out=scratch[:size].reshape(shape))
                G *= du
                # sums over k and over j, written as products with ones (BLAS)
                block_dP[:, :, start:stop] = (G.reshape(-1, width) @ ones).reshape(shape[:3])
                block_dQ += ones[: stop - start] @ G
            block.scatter(dP, block_dP)
            block.scatter(dQ, block_dQ)
        dP *= v[:, None]
        dQ *= v[:, None]
        return dP, dQ, g_v, g_c

    def penalty(self, params, alpha):
        """L2 penalty on the weights (the unary network's, ``W`` and ``v``; not the biases)."""
        unary_params, W, _, v, _ = self.unpack(params)
        value, unary_grad = self.unary.penalty(unary_params, alpha)
        grad = np.zeros(self.n_params)
        grad[: self._n_unary] = unary_grad
        grad[self._W] = alpha * W.ravel()
        grad[self._v] = alpha * v
        value += 0.5 * alpha * (float(np.vdot(W, W)) + float(v @ v))
        return value, grad

    # ------------------------------------------------------------------
    # Fitted attributes
    def export(self, params):
        """The unary network's attributes, ``pairwise_coefs_`` and ``pairwise_intercepts_``.

        ``pairwise_coefs_ = [W, v]`` of shapes ``(2 * n_features, h)`` and
        ``(h, 1)``; ``pairwise_intercepts_ = [b]`` (``[b, c]`` with a
        nonlinear output). ``_activation`` (and ``_output_activation`` when
        it is not the identity) is exported even for a linear unary network.
        """
        unary_params, W, b, v, c = self.unpack(params)
        attributes = self.unary.export(unary_params)
        attributes["_activation"] = self.activation
        if self._output_bias:
            attributes["_output_activation"] = self.output_activation
        attributes["pairwise_coefs_"] = [W.copy(), v.reshape(-1, 1).copy()]
        attributes["pairwise_intercepts_"] = [b.copy()] + ([c.copy()] if self._output_bias else [])
        return attributes

    @classmethod
    def restore(cls, attributes):
        """``(network, params)`` from the fitted attributes :meth:`export` gave."""
        unary, unary_params = _restore_unary(attributes)
        W, v = attributes["pairwise_coefs_"]
        b, *c = attributes["pairwise_intercepts_"]
        network = cls(
            unary,
            (np.shape(W)[1],),
            activation=attributes["_activation"],
            output_activation=attributes.get("_output_activation", "identity"),
        )
        return network, network.pack(unary_params, W, b, v, *c)

    def combine(self, params_list, weights):
        """One network scoring ``sum_r weights[r] * f_r(x)``, exactly.

        The unary networks are combined by their own ``combine``; the hidden
        units of the pairwise potentials are placed side by side and their
        output weights scaled by ``weights``. Exact only for the identity
        output: a nonlinear output raises a ValueError.
        """
        _check_combinable(self.output_activation)
        members = [self.unpack(p) for p in params_list]
        unary, unary_params = self.unary.combine([m[0] for m in members], weights)
        wide = PairwiseNetwork(
            unary,
            (self.n_hidden * len(members),),
            activation=self.activation,
            output_activation=self.output_activation,
            max_cells=self.max_cells,
        )
        W = np.hstack([m[1] for m in members])
        b = np.concatenate([m[2] for m in members])
        v = np.concatenate([w * m[3] for w, m in zip(weights, members)])
        return wide, wide.pack(unary_params, W, b, v)


def make_network(n_features, hidden_layer_sizes=(), activation="tanh",
                 output_activation="identity", pairwise_hidden_layer_sizes=None):
    """The scoring network of a ranker's parameters.

    The linear network for ``hidden_layer_sizes=()``, else an MLP; with
    ``pairwise_hidden_layer_sizes``, that network is the individual
    potential of a :class:`PairwiseNetwork` whose pairwise potential has the
    same ``activation`` and ``output_activation`` (for a linear individual
    potential, ``output_activation`` is that of the pairwise potential
    only). A linear network alone has no output activation:
    ``output_activation`` must then be ``"identity"``.
    """
    if len(hidden_layer_sizes) > 0:
        unary = MLPNetwork(n_features, hidden_layer_sizes, activation, output_activation)
    elif output_activation != "identity" and pairwise_hidden_layer_sizes is None:
        raise ValueError(
            "the linear network (hidden_layer_sizes=()) has no output activation: "
            f"output_activation must be 'identity'; got {output_activation!r}."
        )
    else:
        unary = LinearNetwork(n_features)
    if pairwise_hidden_layer_sizes is None:
        return unary
    return PairwiseNetwork(
        unary,
        pairwise_hidden_layer_sizes,
        activation=activation,
        output_activation=output_activation,
    )


#: Names of the attributes the networks export.
FITTED_ATTRIBUTES = (
    "coef_",
    "coefs_",
    "intercepts_",
    "_activation",
    "_output_activation",
    "pairwise_coefs_",
    "pairwise_intercepts_",
)


def _restore_unary(attributes):
    if "coef_" in attributes:
        return LinearNetwork.restore(attributes)
    return MLPNetwork.restore(attributes)


def restore_network(attributes):
    """``(network, params)`` from fitted attributes.

    A :class:`PairwiseNetwork` if ``pairwise_coefs_`` is there; otherwise
    the linear network (``coef_``) or an MLP (``coefs_``/``intercepts_``).
    """
    if "pairwise_coefs_" in attributes:
        return PairwiseNetwork.restore(attributes)
    return _restore_unary(attributes)
