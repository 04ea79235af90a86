"""The contract every registered listwise loss honours, plus known values."""

from skrank.losses import LOSSES, BoltzRankLoss, ListNetLoss, LogRankLoss, SoftRankLoss
from skrank.rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker


def test_each_ranker_builds_the_loss_of_its_algorithm():
    """A ranker looks its loss up in LOSSES by name: it gets the loss of its algorithm.

    That every loss class is registered is
    tests/losses/test_init.py's test_every_registered_loss_is_public.
    """
    expected = {ListNetRanker: ListNetLoss, SoftRankRanker: SoftRankLoss,
                BoltzRankRanker: BoltzRankLoss, LogRankRanker: LogRankLoss}
    assert set(expected.values()) == set(LOSSES.values())  # every loss has its ranker
    for ranker_class, loss_class in expected.items():
        assert type(ranker_class()._make_loss()) is loss_class, ranker_class.__name__
