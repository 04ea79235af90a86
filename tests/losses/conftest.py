"""The ``loss`` fixture: every registered loss, and the configurations whose computation differs."""

import pytest

from skrank.losses import LOSSES


LOSS_NAMES = sorted(LOSSES)
#: Every registered loss with its defaults, and other configurations whose
#: computation differs (LogRank's default samples; the AUC closed form does
#: not; restarts "two" and the unnormalised map take other paths).
CONFIGS = {
    **{name: {} for name in LOSS_NAMES},
    "logrank-exact-expgain-auc": ("logrank", {"objective": "expected_gain", "metric": "auc",
                                              "normalize_pairs": False}),
    "logrank-walk-convex-map-two": ("logrank", {"objective": "convex", "metric": "map",
                                                "walk_restart": "two", "normalize_pairs": False}),
}


@pytest.fixture(params=sorted(CONFIGS))
def loss(request):
    """Each loss of CONFIGS, one per test."""
    config = CONFIGS[request.param]
    if isinstance(config, tuple):
        name, params = config
        return LOSSES[name](**params)
    return LOSSES[request.param]()
