"""Ranking data sets: LETOR file loaders, a bundled sample, two generators."""

from ._letor import iter_letor_chunks, load_letor, load_letor_fold
from ._samples import load_rank_sample, make_ranking, make_web_ranking

__all__ = [
    "iter_letor_chunks",
    "load_letor",
    "load_letor_fold",
    "load_rank_sample",
    "make_ranking",
    "make_web_ranking",
]
