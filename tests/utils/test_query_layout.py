"""The query layout: grouping, moving between orders, reductions (ids: test_qid.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skrank import ndcg_score
from skrank.utils import QueryLayout


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


def test_cumsum_inside_queries(query_ids, rng):
    layout = QueryLayout(query_ids)
    values = rng.integers(0, 3, size=len(query_ids)).astype(float)
    got = layout.cumsum(layout.to_sorted(values))
    for i, q in enumerate(layout.unique_qid):
        a, b = layout.offsets[i], layout.offsets[i + 1]
        np.testing.assert_array_equal(got[a:b], np.cumsum(values[query_ids == q]))


# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "sizes, unique_qid, error, match",
    [
        ([], None, ValueError, "sizes is empty: a layout needs at least one query"),
        ([[1, 2]], None, ValueError, r"sizes must be a 1-D array .* shape \(1, 2\)"),
        ([[1], [2, 3]], None, ValueError, "sizes must be a 1-D array .* ragged"),
        ([-1, 2], None, ValueError, "sizes must be positive: .* the size -1 for query 0"),
        ([2, 0], None, ValueError, "sizes must be positive: .* the size 0 for query 1"),
        ([2**62, 2**62], None, ValueError,
         "sizes must sum to at most 9223372036854775807 rows .* summing to 9223372036854775808"),
        ([2**64 - 1], None, ValueError, "sizes must be positive .* the size 18446744073709551615"),
        ([2**70], None, ValueError, "sizes must be positive .* the size 1180591620717411303424"),
        ([1.5], None, TypeError, "sizes must hold integers .* dtype float64 .* 1.5"),
        ([2.0, 3.0], None, TypeError, "sizes must hold integers .* dtype float64"),
        ([True], None, TypeError, "sizes must hold integers .* dtype bool"),
        ([2, 3], [7], ValueError, (r"unique_qid must have one id per query: expected "
                                   r"shape \(2,\) as sizes, got shape \(1,\)")),
        ([2, 3], [[7, 8]], ValueError, r"unique_qid must have one id per query"),
        ([2, 3], [7, 7], ValueError, "unique_qid must hold distinct ids; got 7 2 times"),
        ([2, 3, 1], ["b", "a", "b"], ValueError, "unique_qid must hold distinct ids; got 'b'"),
        # Python objects that are not integers are named, not an AttributeError
        ([None], None, TypeError, "sizes must hold integers .* dtype object .* None"),
        ([2, None], None, TypeError, "sizes must hold integers .* dtype object .* None"),
        ([1, 1], np.array(["a", "a"], dtype=object), ValueError,
         "unique_qid must hold distinct ids; got 'a' 2 times"),
    ],
)
def test_from_sizes_rejects_bad_sizes_and_ids(sizes, unique_qid, error, match):
    # were numpy errors ("zero-size array to reduction", "provided out is
    # the wrong size", broadcasting) or silently wrong layouts (n_samples 1 from
    # [-1, 2], -2**63 on overflow, 1.5 truncated, duplicate ids accepted)
    with pytest.raises(error, match=match):
        QueryLayout.from_sizes(sizes, unique_qid)


def test_from_sizes_valid_input_unchanged():
    layout = QueryLayout.from_sizes(np.array([3, 1, 2]))
    assert (layout.n_samples, layout.n_queries, layout.max_size) == (6, 3, 3)
    np.testing.assert_array_equal(layout.offsets, [0, 3, 4, 6])
    np.testing.assert_array_equal(layout.unique_qid, [0, 1, 2])
    # ids in another order than sorted (the walk blocks order queries by size)
    layout = QueryLayout.from_sizes([1, 2], np.array([9, 4]))
    np.testing.assert_array_equal(layout.qid, [9, 4, 4])
    np.testing.assert_array_equal(QueryLayout.from_sizes(np.array([2], np.uint8)).offsets,
                                  [0, 2])
    # Python integers in an object array (a pandas object column)
    np.testing.assert_array_equal(
        QueryLayout.from_sizes(np.array([2, 3], dtype=object)).offsets, [0, 2, 5])
    # ids of mixed kinds are not compared: they are not otherwise validated
    np.testing.assert_array_equal(
        QueryLayout.from_sizes([1, 1], np.array([1, "a"], dtype=object)).qid,
        np.array([1, "a"], dtype=object))


@given(st.lists(st.integers(1, 50), min_size=1, max_size=20))
@settings(max_examples=50, deadline=None)
def test_from_sizes_matches_layout_of_qid(sizes):
    qid = np.repeat(np.arange(len(sizes)) * 3, sizes)
    expected = QueryLayout(qid)
    layout = QueryLayout.from_sizes(sizes, expected.unique_qid)
    for name in ("offsets", "sizes", "unique_qid", "qid"):
        np.testing.assert_array_equal(getattr(layout, name), getattr(expected, name))
    assert (layout.n_samples, layout.n_queries, layout.max_size) == (
        expected.n_samples, expected.n_queries, expected.max_size)


@given(st.lists(st.integers(1, 50), min_size=1, max_size=20), st.booleans())
@settings(max_examples=50, deadline=None)
def test_trusted_sizes_build_what_from_sizes_builds(sizes, with_ids):
    """The fit loop's unchecked constructor: on valid sizes, every attribute as from_sizes'."""
    sizes = np.array(sizes, dtype=np.intp)
    ids = 7 - 2 * np.arange(len(sizes)) if with_ids else None  # distinct, not sorted
    checked = QueryLayout.from_sizes(sizes, ids)
    trusted = QueryLayout._from_trusted_sizes(sizes, ids)
    assert vars(trusted).keys() == vars(checked).keys()
    for name, value in vars(checked).items():
        assert type(getattr(trusted, name)) is type(value), name
        if isinstance(value, np.ndarray):
            assert getattr(trusted, name).dtype == value.dtype, name
        np.testing.assert_array_equal(getattr(trusted, name), value, err_msg=name)


@pytest.mark.parametrize(
    "lo, hi, error, match",
    [
        (1, 0, ValueError, r"0 <= lo < hi <= n_queries=3; got lo=1, hi=0"),
        (1, 1, ValueError, r"got lo=1, hi=1"),
        (-1, 2, ValueError, r"got lo=-1, hi=2"),
        (0, 4, ValueError, r"got lo=0, hi=4"),
        (0.5, 2, TypeError, "lo must be an integer query number; got 0.5"),
        (0, None, TypeError, "hi must be an integer query number; got None"),
    ],
)
def test_part_rejects_empty_or_out_of_range(lo, hi, error, match):
    # an empty range failed inside numpy, a range past the queries was cut
    layout = QueryLayout([5, 5, 6, 7, 7, 7])
    with pytest.raises(error, match=match):
        layout.part(lo, hi)
    part = layout.part(np.int64(1), 3)
    np.testing.assert_array_equal(part.unique_qid, [6, 7])
    np.testing.assert_array_equal(part.sizes, [1, 3])


@pytest.mark.parametrize(
    "queries, error, match",
    [
        ([2], ValueError, r"queries must be query numbers in \[0, 2\); got 2"),
        ([0, -1], ValueError, r"queries must be query numbers in \[0, 2\); got -1"),
        (np.array([1, 5], np.uint64), ValueError, r"in \[0, 2\); got 5"),
        ([0.0], TypeError, "queries must hold integer query numbers; got dtype float64"),
        ([True], TypeError, "queries must hold integer query numbers; got dtype bool"),
        ([[0, 1]], ValueError, r"queries must be a 1-D array .* shape \(1, 2\)"),
    ],
)
def test_query_positions_rejects_bad_queries(queries, error, match):
    # [2] was a bare IndexError, [-1] silently gave rows past n_samples
    layout = QueryLayout([3, 3, 3, 4, 4])
    with pytest.raises(error, match=match):
        layout.query_positions(queries)
    positions, sizes = layout.query_positions(np.array([1, 0]))
    np.testing.assert_array_equal(positions, [3, 4, 0, 1, 2])
    np.testing.assert_array_equal(sizes, [2, 3])
    positions, sizes = layout.query_positions(np.array([], dtype=np.intp))
    assert positions.size == 0 and sizes.size == 0


@pytest.mark.parametrize("qid", [[0, 0, 0, 1, 1, 2], [1, 1, 0, 0, 2, 0]])
@pytest.mark.parametrize(
    "method, name, length, what",
    [
        ("to_sorted", "a", 6, "n_samples"),
        ("to_rows", "a_sorted", 6, "n_samples"),
        ("sum", "a_sorted", 6, "n_samples"),
        ("max", "a_sorted", 6, "n_samples"),
        ("min", "a_sorted", 6, "n_samples"),
        ("mean", "a_sorted", 6, "n_samples"),
        ("cumsum", "a_sorted", 6, "n_samples"),
        ("expand", "per_query", 3, "n_queries"),
    ],
)
@pytest.mark.parametrize("delta", [-1, 1])
def test_wrong_length_arrays_rejected(qid, method, name, length, what, delta):
    # sum(np.ones(5)) on 6 rows gave [3., 2.], to_sorted returned its
    # input unchanged, others failed inside numpy without naming the argument
    layout = QueryLayout(qid)
    call = getattr(layout, method)
    match = (rf"{name} must have {what}={length} entries along its first axis .* "
             rf"shape \({length + delta}, 2\)")
    with pytest.raises(ValueError, match=match):
        call(np.ones((length + delta, 2)))
    with pytest.raises(ValueError, match=rf"{name} must have .* shape \(\)"):
        call(1.0)
    assert call(np.ones((length, 2))).shape[1] == 2  # 2-D: the first axis counts


def test_reduce_rejects_a_non_ufunc():
    # "add" failed with AttributeError: 'str' object has no attribute 'reduceat'
    layout = QueryLayout([0, 0, 1])
    with pytest.raises(TypeError, match="ufunc must be a numpy ufunc .* got str 'add'"):
        layout.reduce("add", np.ones(3))
    np.testing.assert_array_equal(layout.reduce(np.add, np.ones(3)), [2.0, 1.0])


# ----------------------------------------------------------------------------
# Query ids of one kind
@pytest.mark.parametrize("qid", [
    [1, 1, "1", "1"],
    np.array([1, 1, "1", "1"], dtype=object),
    ["a", "a", 2, 2],
    [b"a", b"a", "a", "a"],
])
def test_mixed_int_and_str_qid_raise(qid):
    with pytest.raises(TypeError, match="integers or strings of one kind"):
        QueryLayout(qid)
    with pytest.raises(TypeError, match="integers or strings of one kind"):
        ndcg_score([1, 0, 1, 0], [1, 2, 3, 4], qid=qid)


@pytest.mark.parametrize("qid, n_queries", [(["1", "1", "2"], 2), ([b"a", b"b", b"b"], 2),
                                            ([1, 2, 2], 2)])
def test_one_kind_qid_lists_work(qid, n_queries):
    assert QueryLayout(qid).n_queries == n_queries
