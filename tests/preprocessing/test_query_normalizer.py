"""QueryNormalizer (skrank/preprocessing/_query_normalizer.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline, make_pipeline

from skrank import ListNetRanker
from skrank.preprocessing import QueryNormalizer

from tests._inputs import TWENTY_EPOCHS, no_warnings

METHODS = ["minmax", "zscore"]


def _loop_normalize(X, qid, method):
    """Per-query normalisation written as a plain loop over queries."""
    X = np.asarray(X, dtype=np.float64)
    qid = np.asarray(qid)
    out = np.empty_like(X)
    for q in set(qid.tolist()):
        rows = np.flatnonzero(qid == q)
        for j in range(X.shape[1]):
            x = X[rows, j]
            lo, hi = x.min(), x.max()
            if lo == hi:
                out[rows, j] = 0.0
            elif method == "minmax":
                out[rows, j] = (x - lo) / (hi - lo)
            else:
                out[rows, j] = (x - x.mean()) / x.std()
    return out


@pytest.fixture
def ranking_data(rng):
    """Shuffled rows of queries of varied sizes (one of size 1), string ids.

    Column 3 is constant inside every query (but not across queries), and
    column 4 is constant everywhere.
    """
    sizes = [1, 2, 5, 9, 13, 30]
    names = np.array(["q-b", "q-x", "q-a", "q-17", "q-9", "q-c"])
    qid = np.repeat(names, sizes)
    n = qid.shape[0]
    X = np.column_stack(
        [
            rng.normal(size=n),
            rng.exponential(scale=50.0, size=n),
            rng.integers(0, 3, size=n).astype(float),
            np.repeat(rng.normal(size=len(sizes)), sizes),
            np.full(n, 0.1),
        ]
    )
    perm = rng.permutation(n)
    return X[perm], qid[perm]


@pytest.mark.parametrize("method", METHODS)
def test_matches_per_query_loop(ranking_data, method):
    X, qid = ranking_data
    Xt = QueryNormalizer(method=method).fit_transform(X, qid=qid)
    assert Xt.dtype == np.float64
    assert_allclose(Xt, _loop_normalize(X, qid, method), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_integer_qid_not_contiguous(rng, method):
    X = rng.normal(size=(60, 3))
    qid = rng.choice([40, 3, 977, -5], size=60)
    Xt = QueryNormalizer(method=method).fit_transform(X, qid=qid)
    assert_allclose(Xt, _loop_normalize(X, qid, method), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_constant_features_and_single_document_queries_give_zero(
    ranking_data, method
):
    X, qid = ranking_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Xt = QueryNormalizer(method=method).fit_transform(X, qid=qid)
    # 0.1 repeated does not average back to exactly 0.1, so a test on the
    # computed standard deviation would not see this feature as constant.
    assert_array_equal(Xt[:, 3:], 0.0)
    assert_array_equal(Xt[qid == "q-b"], 0.0)
    assert np.all(np.isfinite(Xt))
    assert np.any(Xt[:, :3] != 0.0)


@pytest.mark.parametrize("method", METHODS)
def test_qid_none_is_one_query(ranking_data, method):
    X, _ = ranking_data
    normalizer = QueryNormalizer(method=method)
    assert_allclose(
        normalizer.fit_transform(X),
        _loop_normalize(X, np.zeros(len(X)), method),
        rtol=1e-12,
        atol=1e-12,
    )
    # A single row is a single-document query.
    assert_array_equal(normalizer.transform(X[:1]), 0.0)


def test_minmax_range_per_query(ranking_data):
    X, qid = ranking_data
    Xt = QueryNormalizer().fit_transform(X, qid=qid)
    assert Xt.min() >= 0.0 and Xt.max() <= 1.0
    for q in np.unique(qid):
        block, orig = Xt[qid == q], X[qid == q]
        varying = orig.max(axis=0) > orig.min(axis=0)
        assert_array_equal(block.min(axis=0), 0.0)
        assert_array_equal(block.max(axis=0), np.where(varying, 1.0, 0.0))


def test_zscore_moments_per_query(ranking_data):
    X, qid = ranking_data
    Xt = QueryNormalizer(method="zscore").fit_transform(X, qid=qid)
    n_checked = 0
    for q in np.unique(qid):
        block, orig = Xt[qid == q], X[qid == q]
        varying = orig.max(axis=0) > orig.min(axis=0)
        assert_allclose(block.mean(axis=0), 0.0, atol=1e-12)
        assert_allclose(block.std(axis=0), np.where(varying, 1.0, 0.0), rtol=1e-12)
        n_checked += varying.sum()
    assert n_checked > 10


@pytest.mark.parametrize("method", METHODS)
def test_row_order_invariance(ranking_data, rng, method):
    X, qid = ranking_data
    normalizer = QueryNormalizer(method=method)
    Xt = normalizer.fit_transform(X, qid=qid)
    perm = rng.permutation(len(X))
    assert_allclose(
        normalizer.transform(X[perm], qid=qid[perm]), Xt[perm], rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("method", METHODS)
def test_sorted_input_is_not_modified(rng, method):
    # With qid already sorted there is no reordering copy to hide a write.
    X = rng.normal(size=(12, 2))
    qid = np.repeat([1, 2, 3], 4)
    X_before = X.copy()
    Xt = QueryNormalizer(method=method).fit_transform(X, qid=qid)
    assert_array_equal(X, X_before)
    assert not np.shares_memory(Xt, X)


@pytest.mark.parametrize("method", METHODS)
def test_fit_transform_passes_qid_to_transform(ranking_data, method):
    X, qid = ranking_data
    expected = QueryNormalizer(method=method).fit(X, qid=qid).transform(X, qid=qid)
    Xt = QueryNormalizer(method=method).fit_transform(X, qid=qid)
    assert_array_equal(Xt, expected)
    assert not np.allclose(QueryNormalizer(method=method).fit_transform(X), expected)


@pytest.mark.parametrize("method", METHODS)
def test_extreme_values_stay_finite(method):
    # x - min overflows here for a naive implementation.
    X = np.array([[-1e308, 5e-324], [1e308, 0.0], [0.0, 1e-323], [7.0, 8.0]])
    qid = [0, 0, 0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Xt = QueryNormalizer(method=method).fit_transform(X, qid=qid)
    assert np.all(np.isfinite(Xt))
    if method == "minmax":
        assert_allclose(Xt, [[0.0, 0.5], [1.0, 0.0], [0.5, 1.0], [0.0, 0.0]])
    else:
        s = np.sqrt(1.5)
        assert_allclose(Xt, [[-s, 0.0], [s, -s], [0.0, s], [0.0, 0.0]], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    data=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 12), st.integers(1, 3)),
        elements=st.floats(allow_nan=False, allow_infinity=False),
    ),
    seed=st.integers(0, 2**16),
)
def test_property_any_finite_input(data, seed):
    qid = np.random.default_rng(seed).integers(0, 3, size=data.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minmax = QueryNormalizer().fit_transform(data, qid=qid)
        zscore = QueryNormalizer(method="zscore").fit_transform(data, qid=qid)
    assert np.all(np.isfinite(zscore))
    for q in np.unique(qid):
        rows = qid == q
        varying = data[rows].max(axis=0) > data[rows].min(axis=0)
        assert_array_equal(minmax[rows].min(axis=0), 0.0)
        assert_array_equal(minmax[rows].max(axis=0), np.where(varying, 1.0, 0.0))
        assert_allclose(zscore[rows].mean(axis=0), 0.0, atol=1e-9)
        assert_allclose(
            zscore[rows].std(axis=0), np.where(varying, 1.0, 0.0), atol=1e-9
        )


def test_dtypes():
    X = np.array([[1, 4], [3, 4], [2, 0]])
    Xt = QueryNormalizer().fit_transform(X, qid=[5, 5, 5])
    assert Xt.dtype == np.float64
    assert_array_equal(Xt, [[0.0, 1.0], [1.0, 1.0], [0.5, 0.0]])
    Xt32 = QueryNormalizer(method="zscore").fit_transform(
        X.astype(np.float32), qid=[5, 5, 5]
    )
    assert Xt32.dtype == np.float32


@pytest.mark.parametrize("bad_qid", [[0, 0, 1], [0, 0, 1, 1, 2]])
def test_qid_length_mismatch(bad_qid):
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ValueError, match="qid must have one entry per row"):
        QueryNormalizer().fit(X, qid=bad_qid)
    fitted = QueryNormalizer().fit(X)
    with pytest.raises(ValueError, match="qid must have one entry per row"):
        fitted.transform(X, qid=bad_qid)


def test_sparse_input_is_rejected():
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(TypeError, match="dense data is required"):
        QueryNormalizer().fit(sp.csr_matrix(X))
    fitted = QueryNormalizer().fit(X)
    with pytest.raises(TypeError, match="dense data is required"):
        fitted.transform(sp.csr_matrix(X), qid=[0, 0, 1, 1])


def test_bad_method():
    with pytest.raises(ValueError, match="'method' parameter .* Got 'max' instead"):
        QueryNormalizer(method="max").fit(np.ones((3, 2)))


def test_default_metadata_requests(metadata_routing):
    routing = QueryNormalizer().get_metadata_routing()
    assert routing.fit.requests == {"qid": True}
    assert routing.transform.requests == {"qid": True}
    with metadata_routing():
        opted_out = QueryNormalizer().set_transform_request(qid=False)
    assert opted_out.get_metadata_routing().transform.requests == {"qid": False}
    assert opted_out.get_metadata_routing().fit.requests == {"qid": True}


@pytest.mark.parametrize("method", METHODS)
def test_pipeline_routes_qid(ranking_data, rng, method, metadata_routing):
    X, qid = ranking_data
    y = rng.normal(size=len(X))
    X_new, qid_new = X[::2] * 3.0 + 1.0, qid[::2]

    def norm(X, qid=None):
        return QueryNormalizer(method=method).fit_transform(X, qid=qid)

    expected = Ridge().fit(norm(X, qid), y).predict(norm(X_new, qid_new))
    one_query = Ridge().fit(norm(X), y).predict(norm(X_new))
    assert not np.allclose(expected, one_query)

    with metadata_routing():
        pipe = Pipeline([("norm", QueryNormalizer(method=method)), ("ridge", Ridge())])
        pipe.fit(X, y, qid=qid)
        assert_allclose(pipe.predict(X_new, qid=qid_new), expected, rtol=1e-10)

        two_steps = Pipeline(
            [("a", QueryNormalizer(method=method)), ("b", QueryNormalizer())]
        )
        assert_allclose(
            two_steps.fit_transform(X, qid=qid),
            QueryNormalizer().fit_transform(norm(X, qid), qid=qid),
            rtol=1e-12,
            atol=1e-12,
        )


def test_ohsumed_is_already_query_level_normalised(shared_data):
    path = shared_data / "ohsumed" / "Fold1" / "test.txt.gz"
    X, _, qid = load_svmlight_file(str(path), query_id=True, n_features=45)
    X = X.toarray()
    # The LETOR files store six decimals.
    assert_allclose(QueryNormalizer().fit_transform(X, qid=qid), X, rtol=0, atol=1e-6)


def test_method_is_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        QueryNormalizer("zscore")
    assert QueryNormalizer(method="zscore").method == "zscore"


# ----------------------------------------------------------------------------
# qid=None in transform
def test_pipeline_predict_without_qid_warns(thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    with metadata_routing():
        pipe = make_pipeline(QueryNormalizer(), ListNetRanker(**TWENTY_EPOCHS)).fit(X, y, qid=qid)
        with pytest.warns(UserWarning, match="QueryNormalizer was fitted on 30 queries"):
            pipe.predict(X)
        expected = pipe[-1].predict(QueryNormalizer().fit_transform(X, qid=qid))
        context = no_warnings()
        try:
            np.testing.assert_allclose(pipe.predict(X, qid=qid), expected)
        finally:
            context.__exit__(None, None, None)


def test_query_normalizer_fitted_without_qid_transforms_quietly(thirty_queries):
    X, _, _ = thirty_queries
    normalizer = QueryNormalizer().fit(X)
    context = no_warnings()
    try:
        normalizer.transform(X)
    finally:
        context.__exit__(None, None, None)
