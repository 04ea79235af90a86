"""The query layer: validation, grouping, reductions, padding, ordering."""

import numpy as np
import pytest

from skrank._query import QueryLayout, check_qid


def _layouts(rng):
    """qid arrays covering every code path of the layout."""
    uniform_sorted = np.repeat(np.arange(6), 5)
    uniform_shuffled = rng.permutation(uniform_sorted)
    sizes = np.array([1, 2, 3, 7, 8, 16, 17, 33, 1, 5])
    variable_sorted = np.repeat(np.arange(len(sizes)) * 3 + 10, sizes)
    variable_shuffled = rng.permutation(variable_sorted)
    strings = np.array([f"q{v}" for v in variable_shuffled])
    return {
        "uniform_sorted": uniform_sorted,
        "uniform_shuffled": uniform_shuffled,
        "variable_sorted": variable_sorted,
        "variable_shuffled": variable_shuffled,
        "strings": strings,
        "one_query": np.zeros(9, dtype=int),
    }


CASES = list(_layouts(np.random.default_rng(0)))


@pytest.fixture(params=CASES)
def qid(request):
    return _layouts(np.random.default_rng(0))[request.param]


def test_grouping_matches_numpy_unique(qid):
    layout = QueryLayout(qid)
    unique, codes, counts = np.unique(qid, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(layout.unique_qid, unique)
    np.testing.assert_array_equal(layout.codes, codes.ravel())
    np.testing.assert_array_equal(layout.sizes, counts)
    assert layout.n_queries == len(unique) and layout.max_size == counts.max()
    sorted_qid = layout.to_sorted(qid)
    # stable: rows of a query keep their order
    order = np.argsort(codes.ravel(), kind="stable")
    np.testing.assert_array_equal(sorted_qid, qid[order])
    np.testing.assert_array_equal(layout.sorted_codes, codes.ravel()[order])
    values = np.arange(len(qid), dtype=float)
    np.testing.assert_array_equal(layout.to_rows(layout.to_sorted(values)), values)


def test_reductions_and_expand(qid, rng):
    layout = QueryLayout(qid)
    values = rng.normal(size=(len(qid), 2))
    s = layout.to_sorted(values)
    for i, q in enumerate(layout.unique_qid):
        rows = values[qid == q]
        np.testing.assert_allclose(layout.sum(s)[i], rows.sum(axis=0))
        np.testing.assert_allclose(layout.max(s)[i], rows.max(axis=0))
        np.testing.assert_allclose(layout.min(s)[i], rows.min(axis=0))
        np.testing.assert_allclose(layout.mean(s)[i], rows.mean(axis=0))
    np.testing.assert_array_equal(layout.expand(layout.sizes), layout.sizes[layout.sorted_codes])
    np.testing.assert_array_equal(
        layout.index_in_query, np.concatenate([np.arange(n) for n in layout.sizes])
    )


@pytest.mark.parametrize("tiebreak", ["stable", "arbitrary", "labels"])
@pytest.mark.parametrize("scores", ["distinct", "tied", "infinite"])
def test_rank_order_matches_lexsort(qid, rng, tiebreak, scores):
    layout = QueryLayout(qid)
    n = len(qid)
    if scores == "distinct":
        s = rng.normal(size=n)
    elif scores == "tied":
        s = rng.integers(0, 3, size=n).astype(float)
    else:
        s = rng.choice([-np.inf, 0.0, 1.0, np.inf], size=n)
    labels = rng.integers(0, 3, size=n)
    arg = labels if tiebreak == "labels" else tiebreak
    perm = layout.rank_order(s, tiebreak=arg)
    assert sorted(perm) == list(range(n))
    codes = layout.codes
    if tiebreak == "arbitrary":
        # grouped by query, scores descending; tie order is free
        np.testing.assert_array_equal(codes[perm], np.sort(codes))
        ranked = s[perm]
        same_query = codes[perm][1:] == codes[perm][:-1]
        assert np.all(ranked[1:][same_query] <= ranked[:-1][same_query])
    else:
        keys = (np.arange(n),) + ((labels,) if tiebreak == "labels" else ()) + (-s, codes)
        np.testing.assert_array_equal(perm, np.lexsort(keys))


def test_sorted_blocks(qid, rng):
    layout = QueryLayout(qid)
    values = rng.integers(0, 5, size=len(qid)) + rng.choice([0.0, 0.5], size=len(qid))
    seen = []
    for queries, block, valid in layout.sorted_blocks(values):
        for row, i in enumerate(queries):
            n = layout.sizes[i]
            expected = np.sort(values[qid == layout.unique_qid[i]])[::-1]
            np.testing.assert_array_equal(block[row, :n], expected)
            assert np.all(block[row, n:] == -np.inf)
            if valid is not None:
                assert valid[row].sum() == n
            seen.append(i)
    assert sorted(seen) == list(range(layout.n_queries))


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


def test_cumsum_inside_queries(qid, rng):
    layout = QueryLayout(qid)
    values = rng.integers(0, 3, size=len(qid)).astype(float)
    got = layout.cumsum(layout.to_sorted(values))
    for i, q in enumerate(layout.unique_qid):
        a, b = layout.offsets[i], layout.offsets[i + 1]
        np.testing.assert_array_equal(got[a:b], np.cumsum(values[qid == q]))


def test_runs_do_not_cross_queries():
    layout = QueryLayout([1, 1, 1, 2, 2, 3])
    starts, sizes = layout.runs(np.array([5.0, 5.0, 4.0, 4.0, 4.0, 4.0]))
    np.testing.assert_array_equal(starts, [0, 2, 3, 5])
    np.testing.assert_array_equal(sizes, [2, 1, 2, 1])
    assert layout.runs(np.array([3.0, 2.0, 1.0, 4.0, 3.0, 3.0])) is None


def _block_cells(layout, block):
    """Slots, rows and mask of a block as arrays (also for the fast path)."""
    queries, slots, rows, valid = block
    if slots is None:
        assert rows is None and valid is None
        slots = rows = np.arange(layout.n_samples).reshape(len(queries), -1)
    if valid is None:
        valid = np.ones(slots.shape, dtype=bool)
    return slots, rows, valid


def _square(width):
    return width * width


@pytest.mark.parametrize(
    "growth, max_cost", [(1.0, np.inf), (1.25, np.inf), (2.0, np.inf), (2.0, 300.0)]
)
def test_blocks_hold_every_cell_once(qid, rng, growth, max_cost):
    layout = QueryLayout(qid)
    values = rng.normal(size=len(qid))
    sorted_values = layout.to_sorted(values)
    row_of_slot = layout.to_sorted(np.arange(layout.n_samples))
    blocks = layout.blocks(growth=growth, max_cost=max_cost, cost=_square)
    seen = np.concatenate([block.queries for block in blocks])
    assert sorted(seen) == list(range(layout.n_queries))  # each query exactly once
    assert (np.diff(layout.sizes[seen]) <= 0).all()  # largest first, across blocks
    hits = np.zeros(layout.n_samples, dtype=int)
    first = 0
    for block in blocks:
        queries = block.queries
        slots, rows, valid = _block_cells(layout, block)
        sizes = layout.sizes[queries]
        width = slots.shape[1]
        assert rows.shape == valid.shape == (len(queries), width)
        assert width == sizes[0] and sizes[-1] * growth >= width
        assert len(queries) == 1 or len(queries) * width * width <= max_cost
        # greedy: the next block starts with a query too small or over the budget
        first += len(queries)
        if first < layout.n_queries:
            nxt = layout.sizes[seen[first]]
            assert nxt * growth < width or (len(queries) + 1) * width**2 > max_cost
        # the mask: the first sizes[b] cells of row b, None without padding
        np.testing.assert_array_equal(valid, np.arange(width) < sizes[:, None])
        assert (block.valid is None) == (sizes[-1] == width)
        assert (slots[~valid] == 0).all()
        # prefix property: the queries with a cell in column t come first
        assert (valid[1:] <= valid[:-1]).all()
        np.testing.assert_array_equal(rows, row_of_slot[slots])
        for b, q in enumerate(queries):  # a query's cells are its rows, in order
            np.testing.assert_array_equal(
                slots[b][valid[b]], np.arange(layout.offsets[q], layout.offsets[q + 1])
            )
            np.testing.assert_array_equal(
                values[rows[b][valid[b]]], sorted_values[slots[b][valid[b]]]
            )
        np.add.at(hits, slots[valid], 1)
    assert (hits == 1).all()  # every real cell exactly once


def test_blocks_fast_path_and_cache():
    grouped = QueryLayout(np.repeat(np.arange(6), 5))
    (block,) = grouped.blocks()
    np.testing.assert_array_equal(block.queries, np.arange(6))
    assert block.slots is None and block.rows is None and block.valid is None
    assert grouped.blocks() is grouped.blocks()  # default arguments: cached
    # over the budget, equal sizes still need no padding but several blocks
    small = grouped.blocks(max_cost=2 * 25, cost=_square)
    assert [len(b.queries) for b in small] == [2, 2, 2]
    assert all(b.slots is not None and b.valid is None for b in small)
    # shuffled rows: one block, gathered through ``rows``, without padding
    rng = np.random.default_rng(0)
    shuffled = QueryLayout(rng.permutation(np.repeat(np.arange(6), 5)))
    (block,) = shuffled.blocks()
    assert block.slots is not None and block.valid is None
    np.testing.assert_array_equal(block.rows, shuffled.order[block.slots])


def test_blocks_budget_and_growth():
    layout = QueryLayout(np.repeat(np.arange(6), [9, 9, 8, 5, 4, 1]))
    widths = [b.slots.shape[1] for b in layout.blocks(growth=2.0)]
    assert widths == [9, 4, 1]  # 5 >= 9 / 2 joins the first block; 4 does not
    sizes = [len(b.queries) for b in layout.blocks()]  # growth=1.25
    assert sizes == [3, 2, 1]
    # a budget below one query's cost still gives one query per block
    assert [len(b.queries) for b in layout.blocks(max_cost=1.0)] == [1] * 6
    with pytest.raises(ValueError, match="growth must be at least 1"):
        layout.blocks(growth=0.5)


@pytest.mark.parametrize("tiebreak", ["stable", "arbitrary", "labels"])
def test_rank_order_of_rows_already_ranked(rng, tiebreak):
    """Grouped rows whose scores fall inside every query: the identity (and the lexsort's)."""
    sizes = [4, 1, 7, 3]
    qid = np.repeat([2, 5, 6, 9], sizes)
    layout = QueryLayout(qid)
    s = np.concatenate([np.sort(rng.normal(size=m))[::-1] for m in sizes])
    s[5:12] = [3.0, 2.0, 1.0, 0.0, -1.0, -2.0, -np.inf]  # a query reaching -inf
    arg = rng.integers(0, 3, size=len(qid)) if tiebreak == "labels" else tiebreak
    np.testing.assert_array_equal(layout.rank_order(s, tiebreak=arg), np.arange(len(qid)))
    # a tie, a rise inside a query, or rows out of query order: not the identity
    tied = s.copy()
    tied[1] = tied[0]
    stable = layout.rank_order(tied, tiebreak="stable")
    np.testing.assert_array_equal(stable, np.lexsort((np.arange(len(qid)), -tied, qid)))
    risen = s.copy()
    risen[2] = risen[0] + 1.0
    np.testing.assert_array_equal(layout.rank_order(risen, tiebreak="stable"),
                                  np.lexsort((np.arange(len(qid)), -risen, qid)))
    shuffled = QueryLayout(qid[::-1])
    np.testing.assert_array_equal(shuffled.rank_order(s[::-1], tiebreak="stable"),
                                  np.lexsort((np.arange(len(qid)), -s[::-1], qid[::-1])))
