"""The contracted normal path of SoftRank (skrank/losses/_softrank/_normal_contraction.py)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skrank.losses import SoftRankLoss

from tests.losses.softrank._queries import mean_loss_and_grad, random_queries


@pytest.mark.filterwarnings("ignore:truncation=.*below a quarter:UserWarning")  # deliberate
@pytest.mark.parametrize("truncation", [None, 4])
@pytest.mark.parametrize("sigma, spread", [(1.0, 1.0), (0.05, 1.0), (1.0, 1e4)])
@pytest.mark.parametrize("sizes", [[120, 60, 49, 7, 1, 2], [121, 61, 50, 7, 6, 3]])
def test_normal_contraction_equals_its_rank_distributions(rng, monkeypatch, truncation, sigma,
                                                          spread, sizes):
    """The normal approximation contracted without its rank distributions (the ranker's
    default path) gives the loss and gradient of the distributions themselves, also where
    every contest is decided (spread 1e4); blocks of even and odd widths, with and without
    padding."""
    y, s, qid = random_queries(rng, sizes)
    s *= spread
    loss = SoftRankLoss(sigma, rank_distribution="normal", truncation=truncation,
                        discount_shape=0.3)
    value, grad = mean_loss_and_grad(loss, y, s, qid)
    monkeypatch.setattr(SoftRankLoss, "_block_normal",
                        lambda self, s, w, D, valid, sizes:
                        self._block_general(s, w, D, valid, D.shape[1]))
    ref_value, ref_grad = mean_loss_and_grad(loss, y, s, qid)
    assert np.all(np.isfinite(grad))
    assert_allclose(value, ref_value, rtol=1e-12, atol=1e-15)
    if spread == 1e4 and truncation == 4:
        # every contest within reach of the top 4 ranks decided: the gradient of
        # the distributions keeps densities far below double precision, which the
        # contraction takes as decided
        assert np.abs(ref_grad).max() < 1e-150 and not grad.any()
    else:
        assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-15 * np.abs(ref_grad).max())
    if spread == 1.0:
        assert np.abs(grad).max() > 1e-4
