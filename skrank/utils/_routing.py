"""How ``qid`` reaches an estimator's methods: the one place that decides it."""

import inspect

from ._sklearn_compat import get_routing_for_object, routing_enabled

__all__ = ["accepts_qid", "predict_scores"]


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


def predict_scores(estimator, X, qid):
    """``estimator.predict(X, qid=qid)`` when predict takes qid, else ``predict(X)``.

    Raises a TypeError naming the estimator's type when it has no ``predict``
    (issue 27: a bare AttributeError came out of the scorers).
    """
    if not callable(getattr(estimator, "predict", None)):
        raise TypeError(
            "Scoring needs a fitted estimator with a predict method; got an "
            f"estimator of type {type(estimator).__name__}, which has no predict."
        )
    if accepts_qid(estimator, "predict"):
        return estimator.predict(X, qid=qid)
    return estimator.predict(X)
