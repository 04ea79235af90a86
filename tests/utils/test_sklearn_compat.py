"""The parameter constraints of skrank/utils/_sklearn_compat.py, over every public class.

A walk over the public estimators and losses finds their integer and float
parameters: a bool (or numpy's timedelta64) is no integer and no float; a
huge integer is "no limit" for a limit, and refused for a count of what a
fit holds in memory.
"""

import importlib
import re
from numbers import Integral, Real

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import Ridge
from sklearn.utils._param_validation import Interval, InvalidParameterError

import skrank
from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, losses
from skrank.losses import ListwiseLoss, LogRankLoss

from tests._inputs import FAST_SETTINGS, HUGE, PUBLIC_LOSSES, RANKERS, fast


#: Arguments of the public classes that cannot be built without any.
REQUIRED_ARGS = {
    "RankerSearchCV": lambda: dict(estimator=Ridge(), param_grid={"alpha": [1.0]}, cv=2),
    "RankerRandomizedSearchCV": lambda: dict(estimator=Ridge(),
                                             param_distributions={"alpha": [1.0]}, cv=2),
}


def _public_classes():
    """Every estimator and loss class a public skrank module exports."""
    found = {}
    for module in [skrank] + [importlib.import_module(f"skrank.{name}") for name in (
            "rankers", "losses", "preprocessing", "model_selection", "metrics", "inspection")]:
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, (BaseEstimator, ListwiseLoss))\
                    and obj is not ListwiseLoss:
                found[obj.__name__] = obj
    return [found[name] for name in sorted(found)]


def _is_integer_constraint(constraint):
    return constraint is Integral or (
        isinstance(constraint, Interval) and constraint.type is Integral)


INTEGER_PARAMETERS = [
    (cls, name)
    for cls in _public_classes()
    for name, constraints in getattr(cls, "_parameter_constraints", {}).items()
    if not isinstance(constraints, str) and any(map(_is_integer_constraint, constraints))
]


def _is_float_constraint(constraint):
    # Interval(Real, ...) and skrank's Float, the bare type Real and skrank's RealNumber
    return constraint is Real or getattr(constraint, "type", None) is Real


FLOAT_PARAMETERS = [
    (cls, name)
    for cls in _public_classes()
    for name, constraints in getattr(cls, "_parameter_constraints", {}).items()
    if not isinstance(constraints, str) and any(map(_is_float_constraint, constraints))
]


def _build(cls, **params):
    """A public class with fast settings (rankers) or its required arguments (searches)."""
    if cls in FAST_SETTINGS:
        return fast(cls, **params)
    return cls(**REQUIRED_ARGS.get(cls.__name__, dict)(), **params)


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name, low", [
    (ListNetRanker, "n_init", 1),
    (ListNetRanker, "hidden_layer_sizes", 1),
    (LogRankRanker, "n_rankings", 2),
    (BoltzRankRanker, "n_rankings", 2),
    (BoltzRankRanker, "pairwise_hidden_layer_sizes", 1),
], ids=lambda v: getattr(v, "__name__", v))
def test_huge_counts_of_what_the_fit_holds_are_refused(cls, name, low, value, six_queries):
    X, y, qid = six_queries
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\) "
               rf"in the range \[{low}, {2**63 - 1}\]\. Got {value} instead\.$")
    with pytest.raises(InvalidParameterError, match=message):
        fast(cls, **{name: value}).fit(X, y, qid=qid)


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name", [(LogRankLoss, "n_rankings"), (losses.BoltzRankLoss,
                                                                      "n_rankings")])
def test_huge_sample_counts_of_the_losses_are_refused(cls, name, value):
    with pytest.raises(InvalidParameterError,
                       match=rf"^The '{name}' parameter of {cls.__name__} must be .*\. "
                             rf"Got {value} instead\.$"):
        cls(**{name: value})


#: The integer parameters that count what a fit holds in memory: a count
#: beyond the largest numpy array length is refused. Every other integer
#: parameter is a limit (a cut-off, a batch, iterations, patience, workers),
#: which any larger value leaves as "no limit", and must work.
COUNTS = {"n_rankings", "n_init", "hidden_layer_sizes", "pairwise_hidden_layer_sizes",
          # Sinkhorn runs every iteration it is given (no tolerance) at every
          # evaluation: bounded at 10,000 (see SoftRankLoss), a huge count is refused
          "sinkhorn_iterations"}
#: Parameters whose huge value is not tried, and why.
NOT_TRIED = {}
#: Known failures outside skrank's code, and why. (The searches' n_jobs was
#: one until they capped it at their fits, as the rankers cap it at their runs.)
KNOWN = {}


def _huge_cases():
    for cls, name in INTEGER_PARAMETERS:
        marks = [NOT_TRIED[name]] if name in NOT_TRIED else []
        if (cls.__name__, name) in KNOWN:
            marks.append(pytest.mark.xfail(raises=OverflowError, strict=True,
                                           reason=KNOWN[cls.__name__, name]))
        yield pytest.param(cls, name, marks=marks, id=f"{cls.__name__}.{name}")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:The total space of parameters:UserWarning")
@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name", list(_huge_cases()))
def test_every_integer_parameter_takes_a_huge_value_or_refuses_it(cls, name, value, six_queries):
    X, y, qid = six_queries
    params = {name: value}
    if name == "max_iter" and "n_iter_no_change" in cls().get_params():
        params["n_iter_no_change"] = 2  # the patience ends the fit
    refused = pytest.raises(
        InvalidParameterError,
        match=rf"^The '{name}' parameter of {cls.__name__} must be .* Got {value} instead\.$")
    if issubclass(cls, ListwiseLoss):
        if name in COUNTS:
            with refused:
                cls(**params)
        else:
            loss = cls(**params)
            loss.value_and_grad(X[:, 0], loss.prepare(y, qid, random_state=0))
        return
    if name in COUNTS:
        with refused:
            _build(cls, **params).fit(X, y, qid=qid)
    else:
        _build(cls, **params).fit(X, y, qid=qid)


def test_the_walk_finds_the_integer_parameters():
    found = {f"{cls.__name__}.{name}" for cls, name in INTEGER_PARAMETERS}
    assert {"LogRankRanker.walk_length", "LogRankLoss.n_rankings", "ListNetRanker.batch_size",
            "SoftRankLoss.truncation", "SoftRankRanker.n_exact", "BoltzRankRanker.n_rankings",
            "BoltzRankRanker.pairwise_hidden_layer_sizes", "ListNetRanker.n_jobs",
            "RankerRandomizedSearchCV.n_iter", "RankerSearchCV.pre_dispatch"} <= found
    assert {cls for cls, _ in INTEGER_PARAMETERS} >= set(PUBLIC_LOSSES) - {losses.ListNetLoss}


@pytest.mark.parametrize("value", [True, False, np.True_])
@pytest.mark.parametrize("cls, name", INTEGER_PARAMETERS,
                         ids=[f"{c.__name__}.{n}" for c, n in INTEGER_PARAMETERS])
def test_bool_is_not_an_integer_parameter(cls, name, value, six_queries):
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\)"
               rf".*\. Got {value!r} instead\.$")
    _refused_on_build_or_fit(cls, name, value, message, six_queries)


def _refused_on_build_or_fit(cls, name, value, message, six_queries):
    """``cls`` refuses ``{name: value}`` when built (a loss) or fitted, with ``message``."""
    if issubclass(cls, ListwiseLoss):
        with pytest.raises(InvalidParameterError, match=message):
            cls(**{name: value})
        return
    X, y, qid = six_queries
    with pytest.raises(InvalidParameterError, match=message):
        _build(cls, **{name: value}).fit(X, y, qid=qid)


@pytest.mark.parametrize("cls, name", INTEGER_PARAMETERS,
                         ids=[f"{c.__name__}.{n}" for c, n in INTEGER_PARAMETERS])
def test_timedelta_is_not_an_integer_parameter(cls, name, six_queries):
    # numpy registers np.timedelta64 as a numbers.Integral; comparing it
    # with a bound raised numpy's UFuncTypeError, or it was taken as 3
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\)"
               r".*\. Got (np|numpy)\.timedelta64\(3\) instead\.$")
    _refused_on_build_or_fit(cls, name, np.timedelta64(3), message, six_queries)


def test_the_walk_finds_the_float_parameters():
    found = {f"{cls.__name__}.{name}" for cls, name in FLOAT_PARAMETERS}
    assert {f"{ranker.__name__}.{name}" for ranker in RANKERS
            for name in ("alpha", "tol")} <= found
    assert {"ListNetRanker.learning_rate_init", "ListNetRanker.momentum",
            "ListNetRanker.learning_rate_decay", "ListNetRanker.validation_fraction",
            "SoftRankRanker.sigma", "SoftRankLoss.discount_shape",
            "BoltzRankLoss.gain_weight", "BoltzRankRanker.target_temperature",
            "LogRankLoss.walk_restart_skew", "LogRankRanker.relevance_threshold",
            "RankerSearchCV.error_score", "RankerRandomizedSearchCV.error_score"} <= found


@pytest.mark.parametrize("value", [True, False, np.True_, np.timedelta64(3)])
@pytest.mark.parametrize("cls, name", FLOAT_PARAMETERS,
                         ids=[f"{c.__name__}.{n}" for c, n in FLOAT_PARAMETERS])
def test_bool_is_not_a_float_parameter(cls, name, value, six_queries):
    # bool is a numbers.Real: scikit-learn's Interval(Real, ...) took True as 1.0
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*a float \(not a bool\)"
               rf".*\. Got {re.escape(repr(value))} instead\.$")
    _refused_on_build_or_fit(cls, name, value, message, six_queries)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_float_parameter_still_takes_an_int_and_error_score_nan(six_queries):
    X, y, qid = six_queries
    fast(ListNetRanker, alpha=1, tol=0, momentum=1).fit(X, y, qid=qid)
    search = skrank.RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=2, error_score=np.nan)
    assert search.fit(X, y, qid=qid).best_params_ == {"alpha": 1.0}
