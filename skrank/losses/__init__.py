"""Listwise losses: pure functions of labels, scores and the query layout.

Every loss follows the protocol of :class:`ListwiseLoss`:
``state = loss.prepare(y, qid, random_state=...)`` once per fit (``qid``
the query id of each row, or their :class:`~skrank.utils.QueryLayout`), then
``loss.value_and_grad(scores, state, queries=None)`` as often as the
optimizer needs. :data:`LOSSES` maps each loss's name to its class.
"""

from ._base import ListwiseLoss, LossState, RankSamples
from ._query_random import query_uniforms
from ._boltzrank import BoltzRankLoss
from ._listnet import ListNetLoss
from ._logrank import LogRankLoss
from ._softrank import SoftRankLoss

#: Registry of the listwise losses, name -> class.
LOSSES = {cls.name: cls for cls in (BoltzRankLoss, ListNetLoss, LogRankLoss, SoftRankLoss)}

__all__ = [
    "LOSSES",
    "BoltzRankLoss",
    "ListNetLoss",
    "ListwiseLoss",
    "LogRankLoss",
    "LossState",
    "RankSamples",
    "SoftRankLoss",
    "query_uniforms",
]
