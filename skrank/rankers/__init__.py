"""The listwise rankers: scikit-learn estimators with ``fit(X, y, *, qid)``.

Each ranker is a thin front end over one shared fit loop (the networks,
solvers and loop live in the private ``skrank._core``): it validates its
parameters and builds its loss (an instance of a class of
:mod:`skrank.losses`), the scoring network and the solver.
"""

from ._boltzrank import BoltzRankRanker
from ._listnet import ListNetRanker
from ._logrank import LogRankRanker
from ._softrank import SoftRankRanker

__all__ = ["BoltzRankRanker", "ListNetRanker", "LogRankRanker", "SoftRankRanker"]
