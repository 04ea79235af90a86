"""The public losses of skrank.losses: every registered loss is exported."""

from skrank.losses import LOSSES

from tests._inputs import PUBLIC_LOSSES


def test_every_registered_loss_is_public():
    assert set(PUBLIC_LOSSES) == set(LOSSES.values())
