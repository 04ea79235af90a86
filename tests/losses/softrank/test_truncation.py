"""The truncated Rank-Binomial recursion (skrank/losses/_softrank/_truncation.py)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skrank.losses._softrank import _binomial, _truncation


def _random_block(rng, sizes):
    """Contest probabilities of a block of queries (decreasing sizes), 0 in padding."""
    B, W = len(sizes), sizes[0]
    pi = rng.uniform(size=(B, W, W))
    real = np.arange(W) < sizes[:, None]
    pi *= real[:, :, None] & real[:, None, :]
    pi[:, np.arange(W), np.arange(W)] = 0.0
    return pi, real


# 5, 13: segment counts that are not a power of two (empty segments added); 25, 90:
# segments of 4 and 1 documents, whose distributions and first levels keep fewer ranks
# than n_ranks
@pytest.mark.parametrize("segments", [1, 4, 5, 13, 25, 90])
@pytest.mark.parametrize("n_ranks", [1, 3, 10])
@pytest.mark.parametrize("sizes", [[97], [90, 81, 80, 40]])
def test_truncated_recursion_is_the_first_ranks_of_the_full_one(rng, monkeypatch, sizes,
                                                                n_ranks, segments):
    """Keeping R ranks (in segments or not) gives the full recursion's first R ranks, and
    the reverse mode of the full recursion for an adjoint that is 0 beyond R."""
    sizes = np.array(sizes)
    pi, real = _random_block(rng, sizes)
    A = rng.normal(size=pi.shape) * real[:, :, None]
    P, back = _binomial._rank_binomial(pi, sizes)
    A[:, :, n_ranks:] = 0.0
    grad = back(A)
    monkeypatch.setattr(_binomial, "_n_segments", lambda n_steps, n_ranks: segments)
    P_r, back_r = _binomial._rank_binomial(pi, sizes, n_ranks=n_ranks)
    assert P_r.shape == (len(sizes), sizes[0], n_ranks)
    assert_allclose(P_r, P[:, :, :n_ranks], rtol=1e-12, atol=1e-15)  # probabilities
    assert_allclose(back_r(A[:, :, :n_ranks]), grad, rtol=1e-11, atol=1e-15)
    P_v, none = _binomial._rank_binomial(pi, sizes, n_ranks=n_ranks, need_grad=False)
    assert none is None
    assert_allclose(P_v, P_r, rtol=1e-15, atol=1e-300)


def test_segments_of_a_truncated_recursion():
    """Up to MAX_SEGMENTS segments of at least MIN_SEGMENT_DOCS documents, a power of two,
    none for all ranks."""
    assert _truncation._n_segments(400, 10) == _truncation.MAX_SEGMENTS == 32
    # 97 // MIN_SEGMENT_DOCS = 12, rounded down
    assert _truncation._n_segments(97, 10) == 8
    assert _truncation._n_segments(97, 90) == 8
    assert _truncation._n_segments(128, 90) == 16
    assert _truncation._n_segments(300, 90) == 32
    assert _truncation._n_segments(97, 97) == 1
    assert _truncation._n_segments(12, 3) == 1
