"""The moments of the normal approximation (skrank/losses/_softrank/_normal_moments.py).

The half pairs of the circulant layout, chunks of targets and bands of sorted
pairs: each gives the loss and gradient of all pairs.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank.losses import SoftRankLoss
from skrank.losses._softrank import _normal_moments

from tests.losses.softrank._queries import mean_loss_and_grad, random_queries


@pytest.mark.parametrize("chunk_cells", [1, 700, 5000])
@pytest.mark.parametrize("options", [{}, {"truncation": 10}, {"sigma": 0.05}], ids=repr)
def test_normal_path_by_chunks_of_targets_equals_the_half_pairs(rng, monkeypatch, options,
                                                                chunk_cells):
    """Long queries take every ordered pair by chunks of targets: the same loss and gradient."""
    y, s, qid = random_queries(rng, [40, 23, 7, 1])
    s[:3] += 1e200  # differences beyond the largest float
    loss = SoftRankLoss(rank_distribution="normal", **options)
    value, grad = mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(_normal_moments, "NORMAL_PAIR_CELLS", 0)
    monkeypatch.setattr(_normal_moments, "NORMAL_CHUNK_CELLS", chunk_cells)
    value_c, grad_c = mean_loss_and_grad(loss, y, s, qid)
    assert np.isfinite(value_c) and np.isfinite(grad_c).all()
    assert_allclose(value_c, value, rtol=1e-12)
    assert_allclose(grad_c, grad, rtol=1e-9, atol=1e-14)
    assert np.abs(grad).max() > 1e-4  # not trivially zero


@pytest.mark.parametrize("spread", [0.02, 1.0, 30.0, 1e4])
@pytest.mark.parametrize("options", [{}, {"truncation": 10, "discount_shape": 0.3},
                                     {"sigma": 0.05}], ids=repr)
def test_normal_path_on_a_band_of_sorted_pairs_equals_the_half_pairs(rng, monkeypatch,
                                                                     options, spread):
    """Spread-out scores take only the pairs within the band of each document, sorted by
    score: the same loss and gradient as every pair (to the decided pairs' 1e-17); ties,
    padding, one-document queries and differences beyond the largest float included."""
    y, s, qid = random_queries(rng, [40, 33, 23, 19, 1])
    s *= spread
    s[qid == qid[0]] = np.round(s[qid == qid[0]])  # ties within a query
    if spread == 1e4:
        s[np.flatnonzero(qid == 8)[:2]] = [1e308, -1e308]
    loss = SoftRankLoss(rank_distribution="normal", **options)
    calls = []
    banded = _normal_moments._banded_moments
    monkeypatch.setattr(_normal_moments, "_banded_moments",
                        lambda *args: calls.append(args[-1]) or banded(*args))
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", np.inf)
    value_b, grad_b = mean_loss_and_grad(loss, y, s, qid)
    assert calls and (spread < 1 or min(calls) < 40 // 2)  # a band narrower than a half
    if spread == 1e4:
        assert max(calls) <= 2  # documents far apart: almost no pair is undecided
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", -1.0)
    n_calls = len(calls)
    value, grad = mean_loss_and_grad(loss, y, s, qid)
    assert len(calls) == n_calls  # the half pairs
    assert np.isfinite(value_b) and np.isfinite(grad_b).all()
    assert_allclose(value_b, value, rtol=1e-13)
    assert_allclose(grad_b, grad, rtol=1e-10, atol=1e-13 * np.abs(grad).max())
    if spread <= 30:
        assert np.abs(grad).max() > 1e-4  # not trivially zero


def test_score_band_counts_the_undecided_followers(rng, monkeypatch):
    """The widest band of a block: the most documents within ``reach`` after one in
    descending order of score (ties and padding included), brute force."""
    W = 37
    s = np.round(rng.normal(size=(4, W)) * 3, 1)
    sizes = np.array([37, 30, 17, 2])
    valid = np.arange(W) < sizes[:, None]
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", np.inf)
    for reach in [0.0, 0.1, 0.5, 2.0, 100.0]:
        order, t, K = _normal_moments._score_band(s, valid, reach)
        top = [np.sort(s[b, :n])[::-1] for b, n in enumerate(sizes)]
        assert K == max(int((t_[p + 1:] >= t_[p] - reach).sum())
                        for t_ in top for p in range(len(t_)))
        assert_array_equal(t[valid], np.concatenate(top))
        assert_array_equal(np.take_along_axis(s, order, axis=1)[valid], t[valid])
        assert (t[~valid] == -np.inf).all()
    monkeypatch.setattr(_normal_moments, "BAND_MAX_FRACTION", 0.5)
    # too wide: the half pairs
    assert _normal_moments._score_band(s, valid, 100.0) is None


@pytest.mark.parametrize("width", [1, 2, 3, 4, 7, 10])
def test_half_pairs_hold_every_real_pair_once(rng, width):
    """The circulant layout of the normal path: each pair of real documents exactly once,
    with its score difference; -inf elsewhere; the skewed sum adds each pair's value to
    its second document."""
    s = rng.normal(size=(3, width))
    sizes = np.array([width, max(width - 1, 1), max(width // 2, 1)])
    valid = np.arange(width) < sizes[:, None]
    z, n_first = _normal_moments._half_pairs(s, valid, 2.0)
    half = width // 2
    buffer = _normal_moments._skew_buffer(3, width, half)
    X = buffer[:, half:]
    X[...] = rng.normal(size=X.shape)
    second = _normal_moments._skew_sum(buffer, width)
    expected_second = np.zeros((3, width))
    for b in range(3):
        seen = []
        for i, c in itertools.product(range(width), range(half)):
            j = (i + c + 1) % width
            expected_second[b, j] += X[b, i, c]
            if np.isfinite(z[b, i, c]):
                assert z[b, i, c] == pytest.approx((s[b, i] - s[b, j]) / 2.0, rel=1e-15)
                seen.append(frozenset((i, j)))
            else:
                assert z[b, i, c] == -np.inf
        n = valid[b].sum()
        assert sorted(seen, key=sorted) == sorted(
            (frozenset(p) for p in itertools.combinations(range(n), 2)), key=sorted)
        assert_allclose(n_first[b], np.isfinite(z[b]).sum(axis=1))
    assert_allclose(second, expected_second, rtol=1e-13, atol=1e-13)
