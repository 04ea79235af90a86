"""Linear rankers as search-engine ranking functions.

Two formats: the ``model/linear`` model of the Elasticsearch / OpenSearch
Learning-to-Rank plugin (:func:`to_es_linear`) and a Vespa ranking expression
(:func:`to_vespa_expression`). Both score a document as a weighted sum of its
features, which is exactly what a skrank ranker fitted with
``hidden_layer_sizes=()`` computes; the scikit-learn scalers before it in a
Pipeline are affine maps of each feature, which both formats can also express.
"""

import json
import re
from dataclasses import dataclass

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.utils.validation import check_is_fitted

from .._core._network_factory import restore_network
from .._core._networks import LinearNetwork
from .._core._pairwise_network import PairwiseNetwork
from ..preprocessing import QueryNormalizer
from ..rankers._base import BaseRanker

__all__ = ["to_es_linear", "to_vespa_expression"]

#: The plugin reads every number into a Java float.
_FLOAT32_MAX = float(np.finfo(np.float32).max)

#: A Vespa rank feature: a name, arguments (one level of nested parentheses,
#: as in ``tensorFromWeightedSet(attribute(tags))``), outputs after dots. The
#: name starts with a letter, ``_`` or ``@``: a leading digit would be read as
#: a number. Anything else (a space, an operator) would change the expression.
_VESPA_FEATURE = re.compile(
    r"[A-Za-z_@][\w@$]*"
    r"(?:\((?:[^()]|\([^()]*\))*\))?"
    r"(?:\.[\w@$]+)*",
    re.ASCII,  # Vespa's names are ASCII: \w must not take other letters
)


# ----------------------------------------------------------------------------
# What a linear model computes: the scaling steps, then the weights
@dataclass(frozen=True)
class _Standardize:
    """StandardScaler's map of each feature: ``x - mean``, then ``/ scale``.

    ``mean`` is None with ``with_mean=False``, ``scale`` with ``with_std=False``.
    """

    mean: np.ndarray | None
    scale: np.ndarray | None

    def vespa(self, j, expr):
        """``expr``, the value of feature ``j`` so far, mapped in the scaler's order."""
        if self.mean is not None:
            expr = _vespa_add(expr, -self.mean[j])
        if self.scale is not None:
            expr = f"({expr} / {_number(self.scale[j])})"
        return expr

    def compose(self, offset, divisor):
        """``(o, d)`` with ``this((x - offset) / divisor) = (x - o) / d``."""
        if self.mean is not None:
            offset = offset + self.mean * divisor
        if self.scale is not None:
            divisor = divisor * self.scale
        return offset, divisor

    def named_arrays(self):
        """The fitted statistics, as ``(attribute name, array)``."""
        return [(name, a) for name, a in (("mean_", self.mean), ("scale_", self.scale))
                if a is not None]


@dataclass(frozen=True)
class _Rescale:
    """MinMaxScaler's map of each feature: ``x * scale + shift`` (``scale > 0``)."""

    scale: np.ndarray
    shift: np.ndarray

    def vespa(self, j, expr):
        """``expr``, the value of feature ``j`` so far, mapped in the scaler's order."""
        return _vespa_add(f"{expr} * {_number(self.scale[j])}", self.shift[j])

    def compose(self, offset, divisor):
        """``(o, d)`` with ``this((x - offset) / divisor) = (x - o) / d``."""
        divisor = divisor / self.scale
        return offset - self.shift * divisor, divisor

    def named_arrays(self):
        """The fitted statistics, as ``(attribute name, array)``."""
        return [("scale_", self.scale), ("min_", self.shift)]


@dataclass(frozen=True)
class _LinearScore:
    """``score(x) = sum_j coef[j] * t(x)[j]``, ``t`` the ``steps`` applied in order."""

    steps: tuple
    coef: np.ndarray

    @property
    def n_features(self):
        return self.coef.shape[0]

    def offset_divisor(self):
        """Arrays ``(o, d)``, ``d > 0``: ``t(x) = (x - o) / d``, feature by feature."""
        offset, divisor = np.zeros(self.n_features), np.ones(self.n_features)
        for step in self.steps:
            offset, divisor = step.compose(offset, divisor)
        return offset, divisor


def _step_label(name, step):
    """How an error names ``step``: by its class, and its Pipeline step name if any."""
    # a class given for a fitted model is named as such, not as "type"
    kind = f"the class {step.__name__}" if isinstance(step, type) else type(step).__name__
    return kind if name is None else f"step {name!r} ({kind})"


def _scaling_step(name, step):
    """The affine map of the fitted scaler ``step``; ValueError for any other step."""
    label = _step_label(name, step)
    if isinstance(step, QueryNormalizer):
        raise ValueError(
            f"{label} cannot be exported: it normalises each feature with the "
            "minimum, maximum, mean or deviation of the documents of each query, "
            "which a search engine's per-document scoring function does not see. "
            "Use StandardScaler or MinMaxScaler (statistics of the whole training "
            "set), or no scaling, to export the model."
        )
    if isinstance(step, StandardScaler):
        check_is_fitted(step)
        # transform reads with_mean and with_std (mean_ is set even without centring)
        return _Standardize(
            mean=np.asarray(step.mean_, dtype=float) if step.with_mean else None,
            scale=np.asarray(step.scale_, dtype=float) if step.with_std else None,
        )
    if isinstance(step, MinMaxScaler):
        if step.clip:
            raise ValueError(
                f"{label} has clip=True, which clips the scaled values to "
                f"feature_range={step.feature_range!r}: not an affine map; refit "
                "it with clip=False to export the model."
            )
        check_is_fitted(step)
        return _Rescale(scale=np.asarray(step.scale_, dtype=float),
                        shift=np.asarray(step.min_, dtype=float))
    raise ValueError(
        f"{label} cannot be exported: only StandardScaler and MinMaxScaler "
        "(an affine map of each feature, learnt on the whole training set) and "
        "'passthrough' may come before the ranker."
    )


def _linear_ranker_coef(name, ranker):
    """Weights of the fitted skrank ``ranker``'s linear network, or a ValueError."""
    label = _step_label(name, ranker)
    if not isinstance(ranker, BaseRanker):
        raise ValueError(
            f"{label} cannot be exported: the model must be a skrank ranker "
            "(ListNetRanker, SoftRankRanker, BoltzRankRanker, LogRankRanker) fitted "
            "with hidden_layer_sizes=(), or a Pipeline of scalers ending in one."
        )
    check_is_fitted(ranker)
    # the network that predict scores with, rebuilt from the attributes as predict does
    network, params = restore_network(vars(ranker))
    if isinstance(network, PairwiseNetwork):
        raise ValueError(
            f"{label} is not linear: it was fitted with a pairwise potential "
            "(pairwise_hidden_layer_sizes, fitted attribute pairwise_coefs_), so the "
            "score of a document depends on the other documents of its query. Refit "
            "it with pairwise_hidden_layer_sizes=None and hidden_layer_sizes=() to "
            "export it."
        )
    if not isinstance(network, LinearNetwork):
        raise ValueError(
            f"{label} is not linear: it scores with a network of hidden layers "
            f"{getattr(network, 'hidden_layer_sizes', '?')!r} (fitted attributes "
            "coefs_, intercepts_). Refit it with hidden_layer_sizes=() to export it."
        )
    return np.asarray(params, dtype=float)


def _linear_score(model):
    """The :class:`_LinearScore` that ``model`` (ranker or Pipeline) computes."""
    if isinstance(model, Pipeline):
        *prep, (last_name, last) = model.steps
    else:
        prep, last_name, last = [], None, model
    steps = []
    for name, step in prep:
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        steps.append((name, step, _scaling_step(name, step)))
    coef = _linear_ranker_coef(last_name, last)
    if not np.all(np.isfinite(coef)):
        bad = int(np.flatnonzero(~np.isfinite(coef))[0])
        raise ValueError(
            f"{_step_label(last_name, last)} has non-finite weights (coef_[{bad}] = "
            f"{float(coef[bad])!r}); a diverged fit cannot be exported."
        )
    for name, step, scaling in steps:
        n_in = getattr(step, "n_features_in_", coef.shape[0])
        if n_in != coef.shape[0]:
            raise ValueError(
                f"{_step_label(name, step)} has {n_in} features but the ranker "
                f"has {coef.shape[0]}: the steps were not fitted together."
            )
        for statistic, values in scaling.named_arrays():
            if not np.all(np.isfinite(values)):
                bad = int(np.flatnonzero(~np.isfinite(values))[0])
                raise ValueError(
                    f"{_step_label(name, step)} has a non-finite {statistic}: "
                    f"{statistic}[{bad}] = {float(values[bad])!r}; refit it on finite data."
                )
    return _LinearScore(steps=tuple(s for _, _, s in steps), coef=coef)


# ----------------------------------------------------------------------------
# Feature names and numbers
def _feature_names(feature_names, model, n_features):
    """The ``n_features`` names: ``feature_names``, else ``model.feature_names_in_``."""
    if feature_names is None:
        # a Pipeline's own names come from its first step, which may be 'passthrough'
        steps = [model] + [step for _, step in getattr(model, "steps", [])
                           if step is not None and not isinstance(step, str)]
        feature_names = next((names for names in (
            getattr(step, "feature_names_in_", None) for step in steps) if names is not None),
            None)
        if feature_names is None:
            raise ValueError(
                "feature_names is required: the model was fitted on an array "
                f"without column names; pass the names of its {n_features} "
                "features, in the order of the columns of X."
            )
    if isinstance(feature_names, str):
        raise TypeError(
            "feature_names must be a sequence of strings, one per feature; got "
            f"the string {feature_names!r}."
        )
    try:
        names = list(feature_names)
    except TypeError:  # not iterable: list() would name no parameter
        raise TypeError(
            "feature_names must be a sequence of strings, one per feature; got "
            f"{feature_names!r} ({type(feature_names).__name__})."
        ) from None
    for position, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(
                "feature_names must hold strings; got "
                f"feature_names[{position}]={name!r} ({type(name).__name__})."
            )
        if not name:
            raise ValueError(f"feature_names[{position}] is the empty string.")
    if len(names) != n_features:
        raise ValueError(
            f"feature_names has {len(names)} names, but the model has "
            f"{n_features} features."
        )
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(
                f"feature_names must be unique; {name!r} appears "
                f"{names.count(name)} times."
            )
        seen.add(name)
    return [str(name) for name in names]  # plain str, also for NumPy's str_


def _single_precision(values, what, names):
    """``values`` as Python floats, checked to fit the plugin's Java floats."""
    values = [float(v) for v in values]
    for name, value in zip(names, values):
        if not abs(value) <= _FLOAT32_MAX:
            raise ValueError(
                f"the {what} of feature {name!r} is {value!r}, beyond the single "
                f"precision (at most {_FLOAT32_MAX:.4g} in magnitude) in which the "
                "plugin stores and computes it."
            )
    return values


def _number(value):
    """Decimal text of the float ``value`` that reads back to the same double."""
    return repr(float(value))


def _vespa_add(expr, value):
    """``(expr + value)``, written with ``-`` for a negative ``value`` (and -0.0)."""
    if np.signbit(value):
        return f"({expr} - {_number(-value)})"
    return f"({expr} + {_number(value)})"


# ----------------------------------------------------------------------------
# The formats
def to_es_linear(model, feature_names=None, *, name="skrank_model"):
    r"""Body of the Elasticsearch / OpenSearch LTR request that creates a linear model.

    The body of ``POST _ltr/_featureset/<featureset>/_createmodel`` for the
    Learning-to-Rank plugin of Elasticsearch (o19s) or OpenSearch: a
    ``model/linear`` model with the ranker's weights, and the Pipeline's
    scaling as ``feature_normalizers``. The plugin then scores a document as
    ``predict`` does.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted skrank ranker (:class:`~skrank.rankers.ListNetRanker`,
        :class:`~skrank.rankers.SoftRankRanker`,
        :class:`~skrank.rankers.BoltzRankRanker`,
        :class:`~skrank.rankers.LogRankRanker`) with a linear scoring function
        (``hidden_layer_sizes=()``, no pairwise potential), or a fitted
        scikit-learn Pipeline of ``StandardScaler``, ``MinMaxScaler``
        (``clip=False``) or ``"passthrough"`` steps ending in one.
    feature_names : sequence of str, default=None
        Name of each feature, in the order of the columns of ``X``: the names
        of the features of the plugin's featureset, which the model's weights
        are matched to. None takes ``model.feature_names_in_`` (set when the
        model was fitted on a DataFrame).
    name : str, default="skrank_model"
        Name of the model in the plugin's store (unique across featuresets).

    Returns
    -------
    body : dict
        ``{"model": {"name": name, "model": {"type": "model/linear",
        "definition": <JSON text>, "feature_normalizers": {...}}}}``: the
        definition is the JSON text of ``{feature name: weight}``, and
        ``feature_normalizers`` (absent without scaling steps) maps every
        feature to ``{"standard": {"mean": ..., "standard_deviation": ...}}``.
        All numbers are Python floats; ``json.dumps(body)`` is the request.

    Raises
    ------
    ValueError
        If a step cannot be exported (a
        :class:`~skrank.preprocessing.QueryNormalizer`, another transformer,
        a ``MinMaxScaler`` with ``clip=True``, a ranker that is not linear or
        not a skrank ranker), a weight or scaling statistic is not finite or
        exceeds single precision, or ``feature_names`` is missing, has the
        wrong length, repeats a name or holds an empty string, or ``name`` is
        empty.
    TypeError
        If ``feature_names`` is not a sequence of strings or ``name`` is not
        a string.
    sklearn.exceptions.NotFittedError
        If the ranker or a scaler is not fitted.

    See Also
    --------
    to_vespa_expression : The same scoring function as a Vespa ranking
        expression.

    Notes
    -----
    The format follows the plugin's documentation, "Uploading a trained
    model": for Elasticsearch,
    https://elasticsearch-learning-to-rank.readthedocs.io/en/latest/training-models.html
    ("Simple linear models", "Creating a model with Feature Normalization");
    for OpenSearch,
    https://opensearch.org/docs/latest/search-plugins/ltr/training-models/
    ("Creating a model with feature normalization"). The ``definition`` of
    a ``model/linear`` model is a JSON string holding an object of feature
    weights, as in both documents' examples. ``feature_normalizers`` sits
    beside ``type`` and ``definition``, as in OpenSearch's example and in the
    plugin's parser (``StoredLtrModel.LtrModelDefinition`` declares it; the
    request's outer ``model`` object accepts only ``name`` and ``model``);
    the Elasticsearch page's example shows it one level up.

    The plugin scores a document with features :math:`x_j` as
    :math:`\sum_j w_j \tilde x_j`, with :math:`\tilde x_j =
    (x_j - \mu_j) / \sigma_j` for a feature with a ``standard`` normalizer
    and :math:`\tilde x_j = x_j` otherwise. The scalers of a Pipeline are
    affine maps of each feature, so their composition is one such map,
    written as a ``standard`` normalizer: a ``StandardScaler`` gives its
    ``mean_`` and ``scale_``, a ``MinMaxScaler`` with the default
    ``feature_range`` its ``data_min_`` and ``data_range_`` (1 for a feature
    constant in training), to rounding. One rule serves every chain of
    scalers, so the plugin's ``min_max`` normalizer is not used (it also
    computes ``maximum - minimum`` in single precision). The scores
    therefore equal ``model.predict(X)``, with no per-query constant between
    them.

    The plugin stores the weights and statistics as Java floats and
    computes in single precision, so its scores agree with ``predict`` to
    about seven significant digits. It matches the weights to the
    featureset's features by name and refuses a name it does not know.

    Examples
    --------
    >>> import json
    >>> import warnings
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skrank.datasets import make_ranking
    >>> from skrank.export import to_es_linear
    >>> from skrank.rankers import ListNetRanker
    >>> X, y, qid = make_ranking(n_queries=10, n_docs=5, n_features=2, random_state=0)
    >>> model = make_pipeline(StandardScaler(), ListNetRanker(
    ...     hidden_layer_sizes=(), max_iter=5, random_state=0))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # ConvergenceWarning after 5 epochs
    ...     model = model.fit(X, y, listnetranker__qid=qid)
    >>> body = to_es_linear(model, ["title_bm25", "popularity"], name="my_model")
    >>> body["model"]["model"]["type"]
    'model/linear'
    >>> json.loads(body["model"]["model"]["definition"])  # doctest: +ELLIPSIS
    {'title_bm25': ..., 'popularity': ...}
    >>> sorted(body["model"]["model"]["feature_normalizers"]["popularity"]["standard"])
    ['mean', 'standard_deviation']
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string; got name={name!r}.")
    if not name:
        raise ValueError("name must be a non-empty string; got name=''.")
    score = _linear_score(model)
    names = _feature_names(feature_names, model, score.n_features)
    weights = _single_precision(score.coef, "weight", names)
    definition = {"type": "model/linear",
                  "definition": json.dumps(dict(zip(names, weights)))}
    if score.steps:
        offset, divisor = score.offset_divisor()
        means = _single_precision(offset, "normalizer mean", names)
        deviations = _single_precision(divisor, "normalizer standard_deviation", names)
        for feature, deviation in zip(names, deviations):
            if not np.float32(deviation) > 0:  # the plugin refuses a deviation <= 0.0f
                raise ValueError(
                    f"the normalizer standard_deviation of feature {feature!r} is "
                    f"{deviation!r}, which is 0 in the single precision in which the "
                    "plugin stores it (it must be positive); rescale the feature."
                )
        definition["feature_normalizers"] = {
            feature: {"standard": {"mean": mean, "standard_deviation": deviation}}
            for feature, mean, deviation in zip(names, means, deviations)
        }
    return {"model": {"name": name, "model": definition}}


def to_vespa_expression(model, feature_names=None):
    """Vespa ranking expression of a linear ranker, scaling steps included.

    A ``first-phase`` (or ``second-phase``) expression for a rank profile:
    the sum of each feature, scaled as the Pipeline's scalers do, times its
    weight. Vespa evaluates it in double precision to ``model.predict(X)``.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted skrank ranker (:class:`~skrank.rankers.ListNetRanker`,
        :class:`~skrank.rankers.SoftRankRanker`,
        :class:`~skrank.rankers.BoltzRankRanker`,
        :class:`~skrank.rankers.LogRankRanker`) with a linear scoring function
        (``hidden_layer_sizes=()``, no pairwise potential), or a fitted
        scikit-learn Pipeline of ``StandardScaler``, ``MinMaxScaler``
        (``clip=False``) or ``"passthrough"`` steps ending in one.
    feature_names : sequence of str, default=None
        The Vespa rank feature of each column of ``X``, written as in a
        ranking expression and used as given: ``"attribute(popularity)"``,
        ``"bm25(title)"``, ``"fieldMatch(title).completeness"``,
        ``"query(user_age)"``, or the bare name of a function of the rank
        profile or of a built-in feature (``"nativeRank"``). None takes
        ``model.feature_names_in_`` (set when the model was fitted on a
        DataFrame, e.g. of features Vespa logged as ``match-features``).

    Returns
    -------
    expression : str
        Terms ``w * <feature, scaled>`` joined by ``+`` and ``-``, one per
        feature in column order; each number is the shortest decimal that
        reads back to the same double.

    Raises
    ------
    ValueError
        If a step cannot be exported (a
        :class:`~skrank.preprocessing.QueryNormalizer`, another transformer,
        a ``MinMaxScaler`` with ``clip=True``, a ranker that is not linear or
        not a skrank ranker), a weight or scaling statistic is not finite,
        or ``feature_names`` is missing, has the wrong length, repeats a
        name, or holds a name that is not a Vespa rank feature.
    TypeError
        If ``feature_names`` is not a sequence of strings.
    sklearn.exceptions.NotFittedError
        If the ranker or a scaler is not fitted.

    See Also
    --------
    to_es_linear : The same scoring function for the Elasticsearch /
        OpenSearch Learning-to-Rank plugin.

    Notes
    -----
    The syntax is that of Vespa's ranking expressions,
    https://docs.vespa.ai/en/reference/ranking/ranking-expressions.html:
    rank features and floating-point constants combined with ``+``, ``-``,
    ``*``, ``/`` and parentheses, with the usual precedence. Numbers are
    written by Python's ``repr`` (``0.25``, ``1e-05``), which Vespa's
    grammar reads as floating-point literals.

    Feature names are never rewritten: a bare name is not wrapped in
    ``attribute(...)``, because in a ranking expression it already means a
    rank-profile function or a built-in feature, and wrapping it would
    change which value is read. A name must have the form of a rank
    feature, ``name``, ``name(arguments)`` or either with ``.output``
    suffixes; a space or an operator in a name (``"title score"``,
    ``"a-b"``) would change the expression and is refused.

    The scaling is written as the scalers compute it, feature by feature:
    ``(x - mean_) / scale_`` for a ``StandardScaler``, ``x * scale_ + min_``
    for a ``MinMaxScaler``; the weight multiplies the scaled value. With
    the same operations in the same order, Vespa's score equals
    ``model.predict(X)`` up to the order of the final sum.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skrank.datasets import make_ranking
    >>> from skrank.export import to_vespa_expression
    >>> from skrank.rankers import ListNetRanker
    >>> X, y, qid = make_ranking(n_queries=10, n_docs=5, n_features=2, random_state=0)
    >>> model = make_pipeline(StandardScaler(), ListNetRanker(
    ...     hidden_layer_sizes=(), max_iter=5, random_state=0))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # ConvergenceWarning after 5 epochs
    ...     model = model.fit(X, y, listnetranker__qid=qid)
    >>> names = ["bm25(title)", "attribute(popularity)"]
    >>> expression = to_vespa_expression(model, names)
    >>> print(f"expression: {expression}")  # doctest: +ELLIPSIS
    expression: ... * ((bm25(title) ... / ...) ... * ((attribute(popularity) ... / ...)
    """
    score = _linear_score(model)
    names = _feature_names(feature_names, model, score.n_features)
    for position, name in enumerate(names):
        if _VESPA_FEATURE.fullmatch(name) is None:
            raise ValueError(
                f"feature_names[{position}]={name!r} is not a Vespa rank feature "
                "such as 'attribute(popularity)', 'bm25(title)' or "
                "'fieldMatch(title).completeness'; it would change the ranking "
                "expression."
            )
    text = ""
    for j, name in enumerate(names):
        expr = name
        for step in score.steps:
            expr = step.vespa(j, expr)
        weight = score.coef[j]
        if j == 0:
            text = f"{_number(weight)} * {expr}"
        else:  # a - w * x is a + (-w) * x exactly: negation is exact
            sign = "-" if np.signbit(weight) else "+"
            text += f" {sign} {_number(abs(weight))} * {expr}"
    return text
