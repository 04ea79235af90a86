"""The registry of the command line's rankers (skrank/rankers/_registry.py)."""

import numpy as np

from skrank.rankers._registry import RANKERS


def test_rankers_registry_is_complete():
    """Every ranker exported by skrank is in the comparison."""
    import skrank

    exported = {name for name in skrank.__all__ if name.endswith("Ranker")}
    made = {type(entry.make()).__name__ for entry in RANKERS.values()}
    assert exported <= made
    assert np.all([isinstance(entry.grid, dict) and entry.grid for entry in RANKERS.values()])
