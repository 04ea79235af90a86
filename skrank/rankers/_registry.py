"""The ranker registry: how ``python -m skrank`` builds each ranker it knows.

Every ranker of the package registers itself in :data:`RANKERS` with a
factory and a small hyperparameter grid (used by the LETOR protocol,
:func:`skrank.model_selection.letor_protocol`, which lists them publicly as
:func:`skrank.model_selection.registered_rankers`); a pointwise Ridge
regression is the baseline. ``python -m skrank fit`` builds its rankers from
the same registry.

Gradient-boosted trees of LightGBM and XGBoost are optional baselines
(:mod:`skrank.rankers._gbdt`): registered when the package is installed
(found with :func:`importlib.util.find_spec`, which imports nothing), and
otherwise named in :data:`ABSENT`, which ``compare`` logs.
"""

from dataclasses import dataclass, field
from functools import partial
from importlib.util import find_spec

from sklearn.linear_model import Ridge

from ._boltzrank import BoltzRankRanker
from ._gbdt import ROW_NAMES, GBDTRanker, unusable
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
    #: ``unusable(labels)``: why the ranker cannot run on the labels of each
    #: ``(name, y)`` of ``labels`` (a note for ``compare`` to log before
    #: leaving its row out), or None; None for a ranker that runs on any
    #: labels the metrics accept.
    unusable: callable = None


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


def _gbdt_entry(library):
    return RankerEntry(
        lambda **p: GBDTRanker(library=library, random_state=0, **p),
        {"learning_rate": [0.05, 0.1]},
        unusable=partial(unusable, library),
    )


#: One line per optional baseline whose package is missing, for ``compare`` to log.
ABSENT = []

# The boosted trees come last: the rows of skrank's own rankers keep their
# places whether or not the optional packages are installed, and the table
# reads as skrank's rankers beside their baselines, Ridge first and the
# boosted trees after them.
for _library, _name in ROW_NAMES.items():
    if find_spec(_library) is not None:
        RANKERS[_name] = _gbdt_entry(_library)
    else:
        ABSENT.append(f"[{_name}] row absent: {_library} is not installed "
                      f"(pip install {_library}, or skrank's 'gbdt' extra)")
