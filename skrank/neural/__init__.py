"""Neural listwise rankers: scoring networks, optimizers and the shared fit loop."""

from ._listnet import ListNetRanker
from ._softrank import SoftRankRanker

__all__ = ["ListNetRanker", "SoftRankRanker"]
