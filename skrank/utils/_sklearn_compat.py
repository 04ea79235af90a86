"""The only module of skrank that imports private scikit-learn API.

Everything here is re-exported under a stable name so that a change in
scikit-learn's internals is mended in one place.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from sklearn.utils.metadata_routing import (
    MetadataRequest,
    _routing_enabled,
    get_routing_for_object,
)
from sklearn.utils.validation import _check_sample_weight, validate_data

__all__ = [
    "HasMethods",
    "assert_docstring_consistency",
    "Interval",
    "MetadataRequest",
    "Options",
    "StrOptions",
    "_fit_context",
    "check_sample_weight",
    "get_routing_for_object",
    "make_metadata_request",
    "multimetric_scorer",
    "safe_indexing",
    "routing_enabled",
    "validate_data",
    "validate_parameter_constraints",
    "validate_params",
]

def routing_enabled():
    """Whether scikit-learn's metadata routing is switched on."""
    return _routing_enabled()


def make_metadata_request(owner):
    """An empty :class:`MetadataRequest` owned by ``owner``.

    The owner is given by class name, which every supported scikit-learn
    version accepts (1.8+ also takes the object itself).
    """
    return MetadataRequest(owner=type(owner).__name__)


def multimetric_scorer(scorers, *, raise_exc):
    """scikit-learn's private multi-metric scorer over a dict of scorers."""
    from sklearn.metrics._scorer import _MultimetricScorer

    return _MultimetricScorer(scorers=scorers, raise_exc=raise_exc)


def safe_indexing(X, indices):
    """Rows ``indices`` of an array, sparse matrix, DataFrame or list."""
    from sklearn.utils import _safe_indexing

    return _safe_indexing(X, indices)


def check_sample_weight(sample_weight, X):
    """``sample_weight`` as a float array with one entry per row of ``X``."""
    return _check_sample_weight(sample_weight, X)


def assert_docstring_consistency(objects, **kwargs):
    """scikit-learn's check that shared parameters are documented alike (for tests)."""
    from sklearn.utils._testing import assert_docstring_consistency as check

    return check(objects, **kwargs)
