"""Input checks shared by the estimators."""

from contextlib import contextmanager

__all__ = ["keep_fitted_state_on_error"]

#: What ``validate_data(..., reset=True)`` writes before a fit has succeeded.
_RESET_ATTRIBUTES = ("n_features_in_", "feature_names_in_")


@contextmanager
def keep_fitted_state_on_error(estimator):
    """Undo ``validate_data``'s resets if the fit in the block raises.

    ``validate_data(reset=True)`` records ``n_features_in_`` and
    ``feature_names_in_`` as soon as ``X`` passes; a later check failing
    (``qid``, the labels, a parameter) would leave a fitted estimator whose
    recorded input no longer matches its model. Fitted attributes proper are
    written only at the end of a successful fit.
    """
    saved = {name: estimator.__dict__[name] for name in _RESET_ATTRIBUTES
             if name in estimator.__dict__}
    try:
        yield
    except BaseException:
        for name in _RESET_ATTRIBUTES:
            estimator.__dict__.pop(name, None)
        estimator.__dict__.update(saved)
        raise
