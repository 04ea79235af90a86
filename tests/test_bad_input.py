"""Bad input gets a clear error, not a crash from deep inside (issue 27).

One section per cause of the issue: text labels, the loss API on a plain
``qid``, integers beyond 64 bits, and ``True`` passed as an integer. Each
test drives the input the issue reported and checks the error's type and
message (naming the parameter), or, where the input has a meaning, that it
works as that meaning.
"""

import importlib
from numbers import Integral

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.linear_model import Ridge
from sklearn.utils._param_validation import InvalidParameterError, Interval

import skrank
from skrank import losses
from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    average_precision_score,
    dcg_score,
    make_ranking,
    map_score,
    ndcg_score,
    precision_at_k,
)
from skrank._query import QueryLayout
from skrank.losses import LOSSES, ListNetLoss, ListwiseLoss, query_uniforms

RANKERS = [ListNetRanker, SoftRankRanker, BoltzRankRanker, LogRankRanker]
FAST = {
    ListNetRanker: dict(max_iter=3),
    SoftRankRanker: dict(max_iter=3),
    BoltzRankRanker: dict(max_iter=3, n_samples=5, n_init=1),
    LogRankRanker: dict(max_iter=3, n_samples=5),
}
METRICS = [ndcg_score, dcg_score, average_precision_score, map_score, precision_at_k]


def _fast(cls, **params):
    return cls(random_state=0, **{**FAST[cls], **params})


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=6, n_docs=5, random_state=0)


# 1. text labels -------------------------------------------------------------
TEXT_LABELS = {
    "str": (lambda y: y.astype(int).astype(str), r"an array of strings \(dtype <U\d+\)"),
    "bytes": (lambda y: y.astype(int).astype(bytes), r"an array of bytes \(dtype \|S\d+\)"),
    "object-str": (lambda y: y.astype(int).astype(str).astype(object),
                   "an object array holding '\\d' of type str"),
}


def _text_message(name, got):
    return rf"^{name} must be numeric, got {got}\..* e\.g\. {name}\.astype\(float\)\.$"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kind", sorted(TEXT_LABELS))
@pytest.mark.parametrize("cls", RANKERS, ids=lambda c: c.__name__)
def test_text_labels_are_refused_by_fit_and_score(cls, kind, data):
    X, y, qid = data
    to_text, got = TEXT_LABELS[kind]
    with pytest.raises(TypeError, match=_text_message("y", got)):
        _fast(cls).fit(X, to_text(y), qid=qid)
    ranker = _fast(cls).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match=_text_message("y", got)):
        ranker.score(X, to_text(y), qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_text_labels_of_the_validation_set_are_refused(data):
    X, y, qid = data
    to_text, got = TEXT_LABELS["str"]
    with pytest.raises(TypeError, match=_text_message("y_val", got)):
        _fast(ListNetRanker).fit(X, y, qid=qid, X_val=X, y_val=to_text(y), qid_val=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", RANKERS, ids=lambda c: c.__name__)
def test_object_labels_of_numbers_still_fit(cls, data):
    X, y, qid = data
    as_objects = np.array([int(v) for v in y], dtype=object)
    expected = _fast(cls).fit(X, y, qid=qid)
    got = _fast(cls).fit(X, as_objects, qid=qid)
    np.testing.assert_array_equal(got.predict(X, qid=qid), expected.predict(X, qid=qid))
    assert got.score(X, as_objects, qid=qid) == expected.score(X, y, qid=qid)


@pytest.mark.parametrize("kind", sorted(TEXT_LABELS))
@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_text_labels_and_scores_are_refused_by_the_metrics(metric, kind):
    to_text, got = TEXT_LABELS[kind]
    y, scores, qid = np.array([0.0, 1.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0, 0.0]), [0, 0, 1, 1]
    with pytest.raises(TypeError, match=_text_message("y_true", got)):
        metric(to_text(y), scores, qid=qid)
    with pytest.raises(TypeError, match=_text_message("y_score", got)):
        metric(y, to_text(scores), qid=qid)
    # numbers in an object array are numbers
    assert metric(y.astype(object), scores.astype(object), qid=qid) == metric(y, scores, qid=qid)


def test_text_labels_are_refused_by_the_losses():
    loss = ListNetLoss()
    to_text, got = TEXT_LABELS["str"]
    y, layout = np.array([2.0, 0.0, 1.0]), QueryLayout([0, 0, 0])
    with pytest.raises(TypeError, match=_text_message("y", got)):
        loss.prepare(to_text(y), layout)
    with pytest.raises(TypeError, match=_text_message("scores", got)):
        loss.value_and_grad(to_text(y), loss.prepare(y, layout))


# 2. the loss API on a plain qid ---------------------------------------------
#: Every loss class that skrank.losses exports (the abstract base excepted).
PUBLIC_LOSSES = sorted(
    (obj for obj in map(losses.__dict__.get, losses.__all__)
     if isinstance(obj, type) and issubclass(obj, ListwiseLoss) and obj is not ListwiseLoss),
    key=lambda cls: cls.__name__,
)


def test_every_registered_loss_is_public():
    assert set(PUBLIC_LOSSES) == set(LOSSES.values())


def _small_queries(rng, qid):
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    return y, rng.normal(size=len(qid))


@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("as_ids", [np.asarray, list, lambda q: q.astype(str)],
                         ids=["array", "list", "str-ids"])
def test_loss_on_a_plain_qid_equals_the_loss_on_its_layout(cls, as_ids, rng):
    qid = rng.permutation(np.repeat([7, 3, 11, 5], [4, 1, 6, 3]))
    y, scores = _small_queries(rng, qid)
    loss = cls()
    by_layout = loss.prepare(y, QueryLayout(as_ids(qid)), random_state=0)
    by_ids = loss.prepare(y, as_ids(qid), random_state=0)
    np.testing.assert_array_equal(by_ids.layout.qid, by_layout.layout.qid)
    # all queries, and a mini-batch of two (its rows grouped by query)
    positions, _ = by_layout.layout.select([0, 2])
    batch = by_layout.layout.to_sorted(scores)[positions]
    for s, queries in ((scores, None), (batch, [0, 2])):
        value, grad = loss.value_and_grad(s, by_ids, queries)
        expected_value, expected_grad = loss.value_and_grad(s, by_layout, queries)
        assert value == expected_value
        np.testing.assert_array_equal(grad, expected_grad)


@settings(max_examples=25, deadline=None)
@given(qid=st.lists(st.integers(-3, 3), min_size=1, max_size=12), seed=st.integers(0, 2**16))
@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
def test_loss_on_any_qid_equals_the_loss_on_its_layout(cls, qid, seed):
    y, scores = _small_queries(np.random.default_rng(seed), qid)
    loss = cls()
    value, grad = loss.value_and_grad(scores, loss.prepare(y, qid, random_state=seed))
    expected = loss.value_and_grad(scores, loss.prepare(y, QueryLayout(qid), random_state=seed))
    assert value == expected[0]
    np.testing.assert_array_equal(grad, expected[1])


@pytest.mark.parametrize("bad", [{"qid": [0, 0, 0]}, "000", 1.5, 0, None],
                         ids=["dict", "str", "float", "int", "None"])
@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
def test_loss_refuses_a_qid_of_the_wrong_type(cls, bad):
    message = (r"^layout must be an array of query ids \(one per row\) or a QueryLayout; "
               rf"got {type(bad).__name__} ")
    with pytest.raises(TypeError, match=message):
        cls().prepare([2.0, 0.0, 1.0], bad)


@pytest.mark.parametrize("cls", PUBLIC_LOSSES, ids=lambda c: c.__name__)
def test_loss_checks_the_length_of_a_qid_against_y(cls):
    with pytest.raises(ValueError,
                       match=r"^layout must have one entry per row: expected 3 entries, got 2\."):
        cls().prepare([2.0, 0.0, 1.0], [0, 0])
    # a layout keeps its own check, of y against its rows
    with pytest.raises(ValueError, match=r"^y must have shape \(2,\)"):
        cls().prepare([2.0, 0.0, 1.0], QueryLayout([0, 0]))


def test_query_uniforms_on_a_plain_qid_equals_them_on_its_layout():
    qid = np.array([5, 3, 5, 3, 3, 9])
    for per_query in (False, True):
        np.testing.assert_array_equal(
            query_uniforms(qid, 0, 3, per_query=per_query),
            query_uniforms(QueryLayout(qid), 0, 3, per_query=per_query))
    with pytest.raises(TypeError, match=r"^layout must be an array of query ids"):
        query_uniforms({"qid": qid}, 0, 3)


# 4. bool as an integer ------------------------------------------------------
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
            if isinstance(obj, type) and issubclass(obj, (BaseEstimator, ListwiseLoss)) \
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


def test_the_walk_finds_the_integer_parameters():
    found = {f"{cls.__name__}.{name}" for cls, name in INTEGER_PARAMETERS}
    assert {"LogRankRanker.k", "LogRankLoss.k", "ListNetRanker.batch_size",
            "SoftRankLoss.truncation", "SoftRankRanker.n_exact", "BoltzRankRanker.n_samples",
            "BoltzRankRanker.pairwise_hidden_layer_sizes", "ListNetRanker.n_jobs",
            "RankerRandomizedSearchCV.n_iter", "RankerSearchCV.pre_dispatch"} <= found
    assert {cls for cls, _ in INTEGER_PARAMETERS} >= set(PUBLIC_LOSSES) - {losses.ListNetLoss}


@pytest.mark.parametrize("value", [True, False, np.True_])
@pytest.mark.parametrize("cls, name", INTEGER_PARAMETERS,
                         ids=[f"{c.__name__}.{n}" for c, n in INTEGER_PARAMETERS])
def test_bool_is_not_an_integer_parameter(cls, name, value, data):
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\)"
               rf".*\. Got {value!r} instead\.$")
    if issubclass(cls, ListwiseLoss):
        with pytest.raises(InvalidParameterError, match=message):
            cls(**{name: value})
        return
    X, y, qid = data
    estimator = cls(**REQUIRED_ARGS.get(cls.__name__, dict)()).set_params(**{name: value})
    with pytest.raises(InvalidParameterError, match=message):
        estimator.fit(X, y, qid=qid)


@pytest.mark.parametrize("cls, name, value, message", [
    (ListNetRanker, "hidden_layer_sizes", (4, True),
     r"^hidden_layer_sizes must hold positive integers; got \(4, True\) \(each entry must be "
     r"an int \(not a bool\) in the range \[1, "),
    (BoltzRankRanker, "pairwise_hidden_layer_sizes", (True,),
     r"^pairwise_hidden_layer_sizes must be None or one positive number of hidden units, "
     r"such as \(5,\); got \(True,\) \(its entry must be an int \(not a bool\)"),
])
def test_bool_is_not_a_layer_width(cls, name, value, message, data):
    X, y, qid = data
    with pytest.raises(ValueError, match=message):
        _fast(cls, **{name: value}).fit(X, y, qid=qid)
