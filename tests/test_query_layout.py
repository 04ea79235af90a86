"""The query layout: validation of the ids, grouping, moving between orders, reductions."""

import warnings

import numpy as np
import pytest

import skrank
from skrank.utils import QueryLayout
from skrank.utils._query_layout import check_qid


def test_grouping_matches_numpy_unique(query_ids):
    layout = QueryLayout(query_ids)
    unique, codes, counts = np.unique(query_ids, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(layout.unique_qid, unique)
    np.testing.assert_array_equal(layout.codes, codes.ravel())
    np.testing.assert_array_equal(layout.sizes, counts)
    assert layout.n_queries == len(unique) and layout.max_size == counts.max()
    sorted_qid = layout.to_sorted(query_ids)
    # stable: rows of a query keep their order
    order = np.argsort(codes.ravel(), kind="stable")
    np.testing.assert_array_equal(sorted_qid, query_ids[order])
    np.testing.assert_array_equal(layout.sorted_codes, codes.ravel()[order])
    values = np.arange(len(query_ids), dtype=float)
    np.testing.assert_array_equal(layout.to_rows(layout.to_sorted(values)), values)


def test_reductions_and_expand(query_ids, rng):
    layout = QueryLayout(query_ids)
    values = rng.normal(size=(len(query_ids), 2))
    s = layout.to_sorted(values)
    for i, q in enumerate(layout.unique_qid):
        rows = values[query_ids == q]
        np.testing.assert_allclose(layout.sum(s)[i], rows.sum(axis=0))
        np.testing.assert_allclose(layout.max(s)[i], rows.max(axis=0))
        np.testing.assert_allclose(layout.min(s)[i], rows.min(axis=0))
        np.testing.assert_allclose(layout.mean(s)[i], rows.mean(axis=0))
    np.testing.assert_array_equal(layout.expand(layout.sizes), layout.sizes[layout.sorted_codes])
    np.testing.assert_array_equal(
        layout.index_in_query, np.concatenate([np.arange(n) for n in layout.sizes])
    )


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (None, TypeError, "qid is required"),
        (3, ValueError, "1-D array"),
        ([[1, 2]], ValueError, "1-D array"),
        ([], ValueError, "qid is empty"),
        ([1.0, np.nan], ValueError, "qid contains NaN"),
        ([1.0, 1.5], ValueError, "non-integral value 1.5"),
        (np.array([1, "a", 2.5], dtype=object), TypeError, "integers or strings"),
        (np.array([1 + 2j]), TypeError, "dtype complex"),
        ([10**20, 1], ValueError, "the integer 100000000000000000000, beyond the 64-bit"),
        ([-(2**63) - 1, 1], ValueError, "the integer -9223372036854775809, beyond"),
        ([2**63, -1], ValueError, "both -1 and 9223372036854775808, which no one"),
        (np.array([10**20, 1], dtype=object), ValueError, "beyond the 64-bit integers"),
    ],
)
def test_check_qid_errors(bad, error, match):
    with pytest.raises(error, match=match):
        check_qid(bad)


def test_python_integer_ids_up_to_uint64_are_kept_exact():
    """numpy turns [2**64 - 1, 1] into floats; the ids stay distinct integers."""
    ids = check_qid([2**64 - 1, 2**64 - 2, 1])
    assert ids.dtype == np.uint64
    assert ids.tolist() == [2**64 - 1, 2**64 - 2, 1]
    assert check_qid([-(2**63), 2**63 - 1]).dtype == np.int64


def test_check_qid_length_and_accepted_types():
    with pytest.raises(ValueError, match="expected 3 entries, got 2"):
        check_qid([1, 2], n_samples=3)
    np.testing.assert_array_equal(check_qid([3.0, 1.0]), [3, 1])
    assert check_qid(np.array(["a", "b"], dtype=object)).dtype.kind == "U"
    assert check_qid(np.array([4, 5], dtype=object)).dtype.kind == "i"


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint64])
def test_small_and_unsigned_integer_qid_are_not_wrapped(dtype):
    info = np.iinfo(dtype)
    ids = np.array([info.min, info.min + 5, info.max - 7, info.max], dtype=dtype)
    qid = np.repeat(ids, 3)[::-1].copy()
    layout = QueryLayout(qid)
    assert layout.n_queries == 4
    assert layout.unique_qid.tolist() == sorted(ids.tolist())
    np.testing.assert_array_equal(layout.sizes, [3, 3, 3, 3])


def test_float_qid_beyond_exact_integers_rejected():
    with pytest.raises(ValueError, match="beyond 2\\*\\*53"):
        check_qid([1e19, 2e19])


def test_cumsum_inside_queries(query_ids, rng):
    layout = QueryLayout(query_ids)
    values = rng.integers(0, 3, size=len(query_ids)).astype(float)
    got = layout.cumsum(layout.to_sorted(values))
    for i, q in enumerate(layout.unique_qid):
        a, b = layout.offsets[i], layout.offsets[i + 1]
        np.testing.assert_array_equal(got[a:b], np.cumsum(values[query_ids == q]))


# ----------------------------------------------------------------------
# Issue 27: bad input to the query layout gives a clear error naming the
# parameter (not a numpy-internal one, nor a silent wrong answer).


def test_ragged_qid_names_qid():
    # issue 27: numpy's "inhomogeneous shape" error, without the parameter's name
    with pytest.raises(ValueError, match="qid must be a 1-D array of query ids, one per "
                       "row; got a ragged nested sequence") as info:
        skrank.ndcg_score([1, 0], [1, 0], qid=[[1], [2, 3]])
    assert "inhomogeneous" in str(info.value.__cause__)
    with pytest.raises(ValueError, match="qid_val must be a 1-D array .* ragged"):
        check_qid([[1], [2, 3]], name="qid_val")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_qid_raises_no_spurious_warning(dtype):
    # issue 27: comparing float16 ids with 2**53 overflowed in the cast and warned
    qid = np.array([0, 0, 1, 1], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = skrank.ndcg_score([1, 0, 2, 0], [0.1, 0.2, 0.3, 0.4], qid=qid)
        ids = check_qid(qid)
    assert got == skrank.ndcg_score([1, 0, 2, 0], [0.1, 0.2, 0.3, 0.4], qid=[0, 0, 1, 1])
    assert ids.dtype == np.int64 and ids.tolist() == [0, 0, 1, 1]
