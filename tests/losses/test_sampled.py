"""The logits of sampled rankings (skrank/losses/_sampled.py), at the largest floats."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skrank.losses import BoltzRankLoss, LogRankLoss

from tests._inputs import loss_id

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.mark.parametrize("loss", [LogRankLoss("likelihood", n_rankings=10),
                                  LogRankLoss("likelihood", sampler="exact"),
                                  BoltzRankLoss(n_rankings=10, objective="likelihood")],
                         ids=loss_id)
def test_scores_along_the_labels_lose_nothing_at_the_largest_float(loss, eight_queries):
    """The ideal ranking is among the most probable by a gap beyond the float range."""
    X, y, qid = eight_queries
    state = loss.prepare(y, qid, random_state=0)
    informative = [q for q in range(8) if len(set(y[qid == np.unique(qid)[q]])) > 1]
    # one query at a time, so that the document order within a level (at random
    # in the samples) is the only tie
    for q in informative:
        rows = qid == np.unique(qid)[q]
        _, taken = state.take([q])
        # (a power of two: the samples' energies are exact, and tie exactly)
        s = np.where(y[rows] >= 1, 2.0**1023, -(2.0**1023))
        value, grad = loss.value_and_grad(s, state, queries=[q])
        # -log of the ideal ranking's probability, at most 1 / (samples tied at the top)
        assert np.isfinite(value) and value <= np.log(11)
        assert np.isfinite(grad).all()


def test_the_rescued_logits_are_the_usual_ones_shifted(eight_queries, eight_queries_scores):
    from skrank.losses._sampled import _shifted_logits

    X, y, qid = eight_queries
    state = BoltzRankLoss(n_rankings=10).prepare(y, qid, random_state=0)
    block = state.ranks[:5].astype(np.float64)
    s = eight_queries_scores[:5] * 1e3
    usual = -0.25 * (s @ block)  # scale -4 / (m - 1)^2 for m = 5
    assert_allclose(_shifted_logits(s, block, -0.25), usual - usual.max(), rtol=1e-12,
                    atol=1e-12)
