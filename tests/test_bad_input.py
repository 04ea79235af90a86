"""Bad input gets a clear error, not a crash from deep inside (issue 27).

One section per cause of the issue: text labels, the loss API on a plain
``qid``, integers beyond 64 bits, and ``True`` passed as an integer. Each
test drives the input the issue reported and checks the error's type and
message (naming the parameter), or, where the input has a meaning, that it
works as that meaning.
"""

import importlib
import re
from numbers import Integral, Real

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
from skrank.losses import (
    LOSSES,
    ListNetLoss,
    ListwiseLoss,
    LogRankLoss,
    SoftRankLoss,
    query_uniforms,
)
from skrank.utils import QueryLayout

RANKERS = [ListNetRanker, SoftRankRanker, BoltzRankRanker, LogRankRanker]
FAST = {
    ListNetRanker: dict(max_iter=3),
    SoftRankRanker: dict(max_iter=3),
    BoltzRankRanker: dict(max_iter=3, n_rankings=5, n_init=1),
    LogRankRanker: dict(max_iter=3, n_rankings=6),
}
METRICS = [ndcg_score, dcg_score, average_precision_score, map_score, precision_at_k]


def _fast(cls, **params):
    return cls(random_state=0, **{**FAST[cls], **params})


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=6, n_docs=5, random_state=0)


# The public classes and their integer parameters: a walk over the package ---
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
    if cls in FAST:
        return _fast(cls, **params)
    return cls(**REQUIRED_ARGS.get(cls.__name__, dict)(), **params)


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


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_complex_labels_and_scores_are_refused_by_the_metrics(metric):
    """Not cut to their real part with only NumPy's ComplexWarning."""
    y, scores, qid = np.array([0.0, 1.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0, 0.0]), [0, 0, 1, 1]
    message = r"must be real numbers, got an array of complex numbers \(dtype complex128\)"
    with pytest.raises(ValueError, match="y_true " + message):
        metric(y + 1j, scores, qid=qid)
    with pytest.raises(ValueError, match="y_score " + message):
        metric(y, scores + 0j, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_complex_labels_are_refused_by_fit(data):
    X, y, qid = data
    with pytest.raises(ValueError, match=r"Complex data not supported: y must be real"):
        _fast(ListNetRanker).fit(X, y + 0j, qid=qid)


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
# random labels may leave no good document, which LogRankLoss warns of
@pytest.mark.filterwarnings("ignore:LogRankLoss. relevance_threshold=.* is above every label")
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


# 3. integers beyond 64 bits ------------------------------------------------
HUGE = [2**63, 10**23]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("k", HUGE)
def test_huge_k_of_logrank_is_no_cut_off(k, data):
    # as ndcg_score's k: a cut-off past the longest query cuts nothing
    X, y, qid = data
    longest = np.bincount(qid).max()
    assert ndcg_score(y, X[:, 0], qid=qid, k=k) == ndcg_score(y, X[:, 0], qid=qid, k=None)
    huge = _fast(LogRankRanker, metric=f"ndcg@{k}").fit(X, y, qid=qid)
    np.testing.assert_array_equal(
        huge.coef_, _fast(LogRankRanker, metric=f"ndcg@{longest}").fit(X, y, qid=qid).coef_)
    np.testing.assert_array_equal(  # and no cut-off at all
        huge.coef_, _fast(LogRankRanker, metric="ndcg").fit(X, y, qid=qid).coef_)
    assert huge.metric == f"ndcg@{k}"  # the parameter is kept as given
    # k also shapes the graded restarts of the likelihood
    for objective in ("l3", "likelihood"):
        state = LogRankLoss(objective, metric=f"ndcg@{k}", sampler="walk").prepare(
            y, qid, random_state=0)
        expected = LogRankLoss(objective, metric=f"ndcg@{longest}", sampler="walk").prepare(
            y, qid, random_state=0)
        np.testing.assert_array_equal(state.per_row["coef"], expected.per_row["coef"])
        np.testing.assert_array_equal(state.per_query["gains"], expected.per_query["gains"])


@pytest.mark.parametrize("walk_length", [7, 8, *HUGE])
def test_walk_longer_than_the_sample_is_one_walk(walk_length, data):
    _, y, qid = data
    state = LogRankLoss(n_rankings=7, walk_length=walk_length).prepare(y, qid, random_state=0)
    expected = LogRankLoss(n_rankings=7, walk_length=7).prepare(y, qid, random_state=0)
    for key in ("coef", "ranks"):
        np.testing.assert_array_equal(state.per_row[key], expected.per_row[key])
    np.testing.assert_array_equal(state.per_query["gains"], expected.per_query["gains"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls", [ListNetRanker, SoftRankRanker, BoltzRankRanker],
                         ids=lambda c: c.__name__)
def test_huge_batch_size_is_one_batch_of_all_queries(cls, value, data):
    X, y, qid = data
    n_queries = len(np.unique(qid))
    got = _fast(cls, batch_size=value, early_stopping=False).fit(X, y, qid=qid)
    expected = _fast(cls, batch_size=n_queries, early_stopping=False).fit(X, y, qid=qid)
    np.testing.assert_array_equal(got.predict(X, qid=qid), expected.predict(X, qid=qid))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
def test_huge_n_jobs_runs_every_run_at_once(value, data):
    X, y, qid = data
    got = _fast(ListNetRanker, n_init=2, n_jobs=value).fit(X, y, qid=qid)
    expected = _fast(ListNetRanker, n_init=2).fit(X, y, qid=qid)
    np.testing.assert_array_equal(got.coef_, expected.coef_)
    _fast(ListNetRanker, n_init=2, n_jobs=-value).fit(X, y, qid=qid)  # joblib: one worker


@pytest.mark.parametrize("value", HUGE)
def test_huge_truncation_and_n_exact_of_softrank_are_no_limit(value, rng):
    qid = np.repeat([0, 1, 2], [4, 7, 2])
    y, scores = _small_queries(rng, qid)

    def loss(**params):
        return SoftRankLoss(**params).value_and_grad(scores, SoftRankLoss(**params).prepare(y, qid))

    for distribution in ("binomial", "normal", "hybrid"):
        got = loss(rank_distribution=distribution, truncation=value)
        expected = loss(rank_distribution=distribution, truncation=None)
        assert got[0] == expected[0]
        np.testing.assert_array_equal(got[1], expected[1])
    got = loss(rank_distribution="hybrid", n_exact=value)
    expected = loss(rank_distribution="hybrid", n_exact=7)  # every document of every query
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
def test_huge_iteration_limits_are_no_limit(value, data):
    X, y, qid = data
    ranker = ListNetRanker(max_iter=value, n_iter_no_change=2, tol=0.5, random_state=0)
    assert ranker.fit(X, y, qid=qid).n_iter_ <= 10  # the patience stopped it
    for solver in ("adam", "lbfgs"):
        _fast(ListNetRanker, solver=solver, n_iter_no_change=value).fit(X, y, qid=qid)
    assert _fast(LogRankRanker, max_iter=value).fit(X, y, qid=qid).n_iter_ < 1000


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name, low", [
    (ListNetRanker, "n_init", 1),
    (ListNetRanker, "hidden_layer_sizes", 1),
    (LogRankRanker, "n_rankings", 2),
    (BoltzRankRanker, "n_rankings", 2),
    (BoltzRankRanker, "pairwise_hidden_layer_sizes", 1),
], ids=lambda v: getattr(v, "__name__", v))
def test_huge_counts_of_what_the_fit_holds_are_refused(cls, name, low, value, data):
    X, y, qid = data
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\) "
               rf"in the range \[{low}, {2**63 - 1}\]\. Got {value} instead\.$")
    with pytest.raises(InvalidParameterError, match=message):
        _fast(cls, **{name: value}).fit(X, y, qid=qid)


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name", [(LogRankLoss, "n_rankings"), (losses.BoltzRankLoss,
                                                                      "n_rankings")])
def test_huge_sample_counts_of_the_losses_are_refused(cls, name, value):
    with pytest.raises(InvalidParameterError,
                       match=rf"^The '{name}' parameter of {cls.__name__} must be .*\. "
                             rf"Got {value} instead\.$"):
        cls(**{name: value})


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name, message", [
    (ListNetRanker, "hidden_layer_sizes",
     r"^hidden_layer_sizes must hold positive integers; got \(4, {value}\) \(each entry must"
     r" be an int \(not a bool\) in the range \[1, 9223372036854775807\]\)\.$"),
    (BoltzRankRanker, "pairwise_hidden_layer_sizes",
     r"^pairwise_hidden_layer_sizes must be None or one positive number of hidden units, such"
     r" as \(5,\); got \({value},\) \(its entry must be an int \(not a bool\) in the "
     r"range \[1, 9223372036854775807\]\)\.$"),
])
def test_huge_layer_widths_are_refused(cls, name, message, value, data):
    X, y, qid = data
    sizes = (4, value) if name == "hidden_layer_sizes" else (value,)
    with pytest.raises(ValueError, match=message.format(value=value)):
        _fast(cls, **{name: sizes}).fit(X, y, qid=qid)


#: Widths (and runs) an array could hold but no machine's memory: the
#: weights of one layer on make_ranking's 10 features take some 80 TB.
_TOO_WIDE = 10**12


@pytest.mark.parametrize("cls, params, shown, lower", [
    (ListNetRanker, {"hidden_layer_sizes": (_TOO_WIDE,)},
     r"hidden_layer_sizes=\(1000000000000,\) makes", "hidden_layer_sizes"),
    (ListNetRanker, {"hidden_layer_sizes": _TOO_WIDE},
     r"hidden_layer_sizes=1000000000000 makes", "hidden_layer_sizes"),
    (SoftRankRanker, {"hidden_layer_sizes": (4, _TOO_WIDE)},
     r"hidden_layer_sizes=\(4, 1000000000000\) makes", "hidden_layer_sizes"),
    (LogRankRanker, {"hidden_layer_sizes": (_TOO_WIDE,)},
     r"hidden_layer_sizes=\(1000000000000,\) makes", "hidden_layer_sizes"),
    (BoltzRankRanker, {"pairwise_hidden_layer_sizes": (_TOO_WIDE,), "n_init": 2},
     r"hidden_layer_sizes=\(5,\) and pairwise_hidden_layer_sizes=\(1000000000000,\) make",
     "hidden_layer_sizes or pairwise_hidden_layer_sizes or n_init"),
    (ListNetRanker, {"n_init": _TOO_WIDE}, r"hidden_layer_sizes=\(\) makes", "n_init"),
], ids=["ListNet", "ListNet-int", "SoftRank", "LogRank", "BoltzRank-pairwise", "n_init"])
def test_layer_widths_beyond_any_memory_are_refused_naming_them(cls, params, shown, lower,
                                                               data):
    """Was numpy's MemoryError about a boolean array (or, below a few TB, the OOM killer)."""
    X, y, qid = data
    with pytest.raises(MemoryError, match=rf"^{shown} a network of \d+ parameters on 10 "
                                          r"features, whose fit needs at least [\d.]+ [TP]iB "
                                          r"\(.* starting points? and a gradient, and the hidden "
                                          r"activations of a query of 5 rows\), more than the "
                                          rf".* of memory available now; lower {lower}\.$"):
        _fast(cls, **params).fit(X, y, qid=qid)


def test_partial_fit_refuses_a_network_beyond_the_memory_available(data, memory_available):
    X, y, qid = data
    ranker = _fast(ListNetRanker, hidden_layer_sizes=(1000,), n_init=3)
    # 12,000 parameters: a start and a gradient, 192,000 bytes, and 2 x 5 x 1000 x 8 bytes of
    # activations of a query
    memory_available(271_999)
    with pytest.raises(MemoryError, match=r"^hidden_layer_sizes=\(1000,\) makes a network of "
                                          r"12000 parameters on 10 features, whose fit needs "
                                          r"at least 265\.6 KiB \(1 starting point and a "
                                          r"gradient, and the hidden activations of a query of "
                                          r"5 rows\), more than the 265\.6 KiB of memory "
                                          r"available now; lower hidden_layer_sizes\.$"):
        ranker.partial_fit(X, y, qid=qid)
    assert not hasattr(ranker, "coefs_")
    with pytest.raises(MemoryError, match=r"fit needs at least 453\.1 KiB \(n_init=3 starting "
                                          r"points and a gradient, .* lower hidden_layer_sizes "
                                          r"or n_init\.$"):
        ranker.fit(X, y, qid=qid)
    memory_available(272_000)
    ranker.partial_fit(X, y, qid=qid)
    assert ranker.coefs_[0].shape == (10, 1000)


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
def test_every_integer_parameter_takes_a_huge_value_or_refuses_it(cls, name, value, data):
    X, y, qid = data
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


# 4. bool as an integer ------------------------------------------------------
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
def test_bool_is_not_an_integer_parameter(cls, name, value, data):
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\)"
               rf".*\. Got {value!r} instead\.$")
    _refused_on_build_or_fit(cls, name, value, message, data)


def _refused_on_build_or_fit(cls, name, value, message, data):
    """``cls`` refuses ``{name: value}`` when built (a loss) or fitted, with ``message``."""
    if issubclass(cls, ListwiseLoss):
        with pytest.raises(InvalidParameterError, match=message):
            cls(**{name: value})
        return
    X, y, qid = data
    with pytest.raises(InvalidParameterError, match=message):
        _build(cls, **{name: value}).fit(X, y, qid=qid)


@pytest.mark.parametrize("cls, name", INTEGER_PARAMETERS,
                         ids=[f"{c.__name__}.{n}" for c, n in INTEGER_PARAMETERS])
def test_timedelta_is_not_an_integer_parameter(cls, name, data):
    # numpy registers np.timedelta64 as a numbers.Integral; comparing it
    # with a bound raised numpy's UFuncTypeError, or it was taken as 3
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*an int \(not a bool\)"
               r".*\. Got (np|numpy)\.timedelta64\(3\) instead\.$")
    _refused_on_build_or_fit(cls, name, np.timedelta64(3), message, data)


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
def test_bool_is_not_a_float_parameter(cls, name, value, data):
    # bool is a numbers.Real: scikit-learn's Interval(Real, ...) took True as 1.0
    message = (rf"^The '{name}' parameter of {cls.__name__} must be .*a float \(not a bool\)"
               rf".*\. Got {re.escape(repr(value))} instead\.$")
    _refused_on_build_or_fit(cls, name, value, message, data)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_float_parameter_still_takes_an_int_and_error_score_nan(data):
    X, y, qid = data
    _fast(ListNetRanker, alpha=1, tol=0, momentum=1).fit(X, y, qid=qid)
    search = skrank.RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=2, error_score=np.nan)
    assert search.fit(X, y, qid=qid).best_params_ == {"alpha": 1.0}


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


# Found after the 8 causes ----------------------------------------------------
# issue 27, found by a fuzzing review: a callable metric's wrong return and
# ragged nested sequences gave numpy's or Python's message without the name.
_TWO_VALUES = (r"^the metric '<lambda>' of make_ranking_scorer\('<lambda>'\) must return "
               r"one number \(the mean over queries\); got ndarray of shape \(2,\)")


def _two_values_scorer():
    return skrank.metrics.make_ranking_scorer(lambda yt, ys, *, qid: np.ones(2))


def test_metric_returning_an_array_is_named_by_the_scorer(data):
    X, y, qid = data
    with pytest.raises(TypeError, match=_TWO_VALUES):
        _two_values_scorer()(Ridge().fit(X, y), X, y, qid=qid)


def test_metric_returning_an_array_is_named_by_a_rankers_scoring(data):
    X, y, qid = data
    with pytest.raises(TypeError, match=_TWO_VALUES):
        _fast(ListNetRanker, early_stopping=True, scoring=_two_values_scorer()).fit(
            X, y, qid=qid, X_val=X, y_val=y, qid_val=qid)


def test_metric_returning_an_array_is_named_by_cross_validate_ranker(data):
    X, y, qid = data
    with pytest.raises(TypeError, match=_TWO_VALUES):
        skrank.model_selection.cross_validate_ranker(
            Ridge(), X, y, qid=qid, scoring=_two_values_scorer(), cv=2)


def test_metric_returning_an_array_is_named_by_permutation_importance(data):
    X, y, qid = data
    with pytest.raises(TypeError, match=_TWO_VALUES):
        skrank.inspection.permutation_importance(
            Ridge().fit(X, y), X, y, qid=qid, scoring=_two_values_scorer())


_RAGGED = [[1], [2, 3]]


def _ragged_message(name):
    return (rf"^{name} must be a 1-D array of numbers; got a ragged nested sequence "
            r"\(\[\[1\], \[2, 3\]\]\)\.$")


def test_ragged_labels_are_named_by_the_losses():
    with pytest.raises(ValueError, match=_ragged_message("y")) as info:
        ListNetLoss().prepare(_RAGGED, [0, 0])
    assert "inhomogeneous" in str(info.value.__cause__)  # numpy's message is the cause


@pytest.mark.parametrize("cls", RANKERS)
def test_ragged_labels_are_named_by_fit(cls):
    with pytest.raises(ValueError, match=_ragged_message("y")):
        _fast(cls).fit(np.ones((2, 2)), _RAGGED, qid=[0, 0])


def test_ragged_validation_labels_are_named_by_fit(data):
    X, y, qid = data
    with pytest.raises(ValueError, match=_ragged_message("y_val")):
        _fast(ListNetRanker, early_stopping=True).fit(
            X, y, qid=qid, X_val=X[:2], y_val=_RAGGED, qid_val=[0, 0])


@pytest.mark.parametrize("metric", METRICS)
def test_ragged_sample_weight_is_named_by_the_metrics(metric):
    with pytest.raises(ValueError, match=_ragged_message("sample_weight")):
        metric([1, 0], [1, 0], qid=[0, 0], sample_weight=_RAGGED)


def test_ragged_sample_weight_is_named_by_fit(data):
    X, y, qid = data
    weight = [[1]] + [[1, 2]] * (len(y) - 1)
    with pytest.raises(ValueError, match=r"^sample_weight must be a 1-D array of numbers; "
                                         r"got a ragged nested sequence \(\[\[1\], \[1, 2\]"):
        _fast(ListNetRanker).fit(X, y, qid=qid, sample_weight=weight)


# Dates as features -----------------------------------------------------------
# numpy's DTypePromotionError (a DataFrame with a datetime column) named
# neither X nor the column; a datetime64 array was cast to a count of days.
def _dated(X):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["t"] = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(len(X)), unit="D")
    return frame


def _numeric(X):
    frame = _dated(X)
    frame["t"] = 0.0
    return frame


_DATED = r"^X must hold numbers, but its column 't' has dtype datetime64\[\w+\]\. Dates, times"


def _fitted_on_numbers(cls, X, y, qid):
    return _fast(cls).fit(_numeric(X), y, qid=qid)


_RANKER_METHODS = [(cls, method) for cls in RANKERS
                   for method in ("fit", "partial_fit", "predict", "score")
                   if hasattr(_fast(cls), method)]  # LogRank has no partial_fit


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls, method", _RANKER_METHODS,
                         ids=[f"{c.__name__}.{m}" for c, m in _RANKER_METHODS])
def test_a_date_column_is_named_by_the_rankers(cls, method, data):
    X, y, qid = data
    with pytest.raises(TypeError, match=_DATED):
        if method in ("fit", "partial_fit"):
            getattr(_fast(cls), method)(_dated(X), y, qid=qid)
        elif method == "predict":
            _fitted_on_numbers(cls, X, y, qid).predict(_dated(X), qid=qid)
        else:
            _fitted_on_numbers(cls, X, y, qid).score(_dated(X), y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_date_column_of_the_validation_set_is_named(data):
    X, y, qid = data
    with pytest.raises(TypeError, match=r"^X_val must hold numbers, but its column 't' has "
                                        r"dtype datetime64"):
        _fast(ListNetRanker).fit(_numeric(X), y, qid=qid, X_val=_dated(X), y_val=y,
                                 qid_val=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("call", ["QueryNormalizer.fit", "QueryNormalizer.transform",
                                  "cross_validate_ranker", "RankerSearchCV.fit",
                                  "permutation_importance"])
def test_a_date_column_is_named_by_the_other_entry_points(call, data):
    # with an estimator from outside skrank too (Ridge): the check is skrank's own
    X, y, qid = data
    dated = _dated(X)
    calls = {
        "QueryNormalizer.fit": lambda: skrank.QueryNormalizer().fit(dated, qid=qid),
        "QueryNormalizer.transform": lambda: skrank.QueryNormalizer().fit(
            _numeric(X), qid=qid).transform(dated, qid=qid),
        "cross_validate_ranker": lambda: skrank.cross_validate_ranker(
            Ridge(), dated, y, qid=qid, cv=2),
        "RankerSearchCV.fit": lambda: skrank.RankerSearchCV(
            Ridge(), {"alpha": [1.0]}, cv=2).fit(dated, y, qid=qid),
        "permutation_importance": lambda: skrank.inspection.permutation_importance(
            Ridge().fit(_numeric(X), y), dated, y, qid=qid),
    }
    with pytest.raises(TypeError, match=_DATED):
        calls[call]()


def test_date_and_duration_columns_and_arrays_are_named(data):
    X, y, qid = data
    frame = _dated(X)
    frame["d"] = frame["t"] - frame["t"].iloc[0]
    frame["t"] = frame["t"].dt.tz_localize("UTC")
    with pytest.raises(TypeError, match=r"^X must hold numbers, but its columns 't' "
                                        r"\(datetime64\[\w+, UTC\]\), 'd' \(timedelta64\[\w+\]\) "
                                        r"have date, time or duration dtypes\."):
        _fast(ListNetRanker).fit(frame, y, qid=qid)
    days = np.datetime64("2020-01-01") + np.arange(len(y)).reshape(-1, 1)
    with pytest.raises(TypeError, match=r"^X must hold numbers, but it is an array of dtype "
                                        r"datetime64\[D\]\."):
        _fast(ListNetRanker).fit(days, y, qid=qid)


@pytest.mark.parametrize("kind", ["list", "object array", "timedelta list"])
def test_numpy_dates_in_a_list_or_object_array_are_named(kind, data):
    # scikit-learn would turn them into a count of days without a word
    _, y, qid = data
    if kind == "timedelta list":
        values = [[np.timedelta64(i, "D")] for i in range(len(y))]
    else:
        values = [[np.datetime64("2020-01-01") + i] for i in range(len(y))]
    X = np.array(values, dtype=object) if kind == "object array" else values
    with pytest.raises(TypeError, match=r"^X must hold numbers, but (it holds numpy datetime64 "
                                        r"or timedelta64 values|it is an array of dtype)"):
        _fast(ListNetRanker).fit(X, y, qid=qid)
