"""Model inspection with queries: permutation importance scored per query."""

from ._permutation import permutation_importance

__all__ = ["permutation_importance"]
