"""Ranking metrics and scorers with explicit conventions."""

from ._ranking import (
    CONVENTIONS,
    average_precision_score,
    dcg_score,
    err_score,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
    recall_at_k,
)
from ._scorer import RankingScorer, get_ranking_scorer, make_ranking_scorer
from ._selection import rank_within_queries, top_k

__all__ = [
    "CONVENTIONS",
    "RankingScorer",
    "average_precision_score",
    "dcg_score",
    "err_score",
    "get_ranking_scorer",
    "make_ranking_scorer",
    "map_score",
    "mrr_score",
    "ndcg_score",
    "precision_at_k",
    "rank_within_queries",
    "recall_at_k",
    "top_k",
]
