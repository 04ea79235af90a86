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
    validate_params,
)
from sklearn.utils.metadata_routing import (
    MetadataRequest,
    _routing_enabled,
    get_routing_for_object,
)
from sklearn.utils.validation import validate_data

__all__ = [
    "HasMethods",
    "Interval",
    "MetadataRequest",
    "Options",
    "StrOptions",
    "_fit_context",
    "get_routing_for_object",
    "make_metadata_request",
    "multimetric_scorer",
    "safe_indexing",
    "routing_enabled",
    "validate_data",
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
