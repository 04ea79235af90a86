"""Neural listwise rankers: scoring networks, optimizers and the shared fit loop."""

from ._listnet import ListNetRanker

__all__ = ["ListNetRanker"]
