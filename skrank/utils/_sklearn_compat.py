"""The only module of skrank that imports private scikit-learn API.

Everything here is re-exported under a stable name so that a change in
scikit-learn's internals is mended in one place.
"""

from numbers import Integral, Real

import numpy as np
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
from sklearn.utils.validation import _check_sample_weight
from sklearn.utils.validation import validate_data as _validate_data

from ._validation import check_feature_dtypes, is_integer, is_real

__all__ = [
    "HasMethods",
    "assert_docstring_consistency",
    "Float",
    "Integer",
    "Interval",
    "MAX_LENGTH",
    "MetadataRequest",
    "Options",
    "RealNumber",
    "StrOptions",
    "_fit_context",
    "check_sample_weight",
    "get_routing_for_object",
    "make_metadata_request",
    "multimetric_scorer",
    "refuse_bool_numbers",
    "safe_indexing",
    "routing_enabled",
    "validate_data",
    "validate_parameter_constraints",
    "validate_params",
]


#: The largest length of a numpy array: the upper bound of the integer
#: parameters that count what the fit holds in memory (rankings sampled per
#: query, runs, hidden units). A larger count has no meaning (numpy cannot
#: even index it) and is refused by the parameter check instead of failing
#: deep inside with an OverflowError.
MAX_LENGTH = int(np.iinfo(np.intp).max)


class Integer(Interval):
    """An interval of integers that refuses bool: ``True`` is not the integer 1 here.

    scikit-learn's ``Interval(Integral, ...)`` accepts ``True`` and
    ``False`` (``bool`` subclasses ``int``), so ``k=True`` would fit as
    ``k=1``; it also takes ``np.timedelta64(3)`` (numpy registers it as an
    ``Integral``) and then fails on comparing it with the bounds. Every
    integer parameter of skrank's estimators, losses and metrics uses this
    constraint instead (the test is :func:`~skrank.utils._validation.is_integer`);
    the error then reads "The 'k' parameter of LogRankRanker must be an int
    (not a bool) in the range [1, inf). Got True instead." (scikit-learn's
    ``InvalidParameterError``, a ``ValueError`` and a ``TypeError``).

    Parameters
    ----------
    left, right : int or None, default=None
        Bounds, as in ``Interval``; None is unbounded.
    closed : {"left", "right", "both", "neither"}, default="neither"
        Which bounds belong to the interval, as in ``Interval``.
    """

    def __init__(self, left=None, right=None, *, closed="neither"):
        super().__init__(Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return is_integer(val) and super().is_satisfied_by(val)

    def __str__(self):
        if self.left is None and self.right is None:
            return "an int (not a bool)"
        return "an int (not a bool)" + super().__str__()[len("an int"):]


class Float(Interval):
    """An interval of real numbers that refuses bool: ``True`` is not the number 1.0 here.

    The float counterpart of :class:`Integer`: scikit-learn's
    ``Interval(Real, ...)`` accepts ``True`` (a ``bool`` is an
    ``Integral``, hence a ``Real``), so ``alpha=True`` would fit as
    ``alpha=1.0``. Every float parameter of skrank's estimators, losses,
    metrics and data generators uses this constraint (the test is
    :func:`~skrank.utils._validation.is_real`); the error reads "The 'alpha'
    parameter of ListNetRanker must be a float (not a bool) in the range
    [0.0, inf). Got True instead." Ints are accepted and NaN is refused, as
    by ``Interval(Real, ...)``.

    Parameters
    ----------
    left, right : float or None, default=None
        Bounds, as in ``Interval``; None is unbounded.
    closed : {"left", "right", "both", "neither"}, default="neither"
        Which bounds belong to the interval, as in ``Interval``.
    """

    def __init__(self, left=None, right=None, *, closed="neither"):
        super().__init__(Real, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return is_real(val) and super().is_satisfied_by(val)

    def __str__(self):
        return "a float (not a bool)" + super().__str__()[len("a float"):]


class RealNumber(Options):
    """Any real number, NaN and the infinities included, but not a bool.

    The bare type ``numbers.Real`` as a constraint, without ``True`` and
    ``False`` (and without ``np.timedelta64``), as :class:`Float` is
    ``Interval(Real, ...)`` without them: for a float that may be NaN, such
    as the ``error_score`` of a search. It is an ``Options`` only because
    scikit-learn's validation takes no other kind of constraint object and
    its test of the constraints draws no invalid value from an ``Options``
    (from an unbounded ``Interval`` it would draw NaN or an infinity, which
    are valid here).
    """

    def __init__(self):
        super().__init__(Real, set())

    def is_satisfied_by(self, val):
        return is_real(val)

    def __str__(self):
        return "a float (not a bool)"


def refuse_bool_numbers(constraints):
    """``constraints`` with every integer and float constraint made one that refuses bool.

    For constraints inherited from scikit-learn, so that a subclass's
    numeric parameters refuse bool like skrank's own:
    ``Interval(Integral, ...)`` and ``Integral`` become :class:`Integer`,
    ``Interval(Real, ...)`` :class:`Float` and ``Real`` :class:`RealNumber`.
    Other constraints (``"verbose"``, ``"random_state"``, ``"cv_object"``,
    which accept bool or check it on their own) are kept.

    Parameters
    ----------
    constraints : dict of str to list
        A ``_parameter_constraints`` dict.

    Returns
    -------
    constraints : dict of str to list
        A new dict.
    """
    def strict(constraint):
        if constraint is Integral:
            return Integer()
        if constraint is Real:
            return RealNumber()
        if isinstance(constraint, (Integer, Float)) or not isinstance(constraint, Interval):
            return constraint
        if constraint.type is Integral:
            return Integer(constraint.left, constraint.right, closed=constraint.closed)
        if constraint.type is Real:
            return Float(constraint.left, constraint.right, closed=constraint.closed)
        return constraint

    return {name: value if isinstance(value, str) else [strict(c) for c in value]
            for name, value in constraints.items()}


def validate_data(estimator, /, X="no_validation", y="no_validation", **check_params):
    """scikit-learn's ``validate_data``, after refusing date and duration features by name.

    :func:`~skrank.utils._validation.check_feature_dtypes` runs first on
    ``X``: numpy's ``DTypePromotionError`` for a DataFrame with a datetime
    column names neither ``X`` nor the column. The arguments and the result
    are scikit-learn's.
    """
    if not (isinstance(X, str) and X == "no_validation"):
        check_feature_dtypes(X)
    return _validate_data(estimator, X, y, **check_params)


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
