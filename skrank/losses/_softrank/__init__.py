"""SoftRank's loss and the parts it composes, one module each.

A subpackage rather than seven ``_softrank_*`` modules beside the other
losses: the parts (the exact Rank-Binomial recursion, its truncation, the
normal approximation, its moments and contraction, Sinkhorn scaling) are
SoftRank's alone, and read in the order :mod:`._loss` lists them.
"""

from ._loss import EXACT_MAX_DOCS, RANK_DISTRIBUTIONS, SoftRankLoss, SoftRankState

__all__ = ["EXACT_MAX_DOCS", "RANK_DISTRIBUTIONS", "SoftRankLoss", "SoftRankState"]
