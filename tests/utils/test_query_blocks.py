"""Padded blocks of queries: every cell once, the budget and the growth, the products."""

import numpy as np
import pytest

from skrank.utils import QueryLayout
from skrank.utils._query_blocks import cumprod_before, query_blocks


def _square(width):
    return width * width


@pytest.mark.parametrize(
    "growth, max_cost", [(1.0, np.inf), (1.25, np.inf), (2.0, np.inf), (2.0, 300.0)]
)
def test_blocks_hold_every_cell_once(query_ids, rng, growth, max_cost):
    layout = QueryLayout(query_ids)
    values = rng.normal(size=len(query_ids))
    sorted_values = layout.to_sorted(values)
    row_of_slot = layout.to_sorted(np.arange(layout.n_samples))
    blocks = query_blocks(layout, growth=growth, max_cost=max_cost, cost=_square)
    seen = np.concatenate([block.queries for block in blocks])
    assert sorted(seen) == list(range(layout.n_queries))  # each query exactly once
    assert (np.diff(layout.sizes[seen]) <= 0).all()  # largest first, across blocks
    hits = np.zeros(layout.n_samples, dtype=int)
    first = 0
    for block in blocks:
        queries, slots, rows, valid = block
        if valid is None:
            valid = np.ones(slots.shape, dtype=bool)
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


@pytest.mark.parametrize("max_cost", [np.inf, 300.0])
def test_gather_and_scatter_move_values_between_rows_and_blocks(query_ids, rng, max_cost):
    layout = QueryLayout(query_ids)
    values = rng.normal(size=len(query_ids))
    sorted_values = layout.to_sorted(values)
    out = np.full(layout.n_samples, np.nan)
    for block in query_blocks(layout, max_cost=max_cost, cost=_square):
        real = np.ones(block.slots.shape, bool) if block.valid is None else block.valid
        from_rows = block.gather(values, -1.0)
        from_sorted = block.gather(sorted_values, -1.0, order="sorted")
        np.testing.assert_array_equal(from_rows, from_sorted)
        np.testing.assert_array_equal(from_rows[real], values[block.rows[real]])
        assert (from_rows[~real] == -1.0).all()  # padding
        block.scatter(out, from_rows)
    np.testing.assert_array_equal(out, sorted_values)  # every real cell back in place


def test_blocks_of_equal_sizes_have_no_padding():
    grouped = QueryLayout(np.repeat(np.arange(6), 5))
    (block,) = query_blocks(grouped)
    # grouped rows: the one block is the rows themselves, as arrays
    np.testing.assert_array_equal(block.queries, np.arange(6))
    np.testing.assert_array_equal(block.slots, np.arange(30).reshape(6, 5))
    assert block.rows is block.slots and block.valid is None
    # over the budget, equal sizes still need no padding but several blocks
    small = query_blocks(grouped, max_cost=2 * 25, cost=_square)
    assert [len(b.queries) for b in small] == [2, 2, 2]
    assert all(b.valid is None for b in small)
    # shuffled rows: one block, gathered through ``rows``, without padding
    rng = np.random.default_rng(0)
    shuffled = QueryLayout(rng.permutation(np.repeat(np.arange(6), 5)))
    (block,) = query_blocks(shuffled)
    assert block.valid is None
    np.testing.assert_array_equal(block.rows, shuffled.order[block.slots])


def test_blocks_budget_and_growth():
    layout = QueryLayout(np.repeat(np.arange(6), [9, 9, 8, 5, 4, 1]))
    widths = [b.slots.shape[1] for b in query_blocks(layout, growth=2.0)]
    assert widths == [9, 4, 1]  # 5 >= 9 / 2 joins the first block; 4 does not
    sizes = [len(b.queries) for b in query_blocks(layout)]  # growth=1.25
    assert sizes == [3, 2, 1]
    # a budget below one query's cost still gives one query per block
    assert [len(b.queries) for b in query_blocks(layout, max_cost=1.0)] == [1] * 6
    with pytest.raises(ValueError, match="growth must be at least 1"):
        query_blocks(layout, growth=0.5)


def test_cumprod_before_is_the_product_of_the_earlier_rows_of_the_query(query_ids, rng):
    layout = QueryLayout(query_ids)
    values = rng.choice([0.0, 0.5, 2.0, 3.0], size=len(query_ids))
    got = cumprod_before(layout, layout.to_sorted(values))
    for i, q in enumerate(layout.unique_qid):
        a, b = layout.offsets[i], layout.offsets[i + 1]
        expected = np.cumprod(np.append(1.0, values[query_ids == q][:-1]))
        np.testing.assert_array_equal(got[a:b], expected)
