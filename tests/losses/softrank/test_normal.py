"""The normal approximation of SoftRank (skrank/losses/_softrank/_normal.py)."""

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

from skrank.losses import SoftRankLoss
from skrank.losses._softrank import _normal

from tests.losses.softrank._queries import EXACT, mean_loss_and_grad


def test_normal_approximation_close_to_exact_for_200_documents(rng):
    """Stated tolerance (sigma=1, scores of unit spread): entries within 0.05, total
    variation within 0.1, loss within 1e-3."""
    s = rng.normal(size=200)
    y = rng.integers(0, 3, size=200).astype(float)
    exact = SoftRankLoss(1.0, **EXACT).rank_distributions(s)[0]
    approx = SoftRankLoss(1.0, rank_distribution="normal").rank_distributions(s)[0]
    assert np.abs(exact - approx).max() < 0.05
    assert 0.5 * np.abs(exact - approx).sum(axis=1).max() < 0.1
    qid = np.zeros(200)
    value = mean_loss_and_grad(SoftRankLoss(1.0, **EXACT), y, s, qid)[0]
    value_normal = mean_loss_and_grad(SoftRankLoss(1.0, rank_distribution="normal"), y, s, qid)[0]
    assert abs(value - value_normal) < 1e-3


def test_decided_normal_cdf_is_the_cdf_to_double_precision():
    """The CDF evaluated only within the band: SciPy's value there, 0 or 1 beyond, off by
    less than 1e-17 anywhere; its density 0 exactly where the CDF was decided."""
    from scipy.special import ndtr

    x = np.concatenate([np.linspace(-40.0, 40.0, 8002), [-np.inf, np.inf, -8.5, 8.5,
                                                         np.nextafter(-8.5, 0.0),
                                                         np.nextafter(8.5, 0.0)]])
    x = x.reshape(-1, 7)
    # out a strided view of a larger buffer, as the band's is
    buffer = np.full((x.shape[0] + 3, x.shape[1] + 2), np.nan)
    out = buffer[3:, 2:]
    inside, x_inside = _normal._decided_ndtr(x, out=out)
    assert np.isnan(buffer[:3]).all() and np.isnan(buffer[:, :2]).all()
    assert_array_equal(inside, np.abs(x) < 8.5)
    assert_array_equal(x_inside, x[inside])
    assert_array_equal(out[inside], ndtr(x[inside]))
    assert_array_equal(out[~inside], (x[~inside] > 0).astype(float))
    assert np.abs(out - ndtr(x)).max() < 1e-17
    density = _normal._decided_density(inside, x_inside, out=np.full(x.shape, np.nan))
    assert_allclose(density[inside], np.exp(-0.5 * x[inside] ** 2), rtol=1e-15)
    assert (density[~inside] == 0.0).all() and (density[inside] > 0.0).all()
    # out may be x itself
    y = x.copy()
    _normal._decided_ndtr(y, out=y)
    assert_array_equal(y, out)
