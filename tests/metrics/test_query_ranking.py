"""Ranking rows inside their queries: the order of the lexsort, sorted blocks, tie runs."""

import numpy as np
import pytest

from skrank.metrics._query_ranking import rank_order, sorted_blocks, tie_runs
from skrank.utils import QueryLayout


@pytest.mark.parametrize("tiebreak", ["stable", "arbitrary", "labels"])
@pytest.mark.parametrize("scores", ["distinct", "tied", "infinite"])
def test_rank_order_matches_lexsort(query_ids, rng, tiebreak, scores):
    layout = QueryLayout(query_ids)
    n = len(query_ids)
    if scores == "distinct":
        s = rng.normal(size=n)
    elif scores == "tied":
        s = rng.integers(0, 3, size=n).astype(float)
    else:
        s = rng.choice([-np.inf, 0.0, 1.0, np.inf], size=n)
    labels = rng.integers(0, 3, size=n)
    arg = labels if tiebreak == "labels" else tiebreak
    perm = rank_order(layout, s, tiebreak=arg)
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


def test_sorted_blocks(query_ids, rng):
    layout = QueryLayout(query_ids)
    values = rng.integers(0, 5, size=len(query_ids)) + rng.choice([0.0, 0.5], size=len(query_ids))
    seen = []
    for queries, block, valid in sorted_blocks(layout, values):
        for row, i in enumerate(queries):
            n = layout.sizes[i]
            expected = np.sort(values[query_ids == layout.unique_qid[i]])[::-1]
            np.testing.assert_array_equal(block[row, :n], expected)
            assert np.all(block[row, n:] == -np.inf)
            if valid is not None:
                assert valid[row].sum() == n
            seen.append(i)
    assert sorted(seen) == list(range(layout.n_queries))


def test_tie_runs_do_not_cross_queries():
    layout = QueryLayout([1, 1, 1, 2, 2, 3])
    starts, sizes = tie_runs(layout, np.array([5.0, 5.0, 4.0, 4.0, 4.0, 4.0]))
    np.testing.assert_array_equal(starts, [0, 2, 3, 5])
    np.testing.assert_array_equal(sizes, [2, 1, 2, 1])
    assert tie_runs(layout, np.array([3.0, 2.0, 1.0, 4.0, 3.0, 3.0])) is None


@pytest.mark.parametrize("tiebreak", ["stable", "arbitrary", "labels"])
def test_rank_order_of_rows_already_ranked(rng, tiebreak):
    """Grouped rows whose scores fall inside every query: the identity (and the lexsort's)."""
    sizes = [4, 1, 7, 3]
    qid = np.repeat([2, 5, 6, 9], sizes)
    layout = QueryLayout(qid)
    s = np.concatenate([np.sort(rng.normal(size=m))[::-1] for m in sizes])
    s[5:12] = [3.0, 2.0, 1.0, 0.0, -1.0, -2.0, -np.inf]  # a query reaching -inf
    arg = rng.integers(0, 3, size=len(qid)) if tiebreak == "labels" else tiebreak
    np.testing.assert_array_equal(rank_order(layout, s, tiebreak=arg), np.arange(len(qid)))
    # a tie, a rise inside a query, or rows out of query order: not the identity
    tied = s.copy()
    tied[1] = tied[0]
    stable = rank_order(layout, tied, tiebreak="stable")
    np.testing.assert_array_equal(stable, np.lexsort((np.arange(len(qid)), -tied, qid)))
    risen = s.copy()
    risen[2] = risen[0] + 1.0
    np.testing.assert_array_equal(rank_order(layout, risen, tiebreak="stable"),
                                  np.lexsort((np.arange(len(qid)), -risen, qid)))
    shuffled = QueryLayout(qid[::-1])
    np.testing.assert_array_equal(rank_order(shuffled, s[::-1], tiebreak="stable"),
                                  np.lexsort((np.arange(len(qid)), -s[::-1], qid[::-1])))
