"""rank_within_queries and top_k against per-query Python loops."""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy.stats import rankdata

from skrank.metrics import precision_at_k, rank_within_queries, top_k

METHODS = ["ordinal", "min", "max", "average", "dense"]
LAYOUTS = [
    "grouped_equal", "grouped_unequal", "shuffled", "strings", "singletons", "one_query"
]


def _make(layout, ties, seed=0):
    """Scores and qid for one layout; ``ties`` rounds scores onto a few values."""
    rng = np.random.default_rng(seed)
    if layout == "grouped_equal":
        qid = np.repeat(np.arange(6), 5)
    elif layout == "singletons":
        qid = rng.permutation(12)
    elif layout == "one_query":
        qid = np.zeros(23, dtype=int)
    else:
        sizes = rng.integers(1, 9, size=8)  # single-row queries likely
        sizes[0] = 1
        qid = np.repeat(np.arange(8) * 7 - 20, sizes)  # negative and sparse ids
        if layout in ("shuffled", "strings"):
            qid = rng.permutation(qid)
        if layout == "strings":
            qid = np.array([f"q{v}" for v in qid])
    n = 23 if qid is None else len(qid)
    scores = rng.normal(size=n)
    if ties:
        scores = np.round(scores)  # a handful of distinct values
    return scores, qid


def _selection_queries(qid, n):
    """Row indices of each query, queries in sorted-id order (the oracle's loop)."""
    qid = np.zeros(n, dtype=int) if qid is None else np.asarray(qid)
    return [np.flatnonzero(qid == q) for q in np.unique(qid)]


def _rank_oracle(scores, qid, method):
    ranks = np.zeros(len(scores))
    for rows in _selection_queries(qid, len(scores)):
        # rankdata ranks ascending; "ordinal" keeps ties in order of appearance
        ranks[rows] = rankdata(-scores[rows], method=method)
    return ranks


def _top_k_oracle(scores, qid, k):
    selected = []
    for rows in _selection_queries(qid, len(scores)):
        selected.extend(sorted(rows, key=lambda i: (-scores[i], i))[:k])
    return np.array(selected, dtype=np.intp)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("method", METHODS)
def test_rank_within_queries_matches_rankdata_per_query(method, layout, ties):
    scores, qid = _make(layout, ties)
    ranks = rank_within_queries(scores, qid=qid, method=method)
    assert_array_equal(ranks, _rank_oracle(scores, qid, method))
    assert ranks.dtype == (np.float64 if method == "average" else np.int64)


@pytest.mark.parametrize("k", [1, 2, 3, 8, 100])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_top_k_matches_sorted_per_query(layout, ties, k):
    scores, qid = _make(layout, ties)
    indices = top_k(scores, qid=qid, k=k)
    assert_array_equal(indices, _top_k_oracle(scores, qid, k))
    # the same rows as ordinal ranks <= k
    ranks = rank_within_queries(scores, qid=qid)
    assert_array_equal(np.sort(indices), np.flatnonzero(ranks <= k))


def test_ties_broken_by_row_order():
    scores = np.array([1.0, 2.0, 1.0, 2.0, 1.0])
    qid = np.array([0, 0, 0, 0, 0])
    assert_array_equal(rank_within_queries(scores, qid=qid), [3, 1, 4, 2, 5])
    assert_array_equal(rank_within_queries(scores, qid=qid, method="min"), [3, 1, 3, 1, 3])
    assert_array_equal(rank_within_queries(scores, qid=qid, method="max"), [5, 2, 5, 2, 5])
    assert_array_equal(
        rank_within_queries(scores, qid=qid, method="average"), [4, 1.5, 4, 1.5, 4]
    )
    assert_array_equal(
        rank_within_queries(scores, qid=qid, method="dense"), [2, 1, 2, 1, 2]
    )
    assert_array_equal(top_k(scores, qid=qid, k=3), [1, 3, 0])


def test_query_with_fewer_than_k_rows_keeps_all_rows():
    scores = [0.1, 0.5, 0.3, 0.9]
    qid = ["b", "a", "b", "b"]
    assert_array_equal(top_k(scores, qid=qid, k=2), [1, 3, 2])
    assert_array_equal(top_k(scores, qid=qid, k=10), [1, 3, 2, 0])


@pytest.mark.parametrize("method", ["min", "max", "average", "dense"])
def test_tied_methods_do_not_depend_on_row_order(method):
    scores, qid = _make("shuffled", ties=True, seed=3)
    perm = np.random.default_rng(1).permutation(len(scores))
    assert_array_equal(
        rank_within_queries(scores[perm], qid=qid[perm], method=method),
        rank_within_queries(scores, qid=qid, method=method)[perm],
    )


@pytest.mark.parametrize("k", [1, 3, 5])
def test_top_k_follows_the_metrics_stable_ties(k):
    # P@k with ties="stable" counts the relevant rows among exactly top_k's rows
    scores, qid = _make("shuffled", ties=True, seed=5)
    y = np.random.default_rng(2).integers(0, 2, size=len(scores)).astype(float)
    indices = top_k(scores, qid=qid, k=k)
    _, codes = np.unique(qid[indices], return_inverse=True)
    hits = np.bincount(codes, weights=y[indices])
    expected = hits / np.bincount(codes)  # short queries: divide by their length
    got = precision_at_k(
        y, scores, qid=qid, k=k, ties="stable", short_queries="truncate", average=False
    )
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)


def test_column_vector_scores_accepted():
    scores = np.array([[0.3], [0.1], [0.2]])
    assert_array_equal(rank_within_queries(scores, qid=[0, 0, 1]), [1, 2, 1])
    assert_array_equal(top_k(scores, qid=[0, 0, 1], k=1), [0, 2])


@pytest.mark.parametrize("func", [rank_within_queries, top_k])
@pytest.mark.parametrize(
    "scores, qid, error, match",
    [
        ([0.1, np.nan], [0, 0], ValueError, "scores contains NaN or infinity"),
        ([0.1, -np.inf], [0, 0], ValueError, "scores contains NaN or infinity"),
        (np.zeros((2, 2)), [0, 0], ValueError, r"scores must be 1-D.*\(2, 2\)"),
        ([], [], ValueError, "scores is empty"),
        (["a", "b"], [0, 0], TypeError, "scores must be numeric"),
        ([0.1, 0.2, 0.3], [0, 0], ValueError, "qid must have one entry per row"),
        ([0.1, 0.2], [0.5, 1.0], ValueError, "qid must hold integer or string ids"),
    ],
)
def test_invalid_scores_and_qid(func, scores, qid, error, match):
    with pytest.raises(error, match=match):
        func(scores, qid=qid)


@pytest.mark.parametrize("func", [rank_within_queries, top_k])
def test_qid_none_is_one_query_and_warns_on_many_rows(func):
    scores = np.random.default_rng(0).normal(size=101)
    with pytest.warns(UserWarning, match=rf"^{func.__name__} got qid=None, so all 101 rows are "
                                         r"treated as ONE query"):
        implicit = func(scores)
    assert_array_equal(implicit, func(scores, qid=np.zeros(101)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_array_equal(func(scores[:100]), func(scores[:100], qid=np.zeros(100)))
    with pytest.raises(TypeError, match="positional"):
        func(scores, np.zeros(101))


@pytest.mark.parametrize(
    "k, error",
    [(0, ValueError), (-2, ValueError), (True, TypeError), (2.0, TypeError),
     (3.5, TypeError), ("3", TypeError), (None, TypeError),
     (np.timedelta64(3), TypeError), (np.datetime64("2020-01-01"), TypeError)],
)
def test_top_k_rejects_invalid_k(k, error):
    # np.timedelta64 is a numbers.Integral to numpy, yet no count of rows
    with pytest.raises(error, match=f"k must be a positive integer, got k={re.escape(repr(k))}"):
        top_k([0.1, 0.2], qid=[0, 0], k=k)


def test_top_k_accepts_numpy_integer_k():
    assert_array_equal(top_k([0.1, 0.2, 0.3], qid=[0, 0, 0], k=np.int64(2)), [2, 1])


@pytest.mark.parametrize("method", ["first", "Ordinal", None])
def test_rank_within_queries_rejects_unknown_method(method):
    with pytest.raises(ValueError, match=f"method must be one of .*method={method!r}"):
        rank_within_queries([0.1, 0.2], qid=[0, 0], method=method)
