"""The bundled sample and the generators (skrank/datasets/_samples.py).

load_rank_sample, make_ranking and make_web_ranking: shapes, the documented
label shares, determinism, and sizes beyond any array or the memory
available, refused naming them.
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skrank.datasets import load_rank_sample, make_ranking, make_web_ranking

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "skrank" / "datasets" / "data"
RANK_SAMPLE_FILES = [
    "rank.train.gz",
    "rank.train.query",
    "rank.test.gz",
    "rank.test.query",
]


# --------------------------------------------------------------------------
# load_rank_sample
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rank_train():
    return load_rank_sample(subset="train")


@pytest.fixture(scope="module")
def rank_test():
    return load_rank_sample(subset="test")


def test_load_rank_sample_shapes_and_groups(rank_train, rank_test):
    X_tr, y_tr, qid_tr = rank_train
    X_te, y_te, qid_te = rank_test
    assert X_tr.shape == (3005, 300)
    assert X_te.shape == (768, 300)
    assert X_tr.dtype == y_tr.dtype == np.float64
    assert qid_tr.dtype == qid_te.dtype == np.int64
    np.testing.assert_array_equal(np.unique(qid_tr), np.arange(201))
    np.testing.assert_array_equal(np.unique(qid_te), np.arange(201, 251))
    assert not set(qid_tr.tolist()) & set(qid_te.tolist())
    # Rows of one query are contiguous, in increasing qid order.
    assert np.all(np.diff(qid_tr) >= 0)
    assert np.all(np.diff(qid_te) >= 0)
    # Label counts from shared/data/README.md.
    counts_tr = np.bincount(y_tr.astype(int))
    counts_te = np.bincount(y_te.astype(int))
    np.testing.assert_array_equal(counts_tr, [645, 1211, 858, 222, 69])
    np.testing.assert_array_equal(counts_te, [206, 256, 252, 44, 10])


def test_load_rank_sample_group_sizes_follow_query_files(rank_train, rank_test):
    for (_, _, qid), name in [(rank_train, "train"), (rank_test, "test")]:
        sizes = np.loadtxt(BUNDLED_DIR / f"rank.{name}.query", dtype=int)
        np.testing.assert_array_equal(np.unique(qid, return_counts=True)[1], sizes)


def test_load_rank_sample_all_and_sparse(rank_train, rank_test):
    X, y, qid = load_rank_sample(subset="all", dense=False)
    assert sp.issparse(X)
    assert X.shape == (3005 + 768, 300)
    X_expected = np.vstack([rank_train[0], rank_test[0]])
    np.testing.assert_array_equal(X.toarray(), X_expected)
    np.testing.assert_array_equal(y, np.concatenate([rank_train[1], rank_test[1]]))
    np.testing.assert_array_equal(qid, np.concatenate([rank_train[2], rank_test[2]]))
    assert np.unique(qid).size == 251


def test_load_rank_sample_rejects_bad_subset():
    with pytest.raises(ValueError, match="'subset' parameter.*Got 'vali'"):
        load_rank_sample(subset="vali")


@pytest.mark.parametrize("name", RANK_SAMPLE_FILES)
def test_bundled_files_identical_to_shared(shared_data, name):
    def sha256(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()

    shared = shared_data / "lightgbm_lambdarank" / name
    assert sha256(BUNDLED_DIR / name) == sha256(shared)


def test_bundled_license_and_readme():
    license_text = (BUNDLED_DIR / "LICENSE_lightgbm_lambdarank.txt").read_text()
    assert "MIT License" in license_text
    assert "Copyright (c) Microsoft Corporation." in license_text
    readme = (BUNDLED_DIR / "README.md").read_text()
    assert "microsoft/LightGBM" in readme
    assert "bae0b7ba953341a32b2a9c5c5c437a1b976f576f" in readme


def test_only_the_lightgbm_sample_is_bundled():
    names = sorted(p.name for p in BUNDLED_DIR.iterdir())
    assert names == sorted(
        RANK_SAMPLE_FILES + ["LICENSE_lightgbm_lambdarank.txt", "README.md"]
    )


# --------------------------------------------------------------------------
# make_ranking
# --------------------------------------------------------------------------


def test_make_ranking_shapes_and_dtypes():
    X, y, qid = make_ranking(n_queries=7, n_docs=5, n_features=3, random_state=0)
    assert X.shape == (35, 3)
    assert y.shape == qid.shape == (35,)
    assert X.dtype == y.dtype == np.float64
    assert qid.dtype == np.int64
    np.testing.assert_array_equal(qid, np.repeat(np.arange(7), 5))


def test_make_ranking_labels_follow_the_documented_skew():
    n_levels = 4
    X, y, qid = make_ranking(
        n_queries=200, n_docs=50, n_levels=n_levels, random_state=1
    )
    assert set(np.unique(y).tolist()) == set(range(n_levels))
    np.testing.assert_array_equal(y, np.round(y))
    share = 2.0 ** -np.arange(n_levels)
    share /= share.sum()
    np.testing.assert_allclose(np.bincount(y.astype(int)) / y.size, share, atol=2e-3)


def test_make_ranking_variable_n_docs():
    X, y, qid = make_ranking(n_queries=500, n_docs=(3, 7), random_state=2)
    sizes = np.bincount(qid)
    assert sizes.size == 500
    assert sizes.min() == 3
    assert sizes.max() == 7
    assert set(sizes.tolist()) == {3, 4, 5, 6, 7}
    assert np.all(np.diff(qid) >= 0)
    assert X.shape[0] == sizes.sum()


def test_make_ranking_equal_bounds_fix_the_size():
    _, _, qid = make_ranking(n_queries=10, n_docs=(4, 4), random_state=0)
    np.testing.assert_array_equal(np.bincount(qid), np.full(10, 4))


def test_make_ranking_is_deterministic():
    kwargs = dict(n_queries=20, n_docs=(2, 9), nonlinear=True, return_coef=True)
    first = make_ranking(random_state=3, **kwargs)
    second = make_ranking(random_state=np.random.RandomState(3), **kwargs)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    other = make_ranking(random_state=4, **kwargs)
    assert not np.array_equal(first[0][:10], other[0][:10])


def test_make_ranking_noiseless_labels_are_monotone_in_score():
    X, y, qid, coef = make_ranking(
        n_queries=50,
        n_docs=20,
        n_features=6,
        noise=0.0,
        return_coef=True,
        random_state=5,
    )
    assert coef.shape == (6,)
    np.testing.assert_allclose(np.linalg.norm(coef), 1.0)
    y_sorted = y[np.argsort(X @ coef)]
    assert np.all(np.diff(y_sorted) >= 0)
    assert y_sorted[0] == 0 and y_sorted[-1] == 4


def test_make_ranking_noise_breaks_monotonicity():
    X, y, qid, coef = make_ranking(
        n_queries=50, n_docs=20, noise=1.0, return_coef=True, random_state=5
    )
    assert np.any(np.diff(y[np.argsort(X @ coef)]) < 0)


def test_make_ranking_nonlinear_differs_from_linear():
    kwargs = dict(n_queries=50, n_docs=20, noise=0.0, return_coef=True, random_state=6)
    X_lin, y_lin, _, coef_lin = make_ranking(**kwargs)
    X_nl, y_nl, _, coef_nl = make_ranking(nonlinear=True, **kwargs)
    # Same features and linear direction; only the scoring function changes.
    np.testing.assert_array_equal(X_lin, X_nl)
    np.testing.assert_array_equal(coef_lin, coef_nl)
    assert not np.array_equal(y_lin, y_nl)
    # The nonlinear labels are no longer a monotone function of x @ coef ...
    assert np.any(np.diff(y_nl[np.argsort(X_nl @ coef_nl)]) < 0)
    # ... but the linear part still dominates.
    assert np.corrcoef(X_nl @ coef_nl, y_nl)[0, 1] > 0.5


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(n_queries=0), r"'n_queries' parameter.*Got 0"),
        (dict(n_queries=2.5), r"'n_queries' parameter.*Got 2.5"),
        (dict(n_docs=0), r"'n_docs' parameter.*Got 0"),
        (dict(n_docs=[2, 5]), r"'n_docs' parameter.*Got \[2, 5\]"),
        (dict(n_docs=(5, 2)), r"low <= high.*n_docs=\(5, 2\)"),
        (dict(n_docs=(0, 3)), r"n_docs=\(0, 3\)"),
        (dict(n_docs=(1, 2, 3)), r"n_docs=\(1, 2, 3\)"),
        (dict(n_docs=(1.0, 3)), r"n_docs=\(1.0, 3\)"),
        (dict(n_features=0), r"'n_features' parameter.*Got 0"),
        (dict(n_levels=1), r"'n_levels' parameter.*Got 1"),
        (dict(noise=-0.1), r"'noise' parameter.*Got -0.1"),
        (dict(noise=np.nan), r"'noise' parameter.*Got nan"),
        (dict(random_state="seed"), r"'random_state' parameter.*Got 'seed'"),
    ],
)
def test_make_ranking_rejects_bad_parameters(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        make_ranking(**kwargs)


# --------------------------------------------------------------------------
# make_web_ranking
# --------------------------------------------------------------------------

WEB_SHARES = [0.52, 0.32, 0.13, 0.02, 0.01]


@pytest.mark.parametrize(
    "dtype, expected",
    [(np.float64, np.float64), (np.float32, np.float32), ("float32", np.float32),
     (np.dtype("float64"), np.float64)],
)
def test_make_web_ranking_shapes_and_dtypes(dtype, expected):
    X, y, qid = make_web_ranking(n_queries=30, dtype=dtype, random_state=0)
    assert X.dtype == expected
    assert X.shape[1] == 136
    assert y.dtype == np.float64
    assert qid.dtype == np.int64
    assert y.shape == qid.shape == (X.shape[0],)
    np.testing.assert_array_equal(np.unique(qid), np.arange(30))
    assert np.all(np.isfinite(X))
    assert set(np.unique(y).tolist()) <= set(range(5))


def test_make_web_ranking_query_sizes_follow_the_lognormal():
    mu, sigma = 4.6, 0.6
    _, _, qid = make_web_ranking(n_queries=20000, n_features=1, random_state=0)
    sizes = np.bincount(qid)
    assert sizes.size == 20000
    # E[size] = exp(mu + sigma^2 / 2) = 119.1 (clipping and rounding move it
    # by less than 0.1); the standard error of the mean is 0.56.
    expected_mean = np.exp(mu + sigma**2 / 2)
    assert 117 < expected_mean < 121
    assert abs(sizes.mean() - expected_mean) < 4 * sizes.std() / np.sqrt(sizes.size)
    # Median exp(mu) = 99.5; the log of the sizes is N(mu, sigma) up to rounding.
    assert abs(np.median(sizes) - np.exp(mu)) < 3
    assert abs(np.log(sizes).std() - sigma) < 0.02
    assert sizes.min() >= 2 and sizes.max() <= 900


def test_make_web_ranking_clips_query_sizes():
    _, _, qid = make_web_ranking(
        n_queries=2000, n_features=1, n_docs=(50, 150), random_state=1
    )
    sizes = np.bincount(qid)
    assert sizes.min() == 50 and sizes.max() == 150
    # P(size <= 50) = P(z < (log 50.5 - 4.6) / 0.6) = 13 %; P(size >= 150) = 25 %
    assert 0.10 < np.mean(sizes == 50) < 0.16
    assert 0.21 < np.mean(sizes == 150) < 0.29


@pytest.mark.parametrize(
    "kwargs, size",
    [(dict(n_docs=7), 7), (dict(n_docs_log_sigma=0.0), 99),
     (dict(n_docs_log_sigma=0.0, n_docs=(2, 40)), 40)],
)
def test_make_web_ranking_fixed_query_size(kwargs, size):
    _, _, qid = make_web_ranking(n_queries=20, n_features=2, random_state=0, **kwargs)
    np.testing.assert_array_equal(np.bincount(qid), np.full(20, size))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_make_web_ranking_label_shares(dtype):
    X, y, qid = make_web_ranking(
        n_queries=1000, n_features=8, dtype=dtype, random_state=2
    )
    assert X.shape[0] > 100000
    np.testing.assert_array_equal(y, np.round(y))
    shares = np.bincount(y.astype(int), minlength=5) / y.size
    # empirical quantile cuts: each share is exact up to a row per level
    np.testing.assert_allclose(shares, WEB_SHARES, atol=5 / y.size)


def test_make_web_ranking_custom_label_shares():
    _, y, _ = make_web_ranking(
        n_queries=200, n_features=4, label_shares=[0.2, 0.3, 0.5], random_state=3
    )
    np.testing.assert_array_equal(np.unique(y), [0.0, 1.0, 2.0])
    np.testing.assert_allclose(np.bincount(y.astype(int)) / y.size, [0.2, 0.3, 0.5],
                               atol=3 / y.size)


def test_make_web_ranking_labels_are_nonlinear_in_x():
    """Noise-free labels depend on x beyond a linear score.

    The least-squares linear fit of the noise-free labels explains only part
    of them; adding the squares of the features (which can express the
    ``(x @ v) ** 2`` term) explains much more.
    """
    X, y, _ = make_web_ranking(n_queries=300, n_features=4, noise=0.0, random_state=4)

    def r2(design):
        design = np.column_stack([np.ones(len(y)), design])
        residual = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
        return 1 - residual.var() / y.var()

    X2 = np.column_stack([X] + [X[:, i] * X[:, j] for i in range(4) for j in range(i, 4)])
    linear, quadratic = r2(X), r2(X2)
    assert quadratic > linear + 0.1


def test_make_web_ranking_is_deterministic():
    kwargs = dict(n_queries=40, n_features=5)
    first = make_web_ranking(random_state=3, **kwargs)
    second = make_web_ranking(random_state=np.random.RandomState(3), **kwargs)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    other = make_web_ranking(random_state=4, **kwargs)
    assert not np.array_equal(first[0][:10], other[0][:10])


def test_make_web_ranking_shuffles_rows_across_queries():
    kwargs = dict(n_queries=200, n_features=3, random_state=5)
    X, y, qid = make_web_ranking(**kwargs)
    X_g, y_g, qid_g = make_web_ranking(shuffle=False, **kwargs)
    # grouped: contiguous queries in increasing order
    assert np.all(np.diff(qid_g) >= 0)
    np.testing.assert_array_equal(np.unique(qid_g), np.arange(200))
    # shuffled: the same rows and labels, each query's rows scattered
    np.testing.assert_array_equal(X, X_g)
    np.testing.assert_array_equal(y, y_g)
    np.testing.assert_array_equal(np.sort(qid), qid_g)
    # neighbours share a query about as often as two random rows do
    same_neighbour = np.mean(qid[1:] == qid[:-1])
    sizes = np.bincount(qid)
    by_chance = np.sum(sizes * (sizes - 1)) / (qid.size * (qid.size - 1))
    assert same_neighbour < 3 * by_chance
    # a query's first and last row lie far apart
    first = np.array([np.flatnonzero(qid == q)[0] for q in range(5)])
    last = np.array([np.flatnonzero(qid == q)[-1] for q in range(5)])
    assert np.all(last - first > qid.size / 2)


def test_make_web_ranking_memory_is_about_x():
    """X is drawn in its own dtype: no float64 copy of a float32 X."""
    import tracemalloc

    kwargs = dict(n_queries=200, dtype=np.float32, random_state=0)
    make_web_ranking(**kwargs)  # warm-up: first-call allocations
    tracemalloc.start()
    try:
        X, _, _ = make_web_ranking(**kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a float64 copy alone would be 2 * X.nbytes
    assert X.nbytes > 5_000_000
    assert peak < 1.5 * X.nbytes


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(n_queries=0), r"'n_queries' parameter.*Got 0"),
        (dict(n_features=0), r"'n_features' parameter.*Got 0"),
        (dict(n_docs=0), r"'n_docs' parameter.*Got 0"),
        (dict(n_docs=(9, 3)), r"low <= high.*n_docs=\(9, 3\)"),
        (dict(n_docs=(0, 3)), r"n_docs=\(0, 3\)"),
        (dict(n_docs_log_mean=np.inf), r"'n_docs_log_mean' parameter.*Got inf"),
        (dict(n_docs_log_sigma=-0.5), r"'n_docs_log_sigma' parameter.*Got -0.5"),
        (dict(label_shares=[0.5, 0.6]), r"label_shares=\[0.5, 0.6\]"),
        (dict(label_shares=[1.0]), r"label_shares=\[1.0\]"),
        (dict(label_shares=[1.2, -0.2]), r"label_shares=\[1.2, -0.2\]"),
        (dict(label_shares=[[0.5, 0.5]]), r"label_shares=\[\[0.5, 0.5\]\]"),
        (dict(label_shares=[0.5, np.nan]), r"label_shares=\[0.5, nan\]"),
        (dict(label_shares="ab"), r"'label_shares' parameter.*Got 'ab'"),
        (dict(label_shares=["a", "b"]), r"label_shares=\['a', 'b'\]"),
        (dict(noise=-1.0), r"'noise' parameter.*Got -1.0"),
        (dict(shuffle="yes"), r"'shuffle' parameter.*Got 'yes'"),
        (dict(dtype=np.int64), r"dtype=<class 'numpy.int64'>"),
        (dict(dtype="float16"), r"dtype='float16'"),
        (dict(dtype=None), r"dtype=None"),
        (dict(dtype="no such type"), r"dtype='no such type'"),
        # was numpy's ValueError for a sub-array dtype, not its words
        (dict(dtype=("f8", -1)), r"dtype=\('f8', -1\)"),
        # labels past 1000 would be refused by the metrics
        (dict(label_shares=[1 / 1002] * 1002), r"2 to 1001 positive shares.*\(\d+ characters\)"),
        (dict(random_state="seed"), r"'random_state' parameter.*Got 'seed'"),
    ],
)
def test_make_web_ranking_rejects_bad_parameters(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        make_web_ranking(n_queries=kwargs.pop("n_queries", 3), **kwargs)


def test_make_web_ranking_takes_the_most_levels_the_metrics_score():
    _, y, qid = make_web_ranking(n_queries=40, n_features=2, n_docs=(30, 60),
                                 label_shares=[1 / 1001] * 1001, random_state=0)
    assert y.max() <= 1000
    from skrank.metrics import ndcg_score

    assert ndcg_score(y, y, qid=qid) == 1.0  # every label is scorable


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_docs": 2**63}, r"'n_docs' parameter .* Got 9223372036854775808"),
        ({"n_docs": (1, 2**63)}, r"n_docs=\(low, high\) needs 1 <= low <= high <= "),
        ({"n_levels": 2**31}, r"'n_levels' parameter .* range \[2, 1001\]"),
        ({"n_queries": 2**62, "n_docs": 4}, r"make 1.84e\+19 rows of 10 features, more"),
        ({"n_queries": 10, "n_docs": (2**61, 2**62)}, r"n_docs=.* more values than an"),
    ],
)
def test_make_ranking_sizes_beyond_any_array_are_named(kwargs, match):
    """Refused before anything is drawn (they were OverflowError, numpy's
    dimension errors, or n_levels=2**31 allocating 16 GiB)."""
    with pytest.raises(ValueError, match=match):
        make_ranking(**kwargs, random_state=0)


def test_make_web_ranking_total_size_is_checked():
    with pytest.raises(ValueError, match=r"n_queries=4611686018427387904, .* more values"):
        make_web_ranking(n_queries=2**62, random_state=0)
    # a clip bound beyond any array is only a bound: the drawn sizes are small
    X, _, _ = make_web_ranking(n_queries=10, n_docs=(2, 2**62), n_features=3,
                               random_state=0)
    assert X.shape[1] == 3


@pytest.mark.parametrize("make", [make_ranking, make_web_ranking])
def test_generator_out_of_memory_names_the_sizes(make, monkeypatch):
    # numpy's MemoryError names an array's shape, not the parameters
    import skrank.datasets._samples as samples

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 7.28 TiB for an array")

    monkeypatch.setattr(samples, "_graded_labels", exhausted)
    pattern = (rf"{make.__name__}\(n_queries=3, n_docs=4, n_features=2\) needs more memory "
               r"than could be allocated \(Unable to allocate 7.28 TiB for an array\); lower")
    with pytest.raises(MemoryError, match=pattern):
        make(n_queries=3, n_docs=4, n_features=2)


@pytest.mark.parametrize("make", [make_ranking, make_web_ranking])
def test_generator_beyond_the_memory_available_is_refused(make, memory_available):
    """The kernel promised X and killed the process at its first write: refused first."""
    memory_available(5_000)  # 120 rows of 2 features take 120 x (16 + 56) = 8,640 bytes
    with pytest.raises(MemoryError, match=(
            rf"^{make.__name__}\(n_queries=30, n_docs=4, n_features=2\) needs about 8\.4 KiB "
            r"for 120 rows of 2 features, more than the 4\.9 KiB of memory available now; "
            r"lower these sizes\.$")):
        make(n_queries=30, n_docs=4, n_features=2)
    # the fewest rows fit; the query sizes drawn do not
    with pytest.raises(MemoryError, match=(
            rf"^{make.__name__}\(n_queries=3, n_docs=\(1, 1000\), n_features=1\) needs about "
            r"[\d.]+ KiB for \d+ rows of 1 feature, more than the 4\.9 KiB")):
        make(n_queries=3, n_docs=(1, 1000), n_features=1, random_state=0)


@pytest.mark.parametrize("make", [make_ranking, make_web_ranking])
def test_generator_sizes_beyond_any_memory_are_refused_before_drawing(make):
    with pytest.raises(MemoryError, match=(
            rf"^{make.__name__}\(n_queries=1000000000000, n_docs=2, n_features=1\) needs about "
            r"116\.4 TiB for 2000000000000 rows of 1 feature, more than the ")):
        make(n_queries=10**12, n_docs=2, n_features=1)


@pytest.mark.parametrize("name", ["n_queries", "n_docs", "n_features", "n_levels"])
def test_make_ranking_bool_integer_parameter_raises(name):
    # n_levels=True (1) was already below its bound of 2; the others loaded.
    with pytest.raises(ValueError, match=rf"'{name}' parameter .*not a bool.*Got True"):
        make_ranking(**{name: True}, random_state=0)


@pytest.mark.parametrize("name", ["n_queries", "n_docs", "n_features"])
def test_make_web_ranking_bool_integer_parameter_raises(name):
    with pytest.raises(ValueError, match=rf"'{name}' parameter .*not a bool.*Got True"):
        make_web_ranking(**{name: True}, random_state=0)
