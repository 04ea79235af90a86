"""Linear rankers as the Elasticsearch / OpenSearch LTR plugin's ``model/linear``
and as Vespa ranking expressions (skrank/export/_search_engines.py).

The oracles are independent scorers written here from the formats' documents:
the plugin's linear scoring of its JSON (weights times features, each feature
first normalised as its ``feature_normalizers`` entry says) and a small
evaluator of Vespa's arithmetic on rank features. Both must give ``predict``.
"""

import ast
import copy
import json
import operator
import re
import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from skrank.datasets import make_ranking
from skrank.export import to_es_linear, to_vespa_expression
from skrank.preprocessing import QueryNormalizer
from skrank.rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

N_FEATURES = 5
#: Vespa rank features of every kind the docstring names, one per column.
VESPA_NAMES = ["attribute(popularity)", "bm25(title)", "fieldMatch(title).completeness",
               "query(user_age)", "nativeRank"]
ES_NAMES = ["popularity", "title_bm25", "title completeness", "user_age", "native rank"]
#: Features of different offsets and scales, so that a wrong scaling shows;
#: the last is constant in training (zero variance and range for the scalers).
SCALES = np.array([1.0, 10.0, 0.1, 3.0, 0.0])
OFFSETS = np.array([0.0, -50.0, 3.0, 200.0, 7.0])

FAST = {"max_iter": 5, "random_state": 0}
RANKERS = {
    "listnet": lambda: ListNetRanker(hidden_layer_sizes=(), **FAST),
    "softrank": lambda: SoftRankRanker(hidden_layer_sizes=(), **FAST),
    "boltzrank": lambda: BoltzRankRanker(hidden_layer_sizes=(), **FAST),
    "logrank": lambda: LogRankRanker(**FAST),  # always linear
}
SCALINGS = {
    "none": lambda: [],
    "standard": lambda: [StandardScaler()],
    "minmax": lambda: [MinMaxScaler()],
}
#: Further scalings, with ListNet only (the rankers differ only in their coef_).
LISTNET_SCALINGS = {
    "minmax-range": lambda: [MinMaxScaler(feature_range=(-1.0, 2.0))],
    "standard-no-mean": lambda: [StandardScaler(with_mean=False)],
    "standard-no-std": lambda: [StandardScaler(with_std=False)],
    "standard-then-minmax": lambda: [StandardScaler(), MinMaxScaler((-2.0, 0.5))],
    "minmax-then-standard": lambda: [MinMaxScaler(), StandardScaler()],
    "passthrough": lambda: ["passthrough", StandardScaler(), None],
}
CASES = [(r, s) for r in RANKERS for s in SCALINGS] + [
    ("listnet", s) for s in LISTNET_SCALINGS
]


def _data(random_state):
    X, y, qid = make_ranking(n_queries=12, n_docs=6, n_features=N_FEATURES,
                             random_state=random_state)
    return X * SCALES + OFFSETS, y, qid


@pytest.fixture(scope="module")
def train():
    return _data(0)


@pytest.fixture(scope="module")
def unseen_X():
    """New rows, outside the training range; the constant feature varies."""
    X, _, _ = _data(1)
    X[:, -1] = np.random.default_rng(1).normal(7.0, 2.0, size=X.shape[0])
    return 3.0 * X


def _fit(ranker, steps, X, y, qid):
    """``ranker`` alone (no steps) or a Pipeline of ``steps`` and ``ranker``, fitted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if not steps:
            return ranker.fit(X, y, qid=qid)
        model = Pipeline([(f"step{i}", step) for i, step in enumerate(steps)]
                         + [("ranker", ranker)])
        return model.fit(X, y, ranker__qid=qid)


@pytest.fixture(scope="module", params=CASES, ids=[f"{r}-{s}" for r, s in CASES])
def fitted(request, train):
    ranker, scaling = request.param
    steps = {**SCALINGS, **LISTNET_SCALINGS}[scaling]()
    return _fit(RANKERS[ranker](), steps, *train)


def _assert_scores_equal(actual, expected):
    """Equal to 1e-12 relative to the scale of the scores."""
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=1e-12,
                               atol=1e-12 * np.abs(expected).max())


# ----------------------------------------------------------------------------
# The plugin's linear scoring, from the documented JSON
def es_linear_scores(body, names, X):
    """Scores of the rows of ``X`` (columns named ``names``) under the plugin's model.

    Reads the request as the plugin documents it: ``definition`` is the JSON
    text of ``{feature: weight}``, a feature missing from it weighs 0, a name
    not in the featureset is refused, and a ``feature_normalizers`` entry maps
    a feature first (``standard``: ``(x - mean) / standard_deviation``,
    ``min_max``: ``(x - minimum) / (maximum - minimum)``).
    """
    body = json.loads(json.dumps(body))  # what the plugin receives
    assert set(body) == {"model"} and set(body["model"]) == {"name", "model"}
    model = body["model"]["model"]
    assert model["type"] == "model/linear"
    assert isinstance(model["definition"], str)
    weights = json.loads(model["definition"])
    normalizers = model.get("feature_normalizers", {})
    assert set(weights) <= set(names) and set(normalizers) <= set(names)
    scores = np.zeros(X.shape[0])
    for j, name in enumerate(names):
        value = X[:, j]
        if name in normalizers:
            ((kind, params),) = normalizers[name].items()
            if kind == "standard":
                assert params["standard_deviation"] > 0  # the plugin refuses others
                value = (value - params["mean"]) / params["standard_deviation"]
            elif kind == "min_max":
                low, high = params["minimum"], params["maximum"]
                assert 0 <= low < high
                value = (value - low) / (high - low)
            else:
                raise AssertionError(f"unknown normalizer {kind!r}")
        scores = scores + weights.get(name, 0.0) * value
    return scores


# ----------------------------------------------------------------------------
# Vespa's arithmetic on rank features
_NUMBER = r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?"
_FEATURE = r"[A-Za-z_@][\w@$]*(?:\((?:[^()]|\([^()]*\))*\))?(?:\.[\w@$]+)*"
_TOKEN = re.compile(
    rf"\s*(?:(?P<number>{_NUMBER})|(?P<feature>{_FEATURE})|(?P<op>[-+*/()]))")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}


def vespa_scores(expression, names, X):
    """Value of a ranking expression of +, -, *, /, numbers and the features ``names``.

    Tokenised as Vespa's grammar reads numbers and feature references, each
    feature replaced by its column of ``X``; then evaluated node by node, any
    other construct refused.
    """
    columns = {name: j for j, name in enumerate(names)}
    python, position = [], 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        assert match is not None, f"cannot read {expression[position:]!r}"
        if match["feature"] is not None:
            assert match["feature"] in columns, f"unknown feature {match['feature']!r}"
            python.append(f"column_{columns[match['feature']]}")
        else:
            python.append(match["number"] or match["op"])
        position = match.end()

    def evaluate(node):
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](evaluate(node.left), evaluate(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -evaluate(node.operand)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id.startswith("column_"):
            return X[:, int(node.id[len("column_"):])]
        raise AssertionError(f"not Vespa arithmetic: {ast.dump(node)}")

    return evaluate(ast.parse(" ".join(python), mode="eval").body)


def test_the_oracles_score_a_known_model():
    # The evaluators themselves, on a model written by hand.
    X = np.array([[1.0, 2.0], [3.0, -4.0]])
    normalizers = {"b": {"min_max": {"minimum": 0.0, "maximum": 4.0}},
                   "a": {"standard": {"mean": 1.0, "standard_deviation": 2.0}}}
    body = {"model": {"name": "m", "model": {
        "type": "model/linear", "definition": '{"a": 2.0, "b": -0.5}',
        "feature_normalizers": normalizers}}}
    np.testing.assert_array_equal(es_linear_scores(body, ["a", "b"], X),
                                  [2.0 * 0.0 - 0.5 * 0.5, 2.0 * 1.0 - 0.5 * -1.0])
    expression = "2.0 * ((attribute(a) - 1.0) / 2.0) - 5e-1 * attribute(b) + -1 * 2"
    names = ["attribute(a)", "attribute(b)"]
    np.testing.assert_array_equal(vespa_scores(expression, names, X),
                                  [-1.0 - 2.0, 2.0 + 2.0 - 2.0])
    with pytest.raises(AssertionError, match="not Vespa arithmetic"):
        vespa_scores("attribute(a) (2)", ["attribute(a)"], X)  # Python reads a call
    with pytest.raises(AssertionError, match="cannot read"):
        vespa_scores("attribute(a) % 2", ["attribute(a)"], X)
    with pytest.raises(AssertionError, match="unknown feature"):
        vespa_scores("attribute(c)", ["attribute(a)"], X)


# ----------------------------------------------------------------------------
# The exported models score as predict
def test_es_linear_scores_equal_predict(fitted, train, unseen_X):
    body = to_es_linear(fitted, ES_NAMES)
    for X in (train[0], unseen_X):
        _assert_scores_equal(es_linear_scores(body, ES_NAMES, X), fitted.predict(X))


def test_vespa_expression_equals_predict(fitted, train, unseen_X):
    expression = to_vespa_expression(fitted, VESPA_NAMES)
    for X in (train[0], unseen_X):
        scores = vespa_scores(expression, VESPA_NAMES, X)
        _assert_scores_equal(scores, fitted.predict(X))


@pytest.mark.parametrize("ranker", RANKERS)
def test_weights_round_trip_exactly(ranker, train):
    # A unit vector scores its feature's weight: the numbers written are coef_'s.
    model = _fit(RANKERS[ranker](), [], *train)
    unit = np.eye(N_FEATURES)
    body = to_es_linear(model, ES_NAMES)
    np.testing.assert_array_equal(es_linear_scores(body, ES_NAMES, unit), model.coef_)
    expression = to_vespa_expression(model, VESPA_NAMES)
    np.testing.assert_array_equal(vespa_scores(expression, VESPA_NAMES, unit),
                                  model.coef_)


def test_es_body_has_the_documented_layout_and_plain_floats(train):
    model = _fit(RANKERS["listnet"](), [StandardScaler()], *train)
    body = to_es_linear(model, ES_NAMES, name="my_model")
    assert body["model"]["name"] == "my_model"
    inner = body["model"]["model"]
    assert set(inner) == {"type", "definition", "feature_normalizers"}
    assert list(json.loads(inner["definition"])) == ES_NAMES
    assert list(inner["feature_normalizers"]) == ES_NAMES
    scaler = model[0]
    for j, name in enumerate(ES_NAMES):
        ((kind, params),) = inner["feature_normalizers"][name].items()
        assert kind == "standard"
        assert [type(v) for v in params.values()] == [float, float]
        # a StandardScaler alone is written with its own statistics
        assert params == {"mean": scaler.mean_[j],
                          "standard_deviation": scaler.scale_[j]}
    assert json.loads(json.dumps(body)) == body
    # without scaling steps, no feature_normalizers
    plain = to_es_linear(model[-1], ES_NAMES)["model"]["model"]
    assert set(plain) == {"type", "definition"}


@pytest.mark.parametrize("feature_range", [(0.0, 1.0), (-1.0, 2.0)])
def test_minmax_scaler_is_a_standard_normalizer_of_its_statistics(feature_range, train):
    scaling = [MinMaxScaler(feature_range=feature_range)]
    model = _fit(RANKERS["listnet"](), scaling, *train)
    normalizers = to_es_linear(model, ES_NAMES)["model"]["model"]["feature_normalizers"]
    scaler = model[0]
    low, high = feature_range
    # x -> low + (high - low) * (x - data_min_) / range (1 for a constant feature)
    data_range = np.where(scaler.data_range_ > 0, scaler.data_range_, 1.0)
    expected_mean = scaler.data_min_ - low * data_range / (high - low)
    expected_std = data_range / (high - low)
    for j, name in enumerate(ES_NAMES):
        params = normalizers[name]["standard"]
        assert params["mean"] == pytest.approx(expected_mean[j], rel=1e-14, abs=1e-14)
        assert params["standard_deviation"] == pytest.approx(expected_std[j], rel=1e-14)


def test_vespa_expression_writes_each_scaler_in_its_own_order(train):
    model = _fit(RANKERS["listnet"](), [StandardScaler(), MinMaxScaler()], *train)
    expression = to_vespa_expression(model, VESPA_NAMES)
    standard, minmax = model[0], model[1]
    w, m, s = (float(v[1]) for v in (model[-1].coef_, standard.mean_, standard.scale_))
    a, b = float(minmax.scale_[1]), float(minmax.min_[1])
    # feature 1: (x - mean_) / scale_, then * scale_ + min_, then times the weight
    centred = f"bm25(title) {'-' if m > 0 else '+'} {abs(m)!r}"
    shifted = f"(({centred}) / {s!r}) * {a!r} {'+' if b >= 0 else '-'} {abs(b)!r}"
    term = f"{abs(w)!r} * ({shifted})"
    assert f" {'-' if w < 0 else '+'} {term} " in expression


# ----------------------------------------------------------------------------
# Feature names
def test_feature_names_come_from_a_dataframe(train, unseen_X):
    pd = pytest.importorskip("pandas")
    X, y, qid = train
    frame = pd.DataFrame(X, columns=VESPA_NAMES)
    for steps in ([], [StandardScaler()]):
        model = _fit(RANKERS["listnet"](), steps, frame, y, qid)
        frame_test = pd.DataFrame(unseen_X, columns=VESPA_NAMES)
        body = to_es_linear(model)
        assert list(json.loads(body["model"]["model"]["definition"])) == VESPA_NAMES
        _assert_scores_equal(es_linear_scores(body, VESPA_NAMES, unseen_X),
                             model.predict(frame_test))
        expression = to_vespa_expression(model)
        _assert_scores_equal(vespa_scores(expression, VESPA_NAMES, unseen_X),
                             model.predict(frame_test))
        # names given explicitly win over the DataFrame's
        renamed = to_es_linear(model, ES_NAMES)
        assert list(json.loads(renamed["model"]["model"]["definition"])) == ES_NAMES
    # a Pipeline opening with 'passthrough' has no names of its own: the ranker's serve
    model = Pipeline([("skip", "passthrough"), ("ranker", RANKERS["listnet"]())])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(frame, y, ranker__qid=qid)
    assert list(json.loads(to_es_linear(model)["model"]["model"]["definition"])) == VESPA_NAMES


def test_es_refuses_a_deviation_that_is_zero_in_single_precision(linear):
    tiny = _pipeline(StandardScaler().fit(np.eye(N_FEATURES)), copy.deepcopy(linear))
    tiny[0].scale_ = np.where(np.arange(N_FEATURES) == 3, 1e-47, tiny[0].scale_)
    match = (r"the normalizer standard_deviation of feature 'user_age' is 1e-47, which is 0 "
             r"in the single precision")
    with pytest.raises(ValueError, match=match):
        to_es_linear(tiny, ES_NAMES)


@pytest.fixture(scope="module")
def linear(train):
    return _fit(RANKERS["listnet"](), [], *train)


@pytest.mark.parametrize("export", [to_es_linear, to_vespa_expression])
@pytest.mark.parametrize("names, error, match", [
    (None, ValueError, r"feature_names is required.*5 features"),
    (VESPA_NAMES[:4], ValueError,
     r"feature_names has 4 names, but the model has 5 features"),
    (VESPA_NAMES + ["attribute(extra)"], ValueError,
     r"has 6 names, but the model has 5"),
    (VESPA_NAMES[:4] + ["bm25(title)"], ValueError,
     r"feature_names must be unique; 'bm25\(title\)' appears 2 times"),
    (VESPA_NAMES[:4] + [""], ValueError, r"feature_names\[4\] is the empty string"),
    (VESPA_NAMES[:4] + [3], TypeError, r"feature_names\[4\]=3 \(int\)"),
    ("attribute(popularity)", TypeError, r"sequence of strings.*got the string"),
    (5, TypeError, r"feature_names must be a sequence of strings, one per feature; got 5 "
                   r"\(int\)"),
], ids=["missing", "too-few", "too-many", "duplicate", "empty", "not-a-string",
        "a-string", "not-a-sequence"])
def test_bad_feature_names_are_refused(export, names, error, match, linear):
    with pytest.raises(error, match=match):
        export(linear, names)


@pytest.mark.parametrize("name", ["title score", "bm25(title)-1", "3",
                                  "attribute(a) * 2", "attribute(a", "attribute(a))",
                                  "attribute(a).bé", "précision"])
def test_vespa_refuses_a_name_that_is_not_a_rank_feature(name, linear):
    names = VESPA_NAMES[:4] + [name]
    match = r"feature_names\[4\]=.* is not a Vespa rank feature"
    with pytest.raises(ValueError, match=match):
        to_vespa_expression(linear, names)


def test_es_name_must_be_a_non_empty_string(linear):
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        to_es_linear(linear, ES_NAMES, name="")
    with pytest.raises(TypeError, match="name must be a string; got name=3"):
        to_es_linear(linear, ES_NAMES, name=3)


# ----------------------------------------------------------------------------
# What cannot be exported
def _pipeline(*steps):
    return Pipeline([(f"s{i}", step) for i, step in enumerate(steps)])


def _refused_models(X, y, qid):
    """``(model, exception, match)`` of every model the exports refuse."""
    fit = {"X": X, "y": y, "qid": qid}
    mlp = _fit(ListNetRanker(hidden_layer_sizes=(3,), **FAST), [], **fit)
    assert hasattr(mlp, "coefs_") and not hasattr(mlp, "coef_")
    boltzrank2 = _fit(BoltzRankRanker(pairwise_hidden_layer_sizes=(3,),
                                      hidden_layer_sizes=(), **FAST), [], **fit)
    # the ranker accepts the parameters: it has a linear part and a pairwise one
    assert hasattr(boltzrank2, "coef_") and hasattr(boltzrank2, "pairwise_coefs_")
    linear = _fit(RANKERS["listnet"](), [], **fit)
    query_normalized = _pipeline(QueryNormalizer().fit(X, qid=qid), linear)
    pca = _pipeline(PCA(n_components=N_FEATURES).fit(X), linear)
    clipped = _pipeline(MinMaxScaler(clip=True).fit(X), linear)
    diverged = _fit(RANKERS["listnet"](), [], **fit)
    diverged.coef_ = np.where(np.arange(N_FEATURES) == 2, np.nan, diverged.coef_)
    nan_scaler = _pipeline(StandardScaler().fit(X), linear)
    nan_scaler[0].scale_ = np.where(np.arange(N_FEATURES) == 1, np.inf, nan_scaler[0].scale_)
    return {
        "mlp": (mlp, ValueError,
                r"ListNetRanker is not linear: .*hidden layers \(3,\)"),
        "boltzrank2": (boltzrank2, ValueError,
                       r"BoltzRankRanker is not linear: .*pairwise potential"),
        "query-normalizer": (
            query_normalized, ValueError,
            r"step 's0' \(QueryNormalizer\) cannot be exported: .*each query"),
        "pca": (pca, ValueError,
                r"step 's0' \(PCA\) cannot be exported: only StandardScaler"),
        "clip": (clipped, ValueError, r"step 's0' \(MinMaxScaler\) has clip=True"),
        "not-skrank": (
            _pipeline(StandardScaler().fit(X), Ridge().fit(X, y)), ValueError,
            r"step 's1' \(Ridge\) cannot be exported: the model must be a skrank"),
        "unfitted-ranker": (RANKERS["listnet"](), NotFittedError,
                            "ListNetRanker instance is not fitted"),
        "unfitted-scaler": (_pipeline(StandardScaler(), linear), NotFittedError,
                            "StandardScaler instance is not fitted"),
        "mismatched-steps": (
            _pipeline(StandardScaler().fit(X[:, :3]), linear), ValueError,
            r"StandardScaler\) has 3 features but the ranker has 5"),
        "diverged": (diverged, ValueError, r"non-finite weights \(coef_\[2\] = nan\)"),
        "non-finite-scaler": (nan_scaler, ValueError,
                              r"step 's0' \(StandardScaler\) has a non-finite scale_: "
                              r"scale_\[1\] = inf; refit it on finite data"),
        # a class where a fitted model goes: named, not called "type"
        "class": (ListNetRanker, ValueError,
                  r"^the class ListNetRanker cannot be exported: the model must be a skrank"),
    }


REFUSED = ["mlp", "boltzrank2", "query-normalizer", "pca", "clip", "not-skrank",
           "unfitted-ranker", "unfitted-scaler", "mismatched-steps", "diverged",
           "non-finite-scaler", "class"]


@pytest.fixture(scope="module")
def refused(train):
    return _refused_models(*train)


def test_every_refused_case_is_tested(refused):
    assert sorted(refused) == sorted(REFUSED)


@pytest.mark.parametrize("export", [to_es_linear, to_vespa_expression])
@pytest.mark.parametrize("case", REFUSED)
def test_models_that_are_not_linear_are_refused(export, case, refused):
    model, error, match = refused[case]
    names = VESPA_NAMES if export is to_vespa_expression else ES_NAMES
    with pytest.raises(error, match=match):
        export(model, names)


def test_es_refuses_numbers_beyond_single_precision(linear):
    big = _pipeline(StandardScaler().fit(np.eye(N_FEATURES)), copy.deepcopy(linear))
    big[-1].coef_ = np.where(np.arange(N_FEATURES) == 1, 1e39, linear.coef_)
    # 1e39 is finite in double, infinite as a Java float
    match = r"the weight of feature 'title_bm25' is 1e\+39, beyond the single"
    with pytest.raises(ValueError, match=match):
        to_es_linear(big, ES_NAMES)
    # Vespa computes in double: the same model is written
    assert "1e+39 * " in to_vespa_expression(big, VESPA_NAMES)
