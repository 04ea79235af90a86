"""ONNX graphs of the rankers and of QueryNormalizer, through skl2onnx's converter registry.

:func:`register_onnx_converters` registers, with
:func:`skl2onnx.update_registered_converter`, a shape calculator and a
converter for each ranker class and for
:class:`~skrank.preprocessing.QueryNormalizer`; skl2onnx then converts them
alone or as steps of a :class:`~sklearn.pipeline.Pipeline` of transformers
it knows. :func:`to_onnx` registers them and converts a model in one call.

A converter rebuilds the fitted network (:func:`skrank._core._network_factory.restore_network`)
and writes its forward pass as ONNX nodes, in the graph's dtype: the
documents of one query come in as ``X`` of shape ``(n_docs, n_features)``,
their scores go out with shape ``(n_docs, 1)``. Per-query operations
(QueryNormalizer's statistics, BoltzRank2's pairwise potentials) run over all
rows of that input, which is one query.

skl2onnx and onnx are optional: they are imported by the functions of this
module, never at import time.
"""

import re

import numpy as np
from sklearn.base import is_regressor
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._core._activations import _SCALE
from .._core._network_factory import FITTED_ATTRIBUTES, restore_network
from .._core._networks import LinearNetwork, MLPNetwork
from .._core._pairwise_network import PairwiseNetwork
from ..preprocessing import QueryNormalizer
from ..rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from ..utils._validation import is_integer

#: The rankers with a converter (every ranker of skrank).
RANKERS = (ListNetRanker, SoftRankRanker, BoltzRankRanker, LogRankRanker)

#: Oldest ONNX opset the graphs are written for (``axes`` of ReduceSum and
#: Unsqueeze given as inputs).
MIN_OPSET = 13

_DTYPES = {"float32": np.float32, "float64": np.float64}


def _skl2onnx():
    """The skl2onnx module, or an ImportError that says how to install it."""
    try:
        import skl2onnx
    except ImportError as exc:
        raise ImportError(
            "Exporting to ONNX needs the optional packages onnx and skl2onnx (and "
            "onnxruntime to run the graph): pip install 'skrank[onnx]'."
        ) from exc
    return skl2onnx


def register_onnx_converters():
    """Register skrank's converters with skl2onnx (safe to call more than once).

    After this call ``skl2onnx.to_onnx(model, X[:1].astype(np.float32))``
    converts any skrank ranker, a :class:`~skrank.preprocessing.QueryNormalizer`
    and pipelines that hold them. :func:`to_onnx` calls it itself.

    Raises
    ------
    ImportError
        If skl2onnx is not installed.

    Examples
    --------
    >>> from skrank.export import register_onnx_converters
    >>> register_onnx_converters()  # doctest: +SKIP
    """
    skl2onnx = _skl2onnx()
    for cls in RANKERS:
        skl2onnx.update_registered_converter(
            cls, f"Skrank{cls.__name__}", _scores_shape, _convert_ranker, overwrite=True)
    skl2onnx.update_registered_converter(
        QueryNormalizer, "SkrankQueryNormalizer", _same_shape, _convert_query_normalizer,
        overwrite=True)


def to_onnx(model, *, dtype="float32", target_opset=None):
    """An ONNX model of a fitted ranker or pipeline, scoring the documents of one query.

    Parameters
    ----------
    model : estimator
        A fitted skrank ranker, or a fitted :class:`~sklearn.pipeline.Pipeline`
        of transformers that skl2onnx converts (``StandardScaler``,
        ``MinMaxScaler``, ...) and skrank steps
        (:class:`~skrank.preprocessing.QueryNormalizer`), ending in a skrank
        ranker.
    dtype : {"float32", "float64"}, default="float32"
        Element type of the graph's input, weights and scores.
    target_opset : int, default=None
        ONNX opset of the graph (at least 13); None lets skl2onnx choose
        the newest it supports.

    Returns
    -------
    onnx_model : onnx.ModelProto
        Input ``"X"`` of shape ``(n_docs, n_features)``, the documents of
        one query; output ``"scores"`` of shape ``(n_docs, 1)``.

    Raises
    ------
    ImportError
        If onnx or skl2onnx is not installed (the ``onnx`` extra).
    ValueError
        If ``dtype`` or ``target_opset`` is not one of the accepted values,
        if a step of ``model`` cannot be converted (the message names it),
        or if a weight of the ranker is NaN or infinite (a diverged fit), or
        beyond the float32 range with ``dtype="float32"`` (the message names
        the fitted attribute and its index).

    Notes
    -----
    The graph computes ``predict`` of the documents of **one query**: the
    per-query operations (QueryNormalizer's minimum, maximum, mean and
    deviation, and BoltzRank2's pairwise potentials between documents) run
    over all the rows of its input. Rows of several queries given at once
    are normalised and paired as one query, which gives other scores than
    ``predict(X, qid=qid)`` for models with such steps; the scores of a
    ranker without them (a linear or MLP network after row-wise
    transformers) do not depend on the other rows, and any number of
    queries may then be scored at once.

    The graph runs its arithmetic in ``dtype``: a float64 graph matches
    ``predict`` of float64 rows to rounding; a float32 graph matches
    ``predict`` of float32 rows to float32 rounding (BoltzRank2's pairwise
    part, which ``predict`` sums in float64, is summed in float32).
    QueryNormalizer's statistics are computed in float64 in both, as in
    :meth:`~skrank.preprocessing.QueryNormalizer.transform`. The converters
    of scikit-learn's transformers are skl2onnx's: they compute in the
    graph's dtype, their constants rounded to it, so a float32 graph of a
    ``MinMaxScaler`` (or ``StandardScaler``) on features with a large offset
    (a year, a timestamp) loses digits that ``predict`` keeps: use
    ``dtype="float64"`` for such features.

    Memory: BoltzRank2's pairwise potentials are computed for every pair of
    the query's documents at once, ``n_docs ** 2`` times the pairwise hidden
    units values (a query of 3,000 documents with 5 units: 45 million
    values, 360 MB in float64), where ``predict`` works through the pairs in
    bounded blocks.

    The default ``target_opset`` is the newest skl2onnx writes (22 for
    skl2onnx 1.20); an older ONNX runtime, such as the one a search engine
    bundles, may need a lower one (13 at least).

    Examples
    --------
    >>> import numpy as np
    >>> from skrank import ListNetRanker
    >>> from skrank.datasets import make_ranking
    >>> from skrank.export import to_onnx
    >>> X, y, qid = make_ranking(n_queries=20, n_docs=8, n_features=4, random_state=0)
    >>> ranker = ListNetRanker(max_iter=5, random_state=0).fit(X, y, qid=qid)
    >>> onnx_model = to_onnx(ranker)  # doctest: +SKIP
    >>> import onnxruntime  # doctest: +SKIP
    >>> session = onnxruntime.InferenceSession(onnx_model.SerializeToString())  # doctest: +SKIP
    >>> scores = session.run(None, {"X": X[qid == 0].astype(np.float32)})[0]  # doctest: +SKIP
    """
    try:
        name = None if dtype is None else np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in _DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64'; got {dtype!r}.")
    dtype = _DTYPES[name]
    if target_opset is not None and (not is_integer(target_opset) or target_opset < MIN_OPSET):
        raise ValueError(
            f"target_opset must be an integer of at least {MIN_OPSET}; got {target_opset!r}.")
    model = _without_passthrough(model)
    steps = _steps(model)
    for _, step in steps:
        check_is_fitted(step)
    name, final = steps[-1]
    if not (isinstance(final, RANKERS) or is_regressor(final)):
        where = "the model" if name is None else f"its last step {name!r}"
        raise ValueError(
            f"to_onnx exports a model that scores documents: a skrank ranker, or a "
            f"Pipeline ending in one (or in a scikit-learn regressor); {where} is a "
            f"{type(final).__name__}."
        )
    for step_name, step in steps:
        if isinstance(step, RANKERS):
            _check_exportable_weights(step_name, step, dtype)
    n_features = getattr(steps[0][1], "n_features_in_", None)
    if n_features is None:
        raise ValueError(
            f"{type(steps[0][1]).__name__} has no n_features_in_: the graph's input width "
            "is unknown.")
    skl2onnx = _skl2onnx()
    newest = getattr(skl2onnx, "__max_supported_opset__", None)
    if target_opset is not None and newest is not None and target_opset > newest:
        raise ValueError(
            f"target_opset must be at most {newest}, the newest opset skl2onnx "
            f"{skl2onnx.__version__} writes; got {target_opset!r}.")
    register_onnx_converters()
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    tensor = FloatTensorType if dtype == np.float32 else DoubleTensorType
    try:
        return skl2onnx.convert_sklearn(
            model,
            initial_types=[("X", tensor([None, int(n_features)]))],
            final_types=[("scores", tensor([None, 1]))],
            target_opset=target_opset,
        )
    except RuntimeError as exc:  # skl2onnx: no converter or shape calculator for a step
        raise ValueError(
            f"{type(model).__name__} cannot be exported to ONNX: {_unconvertible(model, exc)}"
        ) from exc


#: The fitted attributes of a skrank ranker that hold its weights (the
#: private ones name activations).
_WEIGHTS = tuple(name for name in FITTED_ATTRIBUTES if not name.startswith("_"))


def _check_exportable_weights(name, ranker, dtype):
    """Raise if a weight of the fitted ``ranker`` is not finite, or not finite in ``dtype``.

    A graph with such a weight scores every document NaN or infinite; a
    float64 weight beyond the float32 range becomes infinite in a float32
    graph.
    """
    label = type(ranker).__name__ if name is None else f"step {name!r} ({type(ranker).__name__})"
    largest = float(np.finfo(dtype).max)
    for attribute in _WEIGHTS:
        value = getattr(ranker, attribute, None)
        if value is None:
            continue
        arrays = value if isinstance(value, list) else [value]
        for i, array in enumerate(arrays):
            array = np.asarray(array, dtype=np.float64)
            bad = np.flatnonzero(~(np.abs(array) <= largest))
            if not bad.size:
                continue
            where = np.unravel_index(bad[0], array.shape)
            index = (f"[{i}]" if isinstance(value, list) else "") + "".join(
                f"[{int(k)}]" for k in where)
            number = float(array[where])
            if not np.isfinite(number):
                raise ValueError(
                    f"{label} has a non-finite weight: {attribute}{index} = {number!r}; "
                    "a diverged fit cannot be exported."
                )
            raise ValueError(
                f"{label} has a weight beyond the largest {np.dtype(dtype).name} "
                f"({largest:.4g}): {attribute}{index} = {number!r}; export it with "
                "dtype='float64'."
            )


def _without_passthrough(model):
    """``model`` with its Pipelines' ``None`` and ``"passthrough"`` steps left out.

    skl2onnx converts fitted estimators only; a step that passes its input
    on is no node of the graph.
    """
    if not isinstance(model, Pipeline):
        return model
    steps = [(name, _without_passthrough(step)) for name, step in model.steps
             if step is not None and not (isinstance(step, str) and step == "passthrough")]
    if not steps:
        raise ValueError("The Pipeline has no step to export: every step is 'passthrough'.")
    return Pipeline(steps)


def _steps(model):
    """``(name, estimator)`` of the steps of a Pipeline (nested ones flattened), or ``[(None, model)]``."""
    if not isinstance(model, Pipeline):
        return [(None, model)]
    return [(name if inner is None else inner, estimator)
            for name, step in model.steps for inner, estimator in _steps(step)]


def _unconvertible(model, exc):
    """What skl2onnx's error ``exc`` says of ``model``, naming the pipeline step it is about."""
    first = str(exc).strip().splitlines()[0]
    found = re.search(r"type '<class '([\w.]+)'>'", first)
    if found is None:
        return first
    cls = found.group(1).rpartition(".")[2]
    steps = [(name, step) for name, step in getattr(model, "steps", [("", model)])
             if type(step).__name__ == cls]
    where = f"its step {steps[0][0]!r} ({cls})" if steps and steps[0][0] else cls
    return (f"{where} has no ONNX converter in skl2onnx or skrank; only steps that one "
            "of them converts can be exported.")


# ----------------------------------------------------------------------
# Shape calculators
def _scores_shape(operator):
    """A ranker: one score per input row, shape (N, 1), in the input's type."""
    _check_one_to_one(operator)
    n_rows = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = operator.inputs[0].type.__class__([n_rows, 1])


def _same_shape(operator):
    """QueryNormalizer: the input's shape and type."""
    _check_one_to_one(operator)
    shape = operator.inputs[0].type.shape
    operator.outputs[0].type = operator.inputs[0].type.__class__(list(shape))


def _check_one_to_one(operator):
    if len(operator.inputs) != 1 or len(operator.outputs) != 1:
        raise RuntimeError(
            f"{type(operator.raw_operator).__name__} takes one input and gives one output; "
            f"got {len(operator.inputs)} inputs and {len(operator.outputs)} outputs.")


# ----------------------------------------------------------------------
# Converters
class _Graph:
    """Nodes and constants of one converter, in the dtype of its input."""

    def __init__(self, scope, operator, container):
        from onnx import TensorProto

        self.scope, self.container = scope, container
        self.name = type(operator.raw_operator).__name__
        kind = type(operator.inputs[0].type).__name__
        if kind not in ("FloatTensorType", "DoubleTensorType"):
            raise RuntimeError(
                f"{self.name} converts float or double inputs; got {kind} for its input.")
        double = kind == "DoubleTensorType"
        self.dtype = np.float64 if double else np.float32
        self.protos = {np.dtype(np.float32): TensorProto.FLOAT,
                       np.dtype(np.float64): TensorProto.DOUBLE,
                       np.dtype(np.int64): TensorProto.INT64}
        self.opset = container.target_opset
        if self.opset < MIN_OPSET:
            raise RuntimeError(
                f"{self.name} needs ONNX opset {MIN_OPSET} or later; the target is "
                f"{self.opset}.")

    def const(self, values, dtype=None):
        """An initializer holding ``values`` (in the graph's dtype unless ``dtype``)."""
        values = np.asarray(values, dtype=self.dtype if dtype is None else dtype)
        name = self.scope.get_unique_variable_name(f"{self.name}_const")
        self.container.add_initializer(
            name, self.protos[values.dtype], list(values.shape), values.ravel().tolist())
        return name

    def node(self, op_type, *inputs, output=None, **attributes):
        """The output name of a new ``op_type`` node over ``inputs``."""
        output = output or self.scope.get_unique_variable_name(f"{self.name}_{op_type}")
        self.container.add_node(
            op_type, list(inputs), [output],
            name=self.scope.get_unique_operator_name(f"{self.name}_{op_type}"), **attributes)
        return output

    def reduce(self, op_type, X, axis, keepdims):
        """``op_type`` (ReduceSum, ReduceMean, ...) of ``X`` over ``axis``.

        The axes are an input of ReduceSum from opset 13 and of the other
        reductions from opset 18; an attribute before.
        """
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.node(op_type, X, self.const([axis], np.int64), keepdims=keepdims)
        return self.node(op_type, X, axes=[axis], keepdims=keepdims)

    def activation(self, name, z):
        """``name``'s activation of ``z``, as :mod:`skrank._core._activations` computes it."""
        if name == "identity":
            return z
        if name == "tanh":
            return self.node("Tanh", z)
        if name == "relu":
            return self.node("Relu", z)
        if name == "scaled_tanh":
            inner = self.node("Mul", z, self.const(2.0 / 3.0))
            return self.node("Mul", self.node("Tanh", inner), self.const(_SCALE))
        if name == "logistic":  # 1 / (1 + exp(-z)) written through tanh, as in fit
            half = self.node("Tanh", self.node("Mul", z, self.const(0.5)))
            return self.node("Mul", self.node("Add", half, self.const(1.0)), self.const(0.5))
        raise RuntimeError(f"{self.name}: activation {name!r} has no ONNX form.")

    def unary(self, network, params, X):
        """Scores ``(n, 1)`` of a linear or MLP network."""
        if isinstance(network, LinearNetwork):
            return self.node("MatMul", X, self.const(params.reshape(-1, 1)))
        coefs, intercepts = network.unpack(params)
        a = X
        for W, b in zip(coefs[:-1], intercepts):
            z = self.node("Add", self.node("MatMul", a, self.const(W)), self.const(b))
            a = self.activation(network.activation, z)
        scores = self.node("MatMul", a, self.const(coefs[-1].reshape(-1, 1)))
        if network._output_bias:
            scores = self.node("Add", scores, self.const(intercepts[-1]))
            scores = self.activation(network.output_activation, scores)
        return scores

    def pairwise(self, network, params, X):
        """Scores ``(n, 1)`` of BoltzRank2's network: unary plus pairwise potentials."""
        unary_params, W, b, v, c = network.unpack(params)
        d = network.n_features
        # phi(x_j, x_k) = sigma(v . g(A^T x_j + B^T x_k + b) [+ c]), summed over k != j
        P = self.node("MatMul", X, self.const(W[:d]))  # (n, h)
        Q = self.node("Add", self.node("MatMul", X, self.const(W[d:])), self.const(b))
        Z = self.node("Add", self.node("Unsqueeze", P, self.const([1], np.int64)),
                      self.node("Unsqueeze", Q, self.const([0], np.int64)))  # (n, n, h)
        H = self.activation(network.activation, Z)
        U = self.node("MatMul", H, self.const(v.reshape(-1, 1)))  # (n, n, 1)
        if c is not None:
            U = self.activation(network.output_activation,
                                self.node("Add", U, self.const(c)))
        # zero the pairs (j, j): a mask built from the number of rows
        n = self.node("Gather", self.node("Shape", X), self.const(0, np.int64), axis=0)
        index = self.node("Range", self.const(0, np.int64), n, self.const(1, np.int64))
        same = self.node("Equal", self.node("Unsqueeze", index, self.const([1], np.int64)),
                         self.node("Unsqueeze", index, self.const([0], np.int64)))
        mask = self.node("Cast", self.node("Not", same), to=self.protos[np.dtype(self.dtype)])
        U = self.node("Mul", U, self.node("Unsqueeze", mask, self.const([2], np.int64)))
        pairs = self.reduce("ReduceSum", U, 1, keepdims=0)  # (n, 1)
        return self.node("Add", self.unary(network.unary, unary_params, X), pairs)


def _convert_ranker(scope, operator, container):
    """The forward pass of a fitted ranker's network."""
    graph = _Graph(scope, operator, container)
    network, params = restore_network(vars(operator.raw_operator))
    X = operator.inputs[0].full_name
    if isinstance(network, PairwiseNetwork):
        scores = graph.pairwise(network, params, X)
    elif isinstance(network, (LinearNetwork, MLPNetwork)):
        scores = graph.unary(network, params, X)
    else:  # pragma: no cover - every network of skrank is one of the above
        raise RuntimeError(f"{graph.name}: no ONNX form for {type(network).__name__}.")
    graph.node("Identity", scores, output=operator.outputs[0].full_name)


def _convert_query_normalizer(scope, operator, container):
    """QueryNormalizer over all input rows (one query), computed in float64."""
    from onnx import TensorProto

    graph = _Graph(scope, operator, container)
    method = operator.raw_operator.method
    X = graph.node("Cast", operator.inputs[0].full_name, to=TensorProto.DOUBLE)
    lo, hi = graph.reduce("ReduceMin", X, 0, 1), graph.reduce("ReduceMax", X, 0, 1)
    # a feature constant in the query (every feature of a single document) maps to 0
    varying = graph.node("Greater", hi, lo)
    one = graph.const(1.0, np.float64)
    # each feature divided by a power of two near its largest magnitude, as
    # transform does: exact, and x - min then cannot overflow
    largest = graph.node("Max", graph.node("Abs", lo), graph.node("Abs", hi))
    exponent = graph.node("Floor", graph.node(
        "Div", graph.node("Log", largest), graph.const(np.log(2.0), np.float64)))
    power = graph.node("Pow", graph.const(2.0, np.float64), exponent)
    power = graph.node("Where", graph.node("Greater", largest, graph.const(0.0, np.float64)),
                       power, one)
    X, lo, hi = (graph.node("Div", v, power) for v in (X, lo, hi))
    span = graph.node("Where", varying, graph.node("Sub", hi, lo), one)
    Xs = graph.node("Div", graph.node("Sub", X, lo), span)
    if method == "zscore":  # invariant to the min-max map above, as in transform
        Xs = graph.node("Sub", Xs, graph.reduce("ReduceMean", Xs, 0, 1))
        var = graph.reduce("ReduceMean", graph.node("Mul", Xs, Xs), 0, 1)
        Xs = graph.node("Div", Xs, graph.node("Where", varying, graph.node("Sqrt", var), one))
    graph.node("Cast", Xs, to=graph.protos[np.dtype(graph.dtype)],
               output=operator.outputs[0].full_name)
