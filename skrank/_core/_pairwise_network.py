"""BoltzRank2's pairwise network: a row network plus pairwise potentials in a query.

:class:`PairwiseNetwork` adds to a network of :mod:`~skrank._core._networks` (its
individual, or unary, potential) pairwise potentials between the documents
of each query, so its ``forward`` needs the query layout of the rows
(``needs_query``). It has the interface of every network (see
:mod:`~skrank._core._networks`). The pairs are computed over blocks of queries,
within the memory budget :data:`PAIRWISE_MAX_CELLS` (the class's Notes).

Of skrank, it imports :mod:`~skrank._core._activations` and
:mod:`~skrank._core._networks`; :mod:`~skrank._core._network_factory` imports it.
"""

from collections import namedtuple
from math import prod

import numpy as np

from ._activations import (
    _SCALE,
    ACTIVATIONS,
    FACTOR_BOUNDS,
    FACTORED_ACTIVATIONS,
    OUTPUT_ACTIVATIONS,
    _check_activation,
    _check_combinable,
)
from ..utils._query_blocks import query_blocks
from ._networks import _restore_unary, compute_dtype

#: Default memory budget of :class:`PairwiseNetwork`, in cells of its arrays
#: over the pairs of documents (2**20 cells: 8 MiB in float64): a forward pass
#: whose hidden units of all pairs fit keeps them for the backward pass (a
#: mini-batch of a few queries of ordinary size); a larger one recomputes
#: them there.
PAIRWISE_MAX_CELLS = 2**20

# Most cells of the pair arrays computed at once: small enough for the CPU
# caches (1 MiB an array in float64), large enough that numpy's per-call
# overhead is small.
_CHUNK_CELLS = 2**17


class PairwiseNetwork:
    r"""Individual plus pairwise potentials: a score that depends on the query.

    The score of document :math:`j` of a query is its individual potential
    plus its pairwise potentials with every other document :math:`k` of the
    same query (BoltzRank2, Volkovs and Zemel 2009, §3.3 eq. 9):

    .. math::

        f(x_j) = \phi(x_j) + \sum_{k \neq j} \varphi(x_j, x_k), \qquad
        \varphi(x_j, x_k) = \sigma\Big(v^\top g\big(W^\top [x_j; x_k] + b\big)
        \,[+\, c]\Big),

    where :math:`\phi` is ``unary`` (a
    :class:`~skrank._core._networks.LinearNetwork` or an
    :class:`~skrank._core._networks.MLPNetwork`), :math:`g` the hidden activation
    and :math:`\sigma` the output activation, both shared with an MLP
    ``unary``. The output bias :math:`c` exists only for a nonlinear
    :math:`\sigma`. Documents of other queries and the document itself do
    not enter.

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
        Memory budget in cells of the arrays over pairs of documents; None
        means :data:`PAIRWISE_MAX_CELLS`.

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

    The pairwise potential computes in ``X``'s dtype: float32 ``X`` gives
    float32 pre-activations, pair arrays and products (the flat parameters
    and their gradient stay float64, as for the unary network). A tanh or
    logistic hidden unit of the pair, :math:`g(p_j + q_k)` with
    :math:`p = (XA)_j` and :math:`q = (XB + b)_k`, is evaluated through
    :math:`e^{-a(p_j + q_k)} = e^{-a p_j} e^{-a q_k}` (:math:`a = 2` for tanh,
    1 for the logistic): one exponential per document and hidden unit, then
    a product, a sum and a division per pair
    (:data:`~skrank._core._activations.FACTORED_ACTIVATIONS`), instead of
    :math:`m^2 h` calls of the activation, whose float64 kernels are scalar
    library calls on CPUs without AVX-512. With the identity output (no
    :math:`c`), :math:`g = \alpha + \beta r` for :math:`r_{jk} = 1 / (1 +
    e^{-a p_j} e^{-a q_k})` is linear in :math:`r`, and a pair's gradient
    :math:`\partial L / \partial s_j` does not depend on k: the scores need
    only :math:`\sum_k r_{jk}`, the gradients :math:`\sum_k r_{jk}(1 -
    r_{jk})` and its sum over j weighted by :math:`\partial L / \partial
    s_j`, less the pair :math:`k = j` (computed on its own); the pair arrays
    hold :math:`r`, zero for padding documents. The values are within a few
    units in the last place of the direct ones, absolutely (scores within
    about :math:`10^{-13}` in float64). When some :math:`|a p_j|` or
    :math:`|a q_k|` of a pass exceeds
    :data:`~skrank._core._activations.FACTOR_BOUNDS` (350 in float64, 43 in
    float32: a product of two factors would leave the normal range), the
    block of queries holding that document applies the activation to the
    sums directly.

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
            hidden = "tanh"
        else:
            self._inner, self._outer = 1.0, 1.0
            hidden = self.activation
        self._act, self._act_grad = ACTIVATIONS[hidden]
        self._factored = FACTORED_ACTIVATIONS.get(hidden)  # see Notes
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

        As for :class:`~skrank._core._networks.MLPNetwork`: ``U(-r, r)`` with
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
        dtype = compute_dtype(X)  # of [X A, X B], the (h, n) terms and the pair arrays
        XW = np.asarray(X @ np.hstack([W[:d], W[d:]]).astype(dtype))
        P, Q = XW[:, :h].T, (XW[:, h:] + b.astype(dtype)).T  # shape (h, n_samples)
        if self._inner != 1.0:
            P, Q = P * dtype.type(self._inner), Q * dtype.type(self._inner)
        factors = None
        if self._factored is not None:  # exp(-a p_j), exp(-a q_k): see Notes
            a = -dtype.type(self._factored.a)
            with np.errstate(over="ignore"):  # beyond FACTOR_BOUNDS: not used
                factors = np.exp(P * a), np.exp(Q * a)
        pair_scores, pair_cache = self._pair_forward(
            P, Q, factors, (self._outer * v).astype(dtype),
            None if c is None else c.astype(dtype), layout)
        scores = (unary_scores + pair_scores).astype(unary_scores.dtype, copy=False)
        return scores, (unary_cache, X, pair_cache)

    def backward(self, params, cache, dscores):
        """Gradient of the loss with respect to the flat parameters."""
        unary_params, _, _, v, c = self.unpack(params)
        unary_cache, X, pair_cache = cache
        dscores = np.asarray(dscores, dtype=np.float64).ravel()
        grad = np.empty(self.n_params)
        grad[: self._n_unary] = self.unary.backward(unary_params, unary_cache, dscores)
        dtype = compute_dtype(X)
        dP, dQ, g_v, g_c = self._pair_backward(
            (self._outer * v).astype(dtype), None if c is None else c.astype(dtype),
            pair_cache, dscores.astype(dtype, copy=False))
        grad[self._v] = self._outer * g_v
        if self._inner != 1.0:
            dP *= dtype.type(self._inner)
            dQ *= dtype.type(self._inner)
        h = self.n_hidden
        dPQ = np.vstack([dP, dQ]).T
        g_AB = np.asarray(X.T @ dPQ, dtype=np.float64)  # [dA, dB], shape (d, 2h)
        grad[self._W] = np.vstack([g_AB[:, :h], g_AB[:, h:]]).ravel()
        grad[self._b] = dQ.sum(axis=1, dtype=np.float64)
        grad[self._c] = g_c
        return grad

    def _pair_forward(self, P, Q, factors, v, c, layout):
        """Pairwise part of the scores (row order) and its cache.

        ``P`` and ``Q`` are the terms of the pre-activations, ``factors``
        None or their ``exp(-a P)``, ``exp(-a Q)`` (:meth:`_plan`).
        """
        dtype = P.dtype
        plan = self._plan(P, Q, layout, factors, summed=c is None)
        sizes = [chunk[3] for block in plan for chunk in block.chunks]
        keep = sum(sizes) <= self.max_cells  # keep H for backward
        buffer = np.empty(sum(sizes) if keep else max(sizes, default=0), dtype=dtype)
        stored = [] if keep else None
        scores = np.zeros(layout.n_samples, dtype=dtype)
        summed_units = []  # of each block on the summed path, for backward
        offset = 0
        for block in plan:
            block_scores = np.empty(block.rows.shape, dtype=dtype)
            ones = np.ones(block.rows.shape[1], dtype=dtype)
            sums = None if block.diag is None else np.empty(block.diag.shape, dtype=dtype)
            for start, stop, shape, size in block.chunks:
                H = self._hidden(block, start, stop, buffer[offset:offset + size].reshape(shape))
                if keep:
                    offset += size
                # sums over k written as products with ones (one BLAS call)
                if sums is not None:  # r of the pairs: their sums over k
                    sums[:, :, start:stop] = (H.reshape(-1, shape[3]) @ ones).reshape(shape[:3])
                    if keep:
                        stored.append((H, None))
                    continue
                phi, dphi = self._pair_output(H, v, c)
                if keep:
                    stored.append((H, dphi))
                self._mask_pairs(phi, start, block.valid)
                block_scores[:, start:stop] = (phi.reshape(-1, shape[3]) @ ones).reshape(
                    shape[1:3])
            if sums is not None:
                units = self._summed_units(block, sums)
                summed_units.append(units)
                block_scores = (v @ units.reshape(len(v), -1)).reshape(block.rows.shape)
            block.scatter(scores, block_scores)
        return scores, (plan, stored, summed_units)

    def _summed_units(self, block, sums):
        """``sum_{k != j} g(z_jk)`` of each unit and row j of a block on the summed path.

        From the sums over k of ``r_jk = 1 / (1 + F_j G_k)`` (padding k: 0),
        less the pair ``k = j``: ``offset (n - 1) + slope (sum_k r_jk - r_jj)``
        for the ``n`` documents of j's query.
        """
        spec = self._factored
        units = sums - block.diag
        units *= sums.dtype.type(spec.slope)
        if spec.offset:
            units += (spec.offset * block.others)[None, :, None].astype(sums.dtype)
        return units

    def _pair_backward(self, v, c, pair_cache, dscores):
        """Gradients with respect to ``P = (X A).T``, ``Q = (X B + b).T``, ``v`` and ``c``."""
        plan, stored, summed_units = pair_cache
        summed_units = iter(summed_units)
        h, dtype = self.n_hidden, dscores.dtype
        dP = np.zeros((h, len(dscores)), dtype=dtype)
        dQ = np.zeros((h, len(dscores)), dtype=dtype)
        g_v = np.zeros(h)
        g_c = 0.0
        max_size = max((chunk[3] for block in plan for chunk in block.chunks), default=0)
        scratch = np.empty(max_size, dtype=dtype)  # derivative of the hidden units
        hidden = np.empty(max_size, dtype=dtype) if stored is None else None
        pairs = iter(stored or ())
        for block in plan:
            n_block, width = block.rows.shape
            ds = dscores[block.rows]
            if block.valid is not None:
                ds *= block.valid  # padding documents j
            if block.diag is not None:
                block_dP, block_dQ, block_g_v = self._summed_backward(
                    block, next(summed_units), pairs, hidden, scratch, ds)
                g_v += block_g_v
                block.scatter(dP, block_dP)
                block.scatter(dQ, block_dQ)
                continue
            block_dP = np.empty((h, n_block, width), dtype=dtype)
            block_dQ = np.zeros((h, n_block, width), dtype=dtype)
            ones = np.ones(width, dtype=dtype)
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
                    g_c += float(du.sum(dtype=np.float64))
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

    def _summed_backward(self, block, units, pairs, hidden, scratch, ds):
        """:meth:`_pair_backward` of a block on the summed path (identity output).

        With ``g(z) = offset + slope r`` and ``g'(z) = a slope r (1 - r)``
        (:class:`~skrank._core._activations.Factored`), and ``du_jk =
        dL/dscore_j`` for every pair, the gradients need only sums of ``r (1
        - r)`` over k and, weighted by ``du``, over j, less the pairs ``k =
        j``. ``units`` are the block's :meth:`_summed_units` of the forward
        pass. Returns ``dP``, ``dQ`` (before the factor ``v``) and the
        gradient of ``v``.
        """
        h, dtype = self.n_hidden, ds.dtype
        n_block, width = block.rows.shape
        spec = self._factored
        ones = np.ones(width, dtype=dtype)
        d_rows = np.empty((h, n_block, width), dtype=dtype)
        d_cols = np.zeros((h, n_block, width), dtype=dtype)
        for start, stop, shape, size in block.chunks:
            if hidden is not None:
                r = self._hidden(block, start, stop, hidden[:size].reshape(shape))
            else:
                r = next(pairs)[0]
            D = np.multiply(r, r, out=scratch[:size].reshape(shape))
            np.subtract(r, D, out=D)  # r (1 - r)
            d_rows[:, :, start:stop] = (D.reshape(-1, width) @ ones).reshape(shape[:3])
            # sum over j of du_j D_jk: (1, queries, 1, j) @ (h, queries, j, k)
            d_cols += np.matmul(ds[None, :, None, start:stop], D)[:, :, 0, :]
        diag = block.diag * (1 - block.diag)
        factor = dtype.type(spec.a * spec.slope)
        d_rows -= diag
        d_rows *= ds
        d_rows *= factor
        d_cols -= diag * ds
        d_cols *= factor
        g_v = (units * ds).sum(axis=(1, 2), dtype=np.float64)
        return d_rows, d_cols, g_v

    def _plan(self, P, Q, layout, factors=None, summed=False):
        """The blocks of queries, their pair factors and chunks (see Notes).

        A block's ``left @ right`` is ``P_j + Q_k`` of its pairs, and its
        ``activate`` the hidden activation; or, where ``factors`` are given
        and every ``|a P_j|``, ``|a Q_k|`` of the block is within
        :data:`~skrank._core._activations.FACTOR_BOUNDS`, ``1 + F_j G_k``
        for the factors ``F, G = factors`` and the activation's ``finish``
        (:data:`~skrank._core._activations.FACTORED_ACTIVATIONS`).

        With ``summed`` (an identity output unit), a factored block takes the
        summed path: its ``activate`` gives ``r = 1 / (1 + F_j G_k)``
        (:meth:`_hidden` sets it to 0 for the padding documents k), ``diag``
        holds ``r_jj`` and ``others`` the documents of each query less one
        (:meth:`_summed_units`); elsewhere ``diag`` and ``others`` are None.
        """
        h, n, dtype = self.n_hidden, P.shape[1], P.dtype
        # [P_j, 1] @ [1; Q_k] = P_j + Q_k, exactly (or [F_j, 1] @ [G_k; 1] =
        # F_j G_k + 1): the broadcast sum written by BLAS, faster than
        # np.add's broadcasting. The operands of every row are laid out once
        # and taken per block (a view for one query of grouped rows, else
        # gathered), the right one as its transpose.
        direct = None
        if factors is not None:
            spec = self._factored
            F, G = factors
            bound = FACTOR_BOUNDS[dtype] / spec.a
            reach = None  # every row within the bound; else the largest |P|, |Q| of each row
            if not np.max([P.max(), -P.min(), Q.max(), -Q.min()]) <= bound:  # NaN: per row
                reach = np.maximum(np.abs(P).max(axis=0), np.abs(Q).max(axis=0))
            left_rows = np.ones((h, n, 2), dtype=dtype)
            left_rows[..., 0] = F
            right_rows = np.ones((h, n, 2), dtype=dtype)
            right_rows[..., 0] = G
            with np.errstate(over="ignore", invalid="ignore"):  # rows beyond the bound:
                diag_rows = 1 / (1 + F * G)  # not used (0 * inf there)
        budget = min(self.max_cells, _CHUNK_CELLS)
        plan = []
        for block in query_blocks(layout, max_cost=budget, cost=lambda w: w * w * h):
            rows, valid = block.rows, block.valid
            n_block, width = rows.shape
            if width == 1:
                continue  # single-document queries have no pairs
            if n_block == 1 and layout.order is None:
                # one query of grouped rows: a range of them, taken as views
                first = int(rows[0, 0])
                take = (slice(None), None, slice(first, first + width))
            else:
                take = (slice(None), rows)
            diag = others = None
            # (take[1:] picks the block's rows of a per-row array such as reach)
            if factors is not None and (reach is None or reach[take[1:]].max() <= bound):
                left, right = left_rows[take], right_rows[take].swapaxes(2, 3)
                activate = spec.finish
                if summed:
                    activate, diag = _reciprocal, diag_rows[take]
                    others = layout.sizes[block.queries] - 1
            else:
                if direct is None:
                    direct = np.ones((h, n, 2), dtype=dtype), np.ones((h, n, 2), dtype=dtype)
                    direct[0][..., 0], direct[1][..., 1] = P, Q
                left, right = direct[0][take], direct[1][take].swapaxes(2, 3)
                activate = self._act
            step = max(1, budget // (h * n_block * width))
            chunks = []
            for start in range(0, width, step):
                stop = min(start + step, width)
                shape = (h, n_block, stop - start, width)
                chunks.append((start, stop, shape, prod(shape)))
            if valid is None:
                targets, cells = rows.ravel(), None
            else:
                targets, cells = rows[valid], np.flatnonzero(valid)
            plan.append(_PairBlock(rows, valid, left, right, chunks, targets, cells,
                                   activate, diag, others))
        return plan

    def _hidden(self, block, start, stop, out):
        """Hidden activations ``out[:, b, j, k]`` of the pairs of rows j in [start, stop).

        On the summed path, ``r`` of the pairs, 0 for the padding documents k.
        """
        np.matmul(block.left[:, :, start:stop], block.right, out=out)
        out = block.activate(out)
        if block.diag is not None and block.valid is not None:
            out *= block.valid[:, None, :]
        return out

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


def _reciprocal(d):
    """``1 / d``, in place: ``r`` of the pairs on the summed path."""
    return np.reciprocal(d, out=d)


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
    namedtuple("_PairBlock",
               ["rows", "valid", "left", "right", "chunks", "targets", "cells", "activate",
                "diag", "others"])
):
    """Queries of similar sizes whose pairs :class:`PairwiseNetwork` scores together.

    ``rows`` and ``valid`` are those of a
    :class:`~skrank.utils._query_blocks.QueryBlock`. ``left @ right`` is the pre-activation of the
    pairs, of shape (hidden units, queries, j, k). ``chunks`` lists
    ``(start, stop, shape, size)``: the documents j in ``[start, stop)`` are
    computed at once, in pair arrays of that shape and number of cells.
    ``targets`` are the rows of the real cells of the block, ``cells`` their
    flat positions in it (None without padding). ``activate`` maps the
    products ``left @ right`` to the hidden activations in place (on the
    summed path to ``r``; ``diag`` and ``others``: :meth:`PairwiseNetwork._plan`).
    """

    __slots__ = ()

    def scatter(self, out, values):
        """Write the real cells of ``values`` (block shape last) to their rows of ``out``."""
        flat = values.reshape(values.shape[:-2] + (-1,))
        out[..., self.targets] = flat if self.cells is None else flat[..., self.cells]
