"""skrank.export's ONNX graphs, run by ONNX Runtime and compared with predict.

Every test needs onnx, skl2onnx and onnxruntime (the 'onnx' extra): it skips
without them and fails under ``CI=true``.
"""

import inspect
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, QuantileTransformer, StandardScaler

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    make_ranking,
)
from skrank.export import register_onnx_converters, to_onnx
from skrank.preprocessing import QueryNormalizer

STOCHASTIC = (ListNetRanker, SoftRankRanker, BoltzRankRanker)
ACTIVATIONS = ("tanh", "scaled_tanh", "relu", "logistic")
#: max |ONNX Runtime - predict| / the scores' largest magnitude
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}


@pytest.fixture(autouse=True)
def _onnx_packages(installed):
    for module in ("onnx", "skl2onnx", "onnxruntime"):
        installed(module, "onnx")


@pytest.fixture(scope="module")
def data():
    """30 queries of 3..12 documents, 5 features."""
    return make_ranking(n_queries=30, n_docs=(3, 12), n_features=5, noise=0.5, random_state=0)


def _fit(model, X, y, qid, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if hasattr(model, "steps"):
            fit_params = {f"{name}__qid": qid for name, step in model.steps
                          if hasattr(step, "fit") and _takes_qid(step.fit)}
            return model.fit(X, y, **fit_params)
        return model.fit(X, y, qid=qid)


def _takes_qid(method):
    return "qid" in inspect.signature(method).parameters


def _run(onnx_model, X):
    import onnxruntime

    session = onnxruntime.InferenceSession(
        onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": X})[0]


def _predict_query(model, X):
    """``predict`` of the rows of one query (a pipeline's steps given qid where they take it)."""
    qid = np.zeros(X.shape[0], dtype=int)
    if not hasattr(model, "steps"):
        return model.predict(X, qid=qid)
    for _, step in model.steps[:-1]:
        if step is None or step == "passthrough":
            continue
        params = {"qid": qid} if _takes_qid(step.transform) else {}
        X = step.transform(X, **params)
    return model.steps[-1][1].predict(X, qid=qid)


def _assert_matches(model, X, qid, dtype):
    """ONNX Runtime on each query of X equals predict on it, within TOLERANCE[dtype]."""
    import onnx

    onnx_model = to_onnx(model, dtype=dtype)
    onnx.checker.check_model(onnx_model)
    for q in np.unique(qid):
        rows = X[qid == q].astype(dtype)
        expected = _predict_query(model, rows)
        got = _run(onnx_model, rows)
        assert got.dtype == np.dtype(dtype) and got.shape == (rows.shape[0], 1)
        scale = max(np.abs(expected).max(), np.finfo(dtype).tiny)
        assert np.abs(got.ravel() - expected).max() <= TOLERANCE[dtype] * scale


#: The networks of the stochastic rankers: linear, or an MLP of each activation.
NETWORKS = {"linear": {"hidden_layer_sizes": ()},
            **{f"mlp-{a}": {"hidden_layer_sizes": (6, 4), "activation": a} for a in ACTIVATIONS}}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("network", list(NETWORKS))
@pytest.mark.parametrize("cls", STOCHASTIC, ids=lambda c: c.__name__)
def test_ranker_graph_equals_predict(cls, network, dtype, data):
    X, y, qid = data
    model = _fit(cls(max_iter=3, random_state=0, **NETWORKS[network]), X, y, qid)
    _assert_matches(model, X, qid, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("output_activation", ["tanh", "scaled_tanh", "logistic"])
def test_output_activations(output_activation, dtype, data):
    X, y, qid = data
    model = _fit(BoltzRankRanker(hidden_layer_sizes=(6, 4), activation="relu",
                                 output_activation=output_activation, n_init=1, max_iter=3,
                                 random_state=0), X, y, qid)
    _assert_matches(model, X, qid, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logrank_graph_equals_predict(dtype, data):
    X, y, qid = data
    y = (y >= 2).astype(float)  # LogRank's binary relevance
    model = _fit(LogRankRanker(max_iter=5, random_state=0), X, y, qid)
    _assert_matches(model, X, qid, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hidden,activation,output_activation", [
    ((), "tanh", "identity"), ((), "scaled_tanh", "identity"), ((4,), "tanh", "identity"),
    ((4,), "relu", "logistic"), ((4,), "logistic", "tanh"), ((4,), "scaled_tanh", "scaled_tanh"),
])
def test_boltzrank2_graph_equals_predict(hidden, activation, output_activation, dtype, data):
    X, y, qid = data
    model = _fit(BoltzRankRanker(hidden_layer_sizes=hidden, pairwise_hidden_layer_sizes=(3,),
                                 activation=activation, output_activation=output_activation,
                                 n_init=1, max_iter=3, random_state=0), X, y, qid)
    _assert_matches(model, X, qid, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n_docs", [1, 3000])
@pytest.mark.parametrize("pairwise", [False, True], ids=["mlp", "boltzrank2"])
def test_queries_of_one_and_of_3000_documents(pairwise, n_docs, dtype, data):
    X, y, qid = data
    params = {"pairwise_hidden_layer_sizes": (2,)} if pairwise else {}
    model = _fit(BoltzRankRanker(hidden_layer_sizes=(4,), n_init=1, max_iter=2,
                                 random_state=0, **params), X, y, qid)
    rows = np.random.RandomState(1).normal(size=(n_docs, X.shape[1]))
    _assert_matches(model, rows, np.zeros(n_docs, dtype=int), dtype)


PIPELINES = {
    "standard": lambda: make_pipeline(StandardScaler(), ListNetRanker(max_iter=3, random_state=0)),
    "minmax-mlp": lambda: make_pipeline(
        MinMaxScaler(), ListNetRanker(hidden_layer_sizes=(4,), max_iter=3, random_state=0)),
    "quantile": lambda: make_pipeline(
        QuantileTransformer(n_quantiles=20), SoftRankRanker(max_iter=3, random_state=0)),
    "query-minmax": lambda: make_pipeline(
        QueryNormalizer(), ListNetRanker(hidden_layer_sizes=(4,), max_iter=3, random_state=0)),
    "scaler-query-zscore-boltzrank2": lambda: make_pipeline(
        StandardScaler(), QueryNormalizer(method="zscore"),
        BoltzRankRanker(pairwise_hidden_layer_sizes=(3,), n_init=1, max_iter=2,
                        random_state=0)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(PIPELINES))
def test_pipeline_graph_equals_predict(name, dtype, data):
    X, y, qid = data
    X = X.copy()
    X[qid == qid[0], 0] = 3.0  # a feature constant in a query: QueryNormalizer maps it to 0
    model = _fit(PIPELINES[name](), X, y, qid)
    _assert_matches(model, X, qid, dtype)


def test_skl2onnx_converts_after_registration(data):
    # the documented route for skl2onnx's own to_onnx
    import skl2onnx

    X, y, qid = data
    model = _fit(make_pipeline(StandardScaler(), QueryNormalizer(),
                               ListNetRanker(hidden_layer_sizes=(3,), max_iter=3,
                                             random_state=0)), X, y, qid)
    register_onnx_converters()
    onnx_model = skl2onnx.to_onnx(model, X[:1].astype(np.float32))
    rows = X[qid == 0].astype(np.float32)
    got = _run(onnx_model, rows).ravel()
    assert np.abs(got - _predict_query(model, rows)).max() <= 1e-5 * np.abs(got).max()


def test_several_queries_at_once_are_one_query(data):
    X, y, qid = data
    rows = X[qid < 3]
    # row-wise model: any number of queries at once gives predict's scores
    ranker = _fit(ListNetRanker(hidden_layer_sizes=(4,), max_iter=3, random_state=0), X, y, qid)
    got = _run(to_onnx(ranker, dtype="float64"), rows).ravel()
    np.testing.assert_allclose(got, ranker.predict(rows), rtol=1e-12, atol=1e-12)
    # per-query step: the rows are normalised together, as predict with one qid
    piped = _fit(make_pipeline(QueryNormalizer(), ListNetRanker(max_iter=3, random_state=0)),
                 X, y, qid)
    got = _run(to_onnx(piped, dtype="float64"), rows).ravel()
    np.testing.assert_allclose(got, _predict_query(piped, rows), rtol=1e-12, atol=1e-12)
    per_query = piped[-1].predict(piped[0].transform(rows, qid=qid[qid < 3]))
    assert np.abs(got - per_query).max() > 1e-3


class _Unknown(TransformerMixin, BaseEstimator):
    """A transformer that neither skl2onnx nor skrank can convert."""

    def fit(self, X, y=None):
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        return np.sqrt(np.abs(X))


def test_unconvertible_step_is_named(data):
    X, y, qid = data
    model = _fit(make_pipeline(_Unknown(), ListNetRanker(max_iter=2, random_state=0)),
                 X, y, qid)
    with pytest.raises(ValueError, match=r"^Pipeline cannot be exported to ONNX: its step "
                                         r"'_unknown' \(_Unknown\) has no ONNX converter in "
                                         r"skl2onnx or skrank; only steps"):
        to_onnx(model)


@pytest.mark.parametrize("dtype", ["int64", "float16", "banana", None])
def test_bad_dtype(dtype, data):
    X, y, qid = data
    model = _fit(ListNetRanker(max_iter=2, random_state=0), X, y, qid)
    with pytest.raises(ValueError, match=f"dtype must be 'float32' or 'float64'; got {dtype!r}"):
        to_onnx(model, dtype=dtype)


@pytest.mark.parametrize("opset", [12, 0, 13.0, "13", True])
def test_bad_target_opset(opset, data):
    X, y, qid = data
    model = _fit(ListNetRanker(max_iter=2, random_state=0), X, y, qid)
    with pytest.raises(ValueError, match=f"target_opset must be an integer of at least 13; "
                                         f"got {opset!r}"):
        to_onnx(model, target_opset=opset)


def test_older_opsets_give_the_same_graph_values(data):
    # opset 13 (reductions' axes as attributes) and the newest (axes as inputs)
    X, y, qid = data
    model = _fit(make_pipeline(QueryNormalizer(method="zscore"), BoltzRankRanker(
        pairwise_hidden_layer_sizes=(2,), n_init=1, max_iter=2, random_state=0)), X, y, qid)
    rows = X[qid == 1]
    old = _run(to_onnx(model, dtype="float64", target_opset=13), rows)
    new = _run(to_onnx(model, dtype="float64"), rows)
    np.testing.assert_allclose(old, new, rtol=1e-12)
    np.testing.assert_allclose(old.ravel(), _predict_query(model, rows), rtol=1e-10)


def test_unfitted_model_is_refused():
    with pytest.raises(NotFittedError):
        to_onnx(ListNetRanker())


def test_import_skrank_does_not_import_onnx():
    code = ("import sys, skrank, skrank.export; "
            "print(sorted(m for m in ('onnx', 'skl2onnx', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_passthrough_steps_are_left_out(data):
    X, y, qid = data
    model = _fit(Pipeline([("a", "passthrough"), ("s", StandardScaler()), ("b", None),
                           ("r", ListNetRanker(hidden_layer_sizes=(3,), max_iter=2,
                                               random_state=0))]), X, y, qid)
    _assert_matches(model, X, qid, "float64")


def test_unfitted_step_is_named(data):
    X, y, qid = data
    ranker = _fit(ListNetRanker(max_iter=2, random_state=0), X, y, qid)
    with pytest.raises(NotFittedError, match="This StandardScaler instance is not fitted"):
        to_onnx(make_pipeline(StandardScaler(), ranker))


@pytest.mark.parametrize("case", ["transformer", "classifier"])
def test_a_model_that_gives_no_scores_is_refused(case, data):
    X, y, qid = data
    if case == "transformer":
        model, match = QueryNormalizer().fit(X, qid=qid), "the model is a QueryNormalizer"
    else:
        model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y > 1)
        match = "its last step 'logisticregression' is a LogisticRegression"
    with pytest.raises(ValueError, match=f"^to_onnx exports a model that scores documents: "
                                         f".*; {match}\\.$"):
        to_onnx(model)


def test_a_regressor_pipeline_is_exported(data):
    X, y, qid = data
    model = make_pipeline(StandardScaler(), Ridge()).fit(X, y)
    got = _run(to_onnx(model, dtype="float64"), X)
    np.testing.assert_allclose(got.ravel(), model.predict(X), rtol=1e-10, atol=1e-12)


def test_target_opset_beyond_skl2onnx_is_refused(data):
    import skl2onnx

    X, y, qid = data
    model = _fit(ListNetRanker(max_iter=2, random_state=0), X, y, qid)
    newest = skl2onnx.__max_supported_opset__
    with pytest.raises(ValueError, match=f"target_opset must be at most {newest}, the newest "
                                         f"opset skl2onnx .* writes; got {newest + 1}"):
        to_onnx(model, target_opset=newest + 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_model_fitted_on_float32(dtype, data):
    X, y, qid = data
    model = _fit(BoltzRankRanker(hidden_layer_sizes=(4,), pairwise_hidden_layer_sizes=(2,),
                                 restarts="best", n_init=2, max_iter=2, random_state=0),
                 X.astype(np.float32), y, qid)
    _assert_matches(model, X, qid, dtype)


def test_query_normalizer_single_documents_and_extreme_values(data):
    X, y, qid = data
    model = _fit(make_pipeline(QueryNormalizer(method="zscore"),
                               ListNetRanker(hidden_layer_sizes=(3,), max_iter=2,
                                             random_state=0)), X, y, qid)
    rows = X[qid == 2].copy()
    rows[:, 0] = np.arange(len(rows)) * 1e307
    rows[0, 0] = -1.5e308  # x - min overflows unscaled
    rows[:, 1] = rows[:, 1] * 1e-300
    for query in (rows, rows[:1]):  # a single document: every feature maps to 0
        got = _run(to_onnx(model, dtype="float64"), query).ravel()
        expected = _predict_query(model, query)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_features_with_a_large_offset_need_a_float64_graph(data):
    # skl2onnx's MinMaxScaler computes in the graph's dtype: float64 keeps the digits
    X, y, qid = data
    X = 2000.0 + X / 100.0  # year-like features
    model = _fit(make_pipeline(MinMaxScaler(), ListNetRanker(hidden_layer_sizes=(4,),
                                                             max_iter=3, random_state=0)),
                 X, y, qid)
    _assert_matches(model, X, qid, "float64")


def test_missing_packages_say_how_to_install(monkeypatch, data):
    X, y, qid = data
    model = _fit(ListNetRanker(max_iter=2, random_state=0), X, y, qid)
    monkeypatch.setitem(sys.modules, "skl2onnx", None)  # import skl2onnx fails
    with pytest.raises(ImportError, match=r"needs the optional packages onnx and skl2onnx .*"
                                          r"pip install 'skrank\[onnx\]'"):
        to_onnx(model)


@pytest.mark.parametrize("attribute, index, value, dtype, match", [
    ("coef_", (1,), np.nan, "float64",
     r"ListNetRanker has a non-finite weight: coef_\[1\] = nan; a diverged fit"),
    ("coefs_", (1, 2, 0), np.inf, "float64",
     r"ListNetRanker has a non-finite weight: coefs_\[1\]\[2\]\[0\] = inf"),
    ("coef_", (0,), 1e300, "float32",
     r"ListNetRanker has a weight beyond the largest float32 \(3.403e\+38\): coef_\[0\] = "
     r"1e\+300; export it with dtype='float64'"),
])
def test_weights_a_graph_cannot_hold_are_refused(attribute, index, value, dtype, match, data):
    # a graph with such a weight scores every document NaN or infinite
    hidden = (3,) if attribute == "coefs_" else ()
    ranker = _fit(ListNetRanker(hidden_layer_sizes=hidden, max_iter=2, random_state=0), *data)
    weights = getattr(ranker, attribute)
    if isinstance(weights, list):
        weights[index[0]][index[1:]] = value
    else:
        weights[index] = value
    with pytest.raises(ValueError, match=match):
        to_onnx(ranker, dtype=dtype)
