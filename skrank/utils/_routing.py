"""How ``qid`` reaches an estimator's methods: the one place that decides it.

With scikit-learn's metadata routing on, a meta-estimator routes ``qid``
itself. With routing off, a :class:`~sklearn.pipeline.Pipeline` (nested ones
included) is handled here: its fit gets ``step__qid`` for every step that takes
``qid`` (scikit-learn hands step-prefixed fit parameters to each step's ``fit``
or ``fit_transform``), and its predictions are made by walking the steps,
giving ``qid`` to each ``transform`` and to the final ``predict`` that take it.
Any other meta-estimator with a step that takes ``qid`` is refused with a
ValueError, rather than silently treating all rows as one query.
"""

import inspect

from sklearn.pipeline import Pipeline

from ._sklearn_compat import get_routing_for_object, routing_enabled

__all__ = [
    "accepts_qid",
    "fit_qid_params",
    "predict_scores",
    "qid_consumers",
    "takes_qid",
    "through_transforms",
]

#: The methods through which a step can take qid.
_QID_METHODS = ("fit", "fit_transform", "transform", "predict", "score")


def accepts_qid(estimator, method):
    """Whether ``estimator.<method>`` should be given ``qid``.

    True when the method has an explicit ``qid`` parameter, or, with metadata
    routing on, when the estimator (a meta-estimator such as a Pipeline) routes
    ``qid`` to a consumer of that method.
    """
    func = getattr(estimator, method, None)
    if func is None:
        return False
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    if "qid" in params:
        return True
    has_var_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if has_var_kwargs and routing_enabled() and hasattr(estimator, "get_metadata_routing"):
        try:
            routing = get_routing_for_object(estimator)
            return bool(routing.consumes(method, ["qid"]))
        except (AttributeError, NotImplementedError, TypeError):
            return False
    return False


def _is_passthrough(step):
    return step is None or (isinstance(step, str) and step == "passthrough")


def _takes_qid_itself(estimator):
    return any(accepts_qid(estimator, method) for method in _QID_METHODS)


def qid_consumers(estimator):
    """Names (``get_params`` keys) of the sub-estimators with a method taking qid.

    By signature: ``fit``, ``fit_transform``, ``transform``, ``predict`` or
    ``score`` with a ``qid`` parameter.
    """
    if not hasattr(estimator, "get_params"):
        return []
    return [
        name
        for name, value in estimator.get_params(deep=True).items()
        if hasattr(value, "get_params") and _takes_qid_itself(value)
    ]


def takes_qid(estimator):
    """Whether ``estimator`` or one of its sub-estimators has a method taking qid.

    By signature, whatever the metadata requests say: the rule of
    :func:`qid_consumers` (``fit``, ``fit_transform``, ``transform``,
    ``predict`` or ``score`` with a ``qid`` parameter), applied to
    ``estimator`` itself and to every sub-estimator in its ``get_params``.
    """
    return _takes_qid_itself(estimator) or bool(qid_consumers(estimator))


def _refuse_hidden_consumers(estimator, where):
    """ValueError when ``estimator`` hides steps taking qid that routing-off cannot reach."""
    consumers = qid_consumers(estimator)
    if consumers:
        raise ValueError(
            f"{where}{type(estimator).__name__} has steps that take qid "
            f"({', '.join(consumers)}), but with scikit-learn's metadata routing "
            "off it cannot pass qid to them (only a Pipeline's steps are reached "
            "without routing). Enable it with "
            "sklearn.set_config(enable_metadata_routing=True)."
        )


def _pipeline_fit_qid(pipeline, qid, *, as_transformer, prefix):
    """``step__qid`` fit parameters for the steps of ``pipeline`` that take qid.

    Routing off, ``Pipeline.fit`` gives ``step__param`` to the step's
    ``fit_transform`` (a step before the last, or the last one when the
    pipeline is itself a transformer step, ``as_transformer``) or ``fit``
    (the last step), and never to ``transform``.
    """
    params = {}
    n_steps = len(pipeline.steps)
    for i, (name, step) in enumerate(pipeline.steps):
        if _is_passthrough(step):
            continue
        where = f"{prefix}{name}"
        transformer = as_transformer or i < n_steps - 1
        if isinstance(step, Pipeline):
            params.update(_pipeline_fit_qid(
                step, qid, as_transformer=transformer, prefix=f"{where}__"
            ))
        elif not transformer or not hasattr(step, "fit_transform"):
            if accepts_qid(step, "fit"):
                params[f"{where}__qid"] = qid
            if transformer and accepts_qid(step, "transform"):
                # Pipeline.fit calls fit(**params) and then transform() bare
                raise ValueError(
                    f"Pipeline step {where!r} ({type(step).__name__}) takes qid in "
                    "transform but has no fit_transform: with scikit-learn's "
                    "metadata routing off the Pipeline transforms its training rows "
                    "without qid. Enable routing with "
                    "sklearn.set_config(enable_metadata_routing=True)."
                )
        elif accepts_qid(step, "fit_transform"):
            params[f"{where}__qid"] = qid
        elif accepts_qid(step, "transform"):
            raise ValueError(
                f"Pipeline step {where!r} ({type(step).__name__}) takes qid in "
                "transform but not in fit_transform, which the Pipeline calls to "
                "fit it: with scikit-learn's metadata routing off its training rows "
                "would be transformed without qid. Give fit_transform a qid "
                "parameter, or enable routing with "
                "sklearn.set_config(enable_metadata_routing=True)."
            )
        elif accepts_qid(step, "fit"):
            # TransformerMixin.fit_transform hands its keywords to fit
            params[f"{where}__qid"] = qid
        if not _takes_qid_itself(step) and not isinstance(step, Pipeline):
            _refuse_hidden_consumers(step, f"Pipeline step {where!r}: ")
    return params


def fit_qid_params(estimator, qid):
    """The keyword arguments that hand ``qid`` to ``estimator.fit``.

    ``{"qid": qid}`` when ``fit`` takes it (by signature, or routed by a
    meta-estimator with metadata routing on). With routing off, a Pipeline
    gets ``{"<step>__qid": qid}`` for each step that takes it (nested
    pipelines as ``<outer>__<inner>__qid``).

    Raises
    ------
    ValueError
        With routing off, if ``estimator`` is a meta-estimator other than a
        Pipeline (or a Pipeline step is one) with steps taking ``qid``: they
        cannot be reached, and would silently treat all rows as one query.
    """
    if accepts_qid(estimator, "fit"):
        return {"qid": qid}
    if routing_enabled():
        return {}
    if isinstance(estimator, Pipeline):
        return _pipeline_fit_qid(estimator, qid, as_transformer=False, prefix="")
    _refuse_hidden_consumers(estimator, "")
    return {}


def _takes_qid_inside(pipeline):
    """Whether a step of ``pipeline``, at any depth of nested pipelines, takes qid."""
    return any(
        _takes_qid_inside(step) if isinstance(step, Pipeline) else _takes_qid_itself(step)
        for _, step in pipeline.steps
        if not _is_passthrough(step)
    )


def _walked(estimator):
    """Whether predictions of ``estimator`` walk its steps to hand them qid.

    A Pipeline with routing off, whose last step is an estimator and one of
    whose steps (at any depth of nested pipelines) takes qid.
    """
    return (
        not routing_enabled()
        and isinstance(estimator, Pipeline)
        and bool(estimator.steps)
        and not _is_passthrough(estimator.steps[-1][1])
        and _takes_qid_inside(estimator)
    )


def _transform(step, X, qid):
    """``step.transform(X)``, with qid given to every transform that takes it."""
    if isinstance(step, Pipeline) and not routing_enabled():
        for _, sub in step.steps:
            if not _is_passthrough(sub):
                X = _transform(sub, X, qid)
        return X
    if accepts_qid(step, "transform"):
        return step.transform(X, qid=qid)
    return step.transform(X)


def through_transforms(estimator, X, qid):
    """The estimator that predicts, and the ``X`` it predicts from.

    For a Pipeline that takes qid with metadata routing off: its final
    estimator, and ``X`` transformed by the steps before it, each
    ``transform`` given ``qid`` when it takes it (as routing would do);
    nested pipelines are walked too. Otherwise ``(estimator, X)``.
    """
    while _walked(estimator):
        for _, step in estimator.steps[:-1]:
            if not _is_passthrough(step):
                X = _transform(step, X, qid)
        estimator = estimator.steps[-1][1]
    return estimator, X


def predict_scores(estimator, X, qid):
    """``estimator.predict(X, qid=qid)`` when predict takes qid, else ``predict(X)``.

    With metadata routing off, a Pipeline whose steps take qid is walked
    (:func:`through_transforms`): each transform and the final predict get
    ``qid`` when they take it.

    Raises a TypeError naming the estimator's type when it has no ``predict``
    (rather than the scorers' bare AttributeError).
    """
    if not callable(getattr(estimator, "predict", None)):
        raise TypeError(
            "Scoring needs a fitted estimator with a predict method; got an "
            f"estimator of type {type(estimator).__name__}, which has no predict."
        )
    estimator, X = through_transforms(estimator, X, qid)
    if accepts_qid(estimator, "predict"):
        return estimator.predict(X, qid=qid)
    return estimator.predict(X)
