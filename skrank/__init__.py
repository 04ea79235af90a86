"""skrank: listwise learning to rank for scikit-learn.

Subpackages
-----------
metrics
    Per-query ranking metrics (NDCG@k, MAP, ...) with explicit conventions,
    and scorers that work as ``scoring=`` in scikit-learn.
model_selection
    Cross-validation and grid search that keep queries whole, and the LETOR
    protocol on fold folders (:func:`~skrank.model_selection.letor_protocol`).
datasets
    LETOR/SVMlight loaders, the bundled LightGBM ranking sample, synthetic
    ranking data.
preprocessing
    Per-query feature normalisation.
inspection
    Permutation feature importance scored per query.
losses
    Listwise losses (value and gradient with respect to the scores).
rankers
    The listwise rankers (:class:`ListNetRanker`, :class:`SoftRankRanker`,
    :class:`BoltzRankRanker`, :class:`LogRankRanker`).
utils
    The query layout the losses take (:class:`~skrank.utils.QueryLayout`)
    and the scikit-learn estimator checks.
"""

from . import (
    datasets,
    inspection,
    losses,
    metrics,
    model_selection,
    preprocessing,
    rankers,
    stream,
    utils,
)
from .datasets import (
    iter_letor_chunks,
    load_letor,
    load_letor_fold,
    load_rank_sample,
    make_ranking,
    make_web_ranking,
)
from .metrics import (
    average_precision_score,
    dcg_score,
    get_ranking_scorer,
    make_ranking_scorer,
    map_score,
    ndcg_score,
    precision_at_k,
    rank_within_queries,
    top_k,
)
from .model_selection import RankerRandomizedSearchCV, RankerSearchCV, cross_validate_ranker
from .rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from .preprocessing import QueryNormalizer

__version__ = "0.1.0.dev0"

__all__ = [
    "BoltzRankRanker",
    "ListNetRanker",
    "LogRankRanker",
    "QueryNormalizer",
    "RankerRandomizedSearchCV",
    "RankerSearchCV",
    "SoftRankRanker",
    "__version__",
    "average_precision_score",
    "cross_validate_ranker",
    "datasets",
    "dcg_score",
    "get_ranking_scorer",
    "inspection",
    "iter_letor_chunks",
    "load_letor",
    "load_letor_fold",
    "load_rank_sample",
    "losses",
    "make_ranking",
    "make_ranking_scorer",
    "make_web_ranking",
    "map_score",
    "metrics",
    "model_selection",
    "ndcg_score",
    "precision_at_k",
    "preprocessing",
    "rank_within_queries",
    "rankers",
    "stream",
    "top_k",
    "utils",
]
