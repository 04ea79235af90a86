"""The ranker registry: how ``python -m skrank`` builds each ranker it knows.

Every ranker of the package registers itself in :data:`RANKERS` with a
factory and a small hyperparameter grid (used by the LETOR protocol of
:mod:`skrank._compare`); a pointwise Ridge regression is the baseline.
``python -m skrank fit`` builds its rankers from the same registry.
"""

from dataclasses import dataclass, field

from sklearn.linear_model import Ridge

from ._boltzrank import BoltzRankRanker
from ._listnet import ListNetRanker
from ._logrank import LogRankRanker
from ._softrank import SoftRankRanker


@dataclass
class RankerEntry:
    """How ``compare`` builds a ranker: a factory and a small grid for the LETOR protocol.

    ``make(**params)`` builds the ranker. Under the LETOR protocol a ranker
    whose ``fit`` takes ``qid`` gets it, and one with early stopping whose
    ``fit`` takes ``X_val`` gets the fold's vali split for it too, monitored
    with LETOR's NDCG@10 (the criterion the grid point is chosen by).
    """

    make: callable
    grid: dict = field(default_factory=dict)


#: The rankers ``compare`` knows, in table order; a new ranker registers here.
RANKERS = {
    "Ridge": RankerEntry(lambda **p: Ridge(**p), {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}),
    "ListNet": RankerEntry(
        lambda **p: ListNetRanker(random_state=0, **p),
        {"hidden_layer_sizes": [(), (5,)], "alpha": [1e-4, 1e-2]},
    ),
    "SoftRank": RankerEntry(
        lambda **p: SoftRankRanker(random_state=0, **p),
        {"hidden_layer_sizes": [(), (5,)], "sigma": [0.03, 0.1, 1.0]},
    ),
    "BoltzRank": RankerEntry(
        lambda **p: BoltzRankRanker(random_state=0, **p),
        {"gain_weight": [0.5, 0.9]},
    ),
    # BoltzRank2: the paper's 3 individual and 5 pairwise hidden units
    "BoltzRank2": RankerEntry(
        lambda **p: BoltzRankRanker(hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(5,),
                                    random_state=0, **p),
        {"gain_weight": [0.9]},
    ),
    "LogRank": RankerEntry(
        lambda **p: LogRankRanker(random_state=0, **p),
        # "auto" is the paper's C = 1; 1e-4 and 1.0 are about its C = 100
        # and C = 0.01 on a few hundred training queries
        {"alpha": [1e-4, "auto", 1.0]},
    ),
}
