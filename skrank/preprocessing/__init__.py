"""Preprocessing for learning to rank: per-query feature normalisation."""

from ._query_normalizer import QueryNormalizer

__all__ = ["QueryNormalizer"]
